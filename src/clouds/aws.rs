//! AWS: Elastic Fabric Adapter through the EFA device plugin (behaviour.md §3.1).

use std::borrow::Cow;

use super::{
    Cloud, Key, Kind, Param, Plugin, Row, SHARED_MEMORY_MOUNT, empty, per_gpu, set_per_gpu,
    shared_memory,
};
use crate::k8s_names::is_absolute_path;
use crate::profile::{Device, EnvVar, Mount, Profile, Source, Volume, mount, var};
use crate::quantity::is_quantity;

pub const AWS: Cloud = Cloud {
    name: "aws",
    keys: &[
        Key {
            name: "efaDevicesPerGPU",
            kind: Kind::PerGpu,
            apply: set_per_gpu,
        },
        Key {
            name: "efaLibraryPath",
            kind: Kind::Optional {
                valid: is_absolute_path,
                what: "an absolute path, or null or \"\" for no library mount",
            },
            apply: set_library_path,
        },
        Key {
            name: "cpuRequest",
            kind: Kind::Optional {
                valid: is_quantity,
                what: "a Kubernetes quantity such as 100m, or null or \"\" for none",
            },
            apply: set_cpu_request,
        },
    ],
    exclusive: &[],
    profile,
    plugin: Some(Plugin {
        resource: EFA,
        // EFA interfaces per instance, all with 8 GPUs: aws-samples/awsome-distributed-training
        // `4.validation_and_observability/2.gpu-cluster-healthcheck/instance-profiles.conf`
        // (2026-02-16; p5en and p6-b200 also in `.github/workflows/fsdp-eks-regression.yml`).
        // The EFA device plugin advertises one `vpc.amazonaws.com/efa` per interface.
        rows: &[
            Row::eight_gpus("p4d.24xlarge", 4),
            Row::eight_gpus("p4de.24xlarge", 4),
            Row::eight_gpus("p5.48xlarge", 32),
            Row::eight_gpus("p5e.48xlarge", 32),
            Row::eight_gpus("p5en.48xlarge", 16),
            Row::eight_gpus("p6-b200.48xlarge", 8),
        ],
    }),
};

const EFA: &str = "vpc.amazonaws.com/efa";
const LIBRARY_VOLUME: &str = "amazon-efa";
const ENV: &[EnvVar<'static>] = &[var!("FI_EFA_USE_HUGE_PAGE", "0")];
const MOUNTS: &[Mount<'static>] = &[
    mount!("amazon-efa", "/opt/amazon-efa-ofi", read_only),
    SHARED_MEMORY_MOUNT,
];

fn profile() -> Profile<'static> {
    Profile {
        device: Some(Device {
            resource: Cow::Borrowed(EFA),
            count: per_gpu(1),
            cloud: "aws",
            per_gpu_key: "efaDevicesPerGPU",
        }),
        default_cpu_request: Some(Cow::Borrowed("100m")),
        env: ENV.to_vec(),
        mounts: MOUNTS.to_vec(),
        volumes: vec![
            Volume::host_path(LIBRARY_VOLUME, "/opt/amazon-efa-ofi", Some("Directory")),
            shared_memory(),
        ],
        ..empty()
    }
}

/// The library directory is mounted at the path it has on the host; off, neither is there.
fn set_library_path<'a>(profile: &mut Profile<'a>, param: Param<'a>) {
    let path = match param {
        Param::Text(path) => path,
        _ => {
            profile.mounts.retain(|m| m.volume != LIBRARY_VOLUME);
            profile.volumes.retain(|v| v.name != LIBRARY_VOLUME);
            return;
        }
    };
    for mount in profile
        .mounts
        .iter_mut()
        .filter(|m| m.volume == LIBRARY_VOLUME)
    {
        *mount = Mount::new(LIBRARY_VOLUME, path.clone(), true);
    }
    for volume in profile
        .volumes
        .iter_mut()
        .filter(|v| v.name == LIBRARY_VOLUME)
    {
        if let Source::HostPath { path: host, .. } = &mut volume.source {
            *host = path.clone();
        }
    }
}

fn set_cpu_request<'a>(profile: &mut Profile<'a>, param: Param<'a>) {
    profile.default_cpu_request = match param {
        Param::Text(cpu) => Some(cpu),
        _ => None,
    };
}
