//! `<cloud>.pools` (behaviour.md §1.2, §3.5): the cluster's node pools by the label that names
//! them, each with the machine (a row key) or machines its nodes are. Jobs pick their nodes by
//! pool more often than by instance type (an EKS node group, a Karpenter NodePool, a GKE node
//! pool, an AKS agent pool, an OKE node pool, or a Kueue ResourceFlavor's `nodeLabels`, which
//! Kueue writes into the pod's node selector), so a pod that selects a pool gets its machine's
//! row. Read in full with the block: a cluster has a few pools, and a pod may select any of them.

use std::borrow::Cow;

use super::reader::{Reader, show};
use crate::error::Path;
use crate::json::JsonType;
use crate::json::tape::Value;
use crate::k8s::names::{is_qualified_name, is_qualified_name_part};

pub const POOLS: &str = "pools";

/// The node labels by which the managed services name a node's pool, known on every cloud
/// whether the settings map them or not:
/// - `eks.amazonaws.com/nodegroup`: EKS managed node groups (EKS user guide, "Managed node
///   groups": the labels EKS adds to their nodes);
/// - `karpenter.sh/nodepool`: Karpenter's NodePool (karpenter.sh, "Well-Known Labels");
/// - `cloud.google.com/gke-nodepool`: GKE node pools (GKE docs, "About node pools");
/// - `kubernetes.azure.com/agentpool` and `agentpool`: AKS agent pools (AKS docs, "Use labels
///   in an AKS cluster": both are written on every node);
/// - `oke.oraclecloud.com/pool.name`: OKE node pools made by Oracle's Terraform module, which
///   oci-hpc-oke uses (oracle-terraform-modules/terraform-oci-oke, the workers' `node_labels`).
pub const POOL_LABELS: [&str; 6] = [
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "cloud.google.com/gke-nodepool",
    "kubernetes.azure.com/agentpool",
    "agentpool",
    "oke.oraclecloud.com/pool.name",
];

/// How many labels, pools of one label and machines of one pool the settings may give: each
/// label is looked up in an opted-in pod's node selector and affinity.
const MAX_LABELS: usize = 16;
const MAX_POOLS: usize = 512;
const MAX_MACHINES: usize = 16;

/// What an object of [`Reader::keyed`] must be.
struct Keyed {
    must_be: &'static str,
    max: usize,
    entries: &'static str,
    valid: fn(&str) -> bool,
    bad_key: &'static str,
}

/// `pools` itself: node label keys.
const LABELS: Keyed = Keyed {
    must_be: "an object of node label keys, each an object of pool names (label values) and their machine: {eks.amazonaws.com/nodegroup: {b200: p6-b200.48xlarge}}",
    max: MAX_LABELS,
    entries: "labels",
    valid: is_qualified_name,
    bad_key: "not a label key; a node label key is [prefix/]name, the prefix a DNS subdomain, the name at most 63 letters, digits, '-', '_' or '.'",
};

/// One label's pools: its values.
const POOLS_OF_A_LABEL: Keyed = Keyed {
    must_be: "an object of pool names (label values), each the pool's machine",
    max: MAX_POOLS,
    entries: "pools",
    valid: is_qualified_name_part,
    bad_key: "not a label value; a node label's value is at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
};

/// A block's pools: per label, per value, the row keys of the pool's machines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pools<'a>(Vec<PoolLabel<'a>>);

/// One label's pools, by value.
type PoolLabel<'a> = (Cow<'a, str>, Vec<(Cow<'a, str>, Vec<Cow<'a, str>>)>);

impl<'a> Pools<'a> {
    /// The labels a pod may select a pool by: the built-in ones, then those the settings add.
    pub fn labels(&self) -> Vec<&str> {
        let mut labels: Vec<&str> = POOL_LABELS.to_vec();
        for (label, _) in &self.0 {
            if !labels.contains(&label.as_ref()) {
                labels.push(label);
            }
        }
        labels
    }

    /// The machines of the pool `value` of `label`; `None` where the settings do not map it
    /// (the last of a repeated key counts).
    pub fn machines(&self, label: &str, value: &str) -> Option<&[Cow<'a, str>]> {
        let (_, pools) = self.0.iter().rev().find(|(l, _)| l == label)?;
        let (_, machines) = pools.iter().rev().find(|(v, _)| v == value)?;
        Some(machines)
    }
}

impl Reader {
    /// A block's `pools`: an object of label keys, each an object of label values, each a row
    /// key or a list of 1 to 16.
    pub(super) fn pools<'a>(&mut self, path: &Path<'_>, raw: Value<'_, 'a>) -> Pools<'a> {
        let labels = self.keyed(path, raw, &LABELS, |r, at, by_value| {
            r.keyed(at, by_value, &POOLS_OF_A_LABEL, |r, at, machines| {
                r.pool_machines(at, machines)
            })
        });
        Pools(labels.unwrap_or_default())
    }

    /// An object of at most `shape.max` entries whose keys `shape.valid` accepts, each value read
    /// by `one`; the entries read, or `None` where it is no object.
    fn keyed<'a, T>(
        &mut self,
        path: &Path<'_>,
        raw: Value<'_, 'a>,
        shape: &Keyed,
        mut one: impl FnMut(&mut Reader, &Path<'_>, Value<'_, 'a>) -> Option<T>,
    ) -> Option<Vec<(Cow<'a, str>, T)>> {
        let object = self.of_type(path, raw, JsonType::Object, &shape.must_be)?;
        if object.count() > shape.max {
            self.errors.push(format!(
                "{path}: must have at most {} {}, got {}",
                shape.max,
                shape.entries,
                object.count()
            ));
        }
        let mut out = Vec::new();
        for (key, value) in object.members() {
            let at = &Path::Entry(path, key);
            if !(shape.valid)(key) {
                self.errors.push(format!("{at}: {}", shape.bad_key));
                continue;
            }
            if let Some(read) = one(self, at, value) {
                out.push((key.clone(), read));
            }
        }
        Some(out)
    }

    /// One pool's machines: a row key, or a list of 1 to 16.
    fn pool_machines<'a>(
        &mut self,
        at: &Path<'_>,
        raw: Value<'_, 'a>,
    ) -> Option<Vec<Cow<'a, str>>> {
        const WHAT: &str = "a row key (an instance type, or on rdma a machine label's value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)";
        match raw.json_type() {
            JsonType::String => self
                .text(at, Some(raw), is_qualified_name_part, WHAT)
                .map(|one| vec![one]),
            JsonType::List => self.strings(
                at,
                raw,
                Some((1, MAX_MACHINES)),
                is_qualified_name_part,
                WHAT,
            ),
            _ => {
                self.errors.push(format!(
                    "{at}: must be the pool's machine, {WHAT}, or a list of 1 to {MAX_MACHINES} of them, got {}",
                    show(raw)
                ));
                None
            }
        }
    }
}
