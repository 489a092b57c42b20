//! What an injection added to a pod, read off the pod before and after it (behaviour.md §10,
//! §11): the validate-only answer names it, and the Pod Security check holds it to the
//! namespace's level. Read from the two texts rather than from the engine's steps, so that what
//! is named is what the patch would hold, whatever step made it; only a pod the policy would
//! change is read here, and never on the path of a pod that is not the policy's.
//!
//! The engine only appends: a container keeps its index, a list its entries, an object its
//! members. So each of the pod's containers is compared with the one at its index, and what the
//! pod did not have is new; a container at an index the pod did not have is the fabric's daemon.

use serde_json::{Map, Value};

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
    /// What `after`, the pod the policy answers, has that `before`, the pod it was sent, has not.
    /// `record` is the record's annotation, left out. Values of unexpected types read as absent.
    pub fn of(before: &Value, after: &Value, record: Option<&str>) -> Added {
        let spec = |pod: &'_ Value| pod.get("spec").cloned().unwrap_or(Value::Null);
        let (old, new) = (spec(before), spec(after));
        let mut added = Added::default();
        let old_containers = list(&old, "containers");
        for (index, container) in list(&new, "containers").iter().enumerate() {
            match old_containers.get(index) {
                Some(was) => {
                    let gained = Container::gained(was, container, index);
                    if !gained.is_empty() {
                        added.containers.push(gained);
                    }
                }
                None => added
                    .sidecars
                    .push(Container::gained(&Value::Null, container, index)),
            }
        }
        let old_init = list(&old, "initContainers");
        let has_name = |name: &str| {
            old_init
                .iter()
                .chain(old_containers)
                .any(|c| c.get("name").and_then(Value::as_str) == Some(name))
        };
        for (index, container) in list(&new, "initContainers").iter().enumerate() {
            let name = container.get("name").and_then(Value::as_str).unwrap_or("");
            if index >= old_init.len() && !has_name(name) {
                added
                    .sidecars
                    .push(Container::gained(&Value::Null, container, index));
            }
        }
        let old_volumes = names(list(&old, "volumes"));
        for volume in list(&new, "volumes") {
            let Some(name) = volume.get("name").and_then(Value::as_str) else {
                continue;
            };
            if !old_volumes.contains(&name) {
                added.volumes.push(Volume {
                    name: name.to_string(),
                    host_path: volume.get("hostPath").is_some_and(|p| !p.is_null()),
                });
            }
        }
        let old_claims = names(list(&old, "resourceClaims"));
        added.claims = names(list(&new, "resourceClaims"))
            .into_iter()
            .filter(|name| !old_claims.contains(name))
            .map(str::to_string)
            .collect();
        let annotations = |pod: &'_ Value| {
            pod.get("metadata")
                .and_then(|m| m.get("annotations"))
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let (was, is) = (annotations(before), annotations(after));
        for (key, value) in &is {
            let value = value.as_str().unwrap_or_default();
            let before = was.get(key).and_then(Value::as_str);
            if Some(key.as_str()) != record && before != Some(value) {
                added.annotations.push(Annotation {
                    key: key.clone(),
                    before: before.map(str::to_string),
                    value: value.to_string(),
                });
            }
        }
        added
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
    fn named(container: &Value, index: usize) -> Container {
        Container {
            name: match container.get("name").and_then(Value::as_str) {
                Some(name) => name.to_string(),
                None => format!("#{index}"),
            },
            ..Container::default()
        }
    }

    /// What `after` has that `before` has not (`before` null: all of it).
    fn gained(before: &Value, after: &Value, index: usize) -> Container {
        let mut gained = Container::named(after, index);
        let resources = |c: &Value, part: &str| object(c.get("resources"), part);
        for part in ["limits", "requests"] {
            let old = resources(before, part);
            for (name, value) in &resources(after, part) {
                let quantity = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let new = !old.contains_key(name);
                if new && !gained.resources.iter().any(|(n, _)| n == name) {
                    gained.resources.push((name.clone(), quantity));
                }
            }
        }
        let claims = |c: &Value| {
            let none: &[Value] = &[];
            c.get("resources")
                .map_or(none, |r| list(r, "claims"))
                .to_vec()
        };
        gained.claims = new_names(&claims(before), &claims(after));
        gained.env = new_names(list(before, "env"), list(after, "env"));
        gained.mounts = new_names(list(before, "volumeMounts"), list(after, "volumeMounts"));
        let security = |c: &Value| object(Some(c), "securityContext");
        let (old, new) = (security(before), security(after));
        let added_caps = |sc: &Map<String, Value>| -> Vec<String> {
            sc.get("capabilities")
                .map_or(&[][..], |caps| list(caps, "add"))
                .iter()
                .filter_map(|c| c.as_str().map(str::to_string))
                .collect()
        };
        let had = added_caps(&old);
        gained.capabilities = added_caps(&new)
            .into_iter()
            .filter(|c| !had.contains(c))
            .collect();
        gained.security = new
            .keys()
            .filter(|key| *key != "capabilities" && !old.contains_key(*key))
            .cloned()
            .collect();
        gained.privileged = gained.security.iter().any(|k| k == "privileged")
            && new.get("privileged") == Some(&Value::Bool(true));
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

/// `value[key]` as a list; anything else is empty.
fn list<'v>(value: &'v Value, key: &str) -> &'v [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `value[key]` as an object; anything else is empty.
fn object(value: Option<&Value>, key: &str) -> Map<String, Value> {
    value
        .and_then(|v| v.get(key))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The `name` of each entry that has one.
fn names(entries: &[Value]) -> Vec<&str> {
    entries
        .iter()
        .filter_map(|e| e.get("name").and_then(Value::as_str))
        .collect()
}

/// The names in `after` that `before` lacks, in `after`'s order.
fn new_names(before: &[Value], after: &[Value]) -> Vec<String> {
    let old = names(before);
    names(after)
        .into_iter()
        .filter(|name| !old.contains(name))
        .map(str::to_string)
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
            json!(null),
            json!(3),
            json!({"spec": 1}),
            json!({"spec": {"containers": {}}}),
        ] {
            assert!(Added::of(&value, &value, None).is_empty(), "{value}");
        }
        let added = Added::of(
            &json!({}),
            &json!({"spec": {"containers": [{"env": [{"name": "A"}]}]}}),
            None,
        );
        assert_eq!(added.sidecars[0].name, "#0");
    }
}
