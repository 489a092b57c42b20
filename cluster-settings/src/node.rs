//! One node and one NetworkAttachmentDefinition as the settings need them: labels, the provider
//! ID, and the extended resources the node can allocate. Read leniently: a field of the wrong
//! type reads as absent, since a node object comes from the API server and only its meaning is
//! in doubt.

use std::collections::BTreeMap;

use serde_json::Value;

/// The extended resources GPUs are counted by (the policy's default `gpuResources`).
pub const GPU_RESOURCES: [&str; 2] = ["nvidia.com/gpu", "amd.com/gpu"];

/// GPU Feature Discovery's GPU count, for nodes whose GPUs go through DRA and advertise no
/// `nvidia.com/gpu`.
const GPU_COUNT_LABEL: &str = "nvidia.com/gpu.count";

#[derive(Debug, Clone)]
pub struct Node {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub provider_id: String,
    /// `status.allocatable`, every quantity that is a whole number.
    pub allocatable: BTreeMap<String, u64>,
}

impl Node {
    pub fn read(item: &Value) -> Node {
        let text = |pointer: &str| {
            item.pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let strings = |pointer: &str| -> BTreeMap<String, String> {
            item.pointer(pointer)
                .and_then(Value::as_object)
                .map(|map| {
                    map.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                        .collect()
                })
                .unwrap_or_default()
        };
        let allocatable = strings("/status/allocatable")
            .into_iter()
            .filter_map(|(k, v)| Some((k, whole(&v)?)))
            .collect();
        Node {
            name: text("/metadata/name"),
            labels: strings("/metadata/labels"),
            annotations: strings("/metadata/annotations"),
            provider_id: text("/spec/providerID"),
            allocatable,
        }
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(String::as_str)
    }

    /// The node's GPUs, and the resource (or label) they were counted by; 0 for a node without.
    pub fn gpus(&self) -> (u64, &'static str) {
        for resource in GPU_RESOURCES {
            if let Some(&n) = self.allocatable.get(resource).filter(|n| **n > 0) {
                return (n, resource);
            }
        }
        match self.label(GPU_COUNT_LABEL).and_then(whole) {
            Some(n) if n > 0 => (n, GPU_COUNT_LABEL),
            _ => (0, ""),
        }
    }

    /// The label keys starting with `prefix`.
    pub fn has_label_prefix(&self, prefix: &str) -> bool {
        self.labels.keys().any(|k| k.starts_with(prefix))
    }
}

/// A Kubernetes quantity that is a whole number: `8`, `1k` (1000, as the API server writes an
/// RDMA shared pool of `rdmaHcaMax: 1000`), `2Ki`. Anything else (`500m`, memory with a
/// fraction) is not a device count.
pub fn whole(quantity: &str) -> Option<u64> {
    const SUFFIXES: [(&str, u64); 8] = [
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
        ("k", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
        ("T", 1_000_000_000_000),
    ];
    let (digits, factor) = SUFFIXES
        .iter()
        .find_map(|(s, f)| quantity.strip_suffix(s).map(|d| (d, *f)))
        .unwrap_or((quantity, 1));
    digits.parse::<u64>().ok()?.checked_mul(factor)
}

/// A NetworkAttachmentDefinition: its `namespace/name` and the device resource its annotation
/// names (the Network Operator's and the SR-IOV operator's NADs carry it).
#[derive(Debug, Clone)]
pub struct Nad {
    pub namespace: String,
    pub name: String,
    pub resource: Option<String>,
}

/// The annotation by which Multus ties a NAD to a device plugin's resource.
pub const RESOURCE_ANNOTATION: &str = "k8s.v1.cni.cncf.io/resourceName";

impl Nad {
    pub fn read(item: &Value) -> Option<Nad> {
        let meta = item.get("metadata")?;
        let text = |key: &str| meta.get(key).and_then(Value::as_str).map(str::to_owned);
        Some(Nad {
            name: text("name")?,
            namespace: text("namespace").unwrap_or_else(|| "default".to_owned()),
            resource: meta
                .pointer("/annotations")
                .and_then(|a| a.get(RESOURCE_ANNOTATION))
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    /// As the settings name a network: `namespace/name`.
    pub fn qualified(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::whole;

    #[test]
    fn quantities() {
        assert_eq!(whole("63"), Some(63));
        assert_eq!(whole("1k"), Some(1000));
        assert_eq!(whole("2Ki"), Some(2048));
        assert_eq!(whole("500m"), None);
        assert_eq!(whole("1.5"), None);
    }
}
