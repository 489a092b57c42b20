//! What the policy server's answer to a `get_resource` call means. Its words are its own
//! (kubewarden-controller 1.36, `crates/policy-evaluator/src/`): the object's JSON; for an
//! object that does not exist the error "Cannot find {apiVersion}/{kind} named '{name}' inside
//! of namespace …" (`callback_handler/kubernetes/client.rs`, `get_resource`); for everything
//! else an error saying why it could not look, which tells apart a kind the policy was not
//! granted (`runtimes/callback.rs`: "Policy has not been granted access to …"), one the API
//! server refuses (RBAC: its 403 `Forbidden`) and one it does not serve (`build_kube_resource`:
//! "error finding resource …" for an API group it does not serve, "Cannot find resource …" for a
//! kind its group lacks). The host hands the error on as "Callback evaluation failure: …".

use std::rc::Rc;

use crate::json::lenient::{members, read_members, string};

use super::ObjectKind;

/// Why an object was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unread {
    /// `preflight: skip`: no host call at all.
    Skipped,
    /// The request names no namespace to read a namespaced object in.
    NoNamespace,
    /// The object does not exist.
    Missing,
    /// The policy server could not look, for this reason.
    Refused(Refusal),
    /// The answer is not the object's JSON, or not in a shape the policy reads.
    Unreadable,
}

/// Why the policy server could not look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The policy was not granted the kind: an `AdmissionPolicy`, a `ClusterAdmissionPolicy`
    /// whose `contextAwareResources` lack it, a host without the capability or without a cluster.
    NotGranted,
    /// The API server refused the policy server's ServiceAccount (RBAC).
    Forbidden,
    /// The API server does not serve the kind (its CRD is not installed).
    NotServed,
    /// Any other error of the host.
    Failed,
}

impl Refusal {
    /// The reason the host's error `text` gives.
    pub fn of(text: &str) -> Refusal {
        if text.contains("has not been granted access to") {
            Refusal::NotGranted
        } else if text.contains("Forbidden") || text.contains(" is forbidden: ") {
            Refusal::Forbidden
        } else if text.contains("error finding resource ") || text.contains("Cannot find resource ")
        {
            Refusal::NotServed
        } else {
            Refusal::Failed
        }
    }
}

impl Unread {
    /// Why, for a warning about an object of `kind`.
    pub fn why(self, kind: &ObjectKind) -> String {
        let (api_version, name) = (kind.api_version, kind.kind);
        match self {
            Unread::Skipped => "preflight: skip makes no host call".to_string(),
            Unread::NoNamespace => "the request names no namespace".to_string(),
            Unread::Missing => "it does not exist".to_string(),
            Unread::Refused(Refusal::NotGranted) => format!(
                "the policy may not read {name}s (an AdmissionPolicy, or a ClusterAdmissionPolicy whose contextAwareResources lack {api_version} {name})"
            ),
            Unread::Refused(Refusal::Forbidden) => format!(
                "the policy server's ServiceAccount may not get {} (RBAC: the ClusterRole that make manifests renders)",
                kind.resource
            ),
            Unread::Refused(Refusal::NotServed) => {
                format!("the cluster does not serve {api_version} {name} (is its CRD installed?)")
            }
            Unread::Refused(Refusal::Failed) => {
                "the policy server answered an error (its log says which)".to_string()
            }
            Unread::Unreadable => "the host's answer could not be read".to_string(),
        }
    }

    /// What to do about it, for a warning about an object of `kind` that could not be read.
    pub fn remedy(self, kind: &ObjectKind) -> String {
        let (api_version, name) = (kind.api_version, kind.kind);
        match self {
            Unread::Skipped => "set preflight to warn or reject".to_string(),
            Unread::NoNamespace => "create the pod in a namespace".to_string(),
            Unread::Missing => format!("create the {name}"),
            Unread::Refused(Refusal::NotGranted) => format!(
                "deploy the policy as a ClusterAdmissionPolicy listing {api_version} {name} in its contextAwareResources (make manifests renders it)"
            ),
            Unread::Refused(Refusal::Forbidden) => format!(
                "let the policy server's ServiceAccount get {} (make manifests renders the ClusterRole)",
                kind.resource
            ),
            Unread::Refused(Refusal::NotServed) => {
                format!("install what serves {api_version} {name}")
            }
            Unread::Refused(Refusal::Failed) => "see the policy server's log".to_string(),
            Unread::Unreadable => format!("check the {name}"),
        }
    }
}

/// What the host's `answer` to the read of the object `name` of `kind` means: the object's JSON
/// text, or why there is none.
pub(super) fn meaning(
    kind: &ObjectKind,
    name: &str,
    answer: Result<Vec<u8>, String>,
) -> Result<Rc<str>, Unread> {
    let text = match answer {
        Ok(text) => String::from_utf8(text).map_err(|_| Unread::Unreadable)?,
        Err(error) if is_missing(kind, name, &error) => return Err(Unread::Missing),
        Err(error) => return Err(Unread::Refused(Refusal::of(&error))),
    };
    // The object itself, named `name` where it says its name.
    if !text.trim_start().starts_with('{') {
        return Err(Unread::Unreadable);
    }
    let object = read_members(&text).map_err(|_| Unread::Unreadable)?;
    let named = object
        .get("metadata")
        .map(members)
        .and_then(|metadata| metadata.get("name"))
        .and_then(string);
    if named.is_some_and(|named| named != name) {
        return Err(Unread::Unreadable);
    }
    Ok(Rc::from(text))
}

/// Whether the host's error `text` is the policy server's answer for a missing object:
/// "Cannot find {apiVersion}/{kind} named '{name}'", read in place.
fn is_missing(kind: &ObjectKind, name: &str, text: &str) -> bool {
    let words = [kind.api_version, "/", kind.kind, " named '", name, "'"];
    text.match_indices("Cannot find ").any(|(at, found)| {
        let rest = &text[at + found.len()..];
        words
            .iter()
            .try_fold(rest, |rest, word| rest.strip_prefix(word))
            .is_some()
    })
}
