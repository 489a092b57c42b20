//! The engine's tests, on pods given as trees; [`inject`] here is the engine's through the view.

use super::{Outcome, POD};
use crate::error::{Error, malformed};
use crate::json::JsonType;
use crate::multus;
use crate::ratio::Ratio;
use crate::settings::Config;
use crate::settings::config_of;
use serde_json::{Value, json};

/// The engine on a pod given as a tree: read through the view, written back on success.
const GPU_RESOURCE: &str = "nvidia.com/gpu";

pub(super) fn inject<'a>(pod: &mut Value, config: &Config<'a>) -> Result<Outcome<'a>, Error> {
    let bytes = crate::merge::tests::payload(pod);
    let mut view = crate::json::object::read_object(&bytes, &POD)?;
    let cluster = crate::cluster::Cluster::new(None, config.preflight, &crate::cluster::no_host);
    let claims = crate::claims::read(&view, config, &cluster);
    let outcome = super::inject(&mut view, config, &claims, None, &cluster)?;
    let mut out = Vec::new();
    view.write(&mut out);
    *pod = serde_json::from_slice(&out).expect("the view writes JSON");
    Ok(outcome)
}

fn azure() -> Config<'static> {
    config_of(json!({"azure": {"enabled": true, "rdmaDevicesPerGPU": 2}}))
}

fn oci() -> Config<'static> {
    config_of(json!({"oci": {"enabled": true}}))
}

pub(super) fn gpu_container(name: &str, gpus: Value) -> Value {
    json!({"name": name, "image": "trainer", "resources": {"limits": {GPU_RESOURCE: gpus}}})
}

pub(super) fn pod(containers: Vec<Value>) -> Value {
    json!({"metadata": {"name": "w"}, "spec": {"containers": containers}})
}

/// Injects, then checks that a second pass is a no-op.
pub(super) fn inject_twice<'a>(pod: &mut Value, config: &Config<'a>) -> Outcome<'a> {
    let outcome = inject(pod, config).unwrap();
    let before = pod.clone();
    let again = inject(pod, config).unwrap();
    assert!(!again.changed(), "second pass changed the pod");
    assert_eq!(*pod, before);
    outcome
}

/// `(kind, namespace, name)` of each reference.
fn references(outcome: &Outcome<'_>) -> Vec<(&'static str, Option<String>, String)> {
    outcome
        .references
        .iter()
        .map(|r| {
            let (namespace, name) = r.parts();
            (r.kind.kind, namespace.map(str::to_string), name.to_string())
        })
        .collect()
}

#[test]
fn the_references_are_what_the_pod_now_refers_to() {
    // Azure: the topology ConfigMap, in the pod's namespace; a second pass still refers to it.
    let mut p = pod(vec![gpu_container("t", json!(8))]);
    let topology = vec![("ConfigMap", None, "nccl-topo".to_string())];
    assert_eq!(references(&inject(&mut p, &azure()).unwrap()), topology);
    assert_eq!(references(&inject(&mut p, &azure()).unwrap()), topology);
    // A pod volume nccl-topo of its own: the user's, not a reference of the injection.
    let mut p = pod(vec![gpu_container("t", json!(8))]);
    p["spec"]["volumes"] = json!([{"name": "nccl-topo", "emptyDir": {}}]);
    assert_eq!(references(&inject(&mut p, &azure()).unwrap()), []);
    // No topology file: no ConfigMap.
    let mut p = pod(vec![gpu_container("t", json!(8))]);
    let none = config_of(json!({"azure": {"enabled": true, "ncclTopologyConfigMap": ""}}));
    assert_eq!(references(&inject(&mut p, &none).unwrap()), []);
    // OCI: the network once, in its own namespace or the pod's.
    let mut p = pod(vec![gpu_container("t", json!(8))]);
    let network = (
        "NetworkAttachmentDefinition",
        Some("network-operator".to_string()),
        "sriov-net".to_string(),
    );
    assert_eq!(references(&inject(&mut p, &oci()).unwrap()), [network]);
    let mut p = pod(vec![gpu_container("t", json!(8))]);
    let own = config_of(json!({"oci": {"enabled": true, "network": "rdma-vf"}}));
    assert_eq!(
        references(&inject(&mut p, &own).unwrap()),
        [("NetworkAttachmentDefinition", None, "rdma-vf".to_string())]
    );
    // No device, no attachment: no network.
    let mut p = pod(vec![gpu_container("t", json!(8))]);
    let row = json!({"oci": {"enabled": true, "instanceTypes": {"BM.X": {"devicesPerNode": 0, "gpusPerNode": 8}}}});
    p["spec"]["nodeSelector"] = json!({"node.kubernetes.io/instance-type": "BM.X"});
    assert_eq!(references(&inject(&mut p, &config_of(row)).unwrap()), []);
    // Nothing injected, nothing referred to.
    let mut p = pod(vec![json!({"name": "cpu"})]);
    assert_eq!(references(&inject(&mut p, &oci()).unwrap()), []);
    for settings in [
        json!({"aws": {"enabled": true}}),
        json!({"gcp": {"enabled": true}}),
    ] {
        let mut p = pod(vec![gpu_container("t", json!(8))]);
        assert_eq!(
            references(&inject(&mut p, &config_of(settings)).unwrap()),
            []
        );
    }
}

