//! The merge engine: applies any cloud's [`Profile`] to an opted-in pod, in place, with the merge
//! rules of SPEC sections 4 and 5. It knows no cloud by name.

use serde_json::{Value, json};

use crate::error::{Rejection, malformed};
use crate::merge::{
    Object, add_capabilities, add_env, add_mounts, added_capabilities, list, list_mut, name_of,
    object, object_mut, same_capability, set_if_absent,
};
use crate::multus;
use crate::profile::{Device, Profile, Volume};
use crate::quantity::{self, QuantityError};

pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
const POD_SECCOMP_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
const CONTAINER_SECCOMP_ANNOTATION: &str = "container.seccomp.security.alpha.kubernetes.io/";

/// What the engine did to a pod it may change.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub changed: bool,
    pub warnings: Vec<String>,
}

/// Injects `profile` into `pod`. On a rejection the pod may be half-changed and must be dropped.
pub fn inject(pod: &mut Value, profile: &Profile) -> Result<Outcome, Rejection> {
    let pod = pod
        .as_object_mut()
        .ok_or_else(|| malformed("the object", "an object"))?;
    let mut outcome = Outcome::default();
    let seccomp = SeccompAnnotations::read(pod)?;

    let spec = match pod.get_mut("spec") {
        None | Some(Value::Null) => None,
        Some(Value::Object(spec)) => Some(spec),
        Some(_) => return Err(malformed("spec", "an object")),
    };
    let gpu_containers = match &spec {
        Some(spec) => gpu_containers(spec)?,
        None => Vec::new(),
    };
    let Some(spec) = spec.filter(|_| !gpu_containers.is_empty()) else {
        outcome.warnings.push(format!(
            "pod opted in to multi-node networking but no container requests {GPU_RESOURCE}; nothing was injected"
        ));
        return Ok(outcome);
    };

    let conflicts = conflicting_volumes(spec, &profile.volumes)?;
    for volume in &conflicts {
        outcome.warnings.push(format!(
            "pod volume {volume:?} differs from the one multi-node networking needs; kept it and did not mount it"
        ));
    }
    let pod_seccomp = seccomp.pod
        || object(spec, "securityContext")
            .map_err(|e| e.within("spec"))?
            .is_some_and(|sc| sc.get("seccompProfile").is_some_and(|p| !p.is_null()));

    let mut devices: u64 = 0;
    let containers = list_mut(spec, "containers").map_err(|e| e.within("spec"))?;
    for &(index, gpus) in &gpu_containers {
        let at = format!("spec.containers[{index}]");
        let Some(container) = containers.get_mut(index).and_then(Value::as_object_mut) else {
            continue;
        };
        let name = container_name(container, index);
        let seccomp_set = pod_seccomp || seccomp.containers.contains(&name);
        let (changed, count) =
            inject_container(container, &name, gpus, profile, &conflicts, seccomp_set)
                .map_err(|e| e.within(&at))?;
        outcome.changed |= changed;
        devices = devices.saturating_add(count);
    }

    if let Some(sidecar) = profile.sidecar {
        let taken = ["containers", "initContainers"]
            .iter()
            .flat_map(|key| list(spec, key).unwrap_or(&[]))
            .any(|c| name_of(c) == Some(sidecar.name));
        if !taken {
            list_mut(spec, "initContainers")
                .map_err(|e| e.within("spec"))?
                .push(sidecar.to_json());
            outcome.changed = true;
        }
    }
    outcome.changed |= add_volumes(spec, &profile.volumes, &conflicts)?;

    if !profile.annotations.is_empty() || profile.network.is_some() {
        let metadata = object_mut(pod, "metadata")?;
        let annotations = object_mut(metadata, "annotations").map_err(|e| e.within("metadata"))?;
        for (key, value) in profile.annotations {
            outcome.changed |= set_if_absent(annotations, key, || Value::from(*value));
        }
        if let Some(network) = profile.network {
            let existing = match annotations.get(multus::ANNOTATION) {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.as_str()),
                Some(_) => {
                    return Err(malformed(
                        "metadata.annotations[k8s.v1.cni.cncf.io/networks]",
                        "a string",
                    ));
                }
            };
            if let Some(value) = multus::merge(existing, network, devices)? {
                annotations.insert(multus::ANNOTATION.to_string(), value.into());
                outcome.changed = true;
            }
        }
    }
    Ok(outcome)
}

