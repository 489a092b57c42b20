//! The validate-only answer (behaviour.md §10): with `validateOnly: true` the policy decides as
//! the injector does, once, and then answers without a patch: a pod it would change is refused
//! with one line saying what the pod lacks, a pod it would refuse is refused with the same
//! message, and a pod it would leave alone (not the policy's, or already wired) is accepted. This
//! is what Kubewarden's audit scanner needs: it ignores a patch, and only a refusal is a `fail`
//! in its report.

use crate::added::{Added, Annotation, Container};
use crate::json::lenient;

/// The refusal of a pod the injector would change: `added` is what it would add, `cloud` and
/// `fabric` what it would wire, `record` the annotation a wired pod carries (`None` when
/// `recordAnnotation` is `""`). One line, whatever the pod's text holds.
pub fn refusal(added: &Added, cloud: &str, fabric: &str, record: Option<&str>) -> String {
    let mut parts: Vec<String> = added.containers.iter().map(container).collect();
    parts.extend(
        added
            .sidecars
            .iter()
            .map(|sidecar| format!("sidecar {}", sidecar.name)),
    );
    if !added.claims.is_empty() {
        parts.push(format!("resource claim {}", added.claims.join(" ")));
    }
    if !added.volumes.is_empty() {
        let names: Vec<&str> = added.volumes.iter().map(|v| v.name.as_str()).collect();
        parts.push(format!("volumes {}", names.join(" ")));
    }
    for annotation in &added.annotations {
        parts.push(if annotation.key == crate::multus::ANNOTATION {
            format!("networks {}", networks(annotation))
        } else {
            format!("annotation {}", annotation.key)
        });
    }
    if parts.is_empty() {
        parts.push("what the policy adds".to_string());
    }
    let record = match record {
        Some(key) => format!("a pod the policy wired carries the annotation {key}"),
        None => "the policy writes no record on a wired pod (recordAnnotation is \"\")".to_string(),
    };
    let line = format!(
        "multi-node networking: this pod lacks the {cloud} {fabric} fabric the policy gives it: {}; {record} (validateOnly)",
        parts.join("; ")
    );
    one_line(line)
}

/// What one container lacks: `container worker: vpc.amazonaws.com/efa 32, env A B, …`.
fn container(c: &Container) -> String {
    let mut items: Vec<String> = c
        .resources
        .iter()
        .map(|(name, value)| format!("{name} {value}"))
        .collect();
    for (what, names) in [
        ("claim", &c.claims),
        ("env", &c.env),
        ("mounts", &c.mounts),
        ("capabilities", &c.capabilities),
        ("securityContext", &c.security),
    ] {
        if !names.is_empty() {
            items.push(format!("{what} {}", names.join(" ")));
        }
    }
    format!("container {}: {}", c.name, items.join(", "))
}

/// The Multus attachments the policy adds, by network: `64×network-operator/sriov-net`. Either
/// form of the annotation (behaviour.md §4) is read; an entry that cannot be read is left out.
fn networks(annotation: &Annotation) -> String {
    fn entries(value: &str) -> Vec<String> {
        let value = value.trim();
        if value.starts_with('[') {
            let list = lenient::list(value).ok().flatten().unwrap_or_default();
            list.into_iter()
                .filter_map(|entry| {
                    let entry = lenient::members(entry);
                    let name = entry.get("name").and_then(lenient::string)?;
                    Some(match entry.get("namespace").and_then(lenient::string) {
                        Some(namespace) => format!("{namespace}/{name}"),
                        None => name.into_owned(),
                    })
                })
                .collect()
        } else {
            value
                .split(',')
                .map(|entry| entry.trim().split('@').next().unwrap_or_default())
                .filter(|entry| !entry.is_empty())
                .map(str::to_string)
                .collect()
        }
    }
    let mut before = entries(annotation.before.as_deref().unwrap_or_default());
    let mut counts: Vec<(String, usize)> = Vec::new();
    for entry in entries(&annotation.value) {
        if let Some(at) = before.iter().position(|had| had == &entry) {
            before.remove(at);
            continue;
        }
        match counts.iter_mut().find(|(network, _)| network == &entry) {
            Some((_, count)) => *count += 1,
            None => counts.push((entry, 1)),
        }
    }
    let counted: Vec<String> = counts
        .iter()
        .map(|(network, count)| format!("{count}×{network}"))
        .collect();
    counted.join(" ")
}

/// `text` with every line break and other control character a blank.
pub fn one_line(text: String) -> String {
    if text.chars().any(char::is_control) {
        text.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::added::Volume;

    #[test]
    fn names_each_thing_the_pod_lacks_in_one_line() {
        let added = Added {
            containers: vec![Container {
                name: "worker".into(),
                resources: vec![("vpc.amazonaws.com/efa".into(), "32".into())],
                env: vec!["FI_PROVIDER".into(), "FI_EFA_USE_DEVICE_RDMA".into()],
                mounts: vec!["efa-libs".into()],
                capabilities: vec!["IPC_LOCK".into()],
                ..Container::default()
            }],
            sidecars: vec![Container {
                name: "tcpxo-daemon".into(),
                ..Container::default()
            }],
            volumes: vec![Volume {
                name: "efa-libs".into(),
                host_path: true,
            }],
            claims: vec![],
            annotations: vec![
                Annotation {
                    key: "k8s.v1.cni.cncf.io/networks".into(),
                    before: Some("mine/own, net/sriov@net1".into()),
                    value: "mine/own, net/sriov@net1,net/sriov,\nnet/sriov,other/x".into(),
                },
                Annotation {
                    key: "networking.gke.io/interfaces".into(),
                    before: None,
                    value: "[\n{}]".into(),
                },
            ],
        };
        assert_eq!(
            refusal(&added, "aws", "efa", Some("example.com/injected")),
            "multi-node networking: this pod lacks the aws efa fabric the policy gives it: container worker: vpc.amazonaws.com/efa 32, env FI_PROVIDER FI_EFA_USE_DEVICE_RDMA, mounts efa-libs, capabilities IPC_LOCK; sidecar tcpxo-daemon; volumes efa-libs; networks 2×net/sriov 1×other/x; annotation networking.gke.io/interfaces; a pod the policy wired carries the annotation example.com/injected (validateOnly)"
        );
        let none = refusal(&Added::default(), "gcp", "tcpxo", None);
        assert_eq!(
            none,
            "multi-node networking: this pod lacks the gcp tcpxo fabric the policy gives it: what the policy adds; the policy writes no record on a wired pod (recordAnnotation is \"\") (validateOnly)"
        );
    }
}

#[cfg(test)]
mod networks {
    use super::*;

    fn added(before: Option<&str>, value: &str) -> String {
        networks(&Annotation {
            key: crate::multus::ANNOTATION.into(),
            before: before.map(str::to_string),
            value: value.into(),
        })
    }

    #[test]
    fn counts_the_attachments_added_in_either_form() {
        assert_eq!(added(None, "n/a,n/a,n/a"), "3×n/a");
        assert_eq!(added(Some("n/a@eth1"), "n/a@eth1, n/a"), "1×n/a");
        assert_eq!(
            added(
                Some(r#"[{"name":"a","namespace":"n"}]"#),
                r#"[{"name":"a","namespace":"n"},{"name":"a","namespace":"n"},{"name":"b"}]"#
            ),
            "1×n/a 1×b"
        );
        assert_eq!(added(None, "[not json"), "");
    }
}
