//! The third step, judge: the warnings, worded from what [`super::read`] found and
//! [`super::wire`] did, in the order the answer gives them — the machine's, a claim the machine's
//! fabric cannot have, the conflicting volumes, the `envFrom` sources whose keys are not known,
//! the pod's own GKE interfaces, the device counts', a device asked for twice, a GPU claim in the
//! fabric claim's place, the nodes too small, a pod smaller than its node, a missing
//! ComputeDomain claim, the sidecar's.
//! Apart from the mutations so that each list reads at once; none of them changes the pod.

use crate::cluster::Mode;
use crate::compute_domain::Channel;
use crate::error::{Error, join};
use crate::placement;
use crate::profile::{Sidecar, Source, Volume};
use crate::settings::Config;

use super::read::{Declined, Reading, unread_warning};
use super::wire::Wiring;

/// The warnings of a pod the policy acts on that gets nothing; with `preflight: reject`, the
/// refusal of a pod whose claims could not be read (behaviour.md §3.10).
pub(super) fn declined(declined: Declined, config: &Config<'_>) -> Result<Vec<String>, Error> {
    Ok(match declined {
        Declined::Unread(unread) => {
            let mut warnings = unread
                .iter()
                .map(|(claim, object, why)| unread_warning(claim, object, why, true));
            if config.preflight == Mode::Reject {
                let first = warnings.next().unwrap_or_default();
                return Err(Error::Preflight {
                    message: format!("{first} (preflight: reject refuses such a pod)"),
                });
            }
            warnings.collect()
        }
        Declined::NoGpus { claims } if claims && !config.device_classes.gpu.is_empty() => {
            let resources: Vec<&str> = config.gpu_resources.iter().map(|r| r.as_ref()).collect();
            let classes: Vec<&str> = config
                .device_classes
                .gpu
                .iter()
                .map(|c| c.as_ref())
                .collect();
            vec![format!(
                "pod opted in to multi-node networking but none of its claims asks for a device of class {}, and no container requests {}; nothing was injected",
                join(&classes, " or "),
                join(&resources, " or ")
            )]
        }
        Declined::NoGpus { claims } => {
            let resources: Vec<&str> = config.gpu_resources.iter().map(|r| r.as_ref()).collect();
            // GPUs through DRA: a claim's devices cannot be counted at admission (behaviour.md
            // §3.8).
            let (through, end) = if claims {
                (
                    " takes its GPUs through spec.resourceClaims and",
                    ": the policy counts GPUs only from those resources, not from a claim's devices, so nothing was injected; request the GPUs as one of them, or wire the fabric in the pod itself",
                )
            } else {
                ("", "; nothing was injected")
            };
            vec![format!(
                "pod opted in to multi-node networking but{through} no container requests {}{end}",
                join(&resources, " or ")
            )]
        }
        Declined::Windows => vec![
            "pod opted in to multi-node networking but is a Windows pod (spec.os.name); nothing was injected".to_string(),
        ],
        Declined::NoFabric(warnings) => warnings,
    })
}

