//! What a policy server answers the preflight's host calls: the lists of the objects an injection
//! refers to (behaviour.md §9), and the pod's namespace (§11).

use proptest::prelude::*;
use proptest::sample::select;
use serde_json::Value;
use serde_json::json;

/// What a policy server answers one preflight host call (behaviour.md §9).
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    /// A list holding the object looked for.
    Present,
    /// An empty list.
    Missing,
    /// An error: an AdmissionPolicy, no RBAC, not in contextAwareResources.
    Error,
    /// Bytes that are not a list.
    Garbage(Vec<u8>),
}

pub(crate) fn answers() -> impl Strategy<Value = Answer> {
    prop_oneof![
        Just(Answer::Present),
        Just(Answer::Missing),
        Just(Answer::Error),
        select(vec![
            "",
            "null",
            "[]",
            "{}",
            r#"{"items":null}"#,
            r#"{"items":{}}"#,
            r#"{"items":"[]"}"#,
            r#"{"items":[]"#,
            r#"{"items":[]}{}"#,
        ])
        .prop_map(|text| Answer::Garbage(text.as_bytes().to_vec())),
        proptest::collection::vec(any::<u8>(), 0..48).prop_map(Answer::Garbage),
    ]
}

/// The host's answer to `request` (a list request the policy wrote), as `answer` says.
pub(crate) fn host_answer(answer: &Answer, request: &[u8]) -> Option<Vec<u8>> {
    let (_, name) = listed(request);
    match answer {
        Answer::Present => Some(
            json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": [
                {"metadata": {"name": "other"}}, {"metadata": {"name": name}}
            ]})
            .to_string()
            .into_bytes(),
        ),
        Answer::Missing => {
            Some(br#"{"apiVersion":"v1","kind":"List","metadata":{},"items":[]}"#.to_vec())
        }
        Answer::Error => None,
        Answer::Garbage(bytes) => Some(bytes.clone()),
    }
}

/// What a policy server answers the read of the pod's namespace (behaviour.md §11).
#[derive(Debug, Clone)]
pub(crate) enum NamespaceAnswer {
    /// The namespace, with these labels.
    Labelled(Value),
    /// An error: no RBAC for Namespaces, not in contextAwareResources, an AdmissionPolicy.
    Error,
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
        Just(NamespaceAnswer::Error),
        select(vec!["", "null", "{}", r#"{"kind":"Namespace","metadata":{"name":"other"}}"#, "[1]"])
            .prop_map(|text| NamespaceAnswer::Garbage(text.as_bytes().to_vec())),
        proptest::collection::vec(any::<u8>(), 0..48).prop_map(NamespaceAnswer::Garbage),
    ]
}

/// The host's answer to `request` (a `get_resource` of a Namespace the policy wrote).
pub(crate) fn namespace_answer(answer: &NamespaceAnswer, request: &[u8]) -> Option<Vec<u8>> {
    let request: Value = serde_json::from_slice(request).expect("the policy writes JSON");
    assert_eq!(request["kind"], "Namespace");
    match answer {
        NamespaceAnswer::Labelled(labels) => Some(
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": request["name"], "labels": labels},
                   "status": {"phase": "Active"}})
            .to_string()
            .into_bytes(),
        ),
        NamespaceAnswer::Error => None,
        NamespaceAnswer::Garbage(bytes) => Some(bytes.clone()),
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

/// A list request the policy wrote, and the name it is narrowed to.
pub(crate) fn listed(request: &[u8]) -> (Value, String) {
    let request: Value = serde_json::from_slice(request).expect("the policy writes JSON");
    let name = request["field_selector"]
        .as_str()
        .and_then(|s| s.strip_prefix("metadata.name="))
        .expect("narrowed to the name")
        .to_string();
    (request, name)
}
