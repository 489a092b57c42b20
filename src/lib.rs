//! A Kubewarden mutating policy that gives multi-node GPU training pods the high-speed networking
//! of their cloud: AWS EFA, Azure InfiniBand, GCP GPUDirect-TCPXO or OCI SR-IOV. What it does is
//! `docs/behaviour.md`; the modules cite its sections.
//!
//! The flow of one request: [`admission`] checks the payload as UTF-8 once; [`json::envelope`]
//! reads, in one pass, the trigger's inputs of the pod, the settings onto a [`json::tape`] and,
//! for a pod a default trigger opts in, the pod into a [`json::object`] view that parses only what
//! the merge touches (any other opted-in pod is read into it a second time);
//! [`admission::trigger`] decides from the settings' trigger and owner keys alone. For a pod the
//! policy acts on, [`settings`] reads the rest of the settings into a [`settings::Config`] naming
//! one cloud of [`clouds`]; [`claims`] reads the DRA claims its containers name from the cluster, for the
//! GPUs they hold (every read of the cluster, those of [`compute_domain`], [`env_from`] and
//! [`preflight`] too, goes through the request's one [`cluster::Cluster`]); [`machine`] reads the machine the pod names, whose row and fabric decide the
//! injection, a [`profile::Profile`] that [`layers`] builds from the fabric's table under the
//! settings' and the machine's overlays; [`placement`] the device counts; [`engine`] merges the
//! profile into the pod in named steps with the operations of [`merge`]; and the answer is the
//! pod's own text with the additions spliced in. An MPIJob's launcher ([`mpi`]) is first given
//! what it passes to its ranks: its job read from the cluster, its workers' pod sent through the
//! same decision and engine. [`json`] holds every reader and the writer. For a
//! pod it would change, [`admission::pod_security`] holds what the engine added ([`engine::added`])
//! to the namespace's Pod Security level, and with `validateOnly` [`admission::validate_only`]
//! answers a refusal in place of the patch. This file only registers the two calls with the waPC
//! host.

pub mod admission;
pub mod claims;
pub mod clouds;
pub mod cluster;
pub mod compute_domain;
pub mod engine;
pub mod env_from;
pub mod error;
pub mod json;
pub mod k8s;
pub mod layers;
pub mod machine;
pub mod merge;
pub mod mpi;
pub mod multus;
pub mod placement;
pub mod preflight;
pub mod profile;
pub mod ratio;
pub mod settings;

use kubewarden_policy_sdk::protocol_version_guest;
use kubewarden_policy_sdk::wapc_guest::{CallResult, register_function};

#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    register_function("validate", validate);
    register_function("validate_settings", validate_settings);
    register_function("protocol_version", protocol_version_guest);
}

fn validate(payload: &[u8]) -> CallResult {
    Ok(admission::validate_with(payload, &host::kubernetes))
}

/// The policy server's host calls, for every read of the cluster (behaviour.md §9). Only the
/// waPC module has them: the playground (wasm32-unknown-unknown) and the native tests have no
/// host to link.
#[cfg(target_os = "wasi")]
mod host {
    /// `kubewarden/kubernetes/<operation>`: the answer, or the host's error as its text, whose
    /// words say why ([`crate::cluster`]).
    pub fn kubernetes(operation: &str, request: &[u8]) -> Result<Vec<u8>, String> {
        kubewarden_policy_sdk::wapc_guest::host_call("kubewarden", "kubernetes", operation, request)
            .map_err(|error| error.to_string())
    }
}

#[cfg(not(target_os = "wasi"))]
mod host {
    pub use crate::cluster::no_host as kubernetes;
}

fn validate_settings(payload: &[u8]) -> CallResult {
    Ok(admission::validate_settings(payload))
}
