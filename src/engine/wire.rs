//! The second step, wire: the mutations, in the order their text is appended to the pod's JSON,
//! which the answer's bytes follow — each GPU container's device, cpu request, env, mounts,
//! hardening and capabilities ([`super::container`]), the pod's DRA claim ([`super::claim`]),
//! the sidecar, the volumes, the annotations. It words no warning: it says what it did, for
//! [`super::judge`], the record and the preflight.

use super::added::{Added, Daemon};
use crate::compute_domain::Channel;
use crate::error::{Error, malformed};
use crate::json::JsonType;
use crate::json::object::{Node, Object};
use crate::json::write::RenderedItems;
use crate::machine;
use crate::merge::{Read, expect_read, object_mut};
use crate::profile::COUNT;

use super::annotations::{Devices, annotate};
use super::channel;
use super::claim::{Claim, Collision};
use super::container::{
    Additions, ContainerDone, GpuContainer, Target, container_name, files_in_mounts,
    inject_container,
};
use super::read::Reading;
use super::sidecar::add_sidecar;

/// What wiring the pod did.
pub(super) struct Wiring<'p, 'a> {
    /// Everything the pod gained.
    pub(super) added: Added<'a>,
    /// The fabric's devices of every GPU container, summed: the users' counts where they set one.
    pub(super) devices: u64,
    /// The devices of each of the profile's rails, summed likewise.
    pub(super) rails: Vec<u64>,
    /// Each GPU container, in the pod's order, as the record names it.
    pub(super) containers: Vec<Wired>,
    /// Those of `containers` (their indexes) that request the device the pod's claim stands for.
    pub(super) twice: Vec<usize>,
    /// Each of the policy's mounts left out because a container mounts another volume at its
    /// path: the container, and that volume's name, ours, and the path.
    pub(super) shadowed: Vec<(String, (String, &'static str, String))>,
    /// The pod's claim of the fabric, where the settings give it one.
    pub(super) claim: Option<Claim<'p>>,
    /// The template the pod's claim is made from, where it is the settings' (for the preflight).
    pub(super) claim_template: Option<String>,
    /// The pod has claims besides the fabric's.
    pub(super) other_claims: bool,
    /// The pod's claim of GPUs made from the template the fabric's claim would be made from:
    /// the pod gets no claim of the fabric.
    pub(super) collision: Option<Collision>,
    /// The volumes the policy mounted, in containers and the sidecar.
    mounted: Vec<&'static str>,
    /// The fabric's networks the pod's own GKE interface list lacks, and how many NICs the
    /// fabric wants.
    pub(super) lacking_interfaces: Option<(Vec<String>, usize)>,
    /// The profile's volumes the pod now declares.
    pub(super) present: Vec<&'static str>,
}

/// One GPU container the policy wired and what it ends up with.
pub(super) struct Wired {
    pub(super) name: String,
    /// Its count of the fabric's device; `None` where the fabric has no device resource (GCP).
    pub(super) devices: Option<u64>,
    /// The pod's DRA claim of the fabric that it names (behaviour.md §3.8), recorded in place of
    /// the count: the claim stands for the devices.
    pub(super) claim: Option<String>,
}

/// Merges the profile `facts` hold into `pod`.
pub(super) fn pod<'p, 'a>(
    pod: &mut Object<'_>,
    facts: &'p Reading<'a>,
) -> Result<Wiring<'p, 'a>, Error> {
    let profile = &facts.profile;
    // Read found the GPU containers in it.
    let spec = object_mut(pod, "spec")?.ok_or_else(|| malformed("spec", JsonType::Object))?;
    // The pod's own claim of the fabric wins over the settings' (behaviour.md §3.10).
    let claim = Claim::of(profile, facts.fabric.name).filter(|_| facts.fabric_claim.is_none());
    let mut wiring = each_gpu_container(spec, facts, claim)?;
    add_claim(spec, facts, &mut wiring)?;
    add_channel(spec, facts, &mut wiring)?;
    if let Some(sidecar) = &profile.sidecar {
        let skipped = &facts.volumes.skipped;
        if add_sidecar(spec, sidecar, skipped, &mut wiring.mounted)? {
            wiring.added.sidecar = Some(Daemon {
                name: sidecar.name,
                capabilities: sidecar.capabilities,
            });
        }
    }
    let (added, present) = facts
        .volumes
        .add_missing(spec, &profile.volumes, &wiring.mounted)?;
    wiring.added.volumes = added;
    wiring.present = present;
    // Through DRA, whether the pod gets its claim or not.
    let claimed =
        wiring.claim.is_some() || wiring.collision.is_some() || facts.fabric_claim.is_some();
    let devices = Devices {
        nics: facts.node.nics,
        device: wiring.devices,
        rails: &wiring.rails,
        namespace: facts.namespace.as_deref(),
    };
    let annotated = annotate(pod, profile, &devices, claimed)?;
    wiring.added.annotations = annotated.added;
    wiring.lacking_interfaces = annotated.lacking;
    wiring.added.containers.retain(|gained| !gained.is_empty());
    Ok(wiring)
}

/// Applies the per-container parts to every GPU container, the profile's additions rendered as
/// JSON text once and copied into each.
fn each_gpu_container<'p, 'a>(
    spec: &mut Object<'_>,
    facts: &'p Reading<'a>,
    claim: Option<Claim<'p>>,
) -> Result<Wiring<'p, 'a>, Error> {
    let additions = additions(facts, claim.is_some());
    let mut wiring = Wiring::new(facts, claim);
    expect_read(spec, "containers", Read::List);
    let Some(Node::List(containers)) = spec.get_mut("containers") else {
        return Err(malformed("spec.containers", JsonType::List));
    };
    for (
        &GpuContainer {
            index,
            gpus,
            uncounted,
            fabric_claim,
            ..
        },
        env_from,
    ) in facts.gpu_containers.iter().zip(&facts.env_from)
    {
        let at = || format!("spec.containers[{index}]");
        // Read refused a pod with a container that is not an object.
        let Some(Node::Object(container)) = containers.get_mut(index) else {
            return Err(malformed(&at(), JsonType::Object));
        };
        let name = container_name(container, index);
        let seccomp_set = facts.seccomp.set_for(&name);
        let gpus = (!uncounted).then_some(gpus);
        let target = Target {
            name: &name,
            gpus,
            seccomp_set,
            env_given: &env_from.given,
        };
        let done = inject_container(container, &target, &additions).map_err(|e| e.within(&at()))?;
        let claim = facts.fabric_claim.clone().filter(|_| fabric_claim);
        wiring.tally(name, done, claim, facts.profile.device.is_some());
    }
    Ok(wiring)
}

/// The profile's per-container additions for `facts`' pod; `claimed`: its device comes through
/// the settings' claim.
fn additions<'p, 'a>(facts: &'p Reading<'a>, claimed: bool) -> Additions<'p, 'a> {
    let profile = &facts.profile;
    let skipped = &facts.volumes.skipped;
    Additions {
        profile,
        // No device where the pod's own claim brings the fabric.
        count: facts
            .placement
            .as_ref()
            .map(|p| p.count)
            .filter(|_| facts.fabric_claim.is_none()),
        claimed,
        env: RenderedItems::new(profile.env.iter()),
        mounts: RenderedItems::new(
            profile
                .mounts
                .iter()
                .filter(|m| !skipped.contains(&m.volume)),
        ),
        files: files_in_mounts(profile),
    }
}

impl<'p, 'a> Wiring<'p, 'a> {
    /// Nothing wired yet.
    fn new(facts: &Reading<'a>, claim: Option<Claim<'p>>) -> Self {
        Wiring {
            added: Added::default(),
            devices: 0,
            rails: vec![0; facts.profile.rails.len()],
            containers: Vec::with_capacity(facts.gpu_containers.len()),
            twice: Vec::new(),
            shadowed: Vec::new(),
            claim,
            claim_template: None,
            other_claims: false,
            collision: None,
            mounted: Vec::new(),
            lacking_interfaces: None,
            present: Vec::new(),
        }
    }

    /// Adds what wiring the container `name` did to the pod's sums; `claim` is the pod's own
    /// fabric claim where it names it, `device` whether the profile has a device to count.
    fn tally(
        &mut self,
        name: String,
        done: ContainerDone<'a>,
        claim: Option<String>,
        device: bool,
    ) {
        self.mounted.extend(&done.gained.mounts);
        self.added.containers.push(done.gained);
        if done.twice {
            self.twice.push(self.containers.len());
        }
        self.devices = self.devices.saturating_add(done.devices);
        for (sum, n) in self.rails.iter_mut().zip(&done.rails) {
            *sum = sum.saturating_add(*n);
        }
        let shadowed = done.shadowed.into_iter().map(|s| (name.clone(), s));
        self.shadowed.extend(shadowed);
        self.containers.push(Wired {
            name,
            devices: device.then_some(done.devices),
            claim,
        });
    }
}

/// Adds the claim of the pod's ComputeDomain channel, where it joins one (behaviour.md §3.11).
fn add_channel(
    spec: &mut Object<'_>,
    facts: &Reading<'_>,
    wiring: &mut Wiring<'_, '_>,
) -> Result<(), Error> {
    let Channel::Join(domain) = &facts.channel else {
        return Ok(());
    };
    let fabric_claim = wiring.added.claims.first().map(String::as_str);
    let joined = channel::join(spec, domain, &facts.gpu_containers, fabric_claim)?;
    for (gained, named) in wiring.added.containers.iter_mut().zip(&joined.named_in) {
        if *named {
            gained.claims.push(joined.name.clone());
        }
    }
    wiring.added.claims.push(joined.name);
    wiring.added.channel = Some(domain.clone());
    Ok(())
}

/// Adds the pod's claim of the fabric, made for its device count, where the settings give it
/// one, and names it in every GPU container's record.
fn add_claim(
    spec: &mut Object<'_>,
    facts: &Reading<'_>,
    wiring: &mut Wiring<'_, '_>,
) -> Result<(), Error> {
    let count = match facts.profile.device {
        Some(_) => wiring.devices,
        None => Claim::nics(&facts.profile, facts.node.nics),
    };
    // A claim counted for no devices is none, as a count of 0 is no request: its GPUs were not
    // counted (behaviour.md §3.10), and no template is made for 0.
    wiring.claim = wiring
        .claim
        .take()
        .filter(|claim| count > 0 || !claim.setting.template.contains(COUNT));
    let Some(claim) = &wiring.claim else {
        wiring.other_claims = machine::has_claims(spec);
        return Ok(());
    };
    let added = match claim.add(spec, &facts.gpu_containers, count, &facts.gpu_claims)? {
        Ok(added) => added,
        Err(collision) => {
            // No claim: the containers have none of the fabric's devices.
            wiring.collision = Some(collision);
            wiring.claim = None;
            wiring.other_claims = true;
            wiring.devices = 0;
            for wired in wiring.containers.iter_mut().filter(|w| w.devices.is_some()) {
                wired.devices = Some(0);
            }
            return Ok(());
        }
    };
    wiring.added.claims.extend(added.pod_claim);
    for (gained, claimed) in wiring.added.containers.iter_mut().zip(&added.named_in) {
        if *claimed {
            gained.claims.push(added.name.clone());
        }
    }
    wiring.other_claims = added.others;
    wiring.claim_template = added.template;
    for wired in &mut wiring.containers {
        wired.claim = Some(added.name.clone());
    }
    Ok(())
}
