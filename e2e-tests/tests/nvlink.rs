//! Multi-node NVLink (behaviour.md §3.11) on the vendors' own GB200 and GB300 workers: each carries
//! the claim of its job's ComputeDomain channel, written by hand. Stripped of it and sent through
//! the compiled module with `computeDomain` set and the domain in the fixture cluster, the worker
//! gets exactly that claim back (its name, its template, the containers that name it), and
//! otherwise exactly what the unstripped worker gets; a second pass changes nothing; the block
//! changes nothing of a worker that has its channel; and the auditor refuses the wired worker
//! without its channel, naming the domain and its template, and passes it with it.

use case_runner::cases::Case;
use case_runner::cluster::Cluster;
use e2e_tests::{Instance, admission_request, pod_kind, policy};
use serde_json::{Value, json};

/// The vendors' workers that carry a channel claim (their sources are in each case's
/// description), and the pod label of their job controller that names their job.
const WORKERS: &[(&str, &str)] = &[
    // awsome-distributed-training nccl-tests-gb200.yaml, an MPIJob on p6e-gb200.36xlarge.
    (
        "vendor-aws-mpijob-gb200-built-in-row",
        "training.kubeflow.org/job-name",
    ),
    // The same with the EFA DRA driver: the fabric's claim beside the channel's.
    (
        "dra-aws-gb200-beside-the-compute-domain-claim",
        "training.kubeflow.org/job-name",
    ),
    // Google's nccl-test-imex-a4x.yaml, a JobSet on A4X.
    (
        "machine-gcp-a4x-compute-domain-rdma",
        "jobset.sigs.k8s.io/jobset-name",
    ),
    // The same on GKE managed DRANET, and Google's nccl-test-a4x-max.yaml on A4X Max (GB300).
    (
        "dra-gcp-managed-dranet-a4x-compute-domain",
        "jobset.sigs.k8s.io/jobset-name",
    ),
    (
        "dra-gcp-managed-dranet-a4x-max-compute-domain",
        "jobset.sigs.k8s.io/jobset-name",
    ),
    // The A4X Max worker with its own managed-DRANET claim after the channel's.
    (
        "claims-gcp-a4x-max-own-mrdma-claim-is-wired",
        "jobset.sigs.k8s.io/jobset-name",
    ),
];

const CHANNEL_CLASS: &str = "compute-domain-default-channel.nvidia.com";

use e2e_tests::case_named as case;

/// The worker's channel claim: its pod claim, of the template the domain's controller writes.
fn channel_claim(pod: &Value) -> Value {
    let claims = pod["spec"]["resourceClaims"].as_array().expect("claims");
    let channel = claims
        .iter()
        .find(|c| c["name"] == "compute-domain-channel")
        .expect("the worker's channel claim");
    channel.clone()
}

/// `pod` without the claim named `name`, in `spec.resourceClaims` and in every container.
fn without_claim(pod: &Value, name: &str) -> Value {
    let mut pod = pod.clone();
    let spec = &mut pod["spec"];
    let claims = spec["resourceClaims"].as_array_mut().expect("claims");
    claims.retain(|c| c["name"] != name);
    if claims.is_empty() {
        spec.as_object_mut().unwrap().remove("resourceClaims");
    }
    for container in spec["containers"].as_array_mut().unwrap() {
        let Some(resources) = container["resources"].as_object_mut() else {
            continue;
        };
        if let Some(Value::Array(claims)) = resources.get_mut("claims") {
            claims.retain(|c| c["name"] != name);
            if claims.is_empty() {
                resources.remove("claims");
            }
        }
    }
    pod
}

/// `pod` with its claim lists in name order: a claim's place in them means nothing to
/// Kubernetes, and the policy appends the channel after the worker's own claims.
fn claims_sorted(mut pod: Value) -> Value {
    let by_name = |list: &mut Value| {
        if let Some(items) = list.as_array_mut() {
            items.sort_by_key(|c| c["name"].as_str().unwrap_or_default().to_string());
        }
    };
    by_name(&mut pod["spec"]["resourceClaims"]);
    for container in pod["spec"]["containers"].as_array_mut().unwrap() {
        if container["resources"]["claims"].is_array() {
            by_name(&mut container["resources"]["claims"]);
        }
    }
    pod
}

