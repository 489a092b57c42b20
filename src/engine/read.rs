//! The first step, read: what the pod has that decides its injection — its GPU containers
//! ([`super::gpus`]: GPU resources and claims of GPUs), the machine its spec names (and so the
//! fabric and its profile), the profile's volumes it declares already, its seccomp profiles, its
//! device counts — or why it gets nothing. Nothing here changes
//! the pod (it is borrowed shared), so the steps after it parse nothing more than they touch.
//! The reads run in a fixed order: a pod malformed in several places is refused for the first.

use std::borrow::Cow;

use crate::claims::{PodClaim, PodClaims};
use crate::clouds::Fabric;
use crate::cluster::Cluster;
use crate::compute_domain::{self, Channel, MNNVL_ENABLE};
use crate::env_from::{self, EnvFrom};
use crate::error::Error;
use crate::json::object::Object;
use crate::layers::apply_env;
use crate::machine::{self, NodeFacts};
use crate::merge::{names, object, text};
use crate::placement::{self, Placement};
use crate::profile::{DeviceCount, EnvChange, Profile};
use crate::settings::Config;

use super::container::{GpuContainer, container_name, containers};
use super::gpus;
use super::volumes::Volumes;

const POD_SECCOMP_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
const CONTAINER_SECCOMP_ANNOTATION: &str = "container.seccomp.security.alpha.kubernetes.io/";

/// What a pod the policy wires has.
pub(super) struct Reading<'a> {
    /// Never empty.
    pub(super) gpu_containers: Vec<GpuContainer>,
    pub(super) node: NodeFacts<'a>,
    /// The fabric the machine decides.
    pub(super) fabric: &'static Fabric,
    /// The fabric's injection under the settings' and the machine's layers.
    pub(super) profile: Profile<'a>,
    pub(super) volumes: Volumes,
    pub(super) seccomp: Seccomp,
    /// What the pod's instance types decide for its devices, where the profile has a device.
    pub(super) placement: Option<Placement>,
    /// `metadata.namespace`, which the API server sets from the request before admission.
    pub(super) namespace: Option<String>,
    /// The pod's own claim of the fabric (behaviour.md §3.10): it stands for the device
    /// requests, the policy's claim and the NICs' annotations.
    pub(super) fabric_claim: Option<String>,
    /// The warnings of its claims: those that could not be read, and GPUs that could not be
    /// counted.
    pub(super) claim_warnings: Vec<String>,
    /// Its ComputeDomain's channel (behaviour.md §3.11).
    pub(super) channel: Channel,
    /// Its claims read as holding GPUs and no device of the fabric: never the fabric's claim
    /// (behaviour.md §3.8).
    pub(super) gpu_claims: Vec<String>,
    /// What each GPU container, in `gpu_containers`' order, takes through `envFrom` of the env
    /// the profile would add (behaviour.md §4).
    pub(super) env_from: Vec<EnvFrom>,
}

/// Why a pod the policy acts on gets nothing (behaviour.md §2, §3.7); [`super::judge`] says it.
pub(super) enum Declined {
    /// No container requests GPUs; `claims`: the pod has `spec.resourceClaims`.
    NoGpus {
        claims: bool,
    },
    /// The pod's GPUs come only through claims, and some claim could not be read: its name,
    /// the object it is made from, and why.
    Unread(Vec<(String, String, String)>),
    Windows,
    /// The machine decides no fabric; its warnings say why.
    NoFabric(Vec<String>),
}

