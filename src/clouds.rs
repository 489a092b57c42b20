//! The four clouds' injections, as tables. Names, values and orders are SPEC section 3's, read
//! from the NeMo Platform chart's Kyverno policies; `Profile::for_cloud` adds the operator's
//! parameters.

use crate::profile::{
    Device, EnvVar, Mount, Network, Profile, Sidecar, Source, Volume, mount, var,
};
use crate::settings::Cloud;

const SHARED_MEMORY_MOUNT: Mount = mount!("nv-shared-memory", "/dev/shm");
const SHARED_MEMORY: &str = SHARED_MEMORY_MOUNT.volume;

fn shared_memory() -> Volume {
    Volume {
        name: SHARED_MEMORY,
        source: Source::Memory,
    }
}

fn host_path(name: &'static str, path: &'static str) -> Volume {
    Volume {
        name,
        source: Source::HostPath { path, kind: None },
    }
}

// AWS: Elastic Fabric Adapter.
const AWS_EFA_RESOURCE: &str = "vpc.amazonaws.com/efa";
const AWS_ENV: &[&[EnvVar]] = &[&[var!("FI_EFA_USE_HUGE_PAGE", "0")]];
const AWS_MOUNTS: &[Mount] = &[
    mount!("amazon-efa", "/opt/amazon-efa-ofi", read_only),
    SHARED_MEMORY_MOUNT,
];

// Azure and OCI share the InfiniBand base of NCCL, Open MPI and UCX settings; Azure adds its
// topology file in the middle, OCI its InfiniBand tuning at the end.
const RDMA_BASE_HEAD: &[EnvVar] = &[
    var!("CUDA_DEVICE_ORDER", "PCI_BUS_ID"),
    var!("NCCL_IB_PCI_RELAXED_ORDERING", "1"),
    var!("NCCL_SOCKET_IFNAME", "eth0"),
];
const RDMA_BASE_TAIL: &[EnvVar] = &[
    var!("OMPI_MCA_coll_hcoll_enable", "0"),
    var!("OMPI_MCA_orte_keep_fqdn_hostnames", "t"),
    var!("UCX_IB_PCI_RELAXED_ORDERING", "on"),
    var!("UCX_MEM_EVENTS", "n"),
    var!("UCX_NET_DEVICES", "eth0"),
    var!("UCX_TLS", "tcp"),
    var!("KUBE_NODE_TYPE", "kube-gpu-node"),
];

// Azure: InfiniBand through the RDMA shared device plugin.
const AZURE_ENV: &[&[EnvVar]] = &[
    RDMA_BASE_HEAD,
    &[var!("NCCL_TOPO_FILE", "/etc/nccl/nccl-topo.xml")],
    RDMA_BASE_TAIL,
];
const AZURE_MOUNTS: &[Mount] = &[
    SHARED_MEMORY_MOUNT,
    mount!("nccl-topo", "/etc/nccl", read_only),
];
// RDMA needs to pin (lock) registered memory.
const AZURE_CAPABILITIES: &[&str] = &["IPC_LOCK"];

// GCP: GPUDirect-TCPXO on A3 Mega.
const GCP_ENV: &[&[EnvVar]] = &[&[
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
]];
const GCP_MOUNTS: &[Mount] = &[
    mount!("scratch", "/scratch"),
    SHARED_MEMORY_MOUNT,
    mount!("nvtcpxo-libraries", "/usr/local/nvidia", read_only),
    mount!("nvtcpxo-aperture-devices", "/dev/aperture_devices"),
];
const TCPXO_DAEMON: Sidecar = Sidecar {
    name: "tcpxo-daemon",
    image: "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.8",
    command: &["/bin/sh", "-c"],
    args: &[concat!(
        "set -ex\n",
        "chmod 755 /fts/entrypoint_rxdm_container.sh\n",
        "/fts/entrypoint_rxdm_container.sh --num_hops=2 --num_nics=8 --uid= --alsologtostderr",
        " --enforce_kernel_ipv6_support=false\n",
    )],
    env: &[var!("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64")],
    // Kubernetes spelling: the reference's `CAP_NET_ADMIN` is not what Google's manifests use.
    capabilities: &["NET_ADMIN", "NET_BIND_SERVICE"],
    mounts: &[
        mount!("nvtcpxo-libraries", "/usr/local/nvidia", read_only),
        mount!("nvtcpxo-sys", "/hostsysfs"),
        mount!("nvtcpxo-proc-sys", "/hostprocsysfs"),
    ],
};
// Under `metadata.annotations`: the reference's patch put them at the top level of the object,
// where the API server drops them, so GKE never wired the daemon's devices or the GPU NICs.
const GCP_ANNOTATIONS: &[(&str, &str)] = &[
    (
        "devices.gke.io/container.tcpxo-daemon",
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
            "- path: /dev/dmabuf_import_helper\n",
        ),
    ),
    ("networking.gke.io/default-interface", "eth0"),
    (
        "networking.gke.io/interfaces",
        concat!(
            r#"[{"interfaceName":"eth0","network":"default"},"#,
            r#"{"interfaceName":"eth1","network":"gpu-nic0"},"#,
            r#"{"interfaceName":"eth2","network":"gpu-nic1"},"#,
            r#"{"interfaceName":"eth3","network":"gpu-nic2"},"#,
            r#"{"interfaceName":"eth4","network":"gpu-nic3"},"#,
            r#"{"interfaceName":"eth5","network":"gpu-nic4"},"#,
            r#"{"interfaceName":"eth6","network":"gpu-nic5"},"#,
            r#"{"interfaceName":"eth7","network":"gpu-nic6"},"#,
            r#"{"interfaceName":"eth8","network":"gpu-nic7"}]"#,
        ),
    ),
];

