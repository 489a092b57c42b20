//! The fabric a GPU node offers, read from its allocatable extended resources: which resource,
//! and what its count means, which decides how a pod asks for it (behaviour.md §3.5, §3.9).
//!
//! - **Dedicated** devices, a count of the order of the node's NICs (EFA interfaces, SR-IOV
//!   virtual functions, whole NICs): requested per GPU, `devicesPerNode`/`gpusPerNode`.
//! - A **shared** pool (the RDMA shared device plugin's `rdmaHcaMax` slots, 63 or 1000), or a
//!   count that only says "has the fabric" (CoreWeave's `rdma/ib: 1` on an 8-GPU node): once per
//!   container.
//! - **Rails**: one resource per rail (Launch Kit's `sriov_resource_rail_N`, Spectrum-X's
//!   `railN`), 1 of each.

use crate::node::{GPU_RESOURCES, Node};

/// The known device resources, the order in which one is preferred when a node offers several:
/// the clouds' device plugins, then the Network Operator's names.
pub const KNOWN: [&str; 8] = [
    "vpc.amazonaws.com/efa",
    "rdma/ib",
    "nvidia.com/rdma-vf",
    "nvidia.com/sriov_rdma_vf",
    "nvidia.com/hostdev",
    "nvidia.com/rdma_ib",
    "nvidia.com/mlnxnics",
    "rdma/shared_ib",
];

/// More devices than any node has NICs: the count is a pool's slots, not NICs. NVIDIA's DGX and
/// HGX nodes have 8 compute NICs and a few storage ones, OCI's dual-port shapes 16 virtual
/// functions, AWS's largest 32 EFA interfaces (VENDOR-FACTS: p5.48xlarge); the RDMA shared device
/// plugin's pool has 63 slots by default (`rdmaHcaMax`, Azure/aks-rdma-infiniband and the Network
/// Operator's examples), whatever its resource's name (`rdma/shared_ib`, or an OKE cluster's
/// `nvidia.com/mlnxnics`).
pub const MAX_DEDICATED: u64 = 32;

/// Words that mark an extended resource's name as a fabric's, for names not in [`KNOWN`].
const WORDS: [&str; 10] = [
    "rdma", "sriov", "hostdev", "ib", "vf", "efa", "roce", "nic", "nics", "hca",
];

/// Resources that look like a fabric's to [`WORDS`] but are not devices of one: GKE's networks
/// (read apart, as GCP's fabric), DRA's per-class resources, GPUs.
const NOT_FABRIC: [&str; 4] = [
    "networking.gke.io.networks/",
    "deviceclass.resource.kubernetes.io/",
    "nvidia.com/gpu",
    "nvidia.com/mig-",
];

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fabric {
    /// No device resource at all: the HCAs are in every container already (Nebius), host
    /// networking (Oracle's GB200), or the fabric comes through DRA.
    None,
    Dedicated {
        resource: String,
        devices: u64,
    },
    Shared {
        resource: String,
        count: u64,
    },
    Rails(Vec<String>),
}

/// What a node offers: the fabric chosen, and the other fabric resources it also advertises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    pub fabric: Fabric,
    pub others: Vec<String>,
}

impl Fabric {
    /// The device resource a pod requests, where there is one.
    pub fn resource(&self) -> Option<&str> {
        match self {
            Fabric::Dedicated { resource, .. } | Fabric::Shared { resource, .. } => Some(resource),
            _ => None,
        }
    }

    /// Whether `other` is requested alike: the same resource (or rails) and count rule.
    pub fn requested_alike(&self, other: &Fabric) -> bool {
        match (self, other) {
            (Fabric::Dedicated { resource: x, .. }, Fabric::Dedicated { resource: y, .. })
            | (Fabric::Shared { resource: x, .. }, Fabric::Shared { resource: y, .. }) => x == y,
            (x, y) => x == y,
        }
    }

    /// In a sentence, for the comments.
    pub fn describe(&self, gpus: u64) -> String {
        match self {
            Fabric::None => "no fabric device resource".to_owned(),
            Fabric::Dedicated { resource, devices } => format!(
                "{devices} {resource} each: dedicated devices, {} per GPU",
                crate::count::per_gpu_text(*devices, gpus)
            ),
            Fabric::Shared { resource, count } => format!(
                "{count} {resource} each: a shared pool (or a \"has the fabric\" count), 1 per container whatever its GPUs"
            ),
            Fabric::Rails(rails) => format!(
                "{} rails, one resource each ({}): 1 of each per container",
                rails.len(),
                rails.join(", ")
            ),
        }
    }
}

