//! What an injection added to a pod, read off the pod before and after it (behaviour.md §10,
//! §11): the validate-only answer names it, and the Pod Security check holds it to the
//! namespace's level. Read from the two texts rather than from the engine's steps, so that what
//! is named is what the patch would hold, whatever step made it; only a pod the policy would
//! change is read here, and never on the path of a pod that is not the policy's.
//!
//! The engine only appends: a container keeps its index, a list its entries, an object its
//! members. So each of the pod's containers is compared with the one at its index, and what the
//! pod did not have is new; a container at an index the pod did not have is the fabric's daemon.

use std::borrow::Cow;

use serde_json::value::RawValue;

use crate::json::lenient::{Loose, Members, Text, items, members, read, string};

/// Everything the injection added, in the pod's order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Added {
    /// The pod's containers that gained something.
    pub containers: Vec<Container>,
    /// The containers and init containers the pod did not have: the fabric's daemon.
    pub sidecars: Vec<Container>,
    /// `spec.volumes` the pod did not have.
    pub volumes: Vec<Volume>,
    /// `spec.resourceClaims` the pod did not have, by name.
    pub claims: Vec<String>,
    /// Annotations the pod did not have, or whose value changed (the Multus list extended); the
    /// record is left out.
    pub annotations: Vec<Annotation>,
}

/// What one container gained (or, for a sidecar, has).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Container {
    pub name: String,
    /// Resources in `requests` or `limits`, each once, with the value the pod ends up with.
    pub resources: Vec<(String, String)>,
    /// `resources.claims`, by name.
    pub claims: Vec<String>,
    pub env: Vec<String>,
    /// `volumeMounts`, by volume name.
    pub mounts: Vec<String>,
    /// `securityContext.capabilities.add`, as written.
    pub capabilities: Vec<String>,
    /// Other `securityContext` fields set (`allowPrivilegeEscalation`, `seccompProfile`,
    /// `privileged`).
    pub security: Vec<String>,
    /// `securityContext.privileged: true`.
    pub privileged: bool,
}

/// An annotation the pod gained, or whose value the policy extended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    pub key: String,
    /// The pod's own value, where it had one.
    pub before: Option<String>,
    pub value: String,
}

/// A volume the pod gained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Volume {
    pub name: String,
    /// A `hostPath` volume, which Pod Security's baseline and restricted levels refuse.
    pub host_path: bool,
}

impl Added {
    /// What `after`, the pod the policy answers, has that `before`, the pod it was sent, has not,
    /// both as JSON text. `record` is the record's annotation, left out. Values of unexpected
    /// types read as absent.
    pub fn of(before: &str, after: &str, record: Option<&str>) -> Added {
        let (before, after) = (object_of(before), object_of(after));
        let (old, new) = (object(before.get("spec")), object(after.get("spec")));
        let mut added = Added::default();
        added.containers_of(&old, &new);
        added.volumes_of(&old, &new);
        added.claims = new_names(&list(&old, "resourceClaims"), &list(&new, "resourceClaims"));
        added.annotations_of(&before, &after, record);
        added
    }

    /// What each container gained, and the containers and init containers that are new: the
    /// sidecars.
    fn containers_of(&mut self, old: &Members<'_>, new: &Members<'_>) {
        let old_containers = list(old, "containers");
        for (index, container) in list(new, "containers").into_iter().enumerate() {
            let container = members(container);
            match old_containers.get(index) {
                Some(was) => {
                    let gained = Container::gained(&members(was), &container, index);
                    if !gained.is_empty() {
                        self.containers.push(gained);
                    }
                }
                None => {
                    self.sidecars
                        .push(Container::gained(&Members::default(), &container, index))
                }
            }
        }
        let old_init = list(old, "initContainers");
        let had: Vec<Cow<'_, str>> = names(&old_init)
            .into_iter()
            .chain(names(&old_containers))
            .collect();
        for (index, container) in list(new, "initContainers").into_iter().enumerate() {
            let container = members(container);
            let name = container.get("name").and_then(string).unwrap_or_default();
            if index >= old_init.len() && !had.contains(&name) {
                self.sidecars
                    .push(Container::gained(&Members::default(), &container, index));
            }
        }
    }

    /// The pod volumes that are new, and whether each is a hostPath.
    fn volumes_of(&mut self, old: &Members<'_>, new: &Members<'_>) {
        let old_volumes = names(&list(old, "volumes"));
        for volume in list(new, "volumes") {
            let volume = members(volume);
            let Some(name) = volume.get("name").and_then(string) else {
                continue;
            };
            if !old_volumes.contains(&name) {
                self.volumes.push(Volume {
                    name: name.into_owned(),
                    host_path: volume.get("hostPath").is_some_and(|p| p.get() != "null"),
                });
            }
        }
    }

