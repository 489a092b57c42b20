//! The merge engine: applies any cloud's [`Profile`] to an opted-in pod, in place, with the merge
//! rules of behaviour.md §4 and §5. It knows no cloud by name.

use std::borrow::Cow;

mod claim;
mod container;

use crate::error::{Rejection, malformed};
use crate::fragment::Block;
use crate::lenient::{Entry, Loose, read};
use crate::machine::{self, Machine};
use crate::merge::{
    Read, append, expect_read, items, names, object, object_entry, object_mut, raw_items,
    same_volume, set_if_absent, text,
};
use crate::multus;
use crate::placement;
use crate::preflight::{self, Reference};
use crate::profile::{Profile, Sidecar, Volume};
use crate::record::{Record, Wired};
use crate::settings::{CloudSettings, Config};
use crate::view::{Member, Node, Object, Shape};
use container::{Additions, GpuContainer, container_name, gpu_containers, inject_container};

const POD_SECCOMP_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
const CONTAINER_SECCOMP_ANNOTATION: &str = "container.seccomp.security.alpha.kubernetes.io/";

/// The objects of a pod the engine reads members of or adds members to; the view parses these
/// and keeps everything else as the request's text.
pub const POD: Shape = Shape {
    members: &[
        ("metadata", Member::Object(&METADATA)),
        ("spec", Member::Object(&SPEC)),
    ],
};
const METADATA: Shape = Shape {
    members: &[("annotations", Member::Object(&MEMBERS))],
};
const SPEC: Shape = Shape {
    members: &[
        ("containers", Member::List(&CONTAINER)),
        ("securityContext", Member::Object(&MEMBERS)),
        ("os", Member::Object(&MEMBERS)),
    ],
};
const CONTAINER: Shape = Shape {
    members: &[
        ("resources", Member::Object(&RESOURCES)),
        ("securityContext", Member::Object(&SECURITY_CONTEXT)),
    ],
};
const RESOURCES: Shape = Shape {
    members: &[
        ("requests", Member::Object(&MEMBERS)),
        ("limits", Member::Object(&MEMBERS)),
    ],
};
const SECURITY_CONTEXT: Shape = Shape {
    members: &[("capabilities", Member::Object(&MEMBERS))],
};
const MEMBERS: Shape = Shape::TEXT;

/// What the engine did to a pod it may change.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome<'a> {
    pub changed: bool,
    pub warnings: Vec<String>,
    /// The objects of the cluster the pod now refers to through the injection (behaviour.md §9).
    pub references: Vec<Reference<'a>>,
    /// The record of what was injected, when the pod changed (behaviour.md §2.1), as a JSON
    /// string: the annotation's value and the audit annotation's, escaped once.
    pub record: Option<String>,
}

/// Injects the configured cloud's fabric into `pod`, as its machine decides. On a rejection the
/// pod may be half-changed and must be dropped.
pub fn inject<'a>(pod: &mut Object<'_>, config: &Config<'a>) -> Result<Outcome<'a>, Rejection> {
    let mut outcome = Outcome::default();
    let seccomp = SeccompAnnotations::read(pod)?;

    let spec = object_mut(pod, "spec")?;
    let gpu_containers = match &spec {
        Some(spec) => gpu_containers(spec, &config.gpu_resources)?,
        None => Vec::new(),
    };
    let Some(spec) = spec.filter(|_| !gpu_containers.is_empty()) else {
        let resources: Vec<&str> = config.gpu_resources.iter().map(|r| r.as_ref()).collect();
        // GPUs through DRA: a claim's devices cannot be counted at admission (behaviour.md §3.8).
        let (through, end) = if object(pod, "spec")?.is_some_and(machine::has_claims) {
            (
                " takes its GPUs through spec.resourceClaims and",
                ": the policy counts GPUs only from those resources, not from a claim's devices, so nothing was injected; request the GPUs as one of them, or wire the fabric in the pod itself",
            )
        } else {
            ("", "; nothing was injected")
        };
        outcome.warnings.push(format!(
            "pod opted in to multi-node networking but{through} no container requests {}{end}",
            resources.join(" or ")
        ));
        return Ok(outcome);
    };

    // NCCL and every fabric here are Linux-only, and the API server forbids capabilities,
    // allowPrivilegeEscalation and seccomp in Windows pods.
    let os = object(spec, "os").map_err(|e| e.within("spec"))?;
    if os.and_then(|os| os.get("name")).and_then(text).as_deref() == Some("windows") {
        outcome.warnings.push(
            "pod opted in to multi-node networking but is a Windows pod (spec.os.name); nothing was injected".to_string(),
        );
        return Ok(outcome);
    }

    // The machine decides the fabric and changes the injection where the pod names it.
    let machine = machine::of(&config.cloud, spec)?;
    outcome.warnings.extend(machine.warnings.iter().cloned());
    let Some(fabric) = machine.fabric else {
        return Ok(outcome);
    };
    let profile = config.cloud.profile(fabric, &machine.overlay);
    if profile.claim.is_none()
        && let Some(claimed) = config
            .cloud
            .overlay
            .claimed()
            .filter(|_| !machine.rows.is_empty())
    {
        outcome.warnings.push(format!(
            "multi-node networking: the settings give the {} fabric a DRA claim, but this pod's machine gets {}, which no DRA driver serves; it is wired as without DRA, which cannot work on nodes whose NICs a DRA driver holds",
            claimed.name, fabric.name
        ));
    }
    let pod_spec = PodSpec {
        seccomp,
        gpu_containers,
    };
    let outcome = apply(pod, &profile, &config.cloud, &machine, pod_spec, outcome)?;
    // The record is the policy's own statement: written, over any stale one, only on a pod the
    // policy changed in some other way, so that a second pass changes nothing.
    if let (Some(record), Some(key)) = (&outcome.record, &config.record) {
        let metadata = object_entry(pod, "metadata")?;
        let annotations =
            object_entry(metadata, "annotations").map_err(|e| e.within("metadata"))?;
        annotations.insert(key, Node::New(record.clone().into()));
    }
    Ok(outcome)
}

