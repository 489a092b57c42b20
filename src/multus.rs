//! The Multus `k8s.v1.cni.cncf.io/networks` annotation: one attachment per SR-IOV device, per
//! rail device, or once per pod.
//!
//! The user's own value is kept as written (their other networks included) and only the missing
//! attachments of our network are appended, in whichever of Multus's two forms the value uses.

use crate::json::lenient::Members;

use crate::error::{Error, MAX_NETWORKS};
use crate::json::write::render_string;
use crate::profile::Network;

pub const ANNOTATION: &str = "k8s.v1.cni.cncf.io/networks";

/// One network the pod is attached to `wanted` times, for the devices of `resource` (named in the
/// rejection; empty for a network listed once per pod).
#[derive(Debug, Clone, Copy)]
pub struct Attachment<'n> {
    pub network: &'n Network<'n>,
    pub resource: &'n str,
    pub wanted: u64,
}

/// The annotation's new value when attachments are missing, as the JSON text of that string,
/// with the attachments appended; `None` when it already has enough of each. Each attachment
/// extends what the ones before it made, so that the pod's own networks come first and ours
/// follow in the order given. An entry without a namespace is in the pod's (`namespace`, where
/// known), so that `rail0` in a pod of namespace `default` is the attachment `default/rail0`
/// names.
pub fn annotation(
    existing: Option<&str>,
    attachments: &[Attachment<'_>],
    namespace: Option<&str>,
) -> Result<Option<Extended>, Error> {
    let mut value: Option<String> = None;
    let mut attached = Vec::new();
    for attachment in attachments {
        if attachment.wanted > MAX_NETWORKS {
            return Err(Error::TooManyNetworks {
                network: attachment.network.qualified().to_string(),
                resource: attachment.resource.to_string(),
                wanted: attachment.wanted,
            });
        }
        let current = value.as_deref().or(existing).unwrap_or("");
        let (network, wanted) = (attachment.network, attachment.wanted);
        // Multus reads a value holding any of `[`, `{` or `"` as JSON, and as a list of
        // network selections only (`parsePodNetworkAnnotation` in Multus's
        // `pkg/k8sclient/k8sclient.go`: `strings.ContainsAny(podNetworks, "[{\"")`, then
        // `json.Unmarshal` into `[]*NetworkSelectionElement`): `{"name":"a"}` is no short form,
        // and extending it as one would give a value Multus cannot parse.
        let merged = if is_json_form(current) {
            merge_json(current, network, wanted, namespace)?
        } else {
            merge_short(current, network, wanted, namespace)
        };
        if let Some((merged, missing)) = merged {
            value = Some(merged);
            let network = network.qualified();
            match attached
                .iter_mut()
                .find(|a: &&mut Attached| a.network == network)
            {
                Some(known) => known.times += missing,
                None => attached.push(Attached {
                    network: network.to_string(),
                    times: missing,
                }),
            }
        }
    }
    Ok(value.map(|value| Extended {
        value: render_string(&value),
        attached,
    }))
}

/// Whether Multus reads `value` as its JSON form (see [`annotation`]).
pub fn is_json_form(value: &str) -> bool {
    value.contains(['[', '{', '"'])
}

/// The annotation's new value, and what it gained.
#[derive(Debug, PartialEq, Eq)]
pub struct Extended {
    /// The JSON text of the new value's string.
    pub value: String,
    pub attached: Vec<Attached>,
}

/// A network the pod's Multus list gained `times` attachments of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attached {
    /// As the list names it: `namespace/name`, or the name alone.
    pub network: String,
    pub times: u64,
}

/// The same attachment: the same name in the same namespace, a missing one being the pod's.
fn same(a: (Option<&str>, &str), b: (Option<&str>, &str), namespace: Option<&str>) -> bool {
    a.1 == b.1 && a.0.or(namespace) == b.0.or(namespace)
}

