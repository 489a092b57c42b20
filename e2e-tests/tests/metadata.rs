//! Holds `policy-metadata.yml` and `artifacthub-pkg.yml` to the code: the version of Cargo.toml,
//! the rules and `mutating` that the module's behaviour calls for, the execution mode it
//! implements, and the fields Artifact Hub and `kwctl scaffold artifacthub` expect.

mod common;

use common::{
    artifacthub_pkg, cargo_version, pod_create_rules, policy_metadata, read, repo_root, string,
    yaml,
};
use e2e_tests::{admission_request, pod_kind, policy};
use serde_json::Value;

const METADATA: &str = "policy-metadata.yml";
const ARTIFACTHUB: &str = "artifacthub-pkg.yml";

fn annotation<'a>(metadata: &'a Value, key: &str) -> &'a str {
    string(metadata, &format!("/annotations/{key}"), METADATA)
}

/// `kubewarden/rules` style keys contain a `/`, which a JSON pointer writes `~1`.
fn hub_annotation<'a>(pkg: &'a Value, key: &str) -> &'a str {
    string(
        pkg,
        &format!("/annotations/{}", key.replace('/', "~1")),
        ARTIFACTHUB,
    )
}

#[test]
fn versions_equal_cargo_toml() {
    let version = cargo_version();
    let metadata = policy_metadata();
    let pkg = artifacthub_pkg();
    assert_eq!(
        annotation(&metadata, "io.kubewarden.policy.version"),
        version,
        "{METADATA}: io.kubewarden.policy.version"
    );
    assert_eq!(
        string(&pkg, "/version", ARTIFACTHUB),
        version,
        "{ARTIFACTHUB}: version"
    );

    let oci_url = annotation(&metadata, "io.kubewarden.policy.ociUrl");
    let images = pkg["containersImages"]
        .as_array()
        .expect("containersImages is a list");
    let image = images
        .iter()
        .find(|image| image["name"] == "policy")
        .expect("containersImages has an image named `policy`");
    assert_eq!(
        image["image"],
        format!("{oci_url}:v{version}").as_str(),
        "{ARTIFACTHUB}: the policy image is io.kubewarden.policy.ociUrl at tag v<Cargo.toml version>"
    );

    let policy_link = pkg["links"]
        .as_array()
        .and_then(|links| links.iter().find(|link| link["name"] == "policy"))
        .expect("links has one named `policy`");
    let url = string(policy_link, "/url", ARTIFACTHUB);
    assert!(
        url.contains(&format!("/v{version}/")),
        "{ARTIFACTHUB}: the policy link {url} is not the v{version} release"
    );

    // Every image reference in the install text is this version.
    let install = string(&pkg, "/install", ARTIFACTHUB);
    let mentions: Vec<&str> = install
        .match_indices(oci_url)
        .map(|(at, _)| &install[at + oci_url.len()..])
        .collect();
    assert!(
        !mentions.is_empty(),
        "{ARTIFACTHUB}: install does not mention {oci_url}"
    );
    for rest in mentions {
        assert!(
            rest.starts_with(&format!(":v{version}")),
            "{ARTIFACTHUB}: install names {oci_url}{}, not :v{version}",
            rest.split_whitespace().next().unwrap_or_default()
        );
    }
}

#[test]
fn rules_are_exactly_pod_create_in_both_files() {
    let metadata = policy_metadata();
    assert_eq!(metadata["rules"], pod_create_rules(), "{METADATA}: rules");

    let pkg = artifacthub_pkg();
    // Artifact Hub keeps annotations as strings: the rules are YAML inside a string.
    let rules_text = hub_annotation(&pkg, "kubewarden/rules");
    let rules: Value = serde_yaml::from_str(rules_text)
        .unwrap_or_else(|e| panic!("{ARTIFACTHUB}: kubewarden/rules is not YAML: {e}"));
    assert_eq!(rules, pod_create_rules(), "{ARTIFACTHUB}: kubewarden/rules");

    assert_eq!(annotation(&metadata, "io.artifacthub.resources"), "Pod");
    assert_eq!(hub_annotation(&pkg, "kubewarden/resources"), "Pod");
}

