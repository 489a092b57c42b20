//! The validate-only answer (behaviour.md §10): with `validateOnly: true` the policy decides as
//! the injector does, once, and then answers without a patch: a pod it would change is refused
//! with one line saying what the pod lacks, a pod it would refuse is refused with the same
//! message, and a pod it would leave alone (not the policy's, or already wired) is accepted. This
//! is what Kubewarden's audit scanner needs: it ignores a patch, and only a refusal is a `fail`
//! in its report.

use crate::engine::added::{Added, Annotation, Container};
use crate::error::join;

/// The refusal of a pod the injector would change: `added` is what it would add, `cloud` and
/// `fabric` what it would wire, `record` the annotation a wired pod carries (`None` when
/// `recordAnnotation` is `""`). One line, whatever the pod's text holds.
pub fn refusal(added: &Added<'_>, cloud: &str, fabric: &str, record: Option<&str>) -> String {
    let mut parts: Vec<String> = added.containers.iter().map(container).collect();
    parts.extend(added.sidecar.iter().map(|d| format!("sidecar {}", d.name)));
    if !added.claims.is_empty() {
        let channel = added.channel.as_ref().map_or_else(String::new, |domain| {
            format!(
                " (the IMEX channel of ComputeDomain {}, from its template {})",
                domain.object, domain.template
            )
        });
        parts.push(format!(
            "resource claim {}{channel}",
            join(&added.claims, " ")
        ));
    }
    if !added.volumes.is_empty() {
        let names: Vec<&str> = added.volumes.iter().map(|v| v.name).collect();
        parts.push(format!("volumes {}", join(&names, " ")));
    }
    parts.extend(added.annotations.iter().map(annotation));
    if parts.is_empty() {
        parts.push("what the policy adds".to_string());
    }
    let record = match record {
        Some(key) => format!("a pod the policy wired carries the annotation {key}"),
        None => "the policy writes no record on a wired pod (recordAnnotation is \"\")".to_string(),
    };
    let line = format!(
        "multi-node networking: this pod lacks the {cloud} {fabric} fabric the policy gives it: {}; {record} (validateOnly)",
        join(&parts, "; ")
    );
    one_line(line)
}

/// What one container lacks: `container worker: vpc.amazonaws.com/efa 32, env A B, …`, each
/// kind in the order the merge adds it.
fn container(c: &Container<'_>) -> String {
    let mut items: Vec<String> = c
        .resources
        .iter()
        .map(|r| format!("{} {}", r.name, r.quantity))
        .collect();
    let env: Vec<&str> = c.env.iter().map(|var| var.name.as_ref()).collect();
    for (what, names) in [
        ("claim", join(&c.claims, " ")),
        ("env", join(&env, " ")),
        ("mounts", join(&c.mounts, " ")),
        ("capabilities", join(&c.capabilities, " ")),
        ("securityContext", join(&c.security, " ")),
    ] {
        if !names.is_empty() {
            items.push(format!("{what} {names}"));
        }
    }
    format!("container {}: {}", c.name, join(&items, ", "))
}

/// An annotation the pod lacks; the Multus list by the attachments it lacks, by network:
/// `networks 64×network-operator/sriov-net`.
fn annotation(annotation: &Annotation) -> String {
    if annotation.key != crate::multus::ANNOTATION {
        return format!("annotation {}", annotation.key);
    }
    let counted: Vec<String> = annotation
        .networks
        .iter()
        .map(|a| format!("{}×{}", a.times, a.network))
        .collect();
    format!("networks {}", join(&counted, " "))
}

