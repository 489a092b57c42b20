//! The preflight's reads of the cluster (behaviour.md §9, §11), as the compiled module makes them
//! in wasmtime: exactly the `get_resource` request the policy server reads, one per object, in
//! the right namespace, uncached and masked to what the policy reads, then one read of the pod's
//! Namespace for a pod the policy changes by adding what some Pod Security level refuses, and
//! none for a pod the policy does not wire. (The answers' effects are the cases under `e2e-tests/cases/preflight/`
//! and `e2e-tests/cases/pod-security/`.)

mod common;

use common::{repo_root, yaml};
use e2e_tests::cluster::Cluster;
use e2e_tests::{Instance, admission_request, pod_kind, policy};
use fixtures::{TRIGGER, volcano_worker, without_trigger};
use serde_json::{Value, json};

fn pod(name: &str) -> Value {
    yaml(&repo_root().join("e2e-tests/pods").join(name))
}

/// The `(binding, namespace, operation, payload)` of the host calls one `validate` makes.
fn calls(
    instance: &Instance,
    operation: &str,
    object: &Value,
    settings: &Value,
) -> Vec<(String, String, String, Value)> {
    instance.take_host_calls();
    let request = admission_request(operation, &pod_kind(), object);
    let response = instance.validate(&request, settings).unwrap();
    assert!(response.accepted, "{:?}", response.message);
    instance
        .take_host_calls()
        .into_iter()
        .map(|(binding, namespace, op, payload)| {
            let payload = serde_json::from_slice(&payload).expect("the request is JSON");
            (binding, namespace, op, payload)
        })
        .collect()
}

fn get(payload: Value) -> (String, String, String, Value) {
    (
        "kubewarden".into(),
        "kubernetes".into(),
        "get_resource".into(),
        payload,
    )
}

/// The SDK's `GetResourceRequest` of the pod's Namespace: cluster-scoped, no namespace, the
/// server's cache kept (namespaces are few), its labels all that is read.
fn namespace(name: &str) -> (String, String, String, Value) {
    get(
        json!({"api_version": "v1", "kind": "Namespace", "name": name,
        "disable_cache": false, "field_masks": ["metadata.labels"]}),
    )
}

#[test]
fn one_get_per_object_uncached_and_masked() {
    let instance = policy().instance().unwrap();
    instance.set_cluster(Some(Cluster::default()));
    // The SDK's GetResourceRequest: the server's cache left out (it keeps an entry per object
    // until that object is asked for again), the answer pruned to the fields the policy reads.
    assert_eq!(
        calls(
            &instance,
            "CREATE",
            &pod("azure-worker.yaml"),
            &json!({"azure": {"enabled": true}})
        ),
        [
            get(json!({
                "api_version": "v1",
                "kind": "ConfigMap",
                "name": "nccl-topo",
                "namespace": "team-a",
                "disable_cache": true,
                "field_masks": ["data"]
            })),
            namespace("team-a")
        ]
    );
    // 64 attachments of one network: one call, in the network's namespace. OCI adds no
    // capability and no hostPath volume, which no level refuses: its namespace is not read.
    assert_eq!(
        calls(
            &instance,
            "CREATE",
            &pod("oci-worker.yaml"),
            &json!({"oci": {"enabled": true}})
        ),
        [get(json!({
            "api_version": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "name": "sriov-net",
            "namespace": "network-operator",
            "disable_cache": true,
            "field_masks": ["metadata.name"]
        }))]
    );
    // A network without a namespace is the pod's own.
    assert_eq!(
        calls(
            &instance,
            "CREATE",
            &pod("oci-worker.yaml"),
            &json!({"oci": {"enabled": true, "network": "rdma-vf"}})
        ),
        [get(json!({
            "api_version": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "name": "rdma-vf",
            "namespace": "nemo-jobs",
            "disable_cache": true,
            "field_masks": ["metadata.name"]
        }))]
    );
}

#[test]
fn no_call_for_a_pod_the_policy_does_not_wire() {
    let instance = policy().instance().unwrap();
    instance.set_cluster(Some(Cluster::default()));
    let azure = json!({"azure": {"enabled": true}, "preflight": "reject"});
    let oci = json!({"oci": {"enabled": true}, "preflight": "reject"});
    let wired = pod("azure-worker.yaml");
    let mut opted_out = wired.clone();
    opted_out["metadata"]["annotations"]["nmp.nvidia.com/disable-multi-node-networking"] =
        json!("true");
    let mut near_miss = wired.clone();
    near_miss["metadata"]["annotations"][TRIGGER] = json!("True");
    let no_gpu = volcano_worker(
        json!({TRIGGER: "true"}),
        json!({"containers": [{"name": "c", "image": "i"}]}),
    );
    for (what, operation, object, settings) in [
        (
            "not opted in",
            "CREATE",
            without_trigger(wired.clone()),
            &azure,
        ),
        ("a near miss", "CREATE", near_miss, &azure),
        ("opted out", "CREATE", opted_out, &azure),
        ("no GPU", "CREATE", no_gpu.clone(), &azure),
        ("no GPU", "CREATE", no_gpu, &oci),
        ("an UPDATE", "UPDATE", wired.clone(), &azure),
        (
            "a pod wired already",
            "CREATE",
            pod("gcp-tcpxo-worker-wired.yaml"),
            &json!({"gcp": {"enabled": true}, "preflight": "reject"}),
        ),
        (
            "preflight: skip",
            "CREATE",
            wired.clone(),
            &json!({"azure": {"enabled": true}, "preflight": "skip"}),
        ),
    ] {
        assert_eq!(calls(&instance, operation, &object, settings), [], "{what}");
    }
    // A pod of another cloud's settings refers to nothing AWS looks for: only the namespace,
    // for the hostPath volume of EFA's libraries.
    assert_eq!(
        calls(
            &instance,
            "CREATE",
            &pod("oci-worker.yaml"),
            &json!({"aws": {"enabled": true}, "preflight": "reject"})
        ),
        [namespace("nemo-jobs")]
    );
}
