//! The strategies the properties draw from: pods (`containers`, `pods`, `machines`, broken by
//! `corruption`), valid settings (`settings`, `rows`, `gcp`), settings of any shape (`any`), and
//! the policy server's answers to the preflight's host calls (`host`).

use proptest::prelude::*;
use serde_json::Value;

use corruption::{corrupt, corruptions};
use pods::pod;
use settings::{preflight_setting, valid_settings};

pub(crate) mod any;
pub(crate) mod claims;
pub(crate) mod containers;
pub(crate) mod corruption;
pub(crate) mod gcp;
pub(crate) mod host;
pub(crate) mod machines;
pub(crate) mod pods;
pub(crate) mod rows;
pub(crate) mod settings;

pub(crate) const CUSTOM_TRIGGER: &str = "example.com/fast-net";

/// Valid settings, and a pod (maybe corrupted) that mostly opts in under them.
/// The settings' `preflight` is drawn last, so that the other draws are those of the generators
/// before it was added (the shares in `coverage.rs` were measured on them).
pub(crate) fn case() -> impl Strategy<Value = (Value, Value)> {
    valid_settings()
        .prop_flat_map(|(settings, trigger, cloud)| {
            (
                Just(settings),
                pod(trigger, cloud),
                corruptions(),
                preflight_setting(),
            )
        })
        .prop_map(|(mut settings, pod, corruptions, preflight)| {
            if let Some(mode) = preflight {
                settings["preflight"] = mode;
            }
            (settings, corrupt(pod, &corruptions))
        })
}
