//! What the cluster answers a pod's claim reads (behaviour.md §3.10): `ResourceClaimTemplate`s and
//! `ResourceClaim`s of every shape the API allows and of many it does not, and garbage.

use proptest::prelude::*;
use proptest::sample::select;
use serde_json::Value;
use serde_json::json;

use crate::generators::host::{REFUSALS, asked, missing};

/// The classes a request may name: GPUs, a fabric, a channel, MIG, nothing.
const CLASSES: [&str; 7] = [
    "gpu.nvidia.com",
    "gpu.amd.com",
    "efa.networking.k8s.aws",
    "mrdma.google.com",
    "compute-domain-default-channel.nvidia.com",
    "mig.nvidia.com",
    "",
];

/// One device request's `exactly` (or a `firstAvailable` alternative), keys left out at random,
/// values of the right type mostly.
fn exactly() -> impl Strategy<Value = Value> {
    (
        proptest::option::weighted(0.95, select(CLASSES.to_vec())),
        proptest::option::weighted(
            0.5,
            select(vec![
                json!("ExactCount"),
                json!("All"),
                json!("Some"),
                json!(3),
                Value::Null,
            ]),
        ),
        proptest::option::weighted(
            0.6,
            prop_oneof![
                8 => (0u64..=16).prop_map(Value::from),
                1 => select(vec![
                    json!(-1),
                    json!(1.5),
                    json!("2"),
                    json!(u64::MAX),
                    json!(1e300),
                    Value::Null,
                ]),
            ],
        ),
    )
        .prop_map(|(class, mode, count)| {
            let mut exactly = json!({"name": "r"});
            if let Some(class) = class {
                exactly["deviceClassName"] = class.into();
            }
            if let Some(mode) = mode {
                exactly["allocationMode"] = mode;
            }
            if let Some(count) = count {
                exactly["count"] = count;
            }
            exactly
        })
}

/// One device request: `exactly`, `firstAvailable`, both, neither, or not an object.
fn request() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => exactly().prop_map(|e| json!({"name": "gpu", "exactly": e})),
        2 => proptest::collection::vec(exactly(), 0..4)
            .prop_map(|alternatives| json!({"name": "gpu", "firstAvailable": alternatives})),
        1 => select(vec![
            json!({"name": "none"}),
            json!({"name": "x", "exactly": []}),
            json!({"name": "x", "firstAvailable": {}}),
            json!(7),
            Value::Null,
        ]),
    ]
}

/// A claim's spec (`{devices: {requests, constraints}}`), sometimes broken.
pub(crate) fn claim_spec() -> impl Strategy<Value = Value> {
    prop_oneof![
        8 => proptest::collection::vec(request(), 0..4).prop_map(|requests| json!({
            "devices": {
                "requests": requests,
                "constraints": [{"requests": ["gpu", "efa"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}],
            }
        })),
        1 => select(vec![
            json!({}),
            json!({"devices": null}),
            json!({"devices": {"requests": "gpu"}}),
            json!([]),
            Value::Null,
        ]),
    ]
}

/// What the host answers one claim read.
#[derive(Debug, Clone)]
pub(crate) enum ClaimAnswer {
    /// The object, with this spec (a template holds it at `spec.spec`).
    Object(Value),
    Missing,
    Error(&'static str),
    Garbage(Vec<u8>),
}

pub(crate) fn claim_answers() -> impl Strategy<Value = ClaimAnswer> {
    prop_oneof![
        6 => claim_spec().prop_map(ClaimAnswer::Object),
        1 => Just(ClaimAnswer::Missing),
        1 => select(REFUSALS.to_vec()).prop_map(ClaimAnswer::Error),
        1 => proptest::collection::vec(any::<u8>(), 0..48).prop_map(ClaimAnswer::Garbage),
        1 => select(vec![r#"{"metadata":{"name":7},"spec":{"spec":3}}"#, r#"{"spec":[]}"#, "[]", r#"{"metadata":{"name":"other"}}"#])
            .prop_map(|t| ClaimAnswer::Garbage(t.as_bytes().to_vec())),
    ]
}

/// The host's answer to a `get_resource` `request`: `answer` for the claim kinds (the
/// preflight's look for a `deviceClaim` template too gets it), the object present for the other
/// kinds.
pub(crate) fn claim_host_answer(answer: &ClaimAnswer, request: &[u8]) -> Result<Vec<u8>, String> {
    let (request, name) = asked(request);
    let kind = request["kind"].as_str().unwrap_or_default();
    if !kind.starts_with("ResourceClaim") {
        return Ok(object(&request, &name, None));
    }
    match answer {
        ClaimAnswer::Object(spec) => {
            let spec = if kind == "ResourceClaim" {
                spec.clone()
            } else {
                json!({"spec": spec})
            };
            Ok(object(&request, &name, Some(spec)))
        }
        ClaimAnswer::Missing => Err(missing(&request)),
        ClaimAnswer::Error(words) => Err(words.to_string()),
        ClaimAnswer::Garbage(bytes) => Ok(bytes.clone()),
    }
}

/// The object `request` asks for, named `name`, with `spec`.
pub(crate) fn object(request: &Value, name: &str, spec: Option<Value>) -> Vec<u8> {
    let mut object = json!({"apiVersion": request["api_version"], "kind": request["kind"],
        "metadata": {"name": name, "namespace": request["namespace"]}});
    if let Some(spec) = spec {
        object["spec"] = spec;
    }
    object.to_string().into_bytes()
}
