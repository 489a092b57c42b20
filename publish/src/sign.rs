//! Signatures and attestations stored the way cosign stores them, made and checked with
//! sigstore's `sigstore` crate, the library Kubewarden's policy server verifies modules with.
//!
//! For a module whose manifest digest is `sha256:D`, cosign keeps:
//!
//! - its **signatures** in the image tagged `sha256-D.sig` of the same repository: one layer per
//!   signature, each the simple-signing payload (media type
//!   `application/vnd.dev.cosign.simplesigning.v1+json`,
//!   `{"critical":{"identity":{"docker-reference":R},"image":{"docker-manifest-digest":"sha256:D"},"type":"cosign container image signature"},"optional":null}`)
//!   with the base64 signature of those exact bytes in the layer annotation
//!   `dev.cosignproject.cosign/signature`;
//! - its **attestations** in the image tagged `sha256-D.att`: one layer per attestation, a DSSE
//!   envelope (`application/vnd.dsse.envelope.v1+json`) around an in-toto statement whose
//!   subject is the module's digest, signed over DSSE's pre-authentication encoding; the
//!   layer's signature annotation is empty (the signature is in the envelope), and a
//!   `predicateType` annotation names the predicate.
//!
//! Signing adds a layer to the image already at that tag, as cosign does, so that signatures
//! by other keys survive; a signature this key already made of the same payload is not added
//! twice. Verification is the policy server's: sigstore's cosign client finds the `.sig` image
//! of the digest the tag resolves to, keeps the layers whose payload names that digest, and a
//! public-key constraint must be met by one of them.

use std::collections::BTreeMap;

use anyhow::{Context, Result, anyhow, bail, ensure};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use oci_client::client::{Config, ImageLayer};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciImageManifest};
use oci_client::{Client, Reference};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sigstore::cosign::payload::SimpleSigning;
use sigstore::cosign::verification_constraint::{PublicKeyVerifier, VerificationConstraintVec};
use sigstore::cosign::{ClientBuilder, CosignCapabilities, verify_constraints};
use sigstore::crypto::signing_key::SigStoreKeyPair;
use sigstore::crypto::{CosignVerificationKey, SigStoreSigner, SigningScheme};
use sigstore::registry::{Auth, ClientConfig, ClientProtocol, OciReference};

/// A private key to sign with.
pub type Signer = SigStoreSigner;

use crate::{RegistryAuth, plain_http};

/// The media type of a simple-signing payload layer.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding a signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The media type of an attestation layer.
pub const DSSE_MEDIA_TYPE: &str = "application/vnd.dsse.envelope.v1+json";
/// The DSSE payload type of an in-toto statement.
pub const IN_TOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// The in-toto statement version cosign writes.
pub const IN_TOTO_STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v0.1";
/// The predicate type of a CycloneDX SBOM (`cosign attest --type cyclonedx`).
pub const CYCLONEDX_PREDICATE_TYPE: &str = "https://cyclonedx.org/bom";
/// The manifest annotation cosign puts on an attestation layer.
pub const PREDICATE_TYPE_ANNOTATION: &str = "predicateType";

/// cosign's keys are ECDSA P-256 with SHA-256 (`cosign generate-key-pair`).
const SCHEME: SigningScheme = SigningScheme::ECDSA_P256_SHA256_ASN1;

/// A new key pair in cosign's formats: the private key as the `ENCRYPTED SIGSTORE PRIVATE KEY`
/// PEM (PKCS#8, scrypt and NaCl secretbox with `password`), the public key as a `PUBLIC KEY`
/// PEM (PKIX).
pub fn generate_key_pair(password: &[u8]) -> Result<(String, String)> {
    let pair = SCHEME
        .create_signer()
        .and_then(|signer| signer.to_sigstore_keypair())
        .context("cannot generate an ECDSA P-256 key pair")?;
    let private = pair
        .private_key_to_encrypted_pem(password)
        .context("cannot encrypt the private key")?;
    let public = pair
        .public_key_to_pem()
        .context("cannot write the public key")?;
    // The pem crate ends lines with CRLF; cosign (Go's encoding/pem) with LF.
    Ok((private.replace("\r\n", "\n"), public.replace("\r\n", "\n")))
}

