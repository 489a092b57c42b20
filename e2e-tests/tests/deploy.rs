//! Loads every shipped manifest under `deploy/` (every YAML document of every file) and the
//! example settings, and holds them to the built module and to `policy-metadata.yml`.

mod common;

use std::path::{Path, PathBuf};

use common::{cargo_version, policy_metadata, repo_root, string, yaml, yaml_documents};
use e2e_tests::{Instance, admission_request, pod_kind, policy};
// The trigger annotation when the settings do not name one.
use fixtures::TRIGGER as DEFAULT_TRIGGER;
use serde_json::{Value, json};

const CLOUDS: [&str; 4] = ["aws", "azure", "gcp", "oci"];

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|entry| entry.expect("cannot walk the directory").into_path())
        .filter(|path| {
            path.is_file()
                && path
                    .extension()
                    .is_some_and(|ext| ext == "yaml" || ext == "yml")
        })
        .collect();
    files.sort();
    files
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

#[test]
fn every_policy_manifest_is_loadable_and_agrees_with_the_metadata() {
    let version = cargo_version();
    let metadata = policy_metadata();
    let oci_url = string(
        &metadata,
        "/annotations/io.kubewarden.policy.ociUrl",
        "policy-metadata.yml",
    );
    let module_url = format!("registry://{oci_url}:v{version}");
    let pod = yaml(&repo_root().join("examples/pod.yaml"));
    let instance = policy().instance().unwrap();

    let documents = deploy_documents();
    let mut failures = Vec::new();
    let mut policies = Vec::new();
    for Document { file, value } in &documents {
        let kind = value["kind"].as_str().unwrap_or_default();
        let name = value["metadata"]["name"].as_str().unwrap_or_default();
        let mut fail = |what: String| failures.push(format!("{file} ({kind} {name}): {what}"));
        match kind {
            "AdmissionPolicy" | "ClusterAdmissionPolicy" => {}
            "ConfigMap" => continue,
            other => {
                fail(format!("unexpected kind {other:?}"));
                continue;
            }
        }
        policies.push((file.as_str(), kind));
        let spec = &value["spec"];
        if value["apiVersion"] != "policies.kubewarden.io/v1" {
            fail(format!("apiVersion is {}", value["apiVersion"]));
        }

        // The settings load: the policy server refuses to start on invalid settings.
        let settings = spec.get("settings").cloned().unwrap_or_else(|| json!({}));
        if let Some(message) = settings_error(&instance, &settings) {
            fail(format!(
                "spec.settings refused by validate_settings: {message}"
            ));
            continue;
        }
        if let Some(cloud) = cloud_of(file)
            && settings[cloud]["enabled"] != true
        {
            fail(format!(
                "is under deploy/{cloud}/ but does not enable {cloud}"
            ));
        }

        if spec["mutating"] != true {
            fail("spec.mutating is not true: the policy server would reject every mutation".into());
        }
        if !(spec["mode"].is_null() || spec["mode"] == "protect") {
            fail(format!(
                "spec.mode is {}: monitor mode drops every patch",
                spec["mode"]
            ));
        }
        if spec["rules"] != metadata["rules"] {
            fail(format!(
                "spec.rules {} differ from policy-metadata.yml's {}",
                spec["rules"], metadata["rules"]
            ));
        }
        let module = spec["module"].as_str().unwrap_or_default();
        let tag = module.rsplit_once(':').map(|(_, tag)| tag);
        if tag != Some(&format!("v{version}")) {
            fail(format!(
                "spec.module {module:?} is not tagged v{version} (Cargo.toml)"
            ));
        }
        if module != module_url {
            fail(format!("spec.module is {module:?}, not {module_url:?}"));
        }
        match kind {
            "AdmissionPolicy" if value["metadata"]["namespace"].as_str().is_none() => {
                fail("has no metadata.namespace".into())
            }
            "ClusterAdmissionPolicy" if !spec["namespaceSelector"].is_object() => {
                fail("has no namespaceSelector: it would act in every namespace".into())
            }
            _ => {}
        }

        // matchConditions must let the trigger annotation through.
        let trigger = settings["triggerAnnotation"]
            .as_str()
            .unwrap_or(DEFAULT_TRIGGER);
        let conditions = spec["matchConditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if !conditions.is_empty()
            && !conditions.iter().any(|condition| {
                condition["expression"]
                    .as_str()
                    .is_some_and(|e| e.contains(&format!("'{trigger}'")))
            })
        {
            fail(format!(
                "no matchConditions expression names the trigger annotation {trigger}"
            ));
        }
        if conditions.is_empty() && spec["failurePolicy"] == "Fail" {
            fail("failurePolicy Fail without matchConditions holds up every pod".into());
        }

        // With these settings, the example worker pod is mutated.
        let answer = instance
            .validate(&admission_request("CREATE", &pod_kind(), &pod), &settings)
            .unwrap();
        if !answer.accepted || answer.mutated_object.is_none() {
            fail(format!(
                "the example pod is not mutated with these settings: accepted {}, {:?}",
                answer.accepted, answer.message
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} problems in deploy/:\n{}",
        failures.len(),
        failures.join("\n")
    );
    for cloud in CLOUDS {
        for kind in ["AdmissionPolicy", "ClusterAdmissionPolicy"] {
            assert!(
                policies
                    .iter()
                    .any(|(file, k)| *k == kind && cloud_of(file) == Some(cloud)),
                "deploy/{cloud}/ has no {kind}"
            );
        }
    }
}

#[test]
fn matchconditions_use_the_default_trigger_annotation() {
    // The shipped examples keep the default trigger; their expressions must name it.
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
        assert!(
            expressions.iter().any(|e| e.contains(DEFAULT_TRIGGER)),
            "{file}: matchConditions {expressions:?} do not mention {DEFAULT_TRIGGER}"
        );
    }
    assert!(seen > 0, "no manifest in deploy/ has matchConditions");
}

#[test]
fn every_configmap_holds_an_nccl_topology() {
    let documents = deploy_documents();
    let mut topologies = 0;
    for Document { file, value } in &documents {
        if value["kind"] != "ConfigMap" {
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
