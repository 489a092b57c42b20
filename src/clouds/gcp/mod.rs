//! GCP: one GPU stack per machine family, never mixed (behaviour.md §3.3): GPUDirect-TCPXO on A3
//! Mega (the chart's), GPUDirect-TCPX on A3 High, GPUDirect-RDMA with the gIB NCCL plugin on A3
//! Ultra, A4 and A4X. No device resource: the NICs are attached through GKE's multi-network
//! annotations. Google: GPUDirect RDMA "is not compatible with ... GPUDirect TCPX/TCPXO. Don't ...
//! install the TCPX/TCPXO plugin on clusters that use GPUDirect RDMA"
//! (docs.cloud.google.com/ai-hypercomputer/docs/create/gke-ai-hypercompute-custom-a4x,
//! 2026-04-06): a machine's own fabric wins over `gcp.fabric`.

mod rdma;
mod tcpx;
mod tcpxo;

use std::borrow::Cow;

use super::{Accelerator, Cloud, Facts, Key, Kind, Machine};
use crate::json::write::json_string;
use crate::k8s::names::{is_dns1123_subdomain, is_image_reference};
use crate::profile::Profile;

pub const GCP: Cloud = Cloud {
    name: "gcp",
    fabrics: &[&tcpxo::TCPXO, &tcpx::TCPX, &rdma::RDMA],
    plugin: None,
    machines: MACHINES,
    accelerators: ACCELERATORS,
    writes: &["networking.gke.io/", "devices.gke.io/"],
    machine_labels: &[],
    node_counts: false,
    networks: &crate::cluster::NETWORK,
};

/// GKE's machine types with GPUDirect, their GPUs, the NICs their fabric uses, and the fabric
/// (VENDOR-FACTS part 2, from GoogleCloudPlatform/container-engine-accelerators (CEA) and
/// cluster-toolkit (CT); the NCCL values are CT's copies of the gIB plugin's
/// `set_nccl_env.sh`, of gIB v1.1.0, which the blueprints `examples/gke-a3-ultragpu/`,
/// `gke-a4/` and `gke-a4x/` install).
const MACHINES: &[Machine] = &[A3_HIGH, A3_MEGA, A3_ULTRA, A4, A4X, A4X_MAX];

// 4 GPU NICs on eth1…eth4 (CEA `gpudirect-tcpx/nccl-test-latest.yaml`).
const A3_HIGH: Machine = Machine::eight_gpus("a3-highgpu-8g", 4).with(Facts::runs(&tcpx::TCPX));
// 8 GPU NICs on eth1…eth8 (CEA `gpudirect-tcpxo/`).
const A3_MEGA: Machine = Machine::eight_gpus("a3-megagpu-8g", 8).with(Facts::runs(&tcpxo::TCPXO));
// 8 RDMA NICs on eth2…eth9 (CEA `gpudirect-rdma/nccl-test.yaml`, 2026-03-09); tuner file of
// CT `examples/machine-learning/a3-ultragpu-8g/nemo-framework/Dockerfile` (2026-01-22).
const A3_ULTRA: Machine = Machine::eight_gpus("a3-ultragpu-8g", 8).with(Facts {
    fabric_env: Some((
        &rdma::RDMA,
        &[(
            "NCCL_TUNER_CONFIG_PATH",
            "/usr/local/gib/configs/tuner_config_a3u.txtpb",
        )],
    )),
    ..Facts::runs(&rdma::RDMA)
});
// 8 RDMA NICs (CEA `gpudirect-rdma/nccl-test-a4.yaml`); CT
// `examples/machine-learning/a4-highgpu-8g/a4high-vm.yaml` (2026-06-09) adds the GID index
// and names another tuner file.
const A4: Machine = Machine::eight_gpus("a4-highgpu-8g", 8).with(Facts {
    fabric_env: Some((
        &rdma::RDMA,
        &[
            ("NCCL_IB_GID_INDEX", "3"),
            (
                "NCCL_TUNER_CONFIG_PATH",
                "/usr/local/gib/configs/tuner_config.txtpb",
            ),
        ],
    )),
    ..Facts::runs(&rdma::RDMA)
});
// GB200, 4 GPUs, 4 RDMA NICs on eth2…eth5 (CEA `gpudirect-rdma/nccl-test-imex-a4x.yaml`),
// multi-node NVLink. CT publishes no NCCL values of its own for A4X: the fabric's common
// ones apply (inferred).
const A4X: Machine = Machine::new("a4x-highgpu-4g", 4, 4)
    .with(Facts::runs(&rdma::RDMA))
    .nvlink();
