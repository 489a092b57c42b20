//! Pod Security, before its refusal (behaviour.md §11). Pod Security admission runs after the
//! mutating webhooks: a namespace labelled `pod-security.kubernetes.io/enforce: baseline` (or
//! `restricted`) refuses the pod the policy wired for capabilities, hostPath volumes or a
//! privileged daemon its author never wrote. So for a pod the policy would change, the preflight
//! reads the namespace's label with one `get_resource` host call and, where the level refuses
//! what the policy adds, says so itself: a warning naming the level, the fields and the fix, or
//! with `preflight: reject` a refusal with that message.
//!
//! Only the namespace's label is visible to a policy: the API server's own default level (its
//! `PodSecurity` admission configuration) and its exemptions are not, so an unlabelled namespace
//! says nothing. As for every preflight call, an error or an answer that cannot be read says
//! nothing.

use crate::cluster::{Cluster, Mode, NAMESPACE};
use crate::engine::added::Added;
use crate::error::{Error, join};
use crate::json::lenient::{members, read_members, string};

/// The label whose level Pod Security admission enforces.
pub const ENFORCE: &str = "pod-security.kubernetes.io/enforce";

/// The capabilities the baseline level lets a container add (Pod Security Standards, "Baseline",
/// "Capabilities"); the restricted level only NET_BIND_SERVICE.
const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// A level that refuses something; `privileged` refuses nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Baseline,
    Restricted,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }

    fn allows(self, capability: &str) -> bool {
        // The API server compares capabilities as written; a CAP_ prefix is another name.
        match self {
            Level::Baseline => BASELINE_CAPABILITIES.contains(&capability),
            Level::Restricted => capability == "NET_BIND_SERVICE",
        }
    }
}

/// The level the namespace `name` enforces, from the host's answer: `None` for `privileged`, no
/// label, a value Pod Security does not know, or an answer that is not that namespace.
pub fn level(answer: &[u8], name: &str) -> Option<Level> {
    let text = std::str::from_utf8(answer).ok()?;
    let namespace = read_members(text).ok()?;
    if namespace.get("kind").and_then(string).as_deref() != Some("Namespace") {
        return None;
    }
    let metadata = members(namespace.get("metadata")?);
    if metadata.get("name").and_then(string).as_deref() != Some(name) {
        return None;
    }
    let labels = members(metadata.get("labels")?);
    match labels.get(ENFORCE).and_then(string).as_deref() {
        Some("baseline") => Some(Level::Baseline),
        Some("restricted") => Some(Level::Restricted),
        _ => None,
    }
}

/// Reads the level of the request's namespace from `cluster`: `None` without a level that
/// refuses anything, or when the policy may not look.
pub fn read_level(cluster: &Cluster<'_>) -> Option<Level> {
    let namespace = cluster.namespace()?;
    let answer = cluster.get(&NAMESPACE, None, namespace).ok()?;
    level(answer.as_bytes(), namespace)
}

/// Whether any level refuses something of `added`: restricted refuses all that baseline does,
/// and more. Where it does not, the namespace is not read: its level cannot matter. Asked of
/// every pod the policy changes, so nothing is written out.
pub fn refusable(added: &Added<'_>) -> bool {
    let capability = capabilities(added)
        .flat_map(|(_, capabilities)| capabilities)
        .any(|c| !Level::Restricted.allows(c));
    capability || added.volumes.iter().any(|v| v.host_path)
}

/// The capabilities `added` gives each container it names, the sidecar's last.
fn capabilities<'s>(added: &'s Added<'_>) -> impl Iterator<Item = (&'s str, Vec<&'s str>)> {
    let containers = added.containers.iter().map(|c| {
        let capabilities = c.capabilities.iter().map(|c| c.as_ref());
        (c.name.as_str(), capabilities.collect::<Vec<&str>>())
    });
    let daemon = added
        .sidecar
        .iter()
        .map(|d| (d.name, d.capabilities.to_vec()));
    containers.chain(daemon)
}

