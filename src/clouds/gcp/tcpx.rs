//! GPUDirect-TCPX on A3 High (behaviour.md §3.3.2), as GoogleCloudPlatform/
//! container-engine-accelerators `gpudirect-tcpx/nccl-test-latest.yaml` (2024-07-01, the newest
//! manifest) wires it, with the NCCL values of `gpudirect-tcpx/nccl-config.yaml` (2026-06-02,
//! "Finalize NCCL config for GKE 1.34+"). Its keys are under `gcp.tcpx`.

use std::borrow::Cow;

use super::{DAEMON_IMAGE, DEFAULT_INTERFACE, INTERFACES_ANNOTATION, daemon_devices, networks};
use crate::clouds::{Fabric, Key, Kind, SHARED_MEMORY_MOUNT, empty, shared_memory};
use crate::json::write::json_string;
use crate::k8s::names::is_argv_item;
use crate::profile::{
    EnvVar, Interfaces, Mount, Profile, Sidecar, Source, Volume, WholeNode, mount, var,
};

pub static TCPX: Fabric = Fabric {
    name: "tcpx",
    block: Some("tcpx"),
    env_block: None,
    keys: &[
        networks(4, 4),
        DAEMON_IMAGE,
        Key {
            name: "daemonFlags",
            kind: Kind::Texts {
                len: None,
                valid: is_argv_item,
                what: "an argument without control characters (the daemon's command is an argv list: no shell reads it)",
                set: set_daemon_flags,
            },
        },
    ],
    exclusive: &[],
    profile,
    // google/nccl-plugin-gpudirecttcpx `src/nccl_plugin.cc` (2024-07-22, the newest public
    // source; whether the v3.1.x installers' binaries keep this name is not published).
    transport: Some("GPUDirectTCPX_v7"),
};

/// `nccl-config.yaml`'s list, in its order, but for its first item (`LD_LIBRARY_PATH`), which the
/// manifest's trainer sets as below.
const ENV: &[EnvVar<'static>] = &[
    var!("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64"),
    var!("NCCL_SOCKET_IFNAME", "eth0"),
    var!("NCCL_ALGO", "Ring,Tree"),
    var!("NCCL_PROTO", "Simple"),
    var!("NCCL_CROSS_NIC", "0"),
    var!("NCCL_NET_GDR_LEVEL", "PIX"),
    var!("NCCL_P2P_PXN_LEVEL", "0"),
    var!("NCCL_GPUDIRECTTCPX_SOCKET_IFNAME", "eth1,eth2,eth3,eth4"),
    var!("NCCL_GPUDIRECTTCPX_CTRL_DEV", "eth0"),
    var!("NCCL_DYNAMIC_CHUNK_SIZE", "524288"),
    var!("NCCL_P2P_NET_CHUNKSIZE", "524288"),
    var!("NCCL_P2P_PCI_CHUNKSIZE", "524288"),
    var!("NCCL_P2P_NVL_CHUNKSIZE", "1048576"),
    var!("NCCL_BUFFSIZE", "4194304"),
    var!("NCCL_NSOCKS_PERTHREAD", "4"),
    var!("NCCL_SOCKET_NTHREADS", "1"),
    var!(
        "NCCL_GPUDIRECTTCPX_TX_BINDINGS",
        "eth1:8-21,112-125;eth2:8-21,112-125;eth3:60-73,164-177;eth4:60-73,164-177"
    ),
    var!(
        "NCCL_GPUDIRECTTCPX_RX_BINDINGS",
        "eth1:22-35,126-139;eth2:22-35,126-139;eth3:74-87,178-191;eth4:74-87,178-191"
    ),
    var!(
        "NCCL_GPUDIRECTTCPX_PROGRAM_FLOW_STEERING_WAIT_MICROS",
        "500000"
    ),
];

const LIBRARIES: &str = "nvtcpx-libraries";
const SOCKET: &str = "nvtcpx-socket";
/// The trainer reaches the daemon through its socket directory, which it mounts at `/tmp`.
const MOUNTS: &[Mount<'static>] = &[
    mount!("nvtcpx-socket", "/tmp"),
    mount!("nvtcpx-libraries", "/usr/local/nvidia/lib64", read_only),
    SHARED_MEMORY_MOUNT,
];

