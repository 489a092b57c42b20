//! Publishes the policy module to an OCI registry as `kwctl push` does, with the `oci-client`
//! crate that Kubewarden's own policy fetcher uses, and pulls it back as the policy server does.
//!
//! The artifact: an OCI image manifest (`schemaVersion: 2`) whose config is the 2-byte blob `{}`
//! with media type `application/vnd.wasm.config.v1+json`, and whose one layer holds the module
//! bytes with media type `application/vnd.wasm.content.layer.v1+wasm`. A `registry://host/repo:tag`
//! module URL in an `AdmissionPolicy` or `ClusterAdmissionPolicy` loads it.
//!
//! What is pushed is the annotated module: the policy server refuses a waPC module without an
//! `io.kubewarden.metadata` section. The `policy-metadata` crate writes that section without
//! kwctl; its modules are re-exported here ([`annotate`], [`metadata`], [`section`], and
//! `protocol` with the `annotate` feature). This crate adds what only publishing needs: the registry client, signing
//! ([`sign`]) and the SBOM ([`sbom`]).

use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::OciImageManifest;
use oci_client::{Client, Reference};

pub use oci_client::manifest::{
    OCI_IMAGE_MEDIA_TYPE, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE,
};
pub use oci_client::secrets::RegistryAuth;

#[cfg(feature = "annotate")]
pub use policy_metadata::protocol;
pub use policy_metadata::{annotate, metadata, section};

pub mod sbom;
pub mod sign;

/// The config blob Kubewarden writes: an empty JSON object.
pub const CONFIG_BLOB: &[u8] = b"{}";

/// What a WebAssembly module starts with.
const WASM_MAGIC: &[u8] = b"\0asm";

/// Parses `host/repo:tag`; a leading `registry://` (the form of Kubewarden's module URLs) is
/// accepted. Without a registry host, the reference would silently point at Docker Hub, and
/// without a tag at `latest`: both are refused, to keep pushes deliberate.
pub fn parse_reference(text: &str) -> Result<Reference> {
    let bare = text.strip_prefix("registry://").unwrap_or(text);
    let first = bare.split('/').next().unwrap_or_default();
    let has_host =
        bare.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    ensure!(
        has_host,
        "`{text}` names no registry host: write it as host[:port]/repository:tag"
    );
    let reference: Reference = bare
        .parse()
        .with_context(|| format!("`{text}` is not a valid OCI reference"))?;
    // The parser fills in `latest` for a missing tag: look at the text.
    let name = bare.rsplit('/').next().unwrap_or_default();
    ensure!(
        name.contains(':') || name.contains('@'),
        "`{text}` has no tag: write it as host[:port]/repository:tag"
    );
    Ok(reference)
}

/// Whether to talk plain HTTP to `registry` (`host[:port]`): always for the loopback names
/// `localhost`, `127.0.0.1` and `::1`, else only when asked.
pub fn plain_http(registry: &str, insecure: bool) -> bool {
    let host = if let Some(rest) = registry.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        registry.rsplit_once(':').map_or(registry, |(host, _)| host)
    };
    insecure || matches!(host, "localhost" | "127.0.0.1" | "::1")
}

/// `OCI_INSECURE` set to anything but empty, `0`, `false` or `no`.
pub fn insecure_from_env() -> bool {
    std::env::var("OCI_INSECURE").is_ok_and(|v| {
        let v = v.trim().to_ascii_lowercase();
        !matches!(v.as_str(), "" | "0" | "false" | "no")
    })
}

/// HTTP basic credentials from `OCI_USERNAME` and `OCI_PASSWORD` when set (for a token-based
/// registry such as ghcr.io, the password is the token); anonymous otherwise.
pub fn auth_from_env() -> Result<RegistryAuth> {
    let username = std::env::var("OCI_USERNAME").unwrap_or_default();
    let password = std::env::var("OCI_PASSWORD").unwrap_or_default();
    match (username.is_empty(), password.is_empty()) {
        (true, true) => Ok(RegistryAuth::Anonymous),
        (false, false) => Ok(RegistryAuth::Basic(username, password)),
        (true, false) => bail!("OCI_PASSWORD is set but OCI_USERNAME is not"),
        (false, true) => bail!("OCI_USERNAME is set but OCI_PASSWORD is not"),
    }
}

/// The result of a push.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// The manifest digest, as the registry reports it (`sha256:…`).
    pub manifest_digest: String,
    /// The layer digest: the sha256 of the module.
    pub layer_digest: String,
    /// The manifest URL the registry answered.
    pub manifest_url: String,
}

