//! The SBOM of the policy module: a CycloneDX 1.5 JSON document, written with the CycloneDX
//! project's `cyclonedx-bom` crate from `cargo metadata`.
//!
//! It lists what is compiled into the module and nothing else: the packages reached from the
//! crate `multinode-networking-policy` through normal dependencies, resolved for
//! `wasm32-wasip1` as `cargo build -p` resolves them (`cargo tree`), each described from
//! `cargo metadata`. Dev-dependencies (the tests'),
//! build-dependencies and the workspace's other crates (the e2e host, this tool, the
//! playground) are not in it. Each component has its purl, its licence expression and, for
//! crates.io packages, the SHA-256 that `Cargo.lock` records. There is no timestamp and no
//! serial number, so that the same lock file gives the same bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use cargo_metadata::{Metadata as CargoMetadata, MetadataCommand, Package};
use cyclonedx_bom::models::component::Classification;
use cyclonedx_bom::models::dependency::{Dependencies, Dependency};
use cyclonedx_bom::models::hash::{Hash, HashAlgorithm, HashValue, Hashes};
use cyclonedx_bom::models::license::{LicenseChoice, Licenses};
use cyclonedx_bom::models::tool::{Tool, Tools};
use cyclonedx_bom::prelude::*;

/// The crate whose module the SBOM describes.
pub const POLICY_CRATE: &str = "multinode-networking-policy";
/// The target it is built for.
pub const POLICY_TARGET: &str = "wasm32-wasip1";

/// `cargo metadata` of the workspace at `manifest_path`, resolved for [`POLICY_TARGET`] as
/// `Cargo.lock` pins it.
pub fn metadata(manifest_path: &Path) -> Result<CargoMetadata> {
    let mut command = MetadataCommand::new();
    if let Some(cargo) = std::env::var_os("CARGO") {
        command.cargo_path(cargo);
    }
    command
        .manifest_path(manifest_path)
        .other_options(vec![
            "--filter-platform".to_string(),
            POLICY_TARGET.to_string(),
            "--locked".to_string(),
        ])
        .exec()
        .with_context(|| format!("cargo metadata failed on {}", manifest_path.display()))
}

/// A package by (name, version).
pub type Crate = (String, String);
/// Each package with the ones it depends on.
pub type Graph = BTreeMap<Crate, BTreeSet<Crate>>;

/// The packages compiled into [`POLICY_CRATE`]'s module, as `cargo build -p` resolves them for
/// [`POLICY_TARGET`]: each (name, version) with the ones it depends on through normal
/// dependencies. Read from `cargo tree`, because `cargo metadata` unifies features across the
/// whole workspace, and so lists crates that only the workspace's other members switch on
/// (anyhow, foldhash and libm here).
pub fn module_graph(manifest_path: &Path) -> Result<Graph> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = std::process::Command::new(cargo)
        .args([
            "tree", "--locked", "-e", "normal", "--prefix", "depth", "-f", "{p}",
        ])
        .args([
            "--target",
            POLICY_TARGET,
            "-p",
            POLICY_CRATE,
            "--manifest-path",
        ])
        .arg(manifest_path)
        .output()
        .context("cannot run cargo tree")?;
    ensure!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    parse_tree(&String::from_utf8_lossy(&output.stdout))
}

/// `cargo tree --prefix depth -f '{p}'` lines (`2chrono v0.4.45`) as a graph. A package shown
/// again is marked `(*)` and its dependencies are not repeated: they were read the first time.
fn parse_tree(text: &str) -> Result<Graph> {
    let mut graph = Graph::new();
    let mut path: Vec<Crate> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let digits = line.bytes().take_while(u8::is_ascii_digit).count();
        let depth: usize = line[..digits]
            .parse()
            .with_context(|| format!("cargo tree line without depth: {line}"))?;
        let mut words = line[digits..].split_whitespace();
        let (Some(name), Some(version)) = (words.next(), words.next()) else {
            bail!("cargo tree line without name and version: {line}");
        };
        let package = (
            name.to_string(),
            version.trim_start_matches('v').to_string(),
        );
        ensure!(depth <= path.len(), "cargo tree skipped a level at: {line}");
        path.truncate(depth);
        if let Some(parent) = path.last() {
            graph
                .entry(parent.clone())
                .or_default()
                .insert(package.clone());
        }
        graph.entry(package.clone()).or_default();
        path.push(package);
    }
    ensure!(!graph.is_empty(), "cargo tree printed nothing");
    Ok(graph)
}

/// `Cargo.lock`'s checksums by (name, version): the SHA-256 of each crates.io `.crate` file.
fn lock_checksums(lock: &str) -> BTreeMap<(String, String), String> {
    let mut checksums = BTreeMap::new();
    for block in lock.split("[[package]]") {
        let field = |key: &str| {
            block.lines().find_map(|line| {
                line.strip_prefix(key)
                    .and_then(|rest| rest.trim().strip_prefix('='))
                    .map(|value| value.trim().trim_matches('"').to_string())
            })
        };
        if let (Some(name), Some(version), Some(checksum)) =
            (field("name "), field("version "), field("checksum "))
        {
            checksums.insert((name, version), checksum);
        }
    }
    checksums
}

fn bom_ref(package: &Package) -> String {
    format!("pkg:cargo/{}@{}", package.name, package.version)
}