// OCI: SR-IOV virtual functions of the Mellanox NICs, attached through Multus.
const OCI_NICS_RESOURCE: &str = "nvidia.com/mlnxnics";
const OCI_ENV: &[&[EnvVar]] = &[
    RDMA_BASE_HEAD,
    RDMA_BASE_TAIL,
    &[
        var!("NCCL_IB_TC", "41"),
        var!("NCCL_IB_SL", "0"),
        var!("NCCL_IB_QPS_PER_CONNECTION", "4"),
        var!("NCCL_IB_GID_INDEX", "3"),
        var!("NCCL_IB_SPLIT_DATA_ON_QPS", "0"),
    ],
];
const OCI_MOUNTS: &[Mount] = &[SHARED_MEMORY_MOUNT];
const OCI_NETWORK: Network = Network {
    namespace: "network-operator",
    name: "sriov-net",
};

impl Profile {
    /// The injection for the configured cloud.
    pub fn for_cloud(cloud: &Cloud) -> Profile {
        let none = Profile {
            device: None,
            default_cpu_request: None,
            env: &[],
            mounts: &[],
            volumes: Vec::new(),
            capabilities: &[],
            harden: false,
            sidecar: None,
            annotations: &[],
            network: None,
        };
        match cloud {
            Cloud::Aws { efa_per_gpu } => Profile {
                device: Some(Device {
                    resource: AWS_EFA_RESOURCE.into(),
                    per_gpu: *efa_per_gpu,
                }),
                default_cpu_request: Some("100m"),
                env: AWS_ENV,
                mounts: AWS_MOUNTS,
                volumes: vec![
                    Volume {
                        name: "amazon-efa",
                        source: Source::HostPath {
                            path: "/opt/amazon-efa-ofi",
                            kind: Some("Directory"),
                        },
                    },
                    shared_memory(),
                ],
                ..none
            },
            Cloud::Azure {
                rdma_per_gpu,
                rdma_device_name,
                topology_config_map,
            } => Profile {
                device: Some(Device {
                    resource: format!("rdma/{rdma_device_name}"),
                    per_gpu: *rdma_per_gpu,
                }),
                env: AZURE_ENV,
                mounts: AZURE_MOUNTS,
                volumes: vec![
                    shared_memory(),
                    Volume {
                        name: "nccl-topo",
                        source: Source::ConfigMap {
                            name: topology_config_map.clone(),
                        },
                    },
                ],
                capabilities: AZURE_CAPABILITIES,
                harden: true,
                ..none
            },
            Cloud::Gcp => Profile {
                env: GCP_ENV,
                mounts: GCP_MOUNTS,
                volumes: vec![
                    Volume {
                        name: "scratch",
                        source: Source::Scratch,
                    },
                    shared_memory(),
                    host_path("nvtcpxo-sys", "/sys"),
                    host_path("nvtcpxo-proc-sys", "/proc/sys"),
                    host_path("nvtcpxo-libraries", "/home/kubernetes/bin/nvidia"),
                    host_path("nvtcpxo-aperture-devices", "/dev/aperture_devices"),
                ],
                sidecar: Some(&TCPXO_DAEMON),
                annotations: GCP_ANNOTATIONS,
                ..none
            },
            Cloud::Oci { rdma_per_gpu } => Profile {
                device: Some(Device {
                    resource: OCI_NICS_RESOURCE.into(),
                    per_gpu: *rdma_per_gpu,
                }),
                env: OCI_ENV,
                mounts: OCI_MOUNTS,
                volumes: vec![shared_memory()],
                network: Some(OCI_NETWORK),
                ..none
            },
        }
    }
}

