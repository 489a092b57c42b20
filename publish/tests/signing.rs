//! Signing, verification and the SBOM attestation against a real registry, with the `publish`
//! binary as `make push` runs it. What is stored is checked against cosign's formats as its
//! sources define them, and the signatures with OpenSSL, which shares no code with sigstore-rs:
//! a signature that OpenSSL verifies over the stored payload is one cosign verifies too.
//!
//! Needs `OCI_TEST_REGISTRY` (an open registry) and `openssl`: `make registry-test` provides
//! both. Without them the tests are ignored.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use common::{cli_with, env, module, module_path, succeeded, target, temp_path};
use publish::sign::{
    CYCLONEDX_PREDICATE_TYPE, DSSE_MEDIA_TYPE, IN_TOTO_PAYLOAD_TYPE, SIGNATURE_ANNOTATION,
    SIMPLE_SIGNING_MEDIA_TYPE,
};
use publish::{Registry, RegistryAuth, parse_reference};
use serde_json::{Value, json};

const PASSWORD: &str = "correct horse battery staple";

/// A directory of its own for a test's keys and files.
fn scratch(name: &str) -> PathBuf {
    let dir = temp_path(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn failed(what: &str, output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(!output.status.success(), "{what} succeeded:\n{stderr}");
    // registry-test.sh runs these tests with --nocapture, so that this shows in `make test`:
    // each line marked as expected, so that no `error:` line there reads as a failure.
    eprintln!("{what} failed, as it should (expected):");
    for line in stderr.lines() {
        eprintln!("  (expected) {line}");
    }
    stderr
}

/// A key pair made by `publish generate-key` with [`PASSWORD`]; returns (private, public).
fn key_pair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let prefix = dir.join(name);
    let output = cli_with(
        &["generate-key", "-o", text(&prefix)],
        &[("COSIGN_PASSWORD", PASSWORD)],
    );
    assert!(
        output.status.success(),
        "generate-key failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (prefix.with_extension("key"), prefix.with_extension("pub"))
}

/// `publish push` of `module` to `target`, signed with `key` when given.
fn push(module: &Path, target: &str, key: Option<&Path>, sbom: Option<&Path>) -> Output {
    let mut args = vec!["push".to_string()];
    if let Some(key) = key {
        args.extend(["-k".to_string(), text(key).to_string()]);
    }
    if let Some(sbom) = sbom {
        args.extend(["--sbom".to_string(), text(sbom).to_string()]);
    }
    args.extend([text(module).to_string(), target.to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    cli_with(&args, &[("COSIGN_PASSWORD", PASSWORD)])
}

fn verify(target: &str, public: &Path) -> Output {
    cli_with(&["verify", "-k", text(public), target], &[])
}

/// Whether OpenSSL verifies `signature` (DER) of `message` with the PEM public key.
fn openssl_verifies(dir: &Path, public: &Path, message: &[u8], signature: &[u8]) -> bool {
    let message_path = dir.join("message");
    let signature_path = dir.join("signature.der");
    std::fs::write(&message_path, message).unwrap();
    std::fs::write(&signature_path, signature).unwrap();
    let output = Command::new("openssl")
        .args(["dgst", "-sha256", "-verify", text(public), "-signature"])
        .args([text(&signature_path), text(&message_path)])
        .output()
        .expect("cannot run openssl: run these tests through `make registry-test`");
    output.status.success()
}

fn registry_for(target: &str) -> Registry {
    Registry::new(
        &parse_reference(target).unwrap(),
        false,
        RegistryAuth::Anonymous,
    )
    .unwrap()
}

/// The module with one more custom section: another module, as valid and as annotated.
fn another_module(dir: &Path) -> PathBuf {
    let mut bytes = module();
    let name = b"publish-test";
    let payload = b"another build";
    bytes.push(0); // custom section
    bytes.push((1 + name.len() + payload.len()) as u8);
    bytes.push(name.len() as u8);
    bytes.extend_from_slice(name);
    bytes.extend_from_slice(payload);
    let path = dir.join("another.wasm");
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
#[ignore = "needs openssl: run `make registry-test`"]
fn generate_key_writes_cosigns_formats_and_never_overwrites() {
    let dir = scratch("generate-key");
    let (private, public) = key_pair(&dir, "cosign");

    // cosign's encrypted key: PEM `ENCRYPTED SIGSTORE PRIVATE KEY` around the JSON of
    // go-securesystemslib's `encrypted` package, scrypt N=32768 r=8 p=1 and NaCl secretbox
    // (cosign's pkg/cosign/keys.go).
    let pem = std::fs::read_to_string(&private).unwrap();
    let body: String = pem
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    assert!(
        pem.starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n"),
        "{pem}"
    );
    let sealed: Value = serde_json::from_slice(&BASE64.decode(body).unwrap()).unwrap();
    assert_eq!(sealed["kdf"]["name"], "scrypt");
    assert_eq!(sealed["kdf"]["params"], json!({"N": 32768, "r": 8, "p": 1}));
    assert_eq!(sealed["cipher"]["name"], "nacl/secretbox");
    assert!(sealed["ciphertext"].is_string() && sealed["kdf"]["salt"].is_string());
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&private).unwrap().permissions(),
    );
    assert_eq!(mode & 0o077, 0, "the private key is readable by others");

    // The public key: PKIX PEM of a P-256 key, as OpenSSL reads it.
    let output = Command::new("openssl")
        .args(["pkey", "-pubin", "-noout", "-text", "-in", text(&public)])
        .output()
        .expect("cannot run openssl");
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "openssl cannot read {}",
        public.display()
    );
    assert!(
        shown.contains("prime256v1") || shown.contains("P-256"),
        "{shown}"
    );

    let again = cli_with(
        &["generate-key", "-o", text(&dir.join("cosign"))],
        &[("COSIGN_PASSWORD", PASSWORD)],
    );
    assert!(failed("generate-key over an existing key", &again).contains("exists"));
    assert_eq!(
        std::fs::read_to_string(&private).unwrap(),
        pem,
        "the key was overwritten"
    );
    let no_password = cli_with(&["generate-key", "-o", text(&dir.join("other"))], &[]);
    assert!(
        failed("generate-key without COSIGN_PASSWORD", &no_password).contains("COSIGN_PASSWORD")
    );
}

#[tokio::test(flavor = "current_thread")]
#[ignore = "needs a registry and openssl: run `make registry-test`"]
async fn a_signed_push_is_stored_as_cosign_stores_it_and_verifies_with_its_key_only() {
    let registry_address = env("OCI_TEST_REGISTRY");
    let dir = scratch("signed-push");
    let (private, public) = key_pair(&dir, "release");
    let (other_private, other_public) = key_pair(&dir, "other");
    let target = target(&registry_address, "signed");
    let reference = parse_reference(&target).unwrap();
    let registry = registry_for(&target);

    let digest = succeeded(
        "signed push",
        &push(&module_path(), &target, Some(&private), None),
    );

    // The signature image: one simple-signing layer, the payload byte for byte cosign's, the
    // signature in the annotation, and OpenSSL verifies it over those bytes.
    let layers = registry
        .cosign_layers(&reference, &digest, "sig")
        .await
        .unwrap()
        .expect("no .sig image");
    assert_eq!(layers.len(), 1);
    assert_eq!(layers[0].media_type, SIMPLE_SIGNING_MEDIA_TYPE);
    let expected_payload = format!(
        r#"{{"critical":{{"identity":{{"docker-reference":"{registry_address}/kubewarden-test/signed"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"cosign container image signature"}},"optional":null}}"#
    );
    assert_eq!(String::from_utf8_lossy(&layers[0].data), expected_payload);
    let signature = BASE64
        .decode(&layers[0].annotations[SIGNATURE_ANNOTATION])
        .unwrap();
    assert!(
        openssl_verifies(&dir, &public, &layers[0].data, &signature),
        "OpenSSL does not verify the stored signature with the public key"
    );
    assert!(!openssl_verifies(
        &dir,
        &other_public,
        &layers[0].data,
        &signature
    ));

    // The policy server's check, by tag and by digest.
    assert_eq!(succeeded("verify", &verify(&target, &public)), digest);
    let by_digest = format!("{registry_address}/kubewarden-test/signed@{digest}");
    assert_eq!(
        succeeded("verify by digest", &verify(&by_digest, &public)),
        digest
    );

    // Another key: refused, saying so.
    let refused = failed("verify with another key", &verify(&target, &other_public));
    assert!(refused.contains("none with this public key"), "{refused}");

    // Pushing again with the same key adds nothing; with another key, a second signature
    // beside the first, as cosign does: both keys verify.
    succeeded(
        "signed push again",
        &push(&module_path(), &target, Some(&private), None),
    );
    let layers = registry
        .cosign_layers(&reference, &digest, "sig")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(layers.len(), 1, "the same key signed twice");
    succeeded(
        "push signed with the other key",
        &push(&module_path(), &target, Some(&other_private), None),
    );
    let layers = registry
        .cosign_layers(&reference, &digest, "sig")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        layers.len(),
        2,
        "the other key's signature replaced the first"
    );
    assert_eq!(
        succeeded("verify, first key", &verify(&target, &public)),
        digest
    );
    assert_eq!(
        succeeded("verify, other key", &verify(&target, &other_public)),
        digest
    );

    // A wrong password stops the push before anything is pushed.
    let unpushed = target.replace(":run-", ":wrong-password-");
    let wrong = cli_with(
        &[
            "push",
            "-k",
            text(&private),
            text(&module_path()),
            &unpushed,
        ],
        &[("COSIGN_PASSWORD", "wrong")],
    );
    assert!(failed("push with a wrong password", &wrong).contains("COSIGN_PASSWORD"));
    assert!(
        registry
            .manifest_digest(&parse_reference(&unpushed).unwrap())
            .await
            .is_err(),
        "a push with a wrong password pushed the module"
    );
}

#[tokio::test(flavor = "current_thread")]
#[ignore = "needs a registry and openssl: run `make registry-test`"]
async fn unsigned_replaced_and_copied_signatures_are_refused() {
    let registry_address = env("OCI_TEST_REGISTRY");
    let dir = scratch("refused");
    let (private, public) = key_pair(&dir, "release");

    // Never signed.
    let unsigned = target(&registry_address, "unsigned");
    succeeded(
        "unsigned push",
        &push(&module_path(), &unsigned, None, None),
    );
    let refused = failed("verify an unsigned module", &verify(&unsigned, &public));
    assert!(refused.contains("is not signed"), "{refused}");

    // Signed, then another module pushed over the tag without signing.
    let replaced = target(&registry_address, "replaced");
    let signed_digest = succeeded(
        "signed push",
        &push(&module_path(), &replaced, Some(&private), None),
    );
    assert_eq!(
        succeeded("verify before", &verify(&replaced, &public)),
        signed_digest
    );
    let another = another_module(&dir);
    let replaced_digest = succeeded(
        "push over the signed tag",
        &push(&another, &replaced, None, None),
    );
    assert_ne!(replaced_digest, signed_digest);
    let refused = failed("verify the replaced module", &verify(&replaced, &public));
    assert!(
        refused.contains("is not signed") && refused.contains(&replaced_digest),
        "{refused}"
    );

    // The old signature copied to the new module's signature tag: its payload names the
    // signed manifest, so it does not count, and the message says the module changed.
    let registry = registry_for(&replaced);
    let reference = parse_reference(&replaced).unwrap();
    let sig_of = |digest: &str| publish::sign::cosign_reference(&reference, digest, "sig");
    registry
        .copy_manifest(&sig_of(&signed_digest), &sig_of(&replaced_digest))
        .await
        .unwrap();
    let refused = failed(
        "verify with a copied signature",
        &verify(&replaced, &public),
    );
    assert!(refused.contains("changed after signing"), "{refused}");
    assert!(refused.contains(&signed_digest), "{refused}");
}

#[tokio::test(flavor = "current_thread")]
#[ignore = "needs a registry and openssl: run `make registry-test`"]
async fn the_sbom_is_attested_as_cosign_attest_does_and_comes_back_verified() {
    let registry_address = env("OCI_TEST_REGISTRY");
    let dir = scratch("sbom");
    let (private, public) = key_pair(&dir, "release");
    let (_, other_public) = key_pair(&dir, "other");
    let sbom = dir.join("policy.cdx.json");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let written = cli_with(
        &[
            "sbom",
            "--manifest-path",
            text(&manifest),
            "-o",
            text(&sbom),
        ],
        &[],
    );
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    let bom: Value = serde_json::from_slice(&std::fs::read(&sbom).unwrap()).unwrap();

    // --sbom without a key is refused before anything is pushed.
    let target = target(&registry_address, "attested");
    let refused = failed(
        "push --sbom without -k",
        &push(&module_path(), &target, None, Some(&sbom)),
    );
    assert!(refused.contains("needs -k"), "{refused}");

    let digest = succeeded(
        "push with SBOM",
        &push(&module_path(), &target, Some(&private), Some(&sbom)),
    );
    let registry = registry_for(&target);
    let reference = parse_reference(&target).unwrap();
    let layers = registry
        .cosign_layers(&reference, &digest, "att")
        .await
        .unwrap()
        .expect("no .att image");
    assert_eq!(layers.len(), 1);
    let layer = &layers[0];
    assert_eq!(layer.media_type, DSSE_MEDIA_TYPE);
    assert_eq!(layer.annotations["predicateType"], CYCLONEDX_PREDICATE_TYPE);
    assert_eq!(layer.annotations[SIGNATURE_ANNOTATION], "");

    // The envelope: DSSE's fields, its one signature over DSSE's PAE, verified by OpenSSL.
    let envelope: Value = serde_json::from_slice(&layer.data).unwrap();
    assert_eq!(envelope["payloadType"], IN_TOTO_PAYLOAD_TYPE);
    let statement_bytes = BASE64
        .decode(envelope["payload"].as_str().unwrap())
        .unwrap();
    let signature = BASE64
        .decode(envelope["signatures"][0]["sig"].as_str().unwrap())
        .unwrap();
    let mut pae = format!(
        "DSSEv1 {} {IN_TOTO_PAYLOAD_TYPE} {} ",
        IN_TOTO_PAYLOAD_TYPE.len(),
        statement_bytes.len()
    )
    .into_bytes();
    pae.extend_from_slice(&statement_bytes);
    assert!(
        openssl_verifies(&dir, &public, &pae, &signature),
        "OpenSSL does not verify the envelope"
    );

    // The in-toto statement: about this manifest, the SBOM as its predicate.
    let statement: Value = serde_json::from_slice(&statement_bytes).unwrap();
    assert_eq!(statement["_type"], "https://in-toto.io/Statement/v0.1");
    assert_eq!(statement["predicateType"], CYCLONEDX_PREDICATE_TYPE);
    assert_eq!(
        statement["subject"],
        json!([{
            "name": format!("{registry_address}/kubewarden-test/attested"),
            "digest": {"sha256": digest.strip_prefix("sha256:").unwrap()},
        }])
    );
    assert_eq!(statement["predicate"], bom);

    // Fetched back and verified by the binary.
    let out = dir.join("fetched.cdx.json");
    let fetched = cli_with(
        &[
            "verify-sbom",
            "-k",
            text(&public),
            "-o",
            text(&out),
            &target,
        ],
        &[],
    );
    assert_eq!(succeeded("verify-sbom", &fetched), digest);
    let back: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(back, bom, "the SBOM fetched back differs");

    let wrong = cli_with(&["verify-sbom", "-k", text(&other_public), &target], &[]);
    assert!(
        failed("verify-sbom with another key", &wrong).contains("not signed with this public key")
    );
    let unattested = target.replace("/attested:", "/not-attested:");
    succeeded(
        "push without SBOM",
        &push(&module_path(), &unattested, Some(&private), None),
    );
    let none = cli_with(&["verify-sbom", "-k", text(&public), &unattested], &[]);
    assert!(failed("verify-sbom of a module without SBOM", &none).contains("no attestations"));
}
