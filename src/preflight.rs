//! Preflight (behaviour.md §9): the objects of the cluster an opted-in pod's injection refers to,
//! looked for through Kubewarden's context-aware host calls, so that a missing one is named in a
//! warning (or, on request, a rejection) instead of leaving the pod stuck in ContainerCreating.
//!
//! What an injection may refer to is data: [`KINDS`], one row per kind, and [`references`], which
//! reads a pod's references off the profile the engine applied. Each object is looked for with one
//! `list_resources_by_namespace` call narrowed to its name: an empty list is an object that is
//! missing, while an error (an `AdmissionPolicy`, no RBAC, a kind not in `contextAwareResources`)
//! only says that the policy may not look, which `get_resource` could not tell apart. Where the
//! policy may not look, or the answer cannot be read, it says nothing: a preflight never blocks a
//! pod by failing.

use std::borrow::Cow;

use crate::error::Error;
use serde_json::value::RawValue;

use crate::json::lenient::{item_named, read_members};
use crate::json::write::push_string;
use crate::profile::{Profile, Source};

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

/// A kind of object an injection refers to, and what creates it.
#[derive(Debug, PartialEq, Eq)]
pub struct ObjectKind {
    /// As `contextAwareResources` and the host call name it.
    pub api_version: &'static str,
    pub kind: &'static str,
    /// How to make a missing one exist, around the pod's namespace.
    pub creates: (&'static str, &'static str),
}

/// Azure's NCCL topology: the files of `deploy/azure` are named `nccl-topo` in namespace `nemo`
/// (deploy/README.md, "Azure: the NCCL topology ConfigMap").
pub const TOPOLOGY: ObjectKind = ObjectKind {
    api_version: "v1",
    kind: "ConfigMap",
    creates: (
        "create it from the file for your VM size (its name is nccl-topo: rename it if azure.ncclTopologyConfigMap says otherwise): sed 's/^  namespace: nemo$/  namespace: ",
        "/' deploy/azure/nccl-topology-ndv5.yaml | kubectl apply -f - (nccl-topology-ndv4.yaml for ND A100 v4)",
    ),
};

/// A ConfigMap a container takes env from (`envFrom`, behaviour.md §4): read for its keys, never
/// looked for after the injection.
pub const CONFIG_MAP: ObjectKind = ObjectKind {
    creates: ("create it before the pod", ""),
    ..TOPOLOGY
};

/// OCI's Multus network (k8s.cni.cncf.io/v1, the Network Plumbing Working Group's CRD); the NVIDIA
/// network operator writes one per `SriovNetwork`.
pub const NETWORK: ObjectKind = ObjectKind {
    api_version: "k8s.cni.cncf.io/v1",
    kind: "NetworkAttachmentDefinition",
    creates: (
        "create it (the NVIDIA network operator writes one for each SriovNetwork, in its networkNamespace), or set oci.network to one that kubectl get network-attachment-definitions -A lists",
        "",
    ),
};

/// A Multus network of the `rdma` block (behaviour.md §3.9): the Network Operator writes one for
/// each of its network resources, in their `networkNamespace`.
pub const ATTACHMENT: ObjectKind = ObjectKind {
    creates: (
        "create it (the NVIDIA network operator writes one for each SriovNetwork, SriovIBNetwork, HostDeviceNetwork, MacvlanNetwork or IPoIBNetwork, in its networkNamespace), or name in the rdma block one that kubectl get network-attachment-definitions -A lists",
        "",
    ),
    ..NETWORK
};

/// The `ResourceClaimTemplate` of a `deviceClaim` (behaviour.md §3.8): `deploy/` ships those the
/// vendor files name, to be applied in every namespace that runs jobs.
pub const CLAIM_TEMPLATE: ObjectKind = ObjectKind {
    api_version: "resource.k8s.io/v1",
    kind: "ResourceClaimTemplate",
    creates: (
        "create it in that namespace: kubectl apply -n ",
        " -f deploy/aws/dra/efa-claim-templates.yaml (EKS EFA DRA) or deploy/gcp/dra/default-rdma.yaml (GKE managed DRANET), or a template of that name for your DRA driver",
    ),
};

