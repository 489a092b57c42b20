//! The policy's two calls as pure functions from payload bytes to answer bytes: decode, dispatch,
//! encode. Every input gets an answer; nothing here can trap the module. [`trigger`] decides
//! whether the policy acts on a pod (behaviour.md §2). For a pod the policy would change,
//! [`pod_security`] holds what it adds to the namespace's Pod Security level, and
//! with `validateOnly` [`validate_only`] answers a refusal in place of the patch.

mod launcher;
pub mod pod_security;
pub mod trigger;
pub mod validate_only;

use crate::json::tape::Tape;
use kubewarden_policy_sdk::settings::SettingsValidationResponse;

use crate::cluster::{self, Cluster, Host};
use crate::engine::{self, Outcome};
use crate::error::Error;
use crate::json::envelope::Envelope;
use crate::json::object::{self, Object};
use crate::preflight;
use crate::settings::{self, Common, Config};
use trigger::Decision;

/// The answer to one admission request.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    Accept {
        warnings: Vec<String>,
    },
    /// `pod` is the mutated pod's JSON text; `record` what was injected (behaviour.md §2.1), as
    /// a JSON string, for the audit annotation.
    Mutate {
        pod: Vec<u8>,
        warnings: Vec<String>,
        record: Option<String>,
    },
    Reject {
        message: String,
    },
}

/// `validate`: the payload is `{"request": AdmissionRequest, "settings": {...}}`. Without a host,
/// as in the playground: every read of the cluster is refused, as for an `AdmissionPolicy`.
pub fn validate(payload: &[u8]) -> Vec<u8> {
    validate_with(payload, &cluster::no_host)
}

/// `validate`, with `host` answering the reads of the cluster.
pub fn validate_with(payload: &[u8], host: Host<'_>) -> Vec<u8> {
    encode(evaluate_with(payload, host))
}

