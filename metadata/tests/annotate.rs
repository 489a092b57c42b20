//! `policy-metadata annotate` and `inspect` on the module the build writes (`PLAIN_POLICY_WASM`,
//! else `policy.wasm` at the repository root), with the repository's metadata file and README,
//! and the refusals: a module annotated already, metadata the policy server would refuse, and
//! an inspection of a module without metadata. (`publish`'s tests hold its push to the same.)
#![cfg(feature = "annotate")]

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn plain_module() -> PathBuf {
    let path = std::env::var_os("PLAIN_POLICY_WASM")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("policy.wasm"));
    assert!(
        path.is_file(),
        "{} is missing: run `make policy.wasm`",
        path.display()
    );
    path
}

/// A directory of this test's own, emptied first.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "policy-metadata-annotate-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn cli(args: &[&Path]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_policy-metadata"))
        .args(args)
        .output()
        .expect("cannot run the policy-metadata binary")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn annotate(metadata: &Path, out: &Path, module: &Path) -> Output {
    let readme = root().join("README.md");
    cli(&[
        Path::new("annotate"),
        Path::new("-m"),
        metadata,
        Path::new("-u"),
        &readme,
        Path::new("-o"),
        out,
        module,
    ])
}

#[test]
fn annotates_the_module_and_inspect_shows_what_the_policy_server_reads() {
    let dir = scratch("annotate");
    let out = dir.join("annotated.wasm");
    let plain = plain_module();
    let done = annotate(&root().join("policy-metadata.yml"), &out, &plain);
    assert!(done.status.success(), "annotate failed: {}", stderr(&done));
    let annotated = std::fs::read(&out).unwrap();
    assert!(annotated.starts_with(&std::fs::read(&plain).unwrap()));

    let shown = cli(&[Path::new("inspect"), &out]);
    assert!(shown.status.success(), "inspect failed: {}", stderr(&shown));
    let yaml = stdout(&shown);
    for line in [
        "protocolVersion: v1\n",
        "mutating: true\n",
        "executionMode: kubewarden-wapc\n",
        "io.kubewarden.policy.title: multinode-networking-policy\n",
    ] {
        assert!(
            yaml.contains(line),
            "inspect does not show {line:?}:\n{yaml}"
        );
    }
    let readme_lines = std::fs::read_to_string(root().join("README.md"))
        .unwrap()
        .lines()
        .count();
    assert!(
        yaml.ends_with(&format!(
            "# io.kubewarden.policy.usage: {readme_lines} lines, not shown (-o json shows everything)\n"
        )),
        "{yaml}"
    );

    let json = cli(&[
        Path::new("inspect"),
        Path::new("-o"),
        Path::new("json"),
        &out,
    ]);
    assert!(
        json.status.success(),
        "inspect -o json failed: {}",
        stderr(&json)
    );
    let metadata: Value = serde_json::from_str(&stdout(&json)).expect("inspect -o json is JSON");
    assert_eq!(metadata["protocolVersion"], "v1");
    assert_eq!(
        metadata["annotations"]["io.kubewarden.policy.usage"],
        std::fs::read_to_string(root().join("README.md"))
            .unwrap()
            .as_str()
    );

    // A module annotated already is refused, and the output left alone.
    let again = dir.join("again.wasm");
    let refused = annotate(&root().join("policy-metadata.yml"), &again, &out);
    assert!(!refused.status.success(), "annotated an annotated module");
    assert!(
        stderr(&refused).contains("already has an io.kubewarden.metadata section"),
        "{}",
        stderr(&refused)
    );
    assert!(
        !again.exists(),
        "a refused annotation wrote {}",
        again.display()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn metadata_the_policy_server_would_refuse_is_refused_naming_the_field() {
    let dir = scratch("refusals");
    let rules = "rules:\n  - apiGroups: [\"\"]\n    apiVersions: [v1]\n    resources: [pods]\n    operations: [CREATE]\n";
    let cases = [
        (
            "unknown-key",
            format!("{rules}mutating: true\nmutatting: true\n"),
            "unknown key `mutatting`",
        ),
        (
            "missing-rules",
            "mutating: true\n".to_string(),
            "rules is missing",
        ),
        (
            "execution-mode",
            format!("{rules}mutating: true\nexecutionMode: wasi\n"),
            "executionMode is \"wasi\"",
        ),
        (
            "execution-mode-typo",
            format!("{rules}mutating: true\nexecutionMode: kubewarden-wasm\n"),
            "executionMode: unknown variant `kubewarden-wasm`",
        ),
    ];
    for (name, text, want) in cases {
        let metadata = dir.join(format!("{name}.yml"));
        std::fs::write(&metadata, text).unwrap();
        let out = dir.join(format!("{name}.wasm"));
        let refused = annotate(&metadata, &out, &plain_module());
        assert!(!refused.status.success(), "{name}: annotated");
        let message = stderr(&refused);
        assert!(message.contains(want), "{name}: {message:?} lacks {want:?}");
        assert!(
            message.contains(&format!("{name}.yml")),
            "{name}: {message:?} names no file"
        );
        assert!(
            !out.exists(),
            "{name}: a refused annotation wrote {}",
            out.display()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_module_without_metadata_is_not_inspected() {
    let plain = plain_module();
    let inspected = cli(&[Path::new("inspect"), &plain]);
    assert!(!inspected.status.success(), "inspect accepted policy.wasm");
    assert!(
        stderr(&inspected).contains("has no io.kubewarden.metadata section"),
        "{}",
        stderr(&inspected)
    );
}