/// Reads the pod for `config`'s injection; `cluster` holds the request's namespace and the host
/// its ComputeDomain is read through.
pub(super) fn pod<'a>(
    pod: &Object<'_>,
    config: &Config<'a>,
    claims: &PodClaims<'_>,
    cluster: &Cluster<'_>,
) -> Result<Result<Reading<'a>, Declined>, Error> {
    let mut seccomp = Seccomp::annotated(pod)?;
    let namespace = namespace_of(pod)?;
    let (spec, gpus) = match gpu_containers_of(pod, config, claims)? {
        Ok(found) => found,
        Err(declined) => return Ok(Err(declined)),
    };
    let gpus::Gpus {
        containers: mut gpu_containers,
        fabric_claim,
        unread,
        ..
    } = gpus;

    // NCCL and every fabric here are Linux-only, and the API server forbids capabilities,
    // allowPrivilegeEscalation and seccomp in Windows pods.
    let os = object(spec, "os").map_err(|e| e.within("spec"))?;
    if os.and_then(|os| os.get("name")).and_then(text).as_deref() == Some("windows") {
        return Ok(Err(Declined::Windows));
    }

    // The machine decides the fabric and changes the injection where the pod names it.
    let mut node = machine::of(&config.cloud, spec, fabric_claim.is_some())?;
    let Some(fabric) = node.fabric else {
        return Ok(Err(Declined::NoFabric(std::mem::take(&mut node.warnings))));
    };
    let mut profile = config.cloud.profile(fabric, &node.overlay);

    let mut volumes = Volumes::read(spec, &profile.volumes)?;
    // A DRA-only machine's pod does without some of the fabric's volumes (behaviour.md §3.8).
    if profile.claim.is_some() || fabric_claim.is_some() {
        volumes.skip(node.dra_without);
    }
    let mut claim_warnings: Vec<String> = unread
        .iter()
        .map(|(claim, object, why)| unread_warning(claim, object, why, false))
        .collect();
    // `All` is the node's GPUs: the machine's, else the fabric's whole node.
    let node_gpus = node.gpus.or(profile.whole_node.map(|w| w.gpus));
    let wired_by_us = fabric_claim.is_none();
    claim_warnings.extend(count_all_claims(
        spec,
        &mut gpu_containers,
        node_gpus,
        &profile,
        wired_by_us,
    ));
    // Not read where an annotation has decided already.
    if !seccomp.pod {
        seccomp.pod = Seccomp::in_spec(spec)?;
    }
    let channel = channel_of((pod, spec), config, &node, claims, cluster, &mut profile)?;
    let env_from = env_from(spec, &gpu_containers, &profile, cluster)?;
    // Where the pod may run decides its device count.
    let placement = profile
        .device
        .as_ref()
        .map(|device| placement::place(&config.cloud, device, &node.rows));

    Ok(Ok(Reading {
        gpu_containers,
        node,
        fabric,
        profile,
        volumes,
        seccomp,
        placement,
        namespace,
        fabric_claim,
        claim_warnings,
        channel,
        gpu_claims: gpu_claims(claims),
        env_from,
    }))
}

/// The ComputeDomain channel of `pod` (with its `spec`), where the settings give
/// `computeDomain` and no candidate machine is known without multi-node NVLink (behaviour.md
/// §3.11); a pod that cannot have it gets `NCCL_MNNVL_ENABLE=0` in `profile`'s env.
fn channel_of(
    (pod, spec): (&Object<'_>, &Object<'_>),
    config: &Config<'_>,
    node: &NodeFacts<'_>,
    claims: &PodClaims<'_>,
    cluster: &Cluster<'_>,
    profile: &mut Profile<'_>,
) -> Result<Channel, Error> {
    let channel = match &config.compute_domain {
        Some(setting) if !node.without_nvlink => {
            compute_domain::channel(setting, pod, spec, claims, cluster)?
        }
        _ => Channel::Untouched,
    };
    if let Channel::Without(_) = channel {
        let off = EnvChange {
            name: Cow::Borrowed(MNNVL_ENABLE),
            value: Some(Cow::Borrowed("0")),
        };
        apply_env(&mut profile.env, &[off]);
    }
    Ok(channel)
}

/// The pod's spec and its GPU containers, or why it gets nothing: no GPU container, or GPUs
/// only through claims of which some could not be read (behaviour.md §3.10: no guess).
fn gpu_containers_of<'o, 'a>(
    pod: &'o Object<'a>,
    config: &Config<'_>,
    claims: &PodClaims<'_>,
) -> Result<Result<(&'o Object<'a>, gpus::Gpus), Declined>, Error> {
    let spec = object(pod, "spec")?;
    let gpus = match spec {
        Some(spec) => Some(gpus::count(spec, config, claims)?),
        None => None,
    };
    if let Some(gpus) = gpus
        .as_ref()
        .filter(|g| !g.from_resources && !g.unread.is_empty())
    {
        return Ok(Err(Declined::Unread(gpus.unread.clone())));
    }
    Ok(match (spec, gpus) {
        (Some(spec), Some(gpus)) if !gpus.containers.is_empty() => Ok((spec, gpus)),
        (spec, _) => {
            let claims = spec.is_some_and(machine::has_claims);
            Err(Declined::NoGpus { claims })
        }
    })
}

/// Gives each container that claims every GPU of its node (`allocationMode: All`) the node's
/// GPUs, `node_gpus`; where they are not known, marks it uncounted and answers the warning for
/// it, where the profile counts a device per GPU that the policy requests (`wired_by_us`).
fn count_all_claims(
    spec: &Object<'_>,
    gpu_containers: &mut [GpuContainer],
    node_gpus: Option<u64>,
    profile: &Profile<'_>,
    wired_by_us: bool,
) -> Vec<String> {
    let per_gpu = matches!(
        profile.device.as_ref().map(|d| d.count),
        Some(DeviceCount::PerGpu(_))
    );
    let mut warnings = Vec::new();
    for gpu in gpu_containers {
        let Some((all, claim)) = &gpu.all else {
            continue;
        };
        if let Some(node) = node_gpus {
            gpu.gpus = gpu.gpus.saturating_add(all.saturating_mul(node));
            continue;
        }
        gpu.uncounted = true;
        let Some(device) = profile.device.as_ref().filter(|_| per_gpu && wired_by_us) else {
            continue;
        };
        let name = containers(spec).nth(gpu.index).map_or_else(
            || format!("#{}", gpu.index),
            |c| container_name(c, gpu.index),
        );
        warnings.push(format!(
            "multi-node networking: container {name} claims every GPU of its node (allocationMode: All in claim {claim}), and the pod names no machine whose GPUs the policy knows: it gets no {} request; name the machine (node.kubernetes.io/instance-type) or give its row gpusPerNode under {}.instanceTypes",
            device.resource, device.cloud
        ));
    }
    warnings
}

