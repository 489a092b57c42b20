//! `make manifests`: prints on stdout the manifests a cluster needs for the policy, rendered from
//! one settings file; progress and errors go to stderr, so that stdout can be piped to kubectl.
//!
//!     manifests --settings FILE --registry HOST/REPO:TAG
//!     manifests --write-deploy     # renders every vendor file into deploy/ (the test's renders)

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use manifests::{deploy_registry, deploy_targets, render};
use serde_json::Value;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

const USAGE: &str = "usage: make manifests SETTINGS=FILE REGISTRY=host/repo:tag \
     (manifests --settings FILE --registry REF | manifests --write-deploy)";

fn run() -> Result<()> {
    let root = repo_root();
    let metadata: Value = serde_yaml::from_str(&read(&root.join("policy-metadata.yml"))?)
        .context("policy-metadata.yml is not YAML")?;
    let (mut settings, mut registry, mut write_deploy) = (None, None, false);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--settings" => settings = args.next(),
            "--registry" => registry = args.next(),
            "--write-deploy" => write_deploy = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => bail!("unknown argument {other:?}; {USAGE}"),
        }
    }
    if write_deploy {
        let registry = deploy_registry(&metadata, &read(&root.join("Cargo.toml"))?)?;
        for (source, target) in deploy_targets(&root)? {
            let name = relative(&root, &source);
            let text = render(&name, &read(&source)?, &registry, &metadata)?;
            if let Some(dir) = target.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&target, text)
                .with_context(|| format!("cannot write {}", target.display()))?;
            eprintln!("manifests: {name} -> {}", relative(&root, &target));
        }
        return Ok(());
    }
    let (Some(settings), Some(registry)) = (settings, registry) else {
        bail!("SETTINGS and REGISTRY are both needed; {USAGE}");
    };
    if settings.is_empty() || registry.is_empty() {
        bail!("SETTINGS and REGISTRY are both needed; {USAGE}");
    }
    eprintln!(
        "manifests: rendering {settings} for registry://{}",
        registry.trim_start_matches("registry://")
    );
    let text = render(
        &settings,
        &read(Path::new(&settings))?,
        &registry,
        &metadata,
    )?;
    print!("{text}");
    Ok(())
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The repository, where policy-metadata.yml, Cargo.toml and the vendor files are.
fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}
