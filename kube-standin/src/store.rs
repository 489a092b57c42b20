//! The objects the stand-in holds, each with the resource version of its last change, and every
//! change as a watch event: kept whole, so that a watch from resource version N replays what
//! came after N as the API server's watch cache does, and broadcast to the watches open now.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::kinds::Kind;
use crate::selector::Selector;

/// One change: `ADDED`, `MODIFIED` or `DELETED`, of an object of `kinds[kind]`.
#[derive(Debug)]
pub struct Change {
    pub kind: usize,
    pub event: &'static str,
    pub revision: u64,
    pub object: Value,
}

/// `(kind index, namespace, name)`; the namespace is empty for a cluster-scoped kind.
type Key = (usize, String, String);

pub struct Store {
    pub kinds: Vec<Kind>,
    objects: BTreeMap<Key, Value>,
    revision: u64,
    history: Vec<Arc<Change>>,
    changes: broadcast::Sender<Arc<Change>>,
}

impl Store {
    pub fn new(kinds: Vec<Kind>) -> Store {
        Store {
            kinds,
            objects: BTreeMap::new(),
            // A real cluster's revisions are never small; kube-rs treats "0" apart.
            revision: 1000,
            history: Vec::new(),
            changes: broadcast::channel(4096).0,
        }
    }

    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The index of the kind `object` is, by its `apiVersion` and `kind`.
    pub fn kind_of(&self, object: &Value) -> Option<usize> {
        self.kinds.iter().position(|k| {
            object["apiVersion"] == k.api_version().as_str() && object["kind"] == k.kind.as_str()
        })
    }

    /// The index of the kind served at `group`/`version` under `plural`.
    pub fn kind_at(&self, group: &str, version: &str, plural: &str) -> Option<usize> {
        self.kinds
            .iter()
            .position(|k| k.group == group && k.version == version && k.plural == plural)
    }

    /// Adds or replaces `object` (of a kind served: `Err` otherwise), stamped with a new
    /// resource version, a uid and a creation time as the API server stamps what it stores.
    pub fn put(&mut self, mut object: Value) -> Result<(), String> {
        let kind = self.kind_of(&object).ok_or_else(|| {
            format!(
                "the stand-in serves no {} {}",
                object["apiVersion"], object["kind"]
            )
        })?;
        let name = object["metadata"]["name"]
            .as_str()
            .ok_or("an object needs metadata.name")?
            .to_string();
        let namespace = if self.kinds[kind].namespaced {
            object["metadata"]["namespace"]
                .as_str()
                .ok_or("an object of a namespaced kind needs metadata.namespace")?
                .to_string()
        } else {
            String::new()
        };
        self.revision += 1;
        let key = (kind, namespace, name);
        let event = if self.objects.contains_key(&key) {
            "MODIFIED"
        } else {
            "ADDED"
        };
        let meta = &mut object["metadata"];
        meta["resourceVersion"] = json!(self.revision.to_string());
        if meta.get("uid").is_none() {
            meta["uid"] = json!(format!("00000000-0000-4000-8000-{:012x}", self.revision));
        }
        if meta.get("creationTimestamp").is_none() {
            meta["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        self.objects.insert(key, object.clone());
        self.record(kind, event, object);
        Ok(())
    }

    /// Removes an object; `false` if there was none.
    pub fn delete(&mut self, kind: usize, namespace: &str, name: &str) -> bool {
        let key = (kind, namespace.to_string(), name.to_string());
        let Some(mut object) = self.objects.remove(&key) else {
            return false;
        };
        self.revision += 1;
        object["metadata"]["resourceVersion"] = json!(self.revision.to_string());
        self.record(kind, "DELETED", object);
        true
    }

    fn record(&mut self, kind: usize, event: &'static str, object: Value) {
        let change = Arc::new(Change {
            kind,
            event,
            revision: self.revision,
            object,
        });
        self.history.push(Arc::clone(&change));
        // No receiver (no watch open) is not an error.
        let _ = self.changes.send(change);
    }

    pub fn get(&self, kind: usize, namespace: &str, name: &str) -> Option<&Value> {
        self.objects
            .get(&(kind, namespace.to_string(), name.to_string()))
    }

    /// The objects of `kind` in `namespace` (every namespace when `None`) that `selector` holds,
    /// in namespace and name order, as the API server lists them.
    pub fn list(&self, kind: usize, namespace: Option<&str>, selector: &Selector) -> Vec<&Value> {
        self.objects
            .iter()
            .filter(|((k, ns, _), object)| {
                *k == kind && namespace.is_none_or(|n| n == ns) && selector.matches(object)
            })
            .map(|(_, object)| object)
            .collect()
    }

    /// The changes of `kind` after `revision`, and a receiver of those to come: taken together,
    /// so that no change falls between them.
    pub fn since(
        &self,
        kind: usize,
        revision: u64,
    ) -> (Vec<Arc<Change>>, broadcast::Receiver<Arc<Change>>) {
        let past = self
            .history
            .iter()
            .filter(|c| c.kind == kind && c.revision > revision)
            .cloned()
            .collect();
        (past, self.changes.subscribe())
    }
}
