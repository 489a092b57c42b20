//! The lean engine of `policy-host`, on which `make preview` runs the module and the annotator
//! asks its protocol version, held to the policy server's engine (`wasmtime-provider`): every
//! case passes on it, fixture clusters answering its host calls, and it answers every case's
//! payload, the protocol version and a call the guest does not serve byte for byte as the policy
//! server's engine does.

use std::path::Path;

use e2e_tests::cases::{self, Case, SettingsCase};
use e2e_tests::{Instance, Policy, default_module_path, policy};

fn lean() -> Instance {
    Policy::lean(&default_module_path())
        .unwrap_or_else(|e| panic!("{e:#}\n(run `make annotated-policy.wasm` first)"))
        .instance()
        .unwrap()
}

#[test]
fn every_case_passes_on_the_lean_engine() {
    let instance = lean();
    let mutations = case_runner::run_mutation_cases(&instance).assert_passed();
    let settings = case_runner::run_settings_cases(&instance).assert_passed();
    eprintln!("{mutations} mutation and {settings} settings cases passed on the lean engine");
}

#[test]
fn the_lean_engine_answers_as_the_policy_servers() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut calls: Vec<(String, &str, Vec<u8>)> = vec![
        ("protocol_version".into(), "protocol_version", Vec::new()),
        (
            "an operation the guest does not serve".into(),
            "no_such_operation",
            b"{}".to_vec(),
        ),
    ];
    for (path, case) in cases::load::<Case>(&dir.join("cases")).unwrap() {
        calls.push((
            format!("{}: {}", path.display(), case.name),
            "validate",
            case.payload(),
        ));
    }
    for (path, case) in cases::load::<SettingsCase>(&dir.join("settings-cases")).unwrap() {
        let payload = case.payload();
        calls.push((
            format!("{}: {}", path.display(), case.name),
            "validate_settings",
            payload,
        ));
    }
    let (server, lean) = (policy().instance().unwrap(), lean());
    let mut differences = Vec::new();
    for (name, function, payload) in &calls {
        let answer = |instance: &Instance| match instance.call(function, payload) {
            Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
            Err(e) => Err(format!("{e:#}")),
        };
        let (want, got) = (answer(&server), answer(&lean));
        if want != got {
            differences.push(format!(
                "{name}:\n  policy server's engine: {want:?}\n  lean engine: {got:?}"
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} calls answered differently:\n{}",
        differences.len(),
        calls.len(),
        differences.join("\n")
    );
    assert!(
        calls.len() > 600,
        "the cases were not found: {} calls",
        calls.len()
    );
}
