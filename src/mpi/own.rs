//! What the launcher's container sets itself (behaviour.md §3.12): its own, which the policy
//! keeps and does not pass to the ranks in its place. Its `env` entries, and the keys of the
//! ConfigMaps it takes env from, read as behaviour.md §4 reads a GPU container's.

use std::borrow::Cow;

use crate::cluster::Cluster;
use crate::env_from::{self, EnvFrom};
use crate::json::lenient::{members, string};
use crate::json::object::Object;
use crate::merge::raw_items;

/// What the launcher's container sets itself of a variable: its own, which the policy keeps
/// and does not pass in its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Set<'l> {
    /// An `env` entry with this value (an entry without one is the empty string).
    Value(Cow<'l, str>),
    /// An entry by `valueFrom`, or a key an `envFrom` ConfigMap gives: its value is not known.
    Unknown,
}

/// The launcher container's own env, as far as it concerns the variables the policy would
/// pass: its `env` entries and, as behaviour.md §4 reads them, its `envFrom` ConfigMaps' keys.
#[derive(Debug, Default)]
pub struct Own<'l> {
    entries: Vec<(Cow<'l, str>, Set<'l>)>,
    /// What its `envFrom` gives of the variables asked about, and the sources it cannot know.
    pub env_from: EnvFrom,
}

impl<'l> Own<'l> {
    /// The own env of `container` (none without one), for the variables `names`; a ConfigMap it
    /// takes env from is read from `cluster` where it could give one of them that the container
    /// has no entry for.
    pub fn read(container: Option<&Object<'l>>, names: &[&str], cluster: &Cluster<'_>) -> Self {
        let Some(container) = container else {
            return Own::default();
        };
        let entries: Vec<(Cow<'l, str>, Set<'l>)> = raw_items(container, "env")
            .unwrap_or_default()
            .into_iter()
            .filter_map(|entry| {
                let entry = members(entry);
                let name = entry.get("name").and_then(string)?;
                let set = match (entry.get("value"), entry.get("valueFrom")) {
                    (_, Some(from)) if from.get() != "null" => Set::Unknown,
                    (Some(value), _) if value.get() != "null" => {
                        string(value).map_or(Set::Unknown, Set::Value)
                    }
                    _ => Set::Value(Cow::Borrowed("")),
                };
                Some((name, set))
            })
            .collect();
        let wanted: Vec<&str> = names
            .iter()
            .copied()
            .filter(|name| !entries.iter().any(|(n, _)| n == name))
            .collect();
        let env_from = env_from::read(container, &wanted, cluster);
        Own { entries, env_from }
    }

    /// What the container sets of `name`; the last entry of a name counts, as the kubelet's.
    pub fn get(&self, name: &str) -> Option<Set<'l>> {
        if let Some((_, set)) = self.entries.iter().rev().find(|(n, _)| n == name) {
            return Some(set.clone());
        }
        self.env_from
            .given
            .iter()
            .any(|given| given == name)
            .then_some(Set::Unknown)
    }
}
