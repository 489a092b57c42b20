//! Running the policy: payloads, verdicts read as values, whether a pod opted in.

use fixtures::TRIGGERS;
use fixtures::admission_request;
use fixtures::pod_kind;
use multinode_networking_policy::admission;
use multinode_networking_policy::admission::Verdict;
use serde_json::Value;

pub(crate) fn payload(operation: &str, pod: &Value, settings: &Value) -> Vec<u8> {
    fixtures::payload(&admission_request(operation, &pod_kind(), pod), settings)
}

/// A verdict with the mutated pod decoded and a message without the line and column it names,
/// which differ with the payload's layout.
pub(crate) fn answer_of(verdict: Verdict) -> (bool, Option<Value>, Vec<String>, Option<String>) {
    match verdict {
        Verdict::Mutate {
            pod,
            warnings,
            record,
        } => (
            true,
            Some(serde_json::from_slice(&pod).expect("the policy writes JSON")),
            warnings,
            record,
        ),
        Verdict::Accept { warnings } => (true, None, warnings, None),
        Verdict::Reject { message } => {
            let message = match message.find(" at line ") {
                Some(at) => message[..at].to_string(),
                None => message,
            };
            (false, None, vec![message], None)
        }
    }
}

/// The mutated pod of a mutation, decoded from the text the policy writes.
pub(crate) fn mutated_pod(verdict: Verdict) -> Option<Value> {
    match verdict {
        Verdict::Mutate { pod, .. } => {
            Some(serde_json::from_slice(&pod).expect("the policy writes JSON"))
        }
        _ => None,
    }
}

pub(crate) fn evaluate(pod: &Value, settings: &Value) -> Verdict {
    admission::evaluate(&payload("CREATE", pod, settings))
}

/// Whether some trigger annotation's value is "true", read the way the pod's JSON holds it
/// (behaviour.md §2: any of the keys).
pub(crate) fn opted_in(pod: &Value, settings: &Value) -> bool {
    let keys: Vec<&str> = match settings.get("triggerAnnotation") {
        Some(Value::String(key)) => vec![key.as_str()],
        Some(Value::Array(keys)) => keys.iter().filter_map(Value::as_str).collect(),
        _ => TRIGGERS.to_vec(),
    };
    keys.iter().any(|key| {
        pod.get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            == Some("true")
    })
}
