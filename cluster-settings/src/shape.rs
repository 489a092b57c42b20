//! The GPU nodes grouped by shape: the instance type, else (on-prem, the neoclouds) the label
//! the `rdma` block reads to name a machine, else one group of every node. Nodes of one shape
//! that differ (a node whose device plugin is not running yet) are read as the most of them
//! show, and the others named.

use std::collections::BTreeMap;

use multinode_networking_policy::clouds::{Cloud, Machine};
use multinode_networking_policy::placement::INSTANCE_TYPE_LABELS;

use crate::fabric::{self, Fabric};
use crate::node::Node;

/// The labels that name a machine where no instance type does (the `rdma` block's rows, behaviour.md §3.5).
pub const MACHINE_LABELS: [&str; 2] = ["nvidia.com/gpu.machine", "node.coreweave.cloud/type"];

/// GPU Feature Discovery's label of the node's multi-node NVLink clique.
pub const CLIQUE_LABEL: &str = "nvidia.com/gpu.clique";

/// Labels GPU Feature Discovery writes on every GPU node: where they are and the clique label
/// is not, the node has no multi-node NVLink.
const GFD_LABELS: [&str; 2] = ["nvidia.com/gpu.product", "nvidia.com/gpu.present"];

/// GKE's extended resource of each network a node is attached to (`<network>` and `<network>.IP`),
/// which the node IPAM controller of kubernetes/cloud-provider-gcp writes.
const GKE_NETWORK_PREFIX: &str = "networking.gke.io.networks/";

/// GKE's node annotation of the node's interfaces beyond the first, in order:
/// `[{"network": ..., "ipAddress": ...}]` (kubernetes/cloud-provider-gcp
/// `crd/apis/network/v1/annotations.go`, `NorthInterfacesAnnotationKey`).
const GKE_INTERFACES_ANNOTATION: &str = "networking.gke.io/north-interfaces";

#[derive(Debug, Clone)]
pub struct Shape {
    /// The label that names it and its value; `None`: nodes no label names, one group.
    pub key: Option<(&'static str, String)>,
    pub nodes: usize,
    pub gpus: u64,
    /// What the GPUs were counted by.
    pub gpu_resource: &'static str,
    pub fabric: Fabric,
    /// Other fabric resources its nodes advertise besides the one read.
    pub others: Vec<String>,
    /// Nodes of this shape that show something else: what, and how many.
    pub odd: Vec<(String, usize)>,
    pub clique: bool,
    /// GPU Feature Discovery runs on its nodes.
    pub gfd: bool,
    /// GKE networks its nodes are attached to, but the default one, in order.
    pub networks: Vec<String>,
    /// GKE's GPU model label.
    pub accelerator: Option<String>,
}

impl Shape {
    /// The shape's name in comments.
    pub fn title(&self) -> String {
        match &self.key {
            Some((label, value)) => format!("{value} ({label})"),
            None => "GPU nodes without an instance-type or machine label".to_owned(),
        }
    }

    pub fn name(&self) -> Option<&str> {
        self.key.as_ref().map(|(_, v)| v.as_str())
    }

    /// The built-in row of the shape's machine in `cloud`, where its key is an instance type.
    pub fn builtin(&self, cloud: &Cloud) -> Option<&'static Machine> {
        let (label, name) = self.key.as_ref()?;
        if !INSTANCE_TYPE_LABELS.contains(label) {
            return None;
        }
        cloud.machines.iter().find(|m| m.name == name)
    }
}

/// The shape key of a node.
pub fn key_of(node: &Node) -> Option<(&'static str, String)> {
    INSTANCE_TYPE_LABELS
        .iter()
        .chain(MACHINE_LABELS.iter())
        .find_map(|label| node.label(label).map(|v| (*label, v.to_owned())))
}