/// The signer of an encrypted private key as `cosign generate-key-pair` (or
/// [`generate_key_pair`]) writes it.
pub fn load_signer(private_pem: &[u8], password: &[u8]) -> Result<SigStoreSigner> {
    let pair = SigStoreKeyPair::from_encrypted_pem(private_pem, password).map_err(|e| {
        anyhow!(
            "cannot decrypt the private key ({e}): is COSIGN_PASSWORD the password it was made \
             with, and is it a key that `cosign generate-key-pair` or `publish generate-key` wrote?"
        )
    })?;
    pair.to_sigstore_signer(&SCHEME).map_err(|e| {
        anyhow!("the private key is not an ECDSA P-256 key, as cosign's keys are ({e})")
    })
}

/// A public key in PEM, as `cosign generate-key-pair` writes it.
pub fn load_public_key(public_pem: &[u8]) -> Result<CosignVerificationKey> {
    CosignVerificationKey::from_pem(public_pem, &SCHEME)
        .map_err(|e| anyhow!("not an ECDSA P-256 public key in PEM, as cosign writes them ({e})"))
}

/// The tag cosign stores the signatures (`sig`) or attestations (`att`) of `digest` at.
pub fn cosign_tag(digest: &str, suffix: &str) -> String {
    format!("{}.{suffix}", digest.replace(':', "-"))
}

/// The reference to the `.sig` or `.att` image of `digest`, in the repository of `image`.
pub fn cosign_reference(image: &Reference, digest: &str, suffix: &str) -> Reference {
    Reference::with_tag(
        image.registry().to_string(),
        image.repository().to_string(),
        cosign_tag(digest, suffix),
    )
}

/// The simple-signing payload of `digest` in `image`'s repository, byte for byte as cosign
/// writes it: the identity is the repository without tag or digest (go-containerregistry's
/// `Repository.Name()`), `optional` is null.
pub fn simple_signing_payload(image: &Reference, digest: &str) -> Result<Vec<u8>> {
    let reference = OciReference::with_digest(
        image.registry().to_string(),
        image.repository().to_string(),
        digest.to_string(),
    );
    let mut payload = SimpleSigning::new(&reference, digest);
    payload.critical.identity.docker_reference =
        format!("{}/{}", image.registry(), image.repository());
    Ok(serde_json::to_vec(&payload)?)
}

/// DSSE's pre-authentication encoding, what a DSSE signature signs.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// A DSSE envelope as cosign writes it (secure-systems-lab/go-securesystemslib's `dsse`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Envelope {
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    /// The statement, base64.
    pub payload: String,
    pub signatures: Vec<EnvelopeSignature>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EnvelopeSignature {
    #[serde(default)]
    pub keyid: String,
    /// The signature of the PAE, base64.
    pub sig: String,
}

/// The in-toto statement of `predicate` about `digest` in `image`'s repository, as
/// `cosign attest` writes it (subject name: the repository).
pub fn statement(image: &Reference, digest: &str, predicate_type: &str, predicate: Value) -> Value {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    serde_json::json!({
        "_type": IN_TOTO_STATEMENT_TYPE,
        "predicateType": predicate_type,
        "subject": [{
            "name": format!("{}/{}", image.registry(), image.repository()),
            "digest": {"sha256": hex},
        }],
        "predicate": predicate,
    })
}

/// The sigstore registry configuration that matches [`crate::Registry::new`]'s choice of
/// protocol.
fn sigstore_config(image: &Reference, insecure: bool) -> ClientConfig {
    let protocol = if plain_http(image.resolve_registry(), insecure) {
        ClientProtocol::Http
    } else {
        ClientProtocol::Https
    };
    ClientConfig {
        protocol,
        ..ClientConfig::default()
    }
}

fn sigstore_auth(auth: &RegistryAuth) -> Auth {
    match auth {
        RegistryAuth::Basic(user, password) => Auth::Basic(user.clone(), password.clone()),
        RegistryAuth::Bearer(token) => Auth::Bearer(token.clone()),
        RegistryAuth::Anonymous => Auth::Anonymous,
    }
}

/// Whether a registry error means "no such manifest" (as opposed to no access, or no network).
fn is_not_found(error: &OciDistributionError) -> bool {
    match error {
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().any(|e| {
            matches!(
                e.code,
                OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown | OciErrorCode::NotFound
            )
        }),
        OciDistributionError::ServerError { code, .. } => *code == 404,
        _ => false,
    }
}

/// One layer of a cosign `.sig` or `.att` image: its bytes and its annotations.
#[derive(Debug, Clone)]
pub struct CosignLayer {
    pub media_type: String,
    pub data: Vec<u8>,
    pub annotations: BTreeMap<String, String>,
}

