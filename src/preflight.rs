//! Preflight (behaviour.md §9): the objects of the cluster an opted-in pod's injection refers to,
//! looked for by name through the request's [`Cluster`], so that a missing one is named in a
//! warning (or, on request, a rejection) instead of leaving the pod stuck in ContainerCreating.
//!
//! What an injection may refer to is data: the kinds of [`crate::cluster`], and [`references`],
//! which reads a pod's references off the profile the engine applied. Where the policy may not
//! look, or the answer cannot be read, it says nothing: a preflight never blocks a pod by
//! failing.

use std::borrow::Cow;

use crate::cluster::{CLAIM_TEMPLATE, Cluster, Mode, ObjectKind, TOPOLOGY, Unread};
use crate::error::Error;
use crate::profile::{Profile, Source};

/// One object a pod's injection refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference<'a> {
    pub kind: &'static ObjectKind,
    /// `namespace/name`, or `name` in the pod's namespace (Multus's form; a ConfigMap's name has
    /// no `/`).
    pub object: Cow<'a, str>,
}

impl Reference<'_> {
    /// `(namespace, name)`; no namespace means the pod's own.
    pub fn parts(&self) -> (Option<&str>, &str) {
        match self.object.split_once('/') {
            Some((namespace, name)) => (Some(namespace), name),
            None => (None, &self.object),
        }
    }
}

/// The objects `profile` makes a pod refer to: the ConfigMap volumes among `volumes` (those the
/// pod now has as the policy's), the Multus networks the pod lists (the fabric's where it has
/// `devices` > 0 and no DRA claim in their place, each rail's where it has that rail's devices,
/// the fixed ones), and the template of the fabric's claim (`claim_template`, when the pod's
/// claim is made from it). A new kind of reference is one more line here and a row of [`KINDS`].
pub fn references<'a>(
    profile: &Profile<'a>,
    networks: &'static ObjectKind,
    volumes: &[&str],
    devices: (u64, &[u64]),
    claim_template: Option<String>,
) -> Vec<Reference<'a>> {
    let mut found = Vec::new();
    for volume in profile.volumes.iter().filter(|v| volumes.contains(&v.name)) {
        if let Source::ConfigMap { name } = &volume.source {
            found.push(Reference {
                kind: &TOPOLOGY,
                object: name.clone(),
            });
        }
    }
    let listed = devices.0 > 0 && claim_template.is_none();
    let fabric = profile.network.iter().filter(|_| listed);
    let rails = profile
        .rails
        .iter()
        .zip(devices.1)
        .filter(|(_, n)| **n > 0)
        .map(|(rail, _)| &rail.network);
    for network in fabric.chain(rails).chain(&profile.networks) {
        let reference = Reference {
            kind: networks,
            object: network.0.clone(),
        };
        // One look per object, however many of its attachments the pod lists.
        if !found.contains(&reference) {
            found.push(reference);
        }
    }
    if let Some(template) = claim_template {
        found.push(Reference {
            kind: &CLAIM_TEMPLATE,
            object: Cow::Owned(template),
        });
    }
    found
}