/// `(index, GPUs)` of every container that requests a whole number of GPUs above zero.
fn gpu_containers(spec: &Object) -> Result<Vec<(usize, u64)>, Rejection> {
    let containers = list(spec, "containers").map_err(|e| e.within("spec"))?;
    let mut found = Vec::new();
    for (index, container) in containers.iter().enumerate() {
        let at = || format!("spec.containers[{index}]");
        let container = container
            .as_object()
            .ok_or_else(|| malformed(&at(), "an object"))?;
        let Some(value) = requested(container, GPU_RESOURCE).map_err(|e| e.within(&at()))? else {
            continue;
        };
        let gpus = quantity::whole(value).map_err(|problem| {
            quantity_rejection(container, index, GPU_RESOURCE, value, problem)
        })?;
        if gpus > 0 {
            found.push((index, gpus));
        }
    }
    Ok(found)
}

/// A resource's quantity in `requests`, else in `limits`.
fn requested<'a>(container: &'a Object, resource: &str) -> Result<Option<&'a Value>, Rejection> {
    let Some(resources) = object(container, "resources")? else {
        return Ok(None);
    };
    for side in ["requests", "limits"] {
        let quantities = object(resources, side).map_err(|e| e.within("resources"))?;
        if let Some(value) = quantities
            .and_then(|q| q.get(resource))
            .filter(|v| !v.is_null())
        {
            return Ok(Some(value));
        }
    }
    Ok(None)
}

fn container_name(container: &Object, index: usize) -> String {
    container
        .get("name")
        .and_then(Value::as_str)
        .map_or_else(|| format!("#{index}"), str::to_string)
}

fn quantity_rejection(
    container: &Object,
    index: usize,
    resource: &str,
    value: &Value,
    problem: QuantityError,
) -> Rejection {
    Rejection::Quantity {
        container: container_name(container, index),
        resource: resource.to_string(),
        value: value.to_string(),
        problem: problem.describe(),
    }
}

/// Applies the per-container parts; returns whether anything changed and the container's device
/// count (the user's where they set one).
fn inject_container(
    container: &mut Object,
    name: &str,
    gpus: u64,
    profile: &Profile,
    conflicts: &[&str],
    seccomp_set: bool,
) -> Result<(bool, u64), Rejection> {
    let mut changed = false;
    let mut count = 0;
    if let Some(device) = &profile.device {
        let (device_changed, device_count) = ensure_device(container, name, gpus, device)?;
        changed |= device_changed;
        count = device_count;
    }
    if let Some(cpu) = profile.default_cpu_request {
        changed |= default_cpu(container, cpu)?;
    }
    changed |= add_env(container, profile.env_vars())?;
    changed |= add_mounts(
        container,
        profile
            .mounts
            .iter()
            .filter(|m| !conflicts.contains(&m.volume)),
    )?;
    changed |= add_capabilities(container, profile.capabilities)?;
    if profile.harden {
        changed |= harden(container, seccomp_set)?;
    }
    Ok((changed, count))
}

/// Sets the device in both `requests` and `limits` (extended resources must be equal in both).
/// A number the user set wins and is copied to the side that lacks it.
fn ensure_device(
    container: &mut Object,
    name: &str,
    gpus: u64,
    device: &Device,
) -> Result<(bool, u64), Rejection> {
    let resource = device.resource.as_str();
    let (value, changed) = match requested(container, resource)? {
        Some(users) => (users.clone(), false),
        None => {
            let count =
                gpus.checked_mul(u64::from(device.per_gpu))
                    .ok_or_else(|| Rejection::Overflow {
                        container: name.to_string(),
                        resource: resource.to_string(),
                        gpus,
                        per_gpu: device.per_gpu,
                    })?;
            (Value::from(count.to_string()), true)
        }
    };
    let count = quantity::whole(&value).map_err(|problem| Rejection::Quantity {
        container: name.to_string(),
        resource: resource.to_string(),
        value: value.to_string(),
        problem: problem.describe(),
    })?;
    let resources = object_mut(container, "resources")?;
    let mut copied = false;
    for side in ["requests", "limits"] {
        let quantities = object_mut(resources, side).map_err(|e| e.within("resources"))?;
        copied |= set_if_absent(quantities, resource, || value.clone());
    }
    Ok((changed || copied, count))
}

