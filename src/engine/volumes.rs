//! The profile's pod volumes against the pod's (behaviour.md §4): which of them the pod declares
//! already, which it declares differently (its own kept, and not mounted), and the rest added
//! where some container now mounts them. Read in one step and added in another, so they are
//! kept together here.

use std::borrow::Cow;

use super::added;
use crate::error::Error;
use crate::json::lenient::Entry;
use crate::json::object::Object;
use crate::json::write::RenderedItems;
use crate::merge::{append, items, names, raw_items, same_volume};
use crate::profile::{Source, Volume};

use super::container::containers;

/// The profile's volumes as the pod has them.
pub(super) struct Volumes {
    /// Declared by the pod.
    existing: Vec<&'static str>,
    /// Not mounted, nor added: first those the pod declares differently, in the profile's order
    /// (`conflicting` of them), then those the pod does without ([`Volumes::skip`]).
    pub(super) skipped: Vec<&'static str>,
    conflicting: usize,
}

impl Volumes {
    pub(super) fn read(spec: &Object<'_>, volumes: &[Volume<'_>]) -> Result<Self, Error> {
        let theirs = items::<Entry<'_>>(spec, "volumes").map_err(|e| e.within("spec"))?;
        // A volume's text is compared with ours only where the pod declares one of our names,
        // which few pods do: the list is read a second time, as text, only then.
        let mut texts = None;
        let mut existing = Vec::new();
        let mut conflicts = Vec::new();
        for (at, entry) in theirs.iter().enumerate() {
            let name = entry.name.as_str();
            let Some(ours) = volumes.iter().find(|v| Some(v.name) == name) else {
                continue;
            };
            existing.push(ours.name);
            let texts = match &mut texts {
                Some(texts) => texts,
                None => texts.insert(raw_items(spec, "volumes").map_err(|e| e.within("spec"))?),
            };
            if !texts
                .get(at)
                .is_some_and(|text| same_volume(ours, text.get()))
            {
                conflicts.push(ours.name);
            }
        }
        let skipped: Vec<&'static str> = volumes
            .iter()
            .map(|v| v.name)
            .filter(|name| conflicts.contains(name))
            .collect();
        Ok(Volumes {
            existing,
            conflicting: skipped.len(),
            skipped,
        })
    }

    /// Leaves `names` out as a conflicting volume is, without its warning.
    pub(super) fn skip(&mut self, names: &[&'static str]) {
        self.skipped.extend(names);
    }

    /// The volumes the pod declares differently, for their warnings.
    pub(super) fn conflicts(&self) -> &[&'static str] {
        &self.skipped[..self.conflicting]
    }

    /// Adds each of the profile's `volumes` that the pod lacks and some container or init
    /// container now mounts: one of the policy's mounts (`mounted`), or, for a volume that is no
    /// host directory, the user's own. A host directory is declared only for the policy's mounts,
    /// which are read-only where behaviour.md §3 says so: a mount the user wrote of its name (a
    /// helper mounting `nvtcpxo-proc-sys`, writable) is the user's to declare, or the node's
    /// `/proc/sys` would be theirs to write without their pod saying so. Answers those it added,
    /// and the profile's volumes the pod now has.
    pub(super) fn add_missing(
        &self,
        spec: &mut Object<'_>,
        volumes: &[Volume<'_>],
        mounted: &[&str],
    ) -> Result<(Vec<added::NewVolume>, Vec<&'static str>), Error> {
        let wanted: Vec<&Volume<'_>> = volumes
            .iter()
            .filter(|v| !self.skipped.contains(&v.name) && !self.existing.contains(&v.name))
            .filter(|v| mounted.contains(&v.name) || !is_host_path(v))
            .collect();
        // The user's mounts are read only if some volume is not one the policy mounted.
        let users_mounts = if wanted.iter().all(|v| mounted.contains(&v.name)) {
            Vec::new()
        } else {
            users_mounts(spec)
        };
        let missing = RenderedItems::new(
            wanted
                .into_iter()
                .filter(|v| mounted.contains(&v.name) || users_mounts.iter().any(|m| m == v.name)),
        );
        let added: Vec<added::NewVolume> = missing
            .items()
            .map(|v| added::NewVolume {
                name: v.name,
                host_path: is_host_path(v),
            })
            .collect();
        let mut present: Vec<&'static str> = added.iter().map(|v| v.name).collect();
        append(spec, "volumes", missing.into_text()).map_err(|e| e.within("spec"))?;
        present.extend(self.existing.iter().filter(|v| !self.skipped.contains(v)));
        Ok((added, present))
    }
}

fn is_host_path(volume: &Volume<'_>) -> bool {
    matches!(volume.source, Source::HostPath { .. })
}

/// The volumes the request's containers and init containers mount (read leniently: this only
/// decides whether to add a volume, never rejects).
fn users_mounts<'a>(spec: &Object<'a>) -> Vec<Cow<'a, str>> {
    let mut found = Vec::new();
    for container in containers(spec) {
        found.extend(names(container, "volumeMounts").unwrap_or_default());
    }
    for init in items::<Entry<'a>>(spec, "initContainers").unwrap_or_default() {
        found.extend(init.mounts.0.into_iter().filter_map(|m| m.name.0));
    }
    found
}
