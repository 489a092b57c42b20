//! Azure: InfiniBand through an RDMA device plugin (behaviour.md §3.2).

use std::borrow::Cow;

use super::{
    Cloud, DEVICE_CLAIM, Fabric, Facts, Key, Kind, Machine, Param, RDMA_BASE_HEAD, RDMA_BASE_TAIL,
    SHARED_MEMORY_MOUNT, empty, per_gpu, per_gpu_key, shared_memory,
};
use crate::k8s::names::{is_dns1123_subdomain, is_qualified_name_part};
use crate::profile::{Device, DeviceCount, EnvVar, Mount, Profile, Source, Volume, mount, var};

pub const AZURE: Cloud = Cloud {
    name: "azure",
    fabrics: &[&INFINIBAND],
    plugin: Some("rdma/ib"),
    machines: MACHINES,
    accelerators: &[],
    writes: &[],
    machine_labels: &[],
    node_counts: false,
    networks: &super::NETWORK,
};

static INFINIBAND: Fabric = Fabric {
    name: "infiniband",
    block: None,
    env_block: None,
    keys: &[
        per_gpu_key("rdmaDevicesPerGPU"),
        Key {
            name: "rdmaDevicesPerContainer",
            kind: Kind::Whole {
                min: 1,
                max: 64,
                set: set_per_container,
            },
        },
        Key {
            name: "rdmaDeviceName",
            kind: Kind::Text {
                valid: is_qualified_name_part,
                what: "a resource name of at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, so that rdma/<name> is a valid extended resource",
                set: set_device_name,
            },
        },
        TOPOLOGY,
        // AKS managed DRANET (learn.microsoft.com/azure/aks/managed-support-for-dranet, read
        // 2026-09): the InfiniBand NICs through a claim instead of rdma/*.
        DEVICE_CLAIM,
    ],
    // A count per GPU and a count per container are two device plugins' ways of counting.
    exclusive: &[("rdmaDevicesPerGPU", "rdmaDevicesPerContainer")],
    profile,
    // NCCL's own InfiniBand transport (NVIDIA/nccl `src/transport/net_ib/common.cc`).
    transport: Some("IB"),
};

/// `ncclTopologyConfigMap`: the ConfigMap of the NCCL topology file.
const TOPOLOGY: Key = Key {
    name: "ncclTopologyConfigMap",
    kind: Kind::Optional {
        valid: is_dns1123_subdomain,
        what: "a ConfigMap name (lowercase letters, digits, '-' and '.', at most 253 characters)",
        set: set_topology,
    },
};

/// A machine for which Azure ships no topology file: none is mounted.
const NO_TOPOLOGY: &[(&Fabric, &Key, Param<'static>)] = &[(&INFINIBAND, &TOPOLOGY, Param::Off)];

/// The SR-IOV device plugin of Azure/aks-rdma-infiniband advertises `rdma/ib`, one unit per
/// InfiniBand NIC (`website/docs/configurations/01-network-operator.md`).
const MACHINES: &[Machine] = &[
    // Each of these sizes gives every one of its 8 GPUs "its own dedicated" InfiniBand connection
    // (MicrosoftDocs/azure-docs `articles/virtual-machines/sizes/gpu-accelerated/includes/`
    // `nd-a100-v4-series-summary.md`, `ndm-a100-v4-series-summary.md`,
    // `nd-h100-v5-series-summary.md`).
    Machine::eight_gpus("Standard_ND96asr_v4", 8),
    Machine::eight_gpus("Standard_ND96amsr_A100_v4", 8),
    Machine::eight_gpus("Standard_ND96isr_H100_v5", 8),
    // Inferred: 8 InfiniBand NICs like the H100 v5 it shares its NDv5 topology file with
    // (Azure/azhpc-images `components/setup_sku_customizations.sh` maps `nd96is*_h[1-2]00_v5`).
    Machine::eight_gpus("Standard_ND96isr_H200_v5", 8),
    // 4 GPUs, 4 × 400 Gb/s InfiniBand (Microsoft Learn, ND-GB200-v6 series); Azure ships no NCCL
    // topology file for it (azhpc-images `ndv6.sh`), so none is mounted. Multi-node NVLink.
    Machine::new("Standard_ND128isr_NDR_GB200_v6", 4, 4)
        .with(Facts {
            set: NO_TOPOLOGY,
            ..Facts::NONE
        })
        .nvlink(),
    // AMD MI300X: `rdma/ib: 8` for `amd.com/gpu: 8`, no topology file, and the RCCL values of
    // Azure/aks-rdma-infiniband `tests/scenarios/k8s/templates/rccl-mpi-job.yaml` (2026-04-30).
    Machine::eight_gpus("Standard_ND96isr_MI300X_v5", 8).with(Facts {
        set: NO_TOPOLOGY,
        env: &[
            ("NCCL_IB_DISABLE", "0"),
            ("NCCL_NET_GDR_LEVEL", "SYS"),
            ("RCCL_MSCCL_ENABLE", "0"),
        ],
        ..Facts::NONE
    }),
];

const TOPOLOGY_VOLUME: &str = "nccl-topo";
const ENV_TOPOLOGY: &[EnvVar<'static>] = &[var!("NCCL_TOPO_FILE", "/etc/nccl/nccl-topo.xml")];
const MOUNTS: &[Mount<'static>] = &[
    SHARED_MEMORY_MOUNT,
    mount!("nccl-topo", "/etc/nccl", read_only),
];

fn profile() -> Profile<'static> {
    Profile {
        device: Some(Device {
            resource: Cow::Borrowed("rdma/hca_shared_devices_a"),
            count: per_gpu(1),
            cloud: "azure",
            per_gpu_key: "rdmaDevicesPerGPU",
        }),
        env: [RDMA_BASE_HEAD, ENV_TOPOLOGY, RDMA_BASE_TAIL].concat(),
        mounts: MOUNTS.to_vec(),
        volumes: vec![
            shared_memory(),
            Volume {
                name: TOPOLOGY_VOLUME,
                source: Source::ConfigMap {
                    name: Cow::Borrowed("nccl-topo"),
                },
            },
        ],
        // RDMA registers (pins) memory: "a pod without this will have a low locked memory value"
        // (Azure/aks-rdma-infiniband `website/docs/configurations/01-network-operator.md`).
        capabilities: vec![Cow::Borrowed("IPC_LOCK")],
        harden: true,
        ..empty()
    }
}

fn set_per_container(profile: &mut Profile<'_>, n: u64) {
    if let Some(device) = &mut profile.device {
        device.count = DeviceCount::PerContainer(n);
    }
}

fn set_device_name<'a>(profile: &mut Profile<'a>, name: Cow<'a, str>) {
    if let Some(device) = &mut profile.device {
        device.resource = Cow::Owned(format!("rdma/{name}"));
    }
}

/// The ConfigMap of the topology file; off, neither its volume, its mount nor `NCCL_TOPO_FILE`.
fn set_topology<'a>(profile: &mut Profile<'a>, config_map: Option<Cow<'a, str>>) {
    let Some(config_map) = config_map else {
        profile.volumes.retain(|v| v.name != TOPOLOGY_VOLUME);
        profile.mounts.retain(|m| m.volume != TOPOLOGY_VOLUME);
        profile.env.retain(|e| e.name != ENV_TOPOLOGY[0].name);
        return;
    };
    for volume in profile
        .volumes
        .iter_mut()
        .filter(|v| v.name == TOPOLOGY_VOLUME)
    {
        volume.source = Source::ConfigMap {
            name: config_map.clone(),
        };
    }
}