/// `requests.cpu` for a container that sets no cpu at all. With a cpu limit the API server has
/// already defaulted the request to it, and a fixed request above a smaller limit is refused.
fn default_cpu(container: &mut Object, cpu: &str) -> Result<bool, Rejection> {
    if requested(container, "cpu")?.is_some() {
        return Ok(false);
    }
    let resources = object_mut(container, "resources")?;
    let requests = object_mut(resources, "requests").map_err(|e| e.within("resources"))?;
    Ok(set_if_absent(requests, "cpu", || Value::from(cpu)))
}

/// `allowPrivilegeEscalation: false` and a `RuntimeDefault` seccomp profile, only where the API
/// server accepts them and the user has not chosen otherwise (SPEC section 5).
fn harden(container: &mut Object, seccomp_set: bool) -> Result<bool, Rejection> {
    let sys_admin = added_capabilities(container)?
        .iter()
        .any(|c| c.as_str().is_some_and(|c| same_capability(c, "SYS_ADMIN")));
    let security = object_mut(container, "securityContext")?;
    let privileged = security.get("privileged").and_then(Value::as_bool) == Some(true);
    let mut changed = false;
    if !privileged && !sys_admin {
        changed |= set_if_absent(security, "allowPrivilegeEscalation", || Value::Bool(false));
    }
    if !seccomp_set {
        changed |= set_if_absent(
            security,
            "seccompProfile",
            || json!({"type": "RuntimeDefault"}),
        );
    }
    Ok(changed)
}

/// The profile's volumes that the pod already declares differently.
fn conflicting_volumes<'p>(
    spec: &Object,
    volumes: &'p [Volume],
) -> Result<Vec<&'p str>, Rejection> {
    let existing = list(spec, "volumes").map_err(|e| e.within("spec"))?;
    Ok(volumes
        .iter()
        .filter(|ours| {
            existing
                .iter()
                .any(|v| name_of(v) == Some(ours.name) && !ours.same_as(v))
        })
        .map(|v| v.name)
        .collect())
}

/// Adds each volume that the pod lacks and some container or init container now mounts.
fn add_volumes(
    spec: &mut Object,
    volumes: &[Volume],
    conflicts: &[&str],
) -> Result<bool, Rejection> {
    let mounted = |name: &str| {
        ["containers", "initContainers"]
            .iter()
            .flat_map(|key| list(spec, key).unwrap_or(&[]))
            .filter_map(Value::as_object)
            .flat_map(|c| list(c, "volumeMounts").unwrap_or(&[]))
            .any(|m| name_of(m) == Some(name))
    };
    let existing = list(spec, "volumes").map_err(|e| e.within("spec"))?;
    let missing: Vec<Value> = volumes
        .iter()
        .filter(|v| !conflicts.contains(&v.name))
        .filter(|v| !existing.iter().any(|e| name_of(e) == Some(v.name)))
        .filter(|v| mounted(v.name))
        .map(Volume::to_json)
        .collect();
    if missing.is_empty() {
        return Ok(false);
    }
    list_mut(spec, "volumes")
        .map_err(|e| e.within("spec"))?
        .extend(missing);
    Ok(true)
}

/// Seccomp profiles set through the legacy annotations, which the API server checks against
/// the fields: a field that disagrees with them gets the pod refused.
struct SeccompAnnotations {
    pod: bool,
    containers: Vec<String>,
}

impl SeccompAnnotations {
    fn read(pod: &Object) -> Result<Self, Rejection> {
        let metadata = object(pod, "metadata")?;
        let annotations = match metadata {
            Some(m) => object(m, "annotations").map_err(|e| e.within("metadata"))?,
            None => None,
        };
        let keys = annotations.into_iter().flat_map(|a| a.keys());
        let mut found = SeccompAnnotations {
            pod: false,
            containers: Vec::new(),
        };
        for key in keys {
            if key == POD_SECCOMP_ANNOTATION {
                found.pod = true;
            } else if let Some(container) = key.strip_prefix(CONTAINER_SECCOMP_ANNOTATION) {
                found.containers.push(container.to_string());
            }
        }
        Ok(found)
    }
}
