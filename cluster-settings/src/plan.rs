//! The settings for a cluster: which block, what it says (the fallback of [`fallback`], which
//! fits every fabric node a pod naming neither machine nor pool could land on), the rows that say
//! where other shapes differ from it or from the policy's built-in rows, the pools that name them,
//! and the comments that say what was read and what was not.

use anyhow::{Result, bail};
use multinode_networking_policy::clouds::{self, Cloud};
use serde_yaml::{Mapping, Value};

use crate::blocks;
use crate::dra;
use crate::fabric::Fabric;
use crate::fallback;
use crate::input::Cluster;
use crate::kind;
use crate::shape::{self, Shape};
use crate::vendor;
use crate::write::Written;

/// The block a cluster of this cloud gets.
fn cloud_named(block: &str) -> &'static Cloud {
    clouds::ALL
        .iter()
        .find(|c| c.name == block)
        .copied()
        .unwrap_or(clouds::ALL[clouds::ALL.len() - 1])
}

pub fn plan(cluster: &Cluster) -> Result<Written> {
    if cluster.nodes.is_empty() {
        bail!("no Node in the input; {}", crate::input::EXPECTED);
    }
    let detected = one_kind(cluster)?;
    let shapes = shape::group(&cluster.nodes);
    let Some(main) = fallback::main(&shapes) else {
        bail!(
            "no GPU node: none of the {} nodes has allocatable nvidia.com/gpu or amd.com/gpu (or the label nvidia.com/gpu.count); expected the nodes of a cluster with GPU nodes",
            cluster.nodes.len()
        );
    };
    let mut out = Written::default();
    let block = choose_block(&mut out, cluster, &shapes, detected, main);
    let cloud = cloud_named(block);
    let mut body = Mapping::new();
    body.insert("enabled".into(), true.into());
    out.header.push(String::new());
    out.header
        .push("GPU nodes by shape, the largest first:".to_owned());
    for s in &shapes {
        describe(&mut out, cloud, s);
    }
    out.header.push(String::new());
    fallback::say(&mut out, &shapes, main);
    match block {
        "aws" => blocks::aws(&mut out, &mut body, cluster, &shapes, main),
        "azure" => blocks::azure(&mut out, &mut body, &shapes, main),
        "gcp" => crate::gcp::block(&mut out, &mut body, cluster, &shapes, main),
        "oci" => blocks::oci(&mut out, &mut body, cluster, &shapes, main),
        _ => blocks::rdma(&mut out, &mut body, cluster, &shapes, main),
    }
    let rows = crate::rows::rows(&mut out, cluster, cloud, &shapes, main, &body);
    if !rows.is_empty() {
        body.insert("instanceTypes".into(), Value::Mapping(rows));
    }
    crate::pools::pools(&mut out, &mut body, cloud, cluster);
    let mut settings = Mapping::new();
    settings.insert(block.into(), Value::Mapping(body));
    dra::top_level(&mut out, &mut settings, cluster, &shapes);
    let (file, untold) = vendor::source(block, &main.fabric, &|label| {
        cluster.nodes.iter().any(|n| n.label(label).is_some())
    });
    out.header.push(format!(
        "Not on the nodes, so not below: {untold}. Take them from {file}."
    ));
    out.settings = settings;
    Ok(out)
}

