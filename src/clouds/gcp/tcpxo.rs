//! GPUDirect-TCPXO on A3 Mega (behaviour.md §3.3), the chart's GCP injection: its keys sit in
//! the `gcp` block itself. No device resource: the NICs are attached through GKE's multi-network
//! annotations, and a daemon sidecar drives them.

use std::borrow::Cow;

use super::{DAEMON_IMAGE, DEFAULT_INTERFACE, INTERFACES_ANNOTATION, daemon_devices, networks};
use crate::clouds::{Fabric, Key, Kind, SHARED_MEMORY_MOUNT, empty, shared_memory};
use crate::json::write::json_string;
use crate::profile::{
    EnvVar, Interfaces, Mount, Profile, Sidecar, Source, StartupProbe, Volume, WholeNode, mount,
    var,
};

pub static TCPXO: Fabric = Fabric {
    name: "tcpxo",
    block: None,
    // `gcp.env` reaches every GCP fabric; Google's TCPXO profile changes values the other
    // fabrics must keep.
    env_block: Some("tcpxo"),
    keys: &[
        networks(8, 8),
        DAEMON_IMAGE,
        Key {
            name: "daemonFlags",
            kind: Kind::Texts {
                len: None,
                valid: is_flag,
                what: "a flag of letters, digits and -_=.,:/@+% (no shell syntax)",
                set: set_daemon_flags,
            },
        },
        Key {
            name: "daemonStartupProbe",
            kind: Kind::Switch {
                set: set_startup_probe,
            },
        },
    ],
    exclusive: &[],
    profile,
    // google/nccl-plugin-gpudirect-tcpxo `tcpdirect_plugin/fastrak_offload/fastrak_plugin.cc`
    // (2026-03-10).
    transport: Some("FasTrak"),
};

const ENV: &[EnvVar<'static>] = &[
    var!("NCCL_FASTRAK_CTRL_DEV", "eth0"),
    var!(
        "NCCL_FASTRAK_IFNAME",
        "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8"
    ),
    var!("NCCL_SOCKET_IFNAME", "eth0"),
    var!("NCCL_CROSS_NIC", "0"),
    var!("NCCL_ALGO", "Ring,Tree"),
    var!("NCCL_PROTO", "Simple"),
    var!("NCCL_MIN_NCHANNELS", "4"),
    var!("NCCL_TUNER_PLUGIN", "libnccl-tuner.so"),
    var!(
        "NCCL_TUNER_CONFIG_PATH",
        "/usr/local/nvidia/lib64/a3plus_tuner_config.textproto"
    ),
    var!(
        "NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE",
        "/usr/local/nvidia/lib64/a3plus_guest_config.textproto"
    ),
    var!("NCCL_DYNAMIC_CHUNK_SIZE", "524288"),
    var!("NCCL_P2P_NET_CHUNKSIZE", "524288"),
    var!("NCCL_P2P_PCI_CHUNKSIZE", "524288"),
    var!("NCCL_P2P_NVL_CHUNKSIZE", "1048576"),
    var!("NCCL_FASTRAK_NUM_FLOWS", "2"),
    var!("NCCL_FASTRAK_USE_SNAP", "1"),
    var!("NCCL_FASTRAK_PLUGIN_ACCEPT_TIMEOUT_MS", "600000"),
    var!("NCCL_FASTRAK_ENABLE_CONTROL_CHANNEL", "0"),
    var!("NCCL_BUFFSIZE", "8388608"),
    var!("NCCL_NET_GDR_LEVEL", "PIX"),
    var!("NCCL_FASTRAK_ENABLE_HOTPATH_LOGGING", "0"),
    var!("NCCL_FASTRAK_USE_LLCM", "1"),
    var!("NCCL_NVLS_ENABLE", "0"),
    var!(
        "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY",
        "/dev/aperture_devices"
    ),
];
const MOUNTS: &[Mount<'static>] = &[
    mount!("scratch", "/scratch"),
    SHARED_MEMORY_MOUNT,
    mount!("nvtcpxo-libraries", "/usr/local/nvidia", read_only),
    mount!("nvtcpxo-aperture-devices", "/dev/aperture_devices"),
];

