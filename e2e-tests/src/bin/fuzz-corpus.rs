//! Writes the seed corpus of the fuzz targets (`make fuzz-corpus`) from the end-to-end cases:
//! every case's request as a `validate` payload, every settings block as a `validate_settings`
//! input, and every pod (and every expected mutated pod) with its case's settings as an
//! `opted_in` input (settings, a NUL byte, the pod; for the cases with cluster state, again with
//! a NUL byte and a host answer); every claim object of the cases' fixture clusters, as the
//! host's answer, for `claims`; and every MPIJob of theirs, named as the `launcher` target's
//! launchers name theirs, for `launcher`. File names are
//! content hashes, so running it again adds nothing new.
//!
//! Usage: `fuzz-corpus [DIR]`, DIR defaulting to `fuzz/corpus`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use e2e_tests::cases::{self, Case, SettingsCase};
use fixtures::realistic::{a3_high_worker, a3_ultra_worker, jobset_worker, mi300x_worker};
use serde_json::{Value, json};

fn main() -> Result<()> {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "fuzz/corpus".into()),
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut written = 0;
    for (_, case) in cases::load::<Case>(&root.join("cases"))? {
        written += write(&out.join("validate"), &case.payload())?;
        // A case given as a whole payload has no settings or pod of its own.
        if case.payload.is_some() {
            continue;
        }
        written += write(
            &out.join("validate_settings"),
            &serde_json::to_vec(&case.settings)?,
        )?;
        for pod in std::iter::once(&case.object).chain(case.expect.pod.as_ref()) {
            let mut input = serde_json::to_vec(&case.settings)?;
            input.push(0);
            input.extend(serde_json::to_vec(pod)?);
            written += write(&out.join("opted_in"), &input)?;
            // A case with cluster state: the pod again, with host answers (behaviour.md §9).
            if case.cluster.is_some() {
                for answer in HOST_ANSWERS {
                    let mut with_answer = input.clone();
                    with_answer.push(0);
                    with_answer.extend(answer);
                    written += write(&out.join("opted_in"), &with_answer)?;
                }
            }
        }
    }
    // The claims target's seeds: the answers the cases' fixture clusters give to a claim read,
    // each claim object of theirs (behaviour.md §3.10).
    for (_, case) in cases::load::<Case>(&root.join("cases"))? {
        for object in case.cluster.iter().flat_map(|c| c.objects.iter()) {
            if object["kind"] == "ResourceClaimTemplate" || object["kind"] == "ResourceClaim" {
                let mut claim = object.clone();
                claim["metadata"]["name"] = json!("eight-gpus");
                written += write(&out.join("claims"), &serde_json::to_vec(&claim)?)?;
            }
            // The launcher target's: the MPIJobs (behaviour.md §3.12), as its launchers' job.
            if object["kind"] == "MPIJob" {
                let mut job = object.clone();
                job["metadata"]["name"] = json!("nccl");
                job["metadata"]["namespace"] = json!("jobs");
                written += write(&out.join("launcher"), &serde_json::to_vec(&job)?)?;
            }
        }
    }
    for (_, case) in cases::load::<SettingsCase>(&root.join("settings-cases"))? {
        written += write(&out.join("validate_settings"), &case.payload())?;
    }
    // The fabrics', machines' and GPU resources' inputs crossed: every fabric, GPU resource and row-as-overlay setting below with
    // pods that name each kind of machine, so that the fuzzer starts from pairs the e2e cases hold
    // only one by one (an RDMA block with an A4X pod, a TCPX row with several candidates).
    for settings in fabric_and_machine_settings() {
        let text = serde_json::to_vec(&settings)?;
        written += write(&out.join("validate_settings"), &text)?;
        for pod in machine_naming_pods() {
            let mut input = text.clone();
            input.push(0);
            input.extend(serde_json::to_vec(&pod)?);
            written += write(&out.join("opted_in"), &input)?;
            written += write(
                &out.join("validate"),
                &fixtures::create_payload(&pod, &settings),
            )?;
        }
    }
    // The trigger and opt-out keys as one key or a list (behaviour.md §1.3), crossed with pods
    // opted in (and out) by NeMo Helix's keys as well as NeMo Platform's.
    for settings in annotation_key_settings() {
        let text = serde_json::to_vec(&settings)?;
        written += write(&out.join("validate_settings"), &text)?;
        for pod in machine_naming_pods().iter().flat_map(helix_twins) {
            let mut input = text.clone();
            input.push(0);
            input.extend(serde_json::to_vec(&pod)?);
            written += write(&out.join("opted_in"), &input)?;
            written += write(
                &out.join("validate"),
                &fixtures::create_payload(&pod, &settings),
            )?;
        }
    }
    println!("{written} new seed inputs under {}", out.display());
    Ok(())
}