/// `ns/name,ns/name@eth1`: entries are compared without the interface suffix. The new value,
/// and how many attachments it appended.
fn merge_short(
    existing: &str,
    network: &Network<'_>,
    wanted: u64,
    namespace: Option<&str>,
) -> Option<(String, u64)> {
    let ours = network.qualified();
    let present = existing
        .split(',')
        .map(|entry| entry.trim().split('@').next().unwrap_or(""))
        .filter(|entry| same(Network::split(entry), network.parts(), namespace))
        .count() as u64;
    let missing = wanted.saturating_sub(present);
    if missing == 0 {
        return None;
    }
    // The user's text is kept as written; Multus trims the blanks around each entry itself.
    let head = match existing.trim().is_empty() {
        true => "",
        false => existing,
    };
    Some((repeated(head, !head.is_empty(), ours, missing, ""), missing))
}

/// `head`, then `missing` times `entry` (each after a comma where `comma` or it is not the
/// first), then `tail`.
fn repeated(head: &str, comma: bool, entry: &str, missing: u64, tail: &str) -> String {
    let repeats = usize::try_from(missing).unwrap_or(0);
    let mut value = String::with_capacity(head.len() + tail.len() + repeats * (entry.len() + 1));
    value.push_str(head);
    for at in 0..missing {
        if at > 0 || comma {
            value.push(',');
        }
        value.push_str(entry);
    }
    value.push_str(tail);
    value
}

