//! Each kind of cluster, from its nodes as the vendor documents them (tests/nodes/README.md names
//! the sources): the settings written load in the policy as they are, and a whole-node worker of a
//! training job on that node then gets the fabric its operator documents, run through the policy
//! natively as the policy server would run it.

use cluster_settings::Settings;
use multinode_networking_policy::admission::{self, Verdict};
use serde_json::{Value, json};

const NODES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/nodes/");

/// The settings for the cluster whose objects the fixtures `files` hold, checked to load.
fn settings_of(files: &[&str]) -> Settings {
    let texts: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            let path = format!("{NODES}{f}");
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            ((*f).to_owned(), text)
        })
        .collect();
    let inputs: Vec<(&str, &str)> = texts
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let settings =
        cluster_settings::settings(&inputs).unwrap_or_else(|e| panic!("{files:?}: {e:#}"));
    let answer = admission::validate_settings(settings.json.to_string().as_bytes());
    let answer: Value = serde_json::from_slice(&answer).expect("the policy answers JSON");
    assert_eq!(answer["valid"], true, "{answer}\n{}", settings.yaml);
    // The YAML printed is the same settings as the value checked.
    let reread: Value = serde_yaml::from_str(&settings.yaml).expect("the output is YAML");
    assert_eq!(reread, settings.json);
    settings
}

/// The refusal for the fixtures `files`.
fn refusal(files: &[&str]) -> String {
    let texts: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            (
                (*f).to_owned(),
                std::fs::read_to_string(format!("{NODES}{f}")).unwrap(),
            )
        })
        .collect();
    let inputs: Vec<(&str, &str)> = texts
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    match cluster_settings::settings(&inputs) {
        Ok(s) => panic!("{files:?} gave settings:\n{}", s.yaml),
        Err(e) => format!("{e:#}"),
    }
}

/// A worker of a Kubeflow PyTorchJob that takes a whole node: opted in, on the shape the
/// `selector` label names, with the node's `gpus` of `gpu`.
fn worker(selector: (&str, &str), gpu: &str, gpus: u64) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "train-worker-0",
            "namespace": "training",
            "labels": {"training.kubeflow.org/job-name": "train", "jobset.sigs.k8s.io/jobset-name": "train"},
            "annotations": {"nmp.nvidia.com/enable-multi-node-networking": "true"},
            "ownerReferences": [{
                "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "train",
                "uid": "6f1c2b9e-3a4d-4e5f-8a7b-9c0d1e2f3a4b", "controller": true, "blockOwnerDeletion": true
            }]
        },
        "spec": {
            "nodeSelector": {selector.0: selector.1},
            "containers": [{
                "name": "pytorch",
                "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                "resources": {"limits": {gpu: gpus.to_string()}}
            }]
        }
    })
}

const INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";

/// The pod the policy makes of `pod` with `settings`.
fn injected(settings: &Settings, pod: &Value) -> (Value, Vec<String>) {
    let payload = fixtures::create_payload(pod, &settings.json);
    match admission::evaluate(&payload) {
        Verdict::Mutate { pod, warnings, .. } => {
            (serde_json::from_slice(&pod).expect("a pod"), warnings)
        }
        other => panic!("not mutated: {other:?}\n{}", settings.yaml),
    }
}

/// The count of `resource` the pod's first container has, in its limits (else requests).
fn count(pod: &Value, resource: &str) -> Option<String> {
    let resources = &pod["spec"]["containers"][0]["resources"];
    resources["limits"][resource]
        .as_str()
        .or(resources["requests"][resource].as_str())
        .map(str::to_owned)
}

fn annotation<'a>(pod: &'a Value, key: &str) -> &'a str {
    pod["metadata"]["annotations"][key].as_str().unwrap_or("")
}

fn capabilities(pod: &Value) -> Vec<String> {
    pod["spec"]["containers"][0]["securityContext"]["capabilities"]["add"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The GKE networks the pod's interfaces annotation lists, in order.
fn gke_networks(pod: &Value) -> Vec<String> {
    let text = annotation(pod, "networking.gke.io/interfaces");
    let interfaces: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    interfaces
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|i| i["network"].as_str().map(str::to_owned))
        .collect()
}

/// The Multus networks the pod lists, in order.
fn multus(pod: &Value) -> Vec<String> {
    annotation(pod, "k8s.v1.cni.cncf.io/networks")
        .split(',')
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect()
}

// EKS p5.48xlarge: 32 EFA interfaces for 8 H100s (EC2's P5 docs; aws-samples/awsome-distributed-training
// nccl-tests.yaml requests vpc.amazonaws.com/efa: 32 on it).
#[test]
fn eks_p5_workers_get_32_efa() {
    let s = settings_of(&["eks-p5.json"]);
    assert_eq!(s.json["aws"]["efaDevicesPerGPU"], 4);
    // The built-in row says what the nodes show: no row of its own.
    assert!(s.json["aws"].get("instanceTypes").is_none(), "{}", s.yaml);
    assert!(s.json.get("computeDomain").is_none());
    let (pod, _) = injected(
        &s,
        &worker((INSTANCE_TYPE, "p5.48xlarge"), "nvidia.com/gpu", 8),
    );
    assert_eq!(count(&pod, "vpc.amazonaws.com/efa").as_deref(), Some("32"));
    assert!(
        s.yaml.contains("examples/settings/vendor/aws.yaml"),
        "{}",
        s.yaml
    );
}

// EKS p6e-gb200.36xlarge: 4 GPUs and 4 EFA (awsome-distributed-training nccl-tests-gb200.yaml),
// multi-node NVLink through NVIDIA's DRA driver (AWS's ml-eks-nvidia-ultraserver guide).
#[test]
fn eks_gb200_with_the_channel_class_gets_a_compute_domain() {
    let s = settings_of(&["eks-p6e-gb200.json", "eks-deviceclasses.json"]);
    // No CRDs given: every job controller's label, the outermost first, batch's last.
    assert_eq!(
        s.json["computeDomain"]["fromLabel"][1],
        "jobset.sigs.k8s.io/jobset-name"
    );
    // The built-in row marks the machine NVLink and counts its EFA: no row.
    assert!(s.json["aws"].get("instanceTypes").is_none(), "{}", s.yaml);
    // LeaderWorkerSet is said truthfully: its pods are the StatefulSets'.
    let comments: Vec<&str> = s
        .yaml
        .lines()
        .map(|l| l.trim_start().trim_start_matches('#').trim())
        .collect();
    let comments = comments.join(" ");
    assert!(
        comments.contains("(leaderworkerset.sigs.k8s.io/name) are owned by StatefulSets"),
        "{}",
        s.yaml
    );
    let (pod, warnings) = injected(
        &s,
        &worker((INSTANCE_TYPE, "p6e-gb200.36xlarge"), "nvidia.com/gpu", 4),
    );
    assert_eq!(count(&pod, "vpc.amazonaws.com/efa").as_deref(), Some("4"));
    // No cluster to read the domain from here: the policy says so, which it does only with the
    // block.
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("ComputeDomain training/train")),
        "{warnings:?}"
    );
}

