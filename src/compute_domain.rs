//! Multi-node NVLink (behaviour.md §3.11): on a rack-scale machine (GB200, GB300 NVL72) NCCL uses
//! NVLink across nodes only from a container that holds an IMEX channel, which NVIDIA's DRA driver
//! hands out through a `ComputeDomain` (`resource.nvidia.com/v1beta1`): its controller writes a
//! `ResourceClaimTemplate` named by `spec.channel.resourceClaimTemplate.name`, in the domain's
//! namespace, whose one request is of class [`CHANNEL_CLASS`]. With the settings' `computeDomain`,
//! the policy reads the pod's domain with one host call and gives the pod a claim from that
//! template. Where it cannot, the pod gets `NCCL_MNNVL_ENABLE=0` instead: NCCL's default turns
//! MNNVL on whenever two ranks share a clique, and without a channel it stops at init.
//!
//! The domain's `status` is not read: its own field doc says workloads must not rely on it.

use std::borrow::Cow;

pub use crate::claims::CHANNEL_CLASS;
use crate::claims::{PodClaim, PodClaims};
use crate::cluster::{COMPUTE_DOMAIN, Cluster, Mode, Unread};
use crate::error::Error;
use crate::json::lenient::{Entry, members, read_members, string};
use crate::json::object::{Node, Object};
use crate::json::write::render_string;
use crate::k8s::names::is_dns1123_subdomain;
use crate::merge::{Read, expect_read, items, object};
use crate::settings::ComputeDomain;

/// The pod claim's name, as every vendor's GB200 worker writes it (AWS awsome-distributed-training
/// `nccl-tests-gb200.yaml`, Google's `nccl-test-imex-a4x.yaml`, NVIDIA's `demo/specs/imex/`).
pub const CLAIM_NAME: &str = "compute-domain-channel";

/// The variable that keeps NCCL off multi-node NVLink where the pod has no channel (NVIDIA/nccl
/// `src/mnnvl.cc`: "Set NCCL_MNNVL_ENABLE=0 to ignore this issue").
pub const MNNVL_ENABLE: &str = "NCCL_MNNVL_ENABLE";

/// What a pod gets of its IMEX channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Channel {
    /// Nothing: no `computeDomain`, a machine known without multi-node NVLink, a pod that has its
    /// channel already, or one whose claims could not all be read (the policy cannot tell).
    Untouched,
    /// A claim from the domain's channel template.
    Join(Domain),
    /// No channel can be had: `NCCL_MNNVL_ENABLE=0`, and this warning.
    Without(String),
}

/// The ComputeDomain a pod joins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain {
    /// `namespace/name`.
    pub object: String,
    /// Its channel's `ResourceClaimTemplate`, in the pod's namespace.
    pub template: String,
}

/// Why a pod cannot have its channel.
enum Lacking<'a> {
    /// The pod has none of the labels `fromLabel` names (how many it names).
    NoLabel(usize),
    /// The label's value names no ComputeDomain.
    NotAName(&'a str),
    /// The domain could not be read, or does not exist (`Unreadable`: the answer is not the
    /// domain's, or the domain has no channel template).
    Unread(Unread),
}

/// The channel of an opted-in pod on a machine that may have multi-node NVLink, where the
/// settings give `setting`. `spec` is the pod's, `claims` its claims as read; the domain is read
/// from `cluster`. With `preflight: reject`, a pod whose domain is missing or unnamed is refused.
pub fn channel(
    setting: &ComputeDomain<'_>,
    pod: &Object<'_>,
    spec: &Object<'_>,
    claims: &PodClaims<'_>,
    cluster: &Cluster<'_>,
) -> Result<Channel, Error> {
    // A claim of the channel's class is the pod's channel, whatever template it is made from
    // (Grove's `mnnvl-claim`); an unread claim might be one.
    let channel_or_unread =
        |c: &PodClaim<'_>| c.devices.is_err() || c.devices.is_ok_and(|d| d.channel);
    if claims.claims.iter().any(channel_or_unread) {
        return Ok(Channel::Untouched);
    }
    let mut asked = Asked {
        namespace: cluster.namespace().unwrap_or_default(),
        name: Cow::Borrowed(""),
        label: None,
        mode: cluster.mode(),
    };
    match setting {
        ComputeDomain::Named(name) => asked.name = Cow::Borrowed(name.as_ref()),
        ComputeDomain::FromLabel(keys) => match first_label(pod, keys) {
            Some((key, value)) => {
                asked.label = Some(Cow::Borrowed(key));
                if !is_dns1123_subdomain(&value) {
                    return asked.without(Lacking::NotAName(&value));
                }
                asked.name = value;
            }
            None => {
                let keys: Vec<&str> = keys.iter().map(AsRef::as_ref).collect();
                asked.label = Some(Cow::Owned(keys.join(", ")));
                return asked.without(Lacking::NoLabel(keys.len()));
            }
        },
    }
    let template = cluster
        .get(&COMPUTE_DOMAIN, None, &asked.name)
        .and_then(|domain| template_of(&domain));
    let template = match template {
        Ok(template) => template,
        Err(why) => return asked.without(Lacking::Unread(why)),
    };
    // A claim from the domain's own template is the pod's channel.
    let pod_claims = items::<Entry<'_>>(spec, "resourceClaims").unwrap_or_default();
    if pod_claims
        .iter()
        .any(|c| c.template.as_str() == Some(&template))
    {
        return Ok(Channel::Untouched);
    }
    Ok(Channel::Join(Domain {
        object: format!("{}/{}", asked.namespace, asked.name),
        template,
    }))
}

