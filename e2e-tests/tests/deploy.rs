//! Loads every shipped manifest under `deploy/` (every YAML document of every file) and the
//! example settings, and holds them to the built module and to `policy-metadata.yml`; each
//! cloud's vendor settings file is held to its policy manifests too.

mod common;

use std::path::{Path, PathBuf};

use common::{cargo_version, policy_metadata, repo_root, string, yaml, yaml_documents};
use e2e_tests::{Instance, admission_request, pod_kind, policy};
// The trigger annotations when the settings do not name them.
use fixtures::TRIGGERS as DEFAULT_TRIGGERS;
use serde_json::{Value, json};

const CLOUDS: [&str; 5] = ["aws", "azure", "gcp", "oci", "rdma"];
/// The ConfigMap key a `PolicyServer`'s `verificationConfig` is read from (the CRD's docs).
const VERIFICATION_KEY: &str = "verification-config";

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    e2e_tests::yaml_files(dir).unwrap_or_else(|e| panic!("{e:#}"))
}

struct Document {
    file: String,
    value: Value,
}

fn deploy_documents() -> Vec<Document> {
    let root = repo_root();
    let files = yaml_files(&root.join("deploy"));
    assert!(!files.is_empty(), "no YAML under deploy/");
    files
        .iter()
        .flat_map(|path| {
            let file = path.strip_prefix(&root).unwrap().display().to_string();
            yaml_documents(path).into_iter().map(move |value| Document {
                file: file.clone(),
                value,
            })
        })
        .collect()
}

fn settings_error(instance: &Instance, settings: &Value) -> Option<String> {
    let answer = instance.validate_settings(settings).unwrap();
    (!answer.valid).then(|| answer.message.unwrap_or_default())
}

/// The cloud directory a file is in (`deploy/aws/...` → `aws`).
fn cloud_of(file: &str) -> Option<&'static str> {
    CLOUDS
        .into_iter()
        .find(|cloud| file.starts_with(&format!("deploy/{cloud}/")))
}

/// The renders of `make manifests` under deploy/ (`deploy/<cloud>/manifests.yaml` and its
/// subfolders'), each holding one injector, its auditor, their PolicyServer and RBAC.
fn render_files(documents: &[Document]) -> Vec<&str> {
    let mut files: Vec<&str> = documents
        .iter()
        .map(|d| d.file.as_str())
        .filter(|f| f.ends_with("/manifests.yaml"))
        .collect();
    files.dedup();
    files
}

/// What a policy manifest holds beside its settings, and what its checks need.
struct Expected {
    rules: Value,
    module_url: String,
    version: String,
    pod: Value,
}

