//! The per-container part of the merge (behaviour.md §3, §4, §5): which containers are GPU
//! containers and how many GPUs they ask for, and what each gets: its device count, cpu request,
//! env, mounts, capabilities and hardening.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::added::{Container, Resource};
use crate::error::{Error, malformed};
use crate::json::JsonType;
use crate::json::lenient::{Entry, Loose, Text};
use crate::json::object::{Node, Object};
use crate::json::write::{RenderedItems, compact, render_string};
use crate::k8s::quantity::{self, Problem};
use crate::merge::{
    Read, add_capabilities, add_env, add_mounts, add_mounts_beside, added_capabilities,
    expect_read, json_text, object, object_entry, same_capability, set_if_absent, text,
};
use crate::profile::{DeviceCount, EnvVar, Mount, Profile};

/// The profile's per-container additions, with their JSON text.
pub(super) struct Additions<'p, 'a> {
    pub(super) profile: &'p Profile<'a>,
    /// How many devices, where the profile has a device.
    pub(super) count: Option<DeviceCount>,
    /// The device comes through the pod's DRA claim (behaviour.md §3.8): counted, not requested.
    pub(super) claimed: bool,
    pub(super) env: RenderedItems<'p, EnvVar<'a>>,
    pub(super) mounts: RenderedItems<'p, Mount<'a>>,
    /// The env entries that name a file in one of the profile's mounts, with that mount
    /// ([`files_in_mounts`]): found once a pod.
    pub(super) files: Vec<(&'p str, &'p Mount<'a>)>,
}

/// What injecting one container did.
pub(super) struct ContainerDone<'a> {
    /// What it gained.
    pub(super) gained: Container<'a>,
    /// The container's device count: the user's where they set one.
    pub(super) devices: u64,
    /// Each of our mounts left out because the container mounts another volume at its path:
    /// that volume's name, ours, and the path.
    pub(super) shadowed: Vec<(String, &'static str, String)>,
    /// It requests the device its claim stands for.
    pub(super) twice: bool,
    /// Its count of each of the profile's rails, in their order.
    pub(super) rails: Vec<u64>,
}

/// A container that requests a whole number of GPUs above zero, or names a claim of GPUs
/// (behaviour.md §3.10).
pub(super) struct GpuContainer {
    pub(super) index: usize,
    /// Its GPUs, summed over the GPU resources it requests and the claims whose GPUs are its.
    pub(super) gpus: u64,
    /// The first GPU resource it requests (a GPU class, for GPUs of a claim).
    pub(super) resource: String,
    /// Its claims' requests of `allocationMode: All`, each the node's GPUs: counted once the
    /// machine is known, and the claim that has the first.
    pub(super) all: Option<(u64, String)>,
    /// Its GPUs are not known (an `All` request on a machine the policy does not know): it gets
    /// no per-GPU device count.
    pub(super) uncounted: bool,
    /// It names the pod's own claim of the fabric.
    pub(super) fabric_claim: bool,
}

/// Every container that requests GPUs, counted from each of `resources` (behaviour.md §2).
pub(super) fn gpu_containers(
    spec: &Object<'_>,
    resources: &[Cow<'_, str>],
) -> Result<Vec<GpuContainer>, Error> {
    expect_read(spec, "containers", Read::List);
    let containers = match spec.get("containers") {
        None => return Ok(Vec::new()),
        Some(Node::List(containers)) => containers,
        Some(node) if node.is_null() => return Ok(Vec::new()),
        Some(_) => return Err(malformed("spec.containers", JsonType::List)),
    };
    let mut found = Vec::new();
    for (index, container) in containers.iter().enumerate() {
        let at = || format!("spec.containers[{index}]");
        let Node::Object(container) = container else {
            return Err(malformed(&at(), JsonType::Object));
        };
        let mut gpus: u64 = 0;
        let mut first = None;
        for resource in resources {
            let Some(value) = requested(container, resource).map_err(|e| e.within(&at()))? else {
                continue;
            };
            let n = whole(value).map_err(|problem| {
                quantity_rejection(container_name(container, index), resource, value, problem)
            })?;
            if n > 0 {
                gpus = gpus.saturating_add(n);
                first.get_or_insert(resource);
            }
        }
        if let Some(resource) = first {
            found.push(GpuContainer {
                index,
                gpus,
                resource: resource.to_string(),
                all: None,
                uncounted: false,
                fabric_claim: false,
            });
        }
    }
    Ok(found)
}

/// A resource's quantity (JSON text) in `requests`, else in `limits`.
pub(super) fn requested<'o>(
    container: &'o Object<'_>,
    resource: &str,
) -> Result<Option<&'o str>, Error> {
    let Some(resources) = object(container, "resources")? else {
        return Ok(None);
    };
    for side in ["requests", "limits"] {
        let quantities = object(resources, side).map_err(|e| e.within("resources"))?;
        if let Some(value) = quantities
            .and_then(|q| q.get(resource))
            .filter(|v| !v.is_null())
            .and_then(json_text)
        {
            return Ok(Some(value));
        }
    }
    Ok(None)
}

