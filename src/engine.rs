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

    // NCCL and every fabric here are Linux-only, and the API server forbids capabilities,
    // allowPrivilegeEscalation and seccomp in Windows pods.
    if spec
        .get("os")
        .and_then(|os| os.get("name"))
        .and_then(Value::as_str)
        == Some("windows")
    {
        outcome.warnings.push(
            "pod opted in to multi-node networking but is a Windows pod (spec.os.name); nothing was injected".to_string(),
        );
        return Ok(outcome);
    }

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
        let Some(container) = containers.get_mut(index).and_then(Value::as_object_mut) else {
            continue;
        };
        let name = container_name(container, index);
        let seccomp_set = pod_seccomp || seccomp.containers.contains(&name);
        let (changed, count) =
            inject_container(container, &name, gpus, profile, &conflicts, seccomp_set)
                .map_err(|e| e.within(&format!("spec.containers[{index}]")))?;
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
                .push(sidecar.to_json(&conflicts));
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
            quantity_rejection(
                &container_name(container, index),
                GPU_RESOURCE,
                value,
                problem,
            )
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

/// A quantity that is not a whole number of devices, named by container and value.
fn quantity_rejection(
    container: &str,
    resource: &str,
    value: &Value,
    problem: QuantityError,
) -> Rejection {
    Rejection::Quantity {
        container: container.to_string(),
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
    let count = quantity::whole(&value)
        .map_err(|problem| quantity_rejection(name, resource, &value, problem))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Cloud;

    fn azure() -> Profile {
        Profile::for_cloud(&Cloud::Azure {
            rdma_per_gpu: 2,
            rdma_device_name: "hca_shared_devices_a".into(),
            topology_config_map: "nccl-topo".into(),
        })
    }

    fn oci() -> Profile {
        Profile::for_cloud(&Cloud::Oci { rdma_per_gpu: 8 })
    }

    fn gpu_container(name: &str, gpus: Value) -> Value {
        json!({"name": name, "image": "trainer", "resources": {"limits": {GPU_RESOURCE: gpus}}})
    }

    fn pod(containers: Vec<Value>) -> Value {
        json!({"metadata": {"name": "w"}, "spec": {"containers": containers}})
    }

    /// Injects, then checks that a second pass is a no-op.
    fn inject_twice(pod: &mut Value, profile: &Profile) -> Outcome {
        let outcome = inject(pod, profile).unwrap();
        let before = pod.clone();
        let again = inject(pod, profile).unwrap();
        assert!(!again.changed, "second pass changed the pod");
        assert_eq!(*pod, before);
        outcome
    }

    #[test]
    fn every_cloud_is_idempotent_on_a_bare_worker() {
        for cloud in [
            Cloud::Aws { efa_per_gpu: 4 },
            Cloud::Gcp,
            Cloud::Oci { rdma_per_gpu: 8 },
        ] {
            let mut p = pod(vec![gpu_container("t", json!("8"))]);
            assert!(inject_twice(&mut p, &Profile::for_cloud(&cloud)).changed);
        }
        let mut p = pod(vec![gpu_container("t", json!(8))]);
        assert!(inject_twice(&mut p, &azure()).changed);
    }

    #[test]
    fn no_gpu_container_means_a_warning_and_no_change() {
        for spec in [
            json!(null),
            json!({"containers": null}),
            json!({"containers": [{"name": "cpu"}]}),
        ] {
            let mut p = json!({"spec": spec});
            let before = p.clone();
            let outcome = inject(&mut p, &oci()).unwrap();
            assert!(!outcome.changed && outcome.warnings[0].contains(GPU_RESOURCE));
            assert_eq!(p, before);
        }
        let mut zero = pod(vec![gpu_container("t", json!("0"))]);
        assert!(!inject(&mut zero, &oci()).unwrap().changed);
    }

    #[test]
    fn a_limits_only_device_is_copied_to_requests_and_kept() {
        let mut c = gpu_container("t", json!("8"));
        c["resources"]["limits"]["rdma/hca_shared_devices_a"] = json!("1");
        let mut p = pod(vec![c]);
        inject_twice(&mut p, &azure());
        let resources = &p["spec"]["containers"][0]["resources"];
        assert_eq!(
            resources["requests"]["rdma/hca_shared_devices_a"],
            json!("1")
        );
        assert_eq!(resources["limits"]["rdma/hca_shared_devices_a"], json!("1"));
    }

    #[test]
    fn multus_counts_the_devices_of_every_gpu_container() {
        let mut user_set = gpu_container("b", json!(1));
        user_set["resources"]["limits"]["nvidia.com/mlnxnics"] = json!(3);
        let mut p = pod(vec![
            gpu_container("a", json!("2")),
            user_set,
            json!({"name": "sidecar"}),
        ]);
        inject_twice(&mut p, &oci());
        let networks = p["metadata"]["annotations"][multus::ANNOTATION]
            .as_str()
            .unwrap();
        assert_eq!(networks.split(',').count(), 16 + 3);
        assert!(
            p["spec"]["containers"][2].get("env").is_none(),
            "non-GPU container touched"
        );
    }

    #[test]
    fn hardening_only_where_the_api_server_accepts_it() {
        let mut privileged = gpu_container("privileged", json!(1));
        privileged["securityContext"] = json!({"privileged": true});
        let mut sys_admin = gpu_container("sys-admin", json!(1));
        sys_admin["securityContext"] = json!({"capabilities": {"add": ["cap_sys_admin"]}});
        let mut chosen = gpu_container("chosen", json!(1));
        chosen["securityContext"] =
            json!({"allowPrivilegeEscalation": true, "seccompProfile": {"type": "Unconfined"}});
        let legacy = gpu_container("legacy", json!(1));
        let plain = gpu_container("plain", json!(1));
        let mut p = pod(vec![privileged, sys_admin, chosen, legacy, plain]);
        p["metadata"]["annotations"] =
            json!({"container.seccomp.security.alpha.kubernetes.io/legacy": "runtime/default"});
        inject_twice(&mut p, &azure());
        let sc = |i: usize| p["spec"]["containers"][i]["securityContext"].clone();
        assert_eq!(sc(0).get("allowPrivilegeEscalation"), None);
        assert_eq!(sc(1).get("allowPrivilegeEscalation"), None);
        assert_eq!(
            sc(1)["capabilities"]["add"],
            json!(["cap_sys_admin", "IPC_LOCK"])
        );
        assert_eq!(sc(2)["allowPrivilegeEscalation"], json!(true));
        assert_eq!(sc(2)["seccompProfile"], json!({"type": "Unconfined"}));
        assert_eq!(sc(3).get("seccompProfile"), None);
        assert_eq!(sc(3)["allowPrivilegeEscalation"], json!(false));
        assert_eq!(sc(4)["seccompProfile"], json!({"type": "RuntimeDefault"}));

        let mut pod_level = pod(vec![gpu_container("t", json!(1))]);
        pod_level["spec"]["securityContext"] =
            json!({"seccompProfile": {"type": "Localhost", "localhostProfile": "x.json"}});
        inject_twice(&mut pod_level, &azure());
        assert_eq!(
            pod_level["spec"]["containers"][0]["securityContext"].get("seccompProfile"),
            None
        );
    }

    #[test]
    fn a_conflicting_volume_is_kept_and_not_mounted() {
        let mut p = pod(vec![gpu_container("t", json!(1))]);
        p["spec"]["volumes"] = json!([{"name": "nccl-topo", "configMap": {"name": "my-topology"}}]);
        let outcome = inject_twice(&mut p, &azure());
        assert_eq!(outcome.warnings.len(), 1);
        assert!(outcome.warnings[0].contains("\"nccl-topo\""));
        let mounts = p["spec"]["containers"][0]["volumeMounts"]
            .as_array()
            .unwrap();
        assert!(mounts.iter().all(|m| m["name"] != "nccl-topo"));
        assert_eq!(
            p["spec"]["volumes"][0],
            json!({"name": "nccl-topo", "configMap": {"name": "my-topology"}})
        );
        assert_eq!(
            p["spec"]["volumes"].as_array().unwrap().len(),
            2,
            "nv-shared-memory added, nothing else"
        );
    }

    #[test]
    fn wrong_types_are_rejections_that_name_the_path() {
        let mut c = gpu_container("t", json!(1));
        c["env"] = json!("FOO=1");
        let error = inject(&mut pod(vec![c]), &oci()).unwrap_err();
        assert_eq!(error, malformed("spec.containers[0].env", "a list"));
        assert!(
            error
                .to_string()
                .starts_with("spec.containers[0].env must be a list")
        );

        let error = inject(&mut json!({"spec": {"containers": [7]}}), &oci()).unwrap_err();
        assert_eq!(error, malformed("spec.containers[0]", "an object"));
        let error = inject(&mut pod(vec![gpu_container("t", json!("1500m"))]), &oci()).unwrap_err();
        assert!(
            matches!(&error, Rejection::Quantity { container, value, .. } if container == "t" && value == "\"1500m\"")
        );
    }

    #[test]
    fn windows_pods_are_left_alone() {
        let mut p = pod(vec![gpu_container("t", json!(1))]);
        p["spec"]["os"] = json!({"name": "windows"});
        let before = p.clone();
        let outcome = inject(&mut p, &azure()).unwrap();
        assert!(!outcome.changed && outcome.warnings[0].contains("Windows"));
        assert_eq!(p, before);
    }

    #[test]
    fn a_device_count_that_overflows_is_refused() {
        let big = json!(u64::MAX / 2);
        let error = inject(&mut pod(vec![gpu_container("t", big)]), &oci()).unwrap_err();
        assert!(matches!(error, Rejection::Overflow { per_gpu: 8, .. }));
    }
}