/// Why the policy server or the cluster would not run this policy manifest as meant, with these
/// settings in it (the manifest's own, or a vendor file in their place).
fn policy_problems(
    instance: &Instance,
    expected: &Expected,
    file: &str,
    value: &Value,
    settings: &Value,
) -> Vec<String> {
    let mut problems = Vec::new();
    let spec = &value["spec"];
    if value["apiVersion"] != "policies.kubewarden.io/v1" {
        problems.push(format!("apiVersion is {}", value["apiVersion"]));
    }

    // The settings load: the policy server refuses to start on invalid settings.
    if let Some(message) = settings_error(instance, settings) {
        problems.push(format!(
            "spec.settings refused by validate_settings: {message}"
        ));
        return problems;
    }
    if let Some(cloud) = cloud_of(file)
        && settings[cloud]["enabled"] != true
    {
        problems.push(format!(
            "is under deploy/{cloud}/ but does not enable {cloud}"
        ));
    }

    let auditor = is_auditor(value);
    if auditor {
        // The auditor (README "Operating"): refuses, never patches, never blocks, and is sent
        // every stored pod by the audit scanner.
        if value["kind"] != "ClusterAdmissionPolicy" {
            problems.push("an auditor is a ClusterAdmissionPolicy".into());
        }
        for (field, want) in [
            ("mutating", json!(false)),
            ("mode", json!("monitor")),
            ("backgroundAudit", json!(true)),
        ] {
            if spec[field] != want {
                problems.push(format!("the auditor's spec.{field} is not {want}"));
            }
        }
    } else {
        if spec["mutating"] != true {
            problems.push(
                "spec.mutating is not true: the policy server would reject every mutation".into(),
            );
        }
        if !(spec["mode"].is_null() || spec["mode"] == "protect") {
            problems.push(format!(
                "spec.mode is {}: monitor mode drops every patch",
                spec["mode"]
            ));
        }
        // The audit scanner ignores patches: it would report every pod of the injector `pass`.
        if spec["backgroundAudit"] != false {
            problems.push("the injector's spec.backgroundAudit is not false".into());
        }
    }
    if spec["rules"] != expected.rules {
        problems.push(format!(
            "spec.rules {} differ from policy-metadata.yml's {}",
            spec["rules"], expected.rules
        ));
    }
    let module = spec["module"].as_str().unwrap_or_default();
    let tag = module.rsplit_once(':').map(|(_, tag)| tag);
    if tag != Some(&format!("v{}", expected.version)) {
        problems.push(format!(
            "spec.module {module:?} is not tagged v{} (Cargo.toml)",
            expected.version
        ));
    }
    if module != expected.module_url {
        problems.push(format!(
            "spec.module is {module:?}, not {:?}",
            expected.module_url
        ));
    }
    match value["kind"].as_str() {
        Some("AdmissionPolicy") if value["metadata"]["namespace"].as_str().is_none() => {
            problems.push("has no metadata.namespace".into())
        }
        Some("ClusterAdmissionPolicy") if !spec["namespaceSelector"].is_object() => {
            problems.push("has no namespaceSelector: it would act in every namespace".into())
        }
        _ => {}
    }

    // matchConditions must let every trigger annotation through: the API server never sends the
    // policy a pod they leave out.
    let triggers: Vec<&str> = match &settings["triggerAnnotation"] {
        Value::String(key) => vec![key.as_str()],
        Value::Array(keys) => keys.iter().filter_map(Value::as_str).collect(),
        _ => DEFAULT_TRIGGERS.to_vec(),
    };
    let conditions = spec["matchConditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for trigger in triggers {
        if !conditions.is_empty()
            && !conditions.iter().any(|condition| {
                condition["expression"]
                    .as_str()
                    .is_some_and(|e| e.contains(&format!("'{trigger}'")))
            })
        {
            problems.push(format!(
                "no matchConditions expression names the trigger annotation {trigger}"
            ));
        }
    }
    if auditor && spec["failurePolicy"] != "Ignore" {
        problems.push(
            "the auditor's failurePolicy is not Ignore: its outage would hold up pods".into(),
        );
    }
    if conditions.is_empty() && spec["failurePolicy"] == "Fail" {
        problems.push("failurePolicy Fail without matchConditions holds up every pod".into());
    }

    // With these settings, the example worker pod is mutated, or by the auditor refused for
    // what it lacks.
    let answer = instance
        .validate(
            &admission_request("CREATE", &pod_kind(), &expected.pod),
            settings,
        )
        .unwrap();
    let lacks = answer
        .message
        .as_deref()
        .is_some_and(|m| m.starts_with("multi-node networking: this pod lacks the "));
    if auditor && (answer.accepted || !lacks || settings["validateOnly"] != true) {
        problems.push(format!(
            "the auditor does not refuse the example pod for what it lacks: accepted {}, {:?}",
            answer.accepted, answer.message
        ));
    }
    if !auditor && (!answer.accepted || answer.mutated_object.is_none()) {
        problems.push(format!(
            "the example pod is not mutated with these settings: accepted {}, {:?}",
            answer.accepted, answer.message
        ));
    }
    problems
}

/// The auditor of a cloud (README "Operating"): a policy whose settings turn validateOnly on.
fn is_auditor(value: &Value) -> bool {
    value["spec"]["settings"]["validateOnly"] == true
}

fn expected() -> Expected {
    let version = cargo_version();
    let metadata = policy_metadata();
    let oci_url = string(
        &metadata,
        "/annotations/io.kubewarden.policy.ociUrl",
        "policy-metadata.yml",
    );
    Expected {
        rules: metadata["rules"].clone(),
        module_url: format!("registry://{oci_url}:v{version}"),
        version,
        pod: yaml(&repo_root().join("examples/pod.yaml")),
    }
}

/// The manifests that are policies, with their kind.
fn policy_documents(documents: &[Document]) -> Vec<(&Document, &str)> {
    documents
        .iter()
        .filter_map(|document| {
            let kind = document.value["kind"].as_str().unwrap_or_default();
            matches!(kind, "AdmissionPolicy" | "ClusterAdmissionPolicy").then_some((document, kind))
        })
        .collect()
}