// AKS Standard_ND96isr_H100_v5 with the SR-IOV device plugin: rdma/ib, one per InfiniBand NIC, 8
// (Azure/aks-rdma-infiniband, network operator configuration).
#[test]
fn aks_nd_h100_v5_workers_get_8_rdma_ib() {
    let s = settings_of(&["aks-nd-h100-v5.json"]);
    assert_eq!(s.json["azure"]["rdmaDeviceName"], "ib");
    let (pod, _) = injected(
        &s,
        &worker(
            (INSTANCE_TYPE, "Standard_ND96isr_H100_v5"),
            "nvidia.com/gpu",
            8,
        ),
    );
    assert_eq!(count(&pod, "rdma/ib").as_deref(), Some("8"));
    assert!(capabilities(&pod).contains(&"IPC_LOCK".to_owned()));
    assert!(s.yaml.contains("nccl-topo"), "{}", s.yaml);
}

// AKS with the RDMA shared device plugin: rdma/shared_ib, 1 per pod whatever its GPUs (the count is
// pod slots, 63 per node).
#[test]
fn aks_shared_ib_workers_get_one_slot() {
    let s = settings_of(&["aks-nd-h100-v5-shared.json"]);
    assert_eq!(s.json["azure"]["rdmaDevicesPerContainer"], 1);
    let (pod, _) = injected(
        &s,
        &worker(
            (INSTANCE_TYPE, "Standard_ND96isr_H100_v5"),
            "nvidia.com/gpu",
            8,
        ),
    );
    assert_eq!(count(&pod, "rdma/shared_ib").as_deref(), Some("1"));
    assert_eq!(count(&pod, "rdma/ib"), None);
}

// GKE A3 Mega: GPUDirect-TCPXO over 8 GPU NICs, eth1...eth8 on the cluster's networks (Google's
// nccl-test-latest.yaml names them vpc1...vpc8).
#[test]
fn gke_a3_mega_workers_get_tcpxo_on_the_nodes_networks() {
    let s = settings_of(&["gke-a3-mega.json"]);
    assert_eq!(s.json["gcp"]["fabric"], "tcpxo");
    let (pod, _) = injected(
        &s,
        &worker((INSTANCE_TYPE, "a3-megagpu-8g"), "nvidia.com/gpu", 8),
    );
    let expected: Vec<String> = std::iter::once("default".to_owned())
        .chain((1..=8).map(|i| format!("vpc{i}")))
        .collect();
    assert_eq!(gke_networks(&pod), expected);
    // TCPXO's receive daemon runs beside the trainer, a native sidecar.
    let sidecars = pod["spec"]["initContainers"].as_array().unwrap();
    assert!(
        sidecars.iter().any(|c| c["name"] == "tcpxo-daemon"),
        "{pod:#}"
    );
}

// GKE A3 Ultra: GPUDirect-RDMA, eth2...eth9 on rdma-0...rdma-7 (gpudirect-rdma/nccl-test.yaml); the
// gVNIC network gvnic-1 is not a GPU NIC's.
#[test]
fn gke_a3_ultra_workers_get_rdma_networks() {
    let s = settings_of(&["gke-a3-ultra.json"]);
    assert_eq!(s.json["gcp"]["fabric"], "rdma");
    let (pod, _) = injected(
        &s,
        &worker((INSTANCE_TYPE, "a3-ultragpu-8g"), "nvidia.com/gpu", 8),
    );
    let networks = gke_networks(&pod);
    let expected: Vec<String> = (0..8).map(|i| format!("rdma-{i}")).collect();
    assert!(networks.ends_with(&expected), "{networks:?}");
    assert!(!networks.contains(&"gvnic-1".to_owned()), "{networks:?}");
}