const DAEMON_ENV: &[EnvVar<'static>] = &[var!("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64")];
/// The daemon's env and startup probe as Google recommends them: with `HEALTH_CHECK_LOG_FILE`
/// set, the daemon writes that file once its initialisation is done (~30 s), and the probe fails
/// the sidecar, so the trainer never starts, on a node where it cannot (GoogleCloudPlatform/
/// container-engine-accelerators `gpudirect-tcpxo/best-practice.md`, commit a2371aeb,
/// 2025-08-25, "Setup Startup Probe for the TCPXO-daemon Sidecar"; its example runs daemon
/// v1.0.8, which is thus the oldest version known to write the file; no release note says).
const DAEMON_ENV_PROBED: &[EnvVar<'static>] = &[
    var!("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64"),
    var!("HEALTH_CHECK_LOG_FILE", "/run/health-check"),
];
const STARTUP_PROBE: StartupProbe = StartupProbe {
    json: concat!(
        r#"{"initialDelaySeconds":1,"periodSeconds":5,"timeoutSeconds":1,"successThreshold":1,"#,
        r#""failureThreshold":6,"exec":{"command":["cat","/run/health-check"]}}"#,
    ),
    since: "v1.0.8",
};
const DAEMON_MOUNTS: &[Mount<'static>] = &[
    mount!("nvtcpxo-libraries", "/usr/local/nvidia", read_only),
    mount!("nvtcpxo-sys", "/hostsysfs"),
    mount!("nvtcpxo-proc-sys", "/hostprocsysfs"),
];
const SCRIPT_HEAD: &str = "set -ex\nchmod 755 /fts/entrypoint_rxdm_container.sh\n";
const ENTRYPOINT: &str = "/fts/entrypoint_rxdm_container.sh";
/// The chart's daemon flags, as one line of the script.
const DEFAULT_SCRIPT: &str = concat!(
    "set -ex\n",
    "chmod 755 /fts/entrypoint_rxdm_container.sh\n",
    "/fts/entrypoint_rxdm_container.sh --num_hops=2 --num_nics=8 --uid= --alsologtostderr",
    " --enforce_kernel_ipv6_support=false\n",
);

const DEVICES_ANNOTATION: &str = "devices.gke.io/container.tcpxo-daemon";
/// The chart's network names for eth1 … eth8.
const NETWORKS: [&str; 8] = [
    "gpu-nic0", "gpu-nic1", "gpu-nic2", "gpu-nic3", "gpu-nic4", "gpu-nic5", "gpu-nic6", "gpu-nic7",
];

fn profile() -> Profile<'static> {
    Profile {
        env: ENV.to_vec(),
        mounts: MOUNTS.to_vec(),
        volumes: vec![
            Volume {
                name: "scratch",
                source: Source::Scratch,
            },
            shared_memory(),
            Volume::host_path("nvtcpxo-sys", "/sys", None),
            Volume::host_path("nvtcpxo-proc-sys", "/proc/sys", None),
            Volume::host_path("nvtcpxo-libraries", "/home/kubernetes/bin/nvidia", None),
            Volume::host_path("nvtcpxo-aperture-devices", "/dev/aperture_devices", None),
        ],
        sidecar: Some(Sidecar {
            name: "tcpxo-daemon",
            image: Cow::Borrowed(
                "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.8",
            ),
            command: vec![Cow::Borrowed("/bin/sh"), Cow::Borrowed("-c")],
            script: Some(Cow::Borrowed(DEFAULT_SCRIPT)),
            env: DAEMON_ENV,
            // Kubernetes spelling: the reference's `CAP_NET_ADMIN` is not what Google's manifests use.
            capabilities: &["NET_ADMIN", "NET_BIND_SERVICE"],
            mounts: DAEMON_MOUNTS,
            startup_probe: None,
        }),
        // Under `metadata.annotations`: the reference's patch put them at the top level of the
        // object, where the API server drops them, so GKE never wired the daemon's devices or the
        // GPU NICs.
        annotations: vec![
            (
                DEVICES_ANNOTATION,
                json_string!(daemon_devices!("- path: /dev/dmabuf_import_helper\n")),
            ),
            DEFAULT_INTERFACE,
        ],
        interfaces: Some(Interfaces {
            key: INTERFACES_ANNOTATION,
            first: 1,
            networks: NETWORKS.iter().map(|n| Cow::Borrowed(*n)).collect(),
        }),
        // TCPXO drives all 8 GPUs and NICs of an a3-megagpu-8g node (GoogleCloudPlatform/
        // container-engine-accelerators `gpudirect-tcpxo/`).
        whole_node: Some(WholeNode {
            gpus: 8,
            why: (
                "GPUDirect-TCPXO uses all ",
                " GPUs and NICs of an A3 Mega node",
            ),
        }),
        ..empty()
    }
}

