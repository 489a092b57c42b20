//! Runs every case under `e2e-tests/cases` and `e2e-tests/settings-cases` through the compiled
//! policy, and reports every failure at once.

use std::collections::HashSet;
use std::path::Path;

use e2e_tests::cases::{self, Case, SettingsCase};
use e2e_tests::policy;

fn dir(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

fn report(kind: &str, total: usize, failures: Vec<String>) {
    assert!(total > 0, "no {kind} cases found");
    assert!(
        failures.is_empty(),
        "{} of {total} {kind} cases failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn mutation_cases() {
    let all = cases::load::<Case>(&dir("cases")).unwrap();
    let mut names = HashSet::new();
    let instance = policy().instance().unwrap();
    let mut failures = Vec::new();
    for (file, case) in &all {
        assert!(
            names.insert(case.name.clone()),
            "case name {} is used twice",
            case.name
        );
        if let Err(e) = cases::run(&instance, case) {
            failures.push(format!("{} ({}): {e:#}", case.name, file.display()));
        }
    }
    report("mutation", all.len(), failures);
}

#[test]
fn settings_cases() {
    let all = cases::load::<SettingsCase>(&dir("settings-cases")).unwrap();
    let instance = policy().instance().unwrap();
    let mut failures = Vec::new();
    for (file, case) in &all {
        if let Err(e) = cases::run_settings(&instance, case) {
            failures.push(format!("{} ({}): {e:#}", case.name, file.display()));
        }
    }
    report("settings", all.len(), failures);
}
