//! `make preview`: runs the compiled policy on a pod and shows what it changes. The module runs
//! on `policy-host`'s lean engine, which the e2e tests hold to the policy server's answers on
//! every case; with no cluster, as for an `AdmissionPolicy`, its host calls are errors.
//!
//!     preview [--cloud aws|azure|gcp|oci|rdma] [--pod FILE] [--settings FILE] [--module FILE]
//!
//! Pod and settings files may be YAML or JSON. A settings file that holds the NeMo chart's
//! `multinodeNetworking:` block at any depth (a whole values.yaml) is read from that block.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use case_runner::cluster::Recorder;
use case_runner::{Response, SettingsResponse, read_yaml};
use fixtures::{admission_request, payload, pod_kind};
use policy_host::Policy;
use policy_metadata::annotate::annotation;
use policy_payload::settings_block;

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
    // The policy server checks a module's metadata before it runs it: so does the preview.
    annotation(&module)
        .with_context(|| format!("the policy server would not load {}", args.module.display()))?;
    let instance = Policy::from_bytes(&module)?.instance(Recorder::new(None).host())?;
    println!("# settings: {}", settings_path.display());
    let checked = SettingsResponse::decode(
        &instance.call("validate_settings", &serde_json::to_vec(&settings)?)?,
    )?;
    if !checked.valid {
        println!("settings rejected: {}", checked.message.unwrap_or_default());
        return Ok(ExitCode::from(1));
    }
    println!("# pod: {}\n", pod_path.display());
    let request = admission_request("CREATE", &pod_kind(), &pod);
    let response = Response::decode(&instance.call("validate", &payload(&request, &settings))?)?;
    for warning in response.warnings.iter().flatten() {
        println!("warning: {warning}");
    }
    if !response.accepted {
        println!("rejected: {}", response.message.unwrap_or_default());
        return Ok(ExitCode::from(1));
    }
    match response.mutated_object {
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
