//! The env a GPU container takes from ConfigMaps and Secrets through `envFrom` (behaviour.md §4).
//! In Kubernetes a container's `env` beats its `envFrom` (the kubelet's `makeEnvironmentVariables`,
//! `pkg/kubelet/kubelet_pods.go`: "Env will override EnvFrom variables", each source's keys set
//! first, then `env`), so an entry the policy appended for a key the user's ConfigMap gives would
//! replace the user's value at run time without a word. The keys a source gives are the user's: a
//! ConfigMap's `data` keys, each behind the source's `prefix` (the kubelet reads only `Data`: its
//! `binaryData` never becomes env). A ConfigMap is read with one host call, through the
//! request's [`Cluster`] (§9); a Secret is never read, and a source whose keys cannot be known is
//! named in a warning.

use std::borrow::Cow;

use serde_json::value::RawValue;

use crate::cluster::{CONFIG_MAP, Cluster, Unread};
use crate::json::lenient::{members, read_members, string};
use crate::json::object::Object;
use crate::merge::raw_items;

/// What a container's `envFrom` gives of the env the policy would add.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EnvFrom {
    /// The names of the policy's variables that a source gives: the user's.
    pub given: Vec<String>,
    /// The sources that may give some of them, but whose keys are not known.
    pub unknown: Vec<Unknown>,
}

/// A source whose keys are not known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    /// `ConfigMap nccl-env` or `Secret hf-token`, with ` (prefix P_)` where it has one.
    pub source: String,
    /// Its `prefix`: it can give only variables whose names begin with it.
    pub prefix: String,
    pub why: Why,
}

/// Why a source's keys are not known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The policy reads no Secret: the policy server would need to read every Secret.
    Secret,
    /// A ConfigMap that could not be read, as a claim cannot (behaviour.md §3.10).
    Unread(Unread),
}

impl Why {
    pub fn text(self) -> String {
        match self {
            Why::Secret => "the policy does not read Secrets".to_string(),
            Why::Unread(why) => why.why(&CONFIG_MAP),
        }
    }
}

impl Unknown {
    /// The warning for this source of the container `container`, which gained the variables
    /// `gained`: those this source could give, named; `None` where it could give none of them.
    pub fn warning<'n>(
        &self,
        container: &str,
        gained: impl Iterator<Item = &'n str>,
    ) -> Option<String> {
        let names: Vec<&str> = gained
            .filter(|name| name.starts_with(self.prefix.as_str()))
            .collect();
        if names.is_empty() {
            return None;
        }
        Some(format!(
            "multi-node networking: container {container} takes env from {} (envFrom), whose keys the policy cannot know: {}; it added {} to the container's env, which Kubernetes applies over envFrom, so a value of the same name there is replaced: set it in the container's env to keep yours",
            self.source,
            self.why.text(),
            names.join(", ")
        ))
    }
}

/// One `envFrom` item: its kind, the object's name, whether it is optional, its prefix.
struct Item<'a> {
    secret: bool,
    name: Cow<'a, str>,
    optional: bool,
    prefix: Cow<'a, str>,
}

/// What `container`'s `envFrom` gives of `wanted`, the names of the policy's variables the
/// container has no `env` entry for. A source is looked at only where some of `wanted` begin
/// with its prefix; each ConfigMap is read from `cluster`. Never fails: an `envFrom` of the
/// wrong shape gives nothing (the API server has refused such a pod already).
pub fn read(container: &Object<'_>, wanted: &[&str], cluster: &Cluster<'_>) -> EnvFrom {
    let mut found = EnvFrom::default();
    if wanted.is_empty() {
        return found;
    }
    for raw in raw_items(container, "envFrom").unwrap_or_default() {
        let Some(source) = item(raw) else {
            continue;
        };
        let keys: Vec<(&str, &str)> = wanted
            .iter()
            .filter_map(|name| Some((*name, name.strip_prefix(source.prefix.as_ref())?)))
            .filter(|(name, _)| !found.given.iter().any(|g| g == name))
            .collect();
        if keys.is_empty() {
            continue;
        }
        let data = match source.secret {
            true => Err(Why::Secret),
            false => config_map(&source.name, &keys, cluster).map_err(Why::Unread),
        };
        match data {
            Ok(given) => found.given.extend(given),
            // A missing optional source gives nothing: the kubelet starts the container without it.
            Err(Why::Unread(Unread::Missing)) if source.optional => {}
            Err(why) => found.unknown.push(Unknown {
                source: source.describe(),
                prefix: source.prefix.into_owned(),
                why,
            }),
        }
    }
    found
}

/// The source an `envFrom` item names: exactly one of `configMapRef` and `secretRef`, with a name.
fn item(item: &RawValue) -> Option<Item<'_>> {
    let item = members(item);
    let given = |key: &str| item.get(key).filter(|r| r.get() != "null");
    let (secret, reference) = match (given("configMapRef"), given("secretRef")) {
        (Some(reference), None) => (false, reference),
        (None, Some(reference)) => (true, reference),
        _ => return None,
    };
    let reference = members(reference);
    let name = reference
        .get("name")
        .and_then(string)
        .filter(|n| !n.is_empty())?;
    let optional = reference.get("optional").map(RawValue::get) == Some("true");
    let prefix = item.get("prefix").and_then(string).unwrap_or_default();
    Some(Item {
        secret,
        name,
        optional,
        prefix,
    })
}

impl Item<'_> {
    fn describe(&self) -> String {
        let kind = if self.secret { "Secret" } else { "ConfigMap" };
        match self.prefix.as_ref() {
            "" => format!("{kind} {}", self.name),
            prefix => format!("{kind} {} (prefix {prefix})", self.name),
        }
    }
}

/// Of `keys` (each a variable's name and the ConfigMap key that gives it), the names of those
/// whose key the `data` of the ConfigMap `name` in the request's namespace has.
fn config_map(
    name: &str,
    keys: &[(&str, &str)],
    cluster: &Cluster<'_>,
) -> Result<Vec<String>, Unread> {
    let object = cluster.get(&CONFIG_MAP, None, name)?;
    let object = read_members(&object).map_err(|_| Unread::Unreadable)?;
    let data = match object.get("data") {
        None => return Ok(Vec::new()),
        Some(data) if data.get() == "null" => return Ok(Vec::new()),
        Some(data) if data.get().starts_with('{') => members(data),
        Some(_) => return Err(Unread::Unreadable),
    };
    Ok(keys
        .iter()
        .filter(|(_, key)| data.get(key).is_some())
        .map(|(name, _)| name.to_string())
        .collect())
}

#[cfg(test)]
mod tests;
