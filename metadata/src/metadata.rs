//! Kubewarden policy metadata: the fields of `policy-metadata.yml`, read as `kwctl annotate`
//! reads them, checked as `kwctl annotate` and the policy server check them, and written as the
//! camelCase JSON that both read from a module's `io.kubewarden.metadata` section.
//!
//! The field names, their order, their defaults and which of them are left out when absent are
//! those of the `Metadata` type of Kubewarden's policy-evaluator crate, which kwctl and the policy
//! server share, so a module annotated here carries the JSON `kwctl annotate` would write, less
//! the `io.kubewarden.kwctl` annotation that records a kwctl version.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};

/// The annotation that holds the policy's usage text (the README), as `kwctl annotate -u` writes it.
pub const USAGE_ANNOTATION: &str = "io.kubewarden.policy.usage";

/// The top-level keys a metadata file may hold: those of policy-evaluator's `Metadata`, less
/// `protocolVersion`, which comes from the module.
const FILE_KEYS: [&str; 9] = [
    "rules",
    "annotations",
    "mutating",
    "backgroundAudit",
    "executionMode",
    "policyType",
    "contextAwareResources",
    "hostCapabilities",
    "minimumKubewardenVersion",
];

/// The metadata, in the field order kwctl serialises.
///
/// Unknown top-level keys are not refused here: the policy server ignores them, and a newer
/// kwctl may write keys this type does not know, which `inspect` should still show. A metadata
/// file is held to [`FILE_KEYS`] by [`Metadata::from_file_text`]. Inside rules and
/// context-aware resources, whose shape is settled, an unknown key is always a mistake.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    /// Always written by kwctl; absent from a metadata file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<ProtocolVersion>,
    pub rules: Vec<Rule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    pub mutating: bool,
    #[serde(default = "background_audit_default")]
    pub background_audit: bool,
    #[serde(default)]
    pub execution_mode: ExecutionMode,
    #[serde(default)]
    pub policy_type: PolicyType,
    #[serde(default)]
    pub context_aware_resources: BTreeSet<ContextAwareResource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_capabilities: Option<BTreeSet<String>>,
    /// A semantic version; kept as written, checked by [`Metadata::check`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum_kubewarden_version: Option<String>,
}

fn background_audit_default() -> bool {
    true
}

