//! The policy's two calls as pure functions from payload bytes to answer bytes: decode, dispatch,
//! encode. Every input gets an answer; nothing here can trap the module.

use kubewarden_policy_sdk::response::ValidationResponse;
use kubewarden_policy_sdk::settings::SettingsValidationResponse;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::engine::{self, Outcome};
use crate::peek::{self, Envelope};
use crate::profile::Profile;
use crate::settings::Config;
use crate::trigger::{self, Decision};

/// The answer to one admission request.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    Accept { warnings: Vec<String> },
    Mutate { pod: Value, warnings: Vec<String> },
    Reject { message: String },
}

/// `validate`: the payload is `{"request": AdmissionRequest, "settings": {...}}`.
pub fn validate(payload: &[u8]) -> Vec<u8> {
    encode(evaluate(payload))
}

/// `validate_settings`: the payload is the settings object as the operator wrote it.
pub fn validate_settings(payload: &[u8]) -> Vec<u8> {
    let checked = serde_json::from_slice::<Value>(payload)
        .map_err(|e| format!("settings are not valid JSON: {e}"))
        .and_then(|settings| Config::from_value(&settings).map_err(|e| e.to_string()));
    let response = SettingsValidationResponse {
        valid: checked.is_ok(),
        message: checked.err(),
    };
    serde_json::to_vec(&response)
        .unwrap_or_else(|_| br#"{"valid":false,"message":"internal error"}"#.to_vec())
}

pub fn evaluate(payload: &[u8]) -> Verdict {
    let envelope: Envelope<'_> = match serde_json::from_slice(payload) {
        Ok(envelope) => envelope,
        Err(e) => return reject(format!("cannot read the admission request: {e}")),
    };
    let request = &envelope.request;
    let Some(pod) = request
        .object
        .as_ref()
        .filter(|_| trigger::is_pod_create(request))
    else {
        return accept(Vec::new());
    };
    let config = match read_settings(envelope.settings) {
        Ok(config) => config,
        Err(message) => return reject(message),
    };
    match trigger::decide(&pod.0.0, &config) {
        Decision::Pass => accept(Vec::new()),
        Decision::PassWithWarning(warning) => accept(vec![warning]),
        Decision::Inject => inject(payload, &config),
    }
}

fn read_settings(raw: Option<&RawValue>) -> Result<Config, String> {
    let settings = match raw {
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|e| format!("cannot read the policy settings: {e}"))?,
        None => Value::Null,
    };
    Config::from_value(&settings).map_err(|e| format!("the policy settings are invalid: {e}"))
}

/// Only an opted-in pod is decoded whole, changed in place, and encoded once.
fn inject(payload: &[u8], config: &Config) -> Verdict {
    let mut pod = match peek::full_object(payload) {
        Ok(pod) => pod,
        Err(e) => return reject(format!("cannot read the pod: {e}")),
    };
    match engine::inject(&mut pod, &Profile::for_cloud(&config.cloud)) {
        Ok(Outcome {
            changed: true,
            warnings,
        }) => Verdict::Mutate { pod, warnings },
        Ok(Outcome {
            changed: false,
            warnings,
        }) => accept(warnings),
        Err(rejection) => reject(rejection.to_string()),
    }
}

fn accept(warnings: Vec<String>) -> Verdict {
    Verdict::Accept { warnings }
}

fn reject(message: String) -> Verdict {
    Verdict::Reject { message }
}

fn encode(verdict: Verdict) -> Vec<u8> {
    let (accepted, message, mutated_object, warnings) = match verdict {
        Verdict::Accept { warnings } => (true, None, None, warnings),
        Verdict::Mutate { pod, warnings } => (true, None, Some(pod), warnings),
        Verdict::Reject { message } => (false, Some(message), None, Vec::new()),
    };
    let response = ValidationResponse {
        accepted,
        message,
        code: None,
        mutated_object,
        audit_annotations: None,
        warnings: (!warnings.is_empty()).then_some(warnings),
    };
    serde_json::to_vec(&response).unwrap_or_else(|_| {
        br#"{"accepted":false,"message":"internal error encoding the response"}"#.to_vec()
    })
}