/// The whole number a quantity's JSON text stands for.
pub(super) fn whole(json: &str) -> Result<u64, Problem> {
    quantity::whole(json)
}

/// A quantity that is not a whole number of devices, named by container and value.
pub(super) fn quantity_rejection(
    container: String,
    resource: &str,
    json: &str,
    problem: Problem,
) -> Error {
    Error::Quantity {
        container,
        resource: resource.to_string(),
        value: compact(json).into_owned(),
        problem: problem.describe(),
    }
}

/// The containers of `spec` that are objects ([`gpu_containers`] has refused the pod otherwise).
pub(super) fn containers<'o, 'a>(spec: &'o Object<'a>) -> impl Iterator<Item = &'o Object<'a>> {
    expect_read(spec, "containers", Read::List);
    let containers = match spec.get("containers") {
        Some(Node::List(containers)) => containers.as_slice(),
        _ => &[],
    };
    containers.iter().filter_map(Node::as_object)
}

/// A container's name, `#<index>` where it has none: how messages and the record name it.
pub fn container_name(container: &Object<'_>, index: usize) -> String {
    container
        .get("name")
        .and_then(text)
        .map_or_else(|| format!("#{index}"), Cow::into_owned)
}

/// What the read step knows of one GPU container, for its wiring.
pub(super) struct Target<'t> {
    pub(super) name: &'t str,
    /// `None` where the container's GPUs are not known: it gets a per-container count only.
    pub(super) gpus: Option<u64>,
    /// It has a seccomp profile already.
    pub(super) seccomp_set: bool,
    /// The profile's variables its `envFrom` gives: the user's (behaviour.md §4).
    pub(super) env_given: &'t [String],
}

/// Applies the per-container parts to `container`, which `target` describes.
pub(super) fn inject_container<'a>(
    container: &mut Object<'_>,
    target: &Target<'_>,
    additions: &Additions<'_, 'a>,
) -> Result<ContainerDone<'a>, Error> {
    let &Target {
        name,
        gpus,
        seccomp_set,
        env_given,
    } = target;
    let profile = additions.profile;
    let mut gained = Container::named(name.to_string());
    let mut devices = 0;
    let mut twice = false;
    let count = additions
        .count
        .filter(|count| gpus.is_some() || matches!(count, DeviceCount::PerContainer(_)));
    let gpus = gpus.unwrap_or(0);
    match (&profile.device, count) {
        (Some(device), Some(count)) if additions.claimed => {
            devices = device_count(name, gpus, &device.resource, count)?;
            twice = requested(container, &device.resource)?.is_some();
        }
        (Some(device), Some(count)) => {
            let (resource, n) = ensure_device(container, name, gpus, &device.resource, count)?;
            gained.resources.extend(resource);
            devices = n;
        }
        _ => {}
    }
    // One of each rail's device, or the user's count of it.
    let mut rails = Vec::with_capacity(profile.rails.len());
    for rail in &profile.rails {
        let one = DeviceCount::PerContainer(1);
        let (resource, n) = ensure_device(container, name, gpus, &rail.resource, one)?;
        gained.resources.extend(resource);
        rails.push(n);
    }
    if let Some(cpu) = &profile.default_cpu_request {
        gained.resources.extend(default_cpu(container, cpu)?);
    }
    // No variable its `envFrom` gives, nor one naming a file it will not have; its mounts are
    // read once, where the profile has env naming files in them.
    let mut leave_out: Vec<&str> = env_given.iter().map(String::as_str).collect();
    let mounts = match additions.files.as_slice() {
        [] => {
            gained.env = add_env(container, &additions.env, &leave_out)?;
            add_mounts(container, &additions.mounts)?
        }
        files => {
            let existing = crate::merge::items::<Entry<'_>>(container, "volumeMounts")?;
            leave_out.extend(without_mount(files, additions, &existing));
            gained.env = add_env(container, &additions.env, &leave_out)?;
            add_mounts_beside(container, &additions.mounts, &existing)?
        }
    };
    gained.mounts = mounts.volumes;
    let shadowed = mounts
        .shadowed
        .into_iter()
        .map(|(theirs, ours)| (theirs, ours.volume, ours.path.to_string()))
        .collect();
    if profile.harden {
        gained.security = harden(container, seccomp_set, &profile.capabilities)?;
    }
    gained.capabilities = add_capabilities(container, &profile.capabilities)?;
    Ok(ContainerDone {
        gained,
        devices,
        shadowed,
        twice,
        rails,
    })
}