// GKE A4X (GB200, nvidia-gb200): 4 GPUs, 4 RDMA NICs on rdma-0...rdma-3 (nccl-test-imex-a4x.yaml),
// multi-node NVLink (the ComputeDomain of the A4X guide).
#[test]
fn gke_a4x_workers_get_four_rdma_networks_and_a_compute_domain() {
    let s = settings_of(&["gke-a4x.json", "gke-deviceclasses.json"]);
    assert_eq!(
        s.json["computeDomain"]["fromLabel"][1],
        "jobset.sigs.k8s.io/jobset-name"
    );
    // By the GPU model, as Google's pods select A4X.
    let (pod, _) = injected(
        &s,
        &worker(
            ("cloud.google.com/gke-accelerator", "nvidia-gb200"),
            "nvidia.com/gpu",
            4,
        ),
    );
    let networks = gke_networks(&pod);
    let expected: Vec<String> = (0..4).map(|i| format!("rdma-{i}")).collect();
    assert!(networks.ends_with(&expected), "{networks:?}");
    assert_eq!(networks.len(), 5, "{networks:?}");
}

// OKE BM.GPU.H100.8 with SR-IOV virtual functions: nvidia.com/rdma-vf 16 per node, the network
// rdma-vf of namespace default once per VF (oracle-quickstart/oci-hpc-oke).
#[test]
fn oke_h100_workers_get_16_vfs_on_the_nads_network() {
    let s = settings_of(&["oke-h100.json", "oke-nads.json"]);
    assert_eq!(s.json["oci"]["resourceName"], "nvidia.com/rdma-vf");
    assert_eq!(s.json["oci"]["network"], "default/rdma-vf");
    assert!(s.json["oci"].get("instanceTypes").is_none(), "{}", s.yaml);
    let (pod, _) = injected(
        &s,
        &worker((INSTANCE_TYPE, "BM.GPU.H100.8"), "nvidia.com/gpu", 8),
    );
    assert_eq!(count(&pod, "nvidia.com/rdma-vf").as_deref(), Some("16"));
    assert_eq!(multus(&pod), vec!["default/rdma-vf".to_owned(); 16]);
}

// On-prem DGX H100 with the Network Operator's RDMA shared device plugin: rdma/rdma_shared_device_a
// (rdmaHcaMax 63), 1 per pod, the IPoIB network ipoib-network-a of default (network-operator-docs
// examples/processed/ipoib-rdma-shared), the machine named by GPU Feature Discovery's label.
#[test]
fn dgx_h100_workers_get_one_shared_slot_and_the_ipoib_network() {
    let s = settings_of(&["dgx-h100-shared.json", "dgx-nads.json"]);
    assert_eq!(s.json["rdma"]["resourceName"], "rdma/rdma_shared_device_a");
    assert_eq!(s.json["rdma"]["devicesPerContainer"], 1);
    assert_eq!(
        s.json["rdma"]["instanceTypes"]["DGX-H100"]["multiNodeNVLink"],
        false
    );
    let (pod, _) = injected(
        &s,
        &worker(("nvidia.com/gpu.machine", "DGX-H100"), "nvidia.com/gpu", 8),
    );
    assert_eq!(
        count(&pod, "rdma/rdma_shared_device_a").as_deref(),
        Some("1")
    );
    assert_eq!(multus(&pod), ["default/ipoib-network-a"]);
    assert!(capabilities(&pod).contains(&"IPC_LOCK".to_owned()));
}

// CoreWeave: rdma/ib 1, "used as a boolean" (docs.coreweave.com, use GPUDirect RDMA with
// InfiniBand); the node type label names the machine.
#[test]
fn coreweave_workers_get_rdma_ib_one() {
    let s = settings_of(&["coreweave-h100.json"]);
    assert_eq!(s.json["rdma"]["resourceName"], "rdma/ib");
    assert!(
        s.json["rdma"]["instanceTypes"]
            .get("gd-8xh100ib-i128")
            .is_some()
    );
    let (pod, _) = injected(
        &s,
        &worker(
            ("node.coreweave.cloud/type", "gd-8xh100ib-i128"),
            "nvidia.com/gpu",
            8,
        ),
    );
    assert_eq!(count(&pod, "rdma/ib").as_deref(), Some("1"));
    assert!(multus(&pod).is_empty());
    assert!(s.yaml.contains("coreweave.yaml"), "{}", s.yaml);
}

// Nebius: the HCAs are in every GPU node's containers, no device resource (nebius-solution-library
// nccl-test): no device requested, IPC_LOCK to lock memory.
#[test]
fn nebius_workers_request_no_device() {
    let s = settings_of(&["nebius-h100.json"]);
    assert_eq!(s.json["rdma"]["resourceName"], Value::Null);
    let (pod, _) = injected(
        &s,
        &worker((INSTANCE_TYPE, "gpu-h100-sxm"), "nvidia.com/gpu", 8),
    );
    let limits = pod["spec"]["containers"][0]["resources"]["limits"]
        .as_object()
        .unwrap();
    assert_eq!(
        limits.keys().collect::<Vec<_>>(),
        ["nvidia.com/gpu"],
        "{pod:#}"
    );
    assert!(capabilities(&pod).contains(&"IPC_LOCK".to_owned()));
    assert!(s.yaml.contains("nebius.yaml"), "{}", s.yaml);
}

// Launch Kit's SR-IOV rails (network-operator-docs k8s-launch-kit generate.rst): one resource per
// rail, 1 of each, each rail's network sriov-network-rail-N.
#[test]
fn launch_kit_workers_get_one_vf_of_each_rail() {
    let s = settings_of(&["launch-kit-rails.json"]);
    let (pod, _) = injected(
        &s,
        &worker(("nvidia.com/gpu.machine", "DGX-B200"), "nvidia.com/gpu", 8),
    );
    for rail in 0..2 {
        let resource = format!("nvidia.com/sriov_resource_rail_{rail}");
        assert_eq!(count(&pod, &resource).as_deref(), Some("1"), "{pod:#}");
    }
    assert_eq!(
        multus(&pod),
        ["sriov-network-rail-0", "sriov-network-rail-1"]
    );
    assert!(s.yaml.contains("assumed"), "{}", s.yaml);
}