/// The settings of `case` with `computeDomain`, and more keys.
fn with_block(case: &Case, label: &str, more: Value) -> Value {
    let mut settings = case.settings.clone();
    let top = settings.as_object_mut().expect("settings object");
    top.insert("computeDomain".into(), json!({"fromLabel": label}));
    top.extend(more.as_object().cloned().unwrap_or_default());
    settings
}

/// The case's cluster, with the worker's ComputeDomain (named by its label), the channel template
/// its controller writes, and the fabric's templates that `deploy/` ships for the DRA vendor files
/// (applied in the pod's namespace, as the README says), which a running pod's claims were made
/// from.
fn cluster_of(case: &Case, pod: &Value, label: &str, template: &str) -> Cluster {
    let mut cluster = case.cluster.clone().unwrap_or_default();
    let namespace = pod["metadata"]["namespace"].clone();
    let root = case_runner::repo_root();
    for file in [
        "deploy/aws/dra/efa-claim-templates.yaml",
        "deploy/gcp/dra/default-rdma.yaml",
    ] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        for document in serde_yaml::Deserializer::from_str(&text) {
            let mut object: Value = serde::Deserialize::deserialize(document).unwrap();
            object["metadata"]["namespace"] = namespace.clone();
            cluster.objects.push(object);
        }
    }
    let domain = pod["metadata"]["labels"][label].clone();
    assert!(domain.is_string(), "{}: no label {label}", case.name);
    cluster.objects.push(json!({
        "apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
        "metadata": {"namespace": namespace, "name": domain},
        "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": template}}}
    }));
    cluster.objects.push(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"namespace": namespace, "name": template},
        "spec": {"spec": {"devices": {"requests": [
            {"name": "channel", "exactly": {"deviceClassName": CHANNEL_CLASS}}
        ]}}}
    }));
    cluster
}

/// The pod the policy answers with, `None` where it leaves the pod as it is.
fn mutated(instance: &Instance, pod: &Value, settings: &Value) -> Option<Value> {
    let request = admission_request("CREATE", &pod_kind(), pod);
    let response = instance.validate(&request, settings).expect("an answer");
    assert!(response.accepted, "{:?}", response.message);
    response.mutated_object
}

#[test]
fn a_vendors_worker_stripped_of_its_channel_gets_it_back_exactly() {
    let instance = policy().instance().unwrap();
    for (name, label) in WORKERS {
        let case = case(name);
        let worker = &case.object;
        let channel = channel_claim(worker);
        let template = channel["resourceClaimTemplateName"].as_str().unwrap();
        instance.set_cluster(Some(cluster_of(&case, worker, label, template)));
        let settings = with_block(&case, label, json!({}));
        let stripped = without_claim(worker, "compute-domain-channel");

        let wired = mutated(&instance, worker, &settings).expect("the worker is wired");
        let got = mutated(&instance, &stripped, &settings).expect("the worker is wired");
        let claims = got["spec"]["resourceClaims"].as_array().unwrap();
        let given: Vec<&Value> = claims
            .iter()
            .filter(|c| c["name"] == "compute-domain-channel")
            .collect();
        assert_eq!(given, [&channel], "{name}: the vendor's claim, exactly");
        assert_eq!(
            claims_sorted(got.clone()),
            claims_sorted(wired.clone()),
            "{name}: what the worker with its channel gets"
        );
        assert_eq!(mutated(&instance, &got, &settings), None, "{name}: again");
        // The block changes nothing of a worker that has its channel.
        let unset = &case.settings;
        assert_eq!(mutated(&instance, worker, unset), Some(wired), "{name}");
    }
}

