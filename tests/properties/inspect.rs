//! What a mutation did, read from the pods and settings: the GPUs counted, the GCP fabric
//! injected, the networks named.

use crate::api_rules::as_list;
use crate::generators::containers::DEFAULT_GPU_RESOURCES;
use multinode_networking_policy::k8s::quantity;
use serde_json::Value;

/// The resources the settings count GPUs from (`gpuResources`, behaviour.md §1.3).
pub(crate) fn gpu_resources(settings: &Value) -> Vec<String> {
    settings
        .get("gpuResources")
        .and_then(Value::as_array)
        .map(|list| {
            let mut names: Vec<String> = Vec::new();
            for name in list.iter().filter_map(Value::as_str) {
                if !names.iter().any(|n| n == name) {
                    names.push(name.to_string());
                }
            }
            names
        })
        .unwrap_or_else(|| {
            DEFAULT_GPU_RESOURCES
                .iter()
                .map(|r| r.to_string())
                .collect()
        })
}

/// The GPUs a container requests as the policy counts them: the sum over `resources` of each one's
/// `requests`, else `limits`, `null` read as absent; `None` when it requests none (a count that
/// cannot be read counts none).
pub(crate) fn gpus(container: &Value, resources: &[String]) -> Option<u64> {
    resources
        .iter()
        .filter_map(|resource| {
            ["requests", "limits"]
                .iter()
                .find_map(|side| {
                    container
                        .get("resources")?
                        .get(*side)?
                        .get(resource)
                        .filter(|v| !v.is_null())
                })
                .and_then(|v| quantity::whole(&v.to_string()).ok())
        })
        .fold(None, |sum: Option<u64>, n| {
            Some(sum.unwrap_or(0).saturating_add(n))
        })
        .filter(|n| *n > 0)
}

/// The GCP fabric a mutation injected, told by what it added: TCPXO's or TCPX's daemon, or RDMA's
/// interfaces from eth2 on without a daemon.
pub(crate) fn added_fabric(before: &Value, after: &Value) -> Option<&'static str> {
    let inits = as_list(after.pointer("/spec/initContainers"));
    let added = &inits[as_list(before.pointer("/spec/initContainers"))
        .len()
        .min(inits.len())..];
    for (name, fabric) in [
        ("tcpxo-daemon", "mutated: TCPXO"),
        ("tcpx-daemon", "mutated: TCPX"),
    ] {
        if added.iter().any(|c| c["name"] == name) {
            return Some(fabric);
        }
    }
    // TCPXO's daemon is not added where the pod has a container of its name: the interfaces
    // tell the fabrics apart then, RDMA's NICs starting at eth2, the others' at eth1.
    let key = "/metadata/annotations/networking.gke.io~1interfaces";
    let interfaces = after
        .pointer(key)
        .filter(|_| before.pointer(key).is_none())?;
    let list: Vec<Value> = serde_json::from_str(interfaces.as_str()?).ok()?;
    (list.get(1)?["interfaceName"] == "eth2").then_some("mutated: RDMA")
}

/// The networks GKE's interfaces annotation names after `eth0`, in order, if it is a list of
/// `{interfaceName, network}`.
pub(crate) fn interface_networks(pod: &Value) -> Option<Vec<String>> {
    let text = pod
        .pointer("/metadata/annotations/networking.gke.io~1interfaces")?
        .as_str()?;
    let list: Vec<Value> = serde_json::from_str(text).ok()?;
    list.iter()
        .skip(1)
        .map(|i| i["network"].as_str().map(String::from))
        .collect()
}

pub(crate) fn show(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}