#[test]
fn a_device_claim_refers_to_its_template_in_place_of_the_network() {
    let claimed = |cloud: &str| {
        config_of(json!({cloud: {"enabled": true, "deviceClaim": {"template": "nics-{count}"}}}))
    };
    let template = |name: &str| vec![("ResourceClaimTemplate", None, name.to_string())];
    // AWS: 8 GPUs × efaDevicesPerGPU's default of 1 (behaviour.md §1.3), the count in the
    // name; a second pass, whose claim the pod has, still refers to it.
    let mut p = pod(vec![gpu_container("t", json!(8))]);
    assert_eq!(
        references(&inject(&mut p, &claimed("aws")).unwrap()),
        template("nics-8")
    );
    assert_eq!(
        references(&inject(&mut p, &claimed("aws")).unwrap()),
        template("nics-8")
    );
    // OCI (8 VFs per GPU by default, §1.3): the claim stands for the Multus list, so no network
    // is looked for.
    let mut p = pod(vec![gpu_container("t", json!(8))]);
    assert_eq!(
        references(&inject(&mut p, &claimed("oci")).unwrap()),
        template("nics-64")
    );
    // Azure: the topology ConfigMap stays, beside the claim's template.
    let mut p = pod(vec![gpu_container("t", json!(8))]);
    let both = vec![
        ("ConfigMap", None, "nccl-topo".to_string()),
        ("ResourceClaimTemplate", None, "nics-8".to_string()),
    ];
    assert_eq!(
        references(&inject(&mut p, &claimed("azure")).unwrap()),
        both
    );
    // A claim of the fabric's name that the user made from something else is theirs.
    let mut p = pod(vec![gpu_container("t", json!(8))]);
    p["spec"]["resourceClaims"] = json!([{"name": "efa", "resourceClaimName": "mine"}]);
    assert_eq!(references(&inject(&mut p, &claimed("aws")).unwrap()), []);
}

#[test]
fn every_cloud_is_idempotent_on_a_bare_worker() {
    for settings in [
        json!({"aws": {"enabled": true, "efaDevicesPerGPU": 4}}),
        json!({"gcp": {"enabled": true}}),
        json!({"oci": {"enabled": true}}),
    ] {
        let mut p = pod(vec![gpu_container("t", json!("8"))]);
        assert!(inject_twice(&mut p, &config_of(settings)).changed());
    }
    let mut p = pod(vec![gpu_container("t", json!(8))]);
    assert!(inject_twice(&mut p, &azure()).changed());
}

#[test]
fn no_gpu_container_means_a_warning_and_no_change() {
    for spec in [
        json!(null),
        json!({"containers": null}),
        json!({"containers": [{"name": "cpu"}]}),
    ] {
        let mut p = json!({"spec": spec});
        let before = p.clone();
        let outcome = inject(&mut p, &oci()).unwrap();
        assert!(!outcome.changed() && outcome.warnings[0].contains(GPU_RESOURCE));
        assert_eq!(p, before);
    }
    let mut zero = pod(vec![gpu_container("t", json!("0"))]);
    assert!(!inject(&mut zero, &oci()).unwrap().changed());
}

