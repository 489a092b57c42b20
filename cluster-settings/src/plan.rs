//! The settings for a cluster: which block, what it says (the largest group of GPU nodes, so
//! that a pod naming no machine is right), the rows that say where other shapes differ from it or
//! from the policy's built-in rows, and the comments that say what was read and what was not.

use anyhow::{Result, bail};
use multinode_networking_policy::clouds::{self, Cloud, Machine};
use serde_yaml::{Mapping, Value};

use crate::count::{per_gpu, per_gpu_text};
use crate::dra;
use crate::fabric::Fabric;
use crate::input::Cluster;
use crate::kind;
use crate::multus;
use crate::shape::{self, Shape};
use crate::vendor;

/// The settings document: its value, the comments of its header, and comments to put before
/// keys (by their path).
#[derive(Debug, Default)]
pub struct Written {
    pub settings: Mapping,
    pub header: Vec<String>,
    pub notes: Vec<(Vec<String>, Vec<String>)>,
}

impl Written {
    /// A comment above the key at `path`.
    pub fn note(&mut self, path: &[&str], line: String) {
        let path: Vec<String> = path.iter().map(|p| (*p).to_owned()).collect();
        match self.notes.iter_mut().find(|(p, _)| *p == path) {
            Some((_, lines)) => lines.push(line),
            None => self.notes.push((path, vec![line])),
        }
    }
}

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
    let shapes = shape::group(&cluster.nodes);
    let Some(main) = shapes.first() else {
        bail!(
            "no GPU node: none of the {} nodes has allocatable nvidia.com/gpu or amd.com/gpu (or the label nvidia.com/gpu.count); expected the nodes of a cluster with GPU nodes",
            cluster.nodes.len()
        );
    };
    let gpu_nodes: usize = shapes.iter().map(|s| s.nodes).sum();
    let mut out = Written::default();
    let detected = seen
        .first()
        .map(|(k, why)| (k.block, k.service, why.clone()));
    let block = match &detected {
        Some((cloud, service, why)) => {
            out.header.push(format!(
                "Read from {} nodes ({gpu_nodes} with GPUs) of one {service} cluster ({why}).",
                cluster.nodes.len()
            ));
            match unexpressible(cloud, &main.fabric) {
                Some(reason) => {
                    out.header.push(format!(
                        "The {cloud} block cannot express what its largest group of GPU nodes shows ({reason}): the settings use the rdma block, which describes any device plugin's fabric (behaviour.md §3.9)."
                    ));
                    "rdma"
                }
                None => cloud,
            }
        }
        None => {
            out.header.push(format!(
                "Read from {} nodes ({gpu_nodes} with GPUs); no node shows a cloud (spec.providerID aws://, azure://, gce://, oci://; labels eks.amazonaws.com/*, kubernetes.azure.com/*, cloud.google.com/gke-*, oci.oraclecloud.com/*): the rdma block, for on-prem clusters and the neoclouds.",
                cluster.nodes.len()
            ));
            "rdma"
        }
    };
    let cloud = cloud_named(block);
    let mut settings = Mapping::new();
    let mut body = Mapping::new();
    body.insert("enabled".into(), true.into());
    out.header.push(String::new());
    out.header
        .push("GPU nodes by shape, the largest first:".to_owned());
    for s in &shapes {
        describe(&mut out, cloud, s);
    }
    out.header.push(String::new());
    let differ: Vec<String> = shapes[1..]
        .iter()
        .filter(|s| !same_fabric(&s.fabric, &main.fabric))
        .map(|s| format!("{} ({})", s.title(), s.fabric.describe(s.gpus)))
        .collect();
    if !differ.is_empty() {
        out.header.push(format!(
            "The GPU nodes differ: the block is what the largest group, {}, shows; the rows below say what the others show where a row can: {}.",
            main.title(),
            differ.join("; ")
        ));
    }
    match block {
        "aws" => aws(&mut out, &mut body, cluster, main),
        "azure" => azure(&mut out, &mut body, main),
        "gcp" => crate::gcp::block(&mut out, &mut body, cluster, &shapes),
        "oci" => oci(&mut out, &mut body, cluster, main),
        _ => rdma(&mut out, &mut body, cluster, main),
    }
    let rows = crate::rows::rows(&mut out, cluster, cloud, &shapes, main, &body);
    if !rows.is_empty() {
        body.insert("instanceTypes".into(), Value::Mapping(rows));
    }
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

/// Two fabrics are requested alike: the same resource (or rails) and count rule.
pub fn same_fabric(a: &Fabric, b: &Fabric) -> bool {
    match (a, b) {
        (Fabric::Dedicated { resource: x, .. }, Fabric::Dedicated { resource: y, .. })
        | (Fabric::Shared { resource: x, .. }, Fabric::Shared { resource: y, .. }) => x == y,
        (x, y) => x == y,
    }
}

/// The header's lines for one shape.
fn describe(out: &mut Written, cloud: &Cloud, s: &Shape) {
    let builtin = builtin(cloud, s);
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

/// The built-in row of the shape's machine, where its key is an instance type.
pub fn builtin(cloud: &Cloud, s: &Shape) -> Option<&'static Machine> {
    let (label, name) = s.key.as_ref()?;
    if !multinode_networking_policy::placement::INSTANCE_TYPE_LABELS.contains(label) {
        return None;
    }
    cloud.machines.iter().find(|m| m.name == name)
}

