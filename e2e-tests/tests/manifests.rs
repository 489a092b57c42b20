//! `deploy/` as `make manifests` renders it: each vendor file's render is the file `deploy/` holds
//! for it (so that they never drift: change a vendor file, then `make deploy-manifests`), and
//! every Kubewarden document under `deploy/` holds to Kubewarden's CRD schemas (`crds/`, read
//! from kubewarden/kubewarden-controller; their README names the commit).

mod common;
// The CRD schema checker, in this test's own folder.
#[path = "manifests/schema.rs"]
mod schema;

use std::path::Path;

use common::{policy_metadata, read, repo_root, yaml_documents};
use serde_json::Value;

#[test]
fn deploy_holds_the_render_of_every_vendor_file() {
    let root = repo_root();
    let metadata = policy_metadata();
    let registry = manifests::deploy_registry(&metadata, &read(&root.join("Cargo.toml"))).unwrap();
    let targets = manifests::deploy_targets(&root).unwrap();
    assert!(targets.len() >= 5, "one render per cloud at least");
    let mut stale = Vec::new();
    for (source, target) in &targets {
        let name = source.strip_prefix(&root).unwrap().display().to_string();
        let want = manifests::render(&name, &read(source), &registry, &metadata).unwrap();
        let have = std::fs::read_to_string(target).unwrap_or_default();
        if have != want {
            stale.push(format!(
                "{} is not the render of {name}",
                target.strip_prefix(&root).unwrap().display()
            ));
        }
    }
    // No render without its vendor file (one left behind by a renamed file).
    let mut shipped = Vec::new();
    renders(&root.join("deploy"), &mut shipped);
    for file in shipped {
        if !targets.iter().any(|(_, target)| *target == file) {
            stale.push(format!("{}: no vendor file renders it", file.display()));
        }
    }
    assert!(
        stale.is_empty(),
        "{}\nrun `make deploy-manifests` to render them again",
        stale.join("\n")
    );
}

fn renders(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            renders(&path, out);
        } else if path.file_name().is_some_and(|n| n == "manifests.yaml") {
            out.push(path);
        }
    }
}

/// The schema of `kind` (`crds/<kind>.v1.json`).
fn crd(kind: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/crds/{kind}.v1.json"));
    serde_json::from_str(&read(&path)).unwrap()
}

#[test]
fn every_document_holds_to_kubewardens_crd_schemas() {
    let root = repo_root();
    let kinds = ["PolicyServer", "AdmissionPolicy", "ClusterAdmissionPolicy"];
    let schemas: Vec<(&str, Value)> = kinds.iter().map(|k| (*k, crd(k))).collect();
    let mut files = Vec::new();
    yaml_files(&root.join("deploy"), &mut files);
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in files {
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        for document in yaml_documents(&file) {
            let Some((kind, crd)) = schemas.iter().find(|(k, _)| document["kind"] == *k) else {
                continue;
            };
            checked += 1;
            let api_version = format!(
                "{}/{}",
                crd["group"].as_str().unwrap(),
                crd["version"].as_str().unwrap()
            );
            if document["apiVersion"] != api_version.as_str() {
                problems.push(format!("{name} {kind}: apiVersion is not {api_version}"));
            }
            let cluster_scoped = crd["scope"] == "Cluster";
            if cluster_scoped == document["metadata"]["namespace"].is_string() {
                problems.push(format!(
                    "{name} {kind}: metadata.namespace on a {} resource",
                    crd["scope"]
                ));
            }
            // metadata is the API server's ObjectMeta, not the CRD's.
            let mut body = document.clone();
            if let Some(map) = body.as_object_mut() {
                map.remove("metadata");
            }
            let mut found = Vec::new();
            schema::check(&crd["openAPIV3Schema"], &body, kind, &mut found);
            problems.extend(found.into_iter().map(|p| format!("{name}: {p}")));
        }
    }
    assert!(
        checked >= 20,
        "only {checked} Kubewarden documents under deploy/"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checker_finds_what_the_schema_refuses() {
    let crd = crd("ClusterAdmissionPolicy");
    let bad = serde_json::json!({
        "apiVersion": "policies.kubewarden.io/v1", "kind": "ClusterAdmissionPolicy",
        "spec": {"module": "registry://x", "mode": "enforce", "mutating": "yes", "polcyServer": "a"}
    });
    let mut found = Vec::new();
    schema::check(&crd["openAPIV3Schema"], &bad, "c", &mut found);
    let text = found.join("\n");
    for wanted in [
        "c.spec.mode",
        "c.spec.mutating",
        "c.spec.polcyServer: no such field",
    ] {
        assert!(text.contains(wanted), "{wanted} not in\n{text}");
    }
}

fn yaml_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml") {
            out.push(path);
        }
    }
}