    /// The annotations that are new or changed, but the record's (`record`).
    fn annotations_of(&mut self, before: &Members<'_>, after: &Members<'_>, record: Option<&str>) {
        let annotations = |pod: &Members<'_>| {
            let metadata = object(pod.get("metadata"));
            metadata
                .get("annotations")
                .map(|a| {
                    members(a)
                        .0
                        .into_iter()
                        .map(|(k, v)| (k.into_owned(), v.get().to_string()))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        };
        let (was, is) = (annotations(before), annotations(after));
        let last = |all: &[(String, String)], key: &str| {
            all.iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        let mut keys: Vec<&String> = is.iter().map(|(k, _)| k).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            let text = |raw: Option<String>| {
                raw.and_then(|raw| {
                    read::<Loose<Text<'_>>>(&raw)
                        .ok()
                        .and_then(|t| t.0.0)
                        .map(Cow::into_owned)
                })
            };
            let value = text(last(&is, key)).unwrap_or_default();
            let before = text(last(&was, key));
            if Some(key.as_str()) != record && before.as_deref() != Some(value.as_str()) {
                self.annotations.push(Annotation {
                    key: key.clone(),
                    before,
                    value,
                });
            }
        }
    }

    /// Nothing was added.
    pub fn is_empty(&self) -> bool {
        self == &Added::default()
    }

    /// Every container the pod gained or that gained something, sidecars last.
    pub fn all_containers(&self) -> impl Iterator<Item = &Container> {
        self.containers.iter().chain(&self.sidecars)
    }
}

impl Container {
    /// What `after` has that `before` has not (`before` empty: all of it).
    fn gained(before: &Members<'_>, after: &Members<'_>, index: usize) -> Container {
        let mut gained = Container {
            name: match after.get("name").and_then(string) {
                Some(name) => name.into_owned(),
                None => format!("#{index}"),
            },
            ..Container::default()
        };
        let (old, new) = (
            object(before.get("resources")),
            object(after.get("resources")),
        );
        for part in ["limits", "requests"] {
            let had = keys(&object(old.get(part)));
            let part = object(new.get(part));
            let mut names = keys(&part);
            names.sort();
            for name in names {
                let known = gained
                    .resources
                    .iter()
                    .any(|(n, _)| n.as_str() == name.as_ref());
                if had.contains(&name) || known {
                    continue;
                }
                let quantity = part.get(&name).map_or(String::new(), |raw| {
                    string(raw).map_or_else(|| raw.get().to_string(), Cow::into_owned)
                });
                gained.resources.push((name.into_owned(), quantity));
            }
        }
        gained.claims = new_names(&list(&old, "claims"), &list(&new, "claims"));
        gained.env = new_names(&list(before, "env"), &list(after, "env"));
        gained.mounts = new_names(&list(before, "volumeMounts"), &list(after, "volumeMounts"));
        let (old, new) = (
            object(before.get("securityContext")),
            object(after.get("securityContext")),
        );
        let added_capabilities = |context: &Members<'_>| -> Vec<String> {
            list(&object(context.get("capabilities")), "add")
                .into_iter()
                .filter_map(|c| string(c).map(Cow::into_owned))
                .collect()
        };
        let had = added_capabilities(&old);
        gained.capabilities = added_capabilities(&new)
            .into_iter()
            .filter(|c| !had.contains(c))
            .collect();
        let had = keys(&old);
        let mut fields: Vec<Cow<'_, str>> = keys(&new)
            .into_iter()
            .filter(|key| key != "capabilities" && !had.contains(key))
            .collect();
        fields.sort();
        gained.privileged = fields.iter().any(|k| k == "privileged")
            && new
                .get("privileged")
                .is_some_and(|p| p.get().trim() == "true");
        gained.security = fields.into_iter().map(Cow::into_owned).collect();
        gained
    }

    /// Nothing but the name.
    fn is_empty(&self) -> bool {
        self.resources.is_empty()
            && self.claims.is_empty()
            && self.env.is_empty()
            && self.mounts.is_empty()
            && self.capabilities.is_empty()
            && self.security.is_empty()
    }
}

/// The members of the object `text` holds; none for anything else.
fn object_of(text: &str) -> Members<'_> {
    read::<Loose<Members<'_>>>(text)
        .map(|members| members.0)
        .unwrap_or_default()
}

/// The members of `raw` where it is an object; none otherwise.
fn object<'a>(raw: Option<&'a RawValue>) -> Members<'a> {
    raw.map(members).unwrap_or_default()
}

/// `object[key]` as a list; anything else is empty.
fn list<'a>(object: &Members<'a>, key: &str) -> Vec<&'a RawValue> {
    object.get(key).map(items).unwrap_or_default()
}