/// Answers of the reads of the cluster, as the opted_in target reads them: the policy server's
/// words for a missing object (a first byte 1) and for a read RBAC refuses (2), objects the cases
/// look for, and text a policy server never sends.
const HOST_ANSWERS: [&[u8]; 5] = [
    b"\x01",
    b"\x02",
    br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"nccl-topo","namespace":"team-a"},"data":{"NCCL_DEBUG":"INFO"}}"#,
    br#"{"kind":"NetworkAttachmentDefinition","metadata":{"name":"sriov-net"}}"#,
    b"not an object",
];

/// Writes `bytes` under a name from their FNV-1a hash; 1 if the file is new.
fn write(dir: &Path, bytes: &[u8]) -> Result<usize> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    let path = dir.join(format!("{hash:016x}"));
    if path.exists() {
        return Ok(0);
    }
    std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(1)
}

/// Settings of the fabrics and machines: GCP's fabrics and their blocks, rows that pick a fabric or set a cloud's
/// keys, `gpuResources`, Azure's topology file turned off.
fn fabric_and_machine_settings() -> Vec<Value> {
    vec![
        json!({"gcp": {"enabled": true, "fabric": "rdma"}}),
        json!({"gcp": {"enabled": true, "fabric": "tcpx", "tcpx": {
            "networks": ["vpc1", "vpc2", "vpc3", "vpc4"],
            "daemonImage": "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.15",
            "daemonFlags": ["--gpu_nic_preset", "a3vm", "--setup_param", "\\\"--verbose 128 2 0 \\\""],
            "env": {"NCCL_BUFFSIZE": "8388608", "NCCL_ALGO": null}}}}),
        json!({"gcp": {"enabled": true,
            "rdma": {"networks": ["rdma-0", "rdma-1", "rdma-2", "rdma-3"], "env": {"NCCL_NET": null, "NCCL_IB_TC": "53"}},
            "instanceTypes": {
                "a3-highgpu-8g": {"fabric": "tcpx", "tcpx": {"env": {"NCCL_SOCKET_NTHREADS": "2"}}},
                "a3-ultragpu-8g": {"fabric": "tcpxo", "capabilities": ["IPC_LOCK"]},
                "a4x-highgpu-4g": {"rdma": {"networks": ["a4x-0", "a4x-1", "a4x-2", "a4x-3"]}},
                "custom-gpu-8": {"devicesPerNode": 8, "gpusPerNode": 8, "fabric": "rdma"}}}}),
        json!({"gpuResources": ["amd.com/gpu", "nvidia.com/gpu", "gpu.intel.com/xe"],
            "azure": {"enabled": true, "ncclTopologyConfigMap": "nccl-topo",
                "instanceTypes": {"Standard_ND96isr_H100_v5": {"ncclTopologyConfigMap": null, "env": {"NCCL_IB_PCI_RELAXED_ORDERING": "1"}}}}}),
        json!({"gpuResources": ["amd.com/gpu"], "oci": {"enabled": true, "instanceTypes": {
            "BM.GPU.MI300X.8": {"devicesPerNode": 4, "network": "default/rdma-vf"}}}}),
        json!({"aws": {"enabled": true, "instanceTypes": {"p6e-gb200.36xlarge": {"devicesPerNode": 8, "efaLibraryPath": ""}}}}),
    ]
}

