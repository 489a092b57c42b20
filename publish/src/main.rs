//! `publish annotate`, `inspect`, `push`, `pull`, `verify`, `verify-sbom`, `generate-key` and
//! `sbom`: see [`USAGE`].
//!
//! Plain HTTP for registries on localhost, 127.0.0.1 and ::1, or with `--insecure` or
//! `OCI_INSECURE=1`; HTTPS otherwise. Credentials from `OCI_USERNAME` and `OCI_PASSWORD` when
//! set, else anonymous. `push`, `pull`, `verify` and `verify-sbom` write the manifest digest
//! to stdout, the rest to stderr; `inspect` writes the metadata to stdout.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use policy_metadata::annotate::annotation;
use policy_metadata::cli::{inspect_command, parse, read, write};
use publish::sign::{self, CYCLONEDX_PREDICATE_TYPE};
use publish::{
    Registry, WASM_LAYER_MEDIA_TYPE, auth_from_env, insecure_from_env, parse_reference, sbom,
};

const USAGE: &str = "usage:
  publish annotate -m <metadata.yml> [-u <usage.md>] -o <out.wasm> <module.wasm>
  publish inspect [-o yaml|json] <module.wasm>
  publish push [--insecure] [-k <cosign.key> [--sbom <sbom.cdx.json>]] <annotated.wasm> <host/repo:tag>
  publish pull [--insecure] <host/repo:tag> <out.wasm>
  publish verify [--insecure] -k <cosign.pub> <host/repo:tag>
  publish verify-sbom [--insecure] -k <cosign.pub> [-o <sbom.cdx.json>] <host/repo:tag>
  publish generate-key -o <prefix>
  publish sbom [--manifest-path <Cargo.toml>] -o <sbom.cdx.json>

annotate writes the metadata file, the module's protocol_version answer and the usage text
into the module's io.kubewarden.metadata section, as `kwctl annotate` does (same flags); it
needs publish built with --features annotate, else `policy-metadata annotate` does it.
inspect shows that metadata and fails if the policy server would refuse it.
push refuses a module that inspect would refuse. With -k it signs the pushed manifest digest
with that private key, as `cosign sign --key` does, and with --sbom also attests the SBOM,
as `cosign attest --key --type cyclonedx` does; the key's password is COSIGN_PASSWORD.
verify checks the module's signature with a public key, as the policy server does.
verify-sbom fetches the module's signed SBOM attestation, checks it, and writes the SBOM.
generate-key writes <prefix>.key (encrypted with COSIGN_PASSWORD) and <prefix>.pub in
cosign's formats, as `cosign generate-key-pair` does.
sbom writes the CycloneDX SBOM of the policy module's dependencies (wasm32-wasip1).

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
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    let Some((command, rest)) = args.split_first() else {
        bail!("{USAGE}");
    };
    match command.as_str() {
        "annotate" => annotate(rest),
        "inspect" => inspect_command(rest, USAGE),
        "push" | "pull" | "verify" | "verify-sbom" => {
            let mut parsed = parse(
                rest,
                &[
                    ("--insecure", "", false),
                    ("--key", "-k", true),
                    ("--sbom", "", true),
                    ("--output", "-o", true),
                ],
                USAGE,
            )?;
            let insecure = insecure_from_env() || parsed.switches.contains("--insecure");
            let key = parsed.values.remove("--key");
            let sbom = parsed.values.remove("--sbom");
            let output = parsed.values.remove("--output");
            let unused = |allowed: &[&str]| -> Result<()> {
                for (name, given) in [
                    ("-k", key.is_some()),
                    ("--sbom", sbom.is_some()),
                    ("-o", output.is_some()),
                ] {
                    if given && !allowed.contains(&name) {
                        bail!("{command} takes no {name}\n\n{USAGE}");
                    }
                }
                Ok(())
            };
            match (command.as_str(), parsed.positional.as_slice()) {
                ("push", [module, target]) => {
                    unused(&["-k", "--sbom"])?;
                    push(module, target, insecure, key.as_deref(), sbom.as_deref()).await
                }
                ("pull", [source, out]) => {
                    unused(&[])?;
                    pull(source, out, insecure).await
                }
                ("verify", [source]) => {
                    unused(&["-k"])?;
                    let key =
                        key.with_context(|| format!("verify needs -k <cosign.pub>\n\n{USAGE}"))?;
                    verify(source, &key, insecure).await
                }
                ("verify-sbom", [source]) => {
                    unused(&["-k", "-o"])?;
                    let key = key
                        .with_context(|| format!("verify-sbom needs -k <cosign.pub>\n\n{USAGE}"))?;
                    verify_sbom(source, &key, output.as_deref(), insecure).await
                }
                _ => bail!("wrong arguments for {command}\n\n{USAGE}"),
            }
        }
        "generate-key" => {
            let mut parsed = parse(rest, &[("--output-key-prefix", "-o", true)], USAGE)?;
            let (Some(prefix), []) = (
                parsed.values.remove("--output-key-prefix"),
                parsed.positional.as_slice(),
            ) else {
                bail!("generate-key needs -o <prefix>\n\n{USAGE}");
            };
            generate_key(&prefix)
        }
        "sbom" => {
            let mut parsed = parse(
                rest,
                &[("--manifest-path", "", true), ("--output", "-o", true)],
                USAGE,
            )?;
            let (Some(output), []) = (
                parsed.values.remove("--output"),
                parsed.positional.as_slice(),
            ) else {
                bail!("sbom needs -o <sbom.cdx.json>\n\n{USAGE}");
            };
            let manifest = parsed
                .values
                .remove("--manifest-path")
                .unwrap_or_else(|| "Cargo.toml".to_string());
            write_sbom(&manifest, &output)
        }
        _ => bail!("unknown command {command}\n\n{USAGE}"),
    }
}