/// The GPU nodes of `nodes`, by shape, the most nodes first (then by name).
pub fn group(nodes: &[Node]) -> Vec<Shape> {
    let mut by_key: BTreeMap<Option<(&'static str, String)>, Vec<&Node>> = BTreeMap::new();
    for node in nodes.iter().filter(|n| n.gpus().0 > 0) {
        by_key.entry(key_of(node)).or_default().push(node);
    }
    let mut shapes: Vec<Shape> = by_key
        .into_iter()
        .map(|(key, nodes)| read(key, &nodes))
        .collect();
    shapes.sort_by(|a, b| b.nodes.cmp(&a.nodes).then_with(|| a.key.cmp(&b.key)));
    shapes
}

fn read(key: Option<(&'static str, String)>, nodes: &[&Node]) -> Shape {
    // The nodes by what they show, the most common first.
    let mut seen: BTreeMap<(u64, Fabric), usize> = BTreeMap::new();
    let mut others: Vec<String> = Vec::new();
    for node in nodes {
        let gpus = node.gpus().0;
        let offer = fabric::offered(node, gpus);
        *seen.entry((gpus, offer.fabric)).or_default() += 1;
        for other in offer.others {
            if !others.contains(&other) {
                others.push(other);
            }
        }
    }
    let mut seen: Vec<((u64, Fabric), usize)> = seen.into_iter().collect();
    seen.sort_by_key(|s| std::cmp::Reverse(s.1));
    let ((gpus, fabric), _) = seen.remove(0);
    let odd = seen
        .into_iter()
        .map(|((g, f), n)| (format!("{g} GPUs, {}", f.describe(g)), n))
        .collect();
    let typical = nodes
        .iter()
        .find(|n| n.gpus().0 == gpus && fabric::offered(n, gpus).fabric == fabric)
        .copied()
        .unwrap_or(nodes[0]);
    let networks = gke_networks(typical);
    Shape {
        key,
        nodes: nodes.len(),
        gpus,
        gpu_resource: typical.gpus().1,
        fabric,
        others,
        odd,
        clique: nodes.iter().any(|n| n.label(CLIQUE_LABEL).is_some()),
        gfd: nodes
            .iter()
            .any(|n| GFD_LABELS.iter().any(|l| n.label(l).is_some())),
        networks,
        accelerator: typical
            .label(multinode_networking_policy::clouds::ACCELERATOR_LABEL)
            .map(str::to_owned),
    }
}

/// The GKE networks a node is attached to, but the default one: its interfaces' annotation, in
/// the interfaces' order, else its networks' resources, in the names' order.
fn gke_networks(node: &Node) -> Vec<String> {
    let listed = node
        .annotations
        .get(GKE_INTERFACES_ANNOTATION)
        .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        .and_then(|value| {
            value.as_array().map(|items| {
                items
                    .iter()
                    .filter_map(|i| i.get("network")?.as_str().map(str::to_owned))
                    .filter(|n| n != "default")
                    .collect::<Vec<String>>()
            })
        })
        .unwrap_or_default();
    if !listed.is_empty() {
        return listed;
    }
    let mut networks: Vec<String> = node
        .allocatable
        .keys()
        .filter_map(|k| k.strip_prefix(GKE_NETWORK_PREFIX))
        .filter(|n| !n.ends_with(".IP") && *n != "default")
        .map(str::to_owned)
        .collect();
    networks.sort_by_key(|n| natural(n));
    networks
}

/// `rdma-10` after `rdma-9`: the text with its numbers compared as numbers.
fn natural(name: &str) -> Vec<(String, u64)> {
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut digits = String::new();
    for c in name.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            if !digits.is_empty() {
                parts.push((
                    std::mem::take(&mut text),
                    digits.parse().unwrap_or(u64::MAX),
                ));
                digits.clear();
            }
            text.push(c);
        }
    }
    parts.push((text, digits.parse().unwrap_or(0)));
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gke_networks_in_the_interfaces_order_else_by_name() {
        let node = Node::read(&serde_json::json!({
            "metadata": {"annotations": {GKE_INTERFACES_ANNOTATION:
                r#"[{"network":"vpc2","ipAddress":"10.1.0.2"},{"network":"vpc1","ipAddress":"10.0.0.2"}]"#}},
            "status": {"allocatable": {"networking.gke.io.networks/vpc1": "1", "networking.gke.io.networks/vpc2": "1"}}
        }));
        assert_eq!(gke_networks(&node), ["vpc2", "vpc1"]);
        let node = Node::read(&serde_json::json!({
            "status": {"allocatable": {"networking.gke.io.networks/vpc2": "1", "networking.gke.io.networks/vpc2.IP": "1",
                "networking.gke.io.networks/vpc1": "1", "networking.gke.io.networks/default": "1"}}
        }));
        assert_eq!(gke_networks(&node), ["vpc1", "vpc2"]);
    }

    #[test]
    fn networks_in_natural_order() {
        let mut names = vec!["rdma-10", "rdma-9", "rdma-0"];
        names.sort_by_key(|n| natural(n));
        assert_eq!(names, ["rdma-0", "rdma-9", "rdma-10"]);
    }
}
