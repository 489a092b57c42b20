//! Parts of containers: names, GPU and device requests in every spelling, env, mounts,
//! security contexts, explicit nulls; and the volume sources and unknown JSON the pods share.

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::sample::select;
use proptest::sample::subsequence;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;
use std::collections::BTreeSet;

pub(crate) const CONTAINER_NAMES: &[&str] = &[
    "trainer",
    "worker",
    "main",
    "logger",
    "tcpxo-daemon",
    "tcpx-daemon",
    "istio-proxy",
    "init",
    "setup",
];
/// Names of env variables: some the clouds inject, some they do not.
pub(crate) const ENV_NAMES: &[&str] = &[
    "FI_EFA_USE_HUGE_PAGE",
    "CUDA_DEVICE_ORDER",
    "NCCL_SOCKET_IFNAME",
    "NCCL_TOPO_FILE",
    "NCCL_IB_TC",
    "NCCL_ALGO",
    "UCX_TLS",
    "LD_LIBRARY_PATH",
    "MASTER_ADDR",
    "VC_TASK_INDEX",
    "POD_IP",
    "WORLD_SIZE",
    // GCP's TCPX and RDMA fabrics, the AMD rows.
    "NCCL_NET",
    "NCCL_TUNER_CONFIG_PATH",
    "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME",
    "RCCL_MSCCL_ENABLE",
];
/// Mount paths: the clouds' own and others.
pub(crate) const MOUNT_PATHS: &[&str] = &[
    "/dev/shm",
    "/etc/nccl",
    "/scratch",
    "/usr/local/nvidia",
    "/opt/amazon-efa-ofi",
    "/dev/aperture_devices",
    "/usr/local/gib",
    "/tmp",
    "/data",
    "/workspace",
    "/var/run/secrets/kubernetes.io/serviceaccount",
];
/// The volume names the clouds use.
pub(crate) const OUR_VOLUMES: &[&str] = &[
    "nv-shared-memory",
    "amazon-efa",
    "nccl-topo",
    "scratch",
    "nvtcpxo-sys",
    "nvtcpxo-proc-sys",
    "nvtcpxo-libraries",
    "nvtcpxo-aperture-devices",
    "nvtcpx-socket",
    "nvtcpx-libraries",
    "nvrdma-libraries",
    "nvrdma-gib",
];
pub(crate) const USER_VOLUMES: &[&str] = &["data", "dshm", "kube-api-access-x7k2p", "config"];
/// Volume sources, among them each of the clouds' own (some in the API server's defaulted form).
pub(crate) fn volume_sources() -> Vec<Value> {
    vec![
        json!({"emptyDir": {"medium": "Memory"}}),
        json!({"emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}}),
        json!({"emptyDir": {}}),
        json!({"hostPath": {"path": "/opt/amazon-efa-ofi", "type": "Directory"}}),
        json!({"hostPath": {"path": "/opt/amazon-efa-ofi"}}),
        json!({"hostPath": {"path": "/sys"}}),
        json!({"hostPath": {"path": "/sys", "type": ""}}),
        json!({"hostPath": {"path": "/proc/sys"}}),
        json!({"hostPath": {"path": "/home/kubernetes/bin/nvidia", "type": ""}}),
        json!({"hostPath": {"path": "/dev/aperture_devices"}}),
        json!({"hostPath": {"path": "/home/kubernetes/bin/gib"}}),
        json!({"hostPath": {"path": "/home/kubernetes/bin/nvidia"}}),
        json!({"configMap": {"name": "nccl-topo"}}),
        json!({"configMap": {"name": "nccl-topo", "defaultMode": 420}}),
        json!({"configMap": {"name": "nccl-topo-h100", "defaultMode": 420}}),
        json!({"persistentVolumeClaim": {"claimName": "data"}}),
        json!({"projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}], "defaultMode": 420}}),
    ]
}
/// The clouds' device resources (Azure's under the names the settings may give it) and another.
pub(crate) const DEVICE_RESOURCES: &[&str] = &[
    "vpc.amazonaws.com/efa",
    "rdma/hca_shared_devices_a",
    "rdma/ib",
    "rdma/shared_ib",
    "nvidia.com/mlnxnics",
    "nvidia.com/rdma-vf",
    "example.com/fpga",
];
pub(crate) const CAPABILITIES: &[&str] = &[
    "SYS_ADMIN",
    "CAP_SYS_ADMIN",
    "sys_admin",
    "IPC_LOCK",
    "cap_ipc_lock",
    "NET_RAW",
    "NET_ADMIN",
    "Cap_Net_Bind_Service",
];
pub(crate) const MULTUS_VALUES: &[&str] = &[
    "default/storage",
    "network-operator/sriov-net",
    "network-operator/sriov-net,network-operator/sriov-net@net2",
    "default/storage, network-operator/sriov-net@net1",
    "",
    "sriov-net",
    "default/storage,",
    "default/storage  ",
    " default/storage ",
    "  ",
    "[]",
    "[ ]\n",
    r#"[{"name":"storage","namespace":"default","interface":"net9"}]"#,
    r#"[{"name":"sriov-net","namespace":"network-operator"}]"#,
    r#"  [{"namespace":"network-operator","name":"sriov-net"}, {"name":"x"}]  "#,
    "[{",
    // JSON, but no list: Multus refuses it (`parsePodNetworkAnnotation`), and so does the policy.
    r#"{"name":"sriov-net","namespace":"network-operator"}"#,
];
/// JSON that no schema knows: new Kubernetes fields, other controllers' data.
pub(crate) fn unknown_values() -> Vec<Value> {
    vec![
        json!({"enabled": true}),
        json!([1, "two", null, {"three": [3.5]}]),
        json!("opaque"),
        json!(null),
        json!({"nested": {"deeper": {"deepest": [{"k": "v"}]}}}),
        json!({"ratio": 0.1, "big": 12345678901234567890u64, "neg": -7, "huge": 4.2e93, "tiny": 5e-324}),
    ]
}

/// A quantity of `n` in one of the spellings the API server may send.
pub(crate) fn quantity_of(n: u64) -> BoxedStrategy<Value> {
    prop_oneof![
        4 => Just(json!(n.to_string())),
        1 => Just(json!(n)),
        1 => Just(json!(format!("{}m", n * 1000))),
        1 => Just(json!(format!("{n}.0"))),
        1 => Just(json!(format!("{n}e0"))),
        1 => Just(json!(n as f64)),
    ]
    .boxed()
}

/// Where a quantity goes: 0 requests, 1 limits, 2 both.
pub(crate) fn place(
    resources: &mut Map<String, Value>,
    key: &str,
    placement: u8,
    first: Value,
    second: Value,
) {
    let mut put = |side: &str, value: Value| {
        let map = resources
            .entry(side)
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("built here as an object");
        map.insert(key.to_string(), value);
    };
    match placement {
        0 => put("requests", first),
        1 => put("limits", first),
        _ => {
            put("requests", first);
            put("limits", second);
        }
    }
}

/// The GPU resources pods ask for: NVIDIA's, AMD's (counted by default) and one that
/// only settings naming it in `gpuResources` count.
pub(crate) const GPU_RESOURCES: &[&str] = &["nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/xe"];
/// What `gpuResources` counts when the settings do not say (behaviour.md §1.3).
pub(crate) const DEFAULT_GPU_RESOURCES: &[&str] = &["nvidia.com/gpu", "amd.com/gpu"];

/// The GPU request of a container: none, zero, or 1 to 8 GPUs of one vendor's resource, in
/// requests, limits or both.
pub(crate) fn gpu_part() -> impl Strategy<Value = Option<(&'static str, u8, Value, Value)>> {
    let resource = prop_oneof![6 => Just(GPU_RESOURCES[0]), 3 => Just(GPU_RESOURCES[1]), 1 => Just(GPU_RESOURCES[2])];
    prop_oneof![
        5 => (resource.clone(), 1u64..=8)
            .prop_flat_map(|(r, n)| (Just(r), 0u8..3, quantity_of(n), quantity_of(n)))
            .prop_map(Some),
        1 => (resource, 0u8..3, quantity_of(0), quantity_of(0)).prop_map(Some),
        2 => Just(None),
    ]
}

/// A device count the user already set, in requests, limits or both.
pub(crate) fn device_part() -> impl Strategy<Value = Option<(&'static str, u8, Value, Value)>> {
    let preset = (select(DEVICE_RESOURCES), 0u8..3, 0u64..=16)
        .prop_flat_map(|(r, p, n)| (Just(r), Just(p), quantity_of(n), quantity_of(n)));
    prop_oneof![4 => Just(None), 1 => preset.prop_map(Some)]
}

pub(crate) fn resources_part() -> impl Strategy<Value = Option<Value>> {
    (
        gpu_part(),
        // Now and then a second vendor's GPUs in the same container: the policy sums them.
        proptest::option::weighted(0.08, (select(GPU_RESOURCES), 1u64..=4, 0u8..3)),
        device_part(),
        proptest::option::of(select(&["96", "500m", "2", "100m"][..])),
        proptest::option::of(select(&["96", "1", "100m", "4"][..])),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(gpu, second, device, cpu_request, cpu_limit, memory, empty)| {
                let mut resources = Map::new();
                if let Some((name, placement, a, b)) = gpu {
                    place(&mut resources, name, placement, a, b);
                }
                if let Some((name, n, placement)) = second {
                    place(
                        &mut resources,
                        name,
                        placement,
                        json!(n.to_string()),
                        json!(n),
                    );
                }
                if let Some((name, placement, a, b)) = device {
                    place(&mut resources, name, placement, a, b);
                }
                if let Some(cpu) = cpu_request {
                    place(&mut resources, "cpu", 0, json!(cpu), Value::Null);
                }
                if let Some(cpu) = cpu_limit {
                    place(&mut resources, "cpu", 1, json!(cpu), Value::Null);
                }
                if memory {
                    place(
                        &mut resources,
                        "memory",
                        2,
                        json!("1800Gi"),
                        json!("1800Gi"),
                    );
                }
                (!resources.is_empty() || empty).then_some(Value::Object(resources))
            },
        )
}

pub(crate) fn env_part() -> impl Strategy<Value = Option<Value>> {
    let entry = (select(ENV_NAMES), 0u8..6);
    proptest::option::of(proptest::collection::vec(entry, 0..6)).prop_map(|entries| {
        entries.map(|entries| {
            let mut seen = BTreeSet::new();
            let list = entries
                .into_iter()
                .filter(|(name, _)| seen.insert(*name))
                .map(|(name, kind)| match kind {
                    0 | 1 => json!({"name": name, "value": "user"}),
                    2 => json!({"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}),
                    3 => json!({"name": name, "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}),
                    4 => json!({"name": name, "value": ""}),
                    // Invalid in the API, but the policy must not make it worse.
                    _ => json!({"name": name, "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}),
                })
                .collect();
            Value::Array(list)
        })
    })
}

/// The ConfigMaps `envFrom` names, as the properties' cluster holds them (`env_from_host`):
/// one with keys, one without data, one missing.
pub(crate) const ENV_CONFIG_MAPS: &[&str] = &["nccl-env", "empty-env", "missing-env"];
/// Prefixes an `envFrom` source may have: none, ones some variables begin with, and another.
const ENV_PREFIXES: &[&str] = &["", "", "NCCL_", "FI_", "UCX_", "X_"];

/// `envFrom`: ConfigMaps (optional or not) and Secrets behind a prefix or none, and items of the
/// wrong shape, which the API server refuses but the policy must read without harm.
pub(crate) fn env_from_part() -> impl Strategy<Value = Option<Value>> {
    let item = (
        0u8..8,
        select(ENV_CONFIG_MAPS),
        select(ENV_PREFIXES),
        any::<bool>(),
    )
        .prop_map(|(kind, name, prefix, optional)| {
            let mut item = match kind {
                0..=3 => json!({"configMapRef": {"name": name}}),
                4 => json!({"configMapRef": {"name": name, "optional": optional}}),
                5 => json!({"secretRef": {"name": "hf-token", "optional": optional}}),
                6 => json!({"configMapRef": {"name": name}, "secretRef": {"name": "hf-token"}}),
                _ => json!({"configMapRef": name}),
            };
            if !prefix.is_empty() {
                item["prefix"] = prefix.into();
            }
            item
        });
    proptest::option::weighted(
        0.3,
        proptest::collection::vec(item, 0..4).prop_map(Value::Array),
    )
}

/// Mounts: a path each, and which volume (resolved against the pod's volumes later).
pub(crate) type MountPlan = Vec<(&'static str, Index, bool, bool)>;

pub(crate) fn mounts_part() -> impl Strategy<Value = Option<MountPlan>> {
    proptest::option::of(proptest::collection::vec(
        (
            select(MOUNT_PATHS),
            any::<Index>(),
            any::<bool>(),
            proptest::bool::weighted(0.2),
        ),
        0..5,
    ))
}

pub(crate) fn security_part() -> impl Strategy<Value = Option<Value>> {
    let seccomp = prop_oneof![
        Just(json!({"type": "RuntimeDefault"})),
        Just(json!({"type": "Unconfined"})),
        Just(json!({"type": "Localhost", "localhostProfile": "profiles/nccl.json"})),
    ];
    let context = (
        proptest::option::of(any::<bool>()),
        proptest::option::of(any::<bool>()),
        proptest::option::of(subsequence(CAPABILITIES, 0..3)),
        any::<bool>(),
        proptest::option::of(seccomp),
        any::<bool>(),
    )
        .prop_map(|(privileged, escalation, add, drop_all, seccomp, run_as)| {
            let mut sc = Map::new();
            if let Some(p) = privileged {
                sc.insert("privileged".into(), p.into());
            }
            if let Some(e) = escalation {
                sc.insert("allowPrivilegeEscalation".into(), e.into());
            }
            if add.is_some() || drop_all {
                let mut caps = Map::new();
                if let Some(add) = add {
                    caps.insert("add".into(), json!(add));
                }
                if drop_all {
                    caps.insert("drop".into(), json!(["ALL"]));
                }
                sc.insert("capabilities".into(), Value::Object(caps));
            }
            if let Some(s) = seccomp {
                sc.insert("seccompProfile".into(), s);
            }
            if run_as {
                sc.insert("runAsUser".into(), json!(1000));
            }
            Value::Object(sc)
        });
    proptest::option::of(context)
}

/// A container, its mounts still to be resolved against the pod's volumes.
#[derive(Debug, Clone)]
pub(crate) struct ContainerPlan {
    pub(crate) body: Map<String, Value>,
    pub(crate) mounts: Option<MountPlan>,
    pub(crate) nulls: Vec<&'static str>,
}

/// Fields a container may hold as an explicit `null` (Kubernetes' "unset"), where the policy
/// reads or writes.
pub(crate) const CONTAINER_NULLS: &[&str] = &[
    "/env",
    "/envFrom",
    "/volumeMounts",
    "/resources",
    "/resources/requests",
    "/resources/limits",
    "/resources/requests/nvidia.com~1gpu",
    "/resources/limits/amd.com~1gpu",
    "/resources/requests/cpu",
    "/securityContext",
    "/securityContext/capabilities",
    "/securityContext/capabilities/add",
    "/securityContext/allowPrivilegeEscalation",
    "/securityContext/privileged",
    "/securityContext/seccompProfile",
];
/// The same for the pod.
pub(crate) const POD_NULLS: &[&str] = &[
    "/metadata/annotations/k8s.v1.cni.cncf.io~1networks",
    "/metadata/annotations/networking.gke.io~1default-interface",
    "/spec/volumes",
    "/spec/initContainers",
    "/spec/securityContext",
    "/spec/securityContext/seccompProfile",
];

pub(crate) fn nulls(slots: &'static [&'static str]) -> impl Strategy<Value = Vec<&'static str>> {
    prop_oneof![3 => Just(Vec::new()), 1 => subsequence(slots, 1..4)]
}

/// Sets each slot whose parent object exists to `null`, whatever it held.
pub(crate) fn set_nulls(value: &mut Value, slots: &[&str]) {
    for slot in slots {
        let (parent, key) = slot.rsplit_once('/').unwrap_or(("", slot));
        if let Some(Value::Object(map)) = value.pointer_mut(parent) {
            map.insert(key.replace("~1", "/").replace("~0", "~"), Value::Null);
        }
    }
}

pub(crate) fn container(init: bool) -> impl Strategy<Value = ContainerPlan> {
    (
        select(CONTAINER_NAMES),
        resources_part(),
        env_part(),
        mounts_part(),
        security_part(),
        proptest::option::of(select(unknown_values())),
        proptest::bool::weighted(if init { 0.5 } else { 0.0 }),
        any::<bool>(),
        nulls(CONTAINER_NULLS),
        env_from_part(),
    )
        .prop_map(
            move |(
                name,
                resources,
                env,
                mounts,
                security,
                unknown,
                sidecar,
                defaults,
                nulls,
                env_from,
            )| {
                let mut c = Map::new();
                c.insert("name".into(), name.into());
                c.insert("image".into(), "nvcr.io/nvidia/nemo:25.04".into());
                if let Some(r) = resources {
                    c.insert("resources".into(), r);
                }
                if let Some(e) = env {
                    c.insert("env".into(), e);
                }
                if let Some(e) = env_from {
                    c.insert("envFrom".into(), e);
                }
                if let Some(s) = security {
                    c.insert("securityContext".into(), s);
                }
                if let Some(u) = unknown {
                    c.insert("futureContainerField".into(), u);
                }
                if sidecar {
                    c.insert("restartPolicy".into(), "Always".into());
                }
                if defaults {
                    c.insert("command".into(), json!(["/bin/bash", "-c"]));
                    c.insert(
                        "terminationMessagePath".into(),
                        "/dev/termination-log".into(),
                    );
                    c.insert("terminationMessagePolicy".into(), "File".into());
                    c.insert("imagePullPolicy".into(), "IfNotPresent".into());
                }
                ContainerPlan {
                    body: c,
                    mounts,
                    nulls,
                }
            },
        )
}
