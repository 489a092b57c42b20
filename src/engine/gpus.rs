//! Which containers are GPU containers, and their GPUs (behaviour.md §2, §3.10): the settings'
//! GPU resources, the implicit extended resources of the GPU DeviceClasses
//! (`deviceclass.resource.kubernetes.io/<class>`), and the claims of GPUs the containers name,
//! as [`crate::claims`] read them. A claim counts once for the pod: its GPUs are the first
//! container's that names it, and every container that names it is a GPU container. Part of the
//! read step; it changes nothing.

use std::borrow::Cow;

use crate::claims::PodClaims;
use crate::error::Error;
use crate::json::lenient::Entry;
use crate::json::object::Object;
use crate::merge::{items, object};
use crate::settings::Config;

use super::container::{GpuContainer, containers, gpu_containers};

/// What the extended resource of a DeviceClass is named with, before the class's name.
pub const DEVICE_CLASS_RESOURCE: &str = "deviceclass.resource.kubernetes.io/";

/// The pod's GPU containers and what its claims said.
pub(super) struct Gpus {
    /// In the pod's order.
    pub(super) containers: Vec<GpuContainer>,
    /// Some container asks for GPUs as a resource (not through a claim).
    pub(super) from_resources: bool,
    /// The pod's first claim, named by a container, that brings the fabric's NICs.
    pub(super) fabric_claim: Option<String>,
    /// The claims containers name that could not be read: each named once, with the object it
    /// is made from and why.
    pub(super) unread: Vec<(String, String, String)>,
}

/// Counts the GPUs of `spec`'s containers.
pub(super) fn count(
    spec: &Object<'_>,
    config: &Config<'_>,
    claims: &PodClaims<'_>,
) -> Result<Gpus, Error> {
    let classes = &config.device_classes.gpu;
    let mut resources: Vec<Cow<'_, str>> = config.gpu_resources.clone();
    resources.extend(
        classes
            .iter()
            .map(|class| Cow::Owned(format!("{DEVICE_CLASS_RESOURCE}{class}"))),
    );
    let mut found = gpu_containers(spec, &resources)?;
    let from_resources = !found.is_empty();
    let mut gpus = Gpus {
        containers: Vec::new(),
        from_resources,
        fabric_claim: None,
        unread: Vec::new(),
    };
    if claims.claims.is_empty() {
        gpus.containers = found;
        return Ok(gpus);
    }
    // The claims whose GPUs a container has already, and the containers that name a claim of
    // GPUs.
    let mut given: Vec<String> = Vec::new();
    let mut named_gpus: Vec<usize> = Vec::new();
    // `gpu_containers` refused a pod with a container that is not an object: the indexes agree.
    for (index, container) in containers(spec).enumerate() {
        for name in claims_named(container)
            .iter()
            .filter_map(|e| e.name.as_str())
        {
            let Some(claim) = claims.get(name) else {
                continue;
            };
            let devices = match claim.devices {
                Ok(devices) => devices,
                Err(why) => {
                    if !gpus.unread.iter().any(|(n, _, _)| n == name) {
                        let object = claim.object(claims.namespace.as_deref());
                        let why = why.why(claim.source.kind());
                        gpus.unread.push((name.to_string(), object, why));
                    }
                    continue;
                }
            };
            if devices.fabric && gpus.fabric_claim.is_none() {
                gpus.fabric_claim = Some(name.to_string());
            }
            if !devices.has_gpus() && !devices.fabric {
                continue;
            }
            let gpu = container_at(&mut found, index, || {
                claimed_container(index, devices.class, classes)
            });
            gpu.fabric_claim |= gpus.fabric_claim.as_deref() == Some(name);
            if devices.has_gpus() {
                named_gpus.push(index);
            }
            if given.iter().any(|g| g == name) {
                continue;
            }
            given.push(name.to_string());
            gpu.gpus = gpu.gpus.saturating_add(devices.gpus);
            if devices.all > 0 {
                let (all, _) = gpu.all.get_or_insert_with(|| (0, name.to_string()));
                *all = all.saturating_add(devices.all);
            }
        }
    }
    // A claim of the fabric alone makes no GPU container.
    found.retain(|c| from_resources_of(c) || named_gpus.contains(&c.index));
    gpus.containers = found;
    Ok(gpus)
}

/// The entries of a container's `resources.claims`; none where it has none.
fn claims_named<'a>(container: &Object<'a>) -> Vec<Entry<'a>> {
    match object(container, "resources").ok().flatten() {
        Some(resources) => items::<Entry<'_>>(resources, "claims").unwrap_or_default(),
        None => Vec::new(),
    }
}

/// The GPU container of pod index `index` among `found` (kept in the pod's order), made by
/// `make` where there is none yet.
fn container_at(
    found: &mut Vec<GpuContainer>,
    index: usize,
    make: impl FnOnce() -> GpuContainer,
) -> &mut GpuContainer {
    let at = match found.iter().position(|c| c.index >= index) {
        Some(at) if found[at].index == index => at,
        Some(at) => {
            found.insert(at, make());
            at
        }
        None => {
            found.push(make());
            found.len() - 1
        }
    };
    &mut found[at]
}

/// A container counted from its resources has a resource name with a `/`; one made for a claim
/// has a class name.
fn from_resources_of(container: &GpuContainer) -> bool {
    container.resource.contains('/')
}

/// A container whose GPUs come from a claim, of the GPU class at `class`.
fn claimed_container(index: usize, class: Option<usize>, classes: &[Cow<'_, str>]) -> GpuContainer {
    let resource = class
        .and_then(|at| classes.get(at))
        .map_or("GPUs", |class| class.as_ref());
    GpuContainer {
        index,
        gpus: 0,
        resource: resource.to_string(),
        all: None,
        uncounted: false,
        fabric_claim: false,
    }
}