/// What [`inject`] read of the pod before the injection.
struct PodSpec {
    seccomp: SeccompAnnotations,
    gpu_containers: Vec<GpuContainer>,
}

/// Merges `profile` into `pod`.
fn apply<'a>(
    pod: &mut Object<'_>,
    profile: &Profile<'a>,
    settings: &CloudSettings<'_>,
    machine: &Machine<'_>,
    read: PodSpec,
    mut outcome: Outcome<'a>,
) -> Result<Outcome<'a>, Rejection> {
    let PodSpec {
        seccomp,
        gpu_containers,
    } = read;
    let Some(spec) = object_mut(pod, "spec")? else {
        return Ok(outcome);
    };
    let Volumes {
        existing: existing_volumes,
        mut conflicts,
    } = read_volumes(spec, &profile.volumes)?;
    for volume in &conflicts {
        outcome.warnings.push(format!(
            "pod volume {volume:?} differs from the one multi-node networking needs; kept it and did not mount it"
        ));
    }
    // A DRA-only machine's pod does without some of the fabric's volumes (behaviour.md §3.8):
    // left out as a conflicting one is, without its warning.
    if profile.claim.is_some() {
        conflicts.extend(machine.dra_without);
    }
    let pod_seccomp = seccomp.pod
        || object(spec, "securityContext")
            .map_err(|e| e.within("spec"))?
            .and_then(|sc| sc.get("seccompProfile"))
            .is_some_and(|p| !p.is_null());

    // Where the pod may run decides its device count.
    let placement = profile
        .device
        .as_ref()
        .map(|device| placement::place(settings, device, &machine.rows));
    if let Some(placement) = &placement {
        outcome.warnings.extend(placement.warnings.iter().cloned());
    }

    // The profile's additions as JSON text, written once and copied into every GPU container.
    let claim = machine
        .fabric
        .and_then(|fabric| claim::Claim::of(profile, fabric.name));
    let additions = Additions {
        profile,
        count: placement.as_ref().map(|p| p.count),
        claimed: claim.is_some(),
        env: Block::new(profile.env.iter()),
        mounts: Block::new(
            profile
                .mounts
                .iter()
                .filter(|m| !conflicts.contains(&m.volume)),
        ),
    };

    let mut devices: u64 = 0;
    let mut mounted = Vec::new();
    let mut shadowed = Vec::new();
    let mut wired = Vec::with_capacity(gpu_containers.len());
    expect_read(spec, "containers", Read::List);
    let Some(Node::List(containers)) = spec.get_mut("containers") else {
        return Err(malformed("spec.containers", "a list"));
    };
    for &GpuContainer { index, gpus, .. } in &gpu_containers {
        let Some(Node::Object(container)) = containers.get_mut(index) else {
            continue;
        };
        let name = container_name(container, index);
        let seccomp_set = pod_seccomp || seccomp.containers.contains(&name);
        let done = inject_container(container, &name, gpus, &additions, seccomp_set)
            .map_err(|e| e.within(&format!("spec.containers[{index}]")))?;
        outcome.changed |= done.changed;
        if let (true, Some(claim), Some(device)) = (done.twice, &claim, &profile.device) {
            outcome.warnings.push(format!(
                "multi-node networking: container {name} requests {}, which the pod's DRA claim {} stands for; the pod asks for its fabric twice and may never be scheduled: remove the request",
                device.resource, claim.name
            ));
        }
        devices = devices.saturating_add(done.devices);
        mounted.extend(done.mounted);
        shadowed.extend(done.shadowed.into_iter().map(|s| (name.clone(), s)));
        wired.push(Wired {
            name,
            devices: profile.device.as_ref().map(|_| done.devices),
            claim: None,
        });
    }

    if let (Some(placement), Some(device)) = (&placement, &profile.device) {
        outcome.warnings.extend(placement::over_capacity(
            placement,
            &device.resource,
            devices,
        ));
    }
    let gpus = gpu_containers
        .iter()
        .fold(0u64, |sum, c| sum.saturating_add(c.gpus));
    // The resource the pod's GPUs are asked for by, for messages: the first container's.
    let gpu_resource = gpu_containers
        .first()
        .map_or("GPUs", |c| c.resource.as_str());
    if let Some(whole) = profile.whole_node {
        let node = machine.gpus.unwrap_or(whole.gpus);
        if gpus < node {
            outcome.warnings.push(format!(
                "multi-node networking: {}; this pod requests {gpus} {gpu_resource} in all, so it cannot use the node as intended",
                whole.why(node)
            ));
        }
    }
    let mut other_claims = machine::has_claims(spec);
    let mut claim_template = None;
    if let Some(claim) = &claim {
        let count = match profile.device {
            Some(_) => devices,
            None => claim::Claim::nics(profile, machine.nics),
        };
        let added = claim.add(spec, &gpu_containers, count)?;
        outcome.changed |= added.changed;
        other_claims = added.others;
        claim_template = added.template;
        for wired in &mut wired {
            wired.claim = Some(added.name.clone());
        }
    }
    if machine.nvlink_domain && !other_claims {
        outcome.warnings.push(
            "multi-node networking: the pod's machine is part of a multi-node NVLink domain, and the pod has no spec.resourceClaims: give its GPU container the claim of its job's ComputeDomain channel (resource.nvidia.com/v1beta1), whose name the policy cannot know".to_string(),
        );
    }
    if let Some(sidecar) = &profile.sidecar {
        let added = add_sidecar(spec, sidecar, &conflicts, &mut mounted)?;
        if added {
            outcome.warnings.extend(sidecar.outdated_probe());
            outcome
                .warnings
                .extend(unshared(sidecar, &profile.volumes, &shadowed));
        }
        outcome.changed |= added;
    }
    let wanted: Vec<&Volume<'_>> = profile
        .volumes
        .iter()
        .filter(|v| !conflicts.contains(&v.name) && !existing_volumes.contains(&v.name))
        .collect();
    let (added, mut present) = add_volumes(spec, wanted, &mounted)?;
    outcome.changed |= added;
    present.extend(existing_volumes.iter().filter(|v| !conflicts.contains(v)));
    outcome.changed |= annotate(pod, profile, machine.nics, devices, claim.is_some())?;
    if outcome.changed {
        let record = Record {
            cloud: settings.cloud.name,
            fabric: machine.fabric.map_or("", |f| f.name),
            device: profile.device.as_ref().map(|d| d.resource.as_ref()),
            machine: machine
                .named
                .as_ref()
                .map(|(name, from)| (name.as_ref(), *from)),
            containers: &wired,
        };
        outcome.record = Some(record.annotation());
    }
    outcome.references = preflight::references(profile, &present, devices, claim_template);
    Ok(outcome)
}

