//! The last step, record: on a pod the policy changed, the record of what was injected
//! (behaviour.md §2.1, rendered by [`crate::record`]), written under the settings' annotation
//! over any stale one. Last, and only on a changed pod, so that a second pass changes nothing.

use crate::error::Error;
use crate::json::object::{Node, Object};
use crate::merge::object_entry;
use crate::record::Record;
use crate::settings::Config;

use super::read::Reading;
use super::wire::Wiring;

/// The record of a changed pod, as a JSON string, written under `config`'s annotation.
pub(super) fn write(
    pod: &mut Object<'_>,
    config: &Config<'_>,
    facts: &Reading<'_>,
    wiring: &Wiring<'_, '_>,
) -> Result<Option<String>, Error> {
    if wiring.added.is_empty() {
        return Ok(None);
    }
    let record = Record {
        cloud: config.cloud.cloud.name,
        fabric: facts.fabric.name,
        device: facts.profile.device.as_ref().map(|d| d.resource.as_ref()),
        rails: facts
            .profile
            .rails
            .iter()
            .map(|r| r.resource.as_ref())
            .collect(),
        machine: facts
            .node
            .named
            .as_ref()
            .map(|(name, from)| (name.as_ref(), *from)),
        containers: &wiring.containers,
    }
    .annotation();
    // The policy's own statement: the one annotation it overwrites.
    if let Some(key) = &config.record {
        let metadata = object_entry(pod, "metadata")?;
        let annotations =
            object_entry(metadata, "annotations").map_err(|e| e.within("metadata"))?;
        annotations.insert(key, Node::New(record.clone().into()));
    }
    Ok(Some(record))
}