#[test]
fn every_policy_manifest_is_loadable_and_agrees_with_the_metadata() {
    let expected = expected();
    let instance = policy().instance().unwrap();
    let documents = deploy_documents();
    let mut failures = Vec::new();
    for Document { file, value } in &documents {
        let kind = value["kind"].as_str().unwrap_or_default();
        if !matches!(
            kind,
            "AdmissionPolicy"
                | "ClusterAdmissionPolicy"
                | "ConfigMap"
                | "PolicyServer"
                | "ResourceClaimTemplate"
                | "ClusterRole"
                | "ClusterRoleBinding"
        ) {
            failures.push(format!("{file}: unexpected kind {kind:?}"));
        }
    }
    let policies = policy_documents(&documents);
    for (Document { file, value }, kind) in &policies {
        let name = value["metadata"]["name"].as_str().unwrap_or_default();
        let settings = value["spec"]
            .get("settings")
            .cloned()
            .unwrap_or_else(|| json!({}));
        for problem in policy_problems(&instance, &expected, file, value, &settings) {
            failures.push(format!("{file} ({kind} {name}): {problem}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} problems in deploy/:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Each render: one injector and its auditor.
    let renders = render_files(&documents);
    assert!(
        renders.len() >= CLOUDS.len(),
        "one render per cloud at least"
    );
    for file in &renders {
        let in_render = |auditor: bool| -> Vec<&Value> {
            policies
                .iter()
                .filter(|(d, k)| {
                    *k == "ClusterAdmissionPolicy"
                        && d.file == *file
                        && is_auditor(&d.value) == auditor
                })
                .map(|(d, _)| &d.value)
                .collect()
        };
        let (injectors, auditors) = (in_render(false), in_render(true));
        let ([injector], [auditor]) = (injectors.as_slice(), auditors.as_slice()) else {
            panic!("{file} needs one ClusterAdmissionPolicy injecting and one auditing");
        };
        // The same policy, but for what makes it the auditor.
        let mut same = auditor["spec"].clone();
        for field in [
            "mode",
            "mutating",
            "backgroundAudit",
            "failurePolicy",
            "timeoutSeconds",
        ] {
            same[field] = injector["spec"][field].clone();
        }
        same["settings"]
            .as_object_mut()
            .expect("settings")
            .remove("validateOnly");
        assert_eq!(
            same, injector["spec"],
            "{file}: the auditor is not the injector with validateOnly, monitor mode and backgroundAudit"
        );
        assert_ne!(
            auditor["metadata"]["name"], injector["metadata"]["name"],
            "{file}: the auditor and the injector share a name"
        );
    }
    for cloud in CLOUDS {
        for kind in ["AdmissionPolicy", "ClusterAdmissionPolicy"] {
            assert!(
                policies
                    .iter()
                    .any(|(document, k)| *k == kind && cloud_of(&document.file) == Some(cloud)),
                "deploy/{cloud}/ has no {kind}"
            );
        }
    }
}

/// What the policy may read on each cloud: what its injection may refer to (behaviour.md §9) and
/// the claims of GPUs (§3.10): `(apiVersion, kind, API group, resource)`, the resource as RBAC
/// names it.
fn preflight_kinds(
    cloud: &str,
) -> &'static [(&'static str, &'static str, &'static str, &'static str)] {
    // A deviceClaim's template (behaviour.md §3.8) may be referred to on every cloud.
    const CLAIM_TEMPLATE: (&str, &str, &str, &str) = (
        "resource.k8s.io/v1",
        "ResourceClaimTemplate",
        "resource.k8s.io",
        "resourceclaimtemplates",
    );
    // A Multus network (behaviour.md §3.4, §3.9).
    const NETWORK: (&str, &str, &str, &str) = (
        "k8s.cni.cncf.io/v1",
        "NetworkAttachmentDefinition",
        "k8s.cni.cncf.io",
        "network-attachment-definitions",
    );
    // The claims pods take their GPUs by (behaviour.md §3.10), on every cloud: their templates,
    // and the claims made ahead.
    const RESOURCE_CLAIM: (&str, &str, &str, &str) = (
        "resource.k8s.io/v1",
        "ResourceClaim",
        "resource.k8s.io",
        "resourceclaims",
    );
    // The ComputeDomain of a multi-node NVLink pod (behaviour.md §3.11), on every cloud.
    const COMPUTE_DOMAIN: (&str, &str, &str, &str) = (
        "resource.nvidia.com/v1beta1",
        "ComputeDomain",
        "resource.nvidia.com",
        "computedomains",
    );
    // An MPIJob launcher's job (behaviour.md §3.12), on every cloud.
    const MPI_JOB: (&str, &str, &str, &str) =
        ("kubeflow.org/v2beta1", "MPIJob", "kubeflow.org", "mpijobs");
    // And on every cloud the pod's namespace, for its Pod Security level (behaviour.md §11).
    const NAMESPACE: (&str, &str, &str, &str) = ("v1", "Namespace", "", "namespaces");
    // The ConfigMaps GPU containers take env from (behaviour.md §4), on every cloud; Azure's
    // topology too.
    const CONFIG_MAP: (&str, &str, &str, &str) = ("v1", "ConfigMap", "", "configmaps");
    match cloud {
        "oci" => &[
            CONFIG_MAP,
            NETWORK,
            CLAIM_TEMPLATE,
            RESOURCE_CLAIM,
            COMPUTE_DOMAIN,
            MPI_JOB,
            NAMESPACE,
        ],
        // No DRA driver is documented for the `rdma` block's fabric: no deviceClaim, but the
        // templates and claims of the pods' GPUs.
        "rdma" => &[
            CONFIG_MAP,
            NETWORK,
            CLAIM_TEMPLATE,
            RESOURCE_CLAIM,
            COMPUTE_DOMAIN,
            MPI_JOB,
            NAMESPACE,
        ],
        _ => &[
            CONFIG_MAP,
            CLAIM_TEMPLATE,
            RESOURCE_CLAIM,
            COMPUTE_DOMAIN,
            MPI_JOB,
            NAMESPACE,
        ],
    }
}

/// The ServiceAccount of the policy servers in `kubewarden` that the preflight's RBAC binds: the
/// Helm charts' default PolicyServer's, which this policy's own names.
const POLICY_SERVER_ACCOUNT: &str = "policy-server";

/// Each cloud's ClusterAdmissionPolicy lists in `spec.contextAwareResources` exactly what its
/// injection may refer to, each listed in policy-metadata.yml, and the render it is in
/// (`deploy/<cloud>/.../manifests.yaml`) grants the policy server get, list and watch of exactly
/// those, bound to its ServiceAccount; an AdmissionPolicy lists none (it may not read the cluster).
#[test]
fn the_preflights_resources_agree_with_the_metadata_and_the_rbac() {
    let metadata = policy_metadata();
    let declared = metadata["contextAwareResources"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let documents = deploy_documents();
    let mut failures = Vec::new();
    let mut used = Vec::new();
    for (Document { file, value }, kind) in policy_documents(&documents) {
        let Some(cloud) = cloud_of(file) else {
            continue;
        };
        let listed = value["spec"]["contextAwareResources"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let want: Vec<Value> = match kind {
            "ClusterAdmissionPolicy" => preflight_kinds(cloud)
                .iter()
                .map(|(api_version, kind, _, _)| json!({"apiVersion": api_version, "kind": kind}))
                .collect(),
            _ => Vec::new(),
        };
        if listed != want {
            failures.push(format!(
                "{file}: spec.contextAwareResources is {listed:?}, the injection refers to {want:?}"
            ));
        }
        for resource in &listed {
            if !declared.contains(resource) {
                failures.push(format!(
                    "{file}: {resource} is not in policy-metadata.yml's contextAwareResources"
                ));
            }
            used.push(resource.clone());
        }
    }
    for resource in &declared {
        if !used.contains(resource) {
            failures.push(format!(
                "policy-metadata.yml lists {resource}, which no ClusterAdmissionPolicy of deploy/ does"
            ));
        }
    }
    for file in render_files(&documents) {
        let cloud = cloud_of(file).expect("renders are under deploy/<cloud>/");
        let rbac: Vec<&Value> = documents
            .iter()
            .filter(|d| d.file == file)
            .map(|d| &d.value)
            .collect();
        let kinds = preflight_kinds(cloud);
        if kinds.is_empty() {
            if !rbac.is_empty() {
                failures.push(format!(
                    "{file}: {cloud} refers to nothing the policy looks for"
                ));
            }
            continue;
        }
        let roles: Vec<&&Value> = rbac.iter().filter(|v| v["kind"] == "ClusterRole").collect();
        let [role] = roles.as_slice() else {
            failures.push(format!("{file}: needs exactly one ClusterRole"));
            continue;
        };
        let want: Vec<Value> = kinds
            .iter()
            .map(|(_, _, group, resource)| {
                json!({"apiGroups": [group], "resources": [resource], "verbs": ["get"]})
            })
            .collect();
        if role["rules"] != json!(want) {
            failures.push(format!(
                "{file}: the ClusterRole's rules are {}, not {}",
                role["rules"],
                json!(want)
            ));
        }
        let bound = rbac.iter().any(|binding| {
            binding["kind"] == "ClusterRoleBinding"
                && binding["roleRef"] == json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role["metadata"]["name"]})
                && binding["subjects"]
                    == json!([{"kind": "ServiceAccount", "name": POLICY_SERVER_ACCOUNT, "namespace": "kubewarden"}])
        });
        if !bound {
            failures.push(format!(
                "{file}: no ClusterRoleBinding of the ClusterRole to the default PolicyServer's ServiceAccount kubewarden/policy-server"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The vendor files of a cloud: those that enable its block (`gcp-rdma.yaml` and `gcp-tcpx.yaml`
/// GCP's; `coreweave.yaml`, `spectrum-x.yaml` and the others beyond the four clouds the `rdma`
/// block's).
fn vendor_files(root: &Path, cloud: &str) -> Vec<String> {
    let mut files: Vec<String> = yaml_files(&root.join("examples/settings/vendor"))
        .iter()
        .filter(|path| yaml(path)[cloud]["enabled"] == true)
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?;
            Some(format!("examples/settings/vendor/{name}"))
        })
        .collect();
    files.sort();
    files
}

/// deploy/README.md tells users to put a vendor file under `spec.settings` instead of the
/// chart's values: every policy manifest must still hold with each of its cloud's.
#[test]
fn every_vendor_file_fits_in_its_clouds_policy_manifests() {
    let expected = expected();
    let instance = policy().instance().unwrap();
    let documents = deploy_documents();
    let root = repo_root();
    let mut failures = Vec::new();
    let mut tried = 0;
    let mut manifests = 0;
    for (Document { file, value }, kind) in policy_documents(&documents) {
        let Some(cloud) = cloud_of(file) else {
            continue;
        };
        manifests += 1;
        let vendors = vendor_files(&root, cloud);
        assert!(
            !vendors.is_empty(),
            "no file of examples/settings/vendor/ enables {cloud}"
        );
        for vendor in vendors {
            let mut settings = yaml(&root.join(&vendor));
            if is_auditor(value) {
                settings["validateOnly"] = json!(true);
            }
            tried += 1;
            for problem in policy_problems(&instance, &expected, file, value, &settings) {
                failures.push(format!("{file} ({kind}) with {vendor}: {problem}"));
            }
        }
    }
    assert_eq!(
        manifests,
        CLOUDS.len() + 2 * render_files(&documents).len(),
        "one AdmissionPolicy per cloud, and two ClusterAdmissionPolicies (the injector, the auditor) per render"
    );
    assert!(
        tried >= 3 * (CLOUDS.len() + 2),
        "the GCP fabric files gcp-rdma.yaml and gcp-tcpx.yaml were not found ({tried} tried)"
    );
    assert!(
        vendor_files(&root, "rdma").len() >= 6,
        "the Network Operator's and the neoclouds' files enable rdma"
    );
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn matchconditions_use_the_default_trigger_annotations() {
    // The shipped examples keep the default triggers; their expressions must admit each: a pod
    // opted in by NeMo Helix's nhx. key alone must reach the policy as one with nmp.'s does.
    let mut seen = 0;
    for Document { file, value } in deploy_documents() {
        let Some(conditions) = value["spec"]["matchConditions"].as_array() else {
            continue;
        };
        seen += 1;
        let expressions: Vec<&str> = conditions
            .iter()
            .filter_map(|c| c["expression"].as_str())
            .collect();
        for trigger in DEFAULT_TRIGGERS {
            assert!(
                expressions
                    .iter()
                    .any(|e| e.contains(&format!("'{trigger}' in object.metadata.annotations"))),
                "{file}: matchConditions {expressions:?} do not admit {trigger}"
            );
        }
        // Every condition must hold for the webhook to be called: the keys are alternatives
        // within one expression, never one condition each.
        for trigger in DEFAULT_TRIGGERS {
            let alone: Vec<&str> = expressions
                .iter()
                .copied()
                .filter(|e| !e.contains(&format!("'{trigger}'")))
                .filter(|e| e.contains("enable-multi-node-networking"))
                .collect();
            assert!(
                alone.is_empty(),
                "{file}: matchConditions {alone:?} would leave out pods opted in by {trigger} alone"
            );
        }
    }
    assert!(seen > 0, "no manifest in deploy/ has matchConditions");
}

#[test]
fn every_configmap_holds_an_nccl_topology() {
    let documents = deploy_documents();
    let mut topologies = 0;
    for Document { file, value } in &documents {
        // The other ConfigMap is the policy server's verification config.
        if value["kind"] != "ConfigMap" || value["data"].get(VERIFICATION_KEY).is_some() {
            continue;
        }
        topologies += 1;
        let name = value["metadata"]["name"].as_str().unwrap_or_default();
        let xml = value["data"]["nccl-topo.xml"]
            .as_str()
            .unwrap_or_else(|| panic!("{file}: ConfigMap {name} has no data key nccl-topo.xml"));
        let xml = xml.trim();
        assert!(
            xml.starts_with("<system") && xml.ends_with("</system>"),
            "{file}: nccl-topo.xml is not an NCCL topology (<system ...>...</system>)"
        );
        assert_eq!(
            xml.matches("<system").count(),
            1,
            "{file}: one <system> root"
        );
        assert!(xml.contains("<cpu"), "{file}: no <cpu> in the topology");
        // Both Azure sizes: 8 GPUs (PCI class 0x0302) and 8 InfiniBand NICs (0x0207).
        let gpus = xml.matches("class=\"0x030200\"").count();
        let nics = xml.matches("class=\"0x020700\"").count();
        assert!(
            gpus == 8 && nics == 8,
            "{file}: {gpus} GPUs and {nics} InfiniBand NICs, expected 8 and 8"
        );

        // The Azure policies in the same namespace mount it by this name.
        let namespace = &value["metadata"]["namespace"];
        for Document { file: f, value: p } in &documents {
            let settings = &p["spec"]["settings"];
            if p["kind"] == "AdmissionPolicy"
                && settings["azure"]["enabled"] == true
                && &p["metadata"]["namespace"] == namespace
            {
                let wanted = settings["azure"]["ncclTopologyConfigMap"]
                    .as_str()
                    .unwrap_or("nccl-topo");
                assert_eq!(wanted, name, "{f} mounts {wanted}, {file} is {name}");
            }
        }
    }
    assert!(topologies > 0, "no topology ConfigMap under deploy/");
}

#[test]
fn every_example_settings_file_is_valid() {
    let root = repo_root();
    let files = yaml_files(&root.join("examples/settings"));
    assert!(!files.is_empty(), "no examples/settings/*.yaml");
    let instance = policy().instance().unwrap();
    for path in files {
        let settings = yaml(&path);
        if let Some(message) = settings_error(&instance, &settings) {
            panic!(
                "{}: refused by validate_settings: {message}",
                path.display()
            );
        }
    }
}

/// deploy/policy-server: a PolicyServer whose verificationConfig names a ConfigMap in
/// Kubewarden's verification config format (`apiVersion: v1`, `allOf` of `kind: pubKey`
/// entries) holding the project's public key, `cosign.pub`, as `publish verify` reads it (that
/// it is a key cosign and the policy server read is publish's test, beside the reader).
#[test]
fn the_verified_policy_server_checks_modules_with_the_projects_key() {
    let documents = deploy_documents();
    let project_key = common::read(&repo_root().join("cosign.pub"));
    // The servers that verify: `verified`, and any other that names a verification config.
    let servers: Vec<&Document> = documents
        .iter()
        .filter(|d| {
            d.value["kind"] == "PolicyServer" && d.value["spec"]["verificationConfig"].is_string()
        })
        .collect();
    assert!(
        servers
            .iter()
            .any(|s| s.value["metadata"]["name"] == "verified"),
        "no PolicyServer `verified` with a verificationConfig under deploy/"
    );
    for server in servers {
        let name = server.value["spec"]["verificationConfig"]
            .as_str()
            .unwrap_or_default();
        let config_map = documents
            .iter()
            .find(|d| d.value["kind"] == "ConfigMap" && d.value["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("{}: no ConfigMap {name} under deploy/", server.file));
        // The controller runs policy servers, and reads their ConfigMaps, in its namespace.
        assert_eq!(
            config_map.value["metadata"]["namespace"], "kubewarden",
            "{}",
            config_map.file
        );
        let text = config_map.value["data"][VERIFICATION_KEY]
            .as_str()
            .unwrap_or_else(|| panic!("{}: no data key {VERIFICATION_KEY}", config_map.file));
        let config: Value = serde_yaml::from_str(text).unwrap();
        assert_eq!(config["apiVersion"], "v1", "{}", config_map.file);
        let all_of = config["allOf"].as_array().expect("allOf is a list");
        assert!(!all_of.is_empty(), "{}: allOf is empty", config_map.file);
        for entry in all_of {
            assert_eq!(entry["kind"], "pubKey", "{}", config_map.file);
            let key = entry["key"].as_str().expect("a pubKey entry has a key");
            assert_eq!(
                key, project_key,
                "{}: the key is not cosign.pub",
                config_map.file
            );
        }
    }
}

/// The built-in rows of behaviour.md §8 a DRA vendor file serves, with their GPUs: what a pod can
/// name, and so what the template names it can be given are.
/// A vendor file, its cloud, and the machines (instance type, GPUs) it serves.
type DraRows = (&'static str, &'static str, &'static [(&'static str, u64)]);

const DRA_ROWS: &[DraRows] = &[
    (
        "examples/settings/vendor/aws-dra.yaml",
        "aws",
        &[
            ("p4d.24xlarge", 8),
            ("p4de.24xlarge", 8),
            ("p5.48xlarge", 8),
            ("p5e.48xlarge", 8),
            ("p5en.48xlarge", 8),
            ("p6-b200.48xlarge", 8),
            ("p6-b300.48xlarge", 8),
            ("p5.4xlarge", 1),
            ("p6e-gb200.36xlarge", 4),
            ("ml.p4d.24xlarge", 8),
            ("ml.p5.48xlarge", 8),
            ("ml.p5en.48xlarge", 8),
            ("ml.p6-b300.48xlarge", 8),
            ("ml.p5.4xlarge", 1),
            // A machine the table does not know: efaDevicesPerGPU.
            ("", 8),
        ],
    ),
    (
        "examples/settings/vendor/gcp-dranet.yaml",
        "gcp",
        &[
            ("a3-ultragpu-8g", 8),
            ("a4-highgpu-8g", 8),
            ("a4x-highgpu-4g", 4),
            ("a4x-maxgpu-4g-metal", 4),
            ("", 8),
        ],
    ),
];

/// Every ResourceClaimTemplate name a DRA vendor file can give a pod (each built-in row it
/// serves, each GPU count from 1 to the node's) is a template shipped under `deploy/<cloud>/`:
/// a missing one leaves the pod Pending. The names are read from the module's answers.
#[test]
fn every_claim_template_the_dra_vendor_files_name_is_shipped() {
    let instance = policy().instance().unwrap();
    let documents = deploy_documents();
    let root = repo_root();
    let mut missing = Vec::new();
    let mut named = 0;
    for (vendor, cloud, rows) in DRA_ROWS {
        let settings = yaml(&root.join(vendor));
        let shipped: Vec<&str> = documents
            .iter()
            .filter(|d| {
                d.value["kind"] == "ResourceClaimTemplate"
                    && d.file.starts_with(&format!("deploy/{cloud}/"))
            })
            .filter_map(|d| d.value["metadata"]["name"].as_str())
            .collect();
        for (machine, gpus) in *rows {
            for g in 1..=*gpus {
                let mut pod = yaml(&root.join("examples/pod.yaml"));
                pod["spec"]["containers"][0]["resources"] = json!({
                    "limits": {"nvidia.com/gpu": g.to_string()},
                    "requests": {"nvidia.com/gpu": g.to_string()}
                });
                if !machine.is_empty() {
                    pod["spec"]["nodeSelector"] =
                        json!({"node.kubernetes.io/instance-type": machine});
                }
                let answer = instance
                    .validate(&admission_request("CREATE", &pod_kind(), &pod), &settings)
                    .unwrap();
                let mutated = answer
                    .mutated_object
                    .unwrap_or_else(|| panic!("{vendor}: {machine} × {g}: {:?}", answer.warnings));
                let claims = mutated["spec"]["resourceClaims"].as_array().cloned();
                let template = claims
                    .iter()
                    .flatten()
                    .find_map(|c| c["resourceClaimTemplateName"].as_str().map(String::from))
                    .unwrap_or_else(|| panic!("{vendor}: {machine} × {g}: no claim"));
                named += 1;
                if !shipped.contains(&template.as_str()) {
                    missing.push(format!("{vendor}: {machine} × {g} GPUs: {template}"));
                }
            }
        }
    }
    assert!(named > 100, "only {named} pods tried");
    assert!(
        missing.is_empty(),
        "templates not under deploy/:\n{}",
        missing.join("\n")
    );
}

/// The policy's own PolicyServer (deploy/README.md, "Its own PolicyServer"): a policy server
/// exits when one of its policies' settings are invalid, so every ClusterAdmissionPolicy under
/// deploy/ runs on a server of its own, which exists there, runs the same image as the other
/// servers of deploy/, and keeps a replica through a drain (failurePolicy: Fail refuses
/// opted-in pods while none answers). Every AdmissionPolicy names `default` or that server.
#[test]
fn cluster_policies_run_on_their_own_policy_server() {
    const OWN: &str = "multinode-networking";
    let documents = deploy_documents();
    let server = |name: &str| {
        documents
            .iter()
            .find(|d| d.value["kind"] == "PolicyServer" && d.value["metadata"]["name"] == name)
    };
    let renders = render_files(&documents);
    for file in &renders {
        assert!(
            documents.iter().any(|d| d.file == *file
                && d.value["kind"] == "PolicyServer"
                && d.value["metadata"]["name"] == OWN),
            "{file}: no PolicyServer {OWN}: its policies name it"
        );
    }
    // The renders' servers are one text, held equal to the renders by tests/manifests.rs.
    let own = server(OWN).unwrap_or_else(|| panic!("no PolicyServer {OWN} under deploy/"));
    assert_eq!(
        own.value["apiVersion"], "policies.kubewarden.io/v1",
        "{}",
        own.file
    );
    let spec = &own.value["spec"];
    assert_eq!(
        spec["image"],
        server("verified").expect("the verified server").value["spec"]["image"],
        "{}: another image than verified-policy-server.yaml's",
        own.file
    );
    // The account the preflight's RBAC binds: the controller copies it into the Deployment as
    // it is, and without it the pods would run as the namespace's `default`.
    assert_eq!(
        spec["serviceAccountName"], POLICY_SERVER_ACCOUNT,
        "{}: spec.serviceAccountName must be the account the render's RBAC binds",
        own.file
    );
    let replicas = spec["replicas"].as_u64().unwrap_or(1);
    assert!(replicas >= 2, "{}: {replicas} replica(s)", own.file);
    assert!(
        spec["minAvailable"]
            .as_u64()
            .is_some_and(|n| n >= 1 && n < replicas),
        "{}: minAvailable must keep a replica through a drain, below replicas",
        own.file
    );
    let mut clusters = 0;
    for (document, kind) in policy_documents(&documents) {
        let named = &document.value["spec"]["policyServer"];
        match kind {
            "ClusterAdmissionPolicy" => {
                clusters += 1;
                assert_eq!(named, OWN, "{}: spec.policyServer", document.file);
            }
            _ => assert!(
                named == "default" || named == OWN,
                "{}: spec.policyServer {named}",
                document.file
            ),
        }
    }
    assert_eq!(
        clusters,
        2 * renders.len(),
        "two ClusterAdmissionPolicies per render: the injector and the auditor"
    );
}

/// The fields of a `ClusterAdmissionPolicy`'s (and `AdmissionPolicy`'s) `spec` in Kubewarden's
/// CRD (`charts/kubewarden-crds/templates/crds/policies.kubewarden.io_clusteradmissionpolicies.yaml`
/// of kubewarden/kubewarden-controller, version v1, read at 3460bb71): each with its JSON type
/// and, for `mode`, its enum. `allowInsideAdmissionControllerNamespace` is the cluster kind's.
const SPEC_FIELDS: [(&str, &str); 18] = [
    ("allowInsideAdmissionControllerNamespace", "boolean"),
    ("backgroundAudit", "boolean"),
    ("contextAwareResources", "array"),
    ("failurePolicy", "string"),
    ("matchConditions", "array"),
    ("matchPolicy", "string"),
    ("message", "string"),
    ("mode", "string"),
    ("module", "string"),
    ("mutating", "boolean"),
    ("namespaceSelector", "object"),
    ("objectSelector", "object"),
    ("policyServer", "string"),
    ("rules", "array"),
    ("settings", "object"),
    ("sideEffects", "string"),
    ("timeoutEvalSeconds", "integer"),
    ("timeoutSeconds", "integer"),
];

/// Every policy manifest, the auditors among them, holds to Kubewarden's CRD: only its fields,
/// of their types, the required ones there (`module`, `mutating`, `rules`), `mode` one of its
/// enum, `failurePolicy` one of the API server's, each context-aware resource an apiVersion and
/// a kind.
#[test]
fn every_policy_manifest_holds_to_kubewardens_crd() {
    let documents = deploy_documents();
    let mut failures = Vec::new();
    let mut auditors = 0;
    for (Document { file, value }, _) in policy_documents(&documents) {
        let spec = value["spec"].as_object().expect("a spec");
        auditors += usize::from(is_auditor(value));
        for (key, field) in spec {
            let json_type = match field {
                Value::Bool(_) => "boolean",
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Object(_) => "object",
                Value::Number(n) if n.is_u64() => "integer",
                _ => "other",
            };
            match SPEC_FIELDS.iter().find(|(name, _)| name == key) {
                None => failures.push(format!("{file}: spec.{key} is no field of the CRD")),
                Some((_, want)) if *want != json_type => {
                    failures.push(format!("{file}: spec.{key} is {json_type}, not {want}"))
                }
                _ => {}
            }
        }
        for required in ["module", "mutating", "rules"] {
            if !spec.contains_key(required) {
                failures.push(format!("{file}: spec.{required} is required"));
            }
        }
        if !matches!(
            spec.get("mode").and_then(Value::as_str),
            None | Some("protect" | "monitor")
        ) {
            failures.push(format!("{file}: spec.mode is {:?}", spec.get("mode")));
        }
        if !matches!(
            spec.get("failurePolicy").and_then(Value::as_str),
            None | Some("Fail" | "Ignore")
        ) {
            failures.push(format!(
                "{file}: spec.failurePolicy is {:?}",
                spec.get("failurePolicy")
            ));
        }
        for resource in spec
            .get("contextAwareResources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let fields: Vec<&String> = resource
                .as_object()
                .map(|r| r.keys().collect())
                .unwrap_or_default();
            if fields != ["apiVersion", "kind"]
                || !resource["apiVersion"].is_string()
                || !resource["kind"].is_string()
            {
                failures.push(format!("{file}: contextAwareResources entry {resource}"));
            }
        }
    }
    assert_eq!(
        auditors,
        render_files(&documents).len(),
        "one auditor per render"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
