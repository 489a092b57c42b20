//! The record of what was injected (behaviour.md §2.1), checked independently of the policy: a
//! case whose expected pod carries the record is held to it exactly; for every other mutated
//! case, written before the record existed, the record the policy wrote is checked against the
//! case (it parses, compact and in the contract's key order; its cloud is the case's; its fabric
//! one of that cloud's and, on GCP, the one whose daemon the expected pod has; each container it
//! lists has, in the expected pod, the device count it gives; no GPU container of the expected pod
//! is missing; the audit annotation carries the same text) and then added to the expected pod,
//! so that the rest is compared exactly.

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;

use crate::Response;

/// The audit annotation's key.
pub const AUDIT_KEY: &str = "injected";
use fixtures::RECORD_KEYS as KEYS;
const CLOUDS: [&str; 5] = ["aws", "azure", "gcp", "oci", "rdma"];
const MACHINE_LABELS: [&str; 5] = [
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
    "cloud.google.com/gke-accelerator",
    "nvidia.com/gpu.machine",
    "node.coreweave.cloud/type",
];
/// The key a record has besides [`KEYS`] where the injection has rails, after `device`.
const RAILS: &str = "rails";
/// The key an MPIJob launcher's record has last (behaviour.md §3.12); a launcher that runs no
/// rank has none of `device`, `machine` and `containers`.
const LAUNCHER: &str = "launcher";
/// The launch agents of Open MPI 4 and 5 and their daemons, as behaviour.md §3.12 writes them.
const AGENTS: [(&str, &str); 2] = [
    ("OMPI_MCA_orte_launch_agent", "orted"),
    ("PRTE_MCA_prte_launch_agent", "prted"),
];

/// The record's key under `settings`; `None` where `recordAnnotation: ""` turns it off.
pub fn key(settings: &Value) -> Option<String> {
    fixtures::record_key(settings).map(str::to_string)
}

/// The record on `pod` under `key`, if any.
pub fn on<'p>(pod: &'p Value, key: &str) -> Option<&'p str> {
    pod["metadata"]["annotations"].get(key)?.as_str()
}

/// The pod a case expects, given the policy's `response`: `expected` itself when it carries the
/// record (or the settings turn it off, or there is no mutation to hold it to), else `expected`
/// with the policy's record, once that is checked.
pub fn expected_pod(settings: &Value, expected: &Value, response: &Response) -> Result<Value> {
    let Some(mutated) = &response.mutated_object else {
        return Ok(expected.clone());
    };
    let audit = response
        .audit_annotations
        .as_ref()
        .and_then(|a| a.get(AUDIT_KEY))
        .context("a mutation without the audit annotation `injected`")?;
    check(settings, expected, audit).context("the audit annotation's record")?;
    let Some(key) = key(settings) else {
        return Ok(expected.clone());
    };
    if let Some(written) = on(expected, &key) {
        ensure!(
            written == audit,
            "the audit annotation {audit} is not the expected record {written}"
        );
        return Ok(expected.clone());
    }
    let record = on(mutated, &key).with_context(|| format!("the mutated pod has no {key}"))?;
    ensure!(
        record == audit,
        "the pod's record {record} is not the audit annotation's {audit}"
    );
    let mut with = expected.clone();
    let metadata = with
        .as_object_mut()
        .context("the expected pod is not an object")?
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    let annotations = metadata
        .as_object_mut()
        .context("metadata is not an object")?
        .entry("annotations")
        .or_insert_with(|| Value::Object(Default::default()));
    annotations
        .as_object_mut()
        .context("metadata.annotations is not an object")?
        .insert(key, Value::String(record.to_string()));
    Ok(with)
}

/// The audit annotations the contract gives for a case's expected pod: the record it carries.
pub fn expected_audit(settings: &Value, expected: &Value, response: &Response) -> Option<Value> {
    let key = key(settings);
    let on_pod = key.as_deref().and_then(|key| on(expected, key));
    // With the record off, only the policy's answer carries it.
    let record = on_pod.map(str::to_string).or_else(|| {
        response
            .audit_annotations
            .as_ref()
            .and_then(|a| a.get(AUDIT_KEY).cloned())
    })?;
    Some(serde_json::json!({ AUDIT_KEY: record }))
}

