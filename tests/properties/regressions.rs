//! Regressions: inputs the properties and the fuzzer found, minimized. Ignored while the bug
//! they pin is open; the owner removes the `ignore` with the fix (and puts the input class back
//! into the generators).

use crate::api_rules::as_list;
use crate::api_rules::violations;
use crate::patch_rule;
use crate::run::evaluate;
use crate::run::mutated_pod;
use crate::run::payload;
use fixtures::TRIGGER;
use fixtures::admission_request;
use fixtures::pod_kind;
use fixtures::volcano_worker;
use multinode_networking_policy::admission;
use multinode_networking_policy::admission::Verdict;
use multinode_networking_policy::settings;
use serde_json::Value;
use serde_json::json;

/// A request without a namespace, or with an empty one, makes no preflight call: an empty
/// namespace would list every namespace's objects (behaviour.md §9), and has no Pod Security
/// level to read (§11).
#[test]
pub(crate) fn a_request_without_a_namespace_makes_no_preflight_call() {
    let pod = volcano_worker(
        json!({TRIGGER: "true"}),
        json!({"containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}),
    );
    let settings = json!({"azure": {"enabled": true}});
    for namespace in [json!("jobs"), json!(""), Value::Null] {
        let mut request = admission_request("CREATE", &pod_kind(), &pod);
        request["namespace"] = namespace.clone();
        let calls = std::cell::Cell::new(0);
        let host = |_: &str, _: &[u8]| {
            calls.set(calls.get() + 1);
            Err(multinode_networking_policy::cluster::NO_HOST.to_string())
        };
        let verdict = admission::evaluate_with(&fixtures::payload(&request, &settings), &host);
        assert!(matches!(verdict, Verdict::Mutate { .. }), "{verdict:?}");
        // With one: the topology ConfigMap's read, and the namespace's read for the IPC_LOCK
        // Azure adds (behaviour.md §11).
        assert_eq!(
            calls.get(),
            2 * usize::from(namespace == "jobs"),
            "{namespace}"
        );
    }
}

#[test]
pub(crate) fn regression_multus_short_form_keeps_leading_blanks() {
    let pod = volcano_worker(
        json!({TRIGGER: "true", "k8s.v1.cni.cncf.io/networks": " default/storage "}),
        json!({"containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}),
    );
    let settings = json!({"oci": {"enabled": true, "rdmaDevicesPerGPU": 1}});
    let Some(mutated) = mutated_pod(evaluate(&pod, &settings)) else {
        panic!("expected a mutation");
    };
    // Today: " default/storage " becomes "default/storage,network-operator/sriov-net".
    patch_rule::checked_patch(&pod, &mutated, fixtures::record_key(&settings)).unwrap();
}

#[test]
pub(crate) fn regression_windows_pods_get_linux_only_security_fields() {
    let pod = volcano_worker(
        json!({TRIGGER: "true"}),
        json!({
            "os": {"name": "windows"},
            "containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        }),
    );
    let settings = json!({"azure": {"enabled": true}});
    if let Some(mutated) = mutated_pod(evaluate(&pod, &settings)) {
        let new: Vec<_> = violations(&mutated)
            .difference(&violations(&pod))
            .cloned()
            .collect();
        assert!(new.is_empty(), "{new:?}");
    }
}

#[test]
pub(crate) fn regression_floats_survive_the_round_trip() {
    let pod = volcano_worker(
        json!({TRIGGER: "true"}),
        json!({
            "futureField": 4.2e93,
            "containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        }),
    );
    let bytes = payload("CREATE", &pod, &json!({"gcp": {"enabled": true}}));
    assert!(String::from_utf8_lossy(&bytes).contains(r#""futureField":4.2e+93"#));
    let answer = admission::validate(&bytes);
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.contains(r#""futureField":4.2e+93"#),
        "the float changed: {}",
        answer
            .split_once("futureField")
            .map_or("", |(_, rest)| &rest[..30])
    );
}

#[test]
pub(crate) fn regression_the_sidecar_does_not_mount_a_conflicting_volume() {
    let pod = volcano_worker(
        json!({TRIGGER: "true"}),
        json!({
            "volumes": [{"name": "nvtcpxo-sys", "hostPath": {"path": "/var/lib/other"}}],
            "containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": "2"}}}],
        }),
    );
    let Verdict::Mutate {
        pod: mutated,
        warnings,
        ..
    } = evaluate(&pod, &json!({"gcp": {"enabled": true}}))
    else {
        panic!("expected a mutation");
    };
    assert!(warnings.iter().any(|w| w.contains("nvtcpxo-sys")));
    let mutated: Value = serde_json::from_slice(&mutated).unwrap();
    let added = as_list(mutated.pointer("/spec/initContainers"));
    let mounts: Vec<&Value> = added
        .iter()
        .flat_map(|c| as_list(c.get("volumeMounts")))
        .filter(|m| m["name"] == "nvtcpxo-sys")
        .collect();
    assert!(
        mounts.is_empty(),
        "the sidecar mounts the user's volume: {mounts:?}"
    );
}

/// `gpuResources` naming a resource twice was accepted at load, and each GPU was then counted
/// twice: an 8-GPU pod on a p5.48xlarge (32 EFA for 8 GPUs) got 64 EFA and a warning that it
/// could not be scheduled. Found while teaching the generators `gpuResources` ; fixed:
/// a name counts once.
#[test]
pub(crate) fn regression_duplicate_gpu_resources_count_gpus_once() {
    let settings =
        json!({"gpuResources": ["nvidia.com/gpu", "nvidia.com/gpu"], "aws": {"enabled": true}});
    if settings::check(&settings.to_string()).is_err() {
        return;
    }
    let pod = volcano_worker(
        json!({TRIGGER: "true"}),
        json!({
            "nodeSelector": {"node.kubernetes.io/instance-type": "p5.48xlarge"},
            "containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
        }),
    );
    let Some(mutated) = mutated_pod(evaluate(&pod, &settings)) else {
        panic!("expected a mutation");
    };
    assert_eq!(
        mutated.pointer("/spec/containers/0/resources/limits/vpc.amazonaws.com~1efa"),
        Some(&json!("32"))
    );
}