fn aws(out: &mut Written, body: &mut Mapping, cluster: &Cluster, main: &Shape) {
    match &main.fabric {
        Fabric::Dedicated { devices, .. } => {
            body.insert("efaDevicesPerGPU".into(), per_gpu(*devices, main.gpus));
            out.note(
                &["aws", "efaDevicesPerGPU"],
                format!(
                    "{} of {}: {devices} EFA for {} GPUs, for pods that name no instance type.",
                    per_gpu_text(*devices, main.gpus),
                    main.title(),
                    main.gpus
                ),
            );
        }
        _ if cluster.has_class(dra::EFA_CLASS) => {
            let mut claim = Mapping::new();
            claim.insert("template".into(), "efa-{count}".into());
            claim.insert("name".into(), "efa".into());
            body.insert("deviceClaim".into(), Value::Mapping(claim));
            out.note(
                &["aws", "deviceClaim"],
                format!(
                    "The nodes advertise no vpc.amazonaws.com/efa and the DeviceClass {} exists: EFA through the DRA driver (aws-dra.yaml). Create the templates efa-1 ... efa-32 of deploy/aws/dra/ in every training namespace.",
                    dra::EFA_CLASS
                ),
            );
        }
        _ => out.note(
            &["aws"],
            "The largest group advertises no vpc.amazonaws.com/efa: its rows request none (devicesPerNode: 0); a pod that names no instance type still gets efaDevicesPerGPU.".to_owned(),
        ),
    }
}

fn azure(out: &mut Written, body: &mut Mapping, main: &Shape) {
    let Some(resource) = main.fabric.resource() else {
        out.note(
            &["azure"],
            "The largest group advertises no rdma/ resource: its rows request none (devicesPerNode: 0); a pod that names no instance type still gets rdma/hca_shared_devices_a, the chart's default.".to_owned(),
        );
        return;
    };
    let name = resource.trim_start_matches("rdma/");
    body.insert("rdmaDeviceName".into(), name.into());
    match &main.fabric {
        Fabric::Shared { count, .. } => {
            body.insert("rdmaDevicesPerContainer".into(), 1.into());
            out.note(
                &["azure", "rdmaDeviceName"],
                format!(
                    "{resource}: {count} per node, the RDMA shared device plugin's pod slots: 1 per container."
                ),
            );
        }
        Fabric::Dedicated { devices, .. } => {
            body.insert("rdmaDevicesPerGPU".into(), per_gpu(*devices, main.gpus));
            out.note(
                &["azure", "rdmaDeviceName"],
                format!(
                    "{resource}: {devices} per node of {} GPUs, one per InfiniBand NIC (the SR-IOV device plugin).",
                    main.gpus
                ),
            );
        }
        _ => {}
    }
    out.note(
        &["azure"],
        "ncclTopologyConfigMap is left at nccl-topo: create that ConfigMap with the VM size's topology file in every training namespace, as azure.yaml says (not on the nodes).".to_owned(),
    );
}

fn oci(out: &mut Written, body: &mut Mapping, cluster: &Cluster, main: &Shape) {
    let Fabric::Dedicated { resource, devices } = &main.fabric else {
        out.note(
            &["oci"],
            "The largest group advertises no device (host networking, as Oracle's GB200 nodes): its rows request none (devicesPerNode: 0); a pod that names no shape still gets rdmaDevicesPerGPU of the default resource.".to_owned(),
        );
        return;
    };
    body.insert("resourceName".into(), resource.as_str().into());
    body.insert("rdmaDevicesPerGPU".into(), per_gpu(*devices, main.gpus));
    let network = multus::network_for(out, cluster, resource, "oci", Some("default/rdma-vf"));
    if let Some(network) = network {
        body.insert("network".into(), network.into());
    }
}

fn rdma(out: &mut Written, body: &mut Mapping, cluster: &Cluster, main: &Shape) {
    match &main.fabric {
        Fabric::None => {
            body.insert("resourceName".into(), Value::Null);
            out.note(
                &["rdma", "resourceName"],
                format!(
                    "{} advertises no fabric device: no device is requested (the HCAs are in every container already, as on Nebius, or the nodes use host networking).",
                    main.title()
                ),
            );
        }
        Fabric::Dedicated { resource, devices } => {
            body.insert("resourceName".into(), resource.as_str().into());
            if main.key.is_none() && main.gpus <= crate::rows::MAX_GPUS {
                // No row can name these nodes: the block gives their counts.
                body.insert("devicesPerNode".into(), (*devices).into());
                body.insert("gpusPerNode".into(), main.gpus.into());
            } else {
                body.insert("devicesPerGPU".into(), per_gpu(*devices, main.gpus));
            }
            out.note(
                &["rdma", "resourceName"],
                format!(
                    "{devices} per node of {} GPUs: dedicated devices, requested per GPU.",
                    main.gpus
                ),
            );
            if let Some(n) = multus::network_for(out, cluster, resource, "rdma", None) {
                body.insert("network".into(), n.into());
            }
        }
        Fabric::Shared { resource, count } => {
            body.insert("resourceName".into(), resource.as_str().into());
            body.insert("devicesPerContainer".into(), 1.into());
            out.note(
                &["rdma", "resourceName"],
                format!(
                    "{count} per node of {} GPUs: a shared pool, or a count that says only \"has the fabric\": 1 per container.",
                    main.gpus
                ),
            );
            if let Some(n) = multus::network_for(out, cluster, resource, "rdma", None) {
                body.insert("network".into(), n.into());
            }
        }
        Fabric::Rails(rails) => {
            body.insert("rails".into(), multus::rails(out, cluster, rails));
        }
    }
}