/// A `ResourceClaim` made ahead, which a pod's claim names by `resourceClaimName`: read only for
/// the GPUs it holds (behaviour.md §3.10), never for an injection.
pub const RESOURCE_CLAIM: ObjectKind = ObjectKind {
    api_version: "resource.k8s.io/v1",
    kind: "ResourceClaim",
    creates: (
        "create it in that namespace before the pod: kubectl apply -n ",
        " -f <the claim>",
    ),
};

/// The ComputeDomain a multi-node NVLink pod's IMEX channel comes from (behaviour.md §3.11): read
/// for its channel template, never looked for after the injection.
pub const COMPUTE_DOMAIN: ObjectKind = ObjectKind {
    api_version: "resource.nvidia.com/v1beta1",
    kind: "ComputeDomain",
    creates: (
        "create it before the job's pods: a ComputeDomain (resource.nvidia.com/v1beta1) with numNodes: 0 and spec.channel.resourceClaimTemplate.name, in namespace ",
        " (README, \"Multi-node NVLink\")",
    ),
};

/// Every kind the policy may look for: what `contextAwareResources` lists (a test compares them).
pub const KINDS: &[&ObjectKind] = &[
    &TOPOLOGY,
    &NETWORK,
    &CLAIM_TEMPLATE,
    &RESOURCE_CLAIM,
    &COMPUTE_DOMAIN,
];

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

/// The policy server's Kubernetes host calls (waPC binding `kubewarden`, namespace
/// `kubernetes`): the operation ([`LIST`], [`GET`]) and the request's JSON
/// in, the answer's JSON out; `None` for an error (the policy may not look).
pub type Host<'h> = &'h dyn Fn(&str, &[u8]) -> Option<Vec<u8>>;

/// The operation the preflight looks for an object with.
pub const LIST: &str = "list_resources_by_namespace";
/// The host call that reads one object (the pod's namespace, for its Pod Security level).
pub const GET: &str = "get_resource";

/// A host that always answers an error: where there is none (the playground, native tests), as a
/// policy server answers an `AdmissionPolicy`.
pub fn no_host(_operation: &str, _request: &[u8]) -> Option<Vec<u8>> {
    None
}