#[cfg(test)]
mod tests {
    //! The tables themselves: names unique, every mount backed by a declared volume, every string
    //! one the API server accepts.
    use super::*;
    use crate::k8s_names::{is_dns1123_subdomain, is_qualified_name};
    use std::collections::HashSet;

    fn all() -> Vec<Profile> {
        [
            Cloud::Aws { efa_per_gpu: 1 },
            Cloud::Azure {
                rdma_per_gpu: 1,
                rdma_device_name: "hca_shared_devices_a".into(),
                topology_config_map: "nccl-topo".into(),
            },
            Cloud::Gcp,
            Cloud::Oci { rdma_per_gpu: 8 },
        ]
        .iter()
        .map(Profile::for_cloud)
        .collect()
    }

    fn unique<'a>(what: &str, items: impl IntoIterator<Item = &'a str>) {
        let mut seen = HashSet::new();
        for item in items {
            assert!(seen.insert(item), "{what} {item} appears twice");
        }
    }

    #[test]
    fn the_json_written_at_compile_time_is_what_serde_writes() {
        for p in all() {
            let sidecar = p.sidecar.iter().flat_map(|s| s.env);
            for var in p.env_vars().chain(sidecar) {
                assert_eq!(var.json, serde_json::to_string(var).unwrap());
            }
            let sidecar = p.sidecar.iter().flat_map(|s| s.mounts);
            for mount in p.mounts.iter().chain(sidecar) {
                assert_eq!(mount.json, serde_json::to_string(mount).unwrap());
            }
        }
    }

    #[test]
    fn names_and_paths_are_unique() {
        for p in all() {
            unique("env", p.env_vars().map(|e| e.name));
            unique("mount name", p.mounts.iter().map(|m| m.volume));
            unique("mount path", p.mounts.iter().map(|m| m.path));
            unique("volume", p.volumes.iter().map(|v| v.name));
            unique("annotation", p.annotations.iter().map(|a| a.0));
            if let Some(sidecar) = p.sidecar {
                unique("sidecar mount path", sidecar.mounts.iter().map(|m| m.path));
            }
        }
    }

    #[test]
    fn every_mount_names_a_declared_volume_and_every_volume_is_mounted() {
        for p in all() {
            let sidecar_mounts = p.sidecar.map(|s| s.mounts).unwrap_or(&[]);
            let mounted: HashSet<_> = p
                .mounts
                .iter()
                .chain(sidecar_mounts)
                .map(|m| m.volume)
                .collect();
            let declared: HashSet<_> = p.volumes.iter().map(|v| v.name).collect();
            assert_eq!(mounted, declared);
        }
    }

    #[test]
    fn every_string_is_valid_kubernetes() {
        for p in all() {
            for e in p.env_vars() {
                let c_identifier = e
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_');
                assert!(
                    c_identifier && !e.name.starts_with(|c: char| c.is_ascii_digit()),
                    "{}",
                    e.name
                );
            }
            for v in &p.volumes {
                assert!(
                    is_dns1123_subdomain(v.name) && v.name.len() <= 63,
                    "{}",
                    v.name
                );
            }
            for m in p.mounts {
                assert!(m.path.starts_with('/'), "{}", m.path);
            }
            for (key, _) in p.annotations {
                assert!(is_qualified_name(key), "{key}");
            }
            if let Some(device) = &p.device {
                assert!(is_qualified_name(&device.resource) && device.resource.contains('/'));
            }
            for cap in p
                .capabilities
                .iter()
                .chain(p.sidecar.map(|s| s.capabilities).unwrap_or(&[]))
            {
                assert!(
                    !cap.starts_with("CAP_")
                        && cap.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'),
                    "{cap}"
                );
            }
        }
    }

    #[test]
    fn gcp_interfaces_annotation_is_the_json_gke_reads() {
        let (_, interfaces) = GCP_ANNOTATIONS[2];
        let parsed: serde_json::Value = serde_json::from_str(interfaces).unwrap();
        let list = parsed.as_array().unwrap();
        assert_eq!(list.len(), 9);
        assert_eq!(
            list[0],
            serde_json::json!({"interfaceName": "eth0", "network": "default"})
        );
        assert_eq!(
            list[8],
            serde_json::json!({"interfaceName": "eth8", "network": "gpu-nic7"})
        );
        let (_, devices) = GCP_ANNOTATIONS[0];
        assert_eq!(devices.lines().count(), 11);
        assert!(devices.lines().all(|l| l.starts_with("- path: /dev/")) && devices.ends_with('\n'));
    }
}
