//! The instance rows (behaviour.md §1.2, §3.5): one for every named shape whose nodes the block
//! and the built-in row do not describe as they are. The block's request (its device and how it
//! is counted) is compared with what the shape's nodes show; a row says the difference where a
//! row of the block can (another count, another device, none), and whether the machine has
//! multi-node NVLink. What no row can say is a comment.

use multinode_networking_policy::clouds::Cloud;
use multinode_networking_policy::placement::INSTANCE_TYPE_LABELS;
use serde_yaml::{Mapping, Value};

use crate::count::MAX_GPUS;
use crate::fabric::Fabric;
use crate::input::Cluster;
use crate::multus;
use crate::shape::Shape;
use crate::write::Written;

/// How the block counts its device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    PerGpu,
    PerContainer,
    Rails,
    /// Through a DRA claim (`deviceClaim`), whose `{count}` is still per GPU: nodes that advertise
    /// no device are what the claim is for.
    Claim,
    /// No device at all (`rdma.resourceName: null`), or none to count (GCP).
    Nothing,
}

/// What a pod that names no machine is given by the block: its device and its count rule.
fn block_request(cloud: &str, body: &Mapping) -> (Option<String>, Rule) {
    let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_owned);
    match cloud {
        "aws" if body.contains_key("deviceClaim") => {
            (Some("vpc.amazonaws.com/efa".to_owned()), Rule::Claim)
        }
        "aws" => (Some("vpc.amazonaws.com/efa".to_owned()), Rule::PerGpu),
        "azure" => {
            let name = text("rdmaDeviceName").unwrap_or_else(|| "hca_shared_devices_a".to_owned());
            let rule = if body.contains_key("rdmaDevicesPerContainer") {
                Rule::PerContainer
            } else {
                Rule::PerGpu
            };
            (Some(format!("rdma/{name}")), rule)
        }
        "oci" => (
            Some(text("resourceName").unwrap_or_else(|| "nvidia.com/mlnxnics".to_owned())),
            Rule::PerGpu,
        ),
        "rdma" if body.contains_key("rails") => (None, Rule::Rails),
        "rdma" if body.get("resourceName") == Some(&Value::Null) => (None, Rule::Nothing),
        "rdma" => {
            let resource =
                text("resourceName").unwrap_or_else(|| "rdma/rdma_shared_device_a".to_owned());
            let per_gpu = body.contains_key("devicesPerGPU") || body.contains_key("devicesPerNode");
            let rule = if per_gpu {
                Rule::PerGpu
            } else {
                Rule::PerContainer
            };
            (Some(resource), rule)
        }
        _ => (None, Rule::Nothing),
    }
}

pub fn rows(
    out: &mut Written,
    cluster: &Cluster,
    cloud: &Cloud,
    shapes: &[Shape],
    main: &Shape,
    body: &Mapping,
) -> Mapping {
    let request = block_request(cloud.name, body);
    let mut rows = Mapping::new();
    for s in shapes {
        let Some((label, name)) = &s.key else {
            if !std::ptr::eq(s, main) {
                out.header.push(format!(
                    "{} cannot have a row (no label names them): pods there get the block's injection.",
                    s.title()
                ));
            }
            continue;
        };
        if !is_label_value(name) {
            out.header.push(format!(
                "{}: not a valid row key (a label value), so no row names it.",
                s.title()
            ));
            continue;
        }
        if s.gpus > MAX_GPUS {
            out.header.push(format!(
                "{}: {} GPUs a node, more than a row's gpusPerNode may say ({MAX_GPUS}): time-slicing or MIG replicas? No row.",
                s.title(),
                s.gpus
            ));
            continue;
        }
        if !INSTANCE_TYPE_LABELS.contains(label) && !cloud.machine_labels.contains(label) {
            out.header.push(format!(
                "{}: the {} block reads no {label} label, so no row can name it.",
                s.title(),
                cloud.name
            ));
            continue;
        }
        let mut row = Mapping::new();
        let mut why: Vec<String> = Vec::new();
        match fabric_row(cloud, s, &request, &main.fabric, cluster, out, &mut row) {
            Ok(Some(reason)) => why.push(reason),
            Ok(None) => {}
            Err(unsaid) => out.header.push(format!(
                "{}: {}; {unsaid}: pods there get the block's device.",
                s.title(),
                s.fabric.describe(s.gpus)
            )),
        }
        let builtin = s.builtin(cloud);
        if builtin.is_none() && !row.contains_key("gpusPerNode") {
            row.insert("gpusPerNode".into(), s.gpus.into());
        }
        let builtin_nvlink = builtin.is_some_and(|m| m.nvlink_domain);
        if s.clique && !builtin_nvlink {
            row.insert("multiNodeNVLink".into(), true.into());
            why.push("nvidia.com/gpu.clique labels: multi-node NVLink".to_owned());
        } else if !s.clique && s.gfd && builtin.is_none() {
            // A built-in row knows its machine already; one of NVLink is never contradicted.
            row.insert("multiNodeNVLink".into(), false.into());
            why.push("GPU Feature Discovery runs there and writes no nvidia.com/gpu.clique: no multi-node NVLink".to_owned());
        }
        if builtin.is_none() {
            why.insert(0, "not a built-in machine".to_owned());
        }
        if row.is_empty() {
            continue;
        }
        let mut line = format!(
            "{name}: {} node{}, {} GPUs each",
            s.nodes,
            if s.nodes == 1 { "" } else { "s" },
            s.gpus
        );
        if !why.is_empty() {
            line.push_str(&format!("; {}", why.join("; ")));
        }
        out.note(&[cloud.name, "instanceTypes", name], format!("{line}."));
        rows.insert(name.as_str().into(), Value::Mapping(row));
    }
    rows
}

