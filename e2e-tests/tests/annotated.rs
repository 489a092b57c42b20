//! The annotated module, the one users deploy. Its `io.kubewarden.metadata` section, read back
//! with a WebAssembly parser, is `policy-metadata.yml` with the module's protocol version and the
//! README as usage, and has what the policy server requires to load it; the rest of the module is
//! the build's, byte for byte; and it answers every case byte for byte as `policy.wasm` does.

mod common;

use std::path::Path;

use common::{pod_create_rules, policy_metadata, read, repo_root};
use e2e_tests::cases::{self, Case, SettingsCase};
use e2e_tests::{Policy, default_module_path, plain_module_path, policy};
use serde_json::{Map, Value};
use wasmparser::{Parser, Payload};

const SECTION: &str = "io.kubewarden.metadata";
const USAGE: &str = "io.kubewarden.policy.usage";

fn module(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| {
        panic!(
            "cannot read {} ({e}): run `make annotated-policy.wasm`",
            path.display()
        )
    })
}

/// Every section of `module` in order: its id, a custom section's name, and its content.
fn sections(module: &[u8]) -> Vec<(u8, Option<String>, Vec<u8>)> {
    let mut sections = Vec::new();
    for payload in Parser::new(0).parse_all(module) {
        let payload = payload.expect("the module parses");
        let name = match &payload {
            Payload::CustomSection(reader) => Some(reader.name().to_string()),
            _ => None,
        };
        if let Some((id, range)) = payload.as_section() {
            sections.push((id, name, module[range].to_vec()));
        }
    }
    sections
}