// Two fabrics: the block is the largest group's (three host-device nodes), the other is named and
// gets a row of its own.
#[test]
fn two_fabrics_take_the_largest_group_and_name_the_other() {
    let s = settings_of(&["two-fabrics.json"]);
    assert_eq!(s.json["rdma"]["resourceName"], "nvidia.com/hostdev");
    assert!(s.yaml.contains("The GPU nodes differ"), "{}", s.yaml);
    let (hgx, _) = injected(
        &s,
        &worker(("nvidia.com/gpu.machine", "HGX-H100"), "nvidia.com/gpu", 8),
    );
    assert_eq!(count(&hgx, "nvidia.com/hostdev").as_deref(), Some("8"));
    let (dgx, _) = injected(
        &s,
        &worker(("nvidia.com/gpu.machine", "DGX-H100"), "nvidia.com/gpu", 8),
    );
    assert_eq!(
        count(&dgx, "rdma/rdma_shared_device_a").as_deref(),
        Some("1")
    );
    assert_eq!(count(&dgx, "nvidia.com/hostdev"), None);
}

// OKE GB200 on host networking (oci-hpc-oke using-rdma-network-interfaces-in-manifests): no device;
// the clique labels without the channel DeviceClass get a comment, not a block.
#[test]
fn oke_gb200_on_host_networking_requests_no_vf() {
    let s = settings_of(&["oke-gb200-host-network.json"]);
    assert_eq!(
        s.json["oci"]["instanceTypes"]["BM.GPU.GB200.4"]["devicesPerNode"],
        0
    );
    assert!(s.json.get("computeDomain").is_none());
    assert!(s.yaml.contains("no DeviceClasses were given"), "{}", s.yaml);
    let (pod, _) = injected(
        &s,
        &worker((INSTANCE_TYPE, "BM.GPU.GB200.4"), "nvidia.com/gpu", 4),
    );
    let limits = pod["spec"]["containers"][0]["resources"]["limits"]
        .as_object()
        .unwrap();
    assert_eq!(
        limits.keys().collect::<Vec<_>>(),
        ["nvidia.com/gpu"],
        "{pod:#}"
    );
}

#[test]
fn bad_inputs_are_refused_saying_what_was_expected() {
    let expected = "expected the JSON that `kubectl get nodes -o json` prints";
    let not_json = cluster_settings::settings(&[("nodes.yaml", "apiVersion: v1\nkind: List\n")])
        .unwrap_err()
        .to_string();
    assert!(not_json.starts_with("nodes.yaml: not JSON"), "{not_json}");
    assert!(not_json.contains(expected), "{not_json}");
    let pods = refusal(&["pods.json"]);
    assert!(pods.contains("a Pod, not a Node"), "{pods}");
    assert!(pods.contains(expected), "{pods}");
    let cpu = refusal(&["no-gpu.json"]);
    assert!(cpu.starts_with("no GPU node"), "{cpu}");
    let mixed = refusal(&["mixed-clouds.json"]);
    assert!(mixed.starts_with("the nodes mix clouds: EKS"), "{mixed}");
    assert!(mixed.contains("AKS"), "{mixed}");
    let none = refusal(&["oke-nads.json"]);
    assert!(none.starts_with("no Node in the input"), "{none}");
}

