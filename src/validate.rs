//! The validate-only answer (behaviour.md §10): with `validateOnly: true` the policy decides as
//! the injector does, once, and then answers without a patch: a pod it would change is refused
//! with one line saying what the pod lacks, a pod it would refuse is refused with the same
//! message, and a pod it would leave alone (not the policy's, or already wired) is accepted. This
//! is what Kubewarden's audit scanner needs: it ignores a patch, and only a refusal is a `fail`
//! in its report.

use crate::added::{Added, Container};

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
    for (key, value) in &added.annotations {
        parts.push(if key == crate::multus::ANNOTATION {
            format!("networks {value}")
        } else {
            format!("annotation {key}")
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
            annotations: vec![(
                "k8s.v1.cni.cncf.io/networks".into(),
                "net/sriov,\nnet/sriov".into(),
            )],
        };
        assert_eq!(
            refusal(&added, "aws", "efa", Some("example.com/injected")),
            "multi-node networking: this pod lacks the aws efa fabric the policy gives it: container worker: vpc.amazonaws.com/efa 32, env FI_PROVIDER FI_EFA_USE_DEVICE_RDMA, mounts efa-libs, capabilities IPC_LOCK; sidecar tcpxo-daemon; volumes efa-libs; networks net/sriov, net/sriov; a pod the policy wired carries the annotation example.com/injected (validateOnly)"
        );
        let none = refusal(&Added::default(), "gcp", "tcpxo", None);
        assert_eq!(
            none,
            "multi-node networking: this pod lacks the gcp tcpxo fabric the policy gives it: what the policy adds; the policy writes no record on a wired pod (recordAnnotation is \"\") (validateOnly)"
        );
    }
}