/// `triggerAnnotation` and `optOutAnnotation` in each of their shapes.
fn annotation_key_settings() -> Vec<Value> {
    vec![
        json!({"oci": {"enabled": true}}),
        json!({"aws": {"enabled": true}, "triggerAnnotation": fixtures::HELIX_TRIGGER,
            "optOutAnnotation": "nmp.nvidia.com/disable-multi-node-networking"}),
        json!({"gcp": {"enabled": true}, "triggerAnnotation": ["example.com/fast-net", fixtures::HELIX_TRIGGER],
            "optOutAnnotation": ["example.com/keep-out", "nhx.nvidia.com/disable-multi-node-networking"]}),
        json!({"azure": {"enabled": true}, "triggerAnnotation": [], "optOutAnnotation": [7]}),
    ]
}

/// The pod with its trigger renamed to NeMo Helix's, and that pod opted out by Helix's key, and
/// with near-miss values on both triggers.
fn helix_twins(pod: &Value) -> Vec<Value> {
    let mut helix = pod.clone();
    let Some(annotations) = helix["metadata"]["annotations"].as_object_mut() else {
        return Vec::new();
    };
    if let Some(value) = annotations.remove(fixtures::TRIGGER) {
        annotations.insert(fixtures::HELIX_TRIGGER.into(), value);
    }
    let mut opted_out = helix.clone();
    opted_out["metadata"]["annotations"]["nhx.nvidia.com/disable-multi-node-networking"] =
        json!("true");
    let mut near_misses = helix.clone();
    near_misses["metadata"]["annotations"][fixtures::HELIX_TRIGGER] = json!("True");
    near_misses["metadata"]["annotations"][fixtures::TRIGGER] = json!("yes");
    vec![helix, opted_out, near_misses]
}

/// Pods naming machines every way the policy reads them: GKE accelerators (known, fabric-only,
/// unknown, several), instance types, AMD GPUs, resource claims.
fn machine_naming_pods() -> Vec<Value> {
    let mut pods = vec![a3_ultra_worker(), a3_high_worker(), mi300x_worker()];
    let selectors = [
        json!({"cloud.google.com/gke-accelerator": "nvidia-gb200"}),
        json!({"cloud.google.com/gke-accelerator": "nvidia-gb300"}),
        json!({"cloud.google.com/gke-accelerator": "nvidia-l4"}),
        json!({"node.kubernetes.io/instance-type": "p6e-gb200.36xlarge"}),
        json!({"node.kubernetes.io/instance-type": "BM.GPU.MI300X.8"}),
    ];
    for selector in selectors {
        let mut pod = jobset_worker();
        pod["spec"]["nodeSelector"] = selector;
        pods.push(pod);
    }
    // Several candidates of different fabrics, by required affinity.
    let mut pod = jobset_worker();
    pod["spec"]
        .as_object_mut()
        .map(|s| s.remove("nodeSelector"));
    pod["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "cloud.google.com/gke-accelerator",
            "operator": "In", "values": ["nvidia-h200-141gb", "nvidia-h100-mega-80gb"]}]}]}}});
    pods.push(pod);
    // A GB200 pod with its ComputeDomain channel claim.
    let mut pod = jobset_worker();
    pod["spec"]["nodeSelector"] = json!({"cloud.google.com/gke-accelerator": "nvidia-gb200"});
    pod["spec"]["resourceClaims"] =
        json!([{"name": "channel", "resourceClaimTemplateName": "imex-channel"}]);
    pods.push(pod);
    pods
}
