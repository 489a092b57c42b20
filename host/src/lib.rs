//! The compiled policy, called through waPC in wasmtime as the Kubewarden policy server calls it.
//!
//! A [`Policy`] is the module compiled once; each [`Instance`] has its own linear memory, which
//! lives as long as the instance does (the policy server makes a fresh instance for each request;
//! the tests also call one many times, to show that nothing grows). Two engines run it, both
//! behind `wapc::WapcHost`:
//!
//! - the lean engine of this crate ([`Policy::from_bytes`], [`engine`]): wasmtime's runtime and
//!   Cranelift, the waPC imports and the five WASI calls the module makes ([`wasi`]). The
//!   annotator asks the module's protocol version with it and `make preview` runs it, so that a
//!   first preview on 2 cores takes about 2½ minutes (under 4 minutes of CPU) rather than the 6
//!   (11 of CPU) it took on the policy server's engine;
//! - any other `wapc` engine ([`Policy::with_engine`]): the end-to-end tests bring the policy
//!   server's, `wasmtime-provider`, and hold the lean engine to its answers on every case.

use std::error::Error;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, anyhow};
use wapc::{WapcHost, WebAssemblyEngineProvider};

pub mod engine;
mod store;
pub mod wasi;

/// The error a host answers a guest's call with.
pub type HostError = Box<dyn Error + Send + Sync>;

/// What answers the guest's host calls: binding, namespace, operation and payload in, the answer
/// or the host's error out. The same type as `case_runner::HostFn`, which the cases' fixture
/// cluster is: named in both crates because neither may depend on the other (the case runner
/// builds no wasmtime, and this crate reads no cases).
pub type HostFn =
    Arc<dyn Fn(&str, &str, &str, &[u8]) -> Result<Vec<u8>, HostError> + Send + Sync + 'static>;

/// Makes the engine of one instance.
type MakeEngine = dyn Fn() -> Result<Box<dyn WebAssemblyEngineProvider>> + Send + Sync;

/// The policy module, compiled once.
pub struct Policy(Engines);

/// What the instances of a [`Policy`] run on.
enum Engines {
    /// The lean engine of [`engine`].
    Lean(engine::LeanModule),
    /// Another, made for each instance.
    Other(Box<MakeEngine>),
}

/// One instance of the module.
pub struct Instance {
    host: WapcHost,
    /// What answers the guest's host calls: the waPC callback asks it at each call.
    answers: Arc<Mutex<HostFn>>,
    /// The size of its linear memory after its last call, where the engine tells it.
    memory_size: Option<Arc<AtomicUsize>>,
}

impl Policy {
    /// The module on the lean engine.
    pub fn from_bytes(bytes: &[u8]) -> Result<Policy> {
        let module = engine::LeanModule::new(bytes).context("wasmtime cannot load the module")?;
        Ok(Policy(Engines::Lean(module)))
    }

    /// The module on another engine: `engines` makes one for each instance.
    pub fn with_engine(
        engines: impl Fn() -> Result<Box<dyn WebAssemblyEngineProvider>> + Send + Sync + 'static,
    ) -> Policy {
        Policy(Engines::Other(Box::new(engines)))
    }

    /// A new instance, initialised as a waPC guest, `host` answering its host calls.
    pub fn instance(&self, host: HostFn) -> Result<Instance> {
        let answers = Arc::new(Mutex::new(host));
        let callback = {
            let answers = Arc::clone(&answers);
            move |_id: u64, binding: &str, namespace: &str, operation: &str, payload: &[u8]| {
                let host = answers.lock().map_err(|_| "host state poisoned")?.clone();
                host(binding, namespace, operation, payload)
            }
        };
        let (engine, memory_size): (Box<dyn WebAssemblyEngineProvider>, _) = match &self.0 {
            Engines::Lean(module) => {
                let engine = module.engine();
                let memory_size = engine.memory_size();
                (Box::new(engine), Some(memory_size))
            }
            Engines::Other(engines) => (engines()?, None),
        };
        let host = WapcHost::new(engine, Some(Box::new(callback)))
            .context("the module does not start as a waPC guest")?;
        Ok(Instance {
            host,
            answers,
            memory_size,
        })
    }
}

impl Instance {
    /// Calls a waPC function with raw bytes; an `Err` is what the policy server reports as a
    /// guest failure or trap.
    pub fn call(&self, function: &str, payload: &[u8]) -> Result<Vec<u8>> {
        self.host
            .call(function, payload)
            .map_err(|e| anyhow!("guest call `{function}` failed: {e}"))
    }

    /// The size of the instance's linear memory after its last call, in bytes; `None` on an
    /// engine that does not tell it (only the lean one does).
    pub fn memory_size(&self) -> Option<usize> {
        let size = self.memory_size.as_ref()?;
        Some(size.load(Ordering::Relaxed))
    }

    /// Answers the guest's host calls with `host` from now on; returns what answered them.
    pub fn answer_host_calls_with(&self, host: HostFn) -> HostFn {
        match self.answers.lock() {
            Ok(mut answers) => std::mem::replace(&mut *answers, host),
            Err(_) => host,
        }
    }
}
