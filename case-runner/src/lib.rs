//! The policy's YAML cases and the one runner that holds an answer to them, whatever gives the
//! answer: the policy crate's core called natively (its `tests/cases.rs`, in `cargo test`), or
//! the compiled module in wasmtime through waPC (`e2e-tests`, in `make e2e-tests`). The two are
//! held to the same cases by the same checks, so that the module is what the Rust code is.
//!
//! - [`cases`]: the cases' types, how they are loaded, and the table of messages they expect;
//! - [`runner`]: what answers a payload ([`Answerer`]) and the checks of its answers;
//! - [`cluster`]: the fixture cluster the policy's host calls are answered from;
//! - [`record`]: the record of what was injected, checked independently of the policy.
//!
//! Nothing here builds wasmtime, nor depends on the policy crate, whose tests depend on this one.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::Value;

pub mod cases;
pub mod cluster;
pub mod record;
pub mod runner;

// What an `Answerer` answers with, for the crates that implement one.
pub use anyhow;
pub use cluster::{HostCall, HostError, HostFn};
pub use runner::{Answerer, Report, run_mutation_cases, run_settings_cases};

#[path = "../../tests/support/claim_rules.rs"]
pub mod claim_rules;
#[path = "../../tests/support/patch_rule.rs"]
mod patch_rule;

/// The repository's root, where the policy crate is.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("case-runner lives in the repository's root")
        .to_path_buf()
}

/// Where the mutation cases are: `e2e-tests/cases`.
pub fn cases_dir() -> PathBuf {
    repo_root().join("e2e-tests/cases")
}

/// Where the settings cases are: `e2e-tests/settings-cases`.
pub fn settings_cases_dir() -> PathBuf {
    repo_root().join("e2e-tests/settings-cases")
}

/// The policy's answer to `validate`, as the policy server reads it.
#[derive(Debug, Clone, Deserialize)]
pub struct Response {
    pub accepted: bool,
    pub message: Option<String>,
    pub code: Option<u16>,
    pub mutated_object: Option<Value>,
    #[serde(default)]
    pub audit_annotations: Option<std::collections::BTreeMap<String, String>>,
    pub warnings: Option<Vec<String>>,
}

/// The policy's answer to `validate_settings`.
#[derive(Debug, Clone, Deserialize)]
pub struct SettingsResponse {
    pub valid: bool,
    pub message: Option<String>,
}

impl Response {
    /// An answer to `validate`, read as the policy server reads it.
    pub fn decode(answer: &[u8]) -> Result<Response> {
        serde_json::from_slice(answer).with_context(|| {
            format!(
                "validate answered something that is not a ValidationResponse: {}",
                String::from_utf8_lossy(answer)
            )
        })
    }
}

impl SettingsResponse {
    /// An answer to `validate_settings`, read as the policy server reads it.
    pub fn decode(answer: &[u8]) -> Result<SettingsResponse> {
        serde_json::from_slice(answer).with_context(|| {
            format!(
                "validate_settings answered {}",
                String::from_utf8_lossy(answer)
            )
        })
    }
}

/// The YAML files under `dir` at any depth (`.yaml`, `.yml`, and `.json`, which YAML reads),
/// sorted.
pub fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(dir) {
        let path = entry
            .with_context(|| format!("cannot walk {}", dir.display()))?
            .into_path();
        if path.is_file()
            && path
                .extension()
                .is_some_and(|x| x == "yaml" || x == "yml" || x == "json")
        {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// One YAML (or JSON) document, as JSON.
pub fn read_yaml(path: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_yaml::from_str(&text).with_context(|| format!("{} is not YAML or JSON", path.display()))
}

/// Checks what the policy server would do with a mutation: the JSON Patch it computes must only
/// add, and applying it must give the mutated pod. A `replace` is allowed only where the input
/// held `null`, or where it extends the user's string (the Multus network list) keeping all of
/// its text, or where it is the record under its key `record`. Returns the patch. The rule is
/// shared with the property tests of the policy crate.
pub fn checked_patch(
    original: &Value,
    mutated: &Value,
    record: Option<&str>,
) -> Result<json_patch::Patch> {
    patch_rule::checked_patch(original, mutated, record).map_err(anyhow::Error::msg)
}

/// Checks that a mutation breaks none of the API server's rules for DRA claims
/// ([`claim_rules`]) that the original kept: every case's output is held to them.
pub fn checked_claims(original: &Value, mutated: &Value) -> Result<()> {
    let before = claim_rules::violations(original);
    let added: Vec<String> = claim_rules::violations(mutated)
        .into_iter()
        .filter(|v| !before.contains(v))
        .collect();
    anyhow::ensure!(
        added.is_empty(),
        "the mutated pod breaks the API server's claim rules: {added:#?}"
    );
    Ok(())
}
