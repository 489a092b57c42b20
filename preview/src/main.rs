//! `make preview`: runs the compiled policy on a pod and shows what it changes ([`preview`]).
//!
//!     preview [--cloud aws|azure|gcp|oci|rdma] [--pod FILE] [--settings FILE] [--module FILE]
//!
//! Pod and settings files may be YAML or JSON. A settings file that holds the NeMo chart's
//! `multinodeNetworking:` block at any depth (a whole values.yaml) is read from that block.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use case_runner::read_yaml;
use policy_payload::settings_block;
use preview::{Outcome, preview};

struct Args {
    cloud: String,
    pod: Option<PathBuf>,
    settings: Option<PathBuf>,
    module: PathBuf,
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<ExitCode> {
    let args = parse_args()?;
    let examples = repo_root().join("examples");
    let pod_path = args
        .pod
        .clone()
        .unwrap_or_else(|| examples.join("pod.yaml"));
    let settings_path = args.settings.clone().unwrap_or_else(|| {
        examples
            .join("settings")
            .join(format!("{}.yaml", args.cloud))
    });
    let pod = read_yaml(&pod_path)?;
    let settings = settings_block(read_yaml(&settings_path)?);
    let module = std::fs::read(&args.module)
        .with_context(|| format!("cannot read {}", args.module.display()))?;
    let outcome =
        preview(&module, &pod, &settings).with_context(|| args.module.display().to_string())?;

    println!("# settings: {}", settings_path.display());
    let (warnings, mutated) = match outcome {
        Outcome::SettingsRejected(message) => {
            println!("settings rejected: {message}");
            return Ok(ExitCode::from(1));
        }
        Outcome::Rejected { warnings, message } => {
            print_warnings(&pod_path, &warnings);
            println!("rejected: {message}");
            return Ok(ExitCode::from(1));
        }
        Outcome::Accepted { warnings, mutated } => (warnings, mutated),
    };
    print_warnings(&pod_path, &warnings);
    match mutated {
        None => println!("accepted unchanged"),
        Some(mutated) => {
            let patch = json_patch::diff(&pod, &mutated);
            println!(
                "accepted with {} patch operations (the JSON Patch the policy server sends):",
                patch.0.len()
            );
            println!("{}\n", serde_json::to_string_pretty(&patch)?);
            println!("mutated pod:\n{}", serde_yaml::to_string(&mutated)?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_warnings(pod_path: &Path, warnings: &[String]) {
    println!("# pod: {}\n", pod_path.display());
    for warning in warnings {
        println!("warning: {warning}");
    }
}

fn parse_args() -> Result<Args> {
    let mut args = Args {
        cloud: "aws".into(),
        pod: None,
        settings: None,
        module: repo_root().join("annotated-policy.wasm"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--cloud" => args.cloud = value()?,
            "--pod" => args.pod = Some(value()?.into()),
            "--settings" => args.settings = Some(value()?.into()),
            "--module" => args.module = value()?.into(),
            "-h" | "--help" => {
                println!(
                    "preview [--cloud aws|azure|gcp|oci|rdma] [--pod FILE] [--settings FILE] [--module FILE]"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?}; see --help"),
        }
    }
    if args.settings.is_none()
        && !["aws", "azure", "gcp", "oci", "rdma"].contains(&args.cloud.as_str())
    {
        bail!(
            "--cloud must be one of aws, azure, gcp, oci, rdma (got {:?})",
            args.cloud
        );
    }
    Ok(args)
}

/// The repository, where the examples and `make`'s module are.
fn repo_root() -> PathBuf {
    let preview = Path::new(env!("CARGO_MANIFEST_DIR"));
    preview.parent().unwrap_or(preview).to_path_buf()
}
