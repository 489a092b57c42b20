//! A multi-node NVLink pod's IMEX channel (behaviour.md §3.11): one pod claim made from its
//! ComputeDomain's channel template, under a name none of the pod's claims has, named in every GPU
//! container and in no other. Added after the fabric's claim, so that the rest of the answer is
//! what it is without the channel.

use crate::compute_domain::CLAIM_NAME;
use crate::compute_domain::Domain;
use crate::error::Error;
use crate::json::object::Object;
use crate::merge::{append, names};

use super::claim::{free_name, name_in_containers, pod_claim_item};
use super::container::GpuContainer;

/// What [`join`] added: the claim's name, and for each GPU container whether it gained it.
pub(super) struct Joined {
    pub(super) name: String,
    pub(super) named_in: Vec<bool>,
}

/// Adds the claim of `domain`'s channel to `spec`, named apart from the pod's claims and from
/// `fabric_claim`, the fabric's claim the policy has just added.
pub(super) fn join(
    spec: &mut Object<'_>,
    domain: &Domain,
    gpu_containers: &[GpuContainer],
    fabric_claim: Option<&str>,
) -> Result<Joined, Error> {
    let taken = names(spec, "resourceClaims").map_err(|e| e.within("spec"))?;
    let taken: Vec<&str> = taken.iter().map(|name| name.as_ref()).collect();
    let name = free_name(CLAIM_NAME, &taken, fabric_claim);
    append(
        spec,
        "resourceClaims",
        pod_claim_item(&name, &domain.template),
    )
    .map_err(|e| e.within("spec"))?;
    let named_in = name_in_containers(spec, gpu_containers, &name)?;
    Ok(Joined { name, named_in })
}