/// The command prints the settings and nothing else on stdout; a refusal is one line on stderr
/// and a failure exit.
#[test]
fn the_command_prints_yaml_or_one_line() {
    let bin = env!("CARGO_BIN_EXE_cluster-settings");
    let run = |args: &[&str], stdin: &str| {
        use std::io::Write;
        let mut child = std::process::Command::new(bin)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the command runs");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let nodes = std::fs::read_to_string(format!("{NODES}eks-p5.json")).unwrap();
    let nads = format!("{NODES}oke-nads.json");
    let ok = run(&["-", &nads], &nodes);
    assert!(ok.status.success());
    let yaml: Value = serde_yaml::from_slice(&ok.stdout).expect("stdout is YAML");
    assert_eq!(yaml["aws"]["enabled"], true);
    for (args, stdin) in [
        (vec!["-"], "{not json"),
        (vec!["-"], "[]"),
        (vec![], ""),
        (vec!["/nonexistent/nodes.json"], ""),
    ] {
        let out = run(&args, stdin);
        assert!(!out.status.success(), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("cluster-settings: "), "{err}");
    }
}

/// The pod's claims made from templates: `(claim, template)`.
fn claims(pod: &Value) -> Vec<(String, String)> {
    pod["spec"]["resourceClaims"]
        .as_array()
        .map(|claims| {
            claims
                .iter()
                .map(|c| {
                    let text = |k: &str| c[k].as_str().unwrap_or("").to_owned();
                    (text("name"), text("resourceClaimTemplateName"))
                })
                .collect()
        })
        .unwrap_or_default()
}

// EKS with g5.12xlarge nodes (no EFA: EC2 supports EFA on g5.48xlarge only) beside p5.48xlarge: the
// g5 row requests none, the p5 keeps its built-in 32.
#[test]
fn eks_nodes_without_efa_get_a_row_of_none() {
    let s = settings_of(&["eks-g5-and-p5.json"]);
    assert_eq!(
        s.json["aws"]["instanceTypes"],
        json!({"g5.12xlarge": {"devicesPerNode": 0, "gpusPerNode": 4}})
    );
    let (g5, _) = injected(
        &s,
        &worker((INSTANCE_TYPE, "g5.12xlarge"), "nvidia.com/gpu", 4),
    );
    assert_eq!(count(&g5, "vpc.amazonaws.com/efa"), None);
    let (p5, _) = injected(
        &s,
        &worker((INSTANCE_TYPE, "p5.48xlarge"), "nvidia.com/gpu", 8),
    );
    assert_eq!(count(&p5, "vpc.amazonaws.com/efa").as_deref(), Some("32"));
    assert!(s.yaml.contains("The GPU nodes differ"), "{}", s.yaml);
}

// EKS with the EFA DRA driver (EKS user guide device-management-efa: its nodes advertise no
// vpc.amazonaws.com/efa): the claim of aws-dra.yaml, 32 for a p5.48xlarge's 8 GPUs.
#[test]
fn eks_efa_through_dra_gets_the_claim() {
    let s = settings_of(&["eks-p5-dra.json", "eks-dra-deviceclasses.json"]);
    assert_eq!(
        s.json["aws"]["deviceClaim"],
        json!({"template": "efa-{count}", "name": "efa"})
    );
    assert!(s.json["aws"].get("instanceTypes").is_none(), "{}", s.yaml);
    let (pod, _) = injected(
        &s,
        &worker((INSTANCE_TYPE, "p5.48xlarge"), "nvidia.com/gpu", 8),
    );
    assert_eq!(claims(&pod), [("efa".to_owned(), "efa-32".to_owned())]);
    assert_eq!(count(&pod, "vpc.amazonaws.com/efa"), None);
}

// GKE managed DRANET (DeviceClass mrdma.google.com, GKE docs allocate-network-resources-dra): the
// RDMA NICs through the template default-rdma of Cluster Toolkit, no multi-network annotation.
#[test]
fn gke_dranet_gets_the_rdma_claim() {
    let s = settings_of(&["gke-a3-ultra-dranet.json", "gke-dranet-deviceclasses.json"]);
    assert_eq!(
        s.json["gcp"]["rdma"]["deviceClaim"],
        json!({"template": "default-rdma", "name": "rdma"})
    );
    let (pod, _) = injected(
        &s,
        &worker((INSTANCE_TYPE, "a3-ultragpu-8g"), "nvidia.com/gpu", 8),
    );
    assert_eq!(
        claims(&pod),
        [("rdma".to_owned(), "default-rdma".to_owned())]
    );
    assert_eq!(annotation(&pod, "networking.gke.io/interfaces"), "");
}

// OKE with the RDMA shared device plugin (rdmaHcaMax 1000, which the API server writes "1k"): the
// oci block counts per GPU only, so the rdma block, saying why.
#[test]
fn oke_shared_pool_takes_the_rdma_block() {
    let s = settings_of(&["oke-h100-shared.json"]);
    assert!(s.json.get("oci").is_none(), "{}", s.yaml);
    assert_eq!(s.json["rdma"]["resourceName"], "rdma/rdma_shared_device_a");
    assert!(
        s.yaml.contains("The oci block cannot express"),
        "{}",
        s.yaml
    );
    let (pod, _) = injected(
        &s,
        &worker((INSTANCE_TYPE, "BM.GPU.H100.8"), "nvidia.com/gpu", 8),
    );
    assert_eq!(
        count(&pod, "rdma/rdma_shared_device_a").as_deref(),
        Some("1")
    );
}

// CoreWeave GB200 NVL72 (node type gb200-4x, coreweave/nccl-tests): rdma/ib 1, and the clique
// labels make the row a multi-node NVLink machine, so that the computeDomain block reaches its pods.
#[test]
fn coreweave_gb200_rows_say_multi_node_nvlink() {
    let s = settings_of(&["coreweave-gb200.json", "eks-deviceclasses.json"]);
    assert_eq!(
        s.json["rdma"]["instanceTypes"]["gb200-4x"]["multiNodeNVLink"],
        true
    );
    assert!(s.json.get("computeDomain").is_some());
    let (pod, warnings) = injected(
        &s,
        &worker(
            ("node.coreweave.cloud/type", "gb200-4x"),
            "nvidia.com/gpu",
            4,
        ),
    );
    assert_eq!(count(&pod, "rdma/ib").as_deref(), Some("1"));
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("ComputeDomain training/train")),
        "{warnings:?}"
    );
}

// GPU Feature Discovery on a shape without clique labels: the row says no multi-node NVLink; never
// on a machine the built-in table marks as NVLink.
#[test]
fn a_row_never_unmarks_a_built_in_nvlink_machine() {
    let text = std::fs::read_to_string(format!("{NODES}eks-p6e-gb200.json")).unwrap();
    let without_clique = text.replace("\"nvidia.com/gpu.clique\"", "\"example.com/not-clique\"");
    let s = cluster_settings::settings(&[("nodes.json", &without_clique)]).unwrap();
    assert!(s.json["aws"].get("instanceTypes").is_none(), "{}", s.yaml);
    let dgx = settings_of(&["dgx-h100-shared.json"]);
    assert_eq!(
        dgx.json["rdma"]["instanceTypes"]["DGX-H100"]["multiNodeNVLink"],
        false
    );
}

