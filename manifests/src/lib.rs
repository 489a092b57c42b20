//! `make manifests`: everything a cluster needs for the policy, as one multi-document YAML
//! stream rendered from one settings file (a vendor file, a `make settings` output, or a chart
//! values file, whose `multinodeNetworking` block is taken as it is): the policy's own
//! PolicyServer, the RBAC for exactly what the policy may read on its cloud ([`resources`]), the
//! injector ClusterAdmissionPolicy and its auditor, and in comments the steps each namespace
//! needs ([`steps`]). `deploy/` holds the renders of the vendor files ([`deploy_targets`]), and a
//! test holds them equal, so that the shipped manifests never drift from the settings.
//!
//! Text, not serialised values: the comments say why each field is what it is, and a vendor
//! file's settings are carried with their own comments (its sources).

pub mod resources;
pub mod steps;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use policy_payload::settings_block;
use resources::READABLE;
use serde_json::Value;

pub const CLOUDS: [&str; 5] = ["aws", "azure", "gcp", "oci", "rdma"];
/// The policies' names, and their PolicyServer's.
pub const NAME: &str = "multinode-networking";
/// The policy server image of the Kubewarden release the README installs and the project is
/// checked against (1.36): since 1.36 Kubewarden publishes it under `adm-controller/`
/// (kubewarden-controller `api/policies/v1/factories.go`, `defaultKubewardenRepository`).
pub const POLICY_SERVER_IMAGE: &str = "ghcr.io/kubewarden/adm-controller/policy-server:v1.36.0";
/// The ServiceAccount of the PolicyServer, which the RBAC binds.
pub const SERVICE_ACCOUNT: &str = "policy-server";
/// The label that opts a namespace in.
pub const NAMESPACE_LABEL: &str = "nmp.nvidia.com/multi-node-networking";
/// The trigger annotations when the settings name none (behaviour.md §2).
pub const DEFAULT_TRIGGERS: [&str; 2] = [
    "nmp.nvidia.com/enable-multi-node-networking",
    "nhx.nvidia.com/enable-multi-node-networking",
];

/// The settings of one file, as the render reads them.
struct Settings {
    value: Value,
    cloud: &'static str,
    /// The settings' YAML text: the file's own (with its comments) when the file is the settings,
    /// else the chart block written out.
    text: String,
}

fn read_settings(name: &str, text: &str) -> Result<Settings> {
    let document: Value =
        serde_yaml::from_str(text).with_context(|| format!("{name} is not one YAML document"))?;
    let value = settings_block(document.clone());
    if !value.is_object() {
        bail!(
            "{name} holds no settings (a map with one cloud enabled, or a chart's multinodeNetworking block)"
        );
    }
    let enabled: Vec<&'static str> = CLOUDS
        .into_iter()
        .filter(|cloud| value[cloud]["enabled"] == true)
        .collect();
    let [cloud] = enabled.as_slice() else {
        bail!(
            "{name} enables {} of {}: the policy needs exactly one",
            if enabled.is_empty() {
                "none".to_string()
            } else {
                enabled.join(" and ")
            },
            CLOUDS.join(", ")
        );
    };
    if value.get("validateOnly").is_some() {
        bail!(
            "{name} sets validateOnly: the render makes the injector from the settings and the \
             auditor from them with validateOnly: true; leave it out"
        );
    }
    let text = if value == document {
        text.trim_end().to_string()
    } else {
        serde_yaml::to_string(&value)?.trim_end().to_string()
    };
    Ok(Settings { value, cloud, text })
}