/// The warnings of a pod the policy wired.
pub(super) fn warnings(
    facts: &Reading<'_>,
    config: &Config<'_>,
    wiring: &Wiring<'_, '_>,
) -> Vec<String> {
    let profile = &facts.profile;
    let mut warnings = facts.claim_warnings.clone();
    warnings.extend(facts.node.warnings.iter().cloned());
    warnings.extend(claim_elsewhere(facts, config));
    for volume in facts.volumes.conflicts() {
        warnings.push(format!(
            "pod volume {volume:?} differs from the one multi-node networking needs; kept it and did not mount it"
        ));
    }
    warnings.extend(unknown_env_sources(facts, wiring));
    if let (Some((missing, nics)), Some(interfaces)) =
        (&wiring.lacking_interfaces, &profile.interfaces)
    {
        warnings.push(format!(
            "multi-node networking: the pod's own annotation {} lacks the fabric's networks {}; it is kept, but the env the policy adds expects {nics} NICs on the fabric's networks: add them to it, or remove it to have the policy write it",
            interfaces.key,
            missing.join(", ")
        ));
    }
    if let Some(placement) = &facts.placement {
        warnings.extend(placement.warnings.iter().cloned());
    }
    if let (Some(claim), Some(device)) = (&wiring.claim, &profile.device) {
        for &at in &wiring.twice {
            warnings.push(format!(
                "multi-node networking: container {} requests {}, which the pod's DRA claim {} stands for; the pod asks for its fabric twice and may never be scheduled: remove the request",
                wiring.containers[at].name, device.resource, claim.name
            ));
        }
    }
    if let (Some(collision), Some(claim)) = (&wiring.collision, &profile.claim) {
        let fabric = facts.fabric.name;
        warnings.push(format!(
            "multi-node networking: the pod's claim {} is made from ResourceClaimTemplate {}, which holds GPUs and no {fabric} device; {}.template gives that same name for this pod's {fabric} claim, so no {fabric} claim was added (one from that template would give the pod more GPUs) and the pod has no {fabric} devices: give the GPU template another name",
            collision.claim, collision.template, claim.setting
        ));
    }
    if let (Some(placement), Some(device)) = (&facts.placement, &profile.device) {
        let over = placement::over_capacity(placement, &device.resource, wiring.devices);
        warnings.extend(over);
    }
    warnings.extend(smaller_than_the_node(facts));
    match &facts.channel {
        Channel::Without(warning) => warnings.push(warning.clone()),
        Channel::Untouched
            if config.compute_domain.is_none()
                && facts.node.nvlink_domain
                && !wiring.other_claims =>
        {
            warnings.push(NO_CHANNEL.to_string());
        }
        _ => {}
    }
    if let Some(sidecar) = profile
        .sidecar
        .as_ref()
        .filter(|_| wiring.added.sidecar.is_some())
    {
        warnings.extend(sidecar.outdated_probe());
        warnings.extend(unshared(sidecar, &profile.volumes, &wiring.shadowed));
    }
    warnings
}

/// The warnings for the `envFrom` sources whose keys are not known, of each GPU container that
/// gained env they could give (behaviour.md §4): the container's `env` wins over them.
fn unknown_env_sources(facts: &Reading<'_>, wiring: &Wiring<'_, '_>) -> Vec<String> {
    let mut warnings = Vec::new();
    // What the containers gained is in their order, without those that gained nothing.
    let mut gained = wiring.added.containers.iter().peekable();
    for (wired, env_from) in wiring.containers.iter().zip(&facts.env_from) {
        let Some(gained) = gained.next_if(|c| c.name == wired.name) else {
            continue;
        };
        let gained = || gained.env.iter().map(|var| var.name.as_ref());
        let said = env_from
            .unknown
            .iter()
            .filter_map(|u| u.warning(&wired.name, gained()));
        warnings.extend(said);
    }
    warnings
}

/// A multi-node NVLink machine's pod without any claim, where the settings give no `computeDomain`:
/// NCCL's default turns MNNVL on, and stops at init without a channel (behaviour.md §3.11).
const NO_CHANNEL: &str = "multi-node networking: the pod's machine is part of a multi-node NVLink domain, and the pod has no spec.resourceClaims: NCCL stops at init unless the job's containers hold an IMEX channel; give its GPU containers the claim of its job's ComputeDomain channel (resource.nvidia.com/v1beta1), or set computeDomain in the policy's settings to have the policy add it (README, \"Multi-node NVLink\")";

/// The settings give a fabric a DRA claim, but the pod's machine gets another, which has none.
fn claim_elsewhere(facts: &Reading<'_>, config: &Config<'_>) -> Option<String> {
    if facts.profile.claim.is_some() || facts.node.rows.is_empty() {
        return None;
    }
    let claimed = config.cloud.overlay.claimed()?;
    Some(format!(
        "multi-node networking: the settings give the {} fabric a DRA claim, but this pod's machine gets {}, which no DRA driver serves; it is wired as without DRA, which cannot work on nodes whose NICs a DRA driver holds",
        claimed.name, facts.fabric.name
    ))
}

/// The fabric needs the whole node, and the pod asks for fewer GPUs than the node has.
fn smaller_than_the_node(facts: &Reading<'_>) -> Option<String> {
    let whole = facts.profile.whole_node?;
    let gpus = facts
        .gpu_containers
        .iter()
        .fold(0u64, |sum, c| sum.saturating_add(c.gpus));
    // The resource the pod's GPUs are asked for by, for messages: the first container's.
    let gpu_resource = facts
        .gpu_containers
        .first()
        .map_or("GPUs", |c| c.resource.as_str());
    let node = facts.node.gpus.unwrap_or(whole.gpus);
    (gpus < node).then(|| {
        format!(
            "multi-node networking: {}; this pod requests {gpus} {gpu_resource} in all, so it cannot use the node as intended",
            whole.why(node)
        )
    })
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
                .any(|v| v.name == ours && matches!(v.source, Source::Scratch))
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
