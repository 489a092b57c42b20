//! A Kubewarden mutating policy that gives multi-node GPU training pods the high-speed networking
//! of their cloud: AWS EFA, Azure InfiniBand, GCP GPUDirect-TCPXO or OCI SR-IOV.
//!
//! The flow of one request: [`peek`] reads only the trigger's inputs, [`trigger`] decides,
//! [`settings`] names the cloud, [`clouds`] turns it into a [`profile::Profile`] (data), [`view`]
//! reads an opted-in pod once, parsing only what the merge touches, and [`engine`] merges the
//! profile into it with the operations of [`merge`]; the answer is the pod's own text with the
//! additions spliced in. [`admission`] holds the two calls as pure functions; this file only
//! registers them with the waPC host.

pub mod admission;
pub mod clouds;
pub mod engine;
pub mod error;
pub mod fragment;
pub mod k8s_names;
pub mod lenient;
pub mod merge;
pub mod multus;
pub mod peek;
pub mod placement;
pub mod profile;
pub mod quantity;
pub mod ratio;
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
    Ok(admission::validate(payload))
}

fn validate_settings(payload: &[u8]) -> CallResult {
    Ok(admission::validate_settings(payload))
}