// The three lists pasted one after the other (the playground's one editor, `cat` of the files):
// read as the three files are.
#[test]
fn several_documents_in_one_input_read_as_several_files() {
    let read = |f: &str| std::fs::read_to_string(format!("{NODES}{f}")).unwrap();
    let pasted = format!("{}\n{}", read("oke-h100.json"), read("oke-nads.json"));
    let one = cluster_settings::settings(&[("-", &pasted)]).unwrap();
    let two = settings_of(&["oke-h100.json", "oke-nads.json"]);
    assert_eq!(one.yaml, two.yaml);
    assert_eq!(one.json["oci"]["network"], "default/rdma-vf");
    let empty = cluster_settings::settings(&[("-", " \n")])
        .unwrap_err()
        .to_string();
    assert!(empty.starts_with("-: empty, not JSON"), "{empty}");
}

// Objects of the right kinds with fields of the wrong types, odd quantities and time-sliced GPUs:
// an answer each, never a crash.
#[test]
fn odd_nodes_get_an_answer() {
    let odd = [
        r#"{"kind":"Node","metadata":{"labels":7},"status":{"allocatable":{"nvidia.com/gpu":8}}}"#,
        r#"{"kind":"Node","metadata":null,"spec":{"providerID":3},"status":{"allocatable":{"nvidia.com/gpu":"1e3"}}}"#,
        r#"{"kind":"NodeList","items":[{"metadata":{"name":"n"},"status":{"allocatable":{"nvidia.com/gpu":"128","rdma/ib":"99999999T"}}}]}"#,
        r#"{"kind":"NodeList","items":[{"metadata":{"labels":{"node.kubernetes.io/instance-type":"a b"}},"status":{"allocatable":{"nvidia.com/gpu":"3","nvidia.com/hostdev":"64"}}}]}"#,
        r#"{"kind":"List","items":[{"kind":"NetworkAttachmentDefinition","metadata":{"annotations":{"k8s.v1.cni.cncf.io/resourceName":5}}}]}"#,
        r#"{"kind":"List","items":"x"}"#,
        r#"{"kind":"List","items":[1]}"#,
        r#"[]"#,
        r#""#,
        r#"{"kind":"Node"} {"#,
    ];
    for text in odd {
        match cluster_settings::settings(&[("odd.json", text)]) {
            Ok(s) => {
                let answer = admission::validate_settings(s.json.to_string().as_bytes());
                let answer: Value = serde_json::from_slice(&answer).unwrap();
                assert_eq!(answer["valid"], true, "{text}: {answer}");
            }
            Err(e) => assert!(!format!("{e:#}").contains('\n'), "{text}: {e:#}"),
        }
    }
}

/// The worker of [`worker`], placed by a required node affinity of one term on `label` instead.
fn worker_by_affinity(label: &str, value: &str, gpu: &str, gpus: u64) -> Value {
    let mut pod = worker((label, value), gpu, gpus);
    let spec = pod["spec"].as_object_mut().unwrap();
    spec.remove("nodeSelector");
    spec.insert(
        "affinity".into(),
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": label, "operator": "In", "values": [value]}]}
        ]}}}),
    );
    pod
}

/// The worker of [`worker`] with no node selector at all: it may land on any node.
fn worker_anywhere(gpu: &str, gpus: u64) -> Value {
    let mut pod = worker(("kubernetes.io/os", "linux"), gpu, gpus);
    pod["spec"].as_object_mut().unwrap().remove("nodeSelector");
    pod
}

/// One pool of a node list: its label and value, its machine, its GPUs, and what a whole-node
/// worker there must get: `Some(n)` devices of the block's resource, `None` none.
struct Pool {
    label: &'static str,
    value: &'static str,
    machine: &'static str,
    gpus: u64,
    devices: Option<&'static str>,
}

/// Every pool's whole-node worker, by its pool label in a node selector, by a required node
/// affinity, and by its instance type, gets `devices` of `resource` (`check` holds the rest).
fn each_pool_gets_its_fabric(
    s: &Settings,
    resource: &str,
    pools: &[Pool],
    check: &dyn Fn(&Pool, &Value),
) {
    for pool in pools {
        let pods = [
            worker((pool.label, pool.value), "nvidia.com/gpu", pool.gpus),
            worker_by_affinity(pool.label, pool.value, "nvidia.com/gpu", pool.gpus),
            worker((INSTANCE_TYPE, pool.machine), "nvidia.com/gpu", pool.gpus),
        ];
        for pod in &pods {
            let (wired, warnings) = injected(s, pod);
            let how = &pod["spec"];
            assert_eq!(
                count(&wired, resource).as_deref(),
                pool.devices,
                "{} ({}) by {how}: {warnings:?}\n{}",
                pool.value,
                pool.machine,
                s.yaml
            );
            // The pool names one machine: no warning of several or unknown machines.
            assert!(
                !warnings
                    .iter()
                    .any(|w| w.contains("no entry") || w.contains("may run on")),
                "{}: {warnings:?}",
                pool.value
            );
            check(pool, &wired);
        }
    }
}

/// A worker that names neither machine nor pool, of `gpus` GPUs, gets the fabric and never more
/// devices than any node of the pools that offer `resource` and have as many GPUs has.
fn anywhere_fits(s: &Settings, resource: &str, pools: &[Pool], offered: &[(&str, u64)]) {
    for gpus in [1, 2, 4, 8] {
        let (wired, _) = injected(s, &worker_anywhere("nvidia.com/gpu", gpus));
        let asked: u64 = count(&wired, resource)
            .unwrap_or_else(|| panic!("{gpus} GPUs anywhere: no {resource}\n{}", s.yaml))
            .parse()
            .unwrap();
        assert!(asked > 0);
        for pool in pools.iter().filter(|p| p.gpus >= gpus) {
            let Some((_, on_node)) = offered.iter().find(|(m, _)| *m == pool.machine) else {
                continue;
            };
            assert!(
                asked <= *on_node,
                "{gpus} GPUs anywhere ask {asked} {resource}, more than the {on_node} of {}\n{}",
                pool.machine,
                s.yaml
            );
        }
    }
}

