//! The Multus network of a device: the NetworkAttachmentDefinition whose annotation
//! `k8s.v1.cni.cncf.io/resourceName` names the device's resource, as the Network Operator and the
//! SR-IOV operator write it. Where none does, a comment says which to create.

use serde_yaml::{Mapping, Value};

use crate::input::Cluster;
use crate::node::{Nad, RESOURCE_ANNOTATION};
use crate::write::Written;

/// The NADs that name `resource`, in order.
fn naming<'a>(cluster: &'a Cluster, resource: &str) -> Vec<&'a Nad> {
    let mut nads: Vec<&Nad> = cluster
        .nads
        .iter()
        .filter(|n| n.resource.as_deref() == Some(resource))
        .collect();
    nads.sort_by_key(|n| n.qualified());
    nads
}

/// The network for `resource` in block `block`, `assumed` where no NAD names it and the fabric
/// needs one anyway (OCI's virtual functions).
pub fn network_for(
    out: &mut Written,
    cluster: &Cluster,
    resource: &str,
    block: &str,
    assumed: Option<&str>,
) -> Option<String> {
    let nads = naming(cluster, resource);
    if let Some(first) = nads.first() {
        let mut line = format!(
            "The NetworkAttachmentDefinition {} names {resource} ({RESOURCE_ANNOTATION}): listed once per device.",
            first.qualified()
        );
        if nads.len() > 1 {
            let others: Vec<String> = nads[1..].iter().map(|n| n.qualified()).collect();
            line.push_str(&format!(" Others name it too: {}.", others.join(", ")));
        }
        out.note(&[block, "network"], line);
        return Some(first.qualified());
    }
    let given = if cluster.nads_read {
        format!("No NetworkAttachmentDefinition names {resource}")
    } else {
        "No NetworkAttachmentDefinitions were given (kubectl get network-attachment-definitions -A -o json)".to_owned()
    };
    match assumed {
        Some(network) => {
            out.note(
                &[block, "network"],
                format!(
                    "{given}: {network} is assumed (the vendor's name); create it with the annotation {RESOURCE_ANNOTATION}: {resource} if it is not there."
                ),
            );
            Some(network.to_owned())
        }
        None => {
            out.note(
                &[block],
                format!(
                    "{given}: no Multus network is listed. If the fabric needs one (SR-IOV virtual functions, RoCE macvlan, IPoIB), create a NetworkAttachmentDefinition with the annotation {RESOURCE_ANNOTATION}: {resource} and set {block}.network: <namespace>/<name>."
                ),
            );
            None
        }
    }
}

/// The rails' list: each rail's resource with the network that names it, else the name Launch
/// Kit gives it (assumed, and said).
pub fn rails(out: &mut Written, cluster: &Cluster, rails: &[String]) -> Value {
    let mut assumed = Vec::new();
    let items = rails
        .iter()
        .map(|resource| {
            let network = match naming(cluster, resource).first() {
                Some(nad) => nad.qualified(),
                None => {
                    let name = launch_kit_network(resource);
                    assumed.push(format!("{resource} → {name}"));
                    name
                }
            };
            let mut rail = Mapping::new();
            rail.insert("resourceName".into(), resource.as_str().into());
            rail.insert("network".into(), network.into());
            Value::Mapping(rail)
        })
        .collect();
    if !assumed.is_empty() {
        out.note(
            &["rdma", "rails"],
            format!(
                "No NetworkAttachmentDefinition names these rails' resources ({RESOURCE_ANNOTATION}); the networks are assumed, as Launch Kit names them (short names, resolved in the pod's namespace): {}. Check them with kubectl get network-attachment-definitions -A.",
                assumed.join(", ")
            ),
        );
    }
    Value::Sequence(items)
}

/// Launch Kit's network of a rail's resource: `nvidia.com/sriov_resource_rail_0` →
/// `sriov-network-rail-0`; another name's local part, `_` as `-`.
fn launch_kit_network(resource: &str) -> String {
    let local = resource.rsplit('/').next().unwrap_or(resource);
    local
        .replace("sriov_resource_rail", "sriov-network-rail")
        .replace('_', "-")
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::launch_kit_network;

    #[test]
    fn launch_kit_names() {
        assert_eq!(
            launch_kit_network("nvidia.com/sriov_resource_rail_3"),
            "sriov-network-rail-3"
        );
        assert_eq!(launch_kit_network("nvidia.com/rail0"), "rail0");
    }
}
