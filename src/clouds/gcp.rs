//! GCP: GPUDirect-TCPXO on A3 Mega (behaviour.md §3.3). No device resource: the NICs are
//! attached through GKE's multi-network annotations, and a daemon sidecar drives them.

use std::borrow::Cow;

use super::{Cloud, Key, Kind, Param, SHARED_MEMORY_MOUNT, empty, shared_memory};
use crate::k8s_names::{is_dns1123_subdomain, is_image_reference};
use crate::profile::{EnvVar, Mount, Profile, Sidecar, Source, Volume, WholeNode, mount, var};

pub const GCP: Cloud = Cloud {
    name: "gcp",
    keys: &[
        Key {
            name: "networks",
            kind: Kind::Texts {
                len: Some(8),
                valid: is_dns1123_subdomain,
                what: "a GKE network name (lowercase letters, digits, '-' and '.')",
            },
            apply: set_networks,
        },
        Key {
            name: "daemonImage",
            kind: Kind::Text {
                valid: is_image_reference,
                what: "an image reference without blanks",
            },
            apply: set_daemon_image,
        },
        Key {
            name: "daemonFlags",
            kind: Kind::Texts {
                len: None,
                valid: is_flag,
                what: "a flag of letters, digits and -_=.,:/@+% (no shell syntax)",
            },
            apply: set_daemon_flags,
        },
    ],
    exclusive: &[],
    profile,
    plugin: None,
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
const INTERFACES_ANNOTATION: &str = "networking.gke.io/interfaces";
/// The chart's network names, `gpu-nic0` … `gpu-nic7`, for eth1 … eth8.
const DEFAULT_INTERFACES: &str = concat!(
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
            command: &["/bin/sh", "-c"],
            script: Cow::Borrowed(DEFAULT_SCRIPT),
            env: DAEMON_ENV,
            // Kubernetes spelling: the reference's `CAP_NET_ADMIN` is not what Google's manifests use.
            capabilities: &["NET_ADMIN", "NET_BIND_SERVICE"],
            mounts: DAEMON_MOUNTS,
        }),
        // Under `metadata.annotations`: the reference's patch put them at the top level of the
        // object, where the API server drops them, so GKE never wired the daemon's devices or the
        // GPU NICs.
        annotations: vec![
            (
                DEVICES_ANNOTATION,
                Cow::Borrowed(concat!(
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
                    "- path: /dev/dmabuf_import_helper\n",
                )),
            ),
            ("networking.gke.io/default-interface", Cow::Borrowed("eth0")),
            (INTERFACES_ANNOTATION, Cow::Borrowed(DEFAULT_INTERFACES)),
        ],
        // TCPXO drives all 8 GPUs and NICs of an a3-megagpu-8g node (GoogleCloudPlatform/
        // container-engine-accelerators `gpudirect-tcpxo/`).
        whole_node: Some(WholeNode {
            gpus: 8,
            why: "GPUDirect-TCPXO uses all 8 GPUs and NICs of an A3 Mega node",
        }),
        ..empty()
    }
}

/// `networking.gke.io/interfaces` for eth1 … eth8 on `networks`, eth0 on the default network.
fn interfaces(networks: &[impl AsRef<str>]) -> String {
    let mut text = String::from(r#"[{"interfaceName":"eth0","network":"default"}"#);
    for (i, network) in networks.iter().enumerate() {
        // Network names are DNS subdomains: nothing in them needs escaping.
        text.push_str(&format!(
            r#",{{"interfaceName":"eth{}","network":"{}"}}"#,
            i + 1,
            network.as_ref()
        ));
    }
    text.push(']');
    text
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

fn set_networks<'a>(profile: &mut Profile<'a>, param: Param<'a>) {
    let Param::Texts(networks) = param else {
        return;
    };
    for (key, value) in &mut profile.annotations {
        if *key == INTERFACES_ANNOTATION {
            *value = Cow::Owned(interfaces(&networks));
        }
    }
}

fn set_daemon_image<'a>(profile: &mut Profile<'a>, param: Param<'a>) {
    if let (Some(sidecar), Param::Text(image)) = (&mut profile.sidecar, param) {
        sidecar.image = image;
    }
}

fn set_daemon_flags<'a>(profile: &mut Profile<'a>, param: Param<'a>) {
    if let (Some(sidecar), Param::Texts(flags)) = (&mut profile.sidecar, param) {
        sidecar.script = Cow::Owned(script(&flags));
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
        let chart_networks: Vec<String> = (0..8).map(|i| format!("gpu-nic{i}")).collect();
        assert_eq!(interfaces(&chart_networks), DEFAULT_INTERFACES);
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
    fn the_interfaces_annotation_is_the_json_gke_reads() {
        let parsed: serde_json::Value = serde_json::from_str(DEFAULT_INTERFACES).unwrap();
        let list = parsed.as_array().unwrap();
        assert_eq!(list.len(), 9);
        assert_eq!(
            list[8],
            serde_json::json!({"interfaceName": "eth8", "network": "gpu-nic7"})
        );
        let devices = &profile().annotations[0].1;
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
}
