//! What the cluster's DeviceClasses say: the fabric through a DRA driver (EKS's EFA driver, GKE
//! managed DRANET, DRANET elsewhere), GPUs through NVIDIA's or AMD's driver, and NVIDIA's
//! ComputeDomain channel, which with the nodes' clique labels means multi-node NVLink that the
//! policy can wire (behaviour.md §3.8, §3.10, §3.11).

use serde_yaml::{Mapping, Value};

use crate::input::Cluster;
use crate::jobs;
use crate::shape::Shape;
use crate::write::Written;

/// EKS's EFA DRA driver's class (aws-dra.yaml).
pub const EFA_CLASS: &str = "efa.networking.k8s.aws";
/// GKE managed DRANET's class of RDMA NICs (gcp-dranet.yaml).
pub const MRDMA_CLASS: &str = "mrdma.google.com";
/// The class of a ComputeDomain's IMEX channel (NVIDIA's DRA driver).
pub const CHANNEL_CLASS: &str = "compute-domain-default-channel.nvidia.com";
/// The GPU classes the policy reads by default (`gpuDeviceClasses`).
const GPU_CLASSES: [&str; 2] = ["gpu.nvidia.com", "gpu.amd.com"];
/// The fabric classes the policy reads by default (`fabricDeviceClasses`).
const FABRIC_CLASSES: [&str; 2] = [EFA_CLASS, MRDMA_CLASS];
/// Other DRA drivers' classes of NICs: DRANET's (its examples name theirs `dra.net`, `dranet.net`)
/// and the Network Operator's SR-IOV DRA driver's.
const OTHER_FABRIC_CLASSES: [&str; 3] = [
    "dra.net",
    "dranet.net",
    "sriovnetwork.k8snetworkplumbingwg.io",
];

/// The top-level keys the DeviceClasses decide, and their comments.
pub fn top_level(out: &mut Written, settings: &mut Mapping, cluster: &Cluster, shapes: &[Shape]) {
    let gpu: Vec<&str> = GPU_CLASSES
        .into_iter()
        .filter(|c| cluster.has_class(c))
        .collect();
    if !gpu.is_empty() {
        out.header.push(format!(
            "GPUs through DRA: the DeviceClass {} is there; the policy counts its claims' GPUs by default (gpuDeviceClasses).",
            gpu.join(", ")
        ));
    }
    let others: Vec<&str> = cluster
        .device_classes
        .iter()
        .map(String::as_str)
        .filter(|c| OTHER_FABRIC_CLASSES.contains(c) || c.contains("dranet"))
        .collect();
    if !others.is_empty() {
        let classes: Vec<Value> = FABRIC_CLASSES
            .iter()
            .chain(others.iter())
            .map(|c| Value::from(*c))
            .collect();
        settings.insert("fabricDeviceClasses".into(), Value::Sequence(classes));
        out.note(
            &["fabricDeviceClasses"],
            format!(
                "The DeviceClass {} hands out NICs: a pod whose own claim requests it brings its fabric, and the policy adds none. To have the policy add a claim, create a ResourceClaimTemplate of it and set the block's deviceClaim (behaviour.md §3.8).",
                others.join(", ")
            ),
        );
    }
    let clique = shapes.iter().any(|s| s.clique);
    let channel = cluster.has_class(CHANNEL_CLASS);
    if clique && channel {
        let crds = cluster.crds_read.then_some(cluster.crds.as_slice());
        let controllers = jobs::running(crds);
        let labels: Vec<Value> = controllers.iter().map(|c| Value::from(c.label)).collect();
        let mut domain = Mapping::new();
        domain.insert("fromLabel".into(), Value::Sequence(labels));
        settings.insert("computeDomain".into(), Value::Mapping(domain));
        let by: Vec<String> = controllers
            .iter()
            .map(|c| format!("{} {}", c.name, c.label))
            .collect();
        let seen = if cluster.crds_read {
            "the job controllers whose CustomResourceDefinitions were given, and batch Jobs"
        } else {
            "every job controller the tool knows (give kubectl get crd -o json to keep those the cluster runs)"
        };
        for line in [
            format!(
                "The DeviceClass {CHANNEL_CLASS} and the nodes' nvidia.com/gpu.clique labels: multi-node NVLink through NVIDIA's DRA driver. Each job's pods join the ComputeDomain of their namespace named by the first of these pod labels they carry, which the job's author creates (README, \"Multi-node NVLink\")."
            ),
            format!(
                "The labels of {seen}, the outermost first: {}. LeaderWorkerSet's pods (leaderworkerset.sigs.k8s.io/name) are owned by StatefulSets, which the default ownerKinds leave out; or name: <ComputeDomain> for one standing domain per namespace.",
                by.join(", ")
            ),
        ] {
            out.note(&["computeDomain"], line);
        }
    } else if clique {
        out.header.push(format!(
            "The nodes carry nvidia.com/gpu.clique (multi-node NVLink), but {}: no computeDomain block. With NVIDIA's DRA driver installed, add computeDomain: {{fromLabel: [<your job controllers' labels>]}} (behaviour.md §3.11).",
            if cluster.device_classes_read {
                format!("the DeviceClass {CHANNEL_CLASS} is not among the DeviceClasses given")
            } else {
                "no DeviceClasses were given (kubectl get deviceclasses -o json)".to_owned()
            }
        ));
    }
}
