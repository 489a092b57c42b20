//! OCI: SR-IOV virtual functions of the RDMA NICs, attached through Multus (behaviour.md §3.4).

use std::borrow::Cow;

use super::{
    Cloud, DEVICE_CLAIM, Fabric, Facts, Key, Kind, Machine, RDMA_BASE_HEAD, RDMA_BASE_TAIL,
    SHARED_MEMORY_MOUNT, empty, per_gpu, per_gpu_key, set_resource, shared_memory,
};
use crate::k8s::names::{is_extended_resource, is_network_reference};
use crate::profile::{Device, EnvVar, Network, Profile, var};

pub const OCI: Cloud = Cloud {
    name: "oci",
    fabrics: &[&SRIOV],
    plugin: Some("nvidia.com/rdma-vf"),
    machines: MACHINES,
    accelerators: &[],
    writes: &[crate::multus::ANNOTATION],
    machine_labels: &[],
    node_counts: false,
    networks: &super::NETWORK,
};

static SRIOV: Fabric = Fabric {
    name: "sriov",
    block: None,
    env_block: None,
    keys: &[
        per_gpu_key("rdmaDevicesPerGPU"),
        Key {
            name: "resourceName",
            kind: Kind::Text {
                valid: is_extended_resource,
                what: "an extended resource name with a domain prefix that does not start with requests. (the API server keeps it for quotas), such as nvidia.com/rdma-vf",
                set: set_resource,
            },
        },
        Key {
            name: "network",
            kind: Kind::Text {
                valid: is_network_reference,
                what: "a network attachment as name or namespace/name (lowercase letters, digits and '-')",
                set: set_network,
            },
        },
        // DRANET with an admin-made DeviceClass (kubernetes-sigs/dranet examples), or NVIDIA's
        // dra-driver-sriov (network operator v26.7.0-rc.1; read 2026-09): the NICs move into the
        // pod itself, so no VF request and no Multus list.
        DEVICE_CLAIM,
    ],
    exclusive: &[],
    profile,
    // NCCL's own InfiniBand transport (NVIDIA/nccl `src/transport/net_ib/common.cc`).
    transport: Some("IB"),
};

