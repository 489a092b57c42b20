//! Pushes `annotated-policy.wasm`, the module users deploy, to a real OCI registry and pulls it
//! back with the same client.
//!
//! Needs a running registry: `make registry-test` (`publish/registry-test.sh`) installs Debian's
//! `docker-registry`, starts it on 127.0.0.1 and runs these tests with
//! `OCI_TEST_REGISTRY=127.0.0.1:PORT` (an open registry) and, when it also starts one with
//! htpasswd authentication, `OCI_TEST_AUTH_REGISTRY`, `OCI_TEST_AUTH_USERNAME`,
//! `OCI_TEST_AUTH_PASSWORD`. Without them the tests are ignored.

mod common;

use common::{cli, cli_with, env, module, module_path, sha256, succeeded, target, temp_path};
use publish::{
    CONFIG_BLOB, OCI_IMAGE_MEDIA_TYPE, Registry, RegistryAuth, WASM_CONFIG_MEDIA_TYPE,
    WASM_LAYER_MEDIA_TYPE, parse_reference,
};
use serde_json::Value;

#[tokio::test(flavor = "current_thread")]
#[ignore = "needs a registry: run `make registry-test`"]
async fn push_then_pull_back_gives_the_module_with_kubewarden_media_types() {
    let registry_address = env("OCI_TEST_REGISTRY");
    let module = module();
    let module_digest = sha256(&module);
    let target = target(&registry_address, "multinode-networking");
    let module_file = module_path();

    // Push with the binary, as `make push` does.
    let pushed_digest = succeeded(
        "push",
        &cli(&["push", module_file.to_str().unwrap(), &target], None),
    );

    // Pull back with the same client, as Kubewarden's policy fetcher does.
    let reference = parse_reference(&target).unwrap();
    let registry = Registry::new(&reference, false, RegistryAuth::Anonymous).unwrap();
    let pulled = registry.pull(&reference).await.unwrap();
    assert_eq!(
        pulled.manifest_digest, pushed_digest,
        "pulled manifest digest"
    );
    assert_eq!(
        sha256(&pulled.module),
        module_digest,
        "sha256 of the pulled layer"
    );
    assert!(
        pulled.module == module,
        "the pulled module differs from the one pushed"
    );
    assert_eq!(pulled.config, CONFIG_BLOB, "config blob");
    assert_eq!(pulled.config_media_type, WASM_CONFIG_MEDIA_TYPE);
    assert_eq!(pulled.manifest.layers[0].digest, module_digest);
    assert_eq!(
        registry.manifest_digest(&reference).await.unwrap(),
        pushed_digest,
        "Docker-Content-Digest of the tag"
    );

    // The manifest as the registry stores it.
    let (raw, raw_digest) = registry.raw_manifest(&reference).await.unwrap();
    assert_eq!(raw_digest, pushed_digest, "digest of the raw manifest");
    assert_eq!(
        sha256(&raw),
        pushed_digest,
        "sha256 of the raw manifest bytes"
    );
    let manifest: Value = serde_json::from_slice(&raw).unwrap();
    eprintln!(
        "manifest: {}",
        serde_json::to_string_pretty(&manifest).unwrap()
    );
    assert_eq!(manifest["schemaVersion"], 2, "schemaVersion");
    assert_eq!(manifest["mediaType"], OCI_IMAGE_MEDIA_TYPE, "mediaType");
    assert_eq!(manifest["config"]["mediaType"], WASM_CONFIG_MEDIA_TYPE);
    assert_eq!(manifest["config"]["size"], 2);
    assert_eq!(manifest["config"]["digest"], sha256(b"{}").as_str());
    let layers = manifest["layers"].as_array().expect("layers");
    assert_eq!(layers.len(), 1, "one layer");
    assert_eq!(layers[0]["mediaType"], WASM_LAYER_MEDIA_TYPE);
    assert_eq!(layers[0]["digest"], module_digest.as_str());
    assert_eq!(layers[0]["size"], module.len());

    // Pull with the binary too.
    let out = temp_path("pulled.wasm");
    let pulled_digest = succeeded(
        "pull",
        &cli(&["pull", &target, out.to_str().unwrap()], None),
    );
    let written = std::fs::read(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    assert_eq!(pulled_digest, pushed_digest);
    assert!(written == module, "the file pulled by the binary differs");

    // Pushing the same module again gives the same manifest.
    let again = succeeded(
        "push again",
        &cli(&["push", module_file.to_str().unwrap(), &target], None),
    );
    assert_eq!(again, pushed_digest, "a second push changed the digest");
}

#[tokio::test(flavor = "current_thread")]
#[ignore = "needs a registry: run `make registry-test`"]
async fn refuses_what_is_not_a_module_and_what_is_not_there() {
    let registry_address = env("OCI_TEST_REGISTRY");
    let not_wasm = temp_path("not-a-module.wasm");
    std::fs::write(&not_wasm, b"hello").unwrap();
    let target = target(&registry_address, "not-a-module");
    let output = cli(&["push", not_wasm.to_str().unwrap(), &target], None);
    std::fs::remove_file(&not_wasm).unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "pushed a file that is not wasm");
    assert!(stderr.contains("not a WebAssembly module"), "{stderr}");

    let out = temp_path("missing.wasm");
    let output = cli(&["pull", &target, out.to_str().unwrap()], None);
    assert!(
        !output.status.success(),
        "pulled a tag that was never pushed"
    );
    assert!(!out.exists(), "a failed pull left a file behind");
}