/// The one kind of cluster the nodes show, and what showed it; `None`: no cloud's mark. Nodes of
/// two clouds are refused.
fn one_kind(cluster: &Cluster) -> Result<Option<(&'static kind::Kind, String)>> {
    let mut seen: Vec<(&'static kind::Kind, String)> = Vec::new();
    for node in &cluster.nodes {
        if let Some((k, why)) = kind::of(node)
            && !seen.iter().any(|(s, _)| *s == k)
        {
            seen.push((k, format!("node {}: {why}", node.name)));
        }
    }
    if seen.len() > 1 {
        let clouds: Vec<String> = seen
            .iter()
            .map(|(k, why)| format!("{} ({why})", k.service))
            .collect();
        bail!(
            "the nodes mix clouds: {}; expected the nodes of one cluster",
            clouds.join(", ")
        );
    }
    Ok(seen.pop())
}

/// The settings block: the cloud's, else (a fabric its block cannot request, or no cloud) `rdma`;
/// the header's first lines say why.
fn choose_block(
    out: &mut Written,
    cluster: &Cluster,
    shapes: &[Shape],
    detected: Option<(&'static kind::Kind, String)>,
    main: &Shape,
) -> &'static str {
    let gpu_nodes: usize = shapes.iter().map(|s| s.nodes).sum();
    let nodes = cluster.nodes.len();
    let Some((kind, why)) = detected else {
        out.header.push(format!(
            "Read from {nodes} nodes ({gpu_nodes} with GPUs); no node shows a cloud (spec.providerID aws://, azure://, gce://, oci://; labels eks.amazonaws.com/*, kubernetes.azure.com/*, cloud.google.com/gke-*, oci.oraclecloud.com/*): the rdma block, for on-prem clusters and the neoclouds."
        ));
        return "rdma";
    };
    out.header.push(format!(
        "Read from {nodes} nodes ({gpu_nodes} with GPUs) of one {} cluster ({why}).",
        kind.service
    ));
    match unexpressible(kind.block, &main.fabric) {
        Some(reason) => {
            out.header.push(format!(
                "The {} block cannot express what its GPU nodes show ({reason}): the settings use the rdma block, which describes any device plugin's fabric (behaviour.md §3.9).",
                kind.block
            ));
            "rdma"
        }
        None => kind.block,
    }
}

/// Why the cloud's block cannot request `fabric`, if it cannot.
fn unexpressible(cloud: &str, fabric: &Fabric) -> Option<String> {
    match (cloud, fabric) {
        (_, Fabric::None) | ("gcp", _) => None,
        ("aws", Fabric::Dedicated { resource, .. }) if resource == "vpc.amazonaws.com/efa" => None,
        ("azure", Fabric::Dedicated { resource, .. } | Fabric::Shared { resource, .. })
            if resource.starts_with("rdma/") =>
        {
            None
        }
        ("oci", Fabric::Dedicated { .. }) => None,
        ("aws", _) => Some("its device is always vpc.amazonaws.com/efa".to_owned()),
        ("azure", _) => Some("its device is always rdma/<name>, one resource".to_owned()),
        ("oci", Fabric::Shared { resource, .. }) => Some(format!(
            "{resource} is a shared pool, requested once per container, and the oci block counts per GPU"
        )),
        ("oci", _) => Some("one resource per rail, which the oci block has no key for".to_owned()),
        _ => None,
    }
}

/// The header's lines for one shape.
fn describe(out: &mut Written, cloud: &Cloud, s: &Shape) {
    let builtin = s.builtin(cloud);
    let mut line = format!(
        "- {}: {} node{}, {} GPUs each ({}), {}",
        s.title(),
        s.nodes,
        if s.nodes == 1 { "" } else { "s" },
        s.gpus,
        s.gpu_resource,
        s.fabric.describe(s.gpus)
    );
    if !s.others.is_empty() {
        line.push_str(&format!(
            "; also advertises {} (not used)",
            s.others.join(", ")
        ));
    }
    line.push('.');
    out.header.push(line);
    let mut facts = Vec::new();
    facts.push(match builtin {
        Some(m) => format!(
            "built-in machine row {} ({} GPUs{}{})",
            m.name,
            m.gpus,
            m.devices
                .zip(cloud.plugin)
                .map(|(d, p)| format!(", {d} {p}"))
                .unwrap_or_default(),
            if m.nvlink_domain {
                ", multi-node NVLink"
            } else {
                ""
            }
        ),
        None => "no built-in machine row".to_owned(),
    });
    facts.push(if s.clique {
        "nvidia.com/gpu.clique labels: multi-node NVLink".to_owned()
    } else if s.gfd {
        "GPU Feature Discovery labels without nvidia.com/gpu.clique: no multi-node NVLink"
            .to_owned()
    } else {
        "no GPU Feature Discovery labels: multi-node NVLink unknown".to_owned()
    });
    if !s.networks.is_empty() {
        facts.push(format!("GKE networks {}", s.networks.join(", ")));
    }
    out.header.push(format!("  {}.", facts.join("; ")));
    for (what, n) in &s.odd {
        out.header.push(format!(
            "  {n} node{} of this shape show{} something else: {what} (read as the others).",
            if *n == 1 { "" } else { "s" },
            if *n == 1 { "s" } else { "" }
        ));
    }
}
