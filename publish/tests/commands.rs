//! `publish annotate` and `publish inspect` are policy-metadata's commands (its own tests hold
//! them to the policy server's checks; `annotate` needs the `annotate` feature, and says so
//! without it), and `publish push` refuses what `inspect` refuses, before any connection.
//! Reads the module the build writes (`PLAIN_POLICY_WASM`, else `policy.wasm` at the repository
//! root); no registry is needed.

use std::path::{Path, PathBuf};
use std::process::Output;

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

fn cli(args: &[&Path]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_publish"))
        .args(args)
        .output()
        .expect("cannot run the publish binary")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn publish_annotates_with_its_feature_and_inspects_as_policy_metadata_does() {
    let dir = std::env::temp_dir().join(format!("publish-commands-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("annotated.wasm");
    let done = cli(&[
        Path::new("annotate"),
        Path::new("-m"),
        &root().join("policy-metadata.yml"),
        Path::new("-o"),
        &out,
        &plain_module(),
    ]);
    if !cfg!(feature = "annotate") {
        assert!(!done.status.success(), "annotated without wasmtime");
        assert!(
            stderr(&done).contains("cargo run -p policy-metadata -- annotate"),
            "{}",
            stderr(&done)
        );
        return std::fs::remove_dir_all(&dir).unwrap();
    }
    assert!(done.status.success(), "annotate failed: {}", stderr(&done));
    let shown = cli(&[Path::new("inspect"), &out]);
    assert!(shown.status.success(), "inspect failed: {}", stderr(&shown));
    let yaml = String::from_utf8_lossy(&shown.stdout);
    assert!(yaml.contains("protocolVersion: v1\n"), "{yaml}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_module_without_metadata_is_neither_inspected_nor_pushed() {
    let plain = plain_module();
    let inspected = cli(&[Path::new("inspect"), &plain]);
    assert!(!inspected.status.success(), "inspect accepted policy.wasm");
    assert!(
        stderr(&inspected).contains("has no io.kubewarden.metadata section"),
        "{}",
        stderr(&inspected)
    );
    // Refused before any connection: the address need not answer.
    let pushed = cli(&[
        Path::new("push"),
        &plain,
        Path::new("127.0.0.1:9/policies/mnp:v0"),
    ]);
    assert!(!pushed.status.success(), "pushed policy.wasm");
    let message = stderr(&pushed);
    assert!(message.contains("would not load"), "{message}");
    assert!(
        message.contains("has no io.kubewarden.metadata section"),
        "{message}"
    );
}
