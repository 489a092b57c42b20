//! Properties of the settings read from an EKS cluster of any mix of GPU node groups (the built-in
//! machines' EFA counts, and g5.12xlarge nodes without EFA), each group its own managed node group
//! or Karpenter NodePool: a whole-node worker that selects a pool gets exactly what that pool's
//! nodes offer, by node selector or required node affinity; a worker that names neither machine nor
//! pool gets the fabric and never asks more EFA than a node with EFA it could run on offers.

use multinode_networking_policy::admission::{self, Verdict};
use proptest::prelude::*;
use proptest::sample::subsequence;
use serde_json::{Value, json};

/// A machine: its instance type, GPUs and EFA interfaces (VENDOR-FACTS: EC2's counts, as the
/// policy's built-in rows; g5.12xlarge has no EFA).
const MACHINES: [(&str, u64, u64); 6] = [
    ("p4d.24xlarge", 8, 4),
    ("p5.48xlarge", 8, 32),
    ("p5en.48xlarge", 8, 16),
    ("p6-b200.48xlarge", 8, 8),
    ("p6e-gb200.36xlarge", 4, 4),
    ("g5.12xlarge", 4, 0),
];

/// A node group: the machine, its node count, its pool label.
type Group = ((&'static str, u64, u64), usize, &'static str);

fn node(i: usize, (machine, gpus, efa): (&str, u64, u64), pool: (&str, String)) -> Value {
    let mut allocatable =
        json!({"cpu": "191450m", "pods": "110", "nvidia.com/gpu": gpus.to_string()});
    if efa > 0 {
        allocatable["vpc.amazonaws.com/efa"] = json!(efa.to_string());
    }
    json!({"kind": "Node", "metadata": {"name": format!("ip-10-2-0-{i}.ec2.internal"), "labels": {
            "node.kubernetes.io/instance-type": machine, pool.0: pool.1}},
        "spec": {"providerID": format!("aws:///us-east-2a/i-0{i:016x}")},
        "status": {"allocatable": allocatable}})
}

fn groups() -> impl Strategy<Value = Vec<Group>> {
    subsequence(MACHINES.to_vec(), 1..=MACHINES.len()).prop_flat_map(|machines| {
        let n = machines.len();
        (
            Just(machines),
            proptest::collection::vec(1usize..4, n),
            proptest::collection::vec(
                prop_oneof![
                    Just("eks.amazonaws.com/nodegroup"),
                    Just("karpenter.sh/nodepool")
                ],
                n,
            ),
        )
            .prop_map(|(m, counts, labels)| {
                m.into_iter()
                    .zip(counts)
                    .zip(labels)
                    .map(|((m, c), l)| (m, c, l))
                    .collect()
            })
    })
}

/// The pool of a group: named after its machine, as generated names are.
fn pool_of(machine: &str) -> String {
    format!("ng-{}", machine.replace('.', "-"))
}

fn worker(gpus: u64, placement: Value) -> Value {
    let mut spec = json!({"containers": [{"name": "pytorch", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
        "resources": {"limits": {"nvidia.com/gpu": gpus.to_string()}}}]});
    if let Value::Object(extra) = placement {
        spec.as_object_mut().unwrap().extend(extra);
    }
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "w-0", "namespace": "training",
            "annotations": {"nmp.nvidia.com/enable-multi-node-networking": "true"},
            "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "w",
                "uid": "6f1c2b9e-3a4d-4e5f-8a7b-9c0d1e2f3a4b", "controller": true}]},
        "spec": spec})
}

/// The EFA the policy gives `pod` under `settings`, and its warnings.
fn efa(settings: &Value, pod: &Value) -> (u64, Vec<String>) {
    match admission::evaluate(&fixtures::create_payload(pod, settings)) {
        Verdict::Mutate { pod, warnings, .. } => {
            let pod: Value = serde_json::from_slice(&pod).unwrap();
            let n = pod["spec"]["containers"][0]["resources"]["limits"]["vpc.amazonaws.com/efa"]
                .as_str()
                .map_or(0, |n| n.parse().unwrap());
            (n, warnings)
        }
        other => panic!("not mutated: {other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn each_pool_gets_its_nodes_efa_and_a_pod_naming_none_fits_them_all(groups in groups()) {
        let mut items = Vec::new();
        for (machine, count, label) in &groups {
            for _ in 0..*count {
                items.push(node(items.len(), *machine, (label, pool_of(machine.0))));
            }
        }
        let nodes = json!({"kind": "List", "items": items}).to_string();
        let settings = cluster_settings::settings(&[("nodes.json", &nodes)]).unwrap().json;
        for ((machine, gpus, devices), _, label) in &groups {
            let selector = json!({"nodeSelector": {*label: pool_of(machine)}});
            let affinity = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": label, "operator": "In", "values": [pool_of(machine)]}]}]}}}});
            for placement in [selector, affinity] {
                let (got, warnings) = efa(&settings, &worker(*gpus, placement));
                prop_assert_eq!(got, *devices, "{} {:?}\n{}", machine, warnings, settings);
                prop_assert!(!warnings.iter().any(|w| w.contains("no entry")), "{:?}", warnings);
            }
        }
        let with_efa: Vec<&(&str, u64, u64)> = groups.iter().map(|g| &g.0).filter(|m| m.2 > 0).collect();
        for gpus in [1u64, 2, 4, 8] {
            let (got, _) = efa(&settings, &worker(gpus, json!({})));
            if !with_efa.is_empty() {
                prop_assert!(got > 0, "{} GPUs anywhere get no EFA\n{}", gpus, settings);
            }
            for (machine, node_gpus, devices) in with_efa.iter().filter(|m| m.1 >= gpus) {
                prop_assert!(got <= *devices, "{} GPUs anywhere ask {} EFA, more than {}'s {} ({} GPUs)\n{}",
                    gpus, got, machine, devices, node_gpus, settings);
            }
        }
    }
}
