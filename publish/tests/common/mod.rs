//! What the registry tests share: the module under test, the `publish` binary run without the
//! caller's credentials, tags of their own.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha256};

pub fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run these tests through `make registry-test`")
    })
}

pub fn module_path() -> PathBuf {
    std::env::var_os("POLICY_WASM")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../annotated-policy.wasm"))
}

pub fn module() -> Vec<u8> {
    let path = module_path();
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {} ({e}): run `make annotated-policy.wasm`",
            path.display()
        )
    })
}

pub fn sha256(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// A tag of its own for each test and run, so that runs never see each other's pushes.
pub fn target(registry: &str, repository: &str) -> String {
    format!(
        "{registry}/kubewarden-test/{repository}:run-{}",
        std::process::id()
    )
}

/// Runs the `publish` binary, without any credentials of the caller's environment.
pub fn cli(args: &[&str], credentials: Option<(&str, &str)>) -> Output {
    match credentials {
        Some((username, password)) => cli_with(
            args,
            &[("OCI_USERNAME", username), ("OCI_PASSWORD", password)],
        ),
        None => cli_with(args, &[]),
    }
}

/// Runs the `publish` binary with only the given `OCI_*`, `SSL_CERT_FILE` and
/// `COSIGN_PASSWORD` variables.
pub fn cli_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_publish"));
    command.args(args);
    for name in [
        "OCI_USERNAME",
        "OCI_PASSWORD",
        "OCI_INSECURE",
        "SSL_CERT_FILE",
        "COSIGN_PASSWORD",
    ] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    command.output().expect("cannot run the publish binary")
}

/// The manifest digest the binary printed on stdout, after checking it succeeded.
pub fn succeeded(what: &str, output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{stderr}",
        output.status
    );
    eprint!("{what}:\n{stderr}{stdout}");
    let digest = stdout.trim().to_string();
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{what} printed {digest:?}, not a manifest digest"
    );
    digest
}

pub fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("publish-test-{}-{name}", std::process::id()))
}