/// The result of a pull.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The module bytes (the one layer).
    pub module: Vec<u8>,
    /// The manifest digest.
    pub manifest_digest: String,
    pub manifest: OciImageManifest,
    pub config: Vec<u8>,
    pub config_media_type: String,
}

/// A client for one registry.
pub struct Registry {
    client: Client,
    auth: RegistryAuth,
    insecure: bool,
}

impl Registry {
    /// A client for the registry of `reference`: plain HTTP as [`plain_http`] decides, HTTPS
    /// (rustls, the system's trust roots) otherwise.
    pub fn new(reference: &Reference, insecure: bool, auth: RegistryAuth) -> Result<Registry> {
        // reqwest is built without a default crypto provider; a second install is a no-op.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let protocol = if plain_http(reference.resolve_registry(), insecure) {
            ClientProtocol::Http
        } else {
            ClientProtocol::Https
        };
        let config = ClientConfig {
            protocol,
            connect_timeout: Some(Duration::from_secs(10)),
            read_timeout: Some(Duration::from_secs(120)),
            ..ClientConfig::default()
        };
        let client = Client::try_from(config).context("cannot create the OCI client")?;
        Ok(Registry {
            client,
            auth,
            insecure,
        })
    }

    /// Signs the manifest `digest` of `image` as `cosign sign --key` does ([`sign::sign`]).
    pub async fn sign(
        &self,
        image: &Reference,
        digest: &str,
        signer: &sign::Signer,
    ) -> Result<sign::Attached> {
        sign::sign(&self.client, &self.auth, image, digest, signer).await
    }

    /// Attests `predicate` about `digest` as `cosign attest --key` does ([`sign::attest`]).
    pub async fn attest(
        &self,
        image: &Reference,
        digest: &str,
        predicate_type: &str,
        predicate: serde_json::Value,
        signer: &sign::Signer,
    ) -> Result<sign::Attached> {
        sign::attest(
            &self.client,
            &self.auth,
            image,
            digest,
            predicate_type,
            predicate,
            signer,
        )
        .await
    }

    /// Verifies `image`'s signature with a public key as the policy server does
    /// ([`sign::verify`]); returns the verified manifest digest.
    pub async fn verify(&self, image: &Reference, public_pem: &[u8]) -> Result<String> {
        sign::verify(&self.client, &self.auth, image, public_pem, self.insecure).await
    }

    /// The verified predicates of `predicate_type` about `image` ([`sign::verified_predicates`]).
    pub async fn verified_predicates(
        &self,
        image: &Reference,
        public_pem: &[u8],
        predicate_type: &str,
    ) -> Result<(String, Vec<serde_json::Value>)> {
        sign::verified_predicates(&self.client, &self.auth, image, public_pem, predicate_type).await
    }

    /// The layers of the cosign `.sig` (`suffix` `sig`) or `.att` image of `digest`, `None`
    /// when there is none.
    pub async fn cosign_layers(
        &self,
        image: &Reference,
        digest: &str,
        suffix: &str,
    ) -> Result<Option<Vec<sign::CosignLayer>>> {
        let media_type = if suffix == "att" {
            sign::DSSE_MEDIA_TYPE
        } else {
            sign::SIMPLE_SIGNING_MEDIA_TYPE
        };
        let reference = sign::cosign_reference(image, digest, suffix);
        sign::cosign_layers(&self.client, &self.auth, &reference, media_type).await
    }

    /// Pushes `module` to `reference` as `kwctl push` does, and returns the digests.
    pub async fn push(&self, reference: &Reference, module: Vec<u8>) -> Result<Pushed> {
        ensure!(
            reference.digest().is_none(),
            "cannot push to a digest reference ({reference}): give a tag"
        );
        ensure!(
            module.starts_with(WASM_MAGIC),
            "the file is not a WebAssembly module (it does not start with \\0asm)"
        );
        let layer = ImageLayer::new(module, WASM_LAYER_MEDIA_TYPE.to_string(), None);
        let config = Config::new(CONFIG_BLOB, WASM_CONFIG_MEDIA_TYPE.to_string(), None);
        let mut manifest = OciImageManifest::build(std::slice::from_ref(&layer), &config, None);
        // kwctl leaves the optional field out (the Content-Type header carries it); the image
        // spec says it SHOULD be set, and every reader accepts it.
        manifest.media_type = Some(OCI_IMAGE_MEDIA_TYPE.to_string());
        let layer_digest = manifest.layers[0].digest.clone();

        let response = self
            .client
            .push(reference, &[layer], config, &self.auth, Some(manifest))
            .await
            .with_context(|| format!("cannot push to {reference}"))?;
        let manifest_digest = self
            .client
            .fetch_manifest_digest(reference, &self.auth)
            .await
            .with_context(|| format!("pushed, but cannot read back the digest of {reference}"))?;
        Ok(Pushed {
            manifest_digest,
            layer_digest,
            manifest_url: response.manifest_url,
        })
    }

    /// Pulls the module at `reference` as Kubewarden's policy fetcher does (it accepts only the
    /// wasm layer media type), and checks it is one wasm layer with the wasm config.
    pub async fn pull(&self, reference: &Reference) -> Result<Pulled> {
        let image = self
            .client
            .pull(reference, &self.auth, vec![WASM_LAYER_MEDIA_TYPE])
            .await
            .with_context(|| format!("cannot pull {reference}"))?;
        let manifest = image
            .manifest
            .with_context(|| format!("{reference}: the registry sent no image manifest"))?;
        let manifest_digest = image
            .digest
            .with_context(|| format!("{reference}: the registry sent no manifest digest"))?;
        ensure!(
            image.config.media_type == WASM_CONFIG_MEDIA_TYPE,
            "{reference}: config media type is {}, not {WASM_CONFIG_MEDIA_TYPE}",
            image.config.media_type
        );
        let [layer] = <[ImageLayer; 1]>::try_from(image.layers).map_err(|layers| {
            anyhow::anyhow!(
                "{reference}: {} layers, a Kubewarden policy has exactly one",
                layers.len()
            )
        })?;
        ensure!(
            layer.media_type == WASM_LAYER_MEDIA_TYPE,
            "{reference}: layer media type is {}, not {WASM_LAYER_MEDIA_TYPE}",
            layer.media_type
        );
        ensure!(
            layer.sha256_digest() == manifest.layers[0].digest,
            "{reference}: the layer does not match its digest in the manifest"
        );
        Ok(Pulled {
            module: layer.data.to_vec(),
            manifest_digest,
            manifest,
            config: image.config.data.to_vec(),
            config_media_type: image.config.media_type,
        })
    }

    /// The manifest at `reference` as the registry stores it, and its digest.
    pub async fn raw_manifest(&self, reference: &Reference) -> Result<(Vec<u8>, String)> {
        let (bytes, digest) = self
            .client
            .pull_manifest_raw(reference, &self.auth, &[OCI_IMAGE_MEDIA_TYPE])
            .await
            .with_context(|| format!("cannot fetch the manifest of {reference}"))?;
        Ok((bytes.to_vec(), digest))
    }

    /// Copies the image manifest at `from` to `to` in the same repository (its blobs are there
    /// already), as `crane copy` would; the tests forge a signature with it.
    pub async fn copy_manifest(&self, from: &Reference, to: &Reference) -> Result<String> {
        let (manifest, _) = self
            .client
            .pull_image_manifest(from, &self.auth)
            .await
            .with_context(|| format!("cannot fetch the manifest of {from}"))?;
        self.client
            .push_manifest(to, &oci_client::manifest::OciManifest::Image(manifest))
            .await
            .with_context(|| format!("cannot push the manifest to {to}"))
    }

    /// The manifest digest the registry reports for `reference`.
    pub async fn manifest_digest(&self, reference: &Reference) -> Result<String> {
        self.client
            .fetch_manifest_digest(reference, &self.auth)
            .await
            .with_context(|| format!("cannot read the digest of {reference}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_registries_use_plain_http() {
        for registry in [
            "localhost",
            "localhost:5000",
            "127.0.0.1:41234",
            "[::1]:5000",
        ] {
            assert!(plain_http(registry, false), "{registry}");
        }
        for registry in [
            "ghcr.io",
            "registry.example.com:5000",
            "localhost.example.com",
        ] {
            assert!(!plain_http(registry, false), "{registry}");
            assert!(plain_http(registry, true), "{registry}");
        }
    }

    #[test]
    fn references_need_a_host_and_a_tag() {
        let r = parse_reference("registry://127.0.0.1:5000/policies/mnp:v0.1.0").unwrap();
        assert_eq!(r.registry(), "127.0.0.1:5000");
        assert_eq!(r.repository(), "policies/mnp");
        assert_eq!(r.tag(), Some("v0.1.0"));
        let r =
            parse_reference("ghcr.io/nvidia-nemo/policies/multinode-networking:v0.1.0").unwrap();
        assert_eq!(r.registry(), "ghcr.io");
        assert!(parse_reference("localhost/policies/mnp:v1").is_ok());
        for bad in [
            "policies/mnp:v1",
            "mnp:v1",
            "ghcr.io/policies/mnp",
            "ghcr.io/Bad:v1",
        ] {
            assert!(parse_reference(bad).is_err(), "{bad}");
        }
    }
}
