//! Every read of the cluster (behaviour.md §9): the objects an opted-in pod's injection refers to
//! or depends on, each read by name with one Kubewarden host call, `get_resource`, once per
//! request, through the one [`Cluster`] of the request.
//!
//! Why `get_resource`, with `disable_cache` and `field_masks`: the policy server answers it with a
//! direct GET of the API server (kubewarden-controller 1.36,
//! `crates/policy-evaluator/src/callback_handler/kubernetes/client.rs`, `api.get_opt`), at once,
//! whether the object exists, is missing or may not be read, and keeps nothing. Its list calls are
//! served by a watch and cache kept for every distinct selector until the server stops, and wait
//! for a first successful list: a read RBAC refuses never returns, and a list narrowed to each
//! job's object by name keeps one more watch per job. Its cache of `get_resource` answers (5 s,
//! an entry per object, dropped only when that object is asked for again) is kept only for the
//! kinds a cluster holds few of ([`ObjectKind::cached`]). The masks keep the answers to the fields
//! the policy reads.

mod answer;
mod kinds;

pub use answer::{Refusal, Unread};
pub use kinds::{
    ATTACHMENT, CLAIM_TEMPLATE, COMPUTE_DOMAIN, CONFIG_MAP, KINDS, MPI_JOB, NAMESPACE, NETWORK,
    ObjectKind, RESOURCE_CLAIM, TOPOLOGY,
};

use std::cell::RefCell;
use std::rc::Rc;

use crate::json::write::{push_string, push_strings};

/// The policy server's Kubernetes host calls (waPC binding `kubewarden`, namespace
/// `kubernetes`): the operation and the request's JSON in, the answer's JSON or the host's error
/// text out.
pub type Host<'h> = &'h dyn Fn(&str, &[u8]) -> Result<Vec<u8>, String>;

/// The one host call the policy makes.
pub const GET: &str = "get_resource";

/// What a host without a cluster answers (the playground, native tests): the policy server's
/// words for a policy that may read nothing, an `AdmissionPolicy`.
pub const NO_HOST: &str =
    "Policy has not been granted access to Kubernetes resources: there is no policy server here";

/// A host that always answers an error: where there is none, as a policy server answers an
/// `AdmissionPolicy`.
pub fn no_host(_operation: &str, _request: &[u8]) -> Result<Vec<u8>, String> {
    Err(NO_HOST.to_string())
}

/// What the settings' `preflight` asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// Warn about a missing object (the default).
    #[default]
    Warn,
    /// Refuse a pod that refers to a missing object.
    Reject,
    /// Make no host call. (Not `off`: YAML 1.1, which kubectl reads manifests with, reads an
    /// unquoted `off` as `false`.)
    Skip,
}

impl Mode {
    pub const NAMES: [&'static str; 3] = ["warn", "reject", "skip"];

    pub fn named(name: &str) -> Option<Mode> {
        match name {
            "warn" => Some(Mode::Warn),
            "reject" => Some(Mode::Reject),
            "skip" => Some(Mode::Skip),
            _ => None,
        }
    }
}

/// The cluster as one request reads it: its namespace, the settings' `preflight`, the host, and
/// the answers had so far, so that no object is read twice in one request.
pub struct Cluster<'h> {
    namespace: Option<&'h str>,
    mode: Mode,
    host: Host<'h>,
    answers: RefCell<Vec<Answered>>,
}

/// One object read, and what came of it.
struct Answered {
    object: (&'static str, &'static str, Option<String>, String),
    answer: Result<Rc<str>, Unread>,
}

impl<'h> Cluster<'h> {
    /// The cluster of a request in `namespace` (`None`, or empty: namespaced objects are not
    /// read, since an empty namespace would be every namespace's).
    pub fn new(namespace: Option<&'h str>, mode: Mode, host: Host<'h>) -> Self {
        Cluster {
            namespace: namespace.filter(|ns| !ns.is_empty()),
            mode,
            host,
            answers: RefCell::new(Vec::new()),
        }
    }

    /// The request's namespace, where it names one.
    pub fn namespace(&self) -> Option<&'h str> {
        self.namespace
    }

    /// The settings' `preflight`.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The object `name` of `kind`, in `namespace` (`None`: the request's; ignored for a
    /// cluster-scoped kind), as its JSON text: read with one host call the first time it is asked
    /// for in this request, and answered as then after that. Never fails on what the host
    /// answers: each answer means one of [`Unread`]'s reasons, or the object.
    pub fn get(
        &self,
        kind: &ObjectKind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Rc<str>, Unread> {
        if self.mode == Mode::Skip {
            return Err(Unread::Skipped);
        }
        let namespace = match kind.namespaced {
            true => Some(namespace.or(self.namespace).ok_or(Unread::NoNamespace)?),
            false => None,
        };
        let object = (
            kind.api_version,
            kind.kind,
            namespace.map(str::to_string),
            name.to_string(),
        );
        if let Ok(answers) = self.answers.try_borrow()
            && let Some(found) = answers.iter().find(|a| a.object == object)
        {
            return found.answer.clone();
        }
        let answer = (self.host)(GET, &request(kind, namespace, name));
        let answer = answer::meaning(kind, name, answer);
        if let Ok(mut answers) = self.answers.try_borrow_mut() {
            answers.push(Answered {
                object,
                answer: answer.clone(),
            });
        }
        answer
    }
}

/// The `get_resource` request for the object `name` of `kind` in `namespace` (snake_case, as the
/// SDK's `GetResourceRequest` writes it; no namespace for a cluster-scoped kind).
pub fn request(kind: &ObjectKind, namespace: Option<&str>, name: &str) -> Vec<u8> {
    let mut text = String::with_capacity(192);
    text.push_str(r#"{"api_version":""#);
    text.push_str(kind.api_version);
    text.push_str(r#"","kind":""#);
    text.push_str(kind.kind);
    text.push_str(r#"","name":"#);
    push_string(&mut text, name);
    if let Some(namespace) = namespace {
        text.push_str(r#","namespace":"#);
        push_string(&mut text, namespace);
    }
    text.push_str(if kind.cached {
        r#","disable_cache":false,"field_masks":"#
    } else {
        r#","disable_cache":true,"field_masks":"#
    });
    push_strings(&mut text, kind.masks.iter().copied());
    text.push('}');
    text.into_bytes()
}

#[cfg(test)]
pub(crate) mod tests;
