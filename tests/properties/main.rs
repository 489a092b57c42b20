//! Property tests over generated pods and settings, run through the policy's pure core
//! (`admission::evaluate` / `admission::validate`), natively. The behaviour they hold the policy
//! to is `docs/behaviour.md`'s.
//!
//! Pods are built from the parts real training pods have: GPU and CPU-only containers with
//! quantities in every spelling the API server may send, init containers and native sidecars,
//! existing env (`value`, `valueFrom`), mounts (`/dev/shm` among them), volumes named like the
//! policy's (defined the same or differently), capabilities in every spelling, `privileged` and
//! `SYS_ADMIN`, seccomp profiles at pod and container level and in the legacy annotations, Multus
//! annotations in both forms, owner references, unknown fields, and then nulls and wrong JSON
//! types dropped anywhere. Settings are valid ones for all four clouds, or anything at all for the
//! no-panic properties.
//!
//! For every input: the answer is deterministic; a second pass over a mutated pod changes nothing;
//! the policy server's patch only adds (`support/patch_rule.rs`, shared with the case runner);
//! containers without GPUs are untouched; the mutated pod breaks no Kubernetes API rule that the
//! input kept; a pod `k8s-openapi` could decode still decodes, and is never refused for a JSON
//! type; a pod that did not opt in is accepted unchanged; settings accepted at load never refuse a
//! pod; and no payload or settings, however broken, panics. A property holds only for the cases
//! it is about (a mutation, a pod that did not opt in, a well-typed pod): the generators are held
//! to a minimum share of each, so that a generator gone wrong fails a test instead of making the
//! properties pass without checking anything.
//!
//! One test binary, so that the generators compile once:
//! - `generators/`: the strategies. `containers.rs`, `pods.rs` and `machines.rs` build pods,
//!   `corruption.rs` breaks them; `settings.rs`, `rows.rs` and `gcp.rs` build valid settings,
//!   `any.rs` settings of any shape; `host.rs` the policy server's answers to the preflight;
//!   `mod.rs` draws a case (settings and a pod) from them.
//! - `generators/claims.rs`: the cluster's answers to a pod's claim reads, of every shape.
//! - `run.rs` runs the policy; `api_rules.rs` and `inspect.rs` read what it answered.
//! - The properties, by topic: `decision.rs` (every pod's answer), `mutation.rs` (what a mutation
//!   may change), `injection.rs` (what it injects), `preflight.rs` (the host calls and the
//!   namespace's Pod Security level), `claims.rs` (GPUs through DRA claims), `env_from.rs` (the
//!   env a container takes from ConfigMaps stays the user's), `launcher.rs` (what an MPIJob's
//!   launcher passes its ranks is what its workers get), `robustness.rs` (no
//!   panics, settings refused as they should be), `validate_only.rs` (the validate-only answer
//!   held to the injector's, on pods as drawn and as the API server stores them).
//! - `coverage.rs`: the generators produce the cases the properties are about.
//! - `regressions.rs`: inputs the properties and the fuzzer found, minimized.

#[path = "../support/claim_rules.rs"]
mod claim_rules;
#[path = "../support/patch_rule.rs"]
mod patch_rule;

mod api_rules;
mod claims;
mod coverage;
mod decision;
mod env_from;
mod generators;
mod injection;
mod inspect;
mod launcher;
mod mutation;
mod nvlink;
mod preflight;
mod regressions;
mod robustness;
mod run;
mod runtime_refusals;
mod validate_only;

/// The configuration of every `proptest!` block. Failures are pinned as named regression tests
/// (`regressions.rs`) rather than in a seed file that would outlive the generators it was drawn
/// from.
fn config() -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    }
}