/// The waPC protocol version, spelt as the SDK's `ProtocolVersion` serialises it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProtocolVersion {
    Unknown,
    #[serde(rename = "v1")]
    V1,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExecutionMode {
    #[default]
    #[serde(rename = "kubewarden-wapc")]
    KubewardenWapc,
    #[serde(rename = "opa")]
    Opa,
    #[serde(rename = "gatekeeper")]
    Gatekeeper,
    #[serde(rename = "wasi")]
    Wasi,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PolicyType {
    #[default]
    #[serde(rename = "kubernetes")]
    Kubernetes,
    #[serde(rename = "raw")]
    Raw,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    pub resources: Vec<String>,
    pub operations: Vec<Operation>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Operation {
    #[serde(rename = "CREATE")]
    Create,
    #[serde(rename = "UPDATE")]
    Update,
    #[serde(rename = "DELETE")]
    Delete,
    #[serde(rename = "CONNECT")]
    Connect,
    #[serde(rename = "*")]
    All,
}

/// Ordered as kwctl's `BTreeSet` orders it: by apiVersion, then kind.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContextAwareResource {
    pub api_version: String,
    pub kind: String,
}

impl Metadata {
    /// Reads a metadata file (`policy-metadata.yml`) as `kwctl annotate` does, refusing what
    /// kwctl would silently drop or default: a key it does not know (a misspelt
    /// `backgroundAudit` would become `true`) and a `protocolVersion`, which only the module
    /// can tell. `file` names the file in messages.
    pub fn from_file_text(file: &str, text: &str) -> Result<Metadata> {
        let document: serde_yaml::Value =
            serde_yaml::from_str(text).with_context(|| format!("{file} is not YAML"))?;
        let Some(mapping) = document.as_mapping() else {
            bail!("{file} must be a YAML mapping of metadata keys (rules, mutating, …)");
        };
        for key in mapping.keys() {
            let Some(key) = key.as_str() else {
                bail!("{file}: the key {key:?} is not a string; metadata keys are camelCase names");
            };
            if key == "protocolVersion" {
                bail!(
                    "{file}: protocolVersion is read from the module's protocol_version answer; remove it"
                );
            }
            ensure!(
                FILE_KEYS.contains(&key),
                "{file}: unknown key `{key}`; the keys allowed are {}",
                FILE_KEYS.join(", ")
            );
        }
        // The two keys without a default, which the policy server cannot read a module without.
        ensure!(
            mapping.contains_key("rules"),
            "{file}: rules is missing; list the requests the policy handles (apiGroups, apiVersions, resources, operations)"
        );
        ensure!(
            mapping.contains_key("mutating"),
            "{file}: mutating is missing; set it to true if the policy changes objects, else false"
        );
        // serde_yaml names the path of a faulty field (`rules[0].operations[0]: unknown variant`).
        serde_yaml::from_str(text).map_err(|e| anyhow::anyhow!("{file}: {e}"))
    }

    /// Reads the JSON of an `io.kubewarden.metadata` section, as the policy server does.
    pub fn from_section(data: &[u8]) -> Result<Metadata> {
        serde_json::from_slice(data).context(
            "the io.kubewarden.metadata section is not metadata the policy server can read",
        )
    }

    /// The JSON the section holds: compact, in kwctl's field order.
    pub fn to_section(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self).context("cannot serialise the metadata")
    }

    /// Sets the usage annotation, as `kwctl annotate -u` does (it replaces one the file set).
    pub fn set_usage(&mut self, usage: &str) {
        self.annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(USAGE_ANNOTATION.to_string(), usage.to_string());
    }

    /// The checks the policy server makes when it loads a module (a waPC policy needs protocol
    /// version v1) and those `kwctl annotate` makes on the rules and context-aware resources.
    pub fn check(&self) -> Result<()> {
        if self.execution_mode == ExecutionMode::KubewardenWapc {
            match self.protocol_version {
                Some(ProtocolVersion::V1) => {}
                Some(ProtocolVersion::Unknown) => bail!(
                    "protocolVersion is Unknown, which the policy server refuses for executionMode kubewarden-wapc; annotate the module again"
                ),
                None => bail!(
                    "protocolVersion is missing, which the policy server requires for executionMode kubewarden-wapc; annotate the module"
                ),
            }
        }
        for (i, rule) in self.rules.iter().enumerate() {
            check_list(&format!("rules[{i}].apiGroups"), &rule.api_groups)?;
            check_list(&format!("rules[{i}].apiVersions"), &rule.api_versions)?;
            let operations: Vec<&str> = rule.operations.iter().map(Operation::as_str).collect();
            check_list(&format!("rules[{i}].operations"), &operations)?;
            check_resources(&format!("rules[{i}].resources"), &rule.resources)?;
        }
        for (i, resource) in self.context_aware_resources.iter().enumerate() {
            ensure!(
                !resource.api_version.is_empty() && !resource.kind.is_empty(),
                "contextAwareResources[{i}] needs a non-empty apiVersion and kind"
            );
        }
        if let Some(version) = &self.minimum_kubewarden_version {
            semver::Version::parse(version).map_err(|e| {
                anyhow::anyhow!(
                    "minimumKubewardenVersion {version:?} is not a semantic version ({e}); write it as 1.2.3"
                )
            })?;
        }
        Ok(())
    }
}

impl Operation {
    fn as_str(&self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
            Operation::All => "*",
        }
    }
}

/// A rule's list: not empty, and `*` only alone.
fn check_list<S: AsRef<str>>(field: &str, values: &[S]) -> Result<()> {
    ensure!(
        !values.is_empty(),
        "{field} is empty; list at least one value, or \"*\""
    );
    ensure!(
        values.len() == 1 || values.iter().all(|v| v.as_ref() != "*"),
        "{field} has \"*\" beside other values; \"*\" already means all of them, so list it alone"
    );
    Ok(())
}

