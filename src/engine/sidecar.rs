//! The profile's daemon sidecar (behaviour.md §3.3.1, §3.3.2, §4): appended to
//! `spec.initContainers` as a native sidecar unless a container of the pod has its name, in
//! which case the pod brings its own daemon.

use std::borrow::Cow;

use crate::error::Error;
use crate::json::object::Object;
use crate::merge::{append, names, text};
use crate::profile::Sidecar;

use super::container::containers;

/// Appends the sidecar to `spec.initContainers` unless a container has its name, and records the
/// volumes it mounts. `skipped` are the volumes it must not mount.
pub(super) fn add_sidecar(
    spec: &mut Object<'_>,
    sidecar: &Sidecar<'_>,
    skipped: &[&str],
    mounted: &mut Vec<&'static str>,
) -> Result<bool, Error> {
    if container_names(spec)?
        .iter()
        .any(|name| name == sidecar.name)
    {
        return Ok(false);
    }
    append(spec, "initContainers", sidecar.container_text(skipped))
        .map_err(|e| e.within("spec"))?;
    mounted.extend(
        sidecar
            .mounts
            .iter()
            .map(|m| m.volume)
            .filter(|v| !skipped.contains(v)),
    );
    Ok(true)
}

/// The names of the pod's containers and init containers.
fn container_names<'a>(spec: &Object<'a>) -> Result<Vec<Cow<'a, str>>, Error> {
    let mut found = Vec::new();
    for container in containers(spec) {
        found.extend(container.get("name").and_then(text));
    }
    found.extend(names(spec, "initContainers").map_err(|e| e.within("spec"))?);
    Ok(found)
}
