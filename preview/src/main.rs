//! `make preview`: runs the compiled policy on a pod and shows what it changes ([`preview`]).
//!
//!     preview [--cloud aws|azure|gcp|oci|rdma | --settings FILE] [--pod FILE] [--module FILE]
//!
//! Pod and settings files may be YAML or JSON. The pod file may hold a Pod, a job manifest (its
//! first worker pod is previewed, as the job's controller would create it) or a `kind: List`; a
//! settings file that holds the NeMo chart's `multinodeNetworking:` block at any depth (a whole
//! values.yaml) is read from that block. Each pod's output leads with a summary of what was
//! added where, then the JSON Patch and the mutated pod.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use case_runner::read_yaml;
use policy_payload::settings_block;
use preview::input::{Input, pods};
use preview::{Outcome, preview, reason, summary};
use serde_json::Value;

const CLOUDS: [&str; 5] = ["aws", "azure", "gcp", "oci", "rdma"];

/// What a cluster would check that the preview cannot: the policy's reads of the cluster answer
/// errors here, as for an AdmissionPolicy, and it says nothing of them.
const NOT_CHECKED: &str = "not checked without a cluster: the objects the settings name \
     (ResourceClaimTemplates of deviceClaim, NetworkAttachmentDefinitions, ConfigMaps such as \
     Azure's topology), the pod's ComputeDomain, and its namespace's Pod Security level; in a \
     cluster the policy reads them and warns where one is missing";

struct Args {
    cloud: Option<String>,
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
        let cloud = args.cloud.as_deref().unwrap_or("aws");
        examples.join("settings").join(format!("{cloud}.yaml"))
    });
    let text = std::fs::read_to_string(&pod_path)
        .with_context(|| format!("cannot read {}", pod_path.display()))?;
    let inputs = pods(&pod_path.display().to_string(), &text)?;
    for skipped in &inputs.skipped {
        eprintln!(
            "preview: {}: left aside {skipped}, which is no pod or job",
            pod_path.display()
        );
    }
    let settings = settings_block(read_yaml(&settings_path)?);
    let module = std::fs::read(&args.module)
        .with_context(|| format!("cannot read {}", args.module.display()))?;

    println!("# settings: {}", settings_path.display());
    let mut code = 0;
    for (i, input) in inputs.pods.iter().enumerate() {
        if i > 0 {
            println!("\n---");
        }
        let outcome = preview(&module, &input.pod, &settings)
            .with_context(|| args.module.display().to_string())?;
        println!("# pod: {} ({})\n", input.origin, pod_path.display());
        match show(input, &settings, outcome)? {
            Shown::SettingsRejected => return Ok(ExitCode::from(1)),
            Shown::Rejected => code = 1,
            Shown::Answered => {}
        }
    }
    Ok(ExitCode::from(code))
}

enum Shown {
    SettingsRejected,
    Rejected,
    Answered,
}

/// One pod's output: the summary (what was added where, the warnings, what was not checked),
/// then the JSON Patch and the mutated pod.
fn show(input: &Input, settings: &Value, outcome: Outcome) -> Result<Shown> {
    let (warnings, mutated) = match outcome {
        Outcome::SettingsRejected(message) => {
            println!("settings rejected: {message}");
            return Ok(Shown::SettingsRejected);
        }
        Outcome::Rejected { warnings, message } => {
            println!("rejected: {message}");
            print_warnings(&warnings);
            return Ok(Shown::Rejected);
        }
        Outcome::Accepted { warnings, mutated } => (warnings, mutated),
    };
    let Some(mutated) = mutated else {
        println!(
            "unchanged: {}",
            reason::unchanged(&input.pod, settings, &warnings)
        );
        print_warnings(&warnings);
        return Ok(Shown::Answered);
    };
    println!("added:");
    for line in summary::changes(&input.pod, &mutated) {
        println!("  {line}");
    }
    print_warnings(&warnings);
    println!("{NOT_CHECKED}\n");
    let patch = json_patch::diff(&input.pod, &mutated);
    println!(
        "{} patch operations (the JSON Patch the policy server sends):",
        patch.0.len()
    );
    println!("{}\n", serde_json::to_string_pretty(&patch)?);
    println!("mutated pod:\n{}", serde_yaml::to_string(&mutated)?);
    Ok(Shown::Answered)
}

fn print_warnings(warnings: &[String]) {
    if warnings.is_empty() {
        println!("no warnings");
    }
    for warning in warnings {
        println!("warning: {warning}");
    }
}

fn parse_args() -> Result<Args> {
    let mut args = Args {
        cloud: None,
        pod: None,
        settings: None,
        module: repo_root().join("annotated-policy.wasm"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--cloud" => args.cloud = Some(value()?),
            "--pod" => args.pod = Some(value()?.into()),
            "--settings" => args.settings = Some(value()?.into()),
            "--module" => args.module = value()?.into(),
            "-h" | "--help" => {
                println!(
                    "preview [--cloud aws|azure|gcp|oci|rdma | --settings FILE] [--pod FILE] [--module FILE]"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?}; see --help"),
        }
    }
    match (&args.cloud, &args.settings) {
        // The settings file names its cloud; a CLOUD beside it would be silently ignored.
        (Some(cloud), Some(settings)) => bail!(
            "CLOUD={cloud} (--cloud) and SETTINGS={} (--settings) are both given: the settings file \
             already chooses the cloud, so CLOUD would be ignored; give only one of them",
            settings.display()
        ),
        (Some(cloud), None) if !CLOUDS.contains(&cloud.as_str()) => bail!(
            "CLOUD (--cloud) must be one of {} (got {cloud:?}), or give SETTINGS=FILE instead",
            CLOUDS.join(", ")
        ),
        _ => {}
    }
    Ok(args)
}

/// The repository, where the examples and `make`'s module are.
fn repo_root() -> PathBuf {
    let preview = Path::new(env!("CARGO_MANIFEST_DIR"));
    preview.parent().unwrap_or(preview).to_path_buf()
}