/// `annotate`: policy-metadata's command, when built with the `annotate` feature.
#[cfg(feature = "annotate")]
fn annotate(rest: &[String]) -> Result<()> {
    policy_metadata::cli::annotate_command(rest, USAGE)
}

/// Without the `annotate` feature, publish builds no wasmtime, and says where annotating is.
#[cfg(not(feature = "annotate"))]
fn annotate(_: &[String]) -> Result<()> {
    bail!(
        "annotating runs the module in wasmtime, which this publish is built without: run \
         `cargo run -p policy-metadata -- annotate` (the same flags; `make annotated-policy.wasm` \
         does), or `cargo run -p publish --features annotate -- annotate`"
    )
}

/// COSIGN_PASSWORD, which may be set and empty (a key without password), as cosign reads it.
fn cosign_password() -> Result<String> {
    std::env::var("COSIGN_PASSWORD").map_err(|_| {
        anyhow::anyhow!(
            "COSIGN_PASSWORD is not set: set it to the key's password (`COSIGN_PASSWORD= ` for \
             a key made without one); this tool does not prompt"
        )
    })
}

async fn push(
    module: &str,
    target: &str,
    insecure: bool,
    key: Option<&str>,
    sbom: Option<&str>,
) -> Result<()> {
    let reference = parse_reference(target)?;
    let bytes = read(module)?;
    annotation(&bytes).with_context(|| format!("{module} would not load"))?;
    // Everything that can fail before anything is pushed, fails first.
    let signer = key
        .map(|key| -> Result<sign::Signer> {
            let password = cosign_password()?;
            sign::load_signer(&read(key)?, password.as_bytes()).with_context(|| key.to_string())
        })
        .transpose()?;
    let sbom = match (sbom, &signer) {
        (Some(path), Some(_)) => Some(
            serde_json::from_slice::<serde_json::Value>(&read(path)?)
                .with_context(|| format!("{path} is not JSON"))?,
        ),
        (Some(_), None) => bail!("--sbom needs -k: the SBOM is published as a signed attestation"),
        (None, _) => None,
    };
    let size = bytes.len();
    let registry = Registry::new(&reference, insecure, auth_from_env()?)?;
    let pushed = registry.push(&reference, bytes).await?;
    eprintln!("pushed {module} ({size} bytes) to {reference}");
    eprintln!("  layer  {} {WASM_LAYER_MEDIA_TYPE}", pushed.layer_digest);
    eprintln!("  module URL: registry://{reference}");
    match &signer {
        Some(signer) => {
            // By digest, never by tag: what was signed is exactly what was pushed.
            let signed = registry
                .sign(&reference, &pushed.manifest_digest, signer)
                .await?;
            eprintln!(
                "  signature {} ({})",
                signed.reference,
                if signed.added {
                    "signed"
                } else {
                    "already signed with this key"
                }
            );
            if let Some(sbom) = sbom {
                let attested = registry
                    .attest(
                        &reference,
                        &pushed.manifest_digest,
                        CYCLONEDX_PREDICATE_TYPE,
                        sbom,
                        signer,
                    )
                    .await?;
                eprintln!(
                    "  SBOM attestation {} ({})",
                    attested.reference,
                    if attested.added {
                        "attested"
                    } else {
                        "already there"
                    }
                );
            }
        }
        None => eprintln!(
            "  not signed: give -k (make push COSIGN_KEY=…) for a policy server with a \
             verificationConfig"
        ),
    }
    println!("{}", pushed.manifest_digest);
    Ok(())
}