#[tokio::test(flavor = "current_thread")]
#[ignore = "needs a registry: run `make registry-test`"]
async fn credentials_come_from_oci_username_and_oci_password() {
    let Ok(registry_address) = std::env::var("OCI_TEST_AUTH_REGISTRY") else {
        panic!("OCI_TEST_AUTH_REGISTRY is not set: run this test through `make registry-test`");
    };
    let username = env("OCI_TEST_AUTH_USERNAME");
    let password = env("OCI_TEST_AUTH_PASSWORD");
    let module_file = module_path();
    let module_file = module_file.to_str().unwrap();
    let target = target(&registry_address, "multinode-networking");

    let anonymous = cli(&["push", module_file, &target], None);
    assert!(
        !anonymous.status.success(),
        "an anonymous push to a registry with htpasswd authentication succeeded"
    );
    let wrong = cli(&["push", module_file, &target], Some((&username, "wrong")));
    assert!(
        !wrong.status.success(),
        "a push with a wrong password succeeded"
    );

    let credentials = Some((username.as_str(), password.as_str()));
    let pushed = succeeded(
        "push with credentials",
        &cli(&["push", module_file, &target], credentials),
    );
    let out = temp_path("pulled-with-credentials.wasm");
    let out_text = out.to_str().unwrap();
    assert!(
        !cli(&["pull", &target, out_text], None).status.success(),
        "an anonymous pull from a registry with htpasswd authentication succeeded"
    );
    let pulled = succeeded(
        "pull with credentials",
        &cli(&["pull", &target, out_text], credentials),
    );
    let written = std::fs::read(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    assert_eq!(pulled, pushed);
    assert!(
        written == module(),
        "the module pulled with credentials differs"
    );
}

#[tokio::test(flavor = "current_thread")]
#[ignore = "needs a registry: run `make registry-test`"]
async fn https_for_every_other_registry_with_verified_certificates() {
    // 127.0.0.2 is loopback, but not one of the names that get plain HTTP.
    let registry_address = env("OCI_TEST_TLS_REGISTRY");
    let ca = env("OCI_TEST_TLS_CA");
    let module_file = module_path();
    let module_file = module_file.to_str().unwrap();
    let target = target(&registry_address, "multinode-networking");
    let trust = [("SSL_CERT_FILE", ca.as_str())];

    // The registry's CA is not among the system's roots: the certificate is refused.
    let untrusted = cli(&["push", module_file, &target], None);
    let stderr = String::from_utf8_lossy(&untrusted.stderr);
    assert!(
        !untrusted.status.success(),
        "pushed over TLS to a registry whose certificate no trusted CA signed"
    );
    assert!(stderr.contains("https://"), "not HTTPS: {stderr}");
    assert!(stderr.contains("certificate"), "{stderr}");

    let pushed = succeeded(
        "push over HTTPS",
        &cli_with(&["push", module_file, &target], &trust),
    );
    let out = temp_path("pulled-over-https.wasm");
    let out_text = out.to_str().unwrap();
    let pulled = succeeded(
        "pull over HTTPS",
        &cli_with(&["pull", &target, out_text], &trust),
    );
    let written = std::fs::read(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    assert_eq!(pulled, pushed);
    assert!(written == module(), "the module pulled over HTTPS differs");

    // OCI_INSECURE=1 and --insecure switch to plain HTTP, which a TLS port does not answer.
    for insecure in [
        cli_with(
            &["pull", &target, out_text],
            &[("SSL_CERT_FILE", ca.as_str()), ("OCI_INSECURE", "1")],
        ),
        cli_with(&["pull", "--insecure", &target, out_text], &trust),
    ] {
        let stderr = String::from_utf8_lossy(&insecure.stderr);
        assert!(
            !insecure.status.success(),
            "plain HTTP to a TLS port worked"
        );
        assert!(stderr.contains("http://"), "not plain HTTP: {stderr}");
    }
    assert!(!out.exists());
}