/// `text` with every line but empty ones indented by `by` spaces.
fn indent(text: &str, by: usize) -> String {
    let pad = " ".repeat(by);
    text.lines()
        .map(|line| {
            if line.trim().is_empty() {
                String::new()
            } else {
                format!("{pad}{line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The trigger annotation keys of `settings`.
fn triggers(settings: &Value) -> Vec<String> {
    match &settings["triggerAnnotation"] {
        Value::String(key) => vec![key.clone()],
        Value::Array(keys) => keys
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        _ => DEFAULT_TRIGGERS.iter().map(|k| k.to_string()).collect(),
    }
}

/// The matchConditions expression: the presence of any trigger key, whatever its value, so that
/// near misses ("True") still reach the policy and get their warning.
fn match_expression(triggers: &[String]) -> String {
    let keys: Vec<String> = triggers
        .iter()
        .map(|key| format!("'{key}' in object.metadata.annotations"))
        .collect();
    format!(
        "has(object.metadata.annotations) &&\n({})",
        keys.join(" ||\n ")
    )
}

/// The rows of [`READABLE`] that `cloud`'s policy reads, each listed in the metadata's
/// `contextAwareResources`; an error for a metadata row the table does not know.
fn readable(cloud: &str, metadata: &Value) -> Result<Vec<&'static resources::Readable>> {
    let declared = metadata["contextAwareResources"]
        .as_array()
        .context("policy-metadata.yml has no contextAwareResources")?;
    for row in declared {
        let known = READABLE
            .iter()
            .any(|r| row["apiVersion"] == r.api_version && row["kind"] == r.kind);
        if !known {
            bail!(
                "policy-metadata.yml lists {row} in contextAwareResources, which manifests/src/resources.rs does not know: add its RBAC row"
            );
        }
    }
    Ok(READABLE
        .iter()
        .filter(|r| r.serves(cloud))
        .filter(|r| {
            declared
                .iter()
                .any(|row| row["apiVersion"] == r.api_version && row["kind"] == r.kind)
        })
        .collect())
}

/// The multi-document YAML stream for the settings file `name` of content `text`, its policies
/// loading the module at `registry://<registry>`, with `metadata` (policy-metadata.yml).
pub fn render(name: &str, text: &str, registry: &str, metadata: &Value) -> Result<String> {
    let settings = read_settings(name, text)?;
    let cloud = settings.cloud;
    let registry = registry.strip_prefix("registry://").unwrap_or(registry);
    if registry.is_empty() {
        bail!("REGISTRY is empty: give the module's reference, host/repo:tag");
    }
    let module = format!("registry://{registry}");
    let readable = readable(cloud, metadata)?;
    let rules = indent(serde_yaml::to_string(&metadata["rules"])?.trim_end(), 4);
    let conditions = indent(&match_expression(&triggers(&settings.value)), 8);
    let context_aware: String = readable
        .iter()
        .map(|r| {
            format!(
                "    - apiVersion: {}\n      kind: {}\n",
                r.api_version, r.kind
            )
        })
        .collect();
    let rbac_rules: String = readable
        .iter()
        .map(|r| {
            format!(
                "  # {}.\n  - apiGroups: [\"{}\"]\n    resources: [\"{}\"]\n    verbs: [\"get\"]\n",
                r.why, r.group, r.resource
            )
        })
        .collect();
    let steps: String = steps::per_namespace(cloud, &settings.value)
        .iter()
        .enumerate()
        .map(|(i, step)| format!("#   {}. {step}\n", i + 1))
        .collect();

    let mut out = String::new();
    out.push_str(&format!(
        "# Multi-node networking on {cloud}: everything the cluster needs, rendered from {name} by\n\
         #   make manifests SETTINGS={name} REGISTRY={registry}\n\
         # Do not edit: change the settings file and render again.\n\
         #\n\
         # Needs Kubewarden (its CRDs and controller, in namespace kubewarden) and Kubernetes 1.30 or\n\
         # later (matchConditions).\n\
         #   Install: kubectl apply -f FILE\n\
         #   Upgrade: kubectl replace -f FILE (and apply what it says is not found)\n\
         # Upgrade with replace, not apply: a setting written `null` (a default switched off) is\n\
         # deleted by the JSON merge patch a client-side `kubectl apply` sends onto older settings,\n\
         # and the default it switched off comes back.\n\
         #\n\
         # Then, in every namespace NS where opted-in training pods run:\n\
         {steps}"
    ));
    out.push_str(&format!(
        "---\n\
         # The policy's own PolicyServer: a policy server exits when one of its policies' settings are\n\
         # invalid, and with it every policy it serves; here a mistake in these settings stops only\n\
         # this policy, and an opted-in pod is then refused (failurePolicy: Fail) rather than wired\n\
         # wrong.\n\
         apiVersion: policies.kubewarden.io/v1\n\
         kind: PolicyServer\n\
         metadata:\n  name: {NAME}\n\
         spec:\n\
         \x20 # The policy server of Kubewarden 1.36, which the README installs; with another release, its\n\
         \x20 # own (kubectl get policyserver default -o jsonpath='{{.spec.image}}').\n\
         \x20 image: {POLICY_SERVER_IMAGE}\n\
         \x20 # Opted-in pods are refused while no replica answers: two replicas, and a\n\
         \x20 # PodDisruptionBudget keeping one through a node drain.\n\
         \x20 replicas: 2\n\
         \x20 minAvailable: 1\n\
         \x20 # The account the RBAC below binds; the controller copies it into the Deployment as it is.\n\
         \x20 serviceAccountName: {SERVICE_ACCOUNT}\n"
    ));
    out.push_str(&format!(
        "---\n\
         # What the policy may read (policy-metadata.yml's contextAwareResources that its injection on\n\
         # {cloud} refers to), for the PolicyServer's ServiceAccount. The policy reads each object by\n\
         # name (get_resource: one GET of the API server, no watch, nothing cached), hence get alone.\n\
         # A rule left out: the read is refused at once, and the pod is wired as usual, with a\n\
         # warning naming what could not be read where that changes what it gets (a ComputeDomain's\n\
         # channel, an envFrom ConfigMap's keys, a claim's GPUs); a missing object's preflight warning\n\
         # is then not given.\n\
         apiVersion: rbac.authorization.k8s.io/v1\n\
         kind: ClusterRole\n\
         metadata:\n  name: {NAME}-preflight\n  labels:\n    app.kubernetes.io/part-of: multinode-networking-policy\n\
         rules:\n{rbac_rules}\
         ---\n\
         apiVersion: rbac.authorization.k8s.io/v1\n\
         kind: ClusterRoleBinding\n\
         metadata:\n  name: {NAME}-preflight\n  labels:\n    app.kubernetes.io/part-of: multinode-networking-policy\n\
         roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: {NAME}-preflight\n\
         subjects:\n  - kind: ServiceAccount\n    name: {SERVICE_ACCOUNT}\n    namespace: kubewarden\n"
    ));
    let policy = |auditor: bool| {
        let (name, mode, mutating, audit, failure, settings_text) = if auditor {
            (
                format!("{NAME}-audit"),
                "monitor # reports, never blocks",
                "false # it answers a refusal, never a patch",
                "true # the audit scanner sends it every stored pod",
                "# Ignore, and soon: the auditor's answer never changes a pod, and a slow or absent one\n  \
                 # must not hold up its creation (the audit scanner calls the policy server itself).\n  \
                 failurePolicy: Ignore\n  \
                 timeoutSeconds: 3",
                format!(
                    "    # What makes this policy the auditor: the injector's decision, answered as a refusal.\n    validateOnly: true\n{}",
                    indent(&settings.text, 4)
                ),
            )
        } else {
            (
                NAME.to_string(),
                "protect # monitor mode drops every patch: this policy would do nothing",
                "true",
                "false # the audit scanner ignores patches: the auditor below reports instead",
                "# Fail, but only for the pods matchConditions lets through: an opted-in pod created while\n  \
                 # no policy server answers is refused and retried by its job controller, rather than\n  \
                 # run without its fabric (NCCL falls back to TCP, many times slower, and nobody is told).\n  \
                 failurePolicy: Fail\n  \
                 # The API server's wait for the answer (its default, written out): the policy answers in\n  \
                 # milliseconds, reading at most a few objects, each with one GET that the policy server\n  \
                 # answers at once, also when RBAC refuses it.\n  \
                 timeoutSeconds: 10",
                indent(&settings.text, 4),
            )
        };
        let heading = if auditor {
            "# The auditor: the same module and settings with validateOnly: true, in monitor mode, with\n\
             # backgroundAudit. Kubewarden's audit scanner sends it every stored pod of the labelled\n\
             # namespaces; a pod the injector would change (it lacks its fabric) is reported `fail`."
        } else {
            "# The injector: wires every opted-in pod created in a labelled namespace."
        };
        format!(
            "---\n{heading}\n\
             apiVersion: policies.kubewarden.io/v1\n\
             kind: ClusterAdmissionPolicy\n\
             metadata:\n  name: {name}\n\
             spec:\n\
             \x20 module: {module}\n\
             \x20 policyServer: {NAME}\n\
             \x20 mode: {mode}\n\
             \x20 mutating: {mutating}\n\
             \x20 backgroundAudit: {audit}\n\
             \x20 namespaceSelector:\n    matchLabels:\n      {NAMESPACE_LABEL}: enabled\n\
             \x20 # What the policy may read, with the RBAC above.\n\
             \x20 contextAwareResources:\n{context_aware}\
             \x20 rules:\n{rules}\n\
             \x20 {failure}\n\
             \x20 # The API server calls the webhook only for pods that carry a trigger annotation (any value,\n\
             \x20 # so that a near miss such as \"True\" still gets its warning): no other pod waits on the\n\
             \x20 # policy server.\n\
             \x20 matchConditions:\n\
             \x20   - name: has-multi-node-networking-annotation\n\
             \x20     expression: >-\n{conditions}\n\
             \x20 settings:\n{settings_text}\n"
        )
    };
    out.push_str(&policy(false));
    out.push_str(&policy(true));
    Ok(out)
}

/// The module reference `deploy/` names: the metadata's ociUrl, tagged with the crate's version.
pub fn deploy_registry(metadata: &Value, cargo_toml: &str) -> Result<String> {
    let url = metadata["annotations"]["io.kubewarden.policy.ociUrl"]
        .as_str()
        .context("policy-metadata.yml has no io.kubewarden.policy.ociUrl")?;
    let version = cargo_toml
        .lines()
        .find_map(|line| line.strip_prefix("version = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .context("Cargo.toml has no version")?;
    Ok(format!("{url}:v{version}"))
}

/// Where `deploy/` holds the render of each vendor file under `root`: `deploy/<cloud>/` for the
/// cloud's own file (`<cloud>.yaml`; for `rdma`, the Network Operator's host-device setup), and
/// `deploy/<cloud>/<name>/` for the others, `<name>` the file's name without `<cloud>-`.
pub fn deploy_targets(root: &Path) -> Result<Vec<(PathBuf, PathBuf)>> {
    let vendor = root.join("examples/settings/vendor");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&vendor)
        .with_context(|| format!("cannot list {}", vendor.display()))?
        .filter_map(|entry| Some(entry.ok()?.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut targets = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path)?;
        let settings = read_settings(&path.display().to_string(), &text)?;
        let cloud = settings.cloud;
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .context("a vendor file's name")?;
        let own = stem == cloud || (cloud == "rdma" && stem == "network-operator-hostdev");
        let dir = if own {
            root.join("deploy").join(cloud)
        } else {
            let sub = stem.strip_prefix(&format!("{cloud}-")).unwrap_or(stem);
            root.join("deploy").join(cloud).join(sub)
        };
        targets.push((path, dir.join("manifests.yaml")));
    }
    Ok(targets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn metadata() -> Value {
        json!({
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]}],
            "contextAwareResources": [
                {"apiVersion": "v1", "kind": "ConfigMap"},
                {"apiVersion": "v1", "kind": "Namespace"}
            ]
        })
    }

    fn documents(text: &str) -> Vec<Value> {
        use serde::Deserialize;
        serde_yaml::Deserializer::from_str(text)
            .map(|d| Value::deserialize(d).unwrap())
            .collect()
    }

    #[test]
    fn the_settings_are_the_files_and_the_auditor_adds_validate_only() {
        let text = "# a comment\nazure:\n  enabled: true # why\n  ncclTopologyConfigMap: topo\ntriggerAnnotation: a.b/c\n";
        let out = render("s.yaml", text, "registry://r/p:v1", &metadata()).unwrap();
        let docs = documents(&out);
        let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "PolicyServer",
                "ClusterRole",
                "ClusterRoleBinding",
                "ClusterAdmissionPolicy",
                "ClusterAdmissionPolicy"
            ]
        );
        let settings: Value = serde_yaml::from_str(text).unwrap();
        assert_eq!(docs[3]["spec"]["settings"], settings);
        let mut audited = settings.clone();
        audited["validateOnly"] = json!(true);
        assert_eq!(docs[4]["spec"]["settings"], audited);
        assert_eq!(docs[3]["spec"]["module"], "registry://r/p:v1");
        assert!(out.contains("  enabled: true # why"), "comments kept");
        let expression = docs[3]["spec"]["matchConditions"][0]["expression"]
            .as_str()
            .unwrap();
        assert!(
            expression.contains("'a.b/c' in object.metadata.annotations"),
            "{expression}"
        );
        assert!(!expression.contains("nmp.nvidia.com"), "{expression}");
        // Azure reads ConfigMaps; both kinds are in the metadata.
        assert_eq!(docs[1]["rules"].as_array().unwrap().len(), 2);
        assert!(
            out.contains("ConfigMap topo"),
            "the namespace's steps name it"
        );
        assert!(out.contains("kubectl replace"));
    }

    #[test]
    fn the_image_is_the_release_the_readme_installs_and_the_policies_wait_briefly() {
        // One place names the image; the README installs the same release.
        let (repository, tag) = POLICY_SERVER_IMAGE.rsplit_once(':').unwrap();
        assert_eq!(
            repository,
            "ghcr.io/kubewarden/adm-controller/policy-server"
        );
        let release = tag.trim_start_matches('v');
        let minor = release.rsplit_once('.').unwrap().0;
        let readme = include_str!("../../README.md");
        assert!(
            readme.contains(&format!("**Install Kubewarden {minor}**"))
                && readme.contains(POLICY_SERVER_IMAGE),
            "the README installs Kubewarden {minor} and names {POLICY_SERVER_IMAGE}"
        );
        let out = render("s.yaml", "aws:\n  enabled: true\n", "r/p:v1", &metadata()).unwrap();
        let docs = documents(&out);
        assert_eq!(docs[0]["spec"]["image"], POLICY_SERVER_IMAGE);
        assert_eq!(docs[3]["spec"]["timeoutSeconds"], 10);
        assert_eq!(docs[4]["spec"]["timeoutSeconds"], 3);
        for rule in docs[1]["rules"].as_array().unwrap() {
            assert_eq!(rule["verbs"], json!(["get"]), "{rule}");
        }
    }

    #[test]
    fn a_chart_values_file_gives_its_block() {
        let text = "nemo:\n  multinodeNetworking:\n    oci:\n      enabled: true\n      network: default/rdma-vf\n";
        let out = render("values.yaml", text, "r/p:v1", &metadata()).unwrap();
        let docs = documents(&out);
        assert_eq!(
            docs[3]["spec"]["settings"],
            json!({"oci": {"enabled": true, "network": "default/rdma-vf"}})
        );
        assert_eq!(
            docs[1]["rules"].as_array().unwrap().len(),
            2,
            "oci reads its network and the ConfigMaps of envFrom"
        );
        assert!(out.contains("(default/rdma-vf)"), "{out}");
    }

    #[test]
    fn what_cannot_be_rendered_is_refused() {
        let none = render("a.yaml", "aws: {enabled: false}\n", "r", &metadata()).unwrap_err();
        assert!(none.to_string().contains("enables none"), "{none}");
        let two = render(
            "a.yaml",
            "aws: {enabled: true}\ngcp: {enabled: true}\n",
            "r",
            &metadata(),
        )
        .unwrap_err();
        assert!(two.to_string().contains("aws and gcp"), "{two}");
        let audit = render(
            "a.yaml",
            "aws: {enabled: true}\nvalidateOnly: true\n",
            "r",
            &metadata(),
        )
        .unwrap_err();
        assert!(audit.to_string().contains("validateOnly"), "{audit}");
        let mut unknown = metadata();
        unknown["contextAwareResources"] = json!([{"apiVersion": "v1", "kind": "Secret"}]);
        let err = render("a.yaml", "aws: {enabled: true}\n", "r", &unknown).unwrap_err();
        assert!(err.to_string().contains("add its RBAC row"), "{err}");
        assert!(render("a.yaml", "aws: {enabled: true}\n", "", &metadata()).is_err());
    }
}
