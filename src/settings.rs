//! Settings: the chart's `multinodeNetworking` values as the operator writes them, checked once,
//! and turned into a [`Config`] in which "exactly one cloud" is a single enum value.
//!
//! The reader is written by hand over the JSON value rather than derived, so that every message
//! can name the full path of the field (`aws.efaDevicesPerGpu`) and list what is allowed there: a
//! misspelt key must never fall back to a default silently.

use serde_json::{Map, Value};

use crate::k8s_names::{is_dns1123_subdomain, is_kind, is_qualified_name, is_qualified_name_part};

pub const DEFAULT_TRIGGER: &str = "nmp.nvidia.com/enable-multi-node-networking";
pub const DEFAULT_OWNER_KINDS: [&str; 5] = ["PyTorchJob", "MPIJob", "Job", "RunaiJob", "JobSet"];
pub const DEFAULT_OWNER_GROUPS: [&str; 5] = [
    "batch.volcano.sh",
    "kubeflow.org",
    "run.ai",
    "jobset.x-k8s.io",
    "batch",
];
const MAX_PER_GPU: u64 = 64;
const CLOUDS: [&str; 4] = ["aws", "azure", "gcp", "oci"];
const COMMON_KEYS: [&str; 3] = ["triggerAnnotation", "ownerKinds", "ownerApiGroups"];

/// Validated settings: what the rest of the policy works from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub cloud: Cloud,
    pub trigger: String,
    /// Empty means any owner kind, or none.
    pub owner_kinds: Vec<String>,
    /// Empty means any owner API group, or none.
    pub owner_groups: Vec<String>,
}

/// The one cloud whose injection the policy applies, with its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cloud {
    Aws {
        efa_per_gpu: u32,
    },
    Azure {
        rdma_per_gpu: u32,
        rdma_device_name: String,
        topology_config_map: String,
    },
    Gcp,
    Oci {
        rdma_per_gpu: u32,
    },
}

/// Every problem found in the settings, each naming its field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError(pub Vec<String>);

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join("; "))
    }
}