/// One virtual function per RDMA physical function: 16 on the dual-port shapes, 8 on the
/// single-port ones (oracle-quickstart/oci-hpc-oke `docs/using-rdma-network-interfaces-in-manifests.md`
/// and `manifests/nccl-tests/kueue/virtual-functions/BM.GPU.*.yaml`, 2026-07).
const MACHINES: &[Machine] = &[
    Machine::eight_gpus("BM.GPU4.8", 16),
    Machine::eight_gpus("BM.GPU.A100-v2.8", 16),
    Machine::eight_gpus("BM.GPU.B4.8", 16),
    Machine::eight_gpus("BM.GPU.H100.8", 16),
    Machine::eight_gpus("BM.GPU.B300.8", 16),
    Machine::eight_gpus("BM.GPU.H200.8", 8),
    Machine::eight_gpus("BM.GPU.B200.8", 8),
    // AMD: 8 VFs for `amd.com/gpu: 8`, `IPC_LOCK` and `SYS_PTRACE`, `NCCL_IB_HCA=mlx5`
    // (oci-hpc-oke `manifests/rccl-tests/kueue/virtual-functions/BM.GPU.MI300X.8.yaml`,
    // `BM.GPU.MI355X-v1.8.yaml`), and Oracle's RCCL values per shape
    // (`docs/recommended-nccl-rccl-parameters-by-shape.md`, 2026-08-11). RCCL reads `NCCL_*`.
    Machine::eight_gpus("BM.GPU.MI300X.8", 8).with(Facts {
        capabilities: &["SYS_PTRACE"],
        env: &[
            ("NCCL_CUMEM_ENABLE", "0"),
            ("NCCL_IB_GID_INDEX", "3"),
            ("NCCL_IB_HCA", "mlx5"),
            ("NCCL_IB_QPS_PER_CONNECTION", "1"),
            ("NCCL_IB_SL", "0"),
            ("NCCL_IB_SPLIT_DATA_ON_QPS", "0"),
            ("NCCL_IB_TC", "41"),
            ("NCCL_IB_TIMEOUT", "22"),
            ("NCCL_NET_PLUGIN", "none"),
            ("NCCL_PXN_DISABLE", "0"),
        ],
        ..Facts::NONE
    }),
    Machine::eight_gpus("BM.GPU.MI355X-v1.8", 8).with(Facts {
        capabilities: &["SYS_PTRACE"],
        env: &[
            ("NCCL_IB_GID_INDEX", "3"),
            ("NCCL_IB_HCA", "mlx5"),
            ("NCCL_IB_QPS_PER_CONNECTION", "1"),
            ("NCCL_IB_SL", "0"),
            ("NCCL_IB_TC", "41"),
            ("NCCL_IGNORE_CPU_AFFINITY", "1"),
            ("NCCL_MIN_NCHANNELS", "32"),
            ("NCCL_SOCKET_IFNAME", "eth0"),
        ],
        ..Facts::NONE
    }),
    // RTX PRO 6000, 8 GPUs: Oracle publishes host-network manifests only (no VF count). Its NCCL
    // values per shape (oracle-quickstart/oci-hpc-oke `terraform/via-provider-nccl-rccl-configmap.tf`,
    // copied in skypilot `sky/provision/kubernetes/oci_nccl.py`, read 2026-12), but for
    // `NCCL_DEBUG` (left to the user) and with `NCCL_IB_HCA=mlx5`: the exact list of host HCAs
    // matches no SR-IOV VF.
    Machine::uncounted("BM.GPU.RTXPRO.8", 8).with(Facts {
        env: &[
            ("NCCL_ALGO", "Tree"),
            ("NCCL_CUMEM_ENABLE", "0"),
            ("NCCL_IB_GID_INDEX", "3"),
            ("NCCL_IB_HCA", "mlx5"),
            ("NCCL_IB_QPS_PER_CONNECTION", "1"),
            ("NCCL_IB_SL", "0"),
            ("NCCL_IB_SPLIT_DATA_ON_QPS", "0"),
            ("NCCL_IB_TC", "41"),
            ("NCCL_IB_TIMEOUT", "22"),
            ("NCCL_IGNORE_CPU_AFFINITY", "1"),
            ("NCCL_MIN_NCHANNELS", "8"),
            ("NCCL_NET_PLUGIN", "none"),
            ("NCCL_SOCKET_IFNAME", "eth0"),
        ],
        ..Facts::NONE
    }),
    // Rack-scale GB200/GB300, 4 GPUs, multi-node NVLink. Oracle publishes host-network manifests
    // only for them (no VF count): the rows carry the GPUs, for the warnings.
    Machine::uncounted("BM.GPU.GB200.4", 4).nvlink(),
    Machine::uncounted("BM.GPU.GB200-v2.4", 4).nvlink(),
    Machine::uncounted("BM.GPU.GB200-v3.4", 4).nvlink(),
    Machine::uncounted("BM.GPU.GB300.4", 4).nvlink(),
];

const ENV_TUNING: &[EnvVar<'static>] = &[
    var!("NCCL_IB_TC", "41"),
    var!("NCCL_IB_SL", "0"),
    var!("NCCL_IB_QPS_PER_CONNECTION", "4"),
    var!("NCCL_IB_GID_INDEX", "3"),
    var!("NCCL_IB_SPLIT_DATA_ON_QPS", "0"),
];

fn profile() -> Profile<'static> {
    Profile {
        device: Some(Device {
            resource: Cow::Borrowed("nvidia.com/mlnxnics"),
            count: per_gpu(8),
            cloud: "oci",
            per_gpu_key: "rdmaDevicesPerGPU",
        }),
        env: [RDMA_BASE_HEAD, RDMA_BASE_TAIL, ENV_TUNING].concat(),
        mounts: vec![SHARED_MEMORY_MOUNT],
        volumes: vec![shared_memory()],
        network: Some(Network(Cow::Borrowed("network-operator/sriov-net"))),
        ..empty()
    }
}

fn set_network<'a>(profile: &mut Profile<'a>, network: Cow<'a, str>) {
    profile.network = Some(Network(network));
}
