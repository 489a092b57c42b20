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
        let Some(name) = row_key(out, cloud, s, main) else {
            continue;
        };
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
        machine_facts(cloud, s, &mut row, &mut why);
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
        rows.insert(name.into(), Value::Mapping(row));
    }
    rows
}

/// The key of the shape's row, or why it can have none (in the output's header): no label
/// names it, its name is no label value, more GPUs than a row may say, a label the block does
/// not read.
fn row_key<'s>(out: &mut Written, cloud: &Cloud, s: &'s Shape, main: &Shape) -> Option<&'s str> {
    let Some((label, name)) = &s.key else {
        if !std::ptr::eq(s, main) {
            out.header.push(format!(
                "{} cannot have a row (no label names them): pods there get the block's injection.",
                s.title()
            ));
        }
        return None;
    };
    let unsaid = if !is_label_value(name) {
        "not a valid row key (a label value), so no row names it.".to_string()
    } else if s.gpus > MAX_GPUS {
        format!(
            "{} GPUs a node, more than a row's gpusPerNode may say ({MAX_GPUS}): time-slicing or MIG replicas? No row.",
            s.gpus
        )
    } else if !INSTANCE_TYPE_LABELS.contains(label) && !cloud.machine_labels.contains(label) {
        format!(
            "the {} block reads no {label} label, so no row can name it.",
            cloud.name
        )
    } else {
        return Some(name.as_str());
    };
    out.header.push(format!("{}: {unsaid}", s.title()));
    None
}

/// The row's GPUs and multi-node NVLink where no built-in row knows them, and why.
fn machine_facts(cloud: &Cloud, s: &Shape, row: &mut Mapping, why: &mut Vec<String>) {
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
    let block = resource.as_deref();
    match (&s.fabric, rule) {
        (_, Rule::Nothing) if cloud.name == "gcp" => Ok(None),
        (Fabric::Dedicated { resource, devices }, Rule::PerGpu) => {
            dedicated_row(cloud, s, block, (resource, *devices), row)
        }
        (Fabric::Dedicated { .. }, _) => Err(format!(
            "the {} block's count is per container or per rail, which a row cannot make per GPU",
            cloud.name
        )),
        (Fabric::Shared { resource, .. }, rule) => shared_row(cloud, block, resource, rule, row),
        (Fabric::Rails(rails), _) if cloud.name == "rdma" => {
            // The block's rails are the largest group's; a shape of other rails lists its own.
            if *rule == Rule::Rails && *main == s.fabric {
                return Ok(None);
            }
            row.insert("rails".into(), multus::rails(out, cluster, rails));
            Ok(Some("its own rails, one resource each".to_owned()))
        }
        (Fabric::Rails(_), _) => Err(format!("the {} block has no rails", cloud.name)),
        (Fabric::None, rule) => no_fabric_row(cloud, s, rule, row),
    }
}

/// The row of a shape whose nodes offer `devices` of the dedicated device `resource`, in a block
/// that counts per GPU and requests `block`.
fn dedicated_row(
    cloud: &Cloud,
    s: &Shape,
    block: Option<&str>,
    (resource, devices): (&str, u64),
    row: &mut Mapping,
) -> Result<Option<String>, String> {
    let builtin = s.builtin(cloud);
    let built_in = builtin.is_some_and(|m| {
        cloud.plugin == Some(resource) && m.devices == Some(devices) && m.gpus == s.gpus
    });
    if block == Some(resource) {
        if built_in {
            return Ok(None);
        }
        counts(row, devices, s.gpus);
        return Ok(Some(match builtin {
            Some(_) => format!(
                "the nodes show {devices} {resource} for {} GPUs, not the built-in row's count",
                s.gpus
            ),
            None => format!(
                "{devices} {resource} for {} GPUs, as the nodes show",
                s.gpus
            ),
        }));
    }
    another_device(cloud, resource, row)?;
    counts(row, devices, s.gpus);
    Ok(Some(format!(
        "{devices} {resource} for {} GPUs, another device than the block's",
        s.gpus
    )))
}

/// The row of a shape whose nodes offer the shared pool `resource`, in a block of `rule` that
/// requests `block`.
fn shared_row(
    cloud: &Cloud,
    block: Option<&str>,
    resource: &str,
    rule: &Rule,
    row: &mut Mapping,
) -> Result<Option<String>, String> {
    match rule {
        Rule::PerContainer if block == Some(resource) => Ok(None),
        Rule::PerContainer => {
            another_device(cloud, resource, row)?;
            Ok(Some(format!(
                "{resource}, another device than the block's, 1 per container"
            )))
        }
        _ if cloud.name == "rdma" => {
            row.insert("resourceName".into(), resource.into());
            row.insert("devicesPerContainer".into(), 1.into());
            Ok(Some(format!(
                "{resource}, another device than the block's: a shared pool, 1 per container"
            )))
        }
        _ => Err(format!(
            "the {} block counts per GPU, and a row cannot make it per container",
            cloud.name
        )),
    }
}

/// The row of a shape whose nodes offer no fabric device, in a block of `rule`.
fn no_fabric_row(
    cloud: &Cloud,
    s: &Shape,
    rule: &Rule,
    row: &mut Mapping,
) -> Result<Option<String>, String> {
    let none = || Some("no fabric device on these nodes: no device is requested".to_owned());
    match rule {
        Rule::PerGpu | Rule::PerContainer | Rule::Rails if cloud.name == "rdma" => {
            row.insert("resourceName".into(), Value::Null);
            Ok(none())
        }
        Rule::PerGpu => {
            counts(row, 0, s.gpus);
            Ok(none())
        }
        Rule::Nothing | Rule::Claim => Ok(None),
        _ => Err(format!(
            "the {} block's count is per container, which a row cannot undo",
            cloud.name
        )),
    }
}

/// A row's count: `devices` for `gpus` GPUs.
fn counts(row: &mut Mapping, devices: u64, gpus: u64) {
    row.insert("devicesPerNode".into(), devices.into());
    row.insert("gpusPerNode".into(), gpus.into());
}

/// The row's key naming `resource`, another device than its block's, where the block has one.
fn another_device(cloud: &Cloud, resource: &str, row: &mut Mapping) -> Result<(), String> {
    let key = match cloud.name {
        "oci" | "rdma" => Some("resourceName"),
        "azure" => Some("rdmaDeviceName"),
        _ => None,
    };
    let value = match cloud.name {
        "azure" => resource.strip_prefix("rdma/").map(str::to_owned),
        _ => Some(resource.to_owned()),
    };
    let (Some(key), Some(value)) = (key, value) else {
        return Err(format!(
            "the {} block's device is always its own",
            cloud.name
        ));
    };
    row.insert(key.into(), value.into());
    Ok(())
}

/// A label value, as a row's key must be (behaviour.md §1.4).
fn is_label_value(value: &str) -> bool {
    let ok = |c: char| c.is_ascii_alphanumeric();
    (1..=63).contains(&value.len())
        && value.starts_with(ok)
        && value.ends_with(ok)
        && value.chars().all(|c| ok(c) || "-_.".contains(c))
}