fn script(flags: &[impl AsRef<str>]) -> String {
    let mut script = format!("{SCRIPT_HEAD}{ENTRYPOINT}");
    for flag in flags {
        script.push(' ');
        script.push_str(flag.as_ref());
    }
    script.push('\n');
    script
}

fn set_daemon_flags<'a>(profile: &mut Profile<'a>, flags: Vec<Cow<'a, str>>) {
    if let Some(sidecar) = &mut profile.sidecar {
        sidecar.script = Some(Cow::Owned(script(&flags)));
    }
}

fn set_startup_probe(profile: &mut Profile<'_>, on: bool) {
    if let Some(sidecar) = &mut profile.sidecar {
        sidecar.env = if on { DAEMON_ENV_PROBED } else { DAEMON_ENV };
        sidecar.startup_probe = on.then_some(STARTUP_PROBE);
    }
}

/// A daemon flag is written into a shell script: no blanks, quotes or other shell syntax.
fn is_flag(flag: &str) -> bool {
    !flag.is_empty()
        && flag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_=.,:/@+%".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_what_the_builders_write_for_the_charts_values() {
        let chart_interfaces = concat!(
            r#"[{"interfaceName":"eth0","network":"default"},"#,
            r#"{"interfaceName":"eth1","network":"gpu-nic0"},"#,
            r#"{"interfaceName":"eth2","network":"gpu-nic1"},"#,
            r#"{"interfaceName":"eth3","network":"gpu-nic2"},"#,
            r#"{"interfaceName":"eth4","network":"gpu-nic3"},"#,
            r#"{"interfaceName":"eth5","network":"gpu-nic4"},"#,
            r#"{"interfaceName":"eth6","network":"gpu-nic5"},"#,
            r#"{"interfaceName":"eth7","network":"gpu-nic6"},"#,
            r#"{"interfaceName":"eth8","network":"gpu-nic7"}]"#,
        );
        assert_eq!(profile().interfaces.unwrap().json(None), chart_interfaces);
        let chart_flags = [
            "--num_hops=2",
            "--num_nics=8",
            "--uid=",
            "--alsologtostderr",
            "--enforce_kernel_ipv6_support=false",
        ];
        assert_eq!(script(&chart_flags), DEFAULT_SCRIPT);
        assert_eq!(
            script(&[] as &[&str]),
            "set -ex\nchmod 755 /fts/entrypoint_rxdm_container.sh\n/fts/entrypoint_rxdm_container.sh\n"
        );
    }

    #[test]
    fn the_devices_annotation_lists_one_device_a_line() {
        let devices: String = serde_json::from_str(profile().annotations[0].1).unwrap();
        assert_eq!(devices.lines().count(), 11);
        assert!(devices.lines().all(|l| l.starts_with("- path: /dev/")) && devices.ends_with('\n'));
    }

    #[test]
    fn flags_cannot_carry_shell_syntax() {
        for good in ["--num_hops=2", "--uid=", "--x=a,b:c/d@e+f%"] {
            assert!(is_flag(good), "{good}");
        }
        for bad in ["", "--a b", "--a;reboot", "$(x)", "'q'", "--a\n"] {
            assert!(!is_flag(bad), "{bad:?}");
        }
    }

    #[test]
    fn the_startup_probe_is_googles_and_off_by_default() {
        use crate::settings::profile_of;
        use serde_json::json;
        let off = profile_of(json!({"gcp": {"enabled": true}}))
            .sidecar
            .unwrap();
        assert_eq!(off.startup_probe, None);
        assert_eq!(off.env, DAEMON_ENV);
        let on = profile_of(json!({"gcp": {"enabled": true, "daemonStartupProbe": true}}));
        let daemon: serde_json::Value =
            serde_json::from_str(&on.sidecar.unwrap().container_text(&[])).unwrap();
        // best-practice.md's example, value for value.
        assert_eq!(
            daemon["startupProbe"],
            json!({"initialDelaySeconds": 1, "periodSeconds": 5, "timeoutSeconds": 1,
                   "successThreshold": 1, "failureThreshold": 6,
                   "exec": {"command": ["cat", "/run/health-check"]}})
        );
        assert_eq!(
            daemon["env"],
            json!([{"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"},
                   {"name": "HEALTH_CHECK_LOG_FILE", "value": "/run/health-check"}])
        );
    }
}