/// The layers of the cosign image at `reference`, or `None` when there is none. Only layers
/// of `media_type` are read.
pub async fn cosign_layers(
    client: &Client,
    auth: &RegistryAuth,
    reference: &Reference,
    media_type: &str,
) -> Result<Option<Vec<CosignLayer>>> {
    let image = match client.pull(reference, auth, vec![media_type]).await {
        Ok(image) => image,
        Err(e) if is_not_found(&e) => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {reference}")),
    };
    let manifest = image
        .manifest
        .with_context(|| format!("{reference}: the registry sent no image manifest"))?;
    let mut layers = Vec::new();
    for descriptor in &manifest.layers {
        let Some(layer) = image
            .layers
            .iter()
            .find(|layer| layer.sha256_digest() == descriptor.digest)
        else {
            bail!(
                "{reference}: layer {} is missing from what the registry sent",
                descriptor.digest
            );
        };
        layers.push(CosignLayer {
            media_type: descriptor.media_type.clone(),
            data: layer.data.to_vec(),
            annotations: descriptor.annotations.clone().unwrap_or_default(),
        });
    }
    Ok(Some(layers))
}

/// Adds `layer` to the cosign image at `reference` (creating it when there is none), unless
/// `already` says an existing layer makes it redundant. Returns whether it was added.
async fn attach(
    client: &Client,
    auth: &RegistryAuth,
    reference: &Reference,
    layer: CosignLayer,
    already: impl Fn(&CosignLayer) -> bool,
) -> Result<bool> {
    let mut layers = cosign_layers(client, auth, reference, &layer.media_type)
        .await?
        .unwrap_or_default();
    if layers.iter().any(already) {
        return Ok(false);
    }
    layers.push(layer);
    let image_layers: Vec<ImageLayer> = layers
        .into_iter()
        .map(|l| ImageLayer::new(l.data, l.media_type, Some(l.annotations)))
        .collect();
    // cosign's config is an OCI image config listing the layers' diff IDs; verifiers never read
    // it (sigstore-rs writes `{}`, as here).
    let config = Config::oci_v1(b"{}".to_vec(), None);
    let mut manifest = OciImageManifest::build(&image_layers, &config, None);
    manifest.media_type = Some(OCI_IMAGE_MEDIA_TYPE.to_string());
    client
        .push(reference, &image_layers, config, auth, Some(manifest))
        .await
        .with_context(|| format!("cannot push {reference}"))?;
    Ok(true)
}

/// What [`sign`] and [`attest`] did.
#[derive(Debug, Clone)]
pub struct Attached {
    /// The `.sig` or `.att` reference.
    pub reference: Reference,
    /// False when this key had already signed the same payload there.
    pub added: bool,
}

/// Signs the manifest `digest` of `image` with `signer` and stores the signature as cosign
/// does, beside the signatures already there.
pub async fn sign(
    client: &Client,
    auth: &RegistryAuth,
    image: &Reference,
    digest: &str,
    signer: &SigStoreSigner,
) -> Result<Attached> {
    let payload = simple_signing_payload(image, digest)?;
    let signature = signer.sign(&payload).context("cannot sign")?;
    let key = signer
        .to_verification_key()
        .context("cannot derive the public key")?;
    let reference = cosign_reference(image, digest, "sig");
    let layer = CosignLayer {
        media_type: SIMPLE_SIGNING_MEDIA_TYPE.to_string(),
        data: payload.clone(),
        annotations: BTreeMap::from([(SIGNATURE_ANNOTATION.to_string(), BASE64.encode(signature))]),
    };
    // ECDSA signatures differ each time: a layer with this payload that this key's signature
    // verifies is this key's signature already (cosign's duplicate detector does the same).
    let added = attach(client, auth, &reference, layer, |existing| {
        existing.data == payload
            && existing
                .annotations
                .get(SIGNATURE_ANNOTATION)
                .and_then(|sig| BASE64.decode(sig).ok())
                .is_some_and(|sig| {
                    key.verify_signature(sigstore::crypto::Signature::Raw(&sig), &payload)
                        .is_ok()
                })
    })
    .await?;
    Ok(Attached { reference, added })
}

