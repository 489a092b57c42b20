//! The machines a pod names: instance types of each cloud, GKE accelerators, and where the
//! pod may run (node selector or node affinity).

use proptest::prelude::*;
use proptest::sample::select;
use proptest::sample::subsequence;
use serde_json::Value;
use serde_json::json;

/// Instance types of each cloud: built-in rows (the chart era's and the later machines', among them 4-GPU,
/// AMD and DRA-only machines) and types no row knows. A pod mostly names its settings' cloud's
/// types, sometimes any cloud's (unknown to its own).
pub(crate) const AWS_TYPES: &[&str] = &[
    "p4d.24xlarge",
    "p5.48xlarge",
    "p5en.48xlarge",
    "p6-b300.48xlarge",
    "p6e-gb200.36xlarge",
    "p5.4xlarge",
    "ml.p5.48xlarge",
    "g5.48xlarge",
    "custom.gpu-8",
];
pub(crate) const AZURE_TYPES: &[&str] = &[
    "Standard_ND96isr_H100_v5",
    "Standard_ND96isr_H200_v5",
    "Standard_ND128isr_NDR_GB200_v6",
    "Standard_ND96isr_MI300X_v5",
    "Standard_NC80adis_H100_v5",
    "custom.gpu-8",
];
pub(crate) const GCP_TYPES: &[&str] = &[
    "a3-highgpu-8g",
    "a3-megagpu-8g",
    "a3-ultragpu-8g",
    "a4-highgpu-8g",
    "a4x-highgpu-4g",
    "a4x-maxgpu-4g-metal",
    "a3-highgpu-4g",
    "g2-standard-48",
    "custom.gpu-8",
];
pub(crate) const OCI_TYPES: &[&str] = &[
    "BM.GPU.H100.8",
    "BM.GPU.H200.8",
    "BM.GPU.MI300X.8",
    "BM.GPU.MI355X-v1.8",
    "BM.GPU.GB200.4",
    "BM.GPU.A10.4",
    "custom.gpu-8",
];
/// Machines of clusters beyond the four clouds (the `rdma` block, which has no built-in rows):
/// GPU Feature Discovery's `nvidia.com/gpu.machine` values, a CoreWeave node type, a Crusoe
/// instance type.
pub(crate) const RDMA_TYPES: &[&str] = &[
    "DGXH100",
    "DGXH200",
    "gd-8xh100ib-i128",
    "h100-80gb-sxm-ib.8x",
    "custom.gpu-8",
];
/// The labels by which an `rdma` pod names its machine besides the instance type.
pub(crate) const RDMA_MACHINE_LABELS: &[&str] =
    &["nvidia.com/gpu.machine", "node.coreweave.cloud/type"];
/// The types above that no built-in row has (a settings row for them needs `gpusPerNode`).
pub(crate) const UNKNOWN_TYPES: &[&str] = &[
    "DGXH100",
    "DGXH200",
    "gd-8xh100ib-i128",
    "h100-80gb-sxm-ib.8x",
    "g5.48xlarge",
    "custom.gpu-8",
    "Standard_NC80adis_H100_v5",
    "a3-highgpu-4g",
    "g2-standard-48",
    "BM.GPU.A10.4",
];

pub(crate) fn types_of(cloud: &str) -> &'static [&'static str] {
    match cloud {
        "aws" => AWS_TYPES,
        "azure" => AZURE_TYPES,
        "gcp" => GCP_TYPES,
        "rdma" => RDMA_TYPES,
        _ => OCI_TYPES,
    }
}

pub(crate) fn all_types() -> Vec<&'static str> {
    let mut all: Vec<&str> = [AWS_TYPES, AZURE_TYPES, GCP_TYPES, OCI_TYPES, RDMA_TYPES].concat();
    all.sort_unstable();
    all.dedup();
    all
}

/// `cloud.google.com/gke-accelerator` values: each of GKE's GPU models with a GPUDirect machine
/// (one names only a fabric, `nvidia-h100-80gb`), and models without one.
pub(crate) const ACCELERATORS: &[&str] = &[
    "nvidia-h100-80gb",
    "nvidia-h100-mega-80gb",
    "nvidia-h200-141gb",
    "nvidia-b200",
    "nvidia-gb200",
    "nvidia-gb300",
    "nvidia-l4",
    "nvidia-tesla-a100",
];
pub(crate) const ACCELERATOR_LABEL: &str = "cloud.google.com/gke-accelerator";
/// Node pool labels (behaviour.md §3.5): two built-in ones and one only the settings name.
pub(crate) const POOL_LABELS: &[&str] = &[
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "example.com/pool",
];
/// Pool names: those `pools_setting` maps, and one it never does.
pub(crate) const POOL_NAMES: &[&str] = &["train", "mixed", "inference", "gone"];
pub(crate) const INSTANCE_LABELS: &[&str] = &[
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
    ACCELERATOR_LABEL,
    "topology.kubernetes.io/zone",
];

