//! The policy in the browser. The page calls the policy's own two calls, `validate` and
//! `validate_settings` of `admission` (the functions the waPC module registers), so what it shows
//! cannot drift from what the policy server runs. Around them, [`review`] does what the policy
//! server does for one pod: it checks the settings, builds the payload (with `policy_payload`, as
//! the end-to-end tests do), calls `validate` and computes the JSON Patch from the answer with
//! `json_patch::diff`, as the policy server does. [`cluster_settings`] writes settings from a
//! cluster's nodes with the function `make settings` calls. wasm-bindgen stays in this crate: the
//! policy's waPC module never links it.

use multinode_networking_policy::admission;
use policy_payload::{AdmissionRequest, Payload, pod_kind, settings_block};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use wasm_bindgen::prelude::wasm_bindgen;

/// The policy's `validate`: an AdmissionRequest payload in, a ValidationResponse out.
#[wasm_bindgen]
pub fn validate(payload: &[u8]) -> Vec<u8> {
    admission::validate(payload)
}

/// The policy's `validate_settings`: the settings in, `{"valid", "message"}` out.
#[wasm_bindgen]
pub fn validate_settings(payload: &[u8]) -> Vec<u8> {
    admission::validate_settings(payload)
}

/// What happens to a pod created with these settings. `pod` and `settings` are JSON text (the page
/// reads YAML into JSON); settings holding the chart's `multinodeNetworking` block at any depth are
/// read from that block, as `make preview` does. Answers a JSON object:
///
/// - `settings`: the block passed to the policy, and `settingsAnswer`: `validate_settings`'s
///   answer to it, as the policy server checks settings when it loads the policy;
/// - `payload`: the `validate` payload, with the pod as the user's own text, so the mutated pod
///   keeps the user's key order;
/// - `answer`: `validate`'s answer, as text, byte for byte;
/// - `patch`: the JSON Patch the policy server would send to the API server, one operation a line
///   as serde_json writes it, or `null` when the answer has no mutated object;
///
/// or `{"error": ...}` when an input is not JSON.
#[wasm_bindgen]
pub fn review(pod: &str, settings: &str) -> String {
    match reviewed(pod, settings) {
        Ok(review) => review.to_string(),
        Err(error) => json!({ "error": error }).to_string(),
    }
}

fn reviewed(pod_text: &str, settings_text: &str) -> Result<Value, String> {
    let pod_raw: &RawValue =
        serde_json::from_str(pod_text).map_err(|e| format!("the pod is not JSON: {e}"))?;
    let pod: Value =
        serde_json::from_str(pod_text).map_err(|e| format!("the pod is not JSON: {e}"))?;
    let settings: Value = serde_json::from_str(settings_text)
        .map_err(|e| format!("the settings are not JSON: {e}"))?;
    let settings = settings_block(settings);
    let settings_bytes = serde_json::to_vec(&settings).map_err(|e| e.to_string())?;
    let settings_answer = validate_settings(&settings_bytes);

    let kind = pod_kind();
    let payload = serde_json::to_vec(&Payload {
        request: AdmissionRequest::new("CREATE", &kind, pod_raw, &pod),
        settings: &settings,
    })
    .map_err(|e| e.to_string())?;
    let answer = validate(&payload);
    let patch = patch(&pod, &answer)?;
    Ok(json!({
        "settings": settings,
        "settingsAnswer": text(&settings_answer)?,
        "payload": text(&payload)?,
        "answer": text(&answer)?,
        "patch": patch,
    }))
}

/// The policy server's patch: `json_patch::diff(request.object, mutated_object)`.
fn patch(pod: &Value, answer: &[u8]) -> Result<Option<String>, String> {
    let answer: Value = serde_json::from_slice(answer)
        .map_err(|e| format!("the policy's answer is not JSON: {e}"))?;
    match answer.get("mutated_object") {
        Some(mutated) if !mutated.is_null() => {
            let operations = json_patch::diff(pod, mutated)
                .0
                .iter()
                .map(serde_json::to_string)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            Ok(Some(format!("[\n  {}\n]", operations.join(",\n  "))))
        }
        _ => Ok(None),
    }
}

/// Settings from the cluster: what `kubectl get nodes -o json` (and the NADs', DeviceClasses' and CRDs'
/// lists, pasted after it) printed, read by the same function as `make settings`
/// (`cluster_settings::settings`). Answers `{"yaml": <the settings document with its comments>}`,
/// or `{"error": <one sentence saying what was expected>}`.
#[wasm_bindgen]
pub fn cluster_settings(cluster: &str) -> String {
    match cluster_settings::settings(&[("the cluster's JSON", cluster)]) {
        Ok(settings) => json!({ "yaml": settings.yaml }).to_string(),
        Err(error) => json!({ "error": format!("{error:#}") }).to_string(),
    }
}