/// Attests `predicate` of `predicate_type` about `digest` in `image`, signed with `signer`,
/// stored as `cosign attest` stores it.
pub async fn attest(
    client: &Client,
    auth: &RegistryAuth,
    image: &Reference,
    digest: &str,
    predicate_type: &str,
    predicate: Value,
    signer: &SigStoreSigner,
) -> Result<Attached> {
    let statement = serde_json::to_vec(&statement(image, digest, predicate_type, predicate))?;
    let signature = signer
        .sign(&pae(IN_TOTO_PAYLOAD_TYPE, &statement))
        .context("cannot sign the attestation")?;
    let envelope = Envelope {
        payload_type: IN_TOTO_PAYLOAD_TYPE.to_string(),
        payload: BASE64.encode(&statement),
        signatures: vec![EnvelopeSignature {
            keyid: String::new(),
            sig: BASE64.encode(signature),
        }],
    };
    let reference = cosign_reference(image, digest, "att");
    let layer = CosignLayer {
        media_type: DSSE_MEDIA_TYPE.to_string(),
        data: serde_json::to_vec(&envelope)?,
        annotations: BTreeMap::from([
            (SIGNATURE_ANNOTATION.to_string(), String::new()),
            (
                PREDICATE_TYPE_ANNOTATION.to_string(),
                predicate_type.to_string(),
            ),
        ]),
    };
    // A new SBOM of the same module replaces nothing: like cosign without --replace, it is
    // added, unless an identical statement is there already.
    let added = attach(client, auth, &reference, layer, |existing| {
        serde_json::from_slice::<Envelope>(&existing.data)
            .ok()
            .and_then(|e| BASE64.decode(e.payload).ok())
            .is_some_and(|payload| payload == statement)
    })
    .await?;
    Ok(Attached { reference, added })
}

/// Checks that the module at `image` (a tag or a digest) is signed with `public_pem`, as the
/// policy server checks a `pubKey` entry of its verification config, and returns the verified
/// manifest digest. The error says why not: no signature at all, signatures by other keys, or
/// signatures of another manifest.
pub async fn verify(
    client: &Client,
    auth: &RegistryAuth,
    image: &Reference,
    public_pem: &[u8],
    insecure: bool,
) -> Result<String> {
    load_public_key(public_pem)?;
    let mut cosign = ClientBuilder::default()
        .with_oci_client_config(sigstore_config(image, insecure))
        .build()
        .context("cannot create sigstore's cosign client")?;
    let sigstore_image: OciReference = image
        .whole()
        .parse()
        .with_context(|| format!("sigstore cannot read the reference {image}"))?;
    let sigstore_auth = sigstore_auth(auth);
    let (_, digest) = cosign
        .triangulate(&sigstore_image, &sigstore_auth)
        .await
        .with_context(|| format!("cannot resolve {image}"))?;
    let layers = cosign
        .trusted_signature_layers(&sigstore_auth, &sigstore_image)
        .await
        .with_context(|| format!("cannot read the signatures of {image}"))?;
    let verifier = PublicKeyVerifier::new(public_pem, &SCHEME)
        .map_err(|e| anyhow!("cannot use the public key: {e}"))?;
    let constraints: VerificationConstraintVec = vec![Box::new(verifier)];
    if verify_constraints(&layers, constraints.iter()).is_ok() {
        return Ok(digest);
    }
    Err(why_not_verified(client, auth, image, &digest, layers.len()).await)
}

/// Why no signature of `digest` verified: read the `.sig` image ourselves to say which case
/// it is.
async fn why_not_verified(
    client: &Client,
    auth: &RegistryAuth,
    image: &Reference,
    digest: &str,
    trusted: usize,
) -> anyhow::Error {
    let reference = cosign_reference(image, digest, "sig");
    let sign_hint = "sign it with `make push COSIGN_KEY=…` (or `cosign sign --key`)";
    let layers = match cosign_layers(client, auth, &reference, SIMPLE_SIGNING_MEDIA_TYPE).await {
        Ok(Some(layers)) => layers,
        Ok(None) => {
            return anyhow!(
                "{image} (manifest {digest}) is not signed: there is no {reference}; if it was \
                 signed before, the tag now points at another module (pushed after signing); \
                 {sign_hint}"
            );
        }
        Err(e) => return e.context(format!("{image} is not verified")),
    };
    let named: Vec<String> = layers
        .iter()
        .filter_map(|layer| serde_json::from_slice::<SimpleSigning>(&layer.data).ok())
        .map(|payload| payload.critical.image.docker_manifest_digest)
        .collect();
    if trusted == 0 && !named.is_empty() && named.iter().all(|named| named != digest) {
        return anyhow!(
            "{image} (manifest {digest}) is not signed: the {} signature(s) at {reference} are \
             of another manifest ({}), so the module was changed after signing; {sign_hint}",
            layers.len(),
            named.join(", ")
        );
    }
    anyhow!(
        "{image} (manifest {digest}) is signed ({} signature(s) at {reference}), but none with \
         this public key: check that it is the key the module was signed with",
        layers.len()
    )
}