#[test]
fn a_limits_only_device_is_copied_to_requests_and_kept() {
    let mut c = gpu_container("t", json!("8"));
    c["resources"]["limits"]["rdma/hca_shared_devices_a"] = json!("1");
    let mut p = pod(vec![c]);
    inject_twice(&mut p, &azure());
    let resources = &p["spec"]["containers"][0]["resources"];
    assert_eq!(
        resources["requests"]["rdma/hca_shared_devices_a"],
        json!("1")
    );
    assert_eq!(resources["limits"]["rdma/hca_shared_devices_a"], json!("1"));
}

#[test]
fn multus_counts_the_devices_of_every_gpu_container() {
    let mut user_set = gpu_container("b", json!(1));
    user_set["resources"]["limits"]["nvidia.com/mlnxnics"] = json!(3);
    let mut p = pod(vec![
        gpu_container("a", json!("2")),
        user_set,
        json!({"name": "sidecar"}),
    ]);
    inject_twice(&mut p, &oci());
    let networks = p["metadata"]["annotations"][multus::ANNOTATION]
        .as_str()
        .unwrap();
    assert_eq!(networks.split(',').count(), 16 + 3);
    assert!(
        p["spec"]["containers"][2].get("env").is_none(),
        "non-GPU container touched"
    );
}

#[test]
fn hardening_only_where_the_api_server_accepts_it() {
    let mut privileged = gpu_container("privileged", json!(1));
    privileged["securityContext"] = json!({"privileged": true});
    let mut sys_admin = gpu_container("sys-admin", json!(1));
    sys_admin["securityContext"] = json!({"capabilities": {"add": ["cap_sys_admin"]}});
    let mut chosen = gpu_container("chosen", json!(1));
    chosen["securityContext"] =
        json!({"allowPrivilegeEscalation": true, "seccompProfile": {"type": "Unconfined"}});
    let legacy = gpu_container("legacy", json!(1));
    let plain = gpu_container("plain", json!(1));
    let mut p = pod(vec![privileged, sys_admin, chosen, legacy, plain]);
    p["metadata"]["annotations"] =
        json!({"container.seccomp.security.alpha.kubernetes.io/legacy": "runtime/default"});
    inject_twice(&mut p, &azure());
    let sc = |i: usize| p["spec"]["containers"][i]["securityContext"].clone();
    assert_eq!(sc(0).get("allowPrivilegeEscalation"), None);
    assert_eq!(sc(1).get("allowPrivilegeEscalation"), None);
    assert_eq!(
        sc(1)["capabilities"]["add"],
        json!(["cap_sys_admin", "IPC_LOCK"])
    );
    assert_eq!(sc(2)["allowPrivilegeEscalation"], json!(true));
    assert_eq!(sc(2)["seccompProfile"], json!({"type": "Unconfined"}));
    assert_eq!(sc(3).get("seccompProfile"), None);
    assert_eq!(sc(3)["allowPrivilegeEscalation"], json!(false));
    assert_eq!(sc(4)["seccompProfile"], json!({"type": "RuntimeDefault"}));

    let mut pod_level = pod(vec![gpu_container("t", json!(1))]);
    pod_level["spec"]["securityContext"] =
        json!({"seccompProfile": {"type": "Localhost", "localhostProfile": "x.json"}});
    inject_twice(&mut pod_level, &azure());
    assert_eq!(
        pod_level["spec"]["containers"][0]["securityContext"].get("seccompProfile"),
        None
    );
}

#[test]
fn a_conflicting_volume_is_kept_and_not_mounted() {
    let mut p = pod(vec![gpu_container("t", json!(1))]);
    p["spec"]["volumes"] = json!([{"name": "nccl-topo", "configMap": {"name": "my-topology"}}]);
    let outcome = inject_twice(&mut p, &azure());
    assert_eq!(outcome.warnings.len(), 1);
    assert!(outcome.warnings[0].contains("\"nccl-topo\""));
    let mounts = p["spec"]["containers"][0]["volumeMounts"]
        .as_array()
        .unwrap();
    assert!(mounts.iter().all(|m| m["name"] != "nccl-topo"));
    assert_eq!(
        p["spec"]["volumes"][0],
        json!({"name": "nccl-topo", "configMap": {"name": "my-topology"}})
    );
    assert_eq!(
        p["spec"]["volumes"].as_array().unwrap().len(),
        2,
        "nv-shared-memory added, nothing else"
    );
}

