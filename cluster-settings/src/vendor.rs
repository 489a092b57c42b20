//! What the nodes cannot tell, and the vendor file (`examples/settings/vendor/`) to take it from:
//! a table by kind of cluster and device resource, the first row that matches winning.

use crate::fabric::Fabric;

pub struct Source {
    /// The settings block the row is for.
    pub block: &'static str,
    /// Matches the fabric read (its resource, or `None` for no device; `*` any).
    pub resource: &'static str,
    /// A node label that must be present too (`""`: none).
    pub label: &'static str,
    pub file: &'static str,
    /// The values the nodes cannot tell, that the file holds.
    pub untold: &'static str,
}

const DIR: &str = "examples/settings/vendor/";

pub const SOURCES: &[Source] = &[
    Source {
        block: "aws",
        resource: "*",
        label: "",
        file: "aws.yaml",
        untold: "libfabric's env (FI_PROVIDER=efa, FI_EFA_FORK_SAFE=1, FI_EFA_USE_HUGE_PAGE=0), efaLibraryPath: null and cpuRequest: null (the libraries are in AWS's images); with the EFA DRA driver, aws-dra.yaml and the ResourceClaimTemplates of deploy/aws/dra/ to create in every training namespace",
    },
    Source {
        block: "azure",
        resource: "*",
        label: "",
        file: "azure.yaml",
        untold: "NCCL's env (NCCL_IB_DISABLE=0, NCCL_NET_GDR_LEVEL=SYS) and the chart's variables to drop; the ConfigMap nccl-topo with the VM size's NCCL topology file, to create in every training namespace (ncclTopologyConfigMap; null on sizes Azure ships none for)",
    },
    Source {
        block: "gcp",
        resource: "*",
        label: "",
        file: "gcp.yaml (A3 Mega), gcp-tcpx.yaml (A3 High), gcp-rdma.yaml (A3 Ultra, A4, A4X), gcp-dranet.yaml (managed DRANET)",
        untold: "the daemons' images and flags, NCCL's env per fabric; the GKE Network objects if the nodes show none",
    },
    Source {
        block: "oci",
        resource: "*",
        label: "",
        file: "oci.yaml",
        untold: "Oracle's NCCL env per shape (NCCL_IB_HCA=mlx5 on VFs, NCCL_IB_TIMEOUT, NCCL_IB_QPS_PER_CONNECTION on A100) and IPC_LOCK; the NetworkAttachmentDefinition rdma-vf in default if none names the resource",
    },
    Source {
        block: "rdma",
        resource: "rdma/ib",
        label: "node.coreweave.cloud/type",
        file: "coreweave.yaml",
        untold: "NCCL's and UCX's env (NCCL_SOCKET_IFNAME=eth0, NCCL_IB_HCA=ibp, UCX_TLS, UCX_NET_DEVICES)",
    },
    Source {
        block: "rdma",
        resource: "nvidia.com/hostdev",
        label: "",
        file: "network-operator-hostdev.yaml (on Crusoe, crusoe.yaml)",
        untold: "NCCL_IB_HCA pinned to the compute NICs per machine (DGX H100/H200 rows), a topology host directory where the provider ships one (Crusoe)",
    },
    Source {
        block: "rdma",
        resource: "nvidia.com/mlnxnics",
        label: "",
        file: "network-operator-sriov-ib.yaml",
        untold: "NCCL's env, if any",
    },
    Source {
        block: "rdma",
        resource: "nvidia.com/rdma_ib",
        label: "",
        file: "together.yaml",
        untold: "NCCL_IB_HCA and UCX_NET_DEVICES",
    },
    Source {
        block: "rdma",
        resource: "rails",
        label: "",
        file: "network-operator-rails.yaml (Spectrum-X: spectrum-x.yaml)",
        untold: "capabilities beyond IPC_LOCK (Spectrum-X adds NET_RAW) and NCCL's env, if any",
    },
    Source {
        block: "rdma",
        resource: "none",
        label: "",
        file: "nebius.yaml",
        untold: "NCCL's and UCX's env (NCCL_SOCKET_IFNAME, NCCL_IB_HCA=mlx5, UCX_NET_DEVICES, SHARP_COLL_ENABLE_PCI_RELAXED_ORDERING, NCCL_COLLNET_ENABLE)",
    },
    Source {
        block: "rdma",
        resource: "*",
        label: "",
        file: "network-operator-rdma-shared.yaml",
        untold: "NCCL_IB_HCA pinned to the compute NICs per machine (its DGX H100/H200 rows), the network of a RoCE (macvlan) or IPoIB setup if no NetworkAttachmentDefinition was given",
    },
];

/// The source for a cluster of settings block `block` whose main fabric is `fabric`, on nodes
/// that carry `has_label`.
pub fn source(
    block: &str,
    fabric: &Fabric,
    has_label: &dyn Fn(&str) -> bool,
) -> (String, &'static str) {
    let resource = match fabric {
        Fabric::None => "none",
        Fabric::Rails(_) => "rails",
        other => other.resource().unwrap_or("none"),
    };
    let found = SOURCES
        .iter()
        .find(|s| {
            s.block == block
                && (s.resource == "*" || s.resource == resource)
                && (s.label.is_empty() || has_label(s.label))
        })
        .unwrap_or(&SOURCES[SOURCES.len() - 1]);
    (format!("{DIR}{}", found.file), found.untold)
}