/// `[{"name": "...", "namespace": "..."}]`: the text is kept byte for byte and our objects are
/// inserted before the closing bracket, so nothing of the user's formatting or keys changes. An
/// entry without a namespace is in the pod's namespace, as a network given without one. The new
/// value, and how many attachments it appended.
fn merge_json(
    existing: &str,
    network: &Network<'_>,
    wanted: u64,
    pod_namespace: Option<&str>,
) -> Result<Option<(String, u64)>, Error> {
    let unreadable = || Error::UnreadableNetworks {
        value: existing.chars().take(200).collect(),
    };
    let entries = crate::json::lenient::list(existing)
        .ok()
        .flatten()
        .ok_or_else(unreadable)?;
    let (namespace, name) = network.parts();
    let present = entries
        .iter()
        .filter(|entry| {
            let entry = crate::json::lenient::members(entry);
            let theirs = (field(&entry, "namespace"), field(&entry, "name"));
            let Some(their_name) = theirs.1.as_deref() else {
                return false;
            };
            same(
                (theirs.0.as_deref(), their_name),
                (namespace, name),
                pod_namespace,
            )
        })
        .count() as u64;
    let missing = wanted.saturating_sub(present);
    if missing == 0 {
        return Ok(None);
    }
    let body = existing.trim_end();
    let head = body.strip_suffix(']').ok_or_else(unreadable)?;
    let entry = match namespace {
        Some(namespace) => format!(
            r#"{{"name":{},"namespace":{}}}"#,
            render_string(name),
            render_string(namespace)
        ),
        None => format!(r#"{{"name":{}}}"#, render_string(name)),
    };
    let value = repeated(head, !entries.is_empty(), &entry, missing, "]");
    Ok(Some((value, missing)))
}

/// An entry's string field; `None` when absent or not a string.
fn field<'a>(entry: &Members<'a>, key: &str) -> Option<std::borrow::Cow<'a, str>> {
    entry.get(key).and_then(crate::json::lenient::string)
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::borrow::Cow;

    /// The new value itself, decoded from [`annotation`]'s text.
    fn merge(
        existing: Option<&str>,
        network: &Network<'_>,
        resource: &str,
        wanted: u64,
    ) -> Result<Option<String>, Error> {
        let attachment = Attachment {
            network,
            resource,
            wanted,
        };
        let extended = annotation(existing, &[attachment], None)?;
        Ok(extended.map(|e| serde_json::from_str(&e.value).expect("a JSON string")))
    }

    const SRIOV: &Network<'static> = &Network(Cow::Borrowed("network-operator/sriov-net"));
    const RESOURCE: &str = "nvidia.com/mlnxnics";

    #[test]
    fn absent_becomes_the_short_form() {
        assert_eq!(
            merge(None, SRIOV, RESOURCE, 3).unwrap().as_deref(),
            Some(
                "network-operator/sriov-net,network-operator/sriov-net,network-operator/sriov-net"
            )
        );
        assert_eq!(merge(None, SRIOV, RESOURCE, 0).unwrap(), None);
        assert_eq!(
            merge(Some(""), SRIOV, RESOURCE, 1).unwrap().as_deref(),
            Some("network-operator/sriov-net")
        );
    }

    #[test]
    fn short_form_keeps_the_users_networks_and_counts_ours() {
        let existing = "default/storage, network-operator/sriov-net@net1";
        assert_eq!(
            merge(Some(existing), SRIOV, RESOURCE, 2)
                .unwrap()
                .as_deref(),
            Some("default/storage, network-operator/sriov-net@net1,network-operator/sriov-net")
        );
        assert_eq!(merge(Some(existing), SRIOV, RESOURCE, 1).unwrap(), None);
        assert_eq!(
            merge(Some(" default/storage "), SRIOV, RESOURCE, 1)
                .unwrap()
                .as_deref(),
            Some(" default/storage ,network-operator/sriov-net")
        );
        assert_eq!(
            merge(Some("  "), SRIOV, RESOURCE, 1).unwrap().as_deref(),
            Some("network-operator/sriov-net")
        );
        // Other namespaces do not count.
        assert_eq!(
            merge(Some("sriov-net"), SRIOV, RESOURCE, 1)
                .unwrap()
                .as_deref(),
            Some("sriov-net,network-operator/sriov-net")
        );
    }

    #[test]
    fn json_form_is_extended_in_place() {
        let existing = r#"[ {"name": "storage", "namespace": "default", "interface": "net9"} ]"#;
        assert_eq!(
            merge(Some(existing), SRIOV, RESOURCE, 2)
                .unwrap()
                .as_deref(),
            Some(
                r#"[ {"name": "storage", "namespace": "default", "interface": "net9"} ,{"name":"sriov-net","namespace":"network-operator"},{"name":"sriov-net","namespace":"network-operator"}]"#
            )
        );
        assert_eq!(
            merge(Some("[]"), SRIOV, RESOURCE, 1).unwrap().as_deref(),
            Some(r#"[{"name":"sriov-net","namespace":"network-operator"}]"#)
        );
        let done = r#"[{"namespace":"network-operator","name":"sriov-net"}]"#;
        assert_eq!(merge(Some(done), SRIOV, RESOURCE, 1).unwrap(), None);
        // Idempotent: the merged value counts as complete.
        let once = merge(Some("[]"), SRIOV, RESOURCE, 4).unwrap().unwrap();
        assert_eq!(merge(Some(&once), SRIOV, RESOURCE, 4).unwrap(), None);
    }

    #[test]
    fn a_network_without_namespace_is_matched_and_written_without_one() {
        let vf = &Network(Cow::Borrowed("rdma-vf"));
        assert_eq!(
            merge(Some("rdma-vf,default/rdma-vf"), vf, RESOURCE, 2)
                .unwrap()
                .as_deref(),
            Some("rdma-vf,default/rdma-vf,rdma-vf")
        );
        assert_eq!(
            merge(
                Some(r#"[{"name":"rdma-vf"},{"name":"rdma-vf","namespace":"default"}]"#),
                vf,
                RESOURCE,
                2
            )
            .unwrap()
            .as_deref(),
            Some(
                r#"[{"name":"rdma-vf"},{"name":"rdma-vf","namespace":"default"},{"name":"rdma-vf"}]"#
            )
        );
    }

    /// A short name is the attachment of the pod's namespace: with the pod in `default`, `rdma-vf`
    /// and `default/rdma-vf` are one network, in either form.
    #[test]
    fn a_name_without_namespace_is_the_pods_namespaces() {
        let merged = |existing: &str, network: &Network<'_>| {
            let attachment = Attachment {
                network,
                resource: RESOURCE,
                wanted: 2,
            };
            let extended = annotation(Some(existing), &[attachment], Some("default")).unwrap();
            extended.map(|e| serde_json::from_str::<String>(&e.value).unwrap())
        };
        let qualified = &Network(Cow::Borrowed("default/rdma-vf"));
        let short = &Network(Cow::Borrowed("rdma-vf"));
        assert_eq!(merged("rdma-vf,default/rdma-vf", qualified), None);
        assert_eq!(merged("rdma-vf,default/rdma-vf", short), None);
        assert_eq!(
            merged("rdma-vf", qualified).as_deref(),
            Some("rdma-vf,default/rdma-vf")
        );
        assert_eq!(
            merged(
                r#"[{"name":"rdma-vf"},{"name":"rdma-vf","namespace":"default"}]"#,
                short
            ),
            None
        );
        // Another namespace is another network.
        assert_eq!(
            merged("other/rdma-vf", short).as_deref(),
            Some("other/rdma-vf,rdma-vf,rdma-vf")
        );
    }

    /// What the value gained, by network, whatever form the list has: the user's own entries
    /// and those already there are not counted.
    #[test]
    fn says_which_attachments_it_appended() {
        let rail = &Network(Cow::Borrowed("rail0"));
        let attachments = [
            Attachment {
                network: SRIOV,
                resource: RESOURCE,
                wanted: 3,
            },
            Attachment {
                network: rail,
                resource: "rail",
                wanted: 1,
            },
            Attachment {
                network: SRIOV,
                resource: "",
                wanted: 4,
            },
        ];
        let attached = |existing: &str| {
            annotation(Some(existing), &attachments, None)
                .unwrap()
                .map(|e| {
                    e.attached
                        .iter()
                        .map(|a| format!("{}×{}", a.times, a.network))
                        .collect::<Vec<_>>()
                })
        };
        let expected = ["3×network-operator/sriov-net", "1×rail0"];
        assert_eq!(
            attached("mine/own,network-operator/sriov-net@net1"),
            Some(expected.map(String::from).to_vec())
        );
        assert_eq!(
            attached(r#"[{"name":"sriov-net","namespace":"network-operator"}]"#),
            Some(expected.map(String::from).to_vec())
        );
        let full = "network-operator/sriov-net,".repeat(4) + "rail0";
        assert_eq!(attached(&full), None);
    }

    #[test]
    fn limits_and_garbage() {
        assert_eq!(
            merge(None, SRIOV, RESOURCE, 129).unwrap_err(),
            Error::TooManyNetworks {
                network: "network-operator/sriov-net".into(),
                resource: RESOURCE.into(),
                wanted: 129
            }
        );
        assert!(merge(None, SRIOV, RESOURCE, 128).is_ok());
        assert!(matches!(
            merge(Some("[{"), SRIOV, RESOURCE, 1),
            Err(Error::UnreadableNetworks { .. })
        ));
        assert!(matches!(
            merge(Some(r#"["a"] x"#), SRIOV, RESOURCE, 1),
            Err(Error::UnreadableNetworks { .. })
        ));
        // Multus reads any value holding `[`, `{` or `"` as a JSON list
        // (`parsePodNetworkAnnotation`): an object, or a string, is not one.
        for json_not_a_list in [
            r#"{"name":"a"}"#,
            r#" {"name":"a","namespace":"b"}"#,
            r#""a""#,
        ] {
            assert!(
                matches!(
                    merge(Some(json_not_a_list), SRIOV, RESOURCE, 1),
                    Err(Error::UnreadableNetworks { .. })
                ),
                "{json_not_a_list}"
            );
        }
    }
}