/// What each GPU container takes through `envFrom` of the profile's env it has no entry for:
/// read only for a container that has `envFrom`, where the profile has env.
fn env_from(
    spec: &Object<'_>,
    gpu_containers: &[GpuContainer],
    profile: &Profile<'_>,
    cluster: &Cluster<'_>,
) -> Result<Vec<EnvFrom>, Error> {
    let mut found = vec![EnvFrom::default(); gpu_containers.len()];
    if profile.env.is_empty() {
        return Ok(found);
    }
    // The GPU containers are in the pod's order: one walk pairs them with theirs.
    let mut gpus = gpu_containers.iter().zip(&mut found).peekable();
    for (index, container) in containers(spec).enumerate() {
        let Some((gpu, found)) = gpus.next_if(|(gpu, _)| gpu.index == index) else {
            continue;
        };
        if container.get("envFrom").is_none_or(|from| from.is_null()) {
            continue;
        }
        let at = |e: Error| e.within(&format!("spec.containers[{}]", gpu.index));
        let has = names(container, "env").map_err(at)?;
        let wanted: Vec<&str> = profile
            .env
            .iter()
            .map(|var| var.name.as_ref())
            .filter(|name| !has.iter().any(|h| h == name))
            .collect();
        *found = env_from::read(container, &wanted, cluster);
    }
    Ok(found)
}

/// The names of the pod's claims read as holding GPUs and no device of the fabric.
fn gpu_claims(claims: &PodClaims<'_>) -> Vec<String> {
    let gpus_only = |claim: &&PodClaim<'_>| {
        claim
            .devices
            .is_ok_and(|devices| devices.has_gpus() && !devices.fabric)
    };
    claims
        .claims
        .iter()
        .filter(gpus_only)
        .map(|claim| claim.name.to_string())
        .collect()
}

/// The pod's `metadata.namespace`, where it is a string.
fn namespace_of(pod: &Object<'_>) -> Result<Option<String>, Error> {
    let metadata = object(pod, "metadata")?;
    let namespace = metadata.and_then(|m| m.get("namespace")).and_then(text);
    Ok(namespace.map(Cow::into_owned))
}

/// The warning about a claim whose GPUs could not be counted, `declined` where the pod is not
/// wired for it.
pub(super) fn unread_warning(claim: &str, object: &str, why: &str, declined: bool) -> String {
    let (what, then) = if declined {
        (
            "multi-node networking not injected",
            "the pod takes its GPUs only through DRA claims, and the policy does not guess them: let it read the claims (README, \"GPUs through DRA\") or request the GPUs as a resource",
        )
    } else {
        (
            "multi-node networking",
            "its GPUs are not counted, and the pod is wired for the GPUs its containers request as resources",
        )
    };
    format!("{what}: could not read the pod's claim {claim} ({object}): {why}; {then}")
}

/// The seccomp profiles the pod sets: a GPU container that has one, by field or by the legacy
/// annotations, gets none of the policy's. The API server checks the annotations against the
/// fields: a field that disagrees with them gets the pod refused.
pub(super) struct Seccomp {
    /// For the whole pod: `spec.securityContext.seccompProfile` or the pod's annotation.
    pub(super) pod: bool,
    /// The containers the annotations name.
    containers: Vec<String>,
}

impl Seccomp {
    /// Whether container `name` has a seccomp profile already.
    pub(super) fn set_for(&self, name: &str) -> bool {
        self.pod || self.containers.iter().any(|c| c == name)
    }

    /// Whether the pod's `spec.securityContext` sets a seccomp profile.
    fn in_spec(spec: &Object<'_>) -> Result<bool, Error> {
        Ok(object(spec, "securityContext")
            .map_err(|e| e.within("spec"))?
            .and_then(|sc| sc.get("seccompProfile"))
            .is_some_and(|p| !p.is_null()))
    }

    /// What the legacy annotations set.
    fn annotated(pod: &Object<'_>) -> Result<Self, Error> {
        let annotations = match object(pod, "metadata")? {
            Some(m) => object(m, "annotations").map_err(|e| e.within("metadata"))?,
            None => None,
        };
        let mut found = Seccomp {
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
