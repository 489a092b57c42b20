//! `publish annotate`, `publish inspect`, `publish push` and `publish pull`: see [`USAGE`].
//!
//! Plain HTTP for registries on localhost, 127.0.0.1 and ::1, or with `--insecure` or
//! `OCI_INSECURE=1`; HTTPS otherwise. Credentials from `OCI_USERNAME` and `OCI_PASSWORD` when
//! set, else anonymous. `push` and `pull` write the manifest digest to stdout, the rest to
//! stderr; `inspect` writes the metadata to stdout.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use publish::annotate::{annotate, annotation};
use publish::metadata::USAGE_ANNOTATION;
use publish::{Registry, WASM_LAYER_MEDIA_TYPE, auth_from_env, insecure_from_env, parse_reference};

const USAGE: &str = "usage:
  publish annotate -m <metadata.yml> [-u <usage.md>] -o <out.wasm> <module.wasm>
  publish inspect [-o yaml|json] <module.wasm>
  publish push [--insecure] <annotated.wasm> <host/repo:tag>
  publish pull [--insecure] <host/repo:tag> <out.wasm>

annotate writes the metadata file, the module's protocol_version answer and the usage text
into the module's io.kubewarden.metadata section, as `kwctl annotate` does (same flags).
inspect shows that metadata and fails if the policy server would refuse it.
push refuses a module that inspect would refuse.

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

/// An option: its long name, its short name (or ""), whether it takes a value.
type Spec = (&'static str, &'static str, bool);

/// A command's arguments: positionals in order, options by long name.
#[derive(Default)]
struct Parsed {
    positional: Vec<String>,
    values: BTreeMap<&'static str, String>,
    switches: BTreeSet<&'static str>,
}

fn parse(args: &[String], specs: &[Spec]) -> Result<Parsed> {
    let mut parsed = Parsed::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if !arg.starts_with('-') {
            parsed.positional.push(arg.clone());
            continue;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, Some(value)),
            _ => (arg.as_str(), None),
        };
        let Some(&(long, _, takes_value)) = specs
            .iter()
            .find(|(long, short, _)| name == *long || (!short.is_empty() && name == *short))
        else {
            bail!("unknown option {arg}\n\n{USAGE}");
        };
        if takes_value {
            let value = match inline {
                Some(value) => value.to_string(),
                None => args
                    .next()
                    .with_context(|| format!("{long} needs a value\n\n{USAGE}"))?
                    .clone(),
            };
            parsed.values.insert(long, value);
        } else if inline.is_some() {
            bail!("{long} takes no value\n\n{USAGE}");
        } else {
            parsed.switches.insert(long);
        }
    }
    Ok(parsed)
}

async fn run(args: Vec<String>) -> Result<()> {
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    let Some((command, rest)) = args.split_first() else {
        bail!("{USAGE}");
    };
    match command.as_str() {
        "annotate" => {
            let specs = [
                ("--metadata-path", "-m", true),
                ("--usage-path", "-u", true),
                ("--output-path", "-o", true),
            ];
            let mut parsed = parse(rest, &specs)?;
            let (Some(metadata), Some(output), [module]) = (
                parsed.values.remove("--metadata-path"),
                parsed.values.remove("--output-path"),
                parsed.positional.as_slice(),
            ) else {
                bail!("annotate needs -m, -o and one module\n\n{USAGE}");
            };
            let usage = parsed.values.remove("--usage-path");
            annotate_file(module, &metadata, usage.as_deref(), &output)
        }
        "inspect" => {
            let parsed = parse(rest, &[("--output", "-o", true)])?;
            let [module] = parsed.positional.as_slice() else {
                bail!("inspect needs one module\n\n{USAGE}");
            };
            let json = match parsed.values.get("--output").map(String::as_str) {
                None | Some("yaml") => false,
                Some("json") => true,
                Some(other) => bail!("-o {other} is not an output format; use yaml or json"),
            };
            inspect(module, json)
        }
        "push" | "pull" => {
            let parsed = parse(rest, &[("--insecure", "", false)])?;
            let insecure = insecure_from_env() || parsed.switches.contains("--insecure");
            match (command.as_str(), parsed.positional.as_slice()) {
                ("push", [module, target]) => push(module, target, insecure).await,
                ("pull", [source, out]) => pull(source, out, insecure).await,
                _ => bail!("{command} needs two arguments\n\n{USAGE}"),
            }
        }
        _ => bail!("unknown command {command}\n\n{USAGE}"),
    }
}

fn read(path: &str) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {path}"))
}

fn read_text(path: &str) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {path} as UTF-8 text"))
}

/// Writes beside the target, then renames: a failure leaves no half-written module.
fn write(out: &str, bytes: &[u8]) -> Result<()> {
    let out_path = Path::new(out);
    let partial = out_path.with_extension("partial");
    std::fs::write(&partial, bytes)
        .with_context(|| format!("cannot write {}", partial.display()))?;
    std::fs::rename(&partial, out_path).with_context(|| format!("cannot write {out}"))
}

fn annotate_file(module: &str, metadata: &str, usage: Option<&str>, out: &str) -> Result<()> {
    let bytes = read(module)?;
    let text = read_text(metadata)?;
    let usage_text = usage.map(read_text).transpose()?;
    let annotated = annotate(&bytes, metadata, &text, usage_text.as_deref())
        .with_context(|| format!("cannot annotate {module}"))?;
    write(out, &annotated)?;
    eprintln!(
        "annotated {module} ({} bytes) with {metadata}{}: {out} ({} bytes)",
        bytes.len(),
        usage.map(|u| format!(" and {u}")).unwrap_or_default(),
        annotated.len()
    );
    Ok(())
}

fn inspect(module: &str, json: bool) -> Result<()> {
    let bytes = read(module)?;
    let (mut metadata, data) = annotation(&bytes).with_context(|| module.to_string())?;
    if json {
        println!("{}", String::from_utf8_lossy(data));
        return Ok(());
    }
    // The usage text is the README: long, and readable in the source.
    let usage = metadata
        .annotations
        .as_mut()
        .and_then(|annotations| annotations.remove(USAGE_ANNOTATION));
    print!("{}", serde_yaml::to_string(&metadata)?);
    if let Some(usage) = usage {
        println!(
            "# {USAGE_ANNOTATION}: {} lines, not shown (-o json shows everything)",
            usage.lines().count()
        );
    }
    Ok(())
}

async fn push(module: &str, target: &str, insecure: bool) -> Result<()> {
    let reference = parse_reference(target)?;
    let bytes = read(module)?;
    annotation(&bytes).with_context(|| format!("{module} would not load"))?;
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
    write(out, &pulled.module)?;
    eprintln!(
        "pulled {reference} ({} bytes, layer {}) to {out}",
        pulled.module.len(),
        pulled.manifest.layers[0].digest
    );
    println!("{}", pulled.manifest_digest);
    Ok(())
}