impl Config {
    /// Reads and checks settings. `null` counts as `{}` (the host sends `{}` when there are none).
    pub fn from_value(settings: &Value) -> Result<Config, SettingsError> {
        let empty = Map::new();
        let top = match settings {
            Value::Null => &empty,
            Value::Object(map) => map,
            other => {
                return Err(SettingsError(vec![format!(
                    "settings must be an object with one of {}, got {}",
                    CLOUDS.join(", "),
                    type_name(other)
                )]));
            }
        };
        let mut r = Reader::default();
        r.known_keys("", top, &[&CLOUDS[..], &COMMON_KEYS[..]].concat());

        let aws = r.block(top, "aws", &["enabled", "efaDevicesPerGPU"]);
        let azure = r.block(
            top,
            "azure",
            &[
                "enabled",
                "rdmaDevicesPerGPU",
                "rdmaDeviceName",
                "ncclTopologyConfigMap",
            ],
        );
        let gcp = r.block(top, "gcp", &["enabled"]);
        let oci = r.block(top, "oci", &["enabled", "rdmaDevicesPerGPU"]);

        // Every block's parameters are read, enabled or not: a typo in a disabled block is still a
        // typo, and it would bite the day that block is switched on.
        let efa_per_gpu = r.per_gpu("aws", aws, "efaDevicesPerGPU", 1);
        let azure_rdma_per_gpu = r.per_gpu("azure", azure, "rdmaDevicesPerGPU", 1);
        let rdma_device_name = r.name(
            "azure",
            azure,
            "rdmaDeviceName",
            "hca_shared_devices_a",
            is_qualified_name_part,
            "a resource name of at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, so that rdma/<name> is a valid extended resource",
        );
        let topology_config_map = r.name(
            "azure",
            azure,
            "ncclTopologyConfigMap",
            "nccl-topo",
            is_dns1123_subdomain,
            "a ConfigMap name (lowercase letters, digits, '-' and '.', at most 253 characters)",
        );
        let oci_rdma_per_gpu = r.per_gpu("oci", oci, "rdmaDevicesPerGPU", 8);

        let mut enabled = Vec::new();
        if r.enabled("aws", aws) {
            enabled.push(Cloud::Aws { efa_per_gpu });
        }
        if r.enabled("azure", azure) {
            enabled.push(Cloud::Azure {
                rdma_per_gpu: azure_rdma_per_gpu,
                rdma_device_name,
                topology_config_map,
            });
        }
        if r.enabled("gcp", gcp) {
            enabled.push(Cloud::Gcp);
        }
        if r.enabled("oci", oci) {
            enabled.push(Cloud::Oci {
                rdma_per_gpu: oci_rdma_per_gpu,
            });
        }

        let trigger = r.name(
            "",
            Some(top),
            "triggerAnnotation",
            DEFAULT_TRIGGER,
            is_qualified_name,
            "a valid annotation key ([prefix/]name, the prefix a DNS subdomain, the name at most 63 characters)",
        );
        let owner_kinds = r.list(
            "ownerKinds",
            top,
            &DEFAULT_OWNER_KINDS,
            is_kind,
            "a kind such as PyTorchJob",
        );
        let owner_groups = r.list(
            "ownerApiGroups",
            top,
            &DEFAULT_OWNER_GROUPS,
            |g| g.is_empty() || is_dns1123_subdomain(g),
            "an API group such as batch.volcano.sh (\"\" for the core group)",
        );

        let cloud = match enabled.len() {
            1 => enabled.pop(),
            0 => {
                r.errors.push(format!(
                    "no cloud is enabled: set enabled: true in exactly one of {}",
                    CLOUDS.join(", ")
                ));
                None
            }
            _ => {
                let names: Vec<_> = enabled.iter().map(Cloud::name).collect();
                r.errors.push(format!(
                    "{} are all enabled: enable exactly one cloud per policy",
                    names.join(", ")
                ));
                None
            }
        };
        match cloud {
            Some(cloud) if r.errors.is_empty() => Ok(Config {
                cloud,
                trigger,
                owner_kinds,
                owner_groups,
            }),
            _ => Err(SettingsError(r.errors)),
        }
    }
}

impl Cloud {
    pub fn name(&self) -> &'static str {
        match self {
            Cloud::Aws { .. } => "aws",
            Cloud::Azure { .. } => "azure",
            Cloud::Gcp => "gcp",
            Cloud::Oci { .. } => "oci",
        }
    }
}

/// Collects errors while reading, so that one answer lists every problem.
#[derive(Default)]
struct Reader {
    errors: Vec<String>,
}

impl Reader {
    fn known_keys(&mut self, path: &str, map: &Map<String, Value>, known: &[&str]) {
        for key in map.keys().filter(|k| !known.contains(&k.as_str())) {
            self.errors.push(format!(
                "{}: unknown key; the keys allowed {} are {}",
                join(path, key),
                if path.is_empty() {
                    "at the top level".to_string()
                } else {
                    format!("under {path}")
                },
                known.join(", ")
            ));
        }
    }