/// `validate_settings`: the payload is the settings object as the operator wrote it.
pub fn validate_settings(payload: &[u8]) -> Vec<u8> {
    let checked = std::str::from_utf8(payload)
        .map_err(|e| Error::Settings(vec![format!("settings are not valid JSON: {e}")]))
        .and_then(settings::check);
    let response = SettingsValidationResponse {
        valid: checked.is_ok(),
        message: checked.err().map(|e| e.to_string()),
    };
    serde_json::to_vec(&response)
        .unwrap_or_else(|_| br#"{"valid":false,"message":"internal error"}"#.to_vec())
}

pub fn evaluate(payload: &[u8]) -> Verdict {
    evaluate_with(payload, &cluster::no_host)
}

pub fn evaluate_with(payload: &[u8], host: Host<'_>) -> Verdict {
    let text = match std::str::from_utf8(payload) {
        Ok(text) => text,
        Err(e) => {
            return refuse(Error::Request {
                reason: e.to_string(),
            });
        }
    };
    let mut envelope = match Envelope::read(text, &engine::POD, &settings::DEFAULT_TRIGGERS) {
        Ok(envelope) => envelope,
        Err(e) => {
            return refuse(Error::Request {
                reason: e.to_string(),
            });
        }
    };
    let view = envelope
        .request
        .object
        .as_mut()
        .and_then(|pod| pod.view.take());
    let request = &envelope.request;
    let Some(pod) = request
        .object
        .as_ref()
        .filter(|_| trigger::is_pod_create(request))
    else {
        return accept(Vec::new());
    };
    // No settings at all read as `{}`, as the host's `{}` does.
    let none = Tape::default();
    let settings = envelope.settings.as_ref().unwrap_or(&none);
    // The decision needs only the trigger and the owners; a pod that is not ours, most pods,
    // costs no more of the settings than that.
    let common = match Common::from_tape(settings) {
        Ok(common) => common,
        Err(e) => return refuse(e),
    };
    match trigger::decide(&pod.peek, &common) {
        Decision::Pass => accept(Vec::new()),
        Decision::PassWithWarning(warning) => accept(vec![warning]),
        Decision::Inject(warning) => match Config::from_tape(settings, common) {
            Ok(config) => {
                let namespace = request.namespace.0.as_str();
                let cluster = Cluster::new(namespace, config.preflight, host);
                let pod = match view {
                    Some(view) => view.into_object(),
                    None => object::read_object(text, &engine::POD),
                };
                inject(pod, text.len(), &config, warning, &cluster)
            }
            Err(e) => refuse(e),
        },
    }
}

/// An opted-in pod, read into a view that parses just what the merge reads and writes, from which
/// the answer is written with the pod's own text for everything else: read in the decision's pass
/// where its metadata came first, as the API server writes a pod, and a default trigger opted it
/// in, else a second time. `size` is the payload's, which the answer is about. Every read of the
/// cluster goes through `cluster`, once per object. An MPIJob's launcher is planned first: what
/// it passes to its ranks, and whether it is wired as a worker too ([`launcher`]).
fn inject(
    pod: Result<Object<'_>, Error>,
    size: usize,
    config: &Config<'_>,
    warning: Option<String>,
    cluster: &Cluster<'_>,
) -> Verdict {
    let mut pod = match pod {
        Ok(pod) => pod,
        Err(error) => return refuse(error),
    };
    let part = launcher::part(&pod, config, cluster);
    let outcome = part.wire(&mut pod, config, cluster).map(|mut outcome| {
        outcome.warnings.splice(0..0, warning);
        part.warn(&mut outcome);
        outcome
    });
    let outcome = match outcome {
        Ok(mut outcome) if !outcome.references.is_empty() => {
            match preflight::check(&outcome.references, cluster) {
                Ok(warnings) => outcome.warnings.extend(warnings),
                Err(error) => return refuse(error),
            }
            Ok(outcome)
        }
        outcome => outcome,
    };
    match outcome {
        Ok(outcome) if outcome.changed() => answer_changed(&pod, size, outcome, config, cluster),
        Ok(Outcome { warnings, .. }) => accept(warnings),
        Err(error) => refuse(error),
    }
}

/// The answer for a changed pod, of about `size` bytes as JSON: the mutation, after the
/// namespace's Pod Security level has had its say, or with `validateOnly` the refusal saying what
/// the pod lacks, for which the pod's text is never written.
fn answer_changed(
    pod: &Object<'_>,
    size: usize,
    outcome: Outcome<'_>,
    config: &Config<'_>,
    cluster: &Cluster<'_>,
) -> Verdict {
    let Outcome {
        added,
        mut warnings,
        record,
        fabric,
        ..
    } = outcome;
    if pod_security::refusable(&added)
        && let Some(level) = pod_security::read_level(cluster)
        && let Some(namespace) = cluster.namespace()
    {
        match pod_security::check(level, &added, namespace, config.preflight) {
            Ok(warning) => warnings.extend(warning),
            Err(error) => return refuse(error),
        }
    }
    if config.validate_only {
        let cloud = config.cloud.cloud.name;
        let record = config.record.as_deref();
        return Verdict::Reject {
            message: validate_only::refusal(&added, cloud, fabric, record),
        };
    }
    let mut text = Vec::with_capacity(size * 2);
    pod.write(&mut text);
    Verdict::Mutate {
        pod: text,
        warnings,
        record,
    }
}

fn accept(warnings: Vec<String>) -> Verdict {
    Verdict::Accept { warnings }
}

fn refuse(error: Error) -> Verdict {
    Verdict::Reject {
        message: error.refusal(),
    }
}

/// The SDK's `ValidationResponse`, written around the mutated pod's text rather than through a
/// `Value`, which would parse the pod again only to encode it again.
fn encode(verdict: Verdict) -> Vec<u8> {
    let (accepted, message, pod, warnings, record) = match &verdict {
        Verdict::Accept { warnings } => (true, None, None, warnings.as_slice(), None),
        Verdict::Mutate {
            pod,
            warnings,
            record,
        } => (
            true,
            None,
            Some(pod.as_slice()),
            warnings.as_slice(),
            record.as_deref(),
        ),
        Verdict::Reject { message } => (false, Some(message.as_str()), None, [].as_slice(), None),
    };
    let mut out = Vec::with_capacity(pod.map_or(0, <[u8]>::len) + 160);
    out.extend_from_slice(if accepted {
        br#"{"accepted":true,"message":"#
    } else {
        br#"{"accepted":false,"message":"#
    });
    let warnings = (!warnings.is_empty()).then_some(warnings);
    // Writing strings into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, &message);
    out.extend_from_slice(br#","code":null,"mutated_object":"#);
    out.extend_from_slice(pod.unwrap_or(b"null"));
    out.extend_from_slice(br#","audit_annotations":"#);
    match record {
        Some(record) => {
            out.extend_from_slice(b"{\"");
            out.extend_from_slice(crate::engine::AUDIT_KEY.as_bytes());
            out.extend_from_slice(b"\":");
            out.extend_from_slice(record.as_bytes());
            out.push(b'}');
        }
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(br#","warnings":"#);
    let _ = serde_json::to_writer(&mut out, &warnings);
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubewarden_policy_sdk::response::ValidationResponse;
    use serde_json::Value;
    use serde_json::json;

    #[test]
    fn a_mutation_is_the_sdks_response() {
        let pod = br#"{"metadata":{"name":"w"},"spec":{"x":1.50}}"#;
        for (warnings, record) in [
            (vec![], None),
            (
                vec!["careful \"here\"".to_string()],
                Some(r#"{"cloud":"a\"b"}"#),
            ),
        ] {
            let answer = encode(Verdict::Mutate {
                pod: pod.to_vec(),
                warnings: warnings.clone(),
                record: record.map(crate::json::write::render_string),
            });
            let response: ValidationResponse = serde_json::from_slice(&answer).unwrap();
            assert!(response.accepted && response.message.is_none() && response.code.is_none());
            assert_eq!(
                response.mutated_object,
                Some(json!({"metadata": {"name": "w"}, "spec": {"x": 1.5}}))
            );
            assert_eq!(
                response.warnings,
                (!warnings.is_empty()).then_some(warnings)
            );
            let audit = response.audit_annotations.clone();
            assert_eq!(
                audit.and_then(|a| a.get("injected").cloned()),
                record.map(str::to_string)
            );
            let as_sdk = serde_json::to_value(&response).unwrap();
            let keys: Vec<_> = as_sdk.as_object().unwrap().keys().collect();
            let ours: Value = serde_json::from_slice(&answer).unwrap();
            assert_eq!(keys, ours.as_object().unwrap().keys().collect::<Vec<_>>());
        }
    }

    #[test]
    fn accepts_and_rejections_are_the_sdks_response() {
        let warned = vec!["careful \"here\"".to_string()];
        for (verdict, accepted, message, warnings) in [
            (Verdict::Accept { warnings: vec![] }, true, None, None),
            (
                Verdict::Accept {
                    warnings: warned.clone(),
                },
                true,
                None,
                Some(warned.clone()),
            ),
            (
                Verdict::Reject {
                    message: "no \"way\"".into(),
                },
                false,
                Some("no \"way\"".to_string()),
                None,
            ),
        ] {
            let answer = encode(verdict);
            let response: ValidationResponse = serde_json::from_slice(&answer).unwrap();
            assert_eq!(response.accepted, accepted);
            assert_eq!(response.message, message);
            assert_eq!(response.warnings, warnings);
            assert!(response.code.is_none() && response.mutated_object.is_none());
            let ours: Value = serde_json::from_slice(&answer).unwrap();
            assert_eq!(ours, serde_json::to_value(&response).unwrap());
        }
    }
}