/// The policy crate's version, from its Cargo.toml.
fn policy_version() -> String {
    let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml"))
        .unwrap_or_default();
    manifest
        .lines()
        .find_map(|line| line.strip_prefix("version = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap_or_default()
        .to_string()
}

/// Checks `text`, a record, against the case's settings and expected pod.
pub fn check(settings: &Value, expected: &Value, text: &str) -> Result<()> {
    let record: Value =
        serde_json::from_str(text).with_context(|| format!("{text} is not JSON"))?;
    let object = record.as_object().context("the record is not an object")?;
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let launcher = object.get(LAUNCHER);
    let alone = launcher.is_some() && !object.contains_key("containers");
    let mut order = match alone {
        true => KEYS[..3].to_vec(),
        false => KEYS.to_vec(),
    };
    if launcher.is_some() {
        order.push(LAUNCHER);
    }
    if object.contains_key(RAILS) {
        let after_device = order
            .iter()
            .position(|k| *k == "device")
            .map_or(0, |at| at + 1);
        order.insert(after_device, RAILS);
    }
    let mut want = order.clone();
    want.sort_unstable();
    ensure!(
        keys == want,
        "the record's keys are {keys:?}, not {order:?}"
    );
    // Compact: re-serialised (only the order of keys may differ) it is as long; in order: each
    // top-level key after the one before (the values hold no `,"key":` of their own here).
    ensure!(
        serde_json::to_string(&record)?.len() == text.len(),
        "the record {text} is not compact JSON"
    );
    let mut at = 0;
    for key in order {
        let found = text[at..]
            .find(&format!("\"{key}\":"))
            .with_context(|| format!("{key} is out of order in {text}"))?;
        at += found;
    }
    ensure!(
        record["policy"] == policy_version().as_str(),
        "policy is {}, not the crate's version {}",
        record["policy"],
        policy_version()
    );

    let cloud = CLOUDS
        .iter()
        .find(|c| settings[**c]["enabled"] == true)
        .context("the case enables no cloud")?;
    ensure!(
        record["cloud"] == *cloud,
        "cloud is {}, the case's is {cloud}",
        record["cloud"]
    );
    // The daemon is the policy's init container, or a container of the user's of its name.
    let init_names: Vec<&str> = ["initContainers", "containers"]
        .iter()
        .flat_map(|list| expected["spec"][*list].as_array().into_iter().flatten())
        .filter_map(|c| c["name"].as_str())
        .collect();
    let fabric = record["fabric"]
        .as_str()
        .context("fabric is not a string")?;
    match (*cloud, fabric) {
        ("aws", "efa") | ("azure", "infiniband") | ("oci", "sriov") | ("rdma", "rdma") => {}
        // A launcher that runs no rank gets no daemon: its record names its workers' fabric.
        ("gcp", "tcpxo" | "tcpx" | "rdma") if alone => {}
        ("gcp", "tcpxo" | "tcpx" | "rdma") => {
            let daemon = match fabric {
                "rdma" => None,
                daemon => Some(format!("{daemon}-daemon")),
            };
            for name in ["tcpxo-daemon", "tcpx-daemon"] {
                ensure!(
                    init_names.contains(&name) == (daemon.as_deref() == Some(name)),
                    "fabric {fabric}, but the expected pod's containers are {init_names:?}"
                );
            }
        }
        _ => bail!("fabric {fabric} is not one of {cloud}'s"),
    }
    if let Some(launcher) = launcher {
        check_launcher(launcher, expected).context("launcher")?;
    }
    if alone {
        return Ok(());
    }
    let device = match (&record["device"], *cloud) {
        (Value::Null, "gcp") => None,
        (Value::String(device), "aws" | "azure" | "oci" | "rdma") => Some(device.as_str()),
        // A fabric without a device resource, or with rails instead (behaviour.md §3.9).
        (Value::Null, "rdma") => None,
        (other, _) => bail!("device {other} on {cloud}"),
    };
    // Rails stand in the device's place: each wired container requests every one.
    let rails: Vec<&str> = match record.get(RAILS) {
        None => Vec::new(),
        Some(Value::Array(list)) if !list.is_empty() && device.is_none() => list
            .iter()
            .map(|rail| rail.as_str().context("a rail is not a string"))
            .collect::<Result<_>>()?,
        Some(other) => bail!("rails {other} beside device {}", record["device"]),
    };
    check_machine(&record["machine"], &expected["spec"], &pools_of(settings))?;

    let containers = record["containers"]
        .as_object()
        .context("containers is not an object")?;
    let pod_containers: Vec<&Value> = expected["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    for (name, entry) in containers {
        let container = pod_containers
            .iter()
            .find(|c| c["name"] == name.as_str())
            .with_context(|| format!("the record lists {name}, which the pod does not have"))?;
        // A DRA claim of the fabric stands for the count (behaviour.md §2.1, §3.8): the container
        // and the pod name it.
        if let Some(claim) = entry.get("claim") {
            let named = |list: &Value| {
                list.as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["name"] == *claim)
            };
            ensure!(
                entry.as_object().map(|e| e.len()) == Some(1)
                    && named(&container["resources"]["claims"])
                    && named(&expected["spec"]["resourceClaims"]),
                "the record gives {name} {entry}, a claim the expected pod's container does not name"
            );
            continue;
        }
        for rail in &rails {
            ensure!(
                quantity(&container["resources"]["requests"][*rail]).is_some(),
                "the record gives {name} the rail {rail}, which the expected pod's container does not request"
            );
        }
        let want = match device {
            Some(device) => {
                let count = quantity(&container["resources"]["requests"][device]).unwrap_or(0);
                serde_json::json!({ "devices": count })
            }
            None => serde_json::json!({}),
        };
        ensure!(
            *entry == want,
            "the record gives {name} {entry}; the expected pod {want}"
        );
    }
    let resources: Vec<String> = match settings.get("gpuResources") {
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(|r| r.as_str().map(str::to_string))
            .collect(),
        _ => vec!["nvidia.com/gpu".into(), "amd.com/gpu".into()],
    };
    for container in &pod_containers {
        let gpus: u64 = resources
            .iter()
            .filter_map(|r| {
                let resources = &container["resources"];
                let value = match &resources["requests"][r] {
                    Value::Null => &resources["limits"][r],
                    value => value,
                };
                quantity(value)
            })
            .sum();
        let name = container["name"].as_str().unwrap_or_default();
        ensure!(
            gpus == 0 || containers.contains_key(name),
            "the record misses the GPU container {name}"
        );
    }
    Ok(())
}

/// The node pool labels (behaviour.md §3.5): those every cloud knows, written again here from the
/// contract rather than taken from the policy.
const POOL_LABELS: [&str; 6] = [
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "cloud.google.com/gke-nodepool",
    "kubernetes.azure.com/agentpool",
    "agentpool",
    "oke.oraclecloud.com/pool.name",
];

/// Every block's `pools` of `settings`, merged: label → value → machines.
fn pools_of(settings: &Value) -> Value {
    let mut pools = serde_json::Map::new();
    for cloud in CLOUDS {
        if let Some(table) = settings[cloud]["pools"].as_object() {
            pools.extend(table.clone());
        }
    }
    Value::Object(pools)
}

/// A launcher's part: its MPIJob and MPI (one of mpi-operator's), its first container by name,
/// which has each variable listed under `env`, and where `agent` is (Open MPI only), both launch
/// agents in that container, `env NAME=value … <daemon>`, carrying exactly those variables in
/// that order.
fn check_launcher(launcher: &Value, expected: &Value) -> Result<()> {
    let part = launcher.as_object().context("not an object")?;
    let mpi = launcher["mpi"].as_str().context("mpi")?;
    ensure!(
        ["OpenMPI", "Intel", "MPICH"].contains(&mpi),
        "mpi {mpi} is none of mpi-operator's"
    );
    let keys: Vec<&str> = part.keys().map(String::as_str).collect();
    let mut want = vec!["container", "env", "mpi", "mpiJob"];
    if part.contains_key("agent") {
        ensure!(mpi == "OpenMPI", "an agent for {mpi}");
        want.insert(0, "agent");
    }
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    ensure!(sorted == want, "keys {keys:?}");
    ensure!(
        launcher["mpiJob"].is_string(),
        "mpiJob {}",
        launcher["mpiJob"]
    );
    let first = &expected["spec"]["containers"][0];
    ensure!(
        launcher["container"] == first["name"],
        "the container {} is not the pod's first, {}",
        launcher["container"],
        first["name"]
    );
    let entries = first["env"].as_array().cloned().unwrap_or_default();
    let value = |name: &str| {
        entries
            .iter()
            .rev()
            .find(|e| e["name"] == name)
            .map(|e| e["value"].as_str().unwrap_or_default().to_string())
    };
    let names = |key: &str| -> Result<Vec<String>> {
        launcher[key]
            .as_array()
            .with_context(|| format!("{key} is not a list"))?
            .iter()
            .map(|n| {
                n.as_str()
                    .map(str::to_string)
                    .context("a name that is no string")
            })
            .collect()
    };
    for name in names("env")? {
        ensure!(
            value(&name).is_some(),
            "{name} is not in the container's env"
        );
    }
    let Some(_) = part.get("agent") else {
        return Ok(());
    };
    let carried = names("agent")?;
    for (variable, daemon) in AGENTS {
        let words = value(variable).with_context(|| format!("no {variable}"))?;
        let inner = words
            .strip_prefix("env ")
            .and_then(|w| w.strip_suffix(&format!(" {daemon}")))
            .with_context(|| format!("{variable} is {words:?}"))?;
        let agent_names: Vec<&str> = inner
            .split(' ')
            .map(|word| word.split_once('=').map_or(word, |(name, _)| name))
            .collect();
        ensure!(
            agent_names == carried,
            "{variable} carries {agent_names:?}, the record {carried:?}"
        );
    }
    Ok(())
}

/// `machine`: null, or the name and where the expected pod's spec names it: by the label's
/// value, or through the settings' `pools` by a pool label's.
fn check_machine(machine: &Value, spec: &Value, pools: &Value) -> Result<()> {
    if machine.is_null() {
        return Ok(());
    }
    let name = machine["name"].as_str().context("machine.name")?;
    let from = machine["from"].as_str().context("machine.from")?;
    ensure!(
        machine.as_object().is_some_and(|m| m.len() == 2),
        "machine {machine} has other keys than name and from"
    );
    let (field, label) = from
        .split_once(' ')
        .with_context(|| format!("machine.from {from} is not `<field> <label>`"))?;
    let pool = POOL_LABELS.contains(&label) || pools.get(label).is_some();
    ensure!(
        MACHINE_LABELS.contains(&label) || pool,
        "machine.from names {label}"
    );
    let values: Vec<&str> = match field {
        "nodeSelector" => spec["nodeSelector"][label].as_str().into_iter().collect(),
        "affinity" => spec["affinity"]["nodeAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|t| t["matchExpressions"].as_array().into_iter().flatten())
            .filter(|e| e["key"] == label && e["operator"] == "In")
            .flat_map(|e| e["values"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect(),
        other => bail!("machine.from names the field {other}"),
    };
    // A GPU model names its machine through the policy's table; an instance type is the name.
    let named = if label.ends_with("gke-accelerator") {
        !values.is_empty()
    } else if pool {
        values.iter().any(|value| match &pools[label][value] {
            Value::String(one) => one == name,
            Value::Array(several) => several.iter().any(|m| m == name),
            _ => false,
        })
    } else {
        values.contains(&name)
    };
    ensure!(named, "the pod's {field} does not name {name} by {label}");
    Ok(())
}

/// A whole quantity as the cases write it: a number or its string.
fn quantity(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({"spec": {
            "nodeSelector": {"node.kubernetes.io/instance-type": "p5.48xlarge"},
            "containers": [
                {"name": "t", "resources": {"requests": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}}},
                {"name": "log"},
            ],
        }})
    }

    const GOOD: &str = r#"{"policy":"0.1.0","cloud":"aws","fabric":"efa","device":"vpc.amazonaws.com/efa","machine":{"name":"p5.48xlarge","from":"nodeSelector node.kubernetes.io/instance-type"},"containers":{"t":{"devices":32}}}"#;

    #[test]
    fn a_record_true_to_the_pod_passes_and_each_wrong_part_fails() {
        let settings = json!({"aws": {"enabled": true}});
        check(&settings, &pod(), GOOD).unwrap();
        for (from, to) in [
            (r#""devices":32"#, r#""devices":31"#),
            (r#""cloud":"aws""#, r#""cloud":"oci""#),
            (r#""fabric":"efa""#, r#""fabric":"rdma""#),
            (r#"{"t":{"devices":32}}"#, "{}"),
            (r#""name":"p5.48xlarge""#, r#""name":"p4d.24xlarge""#),
            ("nodeSelector node", "affinity node"),
            (r#""policy":"0.1.0""#, r#""policy":"9.9.9""#),
            (
                r#"{"policy":"0.1.0","cloud":"aws","#,
                r#"{"cloud":"aws","policy":"0.1.0","#,
            ),
            (r#""cloud":"aws""#, r#""cloud": "aws""#),
        ] {
            let bad = GOOD.replacen(from, to, 1);
            assert!(check(&settings, &pod(), &bad).is_err(), "{bad} passed");
        }
    }
}