/// Fetches the attestations of `predicate_type` about the module at `image`, keeps those
/// whose envelope is signed with `public_pem` and whose statement is about the module's
/// manifest digest, and returns that digest with their predicates.
pub async fn verified_predicates(
    client: &Client,
    auth: &RegistryAuth,
    image: &Reference,
    public_pem: &[u8],
    predicate_type: &str,
) -> Result<(String, Vec<Value>)> {
    let key = load_public_key(public_pem)?;
    let digest = client
        .fetch_manifest_digest(image, auth)
        .await
        .with_context(|| format!("cannot resolve {image}"))?;
    let reference = cosign_reference(image, &digest, "att");
    let Some(layers) = cosign_layers(client, auth, &reference, DSSE_MEDIA_TYPE).await? else {
        bail!(
            "{image} (manifest {digest}) has no attestations: there is no {reference}; \
             `make push COSIGN_KEY=…` attests the SBOM"
        );
    };
    let hex = digest.strip_prefix("sha256:").unwrap_or(&digest);
    let mut predicates = Vec::new();
    let mut problems = Vec::new();
    for (index, layer) in layers.iter().enumerate() {
        match verified_statement(&key, &layer.data) {
            Ok(statement) => {
                let about_module = statement["subject"]
                    .as_array()
                    .is_some_and(|subjects| subjects.iter().any(|s| s["digest"]["sha256"] == hex));
                if statement["predicateType"] != predicate_type {
                    problems.push(format!(
                        "layer {index}: predicate type {}",
                        statement["predicateType"]
                    ));
                } else if !about_module {
                    problems.push(format!(
                        "layer {index}: a statement about another manifest ({})",
                        statement["subject"]
                    ));
                } else {
                    predicates.push(statement["predicate"].clone());
                }
            }
            Err(e) => problems.push(format!("layer {index}: {e:#}")),
        }
    }
    ensure!(
        !predicates.is_empty(),
        "no attestation of type {predicate_type} about {image} (manifest {digest}) verifies \
         with this public key ({} at {reference}: {})",
        layers.len(),
        problems.join("; ")
    );
    Ok((digest, predicates))
}

/// The in-toto statement of a DSSE envelope, if one of its signatures verifies with `key`.
fn verified_statement(key: &CosignVerificationKey, envelope: &[u8]) -> Result<Value> {
    let envelope: Envelope = serde_json::from_slice(envelope).context("not a DSSE envelope")?;
    ensure!(
        envelope.payload_type == IN_TOTO_PAYLOAD_TYPE,
        "payload type {}, not {IN_TOTO_PAYLOAD_TYPE}",
        envelope.payload_type
    );
    let payload = BASE64
        .decode(&envelope.payload)
        .context("the payload is not base64")?;
    let signed = pae(&envelope.payload_type, &payload);
    let verified = envelope.signatures.iter().any(|signature| {
        BASE64.decode(&signature.sig).is_ok_and(|sig| {
            key.verify_signature(sigstore::crypto::Signature::Raw(&sig), &signed)
                .is_ok()
        })
    });
    ensure!(verified, "not signed with this public key");
    serde_json::from_slice(&payload).context("the payload is not JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key deploy/policy-server's verificationConfig holds (e2e-tests' deploy test checks
    /// that it is this file) is one the policy server and `publish verify` can read.
    #[test]
    fn the_projects_key_is_a_cosign_public_key() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../cosign.pub");
        let key = std::fs::read(&path).unwrap();
        load_public_key(&key).unwrap_or_else(|e| panic!("cosign.pub: {e:#}"));
    }

    #[test]
    fn pae_is_dsse_v1() {
        // DSSE's specification: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body.
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
        );
    }

    #[test]
    fn the_payload_is_cosigns_byte_for_byte() {
        let image =
            Reference::with_tag("127.0.0.1:5000".into(), "policies/mnp".into(), "v1".into());
        let digest = format!("sha256:{}", "ab".repeat(32));
        let payload = simple_signing_payload(&image, &digest).unwrap();
        assert_eq!(
            String::from_utf8(payload).unwrap(),
            format!(
                r#"{{"critical":{{"identity":{{"docker-reference":"127.0.0.1:5000/policies/mnp"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"cosign container image signature"}},"optional":null}}"#
            )
        );
        assert_eq!(
            cosign_tag(&digest, "sig"),
            format!("sha256-{}.sig", "ab".repeat(32))
        );
    }
}