#[test]
fn mutating_and_execution_mode_are_declared() {
    let metadata = policy_metadata();
    assert_eq!(metadata["mutating"], true, "{METADATA}: mutating");
    assert_eq!(
        metadata["executionMode"], "kubewarden-wapc",
        "{METADATA}: executionMode"
    );
    // What the preflight looks for (src/preflight.rs KINDS, behaviour.md §9), the claims of GPUs
    // (§3.10), the ComputeDomain of a multi-node NVLink pod (§3.11), an MPIJob launcher's job
    // (§3.12) and the namespace whose Pod Security level it reads (§11), with the exact
    // apiVersion and kind the host call names; Artifact Hub's annotation is the same list.
    let kinds = serde_json::json!([
        {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition"},
        {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob"},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim"},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate"},
        {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain"},
        {"apiVersion": "v1", "kind": "ConfigMap"},
        {"apiVersion": "v1", "kind": "Namespace"},
    ]);
    assert_eq!(
        metadata["contextAwareResources"], kinds,
        "{METADATA}: contextAwareResources"
    );
    assert!(
        metadata["backgroundAudit"].is_boolean(),
        "{METADATA}: backgroundAudit"
    );
    // The host call the module makes (Kubewarden 1.35's `hostCapabilities`): every read of the
    // cluster is a get.
    assert_eq!(
        metadata["hostCapabilities"],
        serde_json::json!(["kubernetes/get_resource"]),
        "{METADATA}: hostCapabilities"
    );

    let pkg = artifacthub_pkg();
    let listed: Value = serde_yaml::from_str(string(
        &pkg,
        "/annotations/kubewarden~1contextAwareResources",
        ARTIFACTHUB,
    ))
    .expect("kubewarden/contextAwareResources is a YAML list");
    assert_eq!(
        listed, kinds,
        "{ARTIFACTHUB}: kubewarden/contextAwareResources must be {METADATA}'s contextAwareResources"
    );
    // A string, as Artifact Hub requires of annotations (`'true'`, not `true`).
    assert_eq!(
        pkg.pointer("/annotations/kubewarden~1mutation"),
        Some(&Value::String("true".into())),
        "{ARTIFACTHUB}: kubewarden/mutation must be the string 'true'"
    );
}

/// What the declarations promise, checked against the built module.
#[test]
fn the_module_behaves_as_declared() {
    let root = repo_root();
    let settings = yaml(&root.join("examples/settings/aws.yaml"));
    let pod = yaml(&root.join("examples/pod.yaml"));
    let instance = policy().instance().unwrap();

    // kubewarden-wapc: the module speaks waPC and answers the protocol version kwctl reads.
    let version = instance.call("protocol_version", b"").unwrap();
    let version: Value = serde_json::from_slice(&version).unwrap_or_else(|_| {
        panic!(
            "protocol_version answered {}",
            String::from_utf8_lossy(&version)
        )
    });
    assert_eq!(version, "v1", "protocol_version");
    assert!(instance.validate_settings(&settings).unwrap().valid);

    // Pod CREATE of an opted-in pod: mutated, so the policy must be deployed with mutating: true
    // (the policy server turns a mutation of a non-mutating policy into a rejection).
    let create = instance
        .validate(&admission_request("CREATE", &pod_kind(), &pod), &settings)
        .unwrap();
    assert!(create.accepted, "CREATE: {:?}", create.message);
    let mutated = create
        .mutated_object
        .expect("an opted-in pod CREATE is mutated");
    assert_ne!(mutated, pod);

    // Pod UPDATE of the same pod: accepted unchanged, so the rules need no UPDATE.
    let update = instance
        .validate(&admission_request("UPDATE", &pod_kind(), &pod), &settings)
        .unwrap();
    assert!(update.accepted, "UPDATE: {:?}", update.message);
    assert!(
        update.mutated_object.is_none(),
        "an UPDATE was mutated: the rules would have to include UPDATE"
    );
}

#[test]
fn artifacthub_has_the_fields_kwctl_scaffold_writes() {
    let pkg = artifacthub_pkg();
    // Artifact Hub requires version, name, displayName, createdAt and description; kwctl
    // scaffold artifacthub also writes the rest, and Kubewarden's own policies carry them.
    for key in [
        "version",
        "name",
        "displayName",
        "createdAt",
        "description",
        "license",
        "homeURL",
        "install",
    ] {
        let value = string(&pkg, &format!("/{key}"), ARTIFACTHUB);
        assert!(!value.trim().is_empty(), "{ARTIFACTHUB}: {key} is empty");
    }
    for key in ["containersImages", "keywords", "links", "recommendations"] {
        assert!(
            pkg[key].as_array().is_some_and(|list| !list.is_empty()),
            "{ARTIFACTHUB}: {key} must be a non-empty list"
        );
    }
    for link in pkg["links"].as_array().unwrap() {
        string(link, "/name", ARTIFACTHUB);
        string(link, "/url", ARTIFACTHUB);
    }
    assert_eq!(
        pkg["provider"]["name"], "kubewarden",
        "{ARTIFACTHUB}: provider"
    );
    for key in [
        "kubewarden/mutation",
        "kubewarden/resources",
        "kubewarden/rules",
    ] {
        hub_annotation(&pkg, key);
    }

    // createdAt is RFC 3339, as kwctl writes it: 2026-11-30T18:37:17Z or with fractions/offset.
    let created = string(&pkg, "/createdAt", ARTIFACTHUB);
    let b = created.as_bytes();
    let digits = |range: std::ops::Range<usize>| b[range].iter().all(u8::is_ascii_digit);
    assert!(
        b.len() >= 20
            && digits(0..4)
            && b[4] == b'-'
            && digits(5..7)
            && b[7] == b'-'
            && digits(8..10)
            && b[10] == b'T'
            && digits(11..13)
            && b[13] == b':'
            && digits(14..16)
            && b[16] == b':'
            && digits(17..19)
            && (created.ends_with('Z') || created[19..].contains(['+', '-'])),
        "{ARTIFACTHUB}: createdAt {created:?} is not RFC 3339"
    );
}

#[test]
fn the_two_files_and_cargo_toml_agree() {
    let metadata = policy_metadata();
    let pkg = artifacthub_pkg();
    for key in [
        "title",
        "version",
        "description",
        "author",
        "url",
        "source",
        "license",
        "ociUrl",
        "severity",
        "category",
    ] {
        let value = annotation(&metadata, &format!("io.kubewarden.policy.{key}"));
        assert!(
            !value.trim().is_empty(),
            "io.kubewarden.policy.{key} is empty"
        );
    }
    let severity = annotation(&metadata, "io.kubewarden.policy.severity");
    assert!(
        ["info", "low", "medium", "high", "critical"].contains(&severity),
        "io.kubewarden.policy.severity {severity:?}"
    );

    let pairs = [
        ("name", "io.kubewarden.policy.title"),
        ("displayName", "io.artifacthub.displayName"),
        ("description", "io.kubewarden.policy.description"),
        ("license", "io.kubewarden.policy.license"),
        ("homeURL", "io.kubewarden.policy.url"),
    ];
    for (field, key) in pairs {
        assert_eq!(
            string(&pkg, &format!("/{field}"), ARTIFACTHUB),
            annotation(&metadata, key),
            "{ARTIFACTHUB}: {field} differs from {METADATA}'s {key}"
        );
    }
    let keywords: Vec<&str> = annotation(&metadata, "io.artifacthub.keywords")
        .split(',')
        .map(str::trim)
        .collect();
    let hub_keywords: Vec<&str> = pkg["keywords"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().expect("keywords are strings"))
        .collect();
    assert_eq!(hub_keywords, keywords, "keywords");
    let source = pkg["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|link| link["name"] == "source")
        .expect("links has one named `source`");
    assert_eq!(
        source["url"],
        annotation(&metadata, "io.kubewarden.policy.source")
    );

    // The license of the crate is the license declared.
    let cargo = read(&repo_root().join("Cargo.toml"));
    let license = annotation(&metadata, "io.kubewarden.policy.license");
    assert!(
        cargo.contains(&format!("license = \"{license}\"")),
        "Cargo.toml's license is not {license}"
    );
}