/// Values for a node label: GPU models for GKE's accelerator label, else instance types, mostly
/// the cloud's own.
pub(crate) fn label_values(cloud: &'static str, label: &str) -> BoxedStrategy<Vec<&'static str>> {
    if label == ACCELERATOR_LABEL {
        return subsequence(ACCELERATORS, 0..3).boxed();
    }
    if POOL_LABELS.contains(&label) {
        return subsequence(POOL_NAMES, 0..3).boxed();
    }
    prop_oneof![
        3 => subsequence(types_of(cloud), 0..3),
        1 => subsequence(all_types(), 0..3),
    ]
    .boxed()
}

/// Where the pod may run (behaviour.md §3.5): a node selector, a required node affinity of one or
/// more terms, or something of the wrong shape; as `(field, value)` of the spec. Machines are
/// named by instance type, by GKE accelerator, or by both.
pub(crate) fn placement_part(cloud: &'static str) -> BoxedStrategy<Option<(&'static str, Value)>> {
    // GKE pods name their GPU model more often than their machine type; `rdma` pods name it by
    // the labels its rows may be keyed by too.
    let labels = match cloud {
        "gcp" => [INSTANCE_LABELS, &[ACCELERATOR_LABEL], POOL_LABELS].concat(),
        "rdma" => [INSTANCE_LABELS, RDMA_MACHINE_LABELS, POOL_LABELS].concat(),
        _ => [INSTANCE_LABELS, POOL_LABELS].concat(),
    };
    let expression = (select(labels), select(&["In", "In", "NotIn", "Exists"][..]))
        .prop_flat_map(move |(key, operator)| (Just(key), Just(operator), label_values(cloud, key)))
        .prop_map(
            |(key, operator, values)| json!({"key": key, "operator": operator, "values": values}),
        );
    let term = proptest::collection::vec(expression, 0..3)
        .prop_map(|expressions| json!({"matchExpressions": expressions}));
    let one = |cloud: &'static str, label: &'static str| {
        label_values(cloud, label).prop_map(|values| values.first().copied())
    };
    let pool = (select(POOL_LABELS), select(POOL_NAMES));
    // Pods pick their nodes by pool as often as by instance type.
    let selector_labels = match cloud {
        "rdma" => [&INSTANCE_LABELS[..2], RDMA_MACHINE_LABELS, POOL_LABELS].concat(),
        _ => [&INSTANCE_LABELS[..2], POOL_LABELS].concat(),
    };
    let selector = (
        select(selector_labels),
        one(cloud, INSTANCE_LABELS[0]),
        proptest::option::weighted(0.3, pool),
        proptest::option::weighted(
            if cloud == "gcp" { 0.5 } else { 0.1 },
            one(cloud, ACCELERATOR_LABEL),
        ),
    )
        .prop_map(|(key, instance, pool, accelerator)| {
            let mut selector = json!({"kubernetes.io/os": "linux"});
            if let Some(t) = instance {
                let value = match POOL_LABELS.contains(&key) {
                    true => POOL_NAMES[t.len() % POOL_NAMES.len()],
                    false => t,
                };
                selector[key] = value.into();
            }
            if let Some((label, name)) = pool {
                selector[label] = name.into();
            }
            if let Some(Some(a)) = accelerator {
                selector[ACCELERATOR_LABEL] = a.into();
            }
            Some(("nodeSelector", selector))
        });
    // Several GPU models in one expression: one machine, or machines of different fabrics.
    let models = subsequence(&ACCELERATORS[..6], 2..4).prop_map(|values| Some((
        "affinity",
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": ACCELERATOR_LABEL, "operator": "In", "values": values}]}
        ]}}}),
    )));
    prop_oneof![
        3 => Just(None),
        3 => selector,
        if cloud == "gcp" { 1 } else { 0 } => models,
        3 => proptest::collection::vec(term, 1..3).prop_map(|terms| Some((
            "affinity",
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}),
        ))),
        1 => select(vec![
            ("nodeSelector", json!("p5.48xlarge")),
            ("nodeSelector", json!({"node.kubernetes.io/instance-type": 5})),
            ("nodeSelector", json!({ACCELERATOR_LABEL: ["nvidia-h200-141gb"]})),
            ("affinity", json!({"nodeAffinity": [1]})),
            ("affinity", json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": "p5.48xlarge"}]}]}}})),
        ]).prop_map(Some),
    ]
    .boxed()
}