// EKS of five GPU pools (EKS managed node groups, one of a generated name, and a Karpenter
// NodePool; EC2's EFA counts as VENDOR-FACTS gives them: p5 32, p5en 16, p6-b200 8, p6e-gb200 4;
// g5.12xlarge without EFA) and a system pool.
#[test]
fn eks_pools_each_get_their_efa() {
    let s = settings_of(&["eks-pools.json"]);
    let ng = "eks.amazonaws.com/nodegroup";
    let pools = [
        Pool {
            label: ng,
            value: "p5-train",
            machine: "p5.48xlarge",
            gpus: 8,
            devices: Some("32"),
        },
        Pool {
            label: "karpenter.sh/nodepool",
            value: "gpu-h200",
            machine: "p5en.48xlarge",
            gpus: 8,
            devices: Some("16"),
        },
        Pool {
            label: ng,
            value: "nvidia-efa-b200-20260702101530123400000001",
            machine: "p6-b200.48xlarge",
            gpus: 8,
            devices: Some("8"),
        },
        Pool {
            label: ng,
            value: "gb200-ultra",
            machine: "p6e-gb200.36xlarge",
            gpus: 4,
            devices: Some("4"),
        },
        Pool {
            label: ng,
            value: "inference",
            machine: "g5.12xlarge",
            gpus: 4,
            devices: None,
        },
    ];
    each_pool_gets_its_fabric(&s, "vpc.amazonaws.com/efa", &pools, &|_, _| {});
    // The fallback fits every EFA pool: the fewest per GPU (p6-b200, p6e-gb200: 1).
    assert_eq!(s.json["aws"]["efaDevicesPerGPU"], 1, "{}", s.yaml);
    anywhere_fits(
        &s,
        "vpc.amazonaws.com/efa",
        &pools,
        &[
            ("p5.48xlarge", 32),
            ("p5en.48xlarge", 16),
            ("p6-b200.48xlarge", 8),
            ("p6e-gb200.36xlarge", 4),
        ],
    );
    // The stock EKS AMIs have no /opt/amazon-efa-ofi (aws.yaml).
    assert_eq!(s.json["aws"]["efaLibraryPath"], Value::Null, "{}", s.yaml);
    // A pool created after the settings: warned about, the fallback's count.
    let (pod, warnings) = injected(&s, &worker((ng, "b300-new"), "nvidia.com/gpu", 8));
    assert_eq!(count(&pod, "vpc.amazonaws.com/efa").as_deref(), Some("8"));
    assert!(
        warnings.iter().any(|w| w.contains(
            "node pool \"b300-new\" (eks.amazonaws.com/nodegroup) has no entry in aws.pools"
        )),
        "{warnings:?}"
    );
}

// EKS, three g5.12xlarge inference nodes (no EFA) beside two p5.48xlarge: the fallback is the EFA
// nodes', never the larger group's none.
#[test]
fn eks_a_larger_pool_without_efa_does_not_set_the_fallback() {
    let s = settings_of(&["eks-g5-and-p5.json"]);
    assert_eq!(s.json["aws"]["efaDevicesPerGPU"], 4, "{}", s.yaml);
    let (p5, _) = injected(&s, &worker_anywhere("nvidia.com/gpu", 8));
    assert_eq!(count(&p5, "vpc.amazonaws.com/efa").as_deref(), Some("32"));
}

