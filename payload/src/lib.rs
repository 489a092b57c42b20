//! The payload a Kubewarden policy server sends to `validate`, `{"request": AdmissionRequest,
//! "settings": {...}}`, built in one place for both hosts that run the policy outside a cluster:
//! the waPC host of the end-to-end tests (`e2e-tests`) and the browser playground (`playground`).
//! If they built it apart, the playground could show answers to requests the tests never send.
//!
//! The request is a struct, not a `json!` literal, so that the pod can be carried as the user's
//! own text (`RawValue`): the playground shows the mutated pod in the order the user wrote it,
//! which a `Value` (sorted keys) would lose.

use serde::Serialize;
use serde_json::{Value, json};

/// An AdmissionRequest as the API server sends it to the policy server for a pod. `O` is how the
/// object is held: a `Value`, or its JSON text as a `RawValue`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest<'a, O: ?Sized + Serialize> {
    uid: &'static str,
    kind: &'a Value,
    resource: Value,
    request_kind: &'a Value,
    request_resource: Value,
    name: Value,
    namespace: Value,
    operation: &'a str,
    user_info: Value,
    object: Option<&'a O>,
    old_object: Option<&'a O>,
    dry_run: bool,
    options: Value,
}

impl<'a, O: ?Sized + Serialize> AdmissionRequest<'a, O> {
    /// The request to `operation` `object`; `parsed` is the object as a value, for the request's
    /// `name` and `namespace` (the same object when `O` is `Value`).
    pub fn new(operation: &'a str, kind: &'a Value, object: &'a O, parsed: &Value) -> Self {
        let namespace = parsed
            .pointer("/metadata/namespace")
            .cloned()
            .unwrap_or_else(|| json!("default"));
        let name = parsed
            .pointer("/metadata/name")
            .cloned()
            .unwrap_or(Value::Null);
        let options_kind = match operation {
            "CREATE" => "CreateOptions",
            "UPDATE" => "UpdateOptions",
            "DELETE" => "DeleteOptions",
            _ => "ConnectOptions",
        };
        let pods = json!({"group": "", "version": "v1", "resource": "pods"});
        AdmissionRequest {
            uid: "705ab4f5-6393-11e8-b7cc-42010a800002",
            kind,
            resource: pods.clone(),
            request_kind: kind,
            request_resource: pods,
            name,
            namespace,
            operation,
            user_info: json!({
                "username": "system:serviceaccount:volcano-system:volcano-controllers",
                "uid": "b0d3a1e8-5c3e-4f0e-9d39-6f3b0a7c1d22",
                "groups": ["system:serviceaccounts", "system:serviceaccounts:volcano-system", "system:authenticated"]
            }),
            // On DELETE the API server sends no object; on CREATE no old one.
            object: (operation != "DELETE").then_some(object),
            old_object: (operation != "CREATE").then_some(object),
            dry_run: false,
            options: json!({"apiVersion": "meta.k8s.io/v1", "kind": options_kind}),
        }
    }
}

/// What the policy server passes to `validate`.
#[derive(Debug, Serialize)]
pub struct Payload<R: Serialize, S: ?Sized + Serialize> {
    pub request: R,
    pub settings: S,
}

/// An AdmissionRequest for `object` as a value.
pub fn admission_request(operation: &str, kind: &Value, object: &Value) -> Value {
    serde_json::to_value(AdmissionRequest::new(operation, kind, object, object))
        .expect("a request of JSON values is JSON")
}

/// The `kind` of a core/v1 pod request.
pub fn pod_kind() -> Value {
    json!({"group": "", "version": "v1", "kind": "Pod"})
}