fn component(
    package: &Package,
    kind: Classification,
    checksum: Option<&String>,
) -> Result<Component> {
    let mut component = Component::new(
        kind,
        package.name.as_str(),
        &package.version.to_string(),
        Some(bom_ref(package)),
    );
    component.purl = Some(
        Purl::new("cargo", package.name.as_str(), &package.version.to_string())
            .with_context(|| format!("no purl for {}", package.name))?,
    );
    component.description = package.description.as_deref().map(NormalizedString::new);
    // Cargo's old `MIT/Apache-2.0` spelling is read as the `OR` it means.
    component.licenses = package
        .license
        .as_ref()
        .and_then(|license| SpdxExpression::parse_lax(license.clone()).ok())
        .map(|expression| Licenses(vec![LicenseChoice::Expression(expression)]));
    component.hashes = checksum.map(|sha256| {
        Hashes(vec![Hash {
            alg: HashAlgorithm::SHA_256,
            content: HashValue(sha256.clone()),
        }])
    });
    Ok(component)
}

/// The SBOM of [`POLICY_CRATE`]'s module in the workspace at `manifest_path` (its
/// `Cargo.lock` beside it).
pub fn generate(manifest_path: &Path) -> Result<Bom> {
    let graph = module_graph(manifest_path)?;
    let metadata = metadata(manifest_path)?;
    let lock_path = metadata.workspace_root.join("Cargo.lock");
    let lock =
        std::fs::read_to_string(&lock_path).with_context(|| format!("cannot read {lock_path}"))?;
    let checksums = lock_checksums(&lock);
    let packages: BTreeMap<(String, String), &Package> = metadata
        .packages
        .iter()
        .map(|p| ((p.name.to_string(), p.version.to_string()), p))
        .collect();
    let package = |key: &(String, String)| {
        packages
            .get(key)
            .copied()
            .with_context(|| format!("{} {} is missing from cargo metadata", key.0, key.1))
    };

    let root = package(&(POLICY_CRATE.to_string(), metadata_version(&metadata)?))?;
    let mut components = Vec::new();
    let mut dependencies = Vec::new();
    for (key, deps) in &graph {
        let p = package(key)?;
        if p.id != root.id {
            components.push(component(p, Classification::Library, checksums.get(key))?);
        }
        dependencies.push(Dependency {
            dependency_ref: bom_ref(p),
            dependencies: deps
                .iter()
                .map(|dep| package(dep).map(bom_ref))
                .collect::<Result<BTreeSet<_>>>()?
                .into_iter()
                .collect(),
        });
    }

    let metadata = Metadata {
        component: Some(component(root, Classification::Application, None)?),
        tools: Some(Tools::List(vec![Tool {
            vendor: None,
            name: Some(NormalizedString::new(env!("CARGO_PKG_NAME"))),
            version: Some(NormalizedString::new(env!("CARGO_PKG_VERSION"))),
            hashes: None,
            external_references: None,
        }])),
        ..Metadata::default()
    };
    Ok(Bom {
        serial_number: None,
        metadata: Some(metadata),
        components: Some(Components(components)),
        dependencies: Some(Dependencies(dependencies)),
        spec_version: SpecVersion::V1_5,
        ..Bom::default()
    })
}

/// The version of [`POLICY_CRATE`] in the workspace.
fn metadata_version(metadata: &CargoMetadata) -> Result<String> {
    metadata
        .workspace_packages()
        .into_iter()
        .find(|p| p.name.as_str() == POLICY_CRATE)
        .map(|p| p.version.to_string())
        .with_context(|| format!("the workspace has no crate {POLICY_CRATE}"))
}

/// The SBOM as CycloneDX 1.5 JSON.
pub fn to_json(bom: Bom) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    bom.output_as_json_v1_5(&mut out)
        .context("cannot write the SBOM as CycloneDX JSON")?;
    out.push(b'\n');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_are_read_per_package_from_the_lock_file() {
        let lock = r#"
[[package]]
name = "a"
version = "1.0.0"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "abc"

[[package]]
name = "local"
version = "0.1.0"
"#;
        let checksums = lock_checksums(lock);
        assert_eq!(
            checksums.get(&("a".to_string(), "1.0.0".to_string())),
            Some(&"abc".to_string())
        );
        assert_eq!(checksums.len(), 1, "a path package has no checksum");
    }

    #[test]
    fn the_tree_is_read_as_edges_and_repeats_add_none() {
        let tree = "0root v0.1.0 (/src)\n1a v1.0.0\n2c v3.0.0\n1b v2.0.0\n2a v1.0.0 (*)\n2m v0.1.0 (proc-macro)\n";
        let graph = parse_tree(tree).unwrap();
        let key = |n: &str, v: &str| (n.to_string(), v.to_string());
        assert_eq!(graph.len(), 5);
        assert_eq!(
            graph[&key("root", "0.1.0")],
            BTreeSet::from([key("a", "1.0.0"), key("b", "2.0.0")])
        );
        assert_eq!(
            graph[&key("a", "1.0.0")],
            BTreeSet::from([key("c", "3.0.0")])
        );
        assert_eq!(
            graph[&key("b", "2.0.0")],
            BTreeSet::from([key("a", "1.0.0"), key("m", "0.1.0")])
        );
    }
}
