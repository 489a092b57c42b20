//! Data-driven cases: YAML files of `{settings | settings_file, operation, kind, object, expect}`
//! run against the compiled policy. The expected pods are written by hand from
//! `docs/behaviour.md`, never copied from output.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use serde::Deserialize;
use serde_json::Value;

use crate::{Instance, Response, admission_request, checked_patch, pod_kind};

/// One mutation case.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub settings: Value,
    #[serde(default = "create")]
    pub operation: String,
    #[serde(default = "pod_kind")]
    pub kind: Value,
    pub object: Value,
    pub expect: Expect,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub accepted: bool,
    /// The whole pod after mutation; absent means no mutation.
    pub pod: Option<Value>,
    /// Substrings, one per warning, in order; absent means no warning at all.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Substrings of the rejection message.
    #[serde(default, deserialize_with = "one_or_many")]
    pub message: Vec<String>,
}

/// One settings case.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsCase {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub settings: Value,
    pub valid: bool,
    #[serde(default, deserialize_with = "one_or_many")]
    pub message: Vec<String>,
}

fn create() -> String {
    "CREATE".to_string()
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

/// `settings_file: path` (from the repository's root) in place of `settings`: the case runs with
/// a file users copy, such as `examples/settings/vendor/aws.yaml`, as it is in the repository.
fn settings_from_file(case: &mut serde_yaml::Value) -> Result<()> {
    let Some(map) = case.as_mapping_mut() else {
        return Ok(());
    };
    let Some(path) = map.remove("settings_file") else {
        return Ok(());
    };
    let path = path.as_str().context("settings_file must be a path")?;
    ensure!(
        !map.contains_key("settings"),
        "a case has settings or settings_file, not both"
    );
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let settings: serde_yaml::Value =
        serde_yaml::from_str(&text).with_context(|| format!("{path} is not YAML"))?;
    map.insert("settings".into(), settings);
    Ok(())
}

/// Every `*.yaml` below `dir`, each a stream of documents of type `T`, in path order.
pub fn load<T: for<'de> Deserialize<'de>>(dir: &Path) -> Result<Vec<(PathBuf, T)>> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(|e| e.ok())
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)?;
        for document in serde_yaml::Deserializer::from_str(&text) {
            let mut value = serde_yaml::Value::deserialize(document)
                .with_context(|| format!("{}", file.display()))?;
            if value.is_null() {
                continue;
            }
            settings_from_file(&mut value).with_context(|| format!("{}", file.display()))?;
            let case = serde_yaml::from_value(value)
                .with_context(|| format!("a case in {}", file.display()))?;
            cases.push((file.clone(), case));
        }
    }
    Ok(cases)
}

/// Runs a case, and feeds any mutated pod back to check that a second pass changes nothing.
pub fn run(instance: &Instance, case: &Case) -> Result<()> {
    let request = admission_request(&case.operation, &case.kind, &case.object);
    let response = instance.validate(&request, &case.settings)?;
    check(&case.expect, &response)?;
    if let (Some(expected), Some(mutated)) = (&case.expect.pod, &response.mutated_object) {
        checked_patch(&case.object, mutated)?;
        if mutated != expected {
            bail!(
                "mutated pod differs from the expected one:\n{}",
                difference(expected, mutated)
            );
        }
        let again = instance.validate(
            &admission_request(&case.operation, &case.kind, mutated),
            &case.settings,
        )?;
        ensure!(
            again.accepted,
            "second pass rejected the mutated pod: {:?}",
            again.message
        );
        if let Some(changed) = again.mutated_object {
            bail!(
                "second pass changed the pod again:\n{}",
                difference(mutated, &changed)
            );
        }
    }
    Ok(())
}

fn check(expect: &Expect, response: &Response) -> Result<()> {
    ensure!(
        response.accepted == expect.accepted,
        "accepted = {}, expected {} (message: {:?})",
        response.accepted,
        expect.accepted,
        response.message
    );
    match (&expect.pod, &response.mutated_object) {
        (Some(_), None) => bail!("expected a mutation, the policy returned none"),
        (None, Some(pod)) => bail!(
            "expected no mutation, the policy returned {}",
            serde_json::to_string_pretty(pod)?
        ),
        _ => {}
    }
    let warnings = response.warnings.clone().unwrap_or_default();
    ensure!(
        warnings.len() == expect.warnings.len(),
        "expected {} warning(s) {:?}, got {:?}",
        expect.warnings.len(),
        expect.warnings,
        warnings
    );
    for (want, got) in expect.warnings.iter().zip(&warnings) {
        ensure!(
            contains(got, want),
            "warning {got:?} does not contain {want:?}"
        );
    }
    let message = response.message.clone().unwrap_or_default();
    for want in &expect.message {
        ensure!(
            contains(&message, want),
            "message {message:?} does not contain {want:?}"
        );
    }
    Ok(())
}

fn contains(haystack: &str, needle: &str) -> bool {
    haystack.to_lowercase().contains(&needle.to_lowercase())
}

/// The JSON Patch from `want` to `got`: the shortest readable account of a difference.
pub fn difference(want: &Value, got: &Value) -> String {
    serde_json::to_string_pretty(&json_patch::diff(want, got)).unwrap_or_default()
}

/// Runs a settings case.
pub fn run_settings(instance: &Instance, case: &SettingsCase) -> Result<()> {
    let response = instance.validate_settings(&case.settings)?;
    ensure!(
        response.valid == case.valid,
        "valid = {}, expected {} (message: {:?})",
        response.valid,
        case.valid,
        response.message
    );
    let message = response.message.unwrap_or_default();
    for want in &case.message {
        ensure!(
            contains(&message, want),
            "message {message:?} does not contain {want:?}"
        );
    }
    Ok(())
}
