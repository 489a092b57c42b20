//! GPUs through DRA claims (behaviour.md §3.10): for an opted-in pod whose containers name claims
//! of `spec.resourceClaims`, each claim's `ResourceClaimTemplate` (or `ResourceClaim`) is read
//! from the pod's namespace through Kubewarden's context-aware host call, once per object, and
//! what it asks for is counted: the GPUs of the settings' GPU classes, and whether it brings the
//! fabric's NICs itself. The engine's read step gives the GPUs to the containers
//! ([`crate::engine`]); a claim that could not be read is named in a warning instead of being
//! guessed at.
//!
//! The reads go through a [`Memo`] that the preflight (behaviour.md §9) shares, so that no object
//! is looked for twice in one request.

mod answer;

pub use answer::{Answer, CHANNEL_CLASS, Classes, Counted, Holder, read_answer};

use std::borrow::Cow;
use std::cell::RefCell;

use crate::json::lenient::{Entry, members, string};
use crate::json::object::{Node, Object};
use crate::merge::{items, object, raw_items};
use crate::preflight::{self, Host, Mode, ObjectKind};
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
            Origin::Template(_) => &preflight::CLAIM_TEMPLATE,
            Origin::Claim(_) => &preflight::RESOURCE_CLAIM,
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

/// Why a claim's devices are not known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unread {
    /// `preflight: skip`: no host call at all.
    Skipped,
    /// The host answered an error (an `AdmissionPolicy`, a policy server without the capability,
    /// no RBAC), or the request names no namespace.
    Refused,
    /// The object does not exist in the pod's namespace.
    Missing,
    /// The answer is not a list, or the object's spec not one the policy reads.
    Unreadable,
}

impl Unread {
    /// Why, for the warning.
    pub fn why(self, kind: &str) -> String {
        match self {
            Unread::Skipped => "preflight: skip makes no host call".to_string(),
            Unread::Refused => format!(
                "the policy may not read {kind}s (an AdmissionPolicy, or no context-aware access: contextAwareResources, RBAC)"
            ),
            Unread::Missing => "it does not exist".to_string(),
            Unread::Unreadable => "the host's answer could not be read".to_string(),
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

/// Reads the claims the containers of the opted-in `pod` name, each object once, through `host`
/// in `namespace` (`None`: no namespace, or no host). Nothing is read when no container names a
/// claim, or when the settings list no device class at all and give no `computeDomain` (whose
/// channel a claim may be already). Never fails: a pod malformed where
/// this looks is refused by the engine, with its own message.
pub fn read<'a>(
    pod: &Object<'a>,
    config: &Config<'_>,
    cluster: Option<(&str, Host<'_>)>,
) -> PodClaims<'a> {
    let classes = &config.device_classes;
    let mut found = PodClaims {
        claims: Vec::new(),
        namespace: cluster.map(|(namespace, _)| namespace.to_string()),
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
        let devices = same.unwrap_or_else(|| look(&source, config.preflight, cluster, &classes));
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

/// One object, looked for.
fn look(
    source: &Origin<'_>,
    mode: Mode,
    cluster: Option<(&str, Host<'_>)>,
    classes: &Classes<'_>,
) -> Result<Counted, Unread> {
    let answer = ask(source.kind(), source.name(), mode, cluster)?;
    match read_answer(&answer, source.name(), source.holder(), classes) {
        Answer::Found(devices) => Ok(devices),
        Answer::Missing => Err(Unread::Missing),
        Answer::Unreadable => Err(Unread::Unreadable),
    }
}

/// The host's answer to the list of the object `name` of `kind` in the request's namespace, or
/// why there is none: `preflight: skip` makes no call, and a request without a namespace, or a
/// host's error, is a refusal. The claims' reads and the `envFrom` ConfigMaps' go through it.
pub fn ask(
    kind: &ObjectKind,
    name: &str,
    mode: Mode,
    cluster: Option<(&str, Host<'_>)>,
) -> Result<Vec<u8>, Unread> {
    if mode == Mode::Skip {
        return Err(Unread::Skipped);
    }
    let Some((namespace, host)) = cluster else {
        return Err(Unread::Refused);
    };
    let request = preflight::request(kind, namespace, name);
    host(preflight::LIST, &request).ok_or(Unread::Refused)
}

/// A host that asks the real one each request once, and answers a request asked again as it
/// was answered the first time: the claims' reads and the preflight's share it.
pub struct Memo<'h> {
    host: Host<'h>,
    answers: RefCell<Vec<Asked>>,
}

/// An operation and its request, and the host's answer to them.
type Asked = (String, Vec<u8>, Option<Vec<u8>>);

impl<'h> Memo<'h> {
    pub fn new(host: Host<'h>) -> Self {
        Memo {
            host,
            answers: RefCell::new(Vec::new()),
        }
    }

    pub fn call(&self, operation: &str, request: &[u8]) -> Option<Vec<u8>> {
        if let Ok(answers) = self.answers.try_borrow() {
            let same = |(op, asked, _): &&Asked| op == operation && asked == request;
            if let Some((_, _, answer)) = answers.iter().find(same) {
                return answer.clone();
            }
        }
        let answer = (self.host)(operation, request);
        if let Ok(mut answers) = self.answers.try_borrow_mut() {
            answers.push((operation.to_string(), request.to_vec(), answer.clone()));
        }
        answer
    }
}

#[cfg(test)]
pub(crate) mod tests;