#[test]
fn the_auditor_refuses_a_wired_worker_without_its_channel_naming_the_domain() {
    let instance = policy().instance().unwrap();
    for (name, label) in WORKERS {
        let case = case(name);
        let worker = &case.object;
        let template = channel_claim(worker)["resourceClaimTemplateName"].clone();
        let template = template.as_str().unwrap();
        instance.set_cluster(Some(cluster_of(&case, worker, label, template)));
        let injector = with_block(&case, label, json!({}));
        let wired = mutated(&instance, worker, &injector).expect("the worker is wired");
        let auditor = with_block(&case, label, json!({"validateOnly": true}));
        let audit = |pod: &Value| {
            let request = admission_request("CREATE", &pod_kind(), pod);
            instance.validate(&request, &auditor).expect("an answer")
        };
        let passed = audit(&wired);
        assert!(
            passed.accepted && passed.mutated_object.is_none(),
            "{name}: {:?} {:?}",
            passed.message,
            passed.warnings
        );
        let refused = audit(&without_claim(&wired, "compute-domain-channel"));
        let message = refused.message.unwrap_or_default();
        let domain = wired["metadata"]["labels"][label].as_str().unwrap();
        let namespace = wired["metadata"]["namespace"].as_str().unwrap();
        assert!(!refused.accepted, "{name}");
        assert!(
            message.contains(&format!(
                "resource claim compute-domain-channel (the IMEX channel of ComputeDomain {namespace}/{domain}, from its template {template})"
            )),
            "{name}: {message}"
        );
    }
}

/// The README's GB200 job: the worker the training operator makes of
/// `examples/jobs/gb200-pytorchjob.yaml`'s template (`examples/pods/aws-gb200-worker.yaml`), with
/// `examples/settings/aws-gb200.yaml` and the job's ComputeDomain in the cluster, gets its 4 EFA
/// interfaces (the built-in row) and the claim of that domain's channel; without the domain, its
/// GPU container gets NCCL_MNNVL_ENABLE=0 and the warning says what to create.
#[test]
fn the_readmes_gb200_job_gets_its_channel() {
    let root = case_runner::repo_root();
    let text = std::fs::read_to_string(root.join("examples/jobs/gb200-pytorchjob.yaml")).unwrap();
    let documents: Vec<Value> = serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let (domain, job) = (&documents[0], &documents[1]);
    assert_eq!(domain["kind"], "ComputeDomain");
    let worker = e2e_tests::read_yaml(&root.join("examples/pods/aws-gb200-worker.yaml")).unwrap();
    let template = &job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"];
    assert_eq!(
        worker["spec"]["nodeSelector"],
        template["spec"]["nodeSelector"]
    );
    assert_eq!(
        worker["metadata"]["annotations"],
        template["metadata"]["annotations"]
    );
    assert_eq!(
        worker["metadata"]["labels"]["training.kubeflow.org/job-name"],
        job["metadata"]["name"]
    );
    assert_eq!(
        worker["metadata"]["namespace"],
        job["metadata"]["namespace"]
    );
    let settings = e2e_tests::read_yaml(&root.join("examples/settings/aws-gb200.yaml")).unwrap();

    let instance = policy().instance().unwrap();
    let objects = vec![domain.clone()];
    instance.set_cluster(Some(Cluster {
        objects,
        ..Cluster::default()
    }));
    let wired = mutated(&instance, &worker, &settings).expect("wired");
    assert_eq!(
        wired["spec"]["resourceClaims"],
        json!([{"name": "compute-domain-channel", "resourceClaimTemplateName": "llama-gb200-channel"}])
    );
    let container = &wired["spec"]["containers"][0];
    assert_eq!(
        container["resources"]["claims"],
        json!([{"name": "compute-domain-channel"}])
    );
    assert_eq!(
        container["resources"]["limits"]["vpc.amazonaws.com/efa"],
        "4"
    );

    instance.set_cluster(Some(Cluster::default()));
    let request = admission_request("CREATE", &pod_kind(), &worker);
    let response = instance.validate(&request, &settings).unwrap();
    let unjoined = response.mutated_object.expect("wired");
    assert!(unjoined["spec"].get("resourceClaims").is_none());
    let env = &unjoined["spec"]["containers"][0]["env"];
    assert!(
        env.as_array()
            .unwrap()
            .contains(&json!({"name": "NCCL_MNNVL_ENABLE", "value": "0"}))
    );
    let warnings = response.warnings.unwrap_or_default();
    assert!(
        warnings[0].starts_with("multi-node networking: ComputeDomain training/llama-gb200 (named by the pod's label training.kubeflow.org/job-name) does not exist"),
        "{warnings:?}"
    );
}
