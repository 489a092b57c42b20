//! The profile's pod annotations (behaviour.md §3, §4): its own set where absent, GKE's
//! multi-network list of the fabric's NICs, and the Multus networks (the fabric's once per device
//! of the pod, a rail's once per device of the rail, the fixed ones once), extending a list the
//! pod has in the form it has. The record is written apart, last
//! ([`super::record`]).

use std::borrow::Cow;

use super::added::Annotation;
use crate::error::{Error, malformed};
use crate::json::JsonType;
use crate::json::object::{Node, Object};
use crate::merge::{object_entry, set_if_absent, text};
use crate::multus::{self, Attachment};
use crate::profile::{Interfaces, Profile};

/// The pod's devices that the annotations count: the node's NICs (GKE's interfaces), the
/// fabric's device, each rail's.
pub(super) struct Devices<'w> {
    pub(super) nics: Option<u64>,
    pub(super) device: u64,
    pub(super) rails: &'w [u64],
    /// The pod's namespace, where its metadata names it: a Multus entry without one is in it.
    pub(super) namespace: Option<&'w str>,
}

/// What [`annotate`] did.
#[derive(Default)]
pub(super) struct Annotated {
    /// The annotations the pod gained or whose value it extended.
    pub(super) added: Vec<Annotation>,
    /// Where the pod has its own GKE interface list without some of the fabric's networks: those
    /// networks, and how many NICs the fabric wants.
    pub(super) lacking: Option<(Vec<String>, usize)>,
}

/// Sets the profile's pod annotations where absent, and lists the Multus networks: the fabric's
/// once per device of the pod, each rail's once per device of that rail, the fixed ones once; the
/// NICs' annotations not where a DRA claim stands for them (`claimed`).
pub(super) fn annotate(
    pod: &mut Object<'_>,
    profile: &Profile<'_>,
    devices: &Devices<'_>,
    claimed: bool,
) -> Result<Annotated, Error> {
    let mut lacking = None;
    let added = set_annotations(pod, profile, devices, claimed, &mut lacking)?;
    Ok(Annotated { added, lacking })
}

/// The networks of `ours` that the pod's own GKE interface list `value` does not attach. GKE
/// reads it as a JSON list of `{interfaceName, network}`; one it cannot read attaches none.
fn lacking_networks(value: &str, ours: &[&str]) -> Vec<String> {
    use crate::json::lenient::{list, members, string};
    let theirs: Vec<String> = list(value)
        .ok()
        .flatten()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|entry| {
            members(entry)
                .get("network")
                .and_then(string)
                .map(Cow::into_owned)
        })
        .collect();
    ours.iter()
        .filter(|network| !theirs.iter().any(|t| t == *network))
        .map(|network| network.to_string())
        .collect()
}

fn set_annotations(
    pod: &mut Object<'_>,
    profile: &Profile<'_>,
    devices: &Devices<'_>,
    claimed: bool,
    lacking: &mut Option<(Vec<String>, usize)>,
) -> Result<Vec<Annotation>, Error> {
    let interfaces = profile.interfaces.as_ref().filter(|_| !claimed);
    let attachments = if claimed {
        Vec::new()
    } else {
        attachments(profile, devices)
    };
    let mut added = Vec::new();
    if profile.annotations.is_empty() && interfaces.is_none() && attachments.is_empty() {
        return Ok(added);
    }
    let metadata = object_entry(pod, "metadata")?;
    let annotations = object_entry(metadata, "annotations").map_err(|e| e.within("metadata"))?;
    let mut set = |key: &'static str, set: bool| {
        if set {
            added.push(Annotation {
                key,
                networks: Vec::new(),
            });
        }
    };
    for &(key, value) in &profile.annotations {
        set(
            key,
            set_if_absent(annotations, key, || Cow::Borrowed(value)),
        );
    }
    if let Some(interfaces) = interfaces {
        let value = || interfaces.annotation(devices.nics).into();
        let written = set_if_absent(annotations, interfaces.key, value);
        set(interfaces.key, written);
        if !written {
            *lacking = lacking_interfaces(annotations, interfaces, devices.nics);
        }
    }
    if attachments.is_empty() {
        return Ok(added);
    }
    added.extend(extend_multus(annotations, &attachments, devices.namespace)?);
    Ok(added)
}

/// Where the pod's own GKE interface list does not attach each network of the fabric's NICs (the
/// first `nics` of the profile's): those networks, and how many NICs the fabric wants. The list is
/// kept (behaviour.md §4), but the env the policy adds would point at NICs the pod does not have.
fn lacking_interfaces(
    annotations: &Object<'_>,
    interfaces: &Interfaces<'_>,
    nics: Option<u64>,
) -> Option<(Vec<String>, usize)> {
    let take = nics.map_or(interfaces.networks.len(), |n| {
        usize::try_from(n).unwrap_or(usize::MAX)
    });
    let ours: Vec<&str> = interfaces
        .networks
        .iter()
        .take(take)
        .map(|n| n.as_ref())
        .collect();
    let missing = match annotations.get(interfaces.key) {
        Some(node) if !node.is_null() => {
            lacking_networks(text(node).as_deref().unwrap_or(""), &ours)
        }
        _ => Vec::new(),
    };
    let nics = ours.len();
    (!missing.is_empty()).then_some((missing, nics))
}

/// Appends `attachments` to the pod's Multus list, in the form it has (the short form where it
/// has none); the annotation, where it changed.
fn extend_multus(
    annotations: &mut Object<'_>,
    attachments: &[Attachment<'_>],
    namespace: Option<&str>,
) -> Result<Option<Annotation>, Error> {
    let existing = match annotations.get(multus::ANNOTATION) {
        None => None,
        Some(node) if node.is_null() => None,
        Some(node) => Some(text(node).ok_or_else(|| {
            malformed(
                "metadata.annotations[k8s.v1.cni.cncf.io/networks]",
                JsonType::String,
            )
        })?),
    };
    let Some(extended) = multus::annotation(existing.as_deref(), attachments, namespace)? else {
        return Ok(None);
    };
    annotations.insert(multus::ANNOTATION, Node::New(extended.value.into()));
    Ok(Some(Annotation {
        key: multus::ANNOTATION,
        networks: extended.attached,
    }))
}

/// The Multus attachments the profile gives a pod of `devices`, in the annotation's order.
fn attachments<'p>(profile: &'p Profile<'_>, devices: &Devices<'_>) -> Vec<Attachment<'p>> {
    let device = profile.device.as_ref().map_or("", |d| &d.resource);
    let fabric = profile.network.iter().map(|network| Attachment {
        network,
        resource: device,
        wanted: devices.device,
    });
    let rails = profile
        .rails
        .iter()
        .zip(devices.rails)
        .map(|(rail, n)| Attachment {
            network: &rail.network,
            resource: &rail.resource,
            wanted: *n,
        });
    let fixed = profile.networks.iter().map(|network| Attachment {
        network,
        resource: "",
        wanted: 1,
    });
    fabric.chain(rails).chain(fixed).collect()
}