/// The settings in a document that holds the NeMo chart's `multinodeNetworking` block at any
/// depth (a whole values.yaml): that block; any other document is the settings itself.
pub fn settings_block(document: Value) -> Value {
    fn find(value: &Value) -> Option<&Value> {
        match value {
            Value::Object(map) => map
                .get("multinodeNetworking")
                .or_else(|| map.values().find_map(find)),
            Value::Array(items) => items.iter().find_map(find),
            _ => None,
        }
    }
    find(&document).cloned().unwrap_or(document)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;

    fn pod() -> Value {
        json!({"kind": "Pod", "metadata": {"name": "w-0", "namespace": "jobs"}, "spec": {}})
    }

    #[test]
    fn a_values_files_block_is_taken_whole_the_policys_own_keys_too() {
        let block = json!({"aws": {"enabled": true},
                           "computeDomain": {"fromLabel": "training.kubeflow.org/job-name"}});
        let values = json!({"image": {"tag": "1"}, "jobs": {"multinodeNetworking": block}});
        assert_eq!(settings_block(values), block);
        assert_eq!(settings_block(block.clone()), block);
    }

    #[test]
    fn a_create_carries_the_object_and_no_old_one() {
        let request = admission_request("CREATE", &pod_kind(), &pod());
        assert_eq!(request["object"], pod());
        assert_eq!(request["oldObject"], Value::Null);
        assert_eq!(request["name"], "w-0");
        assert_eq!(request["namespace"], "jobs");
        assert_eq!(request["options"]["kind"], "CreateOptions");
        assert_eq!(request["requestKind"], pod_kind());
    }

    #[test]
    fn a_delete_carries_only_the_old_object() {
        let request = admission_request("DELETE", &pod_kind(), &pod());
        assert_eq!(request["object"], Value::Null);
        assert_eq!(request["oldObject"], pod());
        assert_eq!(request["options"]["kind"], "DeleteOptions");
    }

    #[test]
    fn a_pod_without_metadata_is_in_the_default_namespace_and_unnamed() {
        let request = admission_request("CREATE", &pod_kind(), &json!({"kind": "Pod"}));
        assert_eq!(request["namespace"], "default");
        assert_eq!(request["name"], Value::Null);
    }

    #[test]
    fn raw_text_is_carried_as_written() {
        let text = r#"{"spec":{"b":1.50,"a":2},"metadata":{"name":"w-0"}}"#;
        let raw: Box<RawValue> = serde_json::from_str(text).unwrap();
        let parsed: Value = serde_json::from_str(text).unwrap();
        let kind = pod_kind();
        let payload = Payload {
            request: AdmissionRequest::new("CREATE", &kind, raw.as_ref(), &parsed),
            settings: &json!({}),
        };
        let bytes = serde_json::to_string(&payload).unwrap();
        assert!(bytes.contains(&format!(r#""object":{text},"#)), "{bytes}");
        let as_value: Value = serde_json::from_str(&bytes).unwrap();
        assert_eq!(
            as_value["request"],
            admission_request("CREATE", &pod_kind(), &parsed)
        );
    }

    #[test]
    fn a_values_file_is_read_from_its_block_at_any_depth() {
        let block = json!({"aws": {"enabled": true}});
        let values = json!({"global": {}, "platform": [{"multinodeNetworking": block}]});
        assert_eq!(settings_block(values), block);
        assert_eq!(settings_block(block.clone()), block);
    }

    #[test]
    fn a_nemo_helix_values_file_gives_its_block() {
        // NeMo Helix's values.yaml: the same block at the top level, among the chart's own keys,
        // one of which holds `nhx.nvidia.com/` labels.
        let block =
            json!({"aws": {"enabled": false}, "oci": {"enabled": true, "rdmaDevicesPerGPU": 8}});
        let values = json!({
            "ngcAPIKey": "YOUR-NGC-API-KEY",
            "networkPolicies": {"jobs": {"podSelector": {"matchLabels": {"nhx.nvidia.com/managed_by": "jobs-controller"}}}},
            "multinodeNetworking": block,
            "ncclTest": {"gpusPerNode": 1}
        });
        assert_eq!(settings_block(values), block);
    }
}
