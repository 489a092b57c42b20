//! Clusters beyond the four clouds whose GPUs reach each other over InfiniBand or RoCE exposed by
//! device plugins and Multus: NVIDIA's Network Operator on-prem (RDMA shared device plugin,
//! SR-IOV, host-device, Spectrum-X rails) and the neoclouds (behaviour.md §3.9). Nothing about
//! such a cluster is universal, so the block describes it: which device resource, what its count
//! means, which networks; this table holds what every one of them needs.

use std::borrow::Cow;

use super::{
    Cloud, Fabric, Key, Kind, SHARED_MEMORY_MOUNT, empty, per_gpu_key, set_resource, shared_memory,
};
use crate::k8s::names::is_extended_resource;
use crate::profile::{
    Device, DeviceCount, HostDirectory, Mount, Network, Profile, Rail, Source, Volume,
};

pub const RDMA: Cloud = Cloud {
    name: "rdma",
    fabrics: &[&RDMA_FABRIC],
    plugin: Some(SHARED_DEVICE),
    // Every cluster names its own machines: rows come from the settings only.
    machines: &[],
    accelerators: &[],
    writes: &[crate::multus::ANNOTATION],
    machine_labels: MACHINE_LABELS,
    node_counts: true,
    networks: &crate::cluster::ATTACHMENT,
};

/// The Network Operator's RDMA shared device plugin's first pool, as its own example pod asks
/// for it (Mellanox/network-operator `example/rdma-gpu-test-pod1.yml`, read 2026-12): one per
/// pod, whatever its GPUs.
const SHARED_DEVICE: &str = "rdma/rdma_shared_device_a";

/// Labels that name a machine where no instance type does: GPU Feature Discovery's (NVIDIA GPU
/// Operator, the node's DMI product name with blanks as '-'), and CoreWeave's node type.
const MACHINE_LABELS: &[&str] = &["nvidia.com/gpu.machine", "node.coreweave.cloud/type"];

/// The volumes of `hostDirectories`, one per directory.
const DIRECTORY_VOLUMES: [&str; 8] = [
    "nv-host-dir-0",
    "nv-host-dir-1",
    "nv-host-dir-2",
    "nv-host-dir-3",
    "nv-host-dir-4",
    "nv-host-dir-5",
    "nv-host-dir-6",
    "nv-host-dir-7",
];

static RDMA_FABRIC: Fabric = Fabric {
    name: "rdma",
    block: None,
    env_block: None,
    keys: &[
        Key {
            name: "resourceName",
            kind: Kind::Optional {
                valid: is_extended_resource,
                what: "an extended resource name with a domain prefix that does not start with requests. (the API server keeps it for quotas), such as nvidia.com/hostdev, or null for a fabric without a device resource",
                set: set_resource_name,
            },
        },
        per_gpu_key("devicesPerGPU"),
        Key {
            name: "devicesPerContainer",
            kind: Kind::Whole {
                min: 1,
                max: 64,
                set: set_per_container,
            },
        },
        Key {
            name: "rails",
            kind: Kind::Rails {
                len: (1, 32),
                set: set_rails,
            },
        },
        Key {
            name: "network",
            kind: Kind::Network { set: set_network },
        },
        Key {
            name: "networks",
            kind: Kind::Networks {
                len: (0, 32),
                set: set_networks,
            },
        },
        Key {
            name: "hostDirectories",
            kind: Kind::Directories {
                len: (0, DIRECTORY_VOLUMES.len()),
                set: set_directories,
            },
        },
    ],
    // Counts of one resource, counted two ways; rails are resources of their own, each with its
    // network.
    exclusive: &[
        ("devicesPerGPU", "devicesPerContainer"),
        ("rails", "resourceName"),
        ("rails", "devicesPerGPU"),
        ("rails", "devicesPerContainer"),
        ("rails", "network"),
    ],
    profile,
    // NCCL's own InfiniBand transport, which carries RoCE too (NVIDIA/nccl
    // `src/transport/net_ib/common.cc`).
    transport: Some("IB"),
};

fn profile() -> Profile<'static> {
    Profile {
        device: Some(device(Cow::Borrowed(SHARED_DEVICE))),
        mounts: vec![SHARED_MEMORY_MOUNT],
        volumes: vec![shared_memory()],
        // RDMA pins memory: every reference pod of the Network Operator and the neoclouds adds
        // it (VENDOR-FACTS part 4).
        capabilities: vec![Cow::Borrowed("IPC_LOCK")],
        harden: true,
        ..empty()
    }
}

/// The block's device of `resource`, one per GPU container until a count says otherwise.
fn device(resource: Cow<'_, str>) -> Device<'_> {
    Device {
        resource,
        count: DeviceCount::PerContainer(1),
        cloud: "rdma",
        per_gpu_key: "devicesPerGPU",
    }
}

/// The device's resource; `None`, a fabric without one (Nebius: IPC_LOCK and env only). One
/// device takes the place of a lower layer's rails, as rails take a device's.
fn set_resource_name<'a>(profile: &mut Profile<'a>, resource: Option<Cow<'a, str>>) {
    if resource.is_some() {
        profile.rails.clear();
    }
    match (resource, &mut profile.device) {
        (None, _) => profile.device = None,
        (Some(resource), Some(_)) => set_resource(profile, resource),
        (Some(resource), None) => profile.device = Some(device(resource)),
    }
}

fn set_per_container(profile: &mut Profile<'_>, n: u64) {
    if let Some(device) = &mut profile.device {
        device.count = DeviceCount::PerContainer(n);
    }
}

/// Rails take the device's place: each is a resource of its own.
fn set_rails<'a>(profile: &mut Profile<'a>, rails: Vec<Rail<'a>>) {
    profile.device = None;
    profile.rails = rails;
}

fn set_network<'a>(profile: &mut Profile<'a>, network: Network<'a>) {
    profile.network = Some(network);
}

fn set_networks<'a>(profile: &mut Profile<'a>, networks: Vec<Network<'a>>) {
    profile.networks = networks;
}

/// The directories, each a hostPath volume mounted read-only; a later layer's list replaces an
/// earlier one's.
fn set_directories<'a>(profile: &mut Profile<'a>, directories: Vec<HostDirectory<'a>>) {
    let ours = |name: &str| DIRECTORY_VOLUMES.contains(&name);
    profile.volumes.retain(|v| !ours(v.name));
    profile.mounts.retain(|m| !ours(m.volume));
    for (name, directory) in DIRECTORY_VOLUMES.iter().zip(directories) {
        profile.volumes.push(Volume {
            name,
            source: Source::HostPath {
                path: directory.host,
                kind: None,
            },
        });
        profile.mounts.push(Mount::new(name, directory.mount, true));
    }
}