    /// A cloud block: absent and `null` read as "not there".
    fn block<'v>(
        &mut self,
        top: &'v Map<String, Value>,
        name: &str,
        known: &[&str],
    ) -> Option<&'v Map<String, Value>> {
        match top.get(name) {
            None | Some(Value::Null) => None,
            Some(Value::Object(map)) => {
                self.known_keys(name, map, known);
                Some(map)
            }
            Some(other) => {
                self.errors.push(format!(
                    "{name}: must be an object such as {{enabled: true}}, got {}",
                    type_name(other)
                ));
                None
            }
        }
    }

    fn enabled(&mut self, path: &str, block: Option<&Map<String, Value>>) -> bool {
        match block.and_then(|b| b.get("enabled")) {
            None | Some(Value::Null) => false,
            Some(Value::Bool(on)) => *on,
            Some(other) => {
                self.errors.push(format!(
                    "{path}.enabled: must be true or false, got {}",
                    show(other)
                ));
                false
            }
        }
    }

    fn per_gpu(
        &mut self,
        path: &str,
        block: Option<&Map<String, Value>>,
        key: &str,
        default: u32,
    ) -> u32 {
        match block.and_then(|b| b.get(key)) {
            None | Some(Value::Null) => default,
            Some(value) => match value.as_u64() {
                Some(n @ 1..=MAX_PER_GPU) => n as u32,
                _ => {
                    self.errors.push(format!(
                        "{}: must be a whole number from 1 to {MAX_PER_GPU} matching the instance type's devices per GPU, got {}",
                        join(path, key),
                        show(value)
                    ));
                    default
                }
            },
        }
    }

    fn name(
        &mut self,
        path: &str,
        block: Option<&Map<String, Value>>,
        key: &str,
        default: &str,
        valid: fn(&str) -> bool,
        what: &str,
    ) -> String {
        match block.and_then(|b| b.get(key)) {
            None | Some(Value::Null) => default.to_string(),
            Some(Value::String(s)) if valid(s) => s.clone(),
            Some(other) => {
                self.errors.push(format!(
                    "{}: must be {what}, got {}",
                    join(path, key),
                    show(other)
                ));
                default.to_string()
            }
        }
    }

    fn list(
        &mut self,
        key: &str,
        top: &Map<String, Value>,
        default: &[&str],
        valid: fn(&str) -> bool,
        what: &str,
    ) -> Vec<String> {
        match top.get(key) {
            None | Some(Value::Null) => default.iter().map(|s| s.to_string()).collect(),
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) if valid(s) => out.push(s.clone()),
                        other => self
                            .errors
                            .push(format!("{key}[{i}]: must be {what}, got {}", show(other))),
                    }
                }
                out
            }
            Some(other) => {
                self.errors.push(format!(
                    "{key}: must be a list (an empty list means any owner), got {}",
                    type_name(other)
                ));
                Vec::new()
            }
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// A value as it appears in a message: short, and typed, so `"4"` and `4` read differently.
fn show(value: &Value) -> String {
    match value {
        Value::Object(_) | Value::Array(_) => type_name(value).to_string(),
        scalar => {
            let text = match scalar {
                Value::String(s) => crate::fragment::render_string(s),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => "null".to_string(),
            };
            if text.len() > 80 {
                format!("{}…", text.chars().take(80).collect::<String>())
            } else {
                text
            }
        }
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(settings: Value) -> String {
        Config::from_value(&settings)
            .expect_err("settings should be invalid")
            .to_string()
    }

    #[test]
    fn one_cloud_with_defaults() {
        let config = Config::from_value(&json!({"oci": {"enabled": true}})).unwrap();
        assert_eq!(config.cloud, Cloud::Oci { rdma_per_gpu: 8 });
        assert_eq!(config.trigger, DEFAULT_TRIGGER);
        assert_eq!(config.owner_kinds, DEFAULT_OWNER_KINDS);
        assert_eq!(config.owner_groups, DEFAULT_OWNER_GROUPS);
        let azure = Config::from_value(&json!({"azure": {"enabled": true}})).unwrap();
        assert_eq!(
            azure.cloud,
            Cloud::Azure {
                rdma_per_gpu: 1,
                rdma_device_name: "hca_shared_devices_a".into(),
                topology_config_map: "nccl-topo".into()
            }
        );
    }

    #[test]
    fn the_charts_values_block_pastes_as_is() {
        let values = json!({
            "aws": {"enabled": true, "efaDevicesPerGPU": 4},
            "azure": {"enabled": false, "rdmaDevicesPerGPU": 1, "rdmaDeviceName": "hca_shared_devices_a"},
            "gcp": {"enabled": false},
            "oci": {"enabled": false, "rdmaDevicesPerGPU": 8}
        });
        assert_eq!(
            Config::from_value(&values).unwrap().cloud,
            Cloud::Aws { efa_per_gpu: 4 }
        );
    }

    #[test]
    fn exactly_one_cloud() {
        assert!(errors(json!({})).contains("no cloud is enabled"));
        assert!(errors(json!(null)).contains("no cloud is enabled"));
        let several = errors(
            json!({"aws": {"enabled": true}, "gcp": {"enabled": true}, "oci": {"enabled": true}}),
        );
        assert!(
            several.contains("aws, gcp, oci are all enabled"),
            "{several}"
        );
    }

    #[test]
    fn a_misspelt_key_is_named_with_the_right_spelling() {
        let message = errors(json!({"aws": {"enabled": true, "efaDevicesPerGpu": 4}}));
        assert!(
            message.contains("aws.efaDevicesPerGpu: unknown key"),
            "{message}"
        );
        assert!(message.contains("efaDevicesPerGPU"), "{message}");
        assert!(
            errors(json!({"gcp": {"enabled": true}, "tigger": "x"}))
                .contains("tigger: unknown key")
        );
    }

    #[test]
    fn counts_are_whole_numbers_from_1_to_64() {
        for bad in [
            json!(0),
            json!(65),
            json!(-1),
            json!(1.5),
            json!("4"),
            json!(true),
        ] {
            let message = errors(json!({"oci": {"enabled": true, "rdmaDevicesPerGPU": bad}}));
            assert!(
                message.contains("oci.rdmaDevicesPerGPU: must be a whole number from 1 to 64"),
                "{message}"
            );
        }
        for good in [1, 64] {
            let config =
                Config::from_value(&json!({"oci": {"enabled": true, "rdmaDevicesPerGPU": good}}));
            assert_eq!(config.unwrap().cloud, Cloud::Oci { rdma_per_gpu: good });
        }
        // A disabled block is still read.
        assert!(
            errors(json!({"gcp": {"enabled": true}, "aws": {"efaDevicesPerGPU": 0}}))
                .contains("aws.efaDevicesPerGPU")
        );
    }

    #[test]
    fn names_are_kubernetes_names() {
        assert!(
            errors(json!({"azure": {"enabled": true, "rdmaDeviceName": "bad name!"}}))
                .contains("azure.rdmaDeviceName")
        );
        assert!(
            errors(json!({"azure": {"enabled": true, "ncclTopologyConfigMap": "Bad_Name"}}))
                .contains("azure.ncclTopologyConfigMap")
        );
        assert!(
            errors(json!({"gcp": {"enabled": true}, "triggerAnnotation": "a/b/c"}))
                .contains("triggerAnnotation")
        );
        let custom = Config::from_value(
            &json!({"gcp": {"enabled": true}, "triggerAnnotation": "example.com/multi-node"}),
        );
        assert_eq!(custom.unwrap().trigger, "example.com/multi-node");
    }

    #[test]
    fn owner_lists() {
        let any = Config::from_value(
            &json!({"gcp": {"enabled": true}, "ownerKinds": [], "ownerApiGroups": []}),
        )
        .unwrap();
        assert!(any.owner_kinds.is_empty() && any.owner_groups.is_empty());
        assert!(
            errors(json!({"gcp": {"enabled": true}, "ownerKinds": "Job"}))
                .contains("ownerKinds: must be a list")
        );
        assert!(
            errors(json!({"gcp": {"enabled": true}, "ownerApiGroups": [3]}))
                .contains("ownerApiGroups[0]")
        );
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let message = errors(json!({"aws": {"enabled": "yes", "efaDevicesPerGPU": 0}, "bogus": 1}));
        assert!(
            message.contains("bogus")
                && message.contains("aws.enabled")
                && message.contains("aws.efaDevicesPerGPU"),
            "{message}"
        );
    }
}