/// An object's keys, each once.
fn keys<'a>(object: &Members<'a>) -> Vec<Cow<'a, str>> {
    let mut keys: Vec<Cow<'a, str>> = Vec::with_capacity(object.0.len());
    for (key, _) in &object.0 {
        if !keys.contains(key) {
            keys.push(key.clone());
        }
    }
    keys
}

/// The `name` of each entry that has one.
fn names<'a>(entries: &[&'a RawValue]) -> Vec<Cow<'a, str>> {
    entries
        .iter()
        .filter_map(|e| members(e).get("name").and_then(string))
        .collect()
}

/// The names in `after` that `before` lacks, in `after`'s order.
fn new_names(before: &[&RawValue], after: &[&RawValue]) -> Vec<String> {
    let old = names(before);
    names(after)
        .into_iter()
        .filter(|name| !old.contains(name))
        .map(Cow::into_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_what_the_pod_gained_and_nothing_it_had() {
        let before = json!({
            "metadata": {"annotations": {"a": "1", "k8s.v1.cni.cncf.io/networks": "n/x"}},
            "spec": {
                "containers": [
                    {"name": "worker", "env": [{"name": "MINE"}],
                     "resources": {"limits": {"nvidia.com/gpu": "8"}}},
                    {"name": "idle"}
                ],
                "volumes": [{"name": "data", "emptyDir": {}}]
            }
        });
        let after = json!({
            "metadata": {"annotations": {
                "a": "1", "k8s.v1.cni.cncf.io/networks": "n/x,n/x", "rec": "{}"
            }},
            "spec": {
                "containers": [
                    {"name": "worker", "env": [{"name": "MINE"}, {"name": "NCCL_X"}],
                     "volumeMounts": [{"name": "libs", "mountPath": "/l"}],
                     "securityContext": {"capabilities": {"add": ["IPC_LOCK"]},
                                         "allowPrivilegeEscalation": false},
                     "resources": {"limits": {"nvidia.com/gpu": "8", "rdma/x": "8"},
                                   "requests": {"rdma/x": "8"},
                                   "claims": [{"name": "efa"}]}},
                    {"name": "idle"}
                ],
                "initContainers": [{"name": "daemon", "restartPolicy": "Always",
                                    "securityContext": {"privileged": true,
                                                        "capabilities": {"add": ["NET_ADMIN"]}}}],
                "volumes": [{"name": "data", "emptyDir": {}},
                            {"name": "libs", "hostPath": {"path": "/l"}}],
                "resourceClaims": [{"name": "efa", "resourceClaimTemplateName": "efa-8"}]
            }
        });
        let (before, after) = (before.to_string(), after.to_string());
        let added = Added::of(&before, &after, Some("rec"));
        assert_eq!(added.containers.len(), 1);
        let worker = &added.containers[0];
        assert_eq!(worker.name, "worker");
        assert_eq!(
            worker.resources,
            vec![("rdma/x".to_string(), "8".to_string())]
        );
        assert_eq!(worker.claims, vec!["efa"]);
        assert_eq!(worker.env, vec!["NCCL_X"]);
        assert_eq!(worker.mounts, vec!["libs"]);
        assert_eq!(worker.capabilities, vec!["IPC_LOCK"]);
        assert_eq!(worker.security, vec!["allowPrivilegeEscalation"]);
        assert!(!worker.privileged);
        assert_eq!(added.sidecars.len(), 1);
        assert_eq!(added.sidecars[0].name, "daemon");
        assert!(added.sidecars[0].privileged);
        assert_eq!(added.sidecars[0].capabilities, vec!["NET_ADMIN"]);
        assert_eq!(
            added.volumes,
            vec![Volume {
                name: "libs".into(),
                host_path: true
            }]
        );
        assert_eq!(added.claims, vec!["efa"]);
        assert_eq!(
            added.annotations,
            vec![Annotation {
                key: "k8s.v1.cni.cncf.io/networks".to_string(),
                before: Some("n/x".to_string()),
                value: "n/x,n/x".to_string()
            }]
        );
        assert!(Added::of(&after, &after, Some("rec")).is_empty());
        assert!(!added.is_empty());
    }

    #[test]
    fn anything_unexpected_reads_as_absent() {
        for value in [
            "null",
            "3",
            r#"{"spec": 1}"#,
            r#"{"spec": {"containers": {}}}"#,
            "{",
            "",
        ] {
            assert!(Added::of(value, value, None).is_empty(), "{value}");
        }
        let added = Added::of(
            "{}",
            r#"{"spec": {"containers": [{"env": [{"name": "A"}]}]}}"#,
            None,
        );
        assert_eq!(added.sidecars[0].name, "#0");
    }
}
