//! A waPC host for the compiled policy, run the way the Kubewarden policy server runs it: the
//! module in wasmtime with WASI, called through waPC with the policy server's payloads.
//!
//! The module under test is `annotated-policy.wasm`, the one users deploy: the policy server
//! refuses `policy.wasm`, which lacks the metadata section.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::Value;
use wapc::WapcHost;
use wasmtime_provider::{WasmtimeEngineProviderBuilder, WasmtimeEngineProviderPre};

// The cases, the tests and the bins build their requests with these; they live in the fixtures
// crate (from the payload crate the browser playground uses too), which the property tests and
// the fuzz targets share and which builds no wasmtime.
pub use fixtures::{admission_request, pod_kind};

pub mod admission_response;
pub mod bare;
pub mod cases;
pub mod cluster;
pub mod record;

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
#[path = "../../tests/support/claim_rules.rs"]
pub mod claim_rules;
#[path = "../../tests/support/patch_rule.rs"]
mod patch_rule;

/// The policy module, compiled once.
pub struct Policy {
    pre: WasmtimeEngineProviderPre,
}

/// One instance of the module: its linear memory lives as long as this does, as a policy
/// server's does across requests.
pub struct Instance {
    host: WapcHost,
    /// The cluster the host calls are answered from, and the calls made.
    state: cluster::Shared,
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

/// Where `make` puts the annotated module; `POLICY_WASM` overrides it.
pub fn default_module_path() -> PathBuf {
    module_path("POLICY_WASM", "annotated-policy.wasm")
}

/// Where `make` puts the module as the build wrote it, before annotation; `PLAIN_POLICY_WASM`
/// overrides it.
pub fn plain_module_path() -> PathBuf {
    module_path("PLAIN_POLICY_WASM", "policy.wasm")
}

fn module_path(variable: &str, file: &str) -> PathBuf {
    std::env::var_os(variable)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(file))
}

/// The policy at [`default_module_path`], compiled once per process.
pub fn policy() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| {
        let path = default_module_path();
        Policy::load(&path)
            .unwrap_or_else(|e| panic!("{e:#}\n(run `make annotated-policy.wasm` first)"))
    })
}

impl Policy {
    pub fn load(path: &Path) -> Result<Policy> {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        Self::from_bytes(&bytes)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Policy> {
        let pre = WasmtimeEngineProviderBuilder::new()
            .module_bytes(bytes)
            .build_pre()
            .context("cannot compile the policy module")?;
        Ok(Policy { pre })
    }

    pub fn instance(&self) -> Result<Instance> {
        let engine = self
            .pre
            .rehydrate(None)
            .context("cannot instantiate the policy module")?;
        let state = cluster::Shared::default();
        let host = WapcHost::new(
            Box::new(engine),
            Some(Box::new(cluster::callback(state.clone()))),
        )
        .context("waPC initialisation failed")?;
        Ok(Instance { host, state })
    }
}

impl Instance {
    /// The cluster the next calls' host calls are answered from; `None`: every host call is an
    /// error, as for an `AdmissionPolicy`.
    pub fn set_cluster(&self, cluster: Option<cluster::Cluster>) {
        if let Ok(mut state) = self.state.lock() {
            state.cluster = cluster;
        }
    }

    /// The host calls made since the last time this was asked: binding, namespace, operation,
    /// payload.
    pub fn take_host_calls(&self) -> Vec<(String, String, String, Vec<u8>)> {
        self.state
            .lock()
            .map(|mut state| std::mem::take(&mut state.calls))
            .unwrap_or_default()
    }

    /// Calls a waPC function with raw bytes; an `Err` is what the policy server reports as a
    /// guest failure or trap.
    pub fn call(&self, function: &str, payload: &[u8]) -> Result<Vec<u8>> {
        self.host
            .call(function, payload)
            .map_err(|e| anyhow::anyhow!("guest call `{function}` failed: {e}"))
    }

    pub fn validate(&self, request: &Value, settings: &Value) -> Result<Response> {
        self.validate_bytes(&fixtures::payload(request, settings))
    }

    /// `validate` on a payload as it is, its answer decoded.
    pub fn validate_bytes(&self, payload: &[u8]) -> Result<Response> {
        let answer = self.call("validate", payload)?;
        serde_json::from_slice(&answer).with_context(|| {
            format!(
                "validate answered something that is not a ValidationResponse: {}",
                String::from_utf8_lossy(&answer)
            )
        })
    }

    pub fn validate_settings(&self, settings: &Value) -> Result<SettingsResponse> {
        self.validate_settings_bytes(&serde_json::to_vec(settings)?)
    }

    /// `validate_settings` on a payload as it is, its answer decoded.
    pub fn validate_settings_bytes(&self, payload: &[u8]) -> Result<SettingsResponse> {
        let answer = self.call("validate_settings", payload)?;
        serde_json::from_slice(&answer).with_context(|| {
            format!(
                "validate_settings answered {}",
                String::from_utf8_lossy(&answer)
            )
        })
    }
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