/// The warnings for GPU containers that mount a volume of their own where the policy's sidecar
/// shares an emptyDir with them (TCPX's socket directory at `/tmp`): with the user's mount kept,
/// the container and the daemon the policy adds do not share it, and NCCL cannot reach the
/// daemon. (A hostPath is the node's wherever it is mounted; a pod that brings its own daemon
/// gets none of the policy's, and no warning.)
fn unshared(
    sidecar: &Sidecar<'_>,
    volumes: &[Volume<'_>],
    shadowed: &[(String, (String, &'static str, String))],
) -> Vec<String> {
    let shared = |ours: &str| {
        sidecar.mounts.iter().any(|m| m.volume == ours)
            && volumes
                .iter()
                .any(|v| v.name == ours && matches!(v.source, crate::profile::Source::Scratch))
    };
    shadowed
        .iter()
        .filter(|(_, (_, ours, _))| shared(ours))
        .map(|(container, (theirs, ours, path))| {
            format!(
                "multi-node networking: container {container} mounts {theirs} at {path}, where the {} sidecar shares {ours} with it; kept the container's mount, so NCCL in it cannot reach the daemon: mount {theirs} at another path",
                sidecar.name
            )
        })
        .collect()
}

/// Appends the sidecar to `spec.initContainers` unless a container has its name, and records the
/// volumes it mounts.
fn add_sidecar(
    spec: &mut Object<'_>,
    sidecar: &Sidecar<'_>,
    conflicts: &[&str],
    mounted: &mut Vec<&'static str>,
) -> Result<bool, Rejection> {
    if container_names(spec)?
        .iter()
        .any(|name| name == sidecar.name)
    {
        return Ok(false);
    }
    append(spec, "initContainers", sidecar.container_text(conflicts))
        .map_err(|e| e.within("spec"))?;
    mounted.extend(
        sidecar
            .mounts
            .iter()
            .map(|m| m.volume)
            .filter(|v| !conflicts.contains(v)),
    );
    Ok(true)
}

/// Sets the profile's pod annotations where absent, and lists the Multus network once per device
/// of the pod (`devices`); the NICs' annotations not where a DRA claim stands for them
/// (`claimed`).
fn annotate(
    pod: &mut Object<'_>,
    profile: &Profile<'_>,
    nics: Option<u64>,
    devices: u64,
    claimed: bool,
) -> Result<bool, Rejection> {
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
        changed |= set_if_absent(annotations, INTERFACES_ANNOTATION, || {
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
                "a string",
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

/// GKE's multi-network annotation.
const INTERFACES_ANNOTATION: &str = "networking.gke.io/interfaces";

/// The profile's volumes as the pod has them.
struct Volumes<'p> {
    /// Declared by the pod.
    existing: Vec<&'p str>,
    /// Declared by the pod differently, in the profile's order.
    conflicts: Vec<&'p str>,
}

fn read_volumes<'p>(
    spec: &Object<'_>,
    volumes: &'p [Volume<'_>],
) -> Result<Volumes<'p>, Rejection> {
    let mut found = Volumes {
        existing: Vec::new(),
        conflicts: Vec::new(),
    };
    for theirs in raw_items(spec, "volumes").map_err(|e| e.within("spec"))? {
        let name = read::<Loose<Entry<'_>>>(theirs.get())
            .ok()
            .and_then(|named| named.0.name.0);
        let Some(ours) = volumes.iter().find(|v| Some(v.name) == name.as_deref()) else {
            continue;
        };
        found.existing.push(ours.name);
        if !same_volume(ours, theirs.get()) {
            found.conflicts.push(ours.name);
        }
    }
    found.conflicts = volumes
        .iter()
        .map(|v| v.name)
        .filter(|name| found.conflicts.contains(name))
        .collect();
    Ok(found)
}

/// Adds each of the `wanted` volumes that some container or init container now mounts: one of
/// the policy's mounts (`mounted`) or the user's own. Answers whether it added any, and their
/// names.
fn add_volumes<'p>(
    spec: &mut Object<'_>,
    wanted: Vec<&'p Volume<'_>>,
    mounted: &[&str],
) -> Result<(bool, Vec<&'p str>), Rejection> {
    // The user's mounts are read only if some volume is not one the policy mounted.
    let users_mounts = if wanted.iter().all(|v| mounted.contains(&v.name)) {
        Vec::new()
    } else {
        users_mounts(spec)
    };
    let missing = Block::new(
        wanted
            .into_iter()
            .filter(|v| mounted.contains(&v.name) || users_mounts.iter().any(|m| m == v.name)),
    );
    let names = missing.items().map(|v| v.name).collect();
    let added = append(spec, "volumes", missing.into_text()).map_err(|e| e.within("spec"))?;
    Ok((added, names))
}

/// The containers of `spec` that are objects (`gpu_containers` has refused the pod otherwise).
fn containers<'o, 'a>(spec: &'o Object<'a>) -> impl Iterator<Item = &'o Object<'a>> {
    expect_read(spec, "containers", Read::List);
    let containers = match spec.get("containers") {
        Some(Node::List(containers)) => containers.as_slice(),
        _ => &[],
    };
    containers.iter().filter_map(Node::as_object)
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

/// The names of the pod's containers and init containers.
fn container_names<'a>(spec: &Object<'a>) -> Result<Vec<Cow<'a, str>>, Rejection> {
    let mut found = Vec::new();
    for container in containers(spec) {
        found.extend(container.get("name").and_then(text));
    }
    found.extend(names(spec, "initContainers").map_err(|e| e.within("spec"))?);
    Ok(found)
}

/// Seccomp profiles set through the legacy annotations, which the API server checks against
/// the fields: a field that disagrees with them gets the pod refused.
struct SeccompAnnotations {
    pod: bool,
    containers: Vec<String>,
}

impl SeccompAnnotations {
    fn read(pod: &Object<'_>) -> Result<Self, Rejection> {
        let annotations = match object(pod, "metadata")? {
            Some(m) => object(m, "annotations").map_err(|e| e.within("metadata"))?,
            None => None,
        };
        let mut found = SeccompAnnotations {
            pod: false,
            containers: Vec::new(),
        };
        for key in annotations.into_iter().flat_map(Object::keys) {
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
pub(super) mod tests {
    use super::*;
    use crate::ratio::Ratio;
    use crate::settings::config_of;
    use serde_json::{Value, json};

    /// The engine on a pod given as a tree: read through the view, written back on success.
    const GPU_RESOURCE: &str = "nvidia.com/gpu";

    pub(super) fn inject<'a>(
        pod: &mut Value,
        config: &Config<'a>,
    ) -> Result<Outcome<'a>, Rejection> {
        let bytes = crate::merge::tests::payload(pod);
        let mut view = crate::view::read_object(&bytes, &POD)?;
        let outcome = super::inject(&mut view, config)?;
        let mut out = Vec::new();
        view.write(&mut out);
        *pod = serde_json::from_slice(&out).expect("the view writes JSON");
        Ok(outcome)
    }

    fn azure() -> Config<'static> {
        config_of(json!({"azure": {"enabled": true, "rdmaDevicesPerGPU": 2}}))
    }

    fn oci() -> Config<'static> {
        config_of(json!({"oci": {"enabled": true}}))
    }

    pub(super) fn gpu_container(name: &str, gpus: Value) -> Value {
        json!({"name": name, "image": "trainer", "resources": {"limits": {GPU_RESOURCE: gpus}}})
    }

    pub(super) fn pod(containers: Vec<Value>) -> Value {
        json!({"metadata": {"name": "w"}, "spec": {"containers": containers}})
    }

    /// Injects, then checks that a second pass is a no-op.
    pub(super) fn inject_twice<'a>(pod: &mut Value, config: &Config<'a>) -> Outcome<'a> {
        let outcome = inject(pod, config).unwrap();
        let before = pod.clone();
        let again = inject(pod, config).unwrap();
        assert!(!again.changed, "second pass changed the pod");
        assert_eq!(*pod, before);
        outcome
    }

    /// `(kind, namespace, name)` of each reference.
    fn references(outcome: &Outcome<'_>) -> Vec<(&'static str, Option<String>, String)> {
        outcome
            .references
            .iter()
            .map(|r| {
                let (namespace, name) = r.parts();
                (r.kind.kind, namespace.map(str::to_string), name.to_string())
            })
            .collect()
    }

    #[test]
    fn the_references_are_what_the_pod_now_refers_to() {
        // Azure: the topology ConfigMap, in the pod's namespace; a second pass still refers to it.
        let mut p = pod(vec![gpu_container("t", json!(8))]);
        let topology = vec![("ConfigMap", None, "nccl-topo".to_string())];
        assert_eq!(references(&inject(&mut p, &azure()).unwrap()), topology);
        assert_eq!(references(&inject(&mut p, &azure()).unwrap()), topology);
        // A pod volume nccl-topo of its own: the user's, not a reference of the injection.
        let mut p = pod(vec![gpu_container("t", json!(8))]);
        p["spec"]["volumes"] = json!([{"name": "nccl-topo", "emptyDir": {}}]);
        assert_eq!(references(&inject(&mut p, &azure()).unwrap()), []);
        // No topology file: no ConfigMap.
        let mut p = pod(vec![gpu_container("t", json!(8))]);
        let none = config_of(json!({"azure": {"enabled": true, "ncclTopologyConfigMap": ""}}));
        assert_eq!(references(&inject(&mut p, &none).unwrap()), []);
        // OCI: the network once, in its own namespace or the pod's.
        let mut p = pod(vec![gpu_container("t", json!(8))]);
        let network = (
            "NetworkAttachmentDefinition",
            Some("network-operator".to_string()),
            "sriov-net".to_string(),
        );
        assert_eq!(references(&inject(&mut p, &oci()).unwrap()), [network]);
        let mut p = pod(vec![gpu_container("t", json!(8))]);
        let own = config_of(json!({"oci": {"enabled": true, "network": "rdma-vf"}}));
        assert_eq!(
            references(&inject(&mut p, &own).unwrap()),
            [("NetworkAttachmentDefinition", None, "rdma-vf".to_string())]
        );
        // No device, no attachment: no network.
        let mut p = pod(vec![gpu_container("t", json!(8))]);
        let row = json!({"oci": {"enabled": true, "instanceTypes": {"BM.X": {"devicesPerNode": 0, "gpusPerNode": 8}}}});
        p["spec"]["nodeSelector"] = json!({"node.kubernetes.io/instance-type": "BM.X"});
        assert_eq!(references(&inject(&mut p, &config_of(row)).unwrap()), []);
        // Nothing injected, nothing referred to.
        let mut p = pod(vec![json!({"name": "cpu"})]);
        assert_eq!(references(&inject(&mut p, &oci()).unwrap()), []);
        for settings in [
            json!({"aws": {"enabled": true}}),
            json!({"gcp": {"enabled": true}}),
        ] {
            let mut p = pod(vec![gpu_container("t", json!(8))]);
            assert_eq!(
                references(&inject(&mut p, &config_of(settings)).unwrap()),
                []
            );
        }
    }

    #[test]
    fn a_device_claim_refers_to_its_template_in_place_of_the_network() {
        let claimed = |cloud: &str| {
            config_of(
                json!({cloud: {"enabled": true, "deviceClaim": {"template": "nics-{count}"}}}),
            )
        };
        let template = |name: &str| vec![("ResourceClaimTemplate", None, name.to_string())];
        // AWS: 8 GPUs × efaDevicesPerGPU's default of 1 (behaviour.md §1.3), the count in the
        // name; a second pass, whose claim the pod has, still refers to it.
        let mut p = pod(vec![gpu_container("t", json!(8))]);
        assert_eq!(
            references(&inject(&mut p, &claimed("aws")).unwrap()),
            template("nics-8")
        );
        assert_eq!(
            references(&inject(&mut p, &claimed("aws")).unwrap()),
            template("nics-8")
        );
        // OCI (8 VFs per GPU by default, §1.3): the claim stands for the Multus list, so no network
        // is looked for.
        let mut p = pod(vec![gpu_container("t", json!(8))]);
        assert_eq!(
            references(&inject(&mut p, &claimed("oci")).unwrap()),
            template("nics-64")
        );
        // Azure: the topology ConfigMap stays, beside the claim's template.
        let mut p = pod(vec![gpu_container("t", json!(8))]);
        let both = vec![
            ("ConfigMap", None, "nccl-topo".to_string()),
            ("ResourceClaimTemplate", None, "nics-8".to_string()),
        ];
        assert_eq!(
            references(&inject(&mut p, &claimed("azure")).unwrap()),
            both
        );
        // A claim of the fabric's name that the user made from something else is theirs.
        let mut p = pod(vec![gpu_container("t", json!(8))]);
        p["spec"]["resourceClaims"] = json!([{"name": "efa", "resourceClaimName": "mine"}]);
        assert_eq!(references(&inject(&mut p, &claimed("aws")).unwrap()), []);
    }

    #[test]
    fn every_cloud_is_idempotent_on_a_bare_worker() {
        for settings in [
            json!({"aws": {"enabled": true, "efaDevicesPerGPU": 4}}),
            json!({"gcp": {"enabled": true}}),
            json!({"oci": {"enabled": true}}),
        ] {
            let mut p = pod(vec![gpu_container("t", json!("8"))]);
            assert!(inject_twice(&mut p, &config_of(settings)).changed);
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
        assert!(matches!(error, Rejection::Overflow { per_gpu, .. } if per_gpu == Ratio::whole(8)));
    }
}
