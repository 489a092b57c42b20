//! What a policy server answers the policy's reads of the cluster (`get_resource`, behaviour.md
//! §9): the objects an injection refers to, and the pod's namespace (§11), in the policy server's
//! own words where it has no object to give (kubewarden-controller 1.36).

use proptest::prelude::*;
use proptest::sample::select;
use serde_json::Value;
use serde_json::json;

/// What a policy server answers one read of an object (behaviour.md §9).
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    /// The object looked for.
    Present,
    /// Its words for a missing object.
    Missing,
    /// An error that is not about the object: an AdmissionPolicy, not in contextAwareResources,
    /// no RBAC, a kind not served, any failure.
    Error(&'static str),
    /// Bytes that are not the object.
    Garbage(Vec<u8>),
}

/// The errors a policy server answers when it could not look, in its words.
pub(crate) const REFUSALS: [&str; 5] = [
    "Policy has not been granted access to Kubernetes v1/ConfigMap resources. The violation has been reported.",
    "Policy has not been granted access to the 'kubernetes/get_resource' host capability. The violation has been reported.",
    r#"Callback evaluation failure: ApiError: x "y" is forbidden: User "system:serviceaccount:kubewarden:policy-server" cannot get resource "x": Forbidden"#,
    "Callback evaluation failure: error finding resource x/v1 / X: ApiError: 404 page not found",
    "Callback evaluation failure: error sending request: connection refused",
];

pub(crate) fn answers() -> impl Strategy<Value = Answer> {
    prop_oneof![
        Just(Answer::Present),
        Just(Answer::Missing),
        select(REFUSALS.to_vec()).prop_map(Answer::Error),
        select(vec![
            "",
            "null",
            "[]",
            r#"{"metadata":{"name":"some-other-name"}}"#,
            r#"{"items":[]}{}"#,
            "{",
        ])
        .prop_map(|text| Answer::Garbage(text.as_bytes().to_vec())),
        proptest::collection::vec(any::<u8>(), 0..48).prop_map(Answer::Garbage),
    ]
}

/// The policy server's words for the missing object `request` asks for.
pub(crate) fn missing(request: &Value) -> String {
    format!(
        "Callback evaluation failure: Cannot find {}/{} named '{}' inside of namespace '{:?}'",
        request["api_version"].as_str().unwrap_or_default(),
        request["kind"].as_str().unwrap_or_default(),
        request["name"].as_str().unwrap_or_default(),
        request["namespace"].as_str(),
    )
}

/// The host's answer to `request` (a `get_resource` request the policy wrote), as `answer` says.
pub(crate) fn host_answer(answer: &Answer, request: &[u8]) -> Result<Vec<u8>, String> {
    let (request, name) = asked(request);
    match answer {
        Answer::Present => Ok(
            json!({"apiVersion": request["api_version"], "kind": request["kind"],
                "metadata": {"name": name, "namespace": request["namespace"]}})
            .to_string()
            .into_bytes(),
        ),
        Answer::Missing => Err(missing(&request)),
        Answer::Error(words) => Err(words.to_string()),
        Answer::Garbage(bytes) => Ok(bytes.clone()),
    }
}

/// What a policy server answers the read of the pod's namespace (behaviour.md §11).
#[derive(Debug, Clone)]
pub(crate) enum NamespaceAnswer {
    /// The namespace, with these labels.
    Labelled(Value),
    /// An error: no RBAC for Namespaces, not in contextAwareResources, an AdmissionPolicy.
    Error(&'static str),
    /// Bytes that are not the namespace.
    Garbage(Vec<u8>),
}

/// The Pod Security labels a namespace may carry: each enforced level, none, `warn` and `audit`
/// only, a level Pod Security does not know.
pub(crate) fn namespace_answers() -> impl Strategy<Value = NamespaceAnswer> {
    const ENFORCE: &str = "pod-security.kubernetes.io/enforce";
    prop_oneof![
        select(vec![
            json!({ENFORCE: "privileged"}),
            json!({ENFORCE: "baseline"}),
            json!({ENFORCE: "restricted"}),
            json!({ENFORCE: "baseline", "pod-security.kubernetes.io/enforce-version": "v1.34"}),
            json!({}),
            json!({"pod-security.kubernetes.io/warn": "restricted", "pod-security.kubernetes.io/audit": "baseline"}),
            json!({ENFORCE: "Restricted"}),
        ])
        .prop_map(NamespaceAnswer::Labelled),
        select(REFUSALS.to_vec()).prop_map(NamespaceAnswer::Error),
        select(vec!["", "null", "{}", r#"{"kind":"Namespace","metadata":{"name":"other"}}"#, "[1]"])
            .prop_map(|text| NamespaceAnswer::Garbage(text.as_bytes().to_vec())),
        proptest::collection::vec(any::<u8>(), 0..48).prop_map(NamespaceAnswer::Garbage),
    ]
}

/// The host's answer to `request` (a `get_resource` of a Namespace the policy wrote).
pub(crate) fn namespace_answer(
    answer: &NamespaceAnswer,
    request: &[u8],
) -> Result<Vec<u8>, String> {
    let request: Value = serde_json::from_slice(request).expect("the policy writes JSON");
    assert_eq!(request["kind"], "Namespace");
    match answer {
        NamespaceAnswer::Labelled(labels) => Ok(json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": request["name"], "labels": labels},
                   "status": {"phase": "Active"}})
        .to_string()
        .into_bytes()),
        NamespaceAnswer::Error(words) => Err(words.to_string()),
        NamespaceAnswer::Garbage(bytes) => Ok(bytes.clone()),
    }
}

/// Whether the namespace answered enforces a level that refuses something (§11).
pub(crate) fn refusing(answer: &NamespaceAnswer) -> bool {
    match answer {
        NamespaceAnswer::Labelled(labels) => matches!(
            labels["pod-security.kubernetes.io/enforce"].as_str(),
            Some("baseline" | "restricted")
        ),
        _ => false,
    }
}

/// A `get_resource` request the policy wrote, and the name it asks for.
pub(crate) fn asked(request: &[u8]) -> (Value, String) {
    let request: Value = serde_json::from_slice(request).expect("the policy writes JSON");
    let name = request["name"].as_str().expect("a name").to_string();
    (request, name)
}

/// Whether `request` reads the pod's namespace (behaviour.md §11) rather than an object of §9.
pub(crate) fn is_namespace(request: &[u8]) -> bool {
    asked(request).0["kind"] == "Namespace"
}
