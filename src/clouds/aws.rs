//! AWS: Elastic Fabric Adapter through the EFA device plugin (behaviour.md §3.1).

use std::borrow::Cow;

use super::{
    Cloud, DEVICE_CLAIM, Fabric, Key, Kind, Machine, SHARED_MEMORY_MOUNT, empty, per_gpu,
    per_gpu_key, shared_memory,
};
use crate::k8s::names::{clean_path, is_absolute_path};
use crate::k8s::quantity::is_quantity;
use crate::profile::{Device, EnvVar, Mount, Profile, Source, Volume, mount, var};

pub const AWS: Cloud = Cloud {
    name: "aws",
    fabrics: &[&EFA_FABRIC],
    plugin: Some(EFA),
    machines: MACHINES,
    accelerators: &[],
    writes: &[],
    machine_labels: &[],
    node_counts: false,
    networks: &super::NETWORK,
};

static EFA_FABRIC: Fabric = Fabric {
    name: "efa",
    block: None,
    env_block: None,
    keys: &[
        per_gpu_key("efaDevicesPerGPU"),
        Key {
            name: "efaLibraryPath",
            kind: Kind::Optional {
                valid: is_library_path,
                what: "an absolute path without a .. segment, and not /dev/shm (where the fabric mounts its shared memory), or null or \"\" for no library mount",
                set: set_library_path,
            },
        },
        Key {
            name: "cpuRequest",
            kind: Kind::Optional {
                valid: is_quantity,
                what: "a Kubernetes quantity such as 100m, or null or \"\" for none",
                set: set_cpu_request,
            },
        },
        // The EFA DRA driver (DeviceClass efa.networking.k8s.aws), which EKS recommends for new
        // clusters on 1.34+ (awsdocs/amazon-eks-user-guide `device-management-efa`; aws/eks-charts
        // `stable/aws-dranet`, read 2026-09): no vpc.amazonaws.com/efa on its nodes.
        DEVICE_CLAIM,
    ],
    exclusive: &[],
    profile,
    // aws-ofi-nccl registers "Libfabric" and takes the name "AWS Libfabric" when NCCL_NET asks
    // for it; versions up to 1.11.0 register "AWS Libfabric" (aws/aws-ofi-nccl
    // `src/nccl_ofi_interface_nvidia.cpp`, 2026-04-30): this name matches both.
    transport: Some("AWS Libfabric"),
};

/// EFA interfaces per instance; the EFA device plugin advertises one `vpc.amazonaws.com/efa` per
/// interface.
const MACHINES: &[Machine] = &[
    // aws-samples/awsome-distributed-training `4.validation_and_observability/
    // 2.gpu-cluster-healthcheck/instance-profiles.conf` (2026-02-16; p5en and p6-b200 also in
    // `.github/workflows/fsdp-eks-regression.yml`).
    Machine::eight_gpus("p4d.24xlarge", 4),
    Machine::eight_gpus("p4de.24xlarge", 4),
    Machine::eight_gpus("p5.48xlarge", 32),
    Machine::eight_gpus("p5e.48xlarge", 32),
    Machine::eight_gpus("p5en.48xlarge", 16),
    Machine::eight_gpus("p6-b200.48xlarge", 8),
    // Inferred: EC2's "EFA configuration for P6-B300" makes network cards 1–16 efa-only (seen in
    // a translated copy); aws/sagemaker-hyperpod-cli `src/sagemaker/hyperpod/training/
    // constants.py` lists ml.p6-b300.48xlarge with 16 EFA.
    Machine::eight_gpus("p6-b300.48xlarge", 16),
    // One GPU and one EFA interface (sagemaker-hyperpod-cli `constants.py`, ml.p5.4xlarge).
    Machine::new("p5.4xlarge", 1, 1),
    // GB200, 4 GPUs: one efa-only interface per NCI group, 4 in all (EKS user guide
    // `ml-eks-nvidia-ultraserver`; awsome-distributed-training `micro-benchmarks/nccl-tests/
    // kubernetes/nccl-tests-gb200.yaml` requests 4 for 4 GPUs). EC2 allows 8 with both
    // interfaces of each group efa-only: such a cluster sets its own row. Multi-node NVLink:
    // "DRA is a requirement" for its ComputeDomain.
    Machine::new("p6e-gb200.36xlarge", 4, 4).nvlink(),
    // SageMaker HyperPod's nodes carry the `ml.` prefix; its own table (sagemaker-hyperpod-cli
    // `constants.py`) agrees with the rows above for these. Not ml.p6e-gb200.36xlarge, which
    // that table lists with 0 EFA.
    Machine::eight_gpus("ml.p4d.24xlarge", 4),
    Machine::eight_gpus("ml.p4de.24xlarge", 4),
    Machine::eight_gpus("ml.p5.48xlarge", 32),
    Machine::eight_gpus("ml.p5e.48xlarge", 32),
    Machine::eight_gpus("ml.p5en.48xlarge", 16),
    Machine::eight_gpus("ml.p6-b200.48xlarge", 8),
    Machine::eight_gpus("ml.p6-b300.48xlarge", 16),
    Machine::new("ml.p5.4xlarge", 1, 1),
];

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
fn set_library_path<'a>(profile: &mut Profile<'a>, path: Option<Cow<'a, str>>) {
    let path = match path {
        Some(path) => path,
        None => {
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

fn set_cpu_request<'a>(profile: &mut Profile<'a>, cpu: Option<Cow<'a, str>>) {
    profile.default_cpu_request = cpu;
}

/// `efaLibraryPath`: mounted at its own path in every GPU container, where `/dev/shm` is the
/// fabric's shared memory: two mounts at one path, which the API server refuses when spelt
/// alike and the runtime lets one shadow when not (behaviour.md §1.4).
fn is_library_path(path: &str) -> bool {
    is_absolute_path(path) && clean_path(path) != "/dev/shm"
}