/// The row's keys for the shape's fabric, and why; `Err`: what no row of this block can say.
fn fabric_row(
    cloud: &Cloud,
    s: &Shape,
    (resource, rule): &(Option<String>, Rule),
    main: &Fabric,
    cluster: &Cluster,
    out: &mut Written,
    row: &mut Mapping,
) -> Result<Option<String>, String> {
    let counts = |row: &mut Mapping, devices: u64| {
        row.insert("devicesPerNode".into(), devices.into());
        row.insert("gpusPerNode".into(), s.gpus.into());
    };
    let same_resource = |r: &str| resource.as_deref() == Some(r);
    let builtin = s.builtin(cloud);
    // The row's key that names another device, where the block has one.
    let resource_key = match cloud.name {
        "oci" | "rdma" => Some("resourceName"),
        "azure" => Some("rdmaDeviceName"),
        _ => None,
    };
    let named = |r: &str| match cloud.name {
        "azure" => r.strip_prefix("rdma/").map(str::to_owned),
        _ => Some(r.to_owned()),
    };
    match (&s.fabric, rule) {
        (_, Rule::Nothing) if cloud.name == "gcp" => Ok(None),
        (
            Fabric::Dedicated {
                resource: r,
                devices,
            },
            Rule::PerGpu,
        ) => {
            let built_in = builtin.is_some_and(|m| {
                cloud.plugin == Some(r.as_str()) && m.devices == Some(*devices) && m.gpus == s.gpus
            });
            if same_resource(r) {
                if built_in {
                    return Ok(None);
                }
                counts(row, *devices);
                return Ok(Some(match builtin {
                    Some(_) => format!(
                        "the nodes show {devices} {r} for {} GPUs, not the built-in row's count",
                        s.gpus
                    ),
                    None => format!("{devices} {r} for {} GPUs, as the nodes show", s.gpus),
                }));
            }
            let (Some(key), Some(value)) = (resource_key, named(r)) else {
                return Err(format!(
                    "the {} block's device is always its own",
                    cloud.name
                ));
            };
            row.insert(key.into(), value.into());
            counts(row, *devices);
            Ok(Some(format!(
                "{devices} {r} for {} GPUs, another device than the block's",
                s.gpus
            )))
        }
        (Fabric::Dedicated { .. }, _) => Err(format!(
            "the {} block's count is per container or per rail, which a row cannot make per GPU",
            cloud.name
        )),
        (Fabric::Shared { resource: r, .. }, Rule::PerContainer) => {
            if same_resource(r) {
                return Ok(None);
            }
            let (Some(key), Some(value)) = (resource_key, named(r)) else {
                return Err(format!(
                    "the {} block's device is always its own",
                    cloud.name
                ));
            };
            row.insert(key.into(), value.into());
            Ok(Some(format!(
                "{r}, another device than the block's, 1 per container"
            )))
        }
        (Fabric::Shared { resource: r, .. }, _) if cloud.name == "rdma" => {
            row.insert("resourceName".into(), r.as_str().into());
            row.insert("devicesPerContainer".into(), 1.into());
            Ok(Some(format!(
                "{r}, another device than the block's: a shared pool, 1 per container"
            )))
        }
        (Fabric::Shared { .. }, _) => Err(format!(
            "the {} block counts per GPU, and a row cannot make it per container",
            cloud.name
        )),
        (Fabric::Rails(rails), _) if cloud.name == "rdma" => {
            // The block's rails are the largest group's; a shape of other rails lists its own.
            if *rule == Rule::Rails && *main == s.fabric {
                return Ok(None);
            }
            row.insert("rails".into(), multus::rails(out, cluster, rails));
            Ok(Some("its own rails, one resource each".to_owned()))
        }
        (Fabric::Rails(_), _) => Err(format!("the {} block has no rails", cloud.name)),
        (Fabric::None, Rule::PerGpu) if cloud.name == "rdma" => {
            row.insert("resourceName".into(), Value::Null);
            Ok(Some(
                "no fabric device on these nodes: no device is requested".to_owned(),
            ))
        }
        (Fabric::None, Rule::PerGpu) => {
            counts(row, 0);
            Ok(Some(
                "no fabric device on these nodes: no device is requested".to_owned(),
            ))
        }
        (Fabric::None, Rule::PerContainer | Rule::Rails) if cloud.name == "rdma" => {
            row.insert("resourceName".into(), Value::Null);
            Ok(Some(
                "no fabric device on these nodes: no device is requested".to_owned(),
            ))
        }
        (Fabric::None, Rule::Nothing | Rule::Claim) => Ok(None),
        (Fabric::None, _) => Err(format!(
            "the {} block's count is per container, which a row cannot undo",
            cloud.name
        )),
    }
}

/// A label value, as a row's key must be (behaviour.md §1.4).
fn is_label_value(value: &str) -> bool {
    let ok = |c: char| c.is_ascii_alphanumeric();
    (1..=63).contains(&value.len())
        && value.starts_with(ok)
        && value.ends_with(ok)
        && value.chars().all(|c| ok(c) || "-_.".contains(c))
}