/// What of `added` the level refuses, each field named: `container worker capabilities IPC_LOCK`,
/// `hostPath volume efa-libs`. The policy never adds `privileged` (behaviour.md §5), so that
/// field of Pod Security is not read.
pub fn refused(level: Level, added: &Added<'_>) -> Vec<String> {
    let mut fields = Vec::new();
    for (name, capabilities) in capabilities(added) {
        let refused: Vec<&str> = capabilities
            .into_iter()
            .filter(|c| !level.allows(c))
            .collect();
        if !refused.is_empty() {
            fields.push(format!(
                "container {name} capabilities {}",
                join(&refused, " ")
            ));
        }
    }
    for volume in added.volumes.iter().filter(|v| v.host_path) {
        fields.push(format!("hostPath volume {}", volume.name));
    }
    fields
}

/// The warning about `namespace`'s `level` refusing `added`, or with [`Mode::Reject`] the
/// refusal; nothing where the level refuses none of it.
pub fn check(
    level: Level,
    added: &Added<'_>,
    namespace: &str,
    mode: Mode,
) -> Result<Option<String>, Error> {
    let fields = refused(level, added);
    if fields.is_empty() {
        return Ok(None);
    }
    let message = super::validate_only::one_line(format!(
        "multi-node networking: namespace {namespace} enforces the Pod Security level {} ({ENFORCE}), which refuses what the policy adds to this pod: {}; Pod Security admission will refuse the pod: label the namespace {ENFORCE}=privileged, or exempt it from Pod Security in the API server's admission configuration",
        level.name(),
        join(&fields, ", ")
    ));
    if mode == Mode::Reject {
        return Err(Error::Preflight {
            message: format!("{message} (preflight: reject refuses such a pod)"),
        });
    }
    Ok(Some(message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::added::{Container, Daemon, NewVolume};
    use std::cell::RefCell;

    fn namespace(name: &str, labels: &str) -> String {
        format!(
            r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{name}","labels":{labels}}},"status":{{"phase":"Active"}}}}"#
        )
    }

    #[test]
    fn only_an_enforce_label_of_baseline_or_restricted_is_a_level() {
        let at = |labels: &str| level(namespace("jobs", labels).as_bytes(), "jobs");
        assert_eq!(
            at(r#"{"pod-security.kubernetes.io/enforce":"baseline"}"#),
            Some(Level::Baseline)
        );
        assert_eq!(
            at(r#"{"pod-security.kubernetes.io/enforce":"restricted"}"#),
            Some(Level::Restricted)
        );
        for labels in [
            r#"{"pod-security.kubernetes.io/enforce":"privileged"}"#,
            r#"{"pod-security.kubernetes.io/warn":"restricted"}"#,
            r#"{"pod-security.kubernetes.io/audit":"baseline"}"#,
            r#"{"pod-security.kubernetes.io/enforce":"Baseline"}"#,
            r#"{"pod-security.kubernetes.io/enforce":3}"#,
            r#"{}"#,
            "null",
            "[]",
        ] {
            assert_eq!(at(labels), None, "{labels}");
        }
        let other = namespace(
            "other",
            r#"{"pod-security.kubernetes.io/enforce":"baseline"}"#,
        );
        assert_eq!(level(other.as_bytes(), "jobs"), None);
        for garbage in [
            "",
            "null",
            "[]",
            "{}",
            r#"{"kind":"Namespace"}"#,
            "{\"kind\":",
            "\u{0}",
        ] {
            assert_eq!(level(garbage.as_bytes(), "jobs"), None, "{garbage}");
        }
        assert_eq!(level(&[0xff], "jobs"), None);
    }

    #[test]
    fn one_call_and_none_when_skipped() {
        let calls = RefCell::new(Vec::new());
        let answer = namespace(
            "jobs",
            r#"{"pod-security.kubernetes.io/enforce":"baseline"}"#,
        );
        let host = |operation: &str, request: &[u8]| {
            calls
                .borrow_mut()
                .push((operation.to_string(), request.to_vec()));
            Ok(answer.clone().into_bytes())
        };
        let read = |mode| read_level(&Cluster::new(Some("jobs"), mode, &host));
        assert_eq!(read(Mode::Warn), Some(Level::Baseline));
        assert_eq!(read(Mode::Reject), Some(Level::Baseline));
        assert_eq!(calls.borrow().len(), 2);
        let (operation, request) = calls.borrow()[0].clone();
        assert_eq!(operation, crate::cluster::GET);
        let request: serde_json::Value = serde_json::from_slice(&request).unwrap();
        assert_eq!(
            request,
            serde_json::json!({"api_version": "v1", "kind": "Namespace", "name": "jobs",
                "disable_cache": false, "field_masks": ["metadata.labels"]})
        );
        assert_eq!(read(Mode::Skip), None);
        assert_eq!(calls.borrow().len(), 2);
        let refused = |_: &str, _: &[u8]| Err(crate::cluster::NO_HOST.to_string());
        assert_eq!(
            read_level(&Cluster::new(Some("jobs"), Mode::Warn, &refused)),
            None
        );
        assert_eq!(read_level(&Cluster::new(None, Mode::Warn, &host)), None);
        assert_eq!(calls.borrow().len(), 2);
    }

    fn wired() -> Added<'static> {
        Added {
            containers: vec![Container {
                name: "worker".into(),
                capabilities: vec!["IPC_LOCK".into(), "CHOWN".into(), "NET_BIND_SERVICE".into()],
                ..Container::default()
            }],
            sidecar: Some(Daemon {
                name: "daemon",
                capabilities: &["NET_ADMIN"],
            }),
            volumes: vec![
                NewVolume {
                    name: "libs",
                    host_path: true,
                },
                NewVolume {
                    name: "shm",
                    host_path: false,
                },
            ],
            ..Added::default()
        }
    }

    #[test]
    fn each_level_names_what_it_refuses() {
        assert_eq!(
            refused(Level::Baseline, &wired()),
            vec![
                "container worker capabilities IPC_LOCK",
                "container daemon capabilities NET_ADMIN",
                "hostPath volume libs",
            ]
        );
        assert_eq!(
            refused(Level::Restricted, &wired())[0],
            "container worker capabilities IPC_LOCK CHOWN"
        );
        let harmless = Added {
            containers: vec![Container {
                name: "w".into(),
                capabilities: vec!["CHOWN".into()],
                env: vec![crate::profile::var!("NCCL_X", "1")],
                ..Container::default()
            }],
            ..Added::default()
        };
        assert!(refused(Level::Baseline, &harmless).is_empty());
        assert_eq!(
            check(Level::Baseline, &harmless, "jobs", Mode::Reject),
            Ok(None)
        );
    }

    #[test]
    fn only_a_capability_but_net_bind_service_or_a_host_path_is_refusable() {
        assert!(refusable(&wired()));
        let env_and_net_bind = Added {
            containers: vec![Container {
                name: "w".into(),
                capabilities: vec!["NET_BIND_SERVICE".into()],
                env: vec![crate::profile::var!("NCCL_X", "1")],
                ..Container::default()
            }],
            volumes: vec![NewVolume {
                name: "shm",
                host_path: false,
            }],
            ..Added::default()
        };
        assert!(!refusable(&env_and_net_bind));
        assert!(!refusable(&Added::default()));
        // CHOWN: baseline allows it, restricted does not.
        assert!(refusable(&Added {
            containers: vec![Container {
                name: "w".into(),
                capabilities: vec!["CHOWN".into()],
                ..Container::default()
            }],
            ..Added::default()
        }));
        assert!(refusable(&Added {
            volumes: vec![NewVolume {
                name: "libs",
                host_path: true,
            }],
            ..Added::default()
        }));
    }

    #[test]
    fn warns_or_refuses_with_the_level_the_fields_and_the_fix() {
        let warning = check(Level::Baseline, &wired(), "jobs", Mode::Warn)
            .unwrap()
            .unwrap();
        assert_eq!(
            warning,
            "multi-node networking: namespace jobs enforces the Pod Security level baseline (pod-security.kubernetes.io/enforce), which refuses what the policy adds to this pod: container worker capabilities IPC_LOCK, container daemon capabilities NET_ADMIN, hostPath volume libs; Pod Security admission will refuse the pod: label the namespace pod-security.kubernetes.io/enforce=privileged, or exempt it from Pod Security in the API server's admission configuration"
        );
        let refusal = check(Level::Baseline, &wired(), "jobs", Mode::Reject).unwrap_err();
        assert_eq!(
            refusal.to_string(),
            format!("{warning} (preflight: reject refuses such a pod)")
        );
    }
}
