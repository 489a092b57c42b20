//! Runs every case under `e2e-tests/cases` and `e2e-tests/settings-cases` through the compiled
//! policy (the runner of `case-runner`, which `cargo test` runs against the policy's core
//! natively), and reports every failure at once; checks that every message the cases expect is one
//! of the templates of `e2e-tests/messages.yaml`, each template expected by some case, and that
//! the README's examples are templates too.

use std::path::Path;

use e2e_tests::cases::{self, Case, Kind, SettingsCase};
use e2e_tests::policy;

fn dir(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// The runner the policy crate's tests run natively, here with the module answering.
#[test]
fn mutation_cases() {
    let instance = policy().instance().unwrap();
    let total = case_runner::run_mutation_cases(&instance).assert_passed();
    eprintln!("{total} mutation cases passed through the module");
}

#[test]
fn settings_cases() {
    let instance = policy().instance().unwrap();
    let total = case_runner::run_settings_cases(&instance).assert_passed();
    eprintln!("{total} settings cases passed through the module");
}

fn messages() -> Vec<cases::Template> {
    cases::load_messages(&dir("messages.yaml")).unwrap_or_else(|e| panic!("{e:#}"))
}

#[test]
fn every_expected_message_is_one_template_and_every_template_is_expected() {
    let table = messages();
    let mut expected = cases::expected_messages(&cases::load::<Case>(&dir("cases")).unwrap());
    expected.extend(cases::expected_problems(
        &cases::load::<SettingsCase>(&dir("settings-cases")).unwrap(),
    ));
    let failures = cases::check_table(&table, &expected);
    assert!(
        failures.is_empty(),
        "{} problems with the messages of the cases and messages.yaml:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The README's examples, where `…` stands for the text left out: in "Bad input and the answers
/// it gets" (docs/troubleshooting.md), the code spans of four words or more in the Answer column
/// are whole messages (the shorter ones are values such as `"8"` or `valid: false`); in the
/// README's "Reading the warnings", the code spans of the first column are how warnings start.
#[test]
fn the_readme_examples_are_templates_of_the_table() {
    let table = messages();
    let readme = std::fs::read_to_string(dir("../README.md")).unwrap();
    let troubleshooting = std::fs::read_to_string(dir("../docs/troubleshooting.md")).unwrap();
    let answers: Vec<String> =
        cases::readme_table_spans(&troubleshooting, "## Bad input and the answers it gets", 1)
            .into_iter()
            .filter(|span| span.matches(' ').count() >= 3)
            .collect();
    let warnings = cases::readme_table_spans(&readme, "**Reading the warnings.**", 0);
    assert!(
        answers.len() >= 5 && warnings.len() >= 4,
        "the README's tables were not found: {answers:?} {warnings:?}"
    );
    let warning_templates: Vec<cases::Template> = table
        .iter()
        .filter(|t| t.kind == Kind::Warning)
        .cloned()
        .collect();
    let mut failures = Vec::new();
    for (examples, templates, prefix) in [
        (&answers, &table, false),
        (&warnings, &warning_templates, true),
    ] {
        for example in examples {
            let matched = cases::readme_matches(templates, example, prefix);
            // A start may be shared by several warnings; a whole message is one template.
            let fits = if prefix {
                !matched.is_empty()
            } else {
                matched.len() == 1
            };
            if !fits {
                failures.push(format!(
                    "README: {example:?} matches {:?} in messages.yaml; write it as the policy does, `…` standing for values",
                    matched.iter().map(|t| &t.id).collect::<Vec<_>>()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
