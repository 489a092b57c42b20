//! `publish push <module.wasm> <host/repo:tag>` and `publish pull <host/repo:tag> <out.wasm>`.
//!
//! Plain HTTP for registries on localhost, 127.0.0.1 and ::1, or with `--insecure` or
//! `OCI_INSECURE=1`; HTTPS otherwise. Credentials from `OCI_USERNAME` and `OCI_PASSWORD` when
//! set, else anonymous. The manifest digest goes to stdout, the rest to stderr.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use publish::{Registry, WASM_LAYER_MEDIA_TYPE, auth_from_env, insecure_from_env, parse_reference};

const USAGE: &str = "usage:
  publish push [--insecure] <module.wasm> <host/repo:tag>
  publish pull [--insecure] <host/repo:tag> <out.wasm>

Plain HTTP for localhost, 127.0.0.1 and ::1, or with --insecure or OCI_INSECURE=1.
Credentials: OCI_USERNAME and OCI_PASSWORD (the token, for ghcr.io); anonymous without them.";

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Vec<String>) -> Result<()> {
    let mut insecure = insecure_from_env();
    let mut positional = Vec::new();
    for arg in args {
        match arg.as_str() {
            "--insecure" => insecure = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            flag if flag.starts_with('-') => bail!("unknown option {flag}\n\n{USAGE}"),
            _ => positional.push(arg),
        }
    }
    match positional.as_slice() {
        [command, module, target] if command == "push" => push(module, target, insecure).await,
        [command, source, out] if command == "pull" => pull(source, out, insecure).await,
        _ => bail!("{USAGE}"),
    }
}

async fn push(module: &str, target: &str, insecure: bool) -> Result<()> {
    let reference = parse_reference(target)?;
    let bytes = std::fs::read(module).with_context(|| format!("cannot read {module}"))?;
    let size = bytes.len();
    let registry = Registry::new(&reference, insecure, auth_from_env()?)?;
    let pushed = registry.push(&reference, bytes).await?;
    eprintln!("pushed {module} ({size} bytes) to {reference}");
    eprintln!("  layer  {} {WASM_LAYER_MEDIA_TYPE}", pushed.layer_digest);
    eprintln!("  module URL: registry://{reference}");
    println!("{}", pushed.manifest_digest);
    Ok(())
}

async fn pull(source: &str, out: &str, insecure: bool) -> Result<()> {
    let reference = parse_reference(source)?;
    let registry = Registry::new(&reference, insecure, auth_from_env()?)?;
    let pulled = registry.pull(&reference).await?;
    // Write beside the target, then rename: a failed pull leaves no half-written module.
    let out_path = Path::new(out);
    let partial = out_path.with_extension("partial");
    std::fs::write(&partial, &pulled.module)
        .with_context(|| format!("cannot write {}", partial.display()))?;
    std::fs::rename(&partial, out_path).with_context(|| format!("cannot write {out}"))?;
    eprintln!(
        "pulled {reference} ({} bytes, layer {}) to {out}",
        pulled.module.len(),
        pulled.manifest.layers[0].digest
    );
    println!("{}", pulled.manifest_digest);
    Ok(())
}
