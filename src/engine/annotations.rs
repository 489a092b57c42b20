//! The profile's pod annotations (behaviour.md §3, §4): its own set where absent, GKE's
//! multi-network list of the fabric's NICs, and the Multus network listed once per device of the
//! pod, extending a list the pod has in the form it has. The record is written apart, last
//! ([`super::record`]).

use std::borrow::Cow;

use crate::error::{Error, malformed};
use crate::json::JsonType;
use crate::json::object::{Node, Object};
use crate::merge::{object_entry, set_if_absent, text};
use crate::multus;
use crate::profile::Profile;

/// Sets the profile's pod annotations where absent, and lists the Multus network once per device
/// of the pod (`devices`); the NICs' annotations not where a DRA claim stands for them
/// (`claimed`).
pub(super) fn annotate(
    pod: &mut Object<'_>,
    profile: &Profile<'_>,
    nics: Option<u64>,
    devices: u64,
    claimed: bool,
) -> Result<bool, Error> {
    let interfaces = profile.interfaces.as_ref().filter(|_| !claimed);
    let network = profile.network.as_ref().filter(|_| !claimed);
    if profile.annotations.is_empty() && interfaces.is_none() && network.is_none() {
        return Ok(false);
    }
    let metadata = object_entry(pod, "metadata")?;
    let annotations = object_entry(metadata, "annotations").map_err(|e| e.within("metadata"))?;
    let mut changed = false;
    for (key, value) in &profile.annotations {
        changed |= set_if_absent(annotations, key, || Cow::Borrowed(value));
    }
    if let Some(interfaces) = interfaces {
        changed |= set_if_absent(annotations, interfaces.key, || {
            interfaces.annotation(nics).into()
        });
    }
    let Some(network) = network else {
        return Ok(changed);
    };
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
    let resource = profile.device.as_ref().map_or("", |d| &d.resource);
    if let Some(value) = multus::annotation(existing.as_deref(), network, resource, devices)? {
        annotations.insert(multus::ANNOTATION, Node::New(value.into()));
        changed = true;
    }
    Ok(changed)
}
