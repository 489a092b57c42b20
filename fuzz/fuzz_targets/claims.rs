//! The cluster's answer to a pod's claim and `envFrom` reads (behaviour.md §3.10, §4): the
//! fuzzer's bytes are the object the host answers every `ResourceClaimTemplate`, `ResourceClaim`
//! and `ConfigMap` read, for opted-in pods whose containers name claims (one from a template, one made
//! ahead, one shared) and take env from ConfigMaps (one named twice, behind two prefixes, one
//! optional) and a Secret, on every cloud. Beyond "no panic": the answer is the SDK's response
//! with a boolean `accepted`, no object is asked for twice in one request, and the answer reader
//! alone, given the same bytes, never panics either.
#![no_main]

use std::borrow::Cow;
use std::cell::RefCell;

use fixtures::{create_payload, volcano_worker};
use libfuzzer_sys::fuzz_target;
use multinode_networking_policy::admission;
use multinode_networking_policy::claims::{Classes, Holder, read_answer};
use serde_json::{Value, json};

fn pod() -> Value {
    let mut pod = volcano_worker(
        json!({fixtures::TRIGGER: "true"}),
        json!({
            "nodeSelector": {"node.kubernetes.io/instance-type": "p5.48xlarge"},
            "resourceClaims": [
                {"name": "gpus", "resourceClaimTemplateName": "eight-gpus"},
                {"name": "made", "resourceClaimName": "made-ahead"},
                {"name": "again", "resourceClaimTemplateName": "eight-gpus"},
            ],
            "containers": [
                {"name": "a", "resources": {"claims": [{"name": "gpus"}, {"name": "made"}]},
                 "envFrom": [
                    {"configMapRef": {"name": "nccl-env"}},
                    {"prefix": "NCCL_", "configMapRef": {"name": "nccl-env"}},
                    {"secretRef": {"name": "hf-token"}},
                 ]},
                {"name": "b", "resources": {"claims": [{"name": "gpus"}, {"name": "again"}], "limits": {"nvidia.com/gpu": "2"}},
                 "envFrom": [
                    {"configMapRef": {"name": "nccl-env"}},
                    {"prefix": "UCX_", "configMapRef": {"name": "ucx-env", "optional": true}},
                 ]},
            ],
        }),
    );
    pod["metadata"]["namespace"] = json!("jobs");
    pod
}

fuzz_target!(|data: &[u8]| {
    let gpu = [Cow::Borrowed("gpu.nvidia.com"), Cow::Borrowed("gpu.amd.com")];
    let fabric = [Cow::Borrowed("efa.networking.k8s.aws")];
    let classes = Classes {
        gpu: &gpu,
        fabric: &fabric,
    };
    if let Ok(text) = std::str::from_utf8(data) {
        for holder in [Holder::Template, Holder::Claim] {
            let _ = read_answer(text, holder, &classes);
        }
    }
    for settings in [
        json!({"aws": {"enabled": true}}),
        json!({"azure": {"enabled": true}, "preflight": "reject"}),
        json!({"gcp": {"enabled": true}}),
        json!({"oci": {"enabled": true}, "fabricDeviceClasses": ["gpu.nvidia.com"]}),
    ] {
        let calls = RefCell::new(Vec::new());
        // The claims' and ConfigMaps' reads and the namespace's, each asked for once.
        let host = |operation: &str, request: &[u8]| {
            calls.borrow_mut().push([operation.as_bytes(), request].concat());
            let asked: Value = serde_json::from_slice(request).expect("the policy writes JSON");
            let kind = asked["kind"].as_str().unwrap_or_default();
            if kind.starts_with("ResourceClaim") || kind == "ConfigMap" {
                Ok(data.to_vec())
            } else {
                Err(format!("Callback evaluation failure: Cannot find v1/{kind} named 'x'"))
            }
        };
        let answer = admission::validate_with(&create_payload(&pod(), &settings), &host);
        let answer: Value = serde_json::from_slice(&answer).expect("the answer is JSON");
        assert!(answer["accepted"].is_boolean(), "{answer}");
        let calls = calls.into_inner();
        assert!(fixtures::none_asked_twice(&calls), "an object was asked for twice");
    }
});