/// Looks for each of `references` once. Answers the warnings about the missing ones, or, with
/// [`Mode::Reject`], the rejection naming the first one missing.
pub fn check(
    references: &[Reference<'_>],
    namespace: &str,
    mode: Mode,
    host: Host<'_>,
) -> Result<Vec<String>, Error> {
    let mut warnings = Vec::new();
    if mode == Mode::Skip {
        return Ok(warnings);
    }
    for reference in references {
        let (own, name) = reference.parts();
        let namespace = own.unwrap_or(namespace);
        let answer = host(LIST, &request(reference.kind, namespace, name));
        if answer.and_then(|list| lists(&list, name)) != Some(false) {
            continue;
        }
        let creates = reference.kind.creates;
        let message = format!(
            "multi-node networking: {} {namespace}/{} does not exist, and this pod refers to it: it will not start until it does; {}{}{}",
            reference.kind.kind,
            name,
            creates.0,
            if creates.1.is_empty() { "" } else { namespace },
            creates.1
        );
        if mode == Mode::Reject {
            return Err(Error::Preflight {
                message: format!("{message} (preflight: reject refuses such a pod)"),
            });
        }
        warnings.push(message);
    }
    Ok(warnings)
}

/// The `list_resources_by_namespace` request for the object `name` of `kind` in `namespace`
/// (snake_case, as the SDK's `ListResourcesByNamespaceRequest` writes it; `field_masks`, newer
/// than policy-server 1.36, is left out).
pub fn request(kind: &ObjectKind, namespace: &str, name: &str) -> Vec<u8> {
    let mut text = String::with_capacity(160);
    text.push_str(r#"{"api_version":""#);
    text.push_str(kind.api_version);
    text.push_str(r#"","kind":""#);
    text.push_str(kind.kind);
    text.push_str(r#"","namespace":"#);
    push_string(&mut text, namespace);
    text.push_str(r#","field_selector":"#);
    push_string(&mut text, &format!("metadata.name={name}"));
    text.push('}');
    text.into_bytes()
}

/// What the host's answer to the list of the object `name` says of it.
#[derive(Debug, Clone, Copy)]
pub enum Listed<'a> {
    /// The object, as its JSON text.
    Found(&'a RawValue),
    /// A list without it.
    Missing,
    /// No list: an error of the host.
    NotAList,
}

/// The object named `name` in the list the host answered (a host that ignored the field selector
/// answers others too). Every host call of the policy but the namespace's read is such a list.
pub fn listed<'a>(answer: &'a [u8], name: &str) -> Listed<'a> {
    // Only an object with an `items` list is a list; anything else is an error of the host.
    let list = std::str::from_utf8(answer)
        .ok()
        .and_then(|text| read_members(text).ok()?.get("items"))
        .filter(|list| list.get().starts_with('['));
    match list.map(|list| item_named(list, name)) {
        Some(Some(object)) => Listed::Found(object),
        Some(None) => Listed::Missing,
        None => Listed::NotAList,
    }
}

/// Whether the list the host answered holds an object named `name`; `None` when the answer is
/// not a list.
pub fn lists(answer: &[u8], name: &str) -> Option<bool> {
    match listed(answer, name) {
        Listed::Found(_) => Some(true),
        Listed::Missing => Some(false),
        Listed::NotAList => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

    #[test]
    fn the_request_is_the_sdks_narrowed_to_the_name() {
        let text = request(&NETWORK, "network-operator", "sriov-net");
        assert_eq!(
            std::str::from_utf8(&text).unwrap(),
            r#"{"api_version":"k8s.cni.cncf.io/v1","kind":"NetworkAttachmentDefinition","namespace":"network-operator","field_selector":"metadata.name=sriov-net"}"#
        );
        let text = request(&TOPOLOGY, "team-\"a\"", "nccl-topo");
        let value: serde_json::Value = serde_json::from_slice(&text).unwrap();
        assert_eq!(value["namespace"], "team-\"a\"");
        assert_eq!(value["api_version"], "v1");
    }

    #[test]
    fn only_a_list_answers_present_or_missing() {
        let list = |items: &str| {
            format!(
                r#"{{"apiVersion":"v1","kind":"ConfigMapList","metadata":{{}},"items":{items}}}"#
            )
        };
        assert_eq!(lists(list("[]").as_bytes(), "a"), Some(false));
        assert_eq!(
            lists(list(r#"[{"metadata":{"name":"a"}}]"#).as_bytes(), "a"),
            Some(true)
        );
        // A host that ignored the selector: only the name counts.
        assert_eq!(
            lists(
                list(r#"[{"metadata":{"name":"b"}},{"metadata":{}},3]"#).as_bytes(),
                "a"
            ),
            Some(false)
        );
        for garbage in [
            "",
            "null",
            "[]",
            "{}",
            r#"{"items":null}"#,
            r#"{"items":{}}"#,
            r#"{"items":"[]"}"#,
            r#"{"items":[]"#,
            r#"{"items":[]} x"#,
        ] {
            assert_eq!(lists(garbage.as_bytes(), "a"), None, "{garbage}");
        }
        assert_eq!(lists(&[0xff, b'{'], "a"), None);
    }

    #[test]
    fn one_call_per_reference_and_what_each_answer_means() {
        let calls = RefCell::new(Vec::new());
        let answers = |answer: Option<&'static str>| {
            let calls = &calls;
            move |operation: &str, request: &[u8]| {
                assert_eq!(operation, LIST);
                calls
                    .borrow_mut()
                    .push(String::from_utf8_lossy(request).into_owned());
                answer.map(|a| a.as_bytes().to_vec())
            }
        };
        let refs = [topology("nccl-topo"), network("net/sriov")];
        assert_eq!(refs[0].parts(), (None, "nccl-topo"));
        assert_eq!(refs[1].parts(), (Some("net"), "sriov"));
        let missing = answers(Some(r#"{"items":[]}"#));
        let warnings = check(&refs, "jobs", Mode::Warn, &missing).unwrap();
        assert_eq!(warnings.len(), 2);
        assert!(warnings[0].contains("ConfigMap jobs/nccl-topo does not exist"));
        assert!(warnings[0].contains("namespace: jobs/' deploy/azure/"));
        assert!(warnings[1].contains("NetworkAttachmentDefinition net/sriov does not exist"));
        assert_eq!(calls.borrow().len(), 2);
        assert!(calls.borrow()[0].contains(r#""namespace":"jobs""#));
        assert!(calls.borrow()[1].contains(r#""namespace":"net""#));
        calls.borrow_mut().clear();
        // Reject: the first missing one, and no more calls.
        let rejection = check(&refs, "jobs", Mode::Reject, &missing)
            .unwrap_err()
            .to_string();
        assert!(rejection.starts_with("multi-node networking: ConfigMap jobs/nccl-topo"));
        assert!(rejection.ends_with("(preflight: reject refuses such a pod)"));
        assert_eq!(calls.borrow().len(), 1);
        calls.borrow_mut().clear();
        // Present, an error, garbage: nothing said, in either mode.
        for answer in [
            Some(r#"{"items":[{"metadata":{"name":"nccl-topo"}},{"metadata":{"name":"sriov"}}]}"#),
            None,
            Some("not json"),
        ] {
            for mode in [Mode::Warn, Mode::Reject] {
                assert_eq!(check(&refs, "jobs", mode, &answers(answer)), Ok(vec![]));
            }
        }
        assert_eq!(calls.borrow().len(), 12);
        calls.borrow_mut().clear();
        // Skip: no call at all.
        assert_eq!(check(&refs, "jobs", Mode::Skip, &missing), Ok(vec![]));
        assert!(calls.borrow().is_empty());
        assert_eq!(no_host(LIST, b"{}"), None);
    }

    #[test]
    fn modes_are_named_as_the_settings_write_them() {
        for (name, mode) in Mode::NAMES
            .iter()
            .zip([Mode::Warn, Mode::Reject, Mode::Skip])
        {
            assert_eq!(Mode::named(name), Some(mode));
        }
        assert_eq!(Mode::named("off"), None);
        assert_eq!(Mode::named("Warn"), None);
        assert_eq!(Mode::default(), Mode::Warn);
    }

    #[test]
    fn the_kinds_are_the_metadatas_context_aware_resources() {
        let metadata = include_str!("../policy-metadata.yml");
        for kind in KINDS {
            let listed = format!(
                "  - apiVersion: {}\n    kind: {}\n",
                kind.api_version, kind.kind
            );
            assert!(metadata.contains(&listed), "{listed}");
        }
        // And the pod's namespace, which the Pod Security check reads (behaviour.md §11).
        assert!(metadata.contains("  - apiVersion: v1\n    kind: Namespace\n"));
        assert_eq!(metadata.matches("\n    kind: ").count(), KINDS.len() + 1);
        // Every host call the module makes, as Kubewarden names them.
        for operation in [LIST, GET] {
            assert!(
                metadata.contains(&format!("\n  - kubernetes/{operation}\n")),
                "{operation}"
            );
        }
    }

    #[test]
    fn every_kind_is_namespaced_and_says_what_creates_it() {
        for kind in KINDS {
            assert!(!kind.creates.0.is_empty(), "{}", kind.kind);
            assert!(kind.api_version == "v1" || kind.api_version.contains('/'));
        }
    }
}