fn text(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|e| format!("the policy's answer is not UTF-8: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORKER: &str = r#"{"apiVersion":"v1","kind":"Pod",
        "metadata":{"name":"w-0","namespace":"jobs",
            "annotations":{"nmp.nvidia.com/enable-multi-node-networking":"true"},
            "ownerReferences":[{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job","name":"j","uid":"u"}]},
        "spec":{"containers":[{"name":"trainer","image":"i",
            "resources":{"limits":{"nvidia.com/gpu":"2"}}}]}}"#;

    fn reviewed_value(pod: &str, settings: &str) -> Value {
        serde_json::from_str(&review(pod, settings)).unwrap()
    }

    fn answer(review: &Value) -> Value {
        serde_json::from_str(review["answer"].as_str().unwrap()).unwrap()
    }

    #[test]
    fn an_aws_worker_gets_its_devices_in_requests_and_limits() {
        let review = reviewed_value(WORKER, r#"{"aws":{"enabled":true,"efaDevicesPerGPU":4}}"#);
        assert_eq!(
            serde_json::from_str::<Value>(review["settingsAnswer"].as_str().unwrap()).unwrap(),
            json!({"valid": true, "message": null})
        );
        assert_eq!(answer(&review)["accepted"], true);
        // 2 GPUs x 4 EFA interfaces per GPU.
        let patch: Value = serde_json::from_str(review["patch"].as_str().unwrap()).unwrap();
        let patch = patch.as_array().unwrap();
        for path in [
            "/spec/containers/0/resources/limits/vpc.amazonaws.com~1efa",
            "/spec/containers/0/resources/requests",
        ] {
            assert!(
                patch
                    .iter()
                    .any(|op| op["op"] == "add" && op["path"] == path),
                "no add of {path} in {patch:?}"
            );
        }
        let limits = patch
            .iter()
            .find(|op| op["path"] == "/spec/containers/0/resources/limits/vpc.amazonaws.com~1efa")
            .unwrap();
        assert_eq!(limits["value"], "8");
    }

    #[test]
    fn the_payload_carries_the_pod_as_written_and_the_answer_keeps_its_order() {
        let review = reviewed_value(WORKER, r#"{"gcp":{"enabled":true}}"#);
        assert!(
            review["payload"]
                .as_str()
                .unwrap()
                .contains(&format!(r#""object":{WORKER}"#))
        );
        let answer = review["answer"].as_str().unwrap();
        let mutated = &answer[answer.find(r#""mutated_object":"#).unwrap()..];
        // The user's order, "name" before "image"; a Value would sort "image" first.
        assert!(mutated.find(r#""name":"trainer""#) < mutated.find(r#""image":"i""#));
    }

    #[test]
    fn a_chart_values_file_is_read_from_its_block() {
        let values = r#"{"global":{"x":1},"multinodeNetworking":{"oci":{"enabled":true}}}"#;
        let review = reviewed_value(WORKER, values);
        assert_eq!(review["settings"], json!({"oci": {"enabled": true}}));
        assert!(review["patch"].is_string());
    }

    #[test]
    fn bad_settings_are_named_by_the_settings_check_and_reject_the_pod() {
        let review = reviewed_value(WORKER, r#"{"aws":{"enabled":true,"efaDevicesPerGpu":4}}"#);
        let check: Value =
            serde_json::from_str(review["settingsAnswer"].as_str().unwrap()).unwrap();
        assert_eq!(check["valid"], false);
        assert!(
            check["message"]
                .as_str()
                .unwrap()
                .contains("aws.efaDevicesPerGpu")
        );
        let answer = answer(&review);
        assert_eq!(answer["accepted"], false);
        assert!(
            answer["message"]
                .as_str()
                .unwrap()
                .starts_with("the policy settings are invalid")
        );
        assert_eq!(review["patch"], Value::Null);
    }

    #[test]
    fn a_pod_that_is_not_opted_in_is_accepted_without_a_patch() {
        let pod = WORKER.replace(r#""true""#, r#""false""#);
        let review = reviewed_value(&pod, r#"{"aws":{"enabled":true}}"#);
        assert_eq!(answer(&review)["accepted"], true);
        assert_eq!(answer(&review)["mutated_object"], Value::Null);
        assert_eq!(review["patch"], Value::Null);
    }

    #[test]
    fn settings_from_the_cluster_are_the_commands() {
        let nodes = r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node",
            "metadata":{"name":"n","labels":{"node.kubernetes.io/instance-type":"p5.48xlarge"}},
            "spec":{"providerID":"aws:///us-east-1a/i-0"},
            "status":{"allocatable":{"nvidia.com/gpu":"8","vpc.amazonaws.com/efa":"32"}}}]}"#;
        let answer: Value = serde_json::from_str(&cluster_settings(nodes)).unwrap();
        let yaml = answer["yaml"].as_str().unwrap();
        let expected = cluster_settings::settings(&[("nodes.json", nodes)]).unwrap();
        assert_eq!(yaml, expected.yaml);
        assert!(yaml.contains("efaDevicesPerGPU: 4"), "{yaml}");
        let refused: Value = serde_json::from_str(&cluster_settings("nodes:")).unwrap();
        assert!(
            refused["error"]
                .as_str()
                .unwrap()
                .starts_with("the cluster's JSON: not JSON"),
            "{refused}"
        );
    }

    #[test]
    fn input_that_is_not_json_is_an_error_not_a_verdict() {
        let review = reviewed_value("{", "{}");
        assert!(review["error"].as_str().unwrap().starts_with("the pod"));
        let review = reviewed_value("{}", "[");
        assert!(
            review["error"]
                .as_str()
                .unwrap()
                .starts_with("the settings")
        );
    }
}
