//! Settings: the keys every cloud block may have, each cloud's block, and valid settings for
//! one of the four clouds with their trigger, opt-out, preflight and validate-only keys.

use crate::generators::CUSTOM_TRIGGER;
use crate::generators::gcp::TCPXO_NETWORKS;
use crate::generators::gcp::rdma_block;
use crate::generators::gcp::tcpx_block;
use crate::generators::rows::instance_types_setting;
use fixtures::HELIX_TRIGGER;
use fixtures::TRIGGERS;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

pub(crate) fn per_gpu() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        2 => Just(None),
        4 => (1u64..=8).prop_map(|n| Some(n.into())),
        1 => Just(Some(16.into())),
        1 => Just(Some(64.into())),
        2 => select(vec![json!(0.5), json!(1.5), json!(0.25), json!(0.000001)]).prop_map(Some),
    ]
}

/// A settings `env` map: replacing, removing and adding variables (behaviour.md §3.6).
pub(crate) fn env_setting() -> BoxedStrategy<Option<Value>> {
    proptest::option::weighted(
        0.4,
        proptest::collection::btree_map(
            select(
                &[
                    "FI_EFA_USE_HUGE_PAGE",
                    "NCCL_SOCKET_IFNAME",
                    "NCCL_IB_TC",
                    "NCCL_ALGO",
                    "NCCL_PROTO",
                    "UCX_TLS",
                    "NCCL_IB_HCA",
                    "FI_PROVIDER",
                    "MASTER_ADDR",
                    // The GCP fabrics' and the AMD rows' own.
                    "NCCL_NET",
                    "NCCL_TUNER_CONFIG_PATH",
                    "NCCL_IB_GID_INDEX",
                    "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME",
                    "RCCL_MSCCL_ENABLE",
                ][..],
            ),
            select(vec![
                Value::Null,
                json!("1"),
                json!("mlx5"),
                json!("Simple,LL128"),
                json!(""),
            ]),
            0..4,
        )
        .prop_map(|map| Value::Object(map.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
    )
    .boxed()
}

/// A `deviceClaim` (behaviour.md §3.8): with and without `{count}` and a name; names and templates
/// that the pods' own claims have (`resource_claims_part`), so that "already claimed" is reached.
pub(crate) fn claim_setting() -> impl Strategy<Value = Option<Value>> {
    proptest::option::weighted(
        0.3,
        select(vec![
            json!({"template": "efa-{count}"}),
            json!({"template": "efa-{count}", "name": "efa"}),
            json!({"template": "default-rdma"}),
            json!({"template": "{count}.nics", "name": "rdma"}),
            json!({"template": "nics-{count}-x", "name": "channel"}),
            json!({"template": "job-compute-domain-channel", "name": "fabric"}),
        ]),
    )
}

/// The keys every cloud block may have, added to `block`.
pub(crate) fn common_keys(
    mut block: Value,
    env: Option<Value>,
    capabilities: Option<Value>,
    instance_types: Option<Value>,
) -> Value {
    if let Some(env) = env {
        block["env"] = env;
    }
    if let Some(capabilities) = capabilities {
        block["capabilities"] = capabilities;
    }
    if let Some(types) = instance_types {
        block["instanceTypes"] = types;
    }
    block
}

pub(crate) fn capabilities_setting() -> impl Strategy<Value = Option<Value>> {
    proptest::option::weighted(
        0.3,
        select(vec![
            json!([]),
            json!(["IPC_LOCK"]),
            json!(["SYS_NICE", "cap_ipc_lock"]),
            json!(["SYS_RESOURCE"]),
        ]),
    )
}

/// The keys every cloud block may draw: `env`, `capabilities`, `instanceTypes`.
fn common(
    cloud: &'static str,
) -> impl Strategy<Value = (Option<Value>, Option<Value>, Option<Value>)> {
    (
        env_setting(),
        capabilities_setting(),
        instance_types_setting(cloud),
    )
}

/// `aws`: EFA devices per GPU, the EFA library path, the CPU request.
fn aws_block() -> impl Strategy<Value = (&'static str, Value)> {
    (
        per_gpu(),
        proptest::option::weighted(0.3, select(vec![Value::Null, json!(""), json!("/opt/efa")])),
        proptest::option::weighted(0.2, select(vec![Value::Null, json!("250m")])),
        common("aws"),
    )
        .prop_map(|(n, library, cpu, (env, caps, types))| {
            let mut block = json!({"enabled": true});
            if let Some(n) = n {
                block["efaDevicesPerGPU"] = n;
            }
            if let Some(library) = library {
                block["efaLibraryPath"] = library;
            }
            if let Some(cpu) = cpu {
                block["cpuRequest"] = cpu;
            }
            ("aws", common_keys(block, env, caps, types))
        })
}

/// `azure`: a count per GPU or per container, the RDMA device, the topology ConfigMap.
fn azure_block() -> impl Strategy<Value = (&'static str, Value)> {
    (
        prop_oneof![
            3 => per_gpu().prop_map(|n| n.map(|n| ("rdmaDevicesPerGPU", n))),
            1 => (1u64..=2).prop_map(|n| Some(("rdmaDevicesPerContainer", n.into()))),
        ],
        proptest::option::of(select(&["hca_shared_devices_a", "ib", "shared_ib"][..])),
        // `null` and "" turn the topology file off.
        proptest::option::of(select(vec![
            json!("nccl-topo"),
            json!("nccl-topo-h100"),
            json!(""),
            Value::Null,
        ])),
        common("azure"),
    )
        .prop_map(|(count, device, topology, (env, caps, types))| {
            let mut block = json!({"enabled": true});
            if let Some((key, n)) = count {
                block[key] = n;
            }
            if let Some(d) = device {
                block["rdmaDeviceName"] = d.into();
            }
            if let Some(t) = topology {
                block["ncclTopologyConfigMap"] = t;
            }
            ("azure", common_keys(block, env, caps, types))
        })
}

/// `gcp`: TCPXO's keys, the startup probe, the fabric, and the TCPX and RDMA blocks.
fn gcp_block() -> impl Strategy<Value = (&'static str, Value)> {
    (
        proptest::option::weighted(0.3, Just(json!(TCPXO_NETWORKS))),
        proptest::option::weighted(
            0.3,
            Just(json!(
                "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21"
            )),
        ),
        proptest::option::weighted(0.3, select(vec![json!([]), json!(["--num_hops=2"])])),
        (
            common("gcp"),
            proptest::option::weighted(0.3, any::<bool>()),
        ),
        // The fabric for pods whose machine is not known, and the other fabrics' blocks.
        proptest::option::weighted(0.6, select(&["tcpxo", "tcpx", "rdma"][..])),
        tcpx_block(),
        rdma_block(),
    )
        .prop_map(
            |(networks, image, flags, ((env, caps, types), probe), fabric, tcpx, rdma)| {
                let mut block = json!({"enabled": true});
                for (key, value) in [
                    ("networks", networks),
                    ("daemonImage", image),
                    ("daemonFlags", flags),
                    ("daemonStartupProbe", probe.map(Value::from)),
                    ("fabric", fabric.map(Value::from)),
                    ("tcpx", tcpx),
                    ("rdma", rdma),
                ] {
                    if let Some(value) = value {
                        block[key] = value;
                    }
                }
                ("gcp", common_keys(block, env, caps, types))
            },
        )
}

/// `oci`: SR-IOV VFs per GPU, their resource and network.
fn oci_block() -> impl Strategy<Value = (&'static str, Value)> {
    (
        per_gpu(),
        proptest::option::weighted(
            0.3,
            select(&["nvidia.com/rdma-vf", "nvidia.com/mlnxnics"][..]),
        ),
        proptest::option::weighted(0.3, select(&["default/rdma-vf", "rdma-vf"][..])),
        common("oci"),
    )
        .prop_map(|(n, resource, network, (env, caps, types))| {
            let mut block = json!({"enabled": true});
            if let Some(n) = n {
                block["rdmaDevicesPerGPU"] = n;
            }
            if let Some(r) = resource {
                block["resourceName"] = r.into();
            }
            if let Some(n) = network {
                block["network"] = n.into();
            }
            ("oci", common_keys(block, env, caps, types))
        })
}

/// A Multus network in each of the forms the settings take (behaviour.md §1.3).
fn network() -> impl Strategy<Value = Value> {
    select(vec![
        json!("hostdevice-net"),
        json!("network-operator/sriov-ib"),
        json!({"name": "gpu-a", "namespace": "cw-multus"}),
        json!({"name": "gpu-b"}),
    ])
}

/// How the `rdma` block counts its device (behaviour.md §3.9): the default, none, per container,
/// per GPU, per node, or rails with their networks.
fn rdma_count() -> impl Strategy<Value = Vec<(&'static str, Value)>> {
    let rail = (0u8..8, network()).prop_map(
        |(n, network)| json!({"resourceName": format!("nvidia.com/rail{n}"), "network": network}),
    );
    let resource = select(vec![
        json!("rdma/rdma_shared_device_a"),
        json!("nvidia.com/hostdev"),
        json!("rdma/ib"),
    ]);
    prop_oneof![
        2 => Just(Vec::new()),
        1 => select(vec![Value::Null, json!("")]).prop_map(|off| vec![("resourceName", off)]),
        2 => (resource.clone(), 1u64..=2)
            .prop_map(|(r, n)| vec![("resourceName", r), ("devicesPerContainer", n.into())]),
        2 => (resource.clone(), per_gpu()).prop_map(|(r, n)| {
            let mut keys = vec![("resourceName", r)];
            keys.extend(n.map(|n| ("devicesPerGPU", n)));
            keys
        }),
        1 => (resource, 1u64..=8, select(&[4u64, 8][..])).prop_map(|(r, d, p)| vec![
            ("resourceName", r),
            ("devicesPerNode", d.into()),
            ("gpusPerNode", p.into()),
        ]),
        2 => proptest::collection::vec(rail, 1..4).prop_map(|rails| {
            // Each rail its own resource and its own network (behaviour.md §1.4).
            let mut distinct: Vec<Value> = Vec::new();
            for rail in rails {
                let clash = distinct.iter().any(|r| {
                    r["resourceName"] == rail["resourceName"]
                        || network_name(&r["network"]) == network_name(&rail["network"])
                });
                if !clash {
                    distinct.push(rail);
                }
            }
            vec![("rails", json!(distinct))]
        }),
    ]
}

/// A generated network's name: the four [`network`] draws have four names, so two entries of one
/// name may be one attachment and two of different names never are.
fn network_name(network: &Value) -> &str {
    let text = network
        .as_str()
        .or_else(|| network["name"].as_str())
        .unwrap_or_default();
    text.rsplit('/').next().unwrap_or(text)
}

/// `rdma` (the fifth kind of cluster, not GCP's fabric): the device and its count, the networks (once per device, fixed), host directories.
fn rdma_cluster_block() -> impl Strategy<Value = (&'static str, Value)> {
    (
        rdma_count(),
        proptest::option::weighted(0.4, network()),
        proptest::option::weighted(0.3, proptest::collection::vec(network(), 0..3)),
        proptest::option::weighted(
            0.3,
            select(vec![
                json!([{"hostPath": "/etc/crusoe/nccl_topo", "mountPath": "/opt/nccl_topo"}]),
                json!([{"hostPath": "/etc/nccl", "mountPath": "/etc/nccl"}, {"hostPath": "/etc/crusoe/nccl_topo", "mountPath": "/opt/nccl_topo"}]),
                json!([]),
            ]),
        ),
        proptest::option::weighted(0.3, Just(json!(["NET_RAW"]))),
        common("rdma"),
    )
        .prop_map(|(count, network, networks, directories, raw, (env, caps, types))| {
            let mut block = json!({"enabled": true});
            let rails = count.iter().any(|(key, _)| *key == "rails");
            for (key, value) in count {
                block[key] = value;
            }
            // Rails bring their own networks: not with the device's.
            if let Some(network) = network.filter(|_| !rails) {
                block["network"] = network;
            }
            if let Some(networks) = networks {
                // Once per pod, each once, and none attached per device already (behaviour.md
                // §1.4): the settings refuse the rest.
                let mut taken: Vec<String> = block["rails"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|r| network_name(&r["network"]).to_string())
                    .chain(block.get("network").map(|n| network_name(n).to_string()))
                    .collect();
                let mut once = Vec::new();
                for network in networks {
                    let name = network_name(&network).to_string();
                    if !taken.contains(&name) {
                        taken.push(name);
                        once.push(network);
                    }
                }
                block["networks"] = json!(once);
            }
            if let Some(directories) = directories {
                block["hostDirectories"] = directories;
            }
            let block = common_keys(block, env, caps.or(raw), types);
            ("rdma", block)
        })
}

/// Valid settings for one of the five kinds of cluster, the trigger annotation they name, and the
/// block's name.
/// `pools` (behaviour.md §1.2): by a built-in pool label or one of the settings' own, pools of one
/// machine or several, mostly the cloud's; `gone` is never mapped.
pub(crate) fn pools_setting() -> impl Strategy<Value = Option<Value>> {
    use crate::generators::machines::{POOL_LABELS, POOL_NAMES, all_types};
    let machines =
        proptest::sample::subsequence(all_types(), 1..3).prop_map(|m| match m.as_slice() {
            [one] => json!(one),
            several => json!(several),
        });
    let by_value = proptest::collection::btree_map(select(&POOL_NAMES[..3]), machines, 1..3);
    let table = proptest::collection::btree_map(select(POOL_LABELS), by_value, 1..3);
    proptest::option::weighted(0.4, table.prop_map(|t| json!(t)))
}

pub(crate) fn valid_settings() -> BoxedStrategy<(Value, String, &'static str)> {
    let cloud = prop_oneof![
        // GCP thrice: it has three fabrics to cover.
        1 => aws_block(),
        1 => azure_block(),
        3 => gcp_block(),
        1 => oci_block().boxed(),
        // Twice: its count modes and networks to cover.
        2 => rdma_cluster_block().boxed(),
    ];
    (
        (cloud, claim_setting()),
        any::<bool>(),
        trigger_setting(),
        proptest::option::weighted(0.3, select(vec![json!([]), json!(["PyTorchJob", "Job"])])),
        proptest::option::weighted(
            0.3,
            select(vec![json!([]), json!(["kubeflow.org", "batch.volcano.sh"])]),
        ),
        // The GPU resources counted: one vendor's, or several with one no default counts.
        proptest::option::weighted(
            0.3,
            // Mostly lists that count NVIDIA's, as most pods ask for them.
            select(vec![
                json!(["amd.com/gpu"]),
                json!(["nvidia.com/gpu"]),
                json!(["nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/xe"]),
                json!(["nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/xe"]),
                json!(["gpu.intel.com/xe", "nvidia.com/gpu"]),
                // A name listed twice counts once.
                json!(["nvidia.com/gpu", "amd.com/gpu", "nvidia.com/gpu"]),
            ]),
        ),
        // The record's key: another, or none on the pod.
        proptest::option::weighted(0.2, select(&["", "example.com/wired"][..])),
        pools_setting(),
    )
        .prop_map(
            |(
                ((name, mut block), claim),
                all_four,
                trigger,
                kinds,
                groups,
                gpu_resources,
                record,
                pools,
            )| {
                if let Some(pools) = pools {
                    block["pools"] = pools;
                }
                // The fabric through DRA (behaviour.md §3.8): GCP's only for RDMA; no DRA
                // driver is documented for the `rdma` block's.
                if let Some(claim) = claim.filter(|_| name != "rdma") {
                    if name == "gcp" {
                        if !block["rdma"].is_object() {
                            block["rdma"] = json!({});
                        }
                        block["rdma"]["deviceClaim"] = claim;
                    } else {
                        block["deviceClaim"] = claim;
                    }
                }
                let mut settings = Map::new();
                if all_four {
                    // The chart's values list every cloud, the others disabled.
                    for other in ["aws", "azure", "gcp", "oci"] {
                        settings.insert(other.into(), json!({"enabled": false}));
                    }
                }
                settings.insert(name.into(), block);
                let ((trigger_setting, opt_out), trigger) = trigger;
                if let Some(t) = trigger_setting {
                    settings.insert("triggerAnnotation".into(), t);
                }
                if let Some(o) = opt_out {
                    settings.insert("optOutAnnotation".into(), o);
                }
                if let Some(k) = kinds {
                    settings.insert("ownerKinds".into(), k);
                }
                if let Some(g) = groups {
                    settings.insert("ownerApiGroups".into(), g);
                }
                if let Some(r) = gpu_resources {
                    settings.insert("gpuResources".into(), r);
                }
                if let Some(key) = record {
                    settings.insert("recordAnnotation".into(), key.into());
                }
                (Value::Object(settings), trigger.to_string(), name)
            },
        )
        // Boxed: the strategy's nested types otherwise make frames that overflow the test
        // thread's stack in debug builds.
        .boxed()
}

/// `triggerAnnotation` and `optOutAnnotation` (behaviour.md §1.3), and the trigger key the pod
/// carries: the default keys (NeMo Platform's or NeMo Helix's on the pod), one key, or a list.
#[allow(clippy::type_complexity)]
pub(crate) fn trigger_setting()
-> impl Strategy<Value = ((Option<Value>, Option<Value>), &'static str)> {
    let opt_out = proptest::option::weighted(
        0.2,
        select(vec![
            json!("example.com/keep-out"),
            json!([
                "example.com/keep-out",
                "nhx.nvidia.com/disable-multi-node-networking"
            ]),
        ]),
    );
    let trigger = prop_oneof![
        8 => select(&TRIGGERS[..]).prop_map(|key| (None, key)),
        1 => Just((Some(json!(CUSTOM_TRIGGER)), CUSTOM_TRIGGER)),
        1 => select(&[CUSTOM_TRIGGER, HELIX_TRIGGER][..])
            .prop_map(|key| (Some(json!([CUSTOM_TRIGGER, HELIX_TRIGGER])), key)),
    ];
    (trigger, opt_out).prop_map(|((setting, key), opt_out)| ((setting, opt_out), key))
}

/// `preflight` (behaviour.md §9): absent mostly, else each mode or `null`.
pub(crate) fn preflight_setting() -> impl Strategy<Value = Option<Value>> {
    proptest::option::weighted(
        0.5,
        select(vec![
            json!("warn"),
            json!("reject"),
            json!("skip"),
            json!(null),
        ]),
    )
}

/// `validateOnly` (behaviour.md §10): absent mostly, else each value or `null`.
pub(crate) fn validate_only_setting() -> impl Strategy<Value = Option<Value>> {
    proptest::option::weighted(0.5, select(vec![json!(true), json!(false), json!(null)]))
}