const DAEMON_ENV: &[EnvVar<'static>] = &[var!("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64")];
const DAEMON_MOUNTS: &[Mount<'static>] = &[
    mount!("nvtcpx-libraries", "/usr/local/nvidia/lib64", read_only),
    mount!("nvtcpx-socket", "/run/tcpx"),
    mount!("nvtcpx-sys", "/hostsysfs"),
    mount!("nvtcpx-proc-sys", "/hostprocsysfs"),
];
const ENTRYPOINT: &str = "/tcpgpudmarxd/build/app/tcpgpudmarxd";
/// The manifest's command after the entrypoint. Its last item is written `\"--verbose 128 2 0 \"`
/// there, a plain YAML scalar, so the backslashes and quotes are part of the argument the daemon
/// gets.
const FLAGS: &[&str] = &[
    "--gpu_nic_preset",
    "a3vm",
    "--gpu_shmem_type",
    "fd",
    "--uds_path",
    "/run/tcpx",
    "--setup_param",
    "\\\"--verbose 128 2 0 \\\"",
];

const DEVICES_ANNOTATION: &str = "devices.gke.io/container.tcpx-daemon";
const NETWORKS: [&str; 4] = ["vpc1", "vpc2", "vpc3", "vpc4"];

fn profile() -> Profile<'static> {
    Profile {
        env: ENV.to_vec(),
        mounts: MOUNTS.to_vec(),
        volumes: vec![
            // The manifest's socket directory is a hostPath `/run/tcpx`; its Autopilot variant
            // an emptyDir, which is all two containers of one pod need, on either kind of cluster.
            Volume {
                name: SOCKET,
                source: Source::Scratch,
            },
            Volume::host_path(LIBRARIES, "/home/kubernetes/bin/nvidia/lib64", None),
            shared_memory(),
            Volume::host_path("nvtcpx-sys", "/sys", None),
            Volume::host_path("nvtcpx-proc-sys", "/proc/sys", None),
        ],
        // The manifest's trainer adds IPC_LOCK.
        capabilities: vec![Cow::Borrowed("IPC_LOCK")],
        sidecar: Some(Sidecar {
            name: "tcpx-daemon",
            // The manifest's pair: installer nccl-plugin-gpudirecttcpx-dev:v3.1.9 with this
            // daemon ("The tcpx-daemon version is coupled with the NCCL plugin installer version").
            image: Cow::Borrowed(
                "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.12",
            ),
            command: std::iter::once(ENTRYPOINT)
                .chain(FLAGS.iter().copied())
                .map(Cow::Borrowed)
                .collect(),
            script: None,
            env: DAEMON_ENV,
            capabilities: &["NET_ADMIN"],
            mounts: DAEMON_MOUNTS,
            startup_probe: None,
        }),
        annotations: vec![
            (DEVICES_ANNOTATION, json_string!(daemon_devices!())),
            DEFAULT_INTERFACE,
        ],
        interfaces: Some(Interfaces {
            key: INTERFACES_ANNOTATION,
            first: 1,
            networks: NETWORKS.iter().map(|n| Cow::Borrowed(*n)).collect(),
        }),
        // The daemon drives all 8 GPUs and 4 GPU NICs of an a3-highgpu-8g node.
        whole_node: Some(WholeNode {
            gpus: 8,
            why: (
                "GPUDirect-TCPX uses all ",
                " GPUs and NICs of an A3 High node",
            ),
        }),
        ..empty()
    }
}

fn set_daemon_flags<'a>(profile: &mut Profile<'a>, flags: Vec<Cow<'a, str>>) {
    if let Some(sidecar) = &mut profile.sidecar {
        sidecar.command = std::iter::once(Cow::Borrowed(ENTRYPOINT))
            .chain(flags)
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setup_param_is_the_22_characters_yaml_reads_from_the_manifest() {
        let setup = FLAGS[FLAGS.len() - 1];
        assert_eq!(setup.len(), 22);
        assert!(setup.starts_with("\\\"--verbose") && setup.ends_with(" \\\""));
        assert!(FLAGS.iter().all(|f| is_argv_item(f)));
    }

    #[test]
    fn the_interfaces_are_eth1_to_eth4() {
        assert_eq!(
            profile().interfaces.unwrap().json(None),
            concat!(
                r#"[{"interfaceName":"eth0","network":"default"},"#,
                r#"{"interfaceName":"eth1","network":"vpc1"},"#,
                r#"{"interfaceName":"eth2","network":"vpc2"},"#,
                r#"{"interfaceName":"eth3","network":"vpc3"},"#,
                r#"{"interfaceName":"eth4","network":"vpc4"}]"#,
            )
        );
    }
}
