//! The node pools (behaviour.md §1.2, `pools`): for every pool label a GPU node carries (an EKS
//! managed node group, a Karpenter NodePool, a GKE node pool, an AKS agent pool, an OKE node pool),
//! the row keys of the machines of that pool's nodes, so that a pod which picks its nodes by pool
//! gets its machine's fabric. Every pool of the GPU nodes is written, one of a single shape too: a
//! pod selecting a pool the settings do not map is warned about.

use std::collections::BTreeMap;

use multinode_networking_policy::clouds::Cloud;
use multinode_networking_policy::placement::INSTANCE_TYPE_LABELS;
use multinode_networking_policy::settings::POOL_LABELS;
use serde_yaml::{Mapping, Value};

use crate::input::Cluster;
use crate::shape::key_of;
use crate::write::Written;

/// The most machines the policy takes for one pool (behaviour.md §1.4).
const MAX_MACHINES: usize = 16;

/// Label → pool → the row keys of its GPU nodes' machines, in the names' order.
type Found<'c> = BTreeMap<&'static str, BTreeMap<&'c str, Vec<String>>>;

/// Writes `pools` into `body`, with its comments.
pub fn pools(out: &mut Written, body: &mut Mapping, cloud: &Cloud, cluster: &Cluster) {
    let mut found: Found<'_> = BTreeMap::new();
    let mut unnamed: Vec<String> = Vec::new();
    for node in cluster.nodes.iter().filter(|n| n.gpus().0 > 0) {
        for label in POOL_LABELS {
            let Some(pool) = node.label(label) else {
                continue;
            };
            match key_of(node).filter(|(l, _)| row_label(cloud, l)) {
                Some((_, machine)) => {
                    let machines = found.entry(label).or_default().entry(pool).or_default();
                    if !machines.contains(&machine) {
                        machines.push(machine);
                    }
                }
                None => unnamed.push(format!("{pool} ({label})")),
            }
        }
    }
    unnamed.sort();
    unnamed.dedup();
    if !unnamed.is_empty() {
        out.note(
            &[cloud.name],
            format!(
                "The nodes of the pools {} carry no label a row of this block is keyed by: no pool names them, and a pod that selects one gets the block's fallback, with a warning.",
                unnamed.join(", ")
            ),
        );
    }
    if found.is_empty() {
        return;
    }
    let mut table = Mapping::new();
    for (label, by_pool) in found {
        let mut pools = Mapping::new();
        for (pool, mut machines) in by_pool {
            machines.sort();
            machines.truncate(MAX_MACHINES);
            let value = match machines.as_slice() {
                [one] => Value::from(one.as_str()),
                several => several.iter().map(|m| Value::from(m.as_str())).collect(),
            };
            pools.insert(pool.into(), value);
        }
        table.insert(label.into(), Value::Mapping(pools));
    }
    body.insert("pools".into(), Value::Mapping(table));
    out.note(
        &[cloud.name, "pools"],
        "The GPU nodes' pools by the labels that name them, each with the machines of its nodes: a pod that selects a pool by its label, in its nodeSelector or required node affinity (or a Kueue ResourceFlavor's nodeLabels), gets its machine's row; one of several machines the fewest devices per GPU among them. Add a pool here when you create one.".to_owned(),
    );
}

/// Whether a row of `cloud`'s block may be keyed by a value of `label`.
fn row_label(cloud: &Cloud, label: &str) -> bool {
    INSTANCE_TYPE_LABELS.contains(&label) || cloud.machine_labels.contains(&label)
}