/// `text` with every line break and other control character a blank.
pub fn one_line(text: String) -> String {
    // A control character is a byte below 0x20, 0x7f, or U+0080 to U+009F, which UTF-8 writes
    // after a 0xc2 byte: most lines have none of these bytes, and are seen so without decoding.
    let maybe = |b: &u8| *b < 0x20 || *b == 0x7f || *b == 0xc2;
    if text.as_bytes().iter().any(maybe) && text.chars().any(char::is_control) {
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
    use crate::engine::added::{Daemon, NewVolume, Resource};
    use crate::multus::Attached;
    use crate::profile::var;
    use std::borrow::Cow;

    #[test]
    fn names_each_thing_the_pod_lacks_in_one_line() {
        let resource = |name: &'static str, quantity: &str| Resource {
            name: Cow::Borrowed(name),
            quantity: quantity.into(),
        };
        let added = Added {
            containers: vec![Container {
                name: "worker".into(),
                resources: vec![
                    resource("vpc.amazonaws.com/efa", "32"),
                    resource("rail/b", "1"),
                    resource("cpu", "100m"),
                ],
                env: vec![
                    var!("FI_PROVIDER", "efa"),
                    var!("FI_EFA_USE_DEVICE_RDMA", "1"),
                ],
                mounts: vec!["efa-libs"],
                capabilities: vec!["IPC_LOCK".into()],
                ..Container::default()
            }],
            sidecar: Some(Daemon {
                name: "tcpxo-daemon",
                capabilities: &[],
            }),
            volumes: vec![NewVolume {
                name: "efa-libs",
                host_path: true,
            }],
            claims: vec![],
            channel: None,
            annotations: vec![
                Annotation {
                    key: "networking.gke.io/interfaces",
                    networks: vec![],
                },
                Annotation {
                    key: "k8s.v1.cni.cncf.io/networks",
                    networks: vec![
                        Attached {
                            network: "net/sriov".into(),
                            times: 2,
                        },
                        Attached {
                            network: "other/x".into(),
                            times: 1,
                        },
                    ],
                },
            ],
        };
        assert_eq!(
            refusal(&added, "aws", "efa", Some("example.com/injected")),
            "multi-node networking: this pod lacks the aws efa fabric the policy gives it: container worker: vpc.amazonaws.com/efa 32, rail/b 1, cpu 100m, env FI_PROVIDER FI_EFA_USE_DEVICE_RDMA, mounts efa-libs, capabilities IPC_LOCK; sidecar tcpxo-daemon; volumes efa-libs; annotation networking.gke.io/interfaces; networks 2×net/sriov 1×other/x; a pod the policy wired carries the annotation example.com/injected (validateOnly)"
        );
        let none = refusal(&Added::default(), "gcp", "tcpxo", None);
        assert_eq!(
            none,
            "multi-node networking: this pod lacks the gcp tcpxo fabric the policy gives it: what the policy adds; the policy writes no record on a wired pod (recordAnnotation is \"\") (validateOnly)"
        );
    }

    #[test]
    fn a_channel_names_its_compute_domain_and_template() {
        let channel = "compute-domain-channel".to_string();
        let added = Added {
            containers: vec![Container {
                name: "worker".into(),
                claims: vec!["efa".into(), channel.clone()],
                ..Container::default()
            }],
            claims: vec!["efa".into(), channel],
            channel: Some(crate::compute_domain::Domain {
                object: "jobs/llama".into(),
                template: "llama-channel".into(),
            }),
            ..Added::default()
        };
        assert_eq!(
            refusal(&added, "aws", "efa", Some("r")),
            "multi-node networking: this pod lacks the aws efa fabric the policy gives it: container worker: claim efa compute-domain-channel; resource claim efa compute-domain-channel (the IMEX channel of ComputeDomain jobs/llama, from its template llama-channel); a pod the policy wired carries the annotation r (validateOnly)"
        );
    }

    #[test]
    fn a_name_with_a_line_break_stays_on_one_line() {
        let added = Added {
            containers: vec![Container {
                name: "odd\nname".into(),
                env: vec![var!("A", "1")],
                ..Container::default()
            }],
            ..Added::default()
        };
        let line = refusal(&added, "aws", "efa", Some("r"));
        assert!(line.contains("container odd name: env A") && !line.contains('\n'));
        for (text, line) in [
            ("a\u{85}b\u{7f}c\td", "a b c d"),
            ("é\u{a0}ü", "é\u{a0}ü"),
            ("plain", "plain"),
        ] {
            assert_eq!(one_line(text.to_string()), line);
        }
    }
}