#[test]
fn wrong_types_are_rejections_that_name_the_path() {
    let mut c = gpu_container("t", json!(1));
    c["env"] = json!("FOO=1");
    let error = inject(&mut pod(vec![c]), &oci()).unwrap_err();
    assert_eq!(error, malformed("spec.containers[0].env", JsonType::List));
    assert!(
        error
            .to_string()
            .starts_with("spec.containers[0].env must be a list")
    );

    let error = inject(&mut json!({"spec": {"containers": [7]}}), &oci()).unwrap_err();
    assert_eq!(error, malformed("spec.containers[0]", JsonType::Object));
    let error = inject(&mut pod(vec![gpu_container("t", json!("1500m"))]), &oci()).unwrap_err();
    assert!(
        matches!(&error, Error::Quantity { container, value, .. } if container == "t" && value == "\"1500m\"")
    );
}

#[test]
fn windows_pods_are_left_alone() {
    let mut p = pod(vec![gpu_container("t", json!(1))]);
    p["spec"]["os"] = json!({"name": "windows"});
    let before = p.clone();
    let outcome = inject(&mut p, &azure()).unwrap();
    assert!(!outcome.changed() && outcome.warnings[0].contains("Windows"));
    assert_eq!(p, before);
}

#[test]
fn a_device_count_that_overflows_is_refused() {
    let big = json!(u64::MAX / 2);
    let error = inject(&mut pod(vec![gpu_container("t", big)]), &oci()).unwrap_err();
    assert!(matches!(error, Error::Overflow { per_gpu, .. } if per_gpu == Ratio::whole(8)));
}

/// A launcher that runs a rank (behaviour.md §3.12): its first container, a GPU container, gains
/// the fabric's env and then only the launcher's entries it lacks, each once; a first container
/// without GPUs gains every entry, whatever a later GPU container gained.
#[test]
fn a_launcher_that_runs_a_rank_gains_each_variable_once() {
    use crate::mpi::{OPEN_MPI, Passing};
    use crate::profile::var;
    let config = azure();
    let passing = Passing {
        job: "jobs/nccl".into(),
        fabric: "infiniband",
        mpi: &OPEN_MPI,
        env: vec![
            var!("OMPI_MCA_coll_hcoll_enable", "0"),
            var!("OMPI_MCA_orte_launch_agent", "env X=1 orted"),
        ],
        carried: vec!["X".into()],
        agents: true,
        kept: Vec::new(),
        own_agents: Vec::new(),
        left_out: Vec::new(),
    };
    let run = |pod: &mut Value| {
        let bytes = crate::merge::tests::payload(pod);
        let mut view = crate::json::object::read_object(&bytes, &POD).unwrap();
        let cluster =
            crate::cluster::Cluster::new(None, config.preflight, &crate::cluster::no_host);
        let claims = crate::claims::read(&view, &config, &cluster);
        let outcome = super::inject(&mut view, &config, &claims, Some(&passing), &cluster).unwrap();
        let mut out = Vec::new();
        view.write(&mut out);
        *pod = serde_json::from_slice(&out).unwrap();
        outcome
    };
    let names = |container: &Value| -> Vec<String> {
        let env = container["env"].as_array().cloned().unwrap_or_default();
        env.iter()
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect()
    };
    let mut rank = pod(vec![gpu_container("launcher", json!(8))]);
    let outcome = run(&mut rank);
    let env = names(&rank["spec"]["containers"][0]);
    let once = |name: &str| env.iter().filter(|n| *n == name).count() == 1;
    assert!(
        once("OMPI_MCA_coll_hcoll_enable") && once("OMPI_MCA_orte_launch_agent"),
        "{env:?}"
    );
    assert_eq!(outcome.added.containers.len(), 1);
    let record = outcome.record.unwrap();
    assert!(
        record.contains(r#"\"env\":[\"OMPI_MCA_orte_launch_agent\"]"#),
        "{record}"
    );

    let mut beside = pod(vec![
        json!({"name": "launcher"}),
        gpu_container("gpu", json!(8)),
    ]);
    let outcome = run(&mut beside);
    assert_eq!(
        names(&beside["spec"]["containers"][0]),
        ["OMPI_MCA_coll_hcoll_enable", "OMPI_MCA_orte_launch_agent"]
    );
    let gained: Vec<&str> = outcome
        .added
        .containers
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(gained, ["launcher", "gpu"]);
}