// GB300: its 8 RDMA NICs come only through GKE managed DRANET (CEA
// `gpudirect-rdma/nccl-test-a4x-max.yaml`, 2026-03-19, carries no network annotation, claims
// `[compute-domain-channel, rdma]`, and mounts no gIB host directory: the plugin ships in its
// image). Wired only with `gcp.rdma.deviceClaim` (behaviour.md §3.8).
const A4X_MAX: Machine = Machine::new("a4x-maxgpu-4g-metal", 4, 8)
    .with(Facts::runs(&rdma::RDMA))
    .nvlink()
    .dra_only(
        "an A4X Max node gets its RDMA NICs only through GKE managed DRANET (DeviceClass mrdma.google.com), which the pod's own resource claims must request, or the policy's: set gcp.rdma.deviceClaim (examples/settings/vendor/gcp-dranet.yaml)",
        &[rdma::GIB_VOLUME],
    );

/// `cloud.google.com/gke-accelerator` values (CEA `gpudirect-rdma/` and `gpudirect-tcpx/`
/// manifests and installers; CT's `accelerator_type`s). `nvidia-h100-80gb` also labels the
/// smaller A3 High machines, which have no GPUDirect: it picks the fabric, not a machine.
const ACCELERATORS: &[Accelerator] = &[
    Accelerator {
        label: "nvidia-h100-80gb",
        machine: None,
        fabric: &tcpx::TCPX,
    },
    Accelerator {
        label: "nvidia-h100-mega-80gb",
        machine: Some(&A3_MEGA),
        fabric: &tcpxo::TCPXO,
    },
    Accelerator {
        label: "nvidia-h200-141gb",
        machine: Some(&A3_ULTRA),
        fabric: &rdma::RDMA,
    },
    Accelerator {
        label: "nvidia-b200",
        machine: Some(&A4),
        fabric: &rdma::RDMA,
    },
    Accelerator {
        label: "nvidia-gb200",
        machine: Some(&A4X),
        fabric: &rdma::RDMA,
    },
    Accelerator {
        label: "nvidia-gb300",
        machine: Some(&A4X_MAX),
        fabric: &rdma::RDMA,
    },
];

const NETWORK_NAME: &str = "a GKE network name (lowercase letters, digits, '-' and '.')";

/// `networks`: from `min` to `max` GKE networks, one a NIC.
const fn networks(min: usize, max: usize) -> Key {
    Key {
        name: "networks",
        kind: Kind::Texts {
            len: Some((min, max)),
            valid: is_dns1123_subdomain,
            what: NETWORK_NAME,
            set: set_networks,
        },
    }
}

/// `daemonImage`: the daemon sidecar's image.
const DAEMON_IMAGE: Key = Key {
    name: "daemonImage",
    kind: Kind::Text {
        valid: is_image_reference,
        what: "an image reference without blanks",
        set: set_daemon_image,
    },
};

/// `devices.gke.io/container.<daemon>`: the devices a daemon sees, one `- path:` line each, each
/// ending in a newline: the 8 GPUs, `nvidiactl`, `nvidia-uvm`, then the lines given.
macro_rules! daemon_devices {
    ($($more:literal),*) => {
        concat!(
            "- path: /dev/nvidia0\n",
            "- path: /dev/nvidia1\n",
            "- path: /dev/nvidia2\n",
            "- path: /dev/nvidia3\n",
            "- path: /dev/nvidia4\n",
            "- path: /dev/nvidia5\n",
            "- path: /dev/nvidia6\n",
            "- path: /dev/nvidia7\n",
            "- path: /dev/nvidiactl\n",
            "- path: /dev/nvidia-uvm\n",
            $($more),*
        )
    };
}
use daemon_devices;

/// GKE's multi-network annotation: the fabric's NICs on their networks.
const INTERFACES_ANNOTATION: &str = "networking.gke.io/interfaces";

const DEFAULT_INTERFACE: (&str, &str) =
    ("networking.gke.io/default-interface", json_string!("eth0"));

/// The networks of the fabric's NICs, in order.
fn set_networks<'a>(profile: &mut Profile<'a>, networks: Vec<Cow<'a, str>>) {
    if let Some(interfaces) = &mut profile.interfaces {
        interfaces.networks = networks;
    }
}

fn set_daemon_image<'a>(profile: &mut Profile<'a>, image: Cow<'a, str>) {
    if let Some(sidecar) = &mut profile.sidecar {
        sidecar.image = image;
    }
}
