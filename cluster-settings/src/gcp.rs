//! GKE's block: no device resource, but a fabric per machine family (the built-in rows say which
//! machine runs TCPX, TCPXO or RDMA) and the GKE networks of its NICs, which every node attached
//! to them advertises as `networking.gke.io.networks/<network>` (behaviour.md §3.3, §3.7).

use multinode_networking_policy::clouds::{self, Cloud};
use serde_yaml::{Mapping, Value};

use crate::dra::MRDMA_CLASS;
use crate::input::Cluster;
use crate::shape::Shape;
use crate::write::Written;

/// Each fabric's networks key, and how many networks it takes.
const NETWORKS: [(&str, Option<&str>, usize, usize); 3] = [
    ("tcpxo", None, 8, 8),
    ("tcpx", Some("tcpx"), 4, 4),
    ("rdma", Some("rdma"), 1, 16),
];

fn gcp() -> &'static Cloud {
    clouds::ALL
        .iter()
        .find(|c| c.name == "gcp")
        .copied()
        .unwrap_or(clouds::ALL[2])
}

/// The fabric a shape's machine runs: its built-in row's, else its GPU model's.
pub fn fabric_of(s: &Shape) -> Option<&'static str> {
    let cloud = gcp();
    let by_machine = s.name().and_then(|name| {
        cloud
            .machines
            .iter()
            .find(|m| m.name == name)
            .and_then(|m| m.facts.fabric)
    });
    let by_model = || {
        let label = s.accelerator.as_deref()?;
        let a = cloud.accelerators.iter().find(|a| a.label == label)?;
        Some(a.machine.and_then(|m| m.facts.fabric).unwrap_or(a.fabric))
    };
    by_machine.or_else(by_model).map(|f| f.name)
}

pub fn block(
    out: &mut Written,
    body: &mut Mapping,
    cluster: &Cluster,
    shapes: &[Shape],
    main: &Shape,
) {
    match fabric_of(main) {
        Some(fabric) => {
            body.insert("fabric".into(), fabric.into());
            out.note(
                &["gcp", "fabric"],
                format!(
                    "{}'s fabric, for pods that name no machine; a pod that names one gets its machine's.",
                    main.title()
                ),
            );
        }
        None => out.note(
            &["gcp"],
            format!(
                "{} is no machine the policy knows, nor its GPU model: pods get the default fabric, tcpxo, unless they name a known machine.",
                main.title()
            ),
        ),
    }
    // The fabrics' own blocks, inserted after the block's keys.
    let mut tcpx = Mapping::new();
    let mut rdma = Mapping::new();
    for (fabric, key, min, max) in NETWORKS {
        let networks = shapes
            .iter()
            .filter(|s| fabric_of(s) == Some(fabric))
            .map(|s| &s.networks)
            .max_by_key(|n| n.len());
        let Some(networks) = networks else { continue };
        let networks = fabric_networks(fabric, networks);
        let path: Vec<&str> = match key {
            Some(k) => vec!["gcp", k, "networks"],
            None => vec!["gcp", "networks"],
        };
        if networks.is_empty() {
            if !(fabric == "rdma" && cluster.has_class(MRDMA_CLASS)) {
                out.note(
                    &["gcp"],
                    format!(
                        "The {fabric} machines advertise no networking.gke.io.networks/ resource: the default network names stay; check them against kubectl get networks."
                    ),
                );
            }
            continue;
        }
        if !(min..=max).contains(&networks.len()) {
            out.note(
                &["gcp"],
                format!(
                    "The {fabric} machines are attached to {} networks ({}), not the {min} its key takes: set it by hand.",
                    networks.len(),
                    networks.join(", ")
                ),
            );
            continue;
        }
        let list = Value::Sequence(networks.iter().map(|n| Value::from(n.as_str())).collect());
        match key {
            Some("tcpx") => tcpx.insert("networks".into(), list),
            Some(_) => rdma.insert("networks".into(), list),
            None => body.insert("networks".into(), list),
        };
        out.note(
            &path,
            format!("The networks the {fabric} nodes advertise (networking.gke.io.networks/<network>), in order."),
        );
    }
    if cluster.has_class(MRDMA_CLASS) {
        dranet_claim(out, &mut rdma);
    }
    for (key, sub) in [("tcpx", tcpx), ("rdma", rdma)] {
        if !sub.is_empty() {
            body.insert(key.into(), Value::Mapping(sub));
        }
    }
}

/// The networks of a fabric's NICs among those a node advertises: all of them, but on the RDMA
/// machines, which also have a gVNIC network for eth1 (`gvnic-1` in Google's examples), not a GPU
/// NIC's, those named for RDMA where some are.
fn fabric_networks(fabric: &str, networks: &[String]) -> Vec<String> {
    let rdma: Vec<String> = networks
        .iter()
        .filter(|n| n.contains("rdma"))
        .cloned()
        .collect();
    if fabric == "rdma" && !rdma.is_empty() {
        return rdma;
    }
    networks.to_vec()
}

/// GKE managed DRANET's claim of the RDMA NICs (gcp-dranet.yaml), into the `rdma` block.
fn dranet_claim(out: &mut Written, rdma: &mut Mapping) {
    let mut claim = Mapping::new();
    claim.insert("template".into(), "default-rdma".into());
    claim.insert("name".into(), "rdma".into());
    rdma.insert("deviceClaim".into(), Value::Mapping(claim));
    out.note(
        &["gcp", "rdma", "deviceClaim"],
        format!(
            "The DeviceClass {MRDMA_CLASS} (GKE managed DRANET): the RDMA NICs through a claim (gcp-dranet.yaml). Create the template of deploy/gcp/dra/default-rdma.yaml in every training namespace."
        ),
    );
}
