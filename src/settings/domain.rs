//! `computeDomain` (behaviour.md §1.3, §3.11): which ComputeDomain gives a multi-node NVLink pod its
//! IMEX channel. A top-level block beside the clouds', because the domain is NVIDIA's DRA driver's,
//! whatever cloud the GPUs run in. Exactly one of its two keys says where the domain's name comes
//! from; the domain itself is read from the pod's namespace, which `preflight: skip` forbids.

use std::borrow::Cow;

use super::reader::Reader;
use crate::cluster::Mode;
use crate::error::Path;
use crate::json::JsonType;
use crate::json::tape::Value;
use crate::k8s::names::{is_dns1123_subdomain, is_qualified_name};

pub const COMPUTE_DOMAIN: &str = "computeDomain";
const FROM_LABEL: &str = "fromLabel";
const NAME: &str = "name";
/// How many labels `fromLabel` may list: each is looked up in a multi-node NVLink pod's labels.
const MAX_LABELS: usize = 16;
/// What a `fromLabel` item must be.
const LABEL: &str = "a label key ([prefix/]name, the prefix a DNS subdomain, the name at most 63 characters) such as jobset.sigs.k8s.io/jobset-name";

/// Where a pod's ComputeDomain is, in the pod's own namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ComputeDomain<'a> {
    /// The value of the first of the pod's labels of these keys names it: one domain per job,
    /// the arrangement NVIDIA, EKS and CoreWeave recommend. The job controllers' labels, the
    /// outermost controller's first: a JobSet's and an MPIJob's child Jobs label their pods with
    /// the child's name too.
    FromLabel(Vec<Cow<'a, str>>),
    /// One standing domain of this name in every namespace that runs such jobs.
    Named(Cow<'a, str>),
}

impl Reader {
    /// `computeDomain`: absent or `null`, none; otherwise an object of exactly one of `fromLabel`
    /// and `name`. The domain is read from the cluster, so `preflight: skip` cannot stand beside it.
    pub(super) fn compute_domain<'a>(
        &mut self,
        top: Value<'_, 'a>,
        preflight: Mode,
    ) -> Option<ComputeDomain<'a>> {
        let raw = top.get(COMPUTE_DOMAIN)?;
        let path = &Path::Key(&Path::Root, COMPUTE_DOMAIN);
        let must_be = &"an object with one of fromLabel (a pod label whose value names the job's ComputeDomain) or name (one ComputeDomain in each namespace)";
        let block = self.of_type(path, raw, JsonType::Object, must_be)?;
        const KEYS: [&str; 2] = [FROM_LABEL, NAME];
        for (key, _) in block.members() {
            if !KEYS.contains(&key.as_ref()) {
                self.unknown_key(path, key, &KEYS);
            }
        }
        let given = |key| block.get(key).filter(|v| !v.is_null());
        let from_label = given(FROM_LABEL).and_then(|raw| self.label_keys(path, raw));
        let name = self.text(
            &Path::Key(path, NAME),
            given(NAME),
            is_dns1123_subdomain,
            "a ComputeDomain name (a DNS subdomain: lowercase letters, digits, '-' and '.')",
        );
        let domain = match (given(FROM_LABEL).is_some(), given(NAME).is_some()) {
            (true, true) => {
                self.errors.push(format!(
                    "{path}: set one of {FROM_LABEL} and {NAME}, not both: a pod joins one ComputeDomain"
                ));
                None
            }
            (false, false) => {
                self.errors.push(format!(
                    "{path}: set one of {FROM_LABEL} (the pod label whose value names its job's ComputeDomain, such as jobset.sigs.k8s.io/jobset-name) or {NAME} (one ComputeDomain in each namespace)"
                ));
                None
            }
            _ => from_label
                .map(ComputeDomain::FromLabel)
                .or(name.map(ComputeDomain::Named)),
        };
        if preflight == Mode::Skip {
            self.errors.push(format!(
                "preflight: skip makes no host call, and {COMPUTE_DOMAIN} needs one to read the pod's ComputeDomain; set preflight to warn or reject, or remove {COMPUTE_DOMAIN}"
            ));
        }
        domain
    }

    /// `fromLabel`: a label key, or a list of 1 to 16, the first a pod carries naming its domain.
    fn label_keys<'a>(&mut self, path: &Path<'_>, raw: Value<'_, 'a>) -> Option<Vec<Cow<'a, str>>> {
        let at = &Path::Key(path, FROM_LABEL);
        match raw.as_str() {
            Some(_) => self
                .text(at, Some(raw), is_qualified_name, LABEL)
                .map(|one| vec![one]),
            None if raw.json_type() == JsonType::List => {
                self.strings(at, raw, Some((1, MAX_LABELS)), is_qualified_name, LABEL)
            }
            None => {
                self.errors.push(format!(
                    "{at}: must be {LABEL}, or a list of 1 to {MAX_LABELS} of them, the first a pod carries naming its domain; got {}",
                    raw.json_type().name()
                ));
                None
            }
        }
    }
}
