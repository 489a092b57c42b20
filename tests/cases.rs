//! Every YAML case of the end-to-end suite (`e2e-tests/cases`, with the vendor files and the
//! preflight's fixture clusters, and `e2e-tests/settings-cases`), run against the policy's core
//! natively by the runner that `make e2e-tests` runs through the compiled module: the same
//! checks, the Rust code answering instead of the module. A debug build's assertions (such as
//! `merge::expect_read`) hold here, and a panic is the failure of its case, reported with the
//! others.

use std::io::Write;
use std::panic::{self, AssertUnwindSafe};

use case_runner::anyhow::{Result, anyhow};
use case_runner::{Answerer, HostFn, Report};
use multinode_networking_policy::admission;

/// The policy's two calls as `src/lib.rs` registers them with the waPC host, its host module
/// included: the Kubernetes host calls of every read of the cluster, whose error reaches the
/// policy as its text, as the waPC guest's error displays it.
struct Native;

impl Answerer for Native {
    fn validate(&self, payload: &[u8], host: &HostFn) -> Result<Vec<u8>> {
        let kubernetes = |operation: &str, request: &[u8]| {
            host("kubewarden", "kubernetes", operation, request)
                .map_err(|error| format!("Host error: {error}"))
        };
        caught("validate", || {
            admission::validate_with(payload, &kubernetes)
        })
    }

    fn validate_settings(&self, payload: &[u8]) -> Result<Vec<u8>> {
        caught("validate_settings", || {
            admission::validate_settings(payload)
        })
    }
}

/// What `call` answers; a panic, which would trap the module, is an error.
fn caught(function: &str, call: impl FnOnce() -> Vec<u8>) -> Result<Vec<u8>> {
    panic::catch_unwind(AssertUnwindSafe(call)).map_err(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        anyhow!("`{function}` panicked: {message}")
    })
}

/// Asserts that every case passed and says how many did. The line goes to the process's stderr
/// itself, which the test harness does not capture, so that `cargo test` shows it.
fn passed(report: Report) {
    let total = report.assert_passed();
    let _ = writeln!(
        std::io::stderr(),
        "{total} {} cases passed natively",
        report.kind
    );
}

#[test]
fn mutation_cases() {
    passed(case_runner::run_mutation_cases(&Native));
}

#[test]
fn settings_cases() {
    passed(case_runner::run_settings_cases(&Native));
}
