//! `instanceTypes` rows of each cloud: counts, env, capabilities and the keys of the cloud's
//! block a row may set as well.

use crate::generators::gcp::TCPXO_NETWORKS;
use crate::generators::machines::UNKNOWN_TYPES;
use crate::generators::machines::types_of;
use crate::generators::settings::capabilities_setting;
use crate::generators::settings::env_setting;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::Value;
use serde_json::json;

/// The keys of a cloud's block that a row may set as well (behaviour.md §1.2: rows are overlays),
/// beyond `env` and `capabilities`; a few values each.
pub(crate) fn cloud_row_keys(cloud: &'static str) -> BoxedStrategy<Vec<(&'static str, Value)>> {
    let keys: Vec<(&'static str, Value)> = match cloud {
        "aws" => vec![
            ("efaLibraryPath", json!("")),
            ("efaLibraryPath", json!("/opt/efa")),
            ("cpuRequest", json!("250m")),
            ("efaDevicesPerGPU", json!(2)),
            ("deviceClaim", json!({"template": "row-efa-{count}"})),
        ],
        // A row turns Azure's topology file off (the GB200 and MI300X rows do) or names another.
        "azure" => vec![
            ("ncclTopologyConfigMap", Value::Null),
            ("ncclTopologyConfigMap", json!("")),
            ("ncclTopologyConfigMap", json!("nccl-topo-h100")),
            ("rdmaDeviceName", json!("ib")),
            ("deviceClaim", json!({"template": "row-ib", "name": "ib"})),
        ],
        "gcp" => vec![
            ("fabric", json!("tcpxo")),
            ("fabric", json!("tcpx")),
            ("fabric", json!("rdma")),
            ("networks", json!(TCPXO_NETWORKS)),
            ("daemonFlags", json!(["--num_hops=2"])),
            (
                "tcpx",
                json!({"networks": ["gpu-a", "gpu-b", "gpu-c", "gpu-d"]}),
            ),
            (
                "tcpx",
                json!({"daemonFlags": ["--setup_param", "\\\"--verbose 128 2 0 \\\""], "env": {"NCCL_ALGO": "Ring"}}),
            ),
            (
                "rdma",
                json!({"networks": ["a4x-0", "a4x-1", "a4x-2", "a4x-3"]}),
            ),
            (
                "rdma",
                json!({"env": {"NCCL_NET": null, "NCCL_IB_TC": "53"}}),
            ),
            ("rdma", json!({"deviceClaim": {"template": "row-rdma"}})),
        ],
        "rdma" => vec![
            ("resourceName", json!("nvidia.com/hostdev")),
            ("resourceName", Value::Null),
            ("devicesPerGPU", json!(1)),
            (
                "network",
                json!({"name": "hostdevice-net", "namespace": "default"}),
            ),
            (
                "rails",
                json!([{"resourceName": "nvidia.com/rail0", "network": "rail0"}]),
            ),
            (
                "hostDirectories",
                json!([{"hostPath": "/etc/crusoe/nccl_topo", "mountPath": "/opt/nccl_topo"}]),
            ),
        ],
        _ => vec![
            ("network", json!("default/rdma-vf")),
            ("rdmaDevicesPerGPU", json!(1)),
            ("deviceClaim", json!({"template": "{count}-vfs"})),
        ],
    };
    // One key at most once: the last value drawn wins.
    proptest::collection::vec(select(keys), 0..3).boxed()
}

/// A row of `cloud`'s `instanceTypes`: counts (or none: a row over a built-in one may change
/// only its env, keys or capabilities), env, capabilities and keys of the cloud's block.
pub(crate) fn row(cloud: &'static str) -> impl Strategy<Value = Value> {
    let counts = prop_oneof![
        3 => (0u64..=32, select(&[1u64, 4, 8][..])).prop_map(|(d, p)| json!({"devicesPerNode": d, "gpusPerNode": p})),
        // `gpusPerNode` is added below where the type has no built-in row.
        1 => (0u64..=32).prop_map(|d| json!({"devicesPerNode": d})),
        1 => select(&[4u64, 8][..]).prop_map(|p| json!({"gpusPerNode": p})),
        2 => Just(json!({})),
    ];
    (
        counts,
        env_setting(),
        capabilities_setting(),
        cloud_row_keys(cloud),
    )
        .prop_map(|(mut row, env, capabilities, keys)| {
            if let Some(env) = env {
                row["env"] = env;
            }
            if let Some(capabilities) = capabilities {
                row["capabilities"] = capabilities;
            }
            for (key, value) in keys {
                row[key] = value;
            }
            // Rails take the device's place (behaviour.md §1.3): a row with rails has no count
            // or device of its own.
            if let Some(row) = row.as_object_mut().filter(|r| r.contains_key("rails")) {
                for key in ["resourceName", "devicesPerGPU", "network"] {
                    row.remove(key);
                }
            }
            row
        })
}

/// An `instanceTypes` map of `cloud` (behaviour.md §1.2), some rows over built-in ones.
pub(crate) fn instance_types_setting(cloud: &'static str) -> impl Strategy<Value = Option<Value>> {
    proptest::option::weighted(
        0.4,
        proptest::collection::btree_map(select(types_of(cloud)), row(cloud), 1..4).prop_map(
            |map| {
                Value::Object(
                    map.into_iter()
                        .map(|(k, mut v)| {
                            // A type without a built-in row has no GPU count to divide by.
                            if UNKNOWN_TYPES.contains(&k) && v.get("devicesPerNode").is_some() {
                                v["gpusPerNode"] = json!(8);
                            }
                            (k.to_string(), v)
                        })
                        .collect(),
                )
            },
        ),
    )
}