/// The resource checks kwctl takes from the Kubernetes API server's validation of webhook rules
/// (`resource`, `resource/subresource`, and the wildcards `*`, `*/*`, `*/sub`, `res/*`).
fn check_resources(field: &str, resources: &[String]) -> Result<()> {
    // Not `check_list`: `*` beside `pods/status` is allowed (it covers resources, not subresources).
    ensure!(
        !resources.is_empty(),
        "{field} is empty; list at least one resource, or \"*\""
    );
    let mut wildcard_subresource_of = BTreeSet::new(); // `res/*`
    let mut any_resource_with = BTreeSet::new(); // `*/sub`
    let mut plain = false;
    for resource in resources {
        ensure!(
            !resource.is_empty(),
            "{field} has an empty resource; name one, such as pods"
        );
        let Some((res, sub)) = resource.split_once('/') else {
            plain |= resource != "*";
            continue;
        };
        ensure!(
            !wildcard_subresource_of.contains(res),
            "{field}: \"{res}/*\" already covers {resource}; remove one of them"
        );
        ensure!(
            !any_resource_with.contains(sub),
            "{field}: \"*/{sub}\" already covers {resource}; remove one of them"
        );
        if sub == "*" {
            wildcard_subresource_of.insert(res);
        }
        if res == "*" {
            any_resource_with.insert(sub);
        }
    }
    ensure!(
        !(resources.len() > 1 && resources.iter().any(|r| r == "*/*")),
        "{field} has \"*/*\" beside other resources; list it alone"
    );
    ensure!(
        !(plain && resources.iter().any(|r| r == "*")),
        "{field} has \"*\" beside resources without subresources; \"*\" already covers them"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const FILE: &str = "policy-metadata.yml";

    fn rules_yaml() -> &'static str {
        "rules:\n  - apiGroups: [\"\"]\n    apiVersions: [v1]\n    resources: [pods]\n    operations: [CREATE]\n"
    }

    fn read(text: &str) -> Result<Metadata> {
        Metadata::from_file_text(FILE, text)
    }

    fn error(text: &str) -> String {
        format!("{:#}", read(text).expect_err(text))
    }

    #[test]
    fn a_minimal_file_gets_kwctls_defaults_and_field_order() {
        let mut metadata = read(&format!("{}mutating: true\n", rules_yaml())).unwrap();
        metadata.protocol_version = Some(ProtocolVersion::V1);
        metadata.check().unwrap();
        // Written by hand from policy-evaluator's `Metadata`: backgroundAudit defaults to true,
        // executionMode to kubewarden-wapc, policyType to kubernetes, contextAwareResources to
        // an empty set; absent annotations, hostCapabilities and minimumKubewardenVersion are
        // left out.
        let expected = concat!(
            r#"{"protocolVersion":"v1","rules":[{"apiGroups":[""],"apiVersions":["v1"],"#,
            r#""resources":["pods"],"operations":["CREATE"]}],"mutating":true,"#,
            r#""backgroundAudit":true,"executionMode":"kubewarden-wapc","#,
            r#""policyType":"kubernetes","contextAwareResources":[]}"#
        );
        assert_eq!(
            String::from_utf8(metadata.to_section().unwrap()).unwrap(),
            expected
        );
        assert_eq!(
            Metadata::from_section(expected.as_bytes()).unwrap(),
            metadata
        );
    }

    #[test]
    fn annotations_read_as_strings_and_usage_replaces_the_files() {
        let text = format!(
            "{}mutating: false\nannotations:\n  a.version: 1.0\n  {USAGE_ANNOTATION}: old\n",
            rules_yaml()
        );
        let mut metadata = read(&text).unwrap();
        metadata.set_usage("# usage\n");
        let json: Value = serde_json::to_value(&metadata).unwrap();
        assert_eq!(
            json["annotations"],
            json!({"a.version": "1.0", USAGE_ANNOTATION: "# usage\n"})
        );
    }

    #[test]
    fn refusals_name_the_field() {
        let rules = rules_yaml();
        let cases = [
            (format!("{rules}mutating: true\nbackgroundAudits: false\n"), "unknown key `backgroundAudits`"),
            ("mutating: true\n".to_string(), "rules is missing"),
            (format!("{rules}\n"), "mutating is missing"),
            (format!("{rules}mutating: true\nexecutionMode: wapc\n"), "executionMode: unknown variant `wapc`"),
            (format!("{rules}mutating: true\nprotocolVersion: v1\n"), "protocolVersion is read from the module"),
            (format!("{rules}mutating: yes please\n"), "mutating: invalid type"),
            (
                "rules:\n  - apiGroups: [\"\"]\n    apiVersions: [v1]\n    resources: [pods]\n    operations: [CREAT]\nmutating: true\n".to_string(),
                "rules[0].operations[0]: unknown variant `CREAT`",
            ),
            (
                "rules:\n  - apiGroups: [\"\"]\n    apiVersions: [v1]\n    resources: [pods]\n    operations: [CREATE]\n    scope: Namespaced\nmutating: true\n".to_string(),
                "rules[0]: unknown field `scope`",
            ),
            ("- rules\n".to_string(), "must be a YAML mapping"),
            ("rules: [\n".to_string(), "is not YAML"),
        ];
        for (text, want) in cases {
            let message = error(&text);
            assert!(message.contains(want), "{message:?} lacks {want:?}");
            assert!(
                message.starts_with(FILE),
                "{message:?} does not name the file"
            );
        }
    }

    fn checked(rule: Value) -> Result<()> {
        let metadata: Metadata = serde_json::from_value(json!({
            "protocolVersion": "v1", "rules": [rule], "mutating": true
        }))
        .unwrap();
        metadata.check()
    }

    #[test]
    fn rules_are_checked_as_kwctl_checks_them() {
        let rule = |groups: Value, resources: Value, operations: Value| json!({"apiGroups": groups, "apiVersions": ["v1"], "resources": resources, "operations": operations});
        let ok = [
            rule(json!([""]), json!(["pods"]), json!(["CREATE"])),
            rule(json!(["*"]), json!(["*"]), json!(["*"])),
            rule(
                json!([""]),
                json!(["pods", "pods/status"]),
                json!(["CREATE", "UPDATE"]),
            ),
            rule(json!([""]), json!(["*/*"]), json!(["CREATE"])),
            rule(json!([""]), json!(["*", "pods/status"]), json!(["CREATE"])),
        ];
        for rule in ok {
            checked(rule.clone()).unwrap_or_else(|e| panic!("{rule}: {e:#}"));
        }
        let refused = [
            (
                rule(json!([]), json!(["pods"]), json!(["CREATE"])),
                "rules[0].apiGroups is empty",
            ),
            (
                rule(json!(["", "*"]), json!(["pods"]), json!(["CREATE"])),
                "rules[0].apiGroups has \"*\"",
            ),
            (
                rule(json!([""]), json!(["pods"]), json!(["*", "CREATE"])),
                "rules[0].operations has \"*\"",
            ),
            (
                rule(json!([""]), json!([""]), json!(["CREATE"])),
                "empty resource",
            ),
            (
                rule(json!([""]), json!(["*/*", "pods"]), json!(["CREATE"])),
                "\"*/*\" beside",
            ),
            (
                rule(json!([""]), json!(["*", "pods"]), json!(["CREATE"])),
                "\"*\" beside resources",
            ),
            (
                rule(
                    json!([""]),
                    json!(["pods/*", "pods/log"]),
                    json!(["CREATE"]),
                ),
                "\"pods/*\" already covers pods/log",
            ),
            (
                rule(json!([""]), json!(["*/log", "pods/log"]), json!(["CREATE"])),
                "\"*/log\" already covers pods/log",
            ),
        ];
        for (rule, want) in refused {
            let message = format!("{:#}", checked(rule.clone()).expect_err(&rule.to_string()));
            assert!(message.contains(want), "{message:?} lacks {want:?}");
        }
    }

    #[test]
    fn the_policy_servers_protocol_check() {
        let base = json!({"rules": [], "mutating": false});
        let with = |extra: Value| {
            let mut value = base.clone();
            value
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            Metadata::from_section(value.to_string().as_bytes()).unwrap()
        };
        let missing = format!("{:#}", with(json!({})).check().unwrap_err());
        assert!(missing.contains("protocolVersion is missing"), "{missing}");
        let unknown = with(json!({"protocolVersion": "Unknown"}))
            .check()
            .unwrap_err();
        assert!(format!("{unknown:#}").contains("protocolVersion is Unknown"));
        with(json!({"protocolVersion": "v1"})).check().unwrap();
        // Other execution modes do not speak waPC and need no protocol version.
        with(json!({"executionMode": "wasi"})).check().unwrap();
        // The policy server reads only the versions the SDK knows.
        assert!(
            Metadata::from_section(br#"{"protocolVersion":"v2","rules":[],"mutating":true}"#)
                .is_err()
        );
        let bad_version = with(json!({"protocolVersion": "v1", "minimumKubewardenVersion": "1.x"}));
        assert!(
            format!("{:#}", bad_version.check().unwrap_err()).contains("minimumKubewardenVersion")
        );
    }

    #[test]
    fn a_section_may_hold_keys_a_newer_kwctl_writes() {
        let metadata = Metadata::from_section(
            br#"{"protocolVersion":"v1","rules":[],"mutating":true,"someFutureKey":1}"#,
        )
        .unwrap();
        metadata.check().unwrap();
    }
}