async fn verify(source: &str, key: &str, insecure: bool) -> Result<()> {
    let reference = parse_reference(source)?;
    let public = read(key)?;
    let registry = Registry::new(&reference, insecure, auth_from_env()?)?;
    let digest = registry
        .verify(&reference, &public)
        .await
        .with_context(|| format!("verification with {key} failed"))?;
    eprintln!("verified {reference} (manifest {digest}) with {key}");
    println!("{digest}");
    Ok(())
}

async fn verify_sbom(source: &str, key: &str, out: Option<&str>, insecure: bool) -> Result<()> {
    let reference = parse_reference(source)?;
    let public = read(key)?;
    let registry = Registry::new(&reference, insecure, auth_from_env()?)?;
    let (digest, predicates) = registry
        .verified_predicates(&reference, &public, CYCLONEDX_PREDICATE_TYPE)
        .await
        .with_context(|| format!("SBOM verification with {key} failed"))?;
    eprintln!(
        "verified {} SBOM attestation(s) of {reference} (manifest {digest}) with {key}",
        predicates.len()
    );
    if let (Some(out), Some(latest)) = (out, predicates.last()) {
        let mut text = serde_json::to_vec_pretty(latest)?;
        text.push(b'\n');
        write(out, &text)?;
        eprintln!("  wrote the latest to {out}");
    }
    println!("{digest}");
    Ok(())
}

fn generate_key(prefix: &str) -> Result<()> {
    let private_path = format!("{prefix}.key");
    let public_path = format!("{prefix}.pub");
    for path in [&private_path, &public_path] {
        if Path::new(path).exists() {
            bail!("{path} exists: remove it or choose another prefix; a key is never overwritten");
        }
    }
    let password = cosign_password()?;
    let (private, public) = sign::generate_key_pair(password.as_bytes())?;
    write_private(&private_path, private.as_bytes())?;
    write(&public_path, public.as_bytes())?;
    eprintln!(
        "wrote {private_path} (ECDSA P-256, encrypted with COSIGN_PASSWORD) and {public_path}"
    );
    Ok(())
}

/// Like [`write`], readable by its owner only.
fn write_private(out: &str, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(out)
        .with_context(|| format!("cannot create {out}"))?;
    file.write_all(bytes)
        .with_context(|| format!("cannot write {out}"))
}

fn write_sbom(manifest: &str, out: &str) -> Result<()> {
    let bom = sbom::generate(Path::new(manifest))?;
    let components = bom.components.as_ref().map_or(0, |c| c.0.len());
    write(out, &sbom::to_json(bom)?)?;
    eprintln!(
        "wrote {out}: CycloneDX 1.5, {components} components of {} for {}",
        sbom::POLICY_CRATE,
        sbom::POLICY_TARGET
    );
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