/// The section's JSON, read as the policy server finds it: a custom section by that name.
fn metadata_section() -> Map<String, Value> {
    let annotated = module(&default_module_path());
    let found: Vec<&[u8]> = Parser::new(0)
        .parse_all(&annotated)
        .filter_map(|payload| match payload.expect("the module parses") {
            Payload::CustomSection(reader) if reader.name() == SECTION => Some(reader.data()),
            _ => None,
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "the module has {} {SECTION} sections",
        found.len()
    );
    match serde_json::from_slice(found[0]) {
        Ok(Value::Object(object)) => object,
        other => panic!("the {SECTION} section is not a JSON object: {other:?}"),
    }
}

#[test]
fn the_section_is_the_metadata_file_with_the_protocol_version_and_the_readme() {
    let section = metadata_section();
    let file = policy_metadata();
    let file = file.as_object().expect("policy-metadata.yml is a mapping");

    for (key, value) in file {
        if key != "annotations" {
            assert_eq!(
                section.get(key),
                Some(value),
                "{key} differs from policy-metadata.yml"
            );
        }
    }
    let annotations = section["annotations"].as_object().expect("annotations");
    let file_annotations = file["annotations"]
        .as_object()
        .expect("annotations in the file");
    for (key, value) in file_annotations {
        assert_eq!(annotations.get(key), Some(value), "annotation {key}");
    }
    let readme = read(&repo_root().join("README.md"));
    assert_eq!(
        annotations.get(USAGE),
        Some(&Value::String(readme)),
        "{USAGE} is the README"
    );
    assert_eq!(
        annotations.len(),
        file_annotations.len() + 1,
        "annotations other than the file's and the usage"
    );

    // protocolVersion is the module's own answer.
    let answer = policy()
        .instance()
        .unwrap()
        .call("protocol_version", b"")
        .unwrap();
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(
        section.get("protocolVersion"),
        Some(&answer),
        "protocolVersion"
    );

    // Besides the file's keys and protocolVersion, kwctl writes policyType, whose default is
    // kubernetes (policy-evaluator's `Metadata`); nothing else.
    assert_eq!(section.get("policyType"), Some(&Value::from("kubernetes")));
    let mut keys: Vec<&str> = section.keys().map(String::as_str).collect();
    let mut expected: Vec<&str> = file.keys().map(String::as_str).collect();
    expected.extend(["protocolVersion", "policyType"]);
    keys.sort_unstable();
    expected.sort_unstable();
    assert_eq!(keys, expected, "the keys of the section");
}

/// What the policy server needs to load the module and run it as this policy: a waPC module
/// with protocol version v1, the rules it is registered for, and leave to mutate.
#[test]
fn the_section_has_what_the_policy_server_requires() {
    let section = metadata_section();
    assert_eq!(section["executionMode"], "kubewarden-wapc");
    assert_eq!(section["protocolVersion"], "v1");
    assert_eq!(section["rules"], pod_create_rules());
    assert_eq!(section["mutating"], true);
}

/// The host calls `kwctl annotate` finds in the module are those the section declares, so that
/// it warns of no mismatch. kwctl (crates/kwctl/src/wasm_scanner.rs, kubewarden-controller at
/// `3460bb71`) looks in the data segments, joined with a 0xff byte between them, for each
/// operation of policy-evaluator's capability tree: the operation counts where its namespace's
/// name and the operation's own text both occur, and an operation that begins another one
/// (`v1/oci_manifest` of `v1/oci_manifest_config`) only where it occurs not as that beginning.
#[test]
fn kwctl_finds_the_host_calls_the_section_declares() {
    const OPERATIONS: [(&str, &str); 11] = [
        ("crypto", "v1/is_certificate_trusted"),
        ("kubernetes", "can_i"),
        ("kubernetes", "get_resource"),
        ("kubernetes", "list_resources_all"),
        ("kubernetes", "list_resources_by_namespace"),
        ("net", "v1/dns_lookup_host"),
        ("oci", "v1/manifest_digest"),
        ("oci", "v1/oci_manifest"),
        ("oci", "v1/oci_manifest_config"),
        ("oci", "v1/verify"),
        ("oci", "v2/verify"),
    ];
    let annotated = module(&default_module_path());
    let mut data = Vec::new();
    for payload in Parser::new(0).parse_all(&annotated) {
        if let Payload::DataSection(reader) = payload.expect("the module parses") {
            for segment in reader {
                data.extend_from_slice(segment.expect("a data segment").data);
                data.push(0xff);
            }
        }
    }
    let at = |text: &str| -> Vec<usize> {
        let text = text.as_bytes();
        (0..data.len().saturating_sub(text.len()) + 1)
            .filter(|&i| data[i..].starts_with(text))
            .collect()
    };
    let found: Vec<String> = OPERATIONS
        .iter()
        .filter(|(namespace, operation)| {
            let longer: Vec<&str> = OPERATIONS
                .iter()
                .map(|(_, other)| *other)
                .filter(|other| other != operation && other.starts_with(operation))
                .collect();
            let places = at(operation);
            // Each longer operation: some place of this one is not where that one begins.
            let alone = |longer: &&str| {
                places
                    .iter()
                    .any(|&i| !data[i..].starts_with(longer.as_bytes()))
            };
            let present = match longer.as_slice() {
                [] => !places.is_empty(),
                longer => longer.iter().all(alone),
            };
            !at(namespace).is_empty() && present
        })
        .map(|(namespace, operation)| format!("{namespace}/{operation}"))
        .collect();
    assert_eq!(
        Value::from(found),
        metadata_section()["hostCapabilities"],
        "the host calls kwctl annotate would find, and those the section declares"
    );
}

#[test]
fn the_rest_of_the_module_is_the_builds_byte_for_byte() {
    let plain = module(&plain_module_path());
    let annotated = module(&default_module_path());
    let before = sections(&plain);
    let after = sections(&annotated);
    assert!(
        before
            .iter()
            .all(|(_, name, _)| name.as_deref() != Some(SECTION)),
        "policy.wasm is annotated already"
    );
    let added: Vec<_> = after
        .iter()
        .filter(|(_, name, _)| name.as_deref() == Some(SECTION))
        .collect();
    assert_eq!(added.len(), 1, "one {SECTION} section");
    let kept: Vec<_> = after
        .iter()
        .filter(|(_, name, _)| name.as_deref() != Some(SECTION))
        .cloned()
        .collect();
    assert!(
        kept == before,
        "the other sections differ from policy.wasm's, or their order"
    );
}

#[test]
fn every_case_gets_the_same_answer_bytes_from_both_modules() {
    let plain = Policy::load(&plain_module_path())
        .unwrap()
        .instance()
        .unwrap();
    let annotated = policy().instance().unwrap();
    let same = |function: &str, payload: &[u8], what: &str| {
        let left = plain.call(function, payload).map_err(|e| format!("{e:#}"));
        let right = annotated
            .call(function, payload)
            .map_err(|e| format!("{e:#}"));
        assert!(
            left == right,
            "{what}: the annotated module answers differently"
        );
    };
    same("protocol_version", b"", "protocol_version");

    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mutation = cases::load::<Case>(&dir.join("cases")).unwrap();
    for (file, case) in &mutation {
        same(
            "validate",
            &case.payload(),
            &format!("{} ({})", case.name, file.display()),
        );
    }
    let settings = cases::load::<SettingsCase>(&dir.join("settings-cases")).unwrap();
    for (file, case) in &settings {
        same(
            "validate_settings",
            &case.payload(),
            &format!("{} ({})", case.name, file.display()),
        );
    }
    assert!(
        !mutation.is_empty() && !settings.is_empty(),
        "no cases found"
    );
    eprintln!(
        "{} mutation and {} settings cases: the same answers",
        mutation.len(),
        settings.len()
    );
}