// GKE of four node pools, one per GPUDirect stack (Google's tables in VENDOR-FACTS: A3 High TCPX
// on 4 NICs, A3 Mega TCPXO on 8, A3 Ultra and A4X GPUDirect-RDMA on 8 and 4).
#[test]
fn gke_pools_each_get_their_stack_and_networks() {
    let s = settings_of(&["gke-pools.json"]);
    let np = "cloud.google.com/gke-nodepool";
    let pools = [
        Pool {
            label: np,
            value: "a3-high",
            machine: "a3-highgpu-8g",
            gpus: 8,
            devices: None,
        },
        Pool {
            label: np,
            value: "a3-mega",
            machine: "a3-megagpu-8g",
            gpus: 8,
            devices: None,
        },
        Pool {
            label: np,
            value: "a3-ultra",
            machine: "a3-ultragpu-8g",
            gpus: 8,
            devices: None,
        },
        Pool {
            label: np,
            value: "a4x",
            machine: "a4x-highgpu-4g",
            gpus: 4,
            devices: None,
        },
    ];
    let vpc = |n: usize| (1..=n).map(|i| format!("vpc{i}")).collect::<Vec<_>>();
    let rdma = |n: usize| (0..n).map(|i| format!("rdma-{i}")).collect::<Vec<_>>();
    each_pool_gets_its_fabric(&s, "vpc.amazonaws.com/efa", &pools, &|pool, pod| {
        let networks = gke_networks(pod);
        let (daemon, nics) = match pool.value {
            "a3-high" => (Some("tcpx-daemon"), vpc(4)),
            "a3-mega" => (Some("tcpxo-daemon"), vpc(8)),
            "a3-ultra" => (None, rdma(8)),
            _ => (None, rdma(4)),
        };
        assert_eq!(networks[0], "default");
        assert_eq!(networks[1..], nics, "{}: {networks:?}", pool.value);
        let sidecars: Vec<&str> = pod["spec"]["initContainers"]
            .as_array()
            .map(|c| c.iter().filter_map(|c| c["name"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(
            sidecars,
            daemon.into_iter().collect::<Vec<_>>(),
            "{}",
            pool.value
        );
    });
}

// AKS of agent pools (kubernetes.azure.com/agentpool and agentpool): ND H100 v5 and ND A100 v4
// with the SR-IOV device plugin, 8 rdma/ib each (Azure/aks-rdma-infiniband), and NC A100 v4
// inference nodes without InfiniBand.
#[test]
fn aks_pools_each_get_their_infiniband() {
    let s = settings_of(&["aks-pools.json"]);
    for label in ["kubernetes.azure.com/agentpool", "agentpool"] {
        let pools = [
            Pool {
                label,
                value: "ndh100",
                machine: "Standard_ND96isr_H100_v5",
                gpus: 8,
                devices: Some("8"),
            },
            Pool {
                label,
                value: "nda100",
                machine: "Standard_ND96amsr_A100_v4",
                gpus: 8,
                devices: Some("8"),
            },
            Pool {
                label,
                value: "nca100",
                machine: "Standard_NC24ads_A100_v4",
                gpus: 1,
                devices: None,
            },
        ];
        each_pool_gets_its_fabric(&s, "rdma/ib", &pools, &|_, _| {});
        anywhere_fits(
            &s,
            "rdma/ib",
            &pools,
            &[
                ("Standard_ND96isr_H100_v5", 8),
                ("Standard_ND96amsr_A100_v4", 8),
            ],
        );
    }
}

// OKE node pools of Oracle's Terraform module (oke.oraclecloud.com/pool.name): H100 with 16 SR-IOV
// VFs, B200 with 8 (oci-hpc-oke), GB200 on host networking, no device.
#[test]
fn oke_pools_each_get_their_vfs_or_none() {
    let s = settings_of(&["oke-pools.json", "oke-nads.json"]);
    let label = "oke.oraclecloud.com/pool.name";
    let pools = [
        Pool {
            label,
            value: "gpu-h100",
            machine: "BM.GPU.H100.8",
            gpus: 8,
            devices: Some("16"),
        },
        Pool {
            label,
            value: "gpu-b200",
            machine: "BM.GPU.B200.8",
            gpus: 8,
            devices: Some("8"),
        },
        Pool {
            label,
            value: "gpu-gb200",
            machine: "BM.GPU.GB200.4",
            gpus: 4,
            devices: None,
        },
    ];
    each_pool_gets_its_fabric(&s, "nvidia.com/rdma-vf", &pools, &|pool, pod| {
        // The Multus list: once per VF, none without.
        let n: usize = pool.devices.map_or(0, |d| d.parse().unwrap());
        assert_eq!(multus(pod).len(), n, "{}", pool.value);
    });
    assert_eq!(s.json["oci"]["resourceName"], "nvidia.com/rdma-vf");
    anywhere_fits(
        &s,
        "nvidia.com/rdma-vf",
        &pools,
        &[("BM.GPU.H100.8", 16), ("BM.GPU.B200.8", 8)],
    );
}

// OKE GB200 with NVIDIA's RDMA shared device plugin on nvidia.com/mlnxnics (rdmaHcaMax 63): a
// shared pool, one per container, whatever the resource's name.
#[test]
fn oke_shared_mlnxnics_is_one_per_container() {
    let s = settings_of(&["oke-gb200-shared.json"]);
    assert_eq!(
        s.json["rdma"]["resourceName"], "nvidia.com/mlnxnics",
        "{}",
        s.yaml
    );
    assert_eq!(s.json["rdma"]["devicesPerContainer"], 1, "{}", s.yaml);
    for pod in [
        worker((INSTANCE_TYPE, "BM.GPU.GB200.4"), "nvidia.com/gpu", 4),
        worker(
            ("oke.oraclecloud.com/pool.name", "gpu-gb200"),
            "nvidia.com/gpu",
            4,
        ),
    ] {
        let (wired, _) = injected(&s, &pod);
        assert_eq!(count(&wired, "nvidia.com/mlnxnics").as_deref(), Some("1"));
    }
}

// The job controllers the cluster runs, from its CRDs: their labels, the outermost first, batch's
// last; without CRDs, every controller the tool knows.
#[test]
fn compute_domain_labels_follow_the_controllers_seen() {
    let s = settings_of(&["eks-p6e-gb200.json", "eks-deviceclasses.json", "crds.json"]);
    assert_eq!(
        s.json["computeDomain"]["fromLabel"],
        json!([
            "jobset.sigs.k8s.io/jobset-name",
            "training.kubeflow.org/job-name",
            "batch.kubernetes.io/job-name"
        ])
    );
    let all = settings_of(&["eks-p6e-gb200.json", "eks-deviceclasses.json"]);
    assert_eq!(
        all.json["computeDomain"]["fromLabel"],
        json!([
            "trainer.kubeflow.org/trainjob-name",
            "jobset.sigs.k8s.io/jobset-name",
            "training.kubeflow.org/job-name",
            "volcano.sh/job-name",
            "batch.kubernetes.io/job-name"
        ])
    );
    // A PyTorchJob's worker (training.kubeflow.org/job-name only) gets its domain's name asked.
    let mut pod = worker((INSTANCE_TYPE, "p6e-gb200.36xlarge"), "nvidia.com/gpu", 4);
    pod["metadata"]["labels"] = json!({"training.kubeflow.org/job-name": "llama"});
    let (_, warnings) = injected(&s, &pod);
    assert!(
        warnings.iter().any(|w| w.contains(
            "ComputeDomain training/llama (named by the pod's label training.kubeflow.org/job-name)"
        )),
        "{warnings:?}"
    );
}
