//! GPUDirect-RDMA with the gIB NCCL plugin on A3 Ultra, A4 and A4X over GKE multi-networking
//! (behaviour.md §3.3.3), as GoogleCloudPlatform/container-engine-accelerators
//! `gpudirect-rdma/nccl-test.yaml`, `nccl-test-a4.yaml` and `nccl-test-imex-a4x.yaml`
//! (2026-03-09) wire it: no daemon, the NVIDIA and gIB host directories, RDMA NICs from eth2 on.
//! Its keys are under `gcp.rdma`.

use std::borrow::Cow;

use super::{DEFAULT_INTERFACE, INTERFACES_ANNOTATION, networks};
use crate::clouds::{DEVICE_CLAIM, Fabric, SHARED_MEMORY_MOUNT, empty, shared_memory};
use crate::profile::{EnvVar, Interfaces, Mount, Profile, Volume, WholeNode, mount, var};

pub static RDMA: Fabric = Fabric {
    name: "rdma",
    block: Some("rdma"),
    env_block: None,
    // GKE managed DRANET serves these machines' RDMA NICs (DeviceClass mrdma.google.com;
    // VENDOR-FACTS part 2, "DRA"); Google documents it for no TCPX or TCPXO machine.
    keys: &[networks(1, 16), DEVICE_CLAIM],
    exclusive: &[],
    profile,
    // Google's values set NCCL_NET=gIB already.
    transport: None,
};

/// Google's pods `source /usr/local/gib/scripts/set_nccl_env.sh`, which ships in the plugin and
/// is not public; these are the copies of its values that Google's cluster-toolkit publishes for
/// gIB v1.1.0 (`examples/machine-learning/a3-ultragpu-8g/nemo-framework/Dockerfile`, 2026-01-22,
/// "Set the following to match what is in /usr/local/gib/scripts/set_nccl_env.sh"), those A3
/// Ultra and A4 (`examples/machine-learning/a4-highgpu-8g/a4high-vm.yaml`, 2026-06-09) share;
/// each machine's own are in its row. A pod that sources the script overrides them at run time.
/// `LD_LIBRARY_PATH` is the manifests' own.
const ENV: &[EnvVar<'static>] = &[
    var!("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64"),
    var!("NCCL_NET", "gIB"),
    var!("NCCL_CROSS_NIC", "0"),
    var!("NCCL_NET_GDR_LEVEL", "PIX"),
    var!("NCCL_P2P_NET_CHUNKSIZE", "131072"),
    var!("NCCL_NVLS_CHUNKSIZE", "524288"),
    var!("NCCL_IB_ADAPTIVE_ROUTING", "1"),
    var!("NCCL_IB_QPS_PER_CONNECTION", "4"),
    var!("NCCL_IB_TC", "52"),
    var!("NCCL_IB_FIFO_TC", "84"),
];

/// Read-only, as Google's Autopilot manifests (`nccl-test-autopilot.yaml`,
/// `nccl-test-a4-autopilot.yaml`) mount them; that works on Standard clusters too.
const MOUNTS: &[Mount<'static>] = &[
    mount!("nvrdma-libraries", "/usr/local/nvidia", read_only),
    mount!("nvrdma-gib", "/usr/local/gib", read_only),
    SHARED_MEMORY_MOUNT,
];

/// The gIB plugin's host directory, which an A4X Max pod does without.
pub(super) const GIB_VOLUME: &str = "nvrdma-gib";

/// The manifests' network names, `rdma-0` … `rdma-7`, for eth2 … eth9.
const NETWORKS: [&str; 8] = [
    "rdma-0", "rdma-1", "rdma-2", "rdma-3", "rdma-4", "rdma-5", "rdma-6", "rdma-7",
];

fn profile() -> Profile<'static> {
    Profile {
        env: ENV.to_vec(),
        mounts: MOUNTS.to_vec(),
        volumes: vec![
            Volume::host_path("nvrdma-libraries", "/home/kubernetes/bin/nvidia", None),
            Volume::host_path(GIB_VOLUME, "/home/kubernetes/bin/gib", None),
            shared_memory(),
        ],
        annotations: vec![DEFAULT_INTERFACE],
        // eth1 is the node's second gVNIC, which only the Autopilot manifests list.
        interfaces: Some(Interfaces {
            key: INTERFACES_ANNOTATION,
            first: 2,
            networks: NETWORKS.iter().map(|n| Cow::Borrowed(*n)).collect(),
        }),
        // "Your GKE workload must use all available GPUs and your Pod must use all available
        // secondary NICs on a single GKE node" (Google's A4X page; inferred for A3 Ultra and A4).
        whole_node: Some(WholeNode {
            gpus: 8,
            why: (
                "GPUDirect-RDMA uses all ",
                " GPUs and RDMA NICs of the node",
            ),
        }),
        ..empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nics_are_eth2_on_and_a_machine_takes_its_own_count() {
        let interfaces = profile().interfaces.unwrap();
        let eight = interfaces.json(None);
        assert!(
            eight.ends_with(r#"{"interfaceName":"eth9","network":"rdma-7"}]"#),
            "{eight}"
        );
        assert_eq!(
            interfaces.json(Some(4)),
            concat!(
                r#"[{"interfaceName":"eth0","network":"default"},"#,
                r#"{"interfaceName":"eth2","network":"rdma-0"},"#,
                r#"{"interfaceName":"eth3","network":"rdma-1"},"#,
                r#"{"interfaceName":"eth4","network":"rdma-2"},"#,
                r#"{"interfaceName":"eth5","network":"rdma-3"}]"#,
            )
        );
    }
}
