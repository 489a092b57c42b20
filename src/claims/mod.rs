//! GPUs through DRA claims (behaviour.md §3.10): for an opted-in pod whose containers name claims
//! of `spec.resourceClaims`, each claim's `ResourceClaimTemplate` (or `ResourceClaim`) is read
//! from the pod's namespace through Kubewarden's context-aware host call, once per object, and
//! what it asks for is counted: the GPUs of the settings' GPU classes, and whether it brings the
//! fabric's NICs itself. The engine's read step gives the GPUs to the containers
//! ([`crate::engine`]); a claim that could not be read is named in a warning instead of being
//! guessed at. The reads go through the request's [`Cluster`], which the preflight (behaviour.md
//! §9) shares, so that no object is read twice in one request.

mod answer;

pub use answer::{CHANNEL_CLASS, Classes, Counted, Holder, read_answer};

use std::borrow::Cow;

use crate::cluster::{CLAIM_TEMPLATE, Cluster, ObjectKind, RESOURCE_CLAIM, Unread};
use crate::json::lenient::{Entry, members, string};
use crate::json::object::{Node, Object};
use crate::merge::{items, object, raw_items};
use crate::settings::Config;

/// Where a pod claim's devices are described.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin<'a> {
    /// `resourceClaimTemplateName`.
    Template(Cow<'a, str>),
    /// `resourceClaimName`: a claim made ahead.
    Claim(Cow<'a, str>),
}

impl Origin<'_> {
    pub fn kind(&self) -> &'static ObjectKind {
        match self {
            Origin::Template(_) => &CLAIM_TEMPLATE,
            Origin::Claim(_) => &RESOURCE_CLAIM,
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Origin::Template(name) | Origin::Claim(name) => name,
        }
    }

    fn holder(&self) -> Holder {
        match self {
            Origin::Template(_) => Holder::Template,
            Origin::Claim(_) => Holder::Claim,
        }
    }
}

/// One claim of the pod that a container names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodClaim<'a> {
    /// Its name in the pod.
    pub name: Cow<'a, str>,
    pub source: Origin<'a>,
    pub devices: Result<Counted, Unread>,
}

impl PodClaim<'_> {
    /// `ResourceClaimTemplate default/eight-gpus`, for messages.
    pub fn object(&self, namespace: Option<&str>) -> String {
        let kind = self.source.kind().kind;
        match namespace {
            Some(namespace) => format!("{kind} {namespace}/{}", self.source.name()),
            None => format!("{kind} {}", self.source.name()),
        }
    }
}

/// The claims a pod's containers name, read.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PodClaims<'a> {
    /// In the order of `spec.resourceClaims`.
    pub claims: Vec<PodClaim<'a>>,
    /// The request's namespace, where the claims were looked for.
    pub namespace: Option<String>,
}

impl<'a> PodClaims<'a> {
    /// The claim named `name`.
    pub fn get(&self, name: &str) -> Option<&PodClaim<'a>> {
        self.claims.iter().find(|c| c.name == name)
    }
}

/// Reads the claims the containers of the opted-in `pod` name, each object once, from
/// `cluster`. Nothing is read when no container names a claim, or when the settings list no
/// device class at all and give no `computeDomain` (whose channel a claim may be already). Never
/// fails: a pod malformed where this looks is refused by the engine, with its own message.
pub fn read<'a>(pod: &Object<'a>, config: &Config<'_>, cluster: &Cluster<'_>) -> PodClaims<'a> {
    let classes = &config.device_classes;
    let mut found = PodClaims {
        claims: Vec::new(),
        namespace: cluster.namespace().map(str::to_string),
    };
    if classes.gpu.is_empty() && classes.fabric.is_empty() && config.compute_domain.is_none() {
        return found;
    }
    let Some(spec) = object(pod, "spec").ok().flatten() else {
        return found;
    };
    let named = named_claims(spec);
    if named.is_empty() {
        return found;
    }
    let classes = Classes {
        gpu: &classes.gpu,
        fabric: &classes.fabric,
    };
    for item in raw_items(spec, "resourceClaims").unwrap_or_default() {
        let item = members(item);
        let Some(name) = item.get("name").and_then(string) else {
            continue;
        };
        if !named.contains(&name) || found.get(&name).is_some() {
            continue;
        }
        let text = |key: &str| item.get(key).and_then(string).filter(|s| !s.is_empty());
        // The API server takes exactly one of the two.
        let source = match (text("resourceClaimTemplateName"), text("resourceClaimName")) {
            (Some(template), None) => Origin::Template(template),
            (None, Some(claim)) => Origin::Claim(claim),
            _ => continue,
        };
        // Two pod claims from one template: the answer is the first's.
        let same = found
            .claims
            .iter()
            .find(|c| c.source == source)
            .map(|c| c.devices);
        let devices = same.unwrap_or_else(|| look(&source, cluster, &classes));
        found.claims.push(PodClaim {
            name,
            source,
            devices,
        });
    }
    found
}

/// The names of the claims the containers name, without repeats.
fn named_claims<'a>(spec: &Object<'a>) -> Vec<Cow<'a, str>> {
    let mut named: Vec<Cow<'a, str>> = Vec::new();
    let Some(Node::List(containers)) = spec.get("containers") else {
        return named;
    };
    for container in containers.iter().filter_map(Node::as_object) {
        let Some(resources) = object(container, "resources").ok().flatten() else {
            continue;
        };
        for entry in items::<Entry<'a>>(resources, "claims").unwrap_or_default() {
            if let Some(name) = entry.name.0.filter(|n| !named.contains(n)) {
                named.push(name);
            }
        }
    }
    named
}

/// One object, read.
fn look(
    source: &Origin<'_>,
    cluster: &Cluster<'_>,
    classes: &Classes<'_>,
) -> Result<Counted, Unread> {
    let object = cluster.get(source.kind(), None, source.name())?;
    read_answer(&object, source.holder(), classes).ok_or(Unread::Unreadable)
}

#[cfg(test)]
pub(crate) mod tests;
