//! What a policy server answers the preflight's host calls.

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
    let request: Value = serde_json::from_slice(request).expect("the policy writes JSON");
    let name = request["field_selector"]
        .as_str()
        .and_then(|s| s.strip_prefix("metadata.name="))
        .expect("narrowed to the name")
        .to_string();
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
