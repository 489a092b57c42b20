//! The `annotate` and `inspect` commands, with the argument reader and the file helpers they
//! use: `policy-metadata` runs them, and `publish` runs the same ones beside its registry
//! commands (`annotate` only when built with its `annotate` feature), so both spell their flags
//! and messages alike.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::annotate::annotation;
use crate::metadata::USAGE_ANNOTATION;

/// An option: its long name, its short name (or ""), whether it takes a value.
pub type Spec = (&'static str, &'static str, bool);

/// A command's arguments: positionals in order, options by long name.
#[derive(Default)]
pub struct Parsed {
    pub positional: Vec<String>,
    pub values: BTreeMap<&'static str, String>,
    pub switches: BTreeSet<&'static str>,
}

/// Reads `args` by `specs`; a message about a wrong argument ends with `usage`.
pub fn parse(args: &[String], specs: &[Spec], usage: &str) -> Result<Parsed> {
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
            bail!("unknown option {arg}\n\n{usage}");
        };
        if takes_value {
            let value = match inline {
                Some(value) => value.to_string(),
                None => args
                    .next()
                    .with_context(|| format!("{long} needs a value\n\n{usage}"))?
                    .clone(),
            };
            parsed.values.insert(long, value);
        } else if inline.is_some() {
            bail!("{long} takes no value\n\n{usage}");
        } else {
            parsed.switches.insert(long);
        }
    }
    Ok(parsed)
}

/// `annotate -m <metadata.yml> [-u <usage.md>] -o <out.wasm> <module.wasm>`, the flags of
/// `kwctl annotate`.
#[cfg(feature = "annotate")]
pub fn annotate_command(args: &[String], usage: &str) -> Result<()> {
    let specs = [
        ("--metadata-path", "-m", true),
        ("--usage-path", "-u", true),
        ("--output-path", "-o", true),
    ];
    let mut parsed = parse(args, &specs, usage)?;
    let (Some(metadata), Some(output), [module]) = (
        parsed.values.remove("--metadata-path"),
        parsed.values.remove("--output-path"),
        parsed.positional.as_slice(),
    ) else {
        bail!("annotate needs -m, -o and one module\n\n{usage}");
    };
    let usage_path = parsed.values.remove("--usage-path");
    annotate_file(module, &metadata, usage_path.as_deref(), &output)
}

/// `inspect [-o yaml|json] <module.wasm>`.
pub fn inspect_command(args: &[String], usage: &str) -> Result<()> {
    let parsed = parse(args, &[("--output", "-o", true)], usage)?;
    let [module] = parsed.positional.as_slice() else {
        bail!("inspect needs one module\n\n{usage}");
    };
    let json = match parsed.values.get("--output").map(String::as_str) {
        None | Some("yaml") => false,
        Some("json") => true,
        Some(other) => bail!("-o {other} is not an output format; use yaml or json"),
    };
    inspect(module, json)
}

pub fn read(path: &str) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {path}"))
}

pub fn read_text(path: &str) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {path} as UTF-8 text"))
}

/// Writes beside the target, then renames: a failure leaves no half-written module.
pub fn write(out: &str, bytes: &[u8]) -> Result<()> {
    let out_path = Path::new(out);
    let partial = out_path.with_extension("partial");
    std::fs::write(&partial, bytes)
        .with_context(|| format!("cannot write {}", partial.display()))?;
    std::fs::rename(&partial, out_path).with_context(|| format!("cannot write {out}"))
}

#[cfg(feature = "annotate")]
fn annotate_file(module: &str, metadata: &str, usage: Option<&str>, out: &str) -> Result<()> {
    let bytes = read(module)?;
    let text = read_text(metadata)?;
    let usage_text = usage.map(read_text).transpose()?;
    let annotated = crate::annotate::annotate(&bytes, metadata, &text, usage_text.as_deref())
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
