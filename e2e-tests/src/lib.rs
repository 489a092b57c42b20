//! The compiled policy run the way the Kubewarden policy server runs it: the module in wasmtime
//! with WASI, called through waPC on the policy server's engine (`wasmtime-provider`), with the
//! policy server's payloads.
//!
//! The module under test is `annotated-policy.wasm`, the one users deploy: the policy server
//! refuses `policy.wasm`, which lacks the metadata section.
//!
//! An [`Instance`] answers the YAML cases of `case-runner` (an [`Answerer`]), which the policy
//! crate's `cargo test` runs against its core natively: here they run through the module, the
//! case's fixture cluster answering the guest's host calls through waPC. [`Policy::lean`] runs
//! the same module on `policy-host`'s lean engine, which the annotator and `make preview` use;
//! the tests hold it to the policy server's engine.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{Context, Result};
use case_runner::cluster::{self as fixture, Recorder};
use case_runner::{Answerer, HostFn};
use serde_json::Value;
use wasmtime_provider::WasmtimeEngineProviderBuilder;

// The cases, the tests and the bins build their requests with these; they live in the fixtures
// crate (from the payload crate the browser playground uses too), which the property tests and
// the fuzz targets share and which builds no wasmtime.
pub use fixtures::{admission_request, pod_kind};
// The cases, their fixture cluster and the checks of an answer live in the case runner, which the
// policy crate's tests run natively too; here they run through the compiled module.
pub use case_runner::{
    Response, SettingsResponse, cases, checked_claims, checked_patch, claim_rules, cluster,
    read_yaml, record, yaml_files,
};

pub mod admission_response;
pub mod policy_server;

/// The YAML case named `name` (of `e2e-tests/cases`), for the tests that take a case further.
pub fn case_named(name: &str) -> case_runner::cases::Case {
    cases::load::<case_runner::cases::Case>(&case_runner::cases_dir())
        .expect("the cases load")
        .into_iter()
        .map(|(_, case)| case)
        .find(|case| case.name == name)
        .unwrap_or_else(|| panic!("no case {name}"))
}

/// The policy module, compiled once.
pub struct Policy(policy_host::Policy);

/// One instance of the module: its linear memory lives as long as this does, as a policy
/// server's does across requests.
pub struct Instance {
    host: policy_host::Instance,
    /// The fixture cluster [`Instance::set_cluster`] installed, and the calls made to it.
    cluster: Mutex<Arc<Recorder>>,
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
        Self::from_bytes(&read_module(path)?)
    }

    /// The module on the policy server's engine, `wasmtime-provider` (policy-evaluator's waPC
    /// runtime), with its default configuration: the policy server adds execution deadlines.
    pub fn from_bytes(bytes: &[u8]) -> Result<Policy> {
        let pre = WasmtimeEngineProviderBuilder::new()
            .module_bytes(bytes)
            .build_pre()
            .context("cannot compile the policy module")?;
        Ok(Policy(policy_host::Policy::with_engine(move || {
            let engine = pre
                .rehydrate(None)
                .context("cannot instantiate the policy module")?;
            Ok(Box::new(engine))
        })))
    }

    /// The module on `policy-host`'s lean engine, as `make preview` and the annotator run it.
    pub fn lean(path: &Path) -> Result<Policy> {
        Ok(Policy(policy_host::Policy::from_bytes(&read_module(
            path,
        )?)?))
    }

    /// A new instance; its host calls are errors, as for an `AdmissionPolicy`, until
    /// [`Instance::set_cluster`] gives it a cluster.
    pub fn instance(&self) -> Result<Instance> {
        let cluster = Recorder::new(None);
        let host = self.0.instance(cluster.host())?;
        Ok(Instance {
            host,
            cluster: Mutex::new(cluster),
        })
    }
}

fn read_module(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

impl Instance {
    /// The cluster the next calls' host calls are answered from; `None`: every host call is an
    /// error, as for an `AdmissionPolicy`.
    pub fn set_cluster(&self, cluster: Option<fixture::Cluster>) {
        let cluster = Recorder::new(cluster);
        self.host.answer_host_calls_with(cluster.host());
        if let Ok(mut installed) = self.cluster.lock() {
            *installed = cluster;
        }
    }

    /// The host calls made to the cluster of [`Instance::set_cluster`] since the last time this
    /// was asked: binding, namespace, operation, payload.
    pub fn take_host_calls(&self) -> Vec<fixture::HostCall> {
        self.cluster
            .lock()
            .map(|cluster| cluster.take_calls())
            .unwrap_or_default()
    }

    /// Calls a waPC function with raw bytes; an `Err` is what the policy server reports as a
    /// guest failure or trap.
    pub fn call(&self, function: &str, payload: &[u8]) -> Result<Vec<u8>> {
        self.host.call(function, payload)
    }

    /// The size of the linear memory after the last call, on the lean engine ([`Policy::lean`]).
    pub fn memory_size(&self) -> Option<usize> {
        self.host.memory_size()
    }

    pub fn validate(&self, request: &Value, settings: &Value) -> Result<Response> {
        self.validate_bytes(&fixtures::payload(request, settings))
    }

    /// `validate` on a payload as it is, its answer decoded.
    pub fn validate_bytes(&self, payload: &[u8]) -> Result<Response> {
        Response::decode(&self.call("validate", payload)?)
    }

    pub fn validate_settings(&self, settings: &Value) -> Result<SettingsResponse> {
        self.validate_settings_bytes(&serde_json::to_vec(settings)?)
    }

    /// `validate_settings` on a payload as it is, its answer decoded.
    pub fn validate_settings_bytes(&self, payload: &[u8]) -> Result<SettingsResponse> {
        SettingsResponse::decode(&self.call("validate_settings", payload)?)
    }
}

/// The cases' runner calls the module through waPC, as the policy server does.
impl Answerer for Instance {
    /// `validate`, `host` answering the guest's host calls for this call only.
    fn validate(&self, payload: &[u8], host: &HostFn) -> Result<Vec<u8>> {
        let before = self.host.answer_host_calls_with(Arc::clone(host));
        let answer = self.call("validate", payload);
        self.host.answer_host_calls_with(before);
        answer
    }

    fn validate_settings(&self, payload: &[u8]) -> Result<Vec<u8>> {
        self.call("validate_settings", payload)
    }
}