/// The fabric `node`, of `gpus` GPUs, offers.
pub fn offered(node: &Node, gpus: u64) -> Offer {
    let mut candidates: Vec<(&str, u64)> = node
        .allocatable
        .iter()
        .filter(|(name, n)| **n > 0 && is_fabric(name))
        .map(|(name, n)| (name.as_str(), *n))
        .collect();
    let mut rails: Vec<(Vec<u64>, &str)> = candidates
        .iter()
        .filter_map(|(name, _)| rail_number(name).map(|k| (k, *name)))
        .collect();
    if !rails.is_empty() {
        rails.sort();
        let names: Vec<String> = rails.iter().map(|(_, n)| (*n).to_owned()).collect();
        let others = candidates
            .iter()
            .filter(|(n, _)| !names.iter().any(|r| r == n))
            .map(|(n, _)| (*n).to_owned())
            .collect();
        return Offer {
            fabric: Fabric::Rails(names),
            others,
        };
    }
    // The known names first, in their order; then the others by name.
    candidates.sort_by_key(|(name, _)| {
        (
            KNOWN.iter().position(|k| k == name).unwrap_or(KNOWN.len()),
            *name,
        )
    });
    let mut names = candidates.into_iter();
    let Some((resource, count)) = names.next() else {
        return Offer {
            fabric: Fabric::None,
            others: Vec::new(),
        };
    };
    let resource = resource.to_owned();
    let fabric = if is_shared(&resource, count, gpus) {
        Fabric::Shared { resource, count }
    } else {
        Fabric::Dedicated {
            resource,
            devices: count,
        }
    };
    Offer {
        fabric,
        others: names.map(|(n, _)| n.to_owned()).collect(),
    }
}

/// Whether a count of `count` of `resource` on a node of `gpus` GPUs is requested once per
/// container: a shared pool by name (`rdma/rdma_shared_device_a`, Azure's `rdma/shared_ib`) or
/// by size, or a count of 1 on a node of several GPUs, which cannot be shared out per GPU.
fn is_shared(resource: &str, count: u64, gpus: u64) -> bool {
    let shared_name = resource.starts_with("rdma/") && resource.contains("shared");
    shared_name || count > MAX_DEDICATED || (count == 1 && gpus > 1)
}

/// Whether an allocatable resource is some fabric's device.
pub fn is_fabric(name: &str) -> bool {
    if KNOWN.contains(&name) || name.starts_with("rdma/") {
        return true;
    }
    let Some((_, local)) = name.split_once('/') else {
        // cpu, memory, pods, hugepages-2Mi: the node's own.
        return false;
    };
    if GPU_RESOURCES.contains(&name) || NOT_FABRIC.iter().any(|p| name.starts_with(p)) {
        return false;
    }
    let lower = local.to_ascii_lowercase();
    rail_number(name).is_some()
        || lower
            .split(|c: char| !c.is_ascii_alphabetic())
            .any(|word| WORDS.contains(&word))
        || ["rdma", "sriov", "hostdev", "mlnx"]
            .iter()
            .any(|w| lower.contains(w))
}

/// The numbers in a rail resource's name (`nvidia.com/sriov_resource_rail_3` → [3],
/// `nvidia.com/rail0p1` → [0, 1]), for their order; `None` for a name that is no rail's.
fn rail_number(name: &str) -> Option<Vec<u64>> {
    let local = name.split_once('/')?.1;
    let at = local.find("rail")?;
    let rest = &local[at + 4..];
    let rest = rest.strip_prefix(['_', '-']).unwrap_or(rest);
    if !rest.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    Some(
        rest.split(|c: char| !c.is_ascii_digit())
            .filter_map(|d| d.parse().ok())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fabric_names() {
        for name in [
            "vpc.amazonaws.com/efa",
            "rdma/rdma_shared_device_a",
            "nvidia.com/sriov_rdma_vf",
            "nvidia.com/sriov_resource_rail_0",
            "nvidia.com/rail0p1",
            "example.com/roce_vfs",
            "openshift.io/mlnx_ib",
        ] {
            assert!(is_fabric(name), "{name}");
        }
        for name in [
            "cpu",
            "hugepages-2Mi",
            "nvidia.com/gpu",
            "nvidia.com/mig-1g.10gb",
            "networking.gke.io.networks/rdma-0",
            "example.com/library",
            "smarter-devices/fuse",
        ] {
            assert!(!is_fabric(name), "{name}");
        }
    }

    #[test]
    fn rails_in_order() {
        assert_eq!(
            rail_number("nvidia.com/sriov_resource_rail_10"),
            Some(vec![10])
        );
        assert_eq!(rail_number("nvidia.com/rail0p1"), Some(vec![0, 1]));
        assert_eq!(rail_number("nvidia.com/trailer"), None);
    }

    #[test]
    fn what_a_count_means() {
        assert!(is_shared("rdma/rdma_shared_device_a", 63, 8));
        assert!(is_shared("rdma/shared_ib", 8, 8));
        assert!(is_shared("rdma/ib", 1, 8));
        assert!(is_shared("nvidia.com/hostdev", 1000, 8));
        // NVIDIA's shared RDMA plugin on OKE's GB200: 63 slots of nvidia.com/mlnxnics.
        assert!(is_shared("nvidia.com/mlnxnics", 63, 4));
        assert!(!is_shared("vpc.amazonaws.com/efa", 32, 8));
        assert!(!is_shared("rdma/ib", 8, 8));
        assert!(!is_shared("vpc.amazonaws.com/efa", 32, 8));
        assert!(!is_shared("vpc.amazonaws.com/efa", 1, 1));
    }
}
