//! What `make preview` shows of the compiled policy on a pod: the module checked as the policy
//! server checks it before loading it, then run on `policy-host`'s lean engine, which the e2e
//! tests hold to the policy server's answers on every case. With no cluster, as for an
//! `AdmissionPolicy`, its host calls are errors.

pub mod controllers;
pub mod input;
pub mod reason;
pub mod summary;

use anyhow::{Context, Result};
use case_runner::cluster::Recorder;
use case_runner::{Response, SettingsResponse};
use fixtures::{admission_request, payload, pod_kind};
use policy_host::Policy;
use policy_metadata::annotate::annotation;
use serde_json::Value;

/// What the module answered.
#[derive(Debug)]
pub enum Outcome {
    /// `validate_settings` refused the settings, with this message.
    SettingsRejected(String),
    /// `validate` answered: its warnings, and the pod it sends back where it changed it.
    Accepted {
        warnings: Vec<String>,
        mutated: Option<Value>,
    },
    /// `validate` refused the pod, with its warnings and this message.
    Rejected {
        warnings: Vec<String>,
        message: String,
    },
}

/// The module's answers to `settings` and to a CREATE of `pod`; an error where the policy server
/// would not load the module or the module does not answer.
pub fn preview(module: &[u8], pod: &Value, settings: &Value) -> Result<Outcome> {
    annotation(module).context("the policy server would not load it")?;
    let instance = Policy::from_bytes(module)?.instance(Recorder::new(None).host())?;
    let checked = SettingsResponse::decode(
        &instance.call("validate_settings", &serde_json::to_vec(settings)?)?,
    )?;
    if !checked.valid {
        return Ok(Outcome::SettingsRejected(
            checked.message.unwrap_or_default(),
        ));
    }
    let request = admission_request("CREATE", &pod_kind(), pod);
    let response = Response::decode(&instance.call("validate", &payload(&request, settings))?)?;
    let warnings = response.warnings.unwrap_or_default();
    Ok(if response.accepted {
        Outcome::Accepted {
            warnings,
            mutated: response.mutated_object,
        }
    } else {
        Outcome::Rejected {
            warnings,
            message: response.message.unwrap_or_default(),
        }
    })
}
