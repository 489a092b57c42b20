//! What the policy server answers the API server, and `kwctl run` prints, made from the
//! module's `validate` answer as Kubewarden's policy-evaluator makes it
//! (`AdmissionResponse::from_policy_validation_response` in
//! `crates/policy-evaluator/src/admission_response.rs` of kubewarden/kubewarden-controller):
//!
//! - `uid`: the request's; `allowed`: the answer's `accepted`;
//! - `patchType: "JSONPatch"` and `patch`, the base64 of the JSON text of
//!   `json_patch::diff(request.object, mutated_object)`, only when the answer has a mutated
//!   object and the diff is not empty;
//! - `status: {message, code}`, each only when the answer has it, the whole only when either is;
//! - `auditAnnotations` and `warnings` copied, `null` when absent;
//! - a mutation of a request without object (a DELETE) is refused instead.
//!
//! A policy in `protect` mode that may mutate (`mutating: true`) gets this response unchanged
//! from the server's `AdmissionResponseHandler`, as `kwctl run` gets it.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value, json};

use crate::Response;

/// The message policy-evaluator refuses a mutation of a DELETE with.
pub const MUTATED_DELETE: &str = "Incoming object is null, which happens only with DELETE operations, but the policy is attempting a mutation. This is not allowed";

/// The AdmissionResponse of `answer` to `request` (an AdmissionRequest), as JSON.
pub fn admission_response(request: &Value, answer: &Response) -> Value {
    let uid = request["uid"].clone();
    let object = &request["object"];
    if answer.mutated_object.is_some() && object.is_null() {
        return json!({
            "uid": uid,
            "allowed": false,
            "status": {"message": MUTATED_DELETE},
            "auditAnnotations": null,
            "warnings": null,
        });
    }
    let mut response = Map::new();
    response.insert("uid".into(), uid);
    response.insert("allowed".into(), answer.accepted.into());
    if let Some(mutated) = &answer.mutated_object {
        let patch = json_patch::diff(object, mutated);
        if !patch.0.is_empty() {
            let text = serde_json::to_string(&patch).expect("a patch serialises");
            response.insert("patchType".into(), "JSONPatch".into());
            response.insert("patch".into(), BASE64.encode(text).into());
        }
    }
    if answer.message.is_some() || answer.code.is_some() {
        let mut status = Map::new();
        if let Some(message) = &answer.message {
            status.insert("message".into(), message.clone().into());
        }
        if let Some(code) = answer.code {
            status.insert("code".into(), code.into());
        }
        response.insert("status".into(), status.into());
    }
    response.insert("auditAnnotations".into(), json!(answer.audit_annotations));
    response.insert("warnings".into(), json!(answer.warnings));
    Value::Object(response)
}

/// The JSON Patch an AdmissionResponse carries, decoded; `None` without one.
pub fn decoded_patch(response: &Value) -> anyhow::Result<Option<json_patch::Patch>> {
    let Some(patch) = response.get("patch") else {
        return Ok(None);
    };
    let text = BASE64.decode(patch.as_str().unwrap_or_default())?;
    Ok(Some(serde_json::from_slice(&text)?))
}
