//! A Kubewarden mutating policy that gives multi-node GPU training pods the high-speed networking
//! of their cloud: AWS EFA, Azure InfiniBand, GCP GPUDirect-TCPXO or OCI SR-IOV. What it does is
//! `docs/behaviour.md`; the modules cite its sections.
//!
//! The flow of one request: [`admission`] checks the payload as UTF-8 once; [`peek`] reads, in one
//! pass, only the trigger's inputs of the pod and the settings onto a [`tape`]; [`trigger`]
//! decides from the settings' trigger and owner keys alone. For a pod the policy acts on,
//! [`settings`] reads the rest of the settings into a [`settings::Config`] naming one cloud of
//! [`clouds`]; [`view`] reads the pod a second time, parsing only what the merge touches, and
//! stops there; [`machine`] reads the machine the pod names, whose row and fabric decide the
//! injection, a [`profile::Profile`] (data: the fabric's table under the settings' layers);
//! [`placement`] the device counts; [`engine`] merges the profile into the pod with the
//! operations of [`merge`]; and the answer is the pod's own text with the additions spliced in.
//! This file only registers the two calls with the waPC host.
//!
//! JSON is held four ways, each where it pays:
//!
//! - **Lenient readers** ([`lenient`]): serde visitors that read a field of the wrong type as
//!   absent. The decision's pass and the lists the merge only reads and extends (env, mounts,
//!   volumes, init containers) use them: a pod that is not the policy's must pass whatever it
//!   holds, and a list item of the wrong shape is simply not one of the policy's.
//! - **The tape** ([`tape`]): the settings, parsed once into a flat vector whose strings borrow
//!   from the request, the instance tables kept as text until a pod names a row. Settings come
//!   with every request; a tree of `serde_json::Value` would allocate for every member.
//! - **The view** ([`view`]): an opted-in pod, parsed into objects only where the merge reads or
//!   writes (its [`view::Shape`]), every other value kept as a slice of the request's text and
//!   copied to the answer byte for byte. A debug-build check ([`merge::expect_read`]) fails every
//!   test that reads a member the shape does not parse.
//! - **Text** ([`fragment`]): what the policy adds, rendered as JSON once per request (the
//!   tables' env and mount entries at compile time) and spliced in.
//!
//! `serde_json::Value` is not in the module: a small value compared whole (a pod volume against
//! the policy's, a quantity) is read onto a tape, and a reader of the module's own answers every
//! JSON type, since serde's "invalid type" message links its float formatting (BENCHMARKS.md).

pub mod admission;
pub mod clouds;
pub mod engine;
pub mod error;
pub mod fragment;
pub mod k8s_names;
pub mod layers;
pub mod lenient;
pub mod machine;
pub mod merge;
pub mod multus;
pub mod peek;
pub mod placement;
pub mod preflight;
pub mod profile;
pub mod quantity;
pub mod ratio;
pub mod record;
pub mod settings;
pub mod tape;
pub mod trigger;
pub mod view;

use kubewarden_policy_sdk::protocol_version_guest;
use kubewarden_policy_sdk::wapc_guest::{CallResult, register_function};

#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    register_function("validate", validate);
    register_function("validate_settings", validate_settings);
    register_function("protocol_version", protocol_version_guest);
}

fn validate(payload: &[u8]) -> CallResult {
    Ok(admission::validate_with(payload, &host::list))
}

/// The policy server's host calls, for the preflight (behaviour.md §9). Only the waPC module
/// has them: the playground (wasm32-unknown-unknown) and the native tests have no host to link.
#[cfg(target_os = "wasi")]
mod host {
    /// `kubernetes/list_resources_by_namespace`; any error is the host's "you may not look".
    pub fn list(request: &[u8]) -> Option<Vec<u8>> {
        kubewarden_policy_sdk::wapc_guest::host_call(
            "kubewarden",
            "kubernetes",
            "list_resources_by_namespace",
            request,
        )
        .ok()
    }
}

#[cfg(not(target_os = "wasi"))]
mod host {
    pub use crate::preflight::no_host as list;
}

fn validate_settings(payload: &[u8]) -> CallResult {
    Ok(admission::validate_settings(payload))
}
