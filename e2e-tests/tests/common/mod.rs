//! Reading the repository's YAML files for the metadata and deployment tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// The repository root (the policy crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("e2e-tests lives in the repository root")
        .to_path_buf()
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// One YAML document as JSON.
pub fn yaml(path: &Path) -> Value {
    e2e_tests::read_yaml(path).unwrap_or_else(|e| panic!("{e:#}"))
}

/// Every non-empty document of a multi-document YAML file, as JSON.
pub fn yaml_documents(path: &Path) -> Vec<Value> {
    let text = read(path);
    serde_yaml::Deserializer::from_str(&text)
        .enumerate()
        .map(|(i, document)| {
            Value::deserialize(document).unwrap_or_else(|e| {
                panic!("{}: document {} is not YAML: {e}", path.display(), i + 1)
            })
        })
        .filter(|document| !document.is_null())
        .collect()
}

/// `version` of the `[package]` table of the root Cargo.toml: the policy's version.
pub fn cargo_version() -> String {
    let path = repo_root().join("Cargo.toml");
    let mut in_package = false;
    for line in read(&path).lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package
            && let Some((key, value)) = line.split_once('=')
            && key.trim() == "version"
        {
            return value.trim().trim_matches('"').to_string();
        }
    }
    panic!("{} has no [package] version", path.display())
}

pub fn policy_metadata() -> Value {
    yaml(&repo_root().join("policy-metadata.yml"))
}

pub fn artifacthub_pkg() -> Value {
    yaml(&repo_root().join("artifacthub-pkg.yml"))
}

/// The only rule the policy has: core/v1 pods, CREATE.
pub fn pod_create_rules() -> Value {
    serde_json::json!([{
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "resources": ["pods"],
        "operations": ["CREATE"]
    }])
}

/// The string at `pointer`, or a panic naming the file and the field.
pub fn string<'a>(value: &'a Value, pointer: &str, file: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{file}: {pointer} is missing or not a string"))
}