/// The profile's env entries that name a file in one of its mounts (the topology file
/// `NCCL_TOPO_FILE=/etc/nccl/nccl-topo.xml` in `nccl-topo`'s), each with that mount.
pub(super) fn files_in_mounts<'p, 'a>(profile: &'p Profile<'a>) -> Vec<(&'p str, &'p Mount<'a>)> {
    let in_mount = |value: &str, path: &str| {
        value
            .strip_prefix(path)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    profile
        .env
        .iter()
        .filter_map(|var| {
            let mount = profile
                .mounts
                .iter()
                .find(|m| in_mount(&var.value, &m.path))?;
            Some((var.name.as_ref(), mount))
        })
        .collect()
}

/// Of `files`, the names of those whose mount the container will not have once wired: the
/// policy's mount left out (the pod's own volume of that name differs, behaviour.md §4) and no
/// mount of the container's own (`existing`) at that path. Such a variable would point NCCL at a
/// file that is not there.
fn without_mount<'p>(
    files: &[(&'p str, &Mount<'_>)],
    additions: &Additions<'_, '_>,
    existing: &[Entry<'_>],
) -> Vec<&'p str> {
    let mounted = |mount: &Mount<'_>| {
        let at_path = existing
            .iter()
            .any(|m| m.mount_path.as_str() == Some(&mount.path));
        let ours_added = additions.mounts.items().any(|m| m.volume == mount.volume)
            && !existing
                .iter()
                .any(|m| m.name.as_str() == Some(mount.volume));
        at_path || ours_added
    };
    files
        .iter()
        .filter(|(_, mount)| !mounted(mount))
        .map(|(name, _)| *name)
        .collect()
}

/// Sets the device in both `requests` and `limits` (extended resources must be equal in both).
/// A number the user set wins and is copied to the side that lacks it; a count of 0 is no
/// request at all. Returns the resource where the container gained it, and its count.
pub(super) fn ensure_device<'a>(
    container: &mut Object<'_>,
    name: &str,
    gpus: u64,
    resource: &Cow<'a, str>,
    count: DeviceCount,
) -> Result<(Option<Resource<'a>>, u64), Error> {
    let (value, count) = match requested(container, resource)? {
        Some(users) => (
            users.to_string(),
            whole(users).map_err(|problem| {
                quantity_rejection(name.to_string(), resource, users, problem)
            })?,
        ),
        None => {
            let count = device_count(name, gpus, resource, count)?;
            if count == 0 {
                return Ok((None, 0));
            }
            (render_string(&count.to_string()), count)
        }
    };
    let resources = object_entry(container, "resources")?;
    let mut set = false;
    for side in ["requests", "limits"] {
        let quantities = object_entry(resources, side).map_err(|e| e.within("resources"))?;
        set |= set_if_absent(quantities, resource, || value.clone().into());
    }
    let gained = set.then(|| Resource {
        name: resource.clone(),
        quantity: quantity_text(&value),
    });
    Ok((gained, count))
}

/// A quantity as the user reads it: a JSON string's text, a number's digits.
fn quantity_text(json: &str) -> String {
    match crate::json::lenient::read::<Loose<Text<'_>>>(json) {
        Ok(Loose(Text(Some(text)))) => text.into_owned(),
        _ => json.to_string(),
    }
}

/// The devices `count` gives a container of `gpus` GPUs.
fn device_count(name: &str, gpus: u64, resource: &str, count: DeviceCount) -> Result<u64, Error> {
    match count {
        DeviceCount::PerContainer(n) => Ok(n),
        DeviceCount::PerGpu(per_gpu) => per_gpu.devices_for(gpus).ok_or_else(|| Error::Overflow {
            container: name.to_string(),
            resource: resource.to_string(),
            gpus,
            per_gpu,
        }),
    }
}

/// `requests.cpu` for a container that sets no cpu at all. With a cpu limit the API server has
/// already defaulted the request to it, and a fixed request above a smaller limit is refused.
pub(super) fn default_cpu<'a>(
    container: &mut Object<'_>,
    cpu: &Cow<'a, str>,
) -> Result<Option<Resource<'a>>, Error> {
    if requested(container, "cpu")?.is_some() {
        return Ok(None);
    }
    let resources = object_entry(container, "resources")?;
    let requests = object_entry(resources, "requests").map_err(|e| e.within("resources"))?;
    let set = set_if_absent(requests, "cpu", || render_string(cpu).into());
    Ok(set.then(|| Resource {
        name: Cow::Borrowed("cpu"),
        quantity: cpu.to_string(),
    }))
}

/// `allowPrivilegeEscalation: false` and a `RuntimeDefault` seccomp profile, only where the API
/// server accepts them and the user has not chosen otherwise (behaviour.md §5). `adding` are the
/// capabilities the profile adds to the container. Returns the fields it set.
pub(super) fn harden(
    container: &mut Object<'_>,
    seccomp_set: bool,
    adding: &[Cow<'_, str>],
) -> Result<Vec<&'static str>, Error> {
    let sys_admin = added_capabilities(container)?
        .iter()
        .filter_map(Text::as_str)
        .chain(adding.iter().map(|c| c.as_ref()))
        .any(|c| same_capability(c, "SYS_ADMIN"));
    let security = object_entry(container, "securityContext")?;
    let privileged = security
        .get("privileged")
        .and_then(Node::raw)
        .map(RawValue::get)
        == Some("true");
    let mut set = Vec::new();
    if !privileged
        && !sys_admin
        && set_if_absent(security, "allowPrivilegeEscalation", || "false".into())
    {
        set.push("allowPrivilegeEscalation");
    }
    let runtime_default = || r#"{"type":"RuntimeDefault"}"#.into();
    if !seccomp_set && set_if_absent(security, "seccompProfile", runtime_default) {
        set.push("seccompProfile");
    }
    Ok(set)
}
