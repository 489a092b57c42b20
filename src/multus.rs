//! The Multus `k8s.v1.cni.cncf.io/networks` annotation: one attachment per SR-IOV device.
//!
//! The user's own value is kept as written (their other networks included) and only the missing
//! attachments of our network are appended, in whichever of Multus's two forms the value uses.

use crate::json::lenient::Members;

use crate::error::{Error, MAX_NETWORKS};
use crate::json::write::{push_escaped, render_string};
use crate::profile::Network;

pub const ANNOTATION: &str = "k8s.v1.cni.cncf.io/networks";

/// The annotation's new value when attachments are missing, as the JSON text of that string
/// (written escaped: 64 attachments are 1.7 KB); `None` when it already has enough. `resource`
/// is the device the attachments are counted for, named in the rejection.
pub fn annotation(
    existing: Option<&str>,
    network: &Network<'_>,
    resource: &str,
    wanted: u64,
) -> Result<Option<String>, Error> {
    if wanted > MAX_NETWORKS {
        return Err(Error::TooManyNetworks {
            network: network.qualified().to_string(),
            resource: resource.to_string(),
            wanted,
        });
    }
    let existing = existing.unwrap_or("");
    let trimmed = existing.trim();
    if trimmed.starts_with('[') {
        merge_json(existing, network, wanted)
    } else {
        Ok(merge_short(existing, network, wanted))
    }
}

/// `ns/name,ns/name@eth1`: entries are compared without the interface suffix.
fn merge_short(existing: &str, network: &Network<'_>, wanted: u64) -> Option<String> {
    let ours = network.qualified();
    let present = existing
        .split(',')
        .map(|entry| entry.trim().split('@').next().unwrap_or(""))
        .filter(|entry| *entry == ours)
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
    Some(escaped(head, !head.is_empty(), ours, missing, ""))
}

/// The JSON text of the string `head`, then `missing` times `entry` (each after a comma where
/// `comma` or it is not the first), then `tail`: `entry` escaped once, however often it is
/// repeated.
fn escaped(head: &str, comma: bool, entry: &str, missing: u64, tail: &str) -> String {
    let mut once = String::with_capacity(entry.len() + 8);
    push_escaped(&mut once, entry);
    let repeats = usize::try_from(missing).unwrap_or(0);
    let mut value = String::with_capacity(head.len() + 4 + repeats * (once.len() + 1));
    value.push('"');
    push_escaped(&mut value, head);
    for at in 0..missing {
        if at > 0 || comma {
            value.push(',');
        }
        value.push_str(&once);
    }
    push_escaped(&mut value, tail);
    value.push('"');
    value
}

/// `[{"name": "...", "namespace": "..."}]`: the text is kept byte for byte and our objects are
/// inserted before the closing bracket, so nothing of the user's formatting or keys changes. An
/// entry without a namespace is in the pod's namespace, as a network given without one.
fn merge_json(existing: &str, network: &Network<'_>, wanted: u64) -> Result<Option<String>, Error> {
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
            field(&entry, "name").as_deref() == Some(name)
                && field(&entry, "namespace").as_deref() == namespace
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
    Ok(Some(escaped(
        head,
        !entries.is_empty(),
        &entry,
        missing,
        "]",
    )))
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
        let text = annotation(existing, network, resource, wanted)?;
        Ok(text.map(|text| serde_json::from_str(&text).expect("a JSON string")))
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
    }
}
