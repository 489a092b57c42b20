//! A multi-node NVLink pod's IMEX channel (behaviour.md §3.11): one pod claim made from its
//! ComputeDomain's channel template, under a name none of the pod's claims has, named in every GPU
//! container and in no other. Added after the fabric's claim, so that the rest of the answer is
//! what it is without the channel.

use std::borrow::Cow;

use crate::compute_domain::CLAIM_NAME;
use crate::compute_domain::Domain;
use crate::error::Error;
use crate::json::object::Object;
use crate::merge::{append, names};

use super::claim::{name_in_containers, pod_claim_item};
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
    let name = free_name(&taken, fabric_claim);
    append(
        spec,
        "resourceClaims",
        pod_claim_item(&name, &domain.template),
    )
    .map_err(|e| e.within("spec"))?;
    let named_in = name_in_containers(spec, gpu_containers, &name)?;
    Ok(Joined { name, named_in })
}

/// [`CLAIM_NAME`], else the first of `compute-domain-channel-2`, `-3`, … that no claim has: one
/// of the first `taken.len() + 2` names is free. Each is a DNS label, as a pod claim's name must be.
fn free_name(taken: &[Cow<'_, str>], fabric_claim: Option<&str>) -> String {
    let free = |name: &str| fabric_claim != Some(name) && !taken.iter().any(|t| t == name);
    if free(CLAIM_NAME) {
        return CLAIM_NAME.to_string();
    }
    (2..)
        .map(|n| format!("{CLAIM_NAME}-{n}"))
        .find(|name| free(name))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_is_the_vendors_unless_a_claim_has_it() {
        let taken = |names: &[&'static str]| -> Vec<Cow<'static, str>> {
            names.iter().map(|n| Cow::Borrowed(*n)).collect()
        };
        assert_eq!(free_name(&taken(&["efa"]), None), CLAIM_NAME);
        assert_eq!(
            free_name(&taken(&[CLAIM_NAME]), None),
            "compute-domain-channel-2"
        );
        assert_eq!(
            free_name(
                &taken(&["compute-domain-channel-2"]),
                Some("compute-domain-channel")
            ),
            "compute-domain-channel-3"
        );
    }
}