/// Looks for each of `references` once, through `cluster`. Answers the warnings about the
/// missing ones, or, with [`Mode::Reject`], the rejection naming the first one missing.
pub fn check(references: &[Reference<'_>], cluster: &Cluster<'_>) -> Result<Vec<String>, Error> {
    let mut warnings = Vec::new();
    for reference in references {
        let (own, name) = reference.parts();
        if cluster.get(reference.kind, own, name) != Err(Unread::Missing) {
            continue;
        }
        // A missing object was looked for in a namespace.
        let namespace = own.or(cluster.namespace()).unwrap_or_default();
        let creates = reference.kind.creates;
        let message = format!(
            "multi-node networking: {} {namespace}/{} does not exist, and this pod refers to it: it will not start until it does; {}{}{}",
            reference.kind.kind,
            name,
            creates.0,
            if creates.1.is_empty() { "" } else { namespace },
            creates.1
        );
        if cluster.mode() == Mode::Reject {
            return Err(Error::Preflight {
                message: format!("{message} (preflight: reject refuses such a pod)"),
            });
        }
        warnings.push(message);
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{GET, NETWORK};
    use std::cell::RefCell;

    fn topology(name: &'static str) -> Reference<'static> {
        Reference {
            kind: &TOPOLOGY,
            object: Cow::Borrowed(name),
        }
    }

    fn network(object: &'static str) -> Reference<'static> {
        Reference {
            kind: &NETWORK,
            object: Cow::Borrowed(object),
        }
    }

    /// The policy server's answer for a missing object (kubewarden-controller 1.36).
    fn missing(request: &[u8]) -> String {
        let request: serde_json::Value = serde_json::from_slice(request).unwrap();
        format!(
            "Callback evaluation failure: Cannot find {}/{} named '{}' inside of namespace 'Some({:?})'",
            request["api_version"].as_str().unwrap(),
            request["kind"].as_str().unwrap(),
            request["name"].as_str().unwrap(),
            request["namespace"].as_str().unwrap(),
        )
    }

    #[test]
    fn one_call_per_reference_and_what_each_answer_means() {
        let calls = RefCell::new(Vec::new());
        let answers = |answer: Option<Result<&'static str, &'static str>>| {
            let calls = &calls;
            move |operation: &str, request: &[u8]| {
                assert_eq!(operation, GET);
                calls
                    .borrow_mut()
                    .push(String::from_utf8_lossy(request).into_owned());
                match answer {
                    None => Err(missing(request)),
                    Some(answer) => answer
                        .map(|a| a.as_bytes().to_vec())
                        .map_err(str::to_string),
                }
            }
        };
        let refs = [topology("nccl-topo"), network("net/sriov")];
        assert_eq!(refs[0].parts(), (None, "nccl-topo"));
        assert_eq!(refs[1].parts(), (Some("net"), "sriov"));
        let missing = answers(None);
        let cluster = Cluster::new(Some("jobs"), Mode::Warn, &missing);
        let warnings = check(&refs, &cluster).unwrap();
        assert_eq!(warnings.len(), 2);
        assert!(warnings[0].contains("ConfigMap jobs/nccl-topo does not exist"));
        assert!(warnings[0].contains("namespace: jobs/' deploy/azure/"));
        assert!(warnings[1].contains("NetworkAttachmentDefinition net/sriov does not exist"));
        assert_eq!(calls.borrow().len(), 2);
        assert!(calls.borrow()[0].contains(r#""namespace":"jobs""#));
        assert!(calls.borrow()[1].contains(r#""namespace":"net""#));
        calls.borrow_mut().clear();
        // Reject: the first missing one, and no more calls.
        let cluster = Cluster::new(Some("jobs"), Mode::Reject, &missing);
        let rejection = check(&refs, &cluster).unwrap_err().to_string();
        assert!(rejection.starts_with("multi-node networking: ConfigMap jobs/nccl-topo"));
        assert!(rejection.ends_with("(preflight: reject refuses such a pod)"));
        assert_eq!(calls.borrow().len(), 1);
        calls.borrow_mut().clear();
        // Present, refused, garbage: nothing said, in either mode.
        for answer in [
            Ok(r#"{"metadata":{}}"#),
            Err("Callback evaluation failure: ApiError: forbidden: Forbidden"),
            Err("Policy has not been granted access to Kubernetes v1/ConfigMap resources."),
            Ok("not json"),
        ] {
            for mode in [Mode::Warn, Mode::Reject] {
                let host = answers(Some(answer));
                let cluster = Cluster::new(Some("jobs"), mode, &host);
                assert_eq!(check(&refs, &cluster), Ok(vec![]));
            }
        }
        assert_eq!(calls.borrow().len(), 16);
        calls.borrow_mut().clear();
        // Skip: no call at all.
        let cluster = Cluster::new(Some("jobs"), Mode::Skip, &missing);
        assert_eq!(check(&refs, &cluster), Ok(vec![]));
        assert!(calls.borrow().is_empty());
    }
}