/// The domain a pod asks for: its namespace (empty without one), its name (empty where the
/// label gives none), the label that names it, and what the settings' `preflight` says.
struct Asked<'s> {
    namespace: &'s str,
    name: Cow<'s, str>,
    label: Option<Cow<'s, str>>,
    mode: Mode,
}

/// The first of the labels `keys` the pod carries, and its value.
fn first_label<'k, 'a>(
    pod: &Object<'a>,
    keys: &'k [Cow<'_, str>],
) -> Option<(&'k str, Cow<'a, str>)> {
    keys.iter()
        .find_map(|key| Some((key.as_ref(), label_value(pod, key)?)))
}

/// The value of the pod's label `key`, where it is a string.
fn label_value<'a>(pod: &Object<'a>, key: &str) -> Option<Cow<'a, str>> {
    let metadata = object(pod, "metadata").ok().flatten()?;
    expect_read(metadata, "labels", Read::Text);
    let labels = metadata.get("labels").and_then(Node::raw)?;
    members(labels).get(key).and_then(string)
}

/// The channel template of the domain, the JSON text the host answered.
fn template_of(domain: &str) -> Result<String, Unread> {
    let domain = read_members(domain).map_err(|_| Unread::Unreadable)?;
    let mut at = domain.get("spec").ok_or(Unread::Unreadable)?;
    for key in ["channel", "resourceClaimTemplate", "name"] {
        at = members(at).get(key).ok_or(Unread::Unreadable)?;
    }
    string(at)
        .filter(|template| is_dns1123_subdomain(template))
        .map(Cow::into_owned)
        .ok_or(Unread::Unreadable)
}

impl Asked<'_> {
    /// The pod without its channel: the warning, or with `preflight: reject` the refusal of a pod
    /// whose domain is missing or unnamed. A read that failed never refuses a pod.
    fn without(&self, lacking: Lacking<'_>) -> Result<Channel, Error> {
        let (namespace, name) = (self.namespace, &self.name);
        let domain = match namespace {
            "" => format!("ComputeDomain {name}"),
            namespace => format!("ComputeDomain {namespace}/{name}"),
        };
        let by_label = self.label.as_ref().map_or_else(String::new, |key| {
            format!(" (named by the pod's label {key})")
        });
        let key = self.label.as_deref().unwrap_or_default();
        let label_it = "give the job's pods that label, naming a ComputeDomain of their namespace";
        let (what, then) = match lacking {
            Lacking::NoLabel(1) => (
                format!(
                    "the pod has no label {key}, whose value names its job's ComputeDomain (computeDomain.fromLabel)"
                ),
                label_it.to_string(),
            ),
            Lacking::NoLabel(_) => (
                format!(
                    "the pod has none of the labels {key}, whose first the pod carries names its job's ComputeDomain (computeDomain.fromLabel)"
                ),
                label_it.to_string(),
            ),
            Lacking::NotAName(value) => (
                format!(
                    "the pod's label {key} is {}, which is no ComputeDomain name (a DNS subdomain)",
                    render_string(value)
                ),
                label_it.to_string(),
            ),
            Lacking::Unread(Unread::Missing) => (
                format!("{domain}{by_label} does not exist"),
                format!(
                    "{}{namespace}{}",
                    COMPUTE_DOMAIN.creates.0, COMPUTE_DOMAIN.creates.1
                ),
            ),
            Lacking::Unread(Unread::Unreadable) => (
                format!(
                    "could not read {domain}{by_label}: the host's answer has no spec.channel.resourceClaimTemplate.name"
                ),
                "check the ComputeDomain".to_string(),
            ),
            Lacking::Unread(why) => (
                format!(
                    "could not read {domain}{by_label}: {}",
                    why.why(&COMPUTE_DOMAIN)
                ),
                why.remedy(&COMPUTE_DOMAIN),
            ),
        };
        let refusable = matches!(
            lacking,
            Lacking::NoLabel(_) | Lacking::NotAName(_) | Lacking::Unread(Unread::Missing)
        );
        if self.mode == Mode::Reject && refusable {
            return Err(Error::Preflight {
                message: format!(
                    "multi-node networking: {what}, so the pod can get no IMEX channel; {then} (preflight: reject refuses such a pod)"
                ),
            });
        }
        Ok(Channel::Without(format!(
            "multi-node networking: {what}, so the pod gets no IMEX channel and {MNNVL_ENABLE}=0, which keeps NCCL off multi-node NVLink instead of stopping at init; {then} (a launcher's mpirun -x {MNNVL_ENABLE}=1 overrides the pod's environment)"
        )))
    }
}

#[cfg(test)]
mod tests;
