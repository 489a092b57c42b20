//! Which kind of cluster a node belongs to: one of the four clouds, by its provider ID or the
//! labels its cloud's node agent writes, else the fifth kind, the `rdma` block (on-prem, the
//! neoclouds). A table, so that a cloud is one row.

use crate::node::Node;

/// A managed Kubernetes of one cloud.
#[derive(Debug, PartialEq, Eq)]
pub struct Kind {
    /// The settings block's key.
    pub block: &'static str,
    /// Its name in comments.
    pub service: &'static str,
    /// `spec.providerID` starts with one of these.
    pub provider_ids: &'static [&'static str],
    /// Some label key starts with one of these.
    pub label_prefixes: &'static [&'static str],
}

pub const CLOUDS: [Kind; 4] = [
    Kind {
        block: "aws",
        service: "EKS",
        provider_ids: &["aws://"],
        label_prefixes: &["eks.amazonaws.com/"],
    },
    Kind {
        block: "azure",
        service: "AKS",
        provider_ids: &["azure://"],
        label_prefixes: &["kubernetes.azure.com/"],
    },
    Kind {
        block: "gcp",
        service: "GKE",
        provider_ids: &["gce://"],
        label_prefixes: &["cloud.google.com/gke-"],
    },
    Kind {
        block: "oci",
        service: "OKE",
        // OKE writes the instance's OCID itself; other tools prefix it.
        provider_ids: &["oci://", "ocid1."],
        label_prefixes: &["oci.oraclecloud.com/"],
    },
];

/// The cloud a node shows, and what showed it; `None`: no cloud's mark.
pub fn of(node: &Node) -> Option<(&'static Kind, String)> {
    CLOUDS.iter().find_map(|kind| {
        if let Some(p) = kind
            .provider_ids
            .iter()
            .find(|p| node.provider_id.starts_with(**p))
        {
            return Some((kind, format!("spec.providerID {p}…")));
        }
        kind.label_prefixes
            .iter()
            .find(|p| node.has_label_prefix(p))
            .map(|p| (kind, format!("labels {p}*")))
    })
}
