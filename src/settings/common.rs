//! The keys that decide whether a pod is the policy's, read on every request (trigger, opt-out,
//! owners), and those every pod of the policy shares (record, GPU resources, preflight,
//! validate-only), with their defaults (behaviour.md §1.1, §2, §10).

use std::borrow::Cow;

use super::reader::{Reader, show};
use super::{Common, GPU_RESOURCES, PREFLIGHT, RECORD, VALIDATE_ONLY, top};
use crate::clouds;
use crate::cluster::Mode;
use crate::error::{Error, Path, join};
use crate::json::JsonType;
use crate::json::tape::{Tape, Value};
use crate::k8s::names::{is_dns1123_subdomain, is_extended_resource, is_kind, is_qualified_name};

/// The trigger keys when the settings name none: the NeMo Platform chart's, and NeMo Helix's,
/// whose chart and jobs controller mark pods `nhx.nvidia.com/…` (behaviour.md §1.3).
pub const DEFAULT_TRIGGERS: [&str; 2] = [
    "nmp.nvidia.com/enable-multi-node-networking",
    "nhx.nvidia.com/enable-multi-node-networking",
];
/// The opt-out keys when the settings name none, one per trigger prefix.
pub const DEFAULT_OPT_OUTS: [&str; 2] = [
    "nmp.nvidia.com/disable-multi-node-networking",
    "nhx.nvidia.com/disable-multi-node-networking",
];
/// How many keys `triggerAnnotation` and `optOutAnnotation` may list: each is looked up in every
/// pod's annotations.
const MAX_ANNOTATION_KEYS: usize = 16;
/// The annotation the record of what was injected is written under (behaviour.md §2.1).
pub const DEFAULT_RECORD: &str = "nmp.nvidia.com/multi-node-networking-injected";
pub const DEFAULT_OWNER_KINDS: [&str; 5] = ["PyTorchJob", "MPIJob", "Job", "RunaiJob", "JobSet"];
pub const DEFAULT_OWNER_GROUPS: [&str; 5] = [
    "batch.volcano.sh",
    "kubeflow.org",
    "run.ai",
    "jobset.x-k8s.io",
    "batch",
];
/// The extended resources a GPU is asked for by: NVIDIA's device plugin and AMD's GPU Operator.
pub const DEFAULT_GPU_RESOURCES: [&str; 2] = ["nvidia.com/gpu", "amd.com/gpu"];

impl<'a> Common<'a> {
    /// Reads and checks only the keys that decide whether a pod is the policy's.
    pub fn from_tape(tape: &Tape<'a>) -> Result<Common<'a>, Error> {
        let top = top(tape)?;
        let mut r = Reader::default();
        let common = r.common(top);
        if r.errors.is_empty() {
            Ok(common)
        } else {
            Err(Error::Settings(r.errors))
        }
    }
}

impl Reader {
    /// `triggerAnnotation`, `optOutAnnotation`, `ownerKinds`, `ownerApiGroups`.
    pub(super) fn common<'a>(&mut self, top: Value<'_, 'a>) -> Common<'a> {
        let triggers = self.annotation_keys(top, "triggerAnnotation", &DEFAULT_TRIGGERS);
        let opt_outs = self.annotation_keys(top, "optOutAnnotation", &DEFAULT_OPT_OUTS);
        let owner_kinds = self.list(
            "ownerKinds",
            top,
            &DEFAULT_OWNER_KINDS,
            is_kind,
            "a kind such as PyTorchJob",
        );
        let owner_groups = self.list(
            "ownerApiGroups",
            top,
            &DEFAULT_OWNER_GROUPS,
            |g| g.is_empty() || is_dns1123_subdomain(g),
            "an API group such as batch.volcano.sh (\"\" for the core group)",
        );
        Common {
            triggers,
            opt_outs,
            owner_kinds,
            owner_groups,
        }
    }

    /// `triggerAnnotation` or `optOutAnnotation`: one annotation key, or a list of 1 to 16 of
    /// them (a key listed twice counts once); the default keys when absent or `null`.
    pub(super) fn annotation_keys<'a>(
        &mut self,
        top: Value<'_, 'a>,
        key: &str,
        default: &[&'static str],
    ) -> Vec<Cow<'a, str>> {
        const WHAT: &str = "a valid annotation key ([prefix/]name, the prefix a DNS subdomain, the name at most 63 characters)";
        let path = &Path::Key(&Path::Root, key);
        let defaults = || default.iter().map(|k| Cow::Borrowed(*k)).collect();
        let Some(raw) = top.get(key).filter(|raw| !raw.is_null()) else {
            return defaults();
        };
        let mut keys = match raw.json_type() {
            JsonType::String => self
                .text(path, Some(raw), is_qualified_name, WHAT)
                .map(|key| vec![key]),
            JsonType::List => self.strings(
                path,
                raw,
                Some((1, MAX_ANNOTATION_KEYS)),
                is_qualified_name,
                WHAT,
            ),
            other => {
                self.errors.push(format!(
                    "{path}: must be an annotation key or a list of 1 to {MAX_ANNOTATION_KEYS} annotation keys, got {}",
                    other.name()
                ));
                None
            }
        }
        .unwrap_or_else(defaults);
        first_of_each(&mut keys);
        keys
    }

    /// `recordAnnotation`: an annotation key other than the trigger, the opt-out and those the
    /// policy writes (the record would overwrite them), the default when absent or `null`; `""`
    /// writes no record on the pod.
    pub(super) fn record<'a>(
        &mut self,
        top: Value<'_, 'a>,
        common: &Common<'_>,
    ) -> Option<Cow<'a, str>> {
        let path = &Path::Key(&Path::Root, RECORD);
        let key = self.text(
            path,
            top.get(RECORD),
            |key| key.is_empty() || is_qualified_name(key),
            "a valid annotation key ([prefix/]name, the prefix a DNS subdomain, the name at most 63 characters) or \"\" for no record",
        );
        match key {
            None => Some(Cow::Borrowed(DEFAULT_RECORD)),
            Some(key) if key.is_empty() => None,
            Some(key)
                if common.triggers.contains(&key)
                    || common.opt_outs.contains(&key)
                    || clouds::writes_annotation(&key) =>
            {
                self.errors.push(format!(
                    "{path}: must differ from triggerAnnotation, optOutAnnotation and the annotations the policy writes (k8s.v1.cni.cncf.io/networks, networking.gke.io/…, devices.gke.io/…), got \"{key}\""
                ));
                None
            }
            key => key,
        }
    }

    /// `gpuResources`: at least one extended resource name.
    pub(super) fn gpu_resources<'a>(&mut self, top: Value<'_, 'a>) -> Vec<Cow<'a, str>> {
        let default = || DEFAULT_GPU_RESOURCES.map(Cow::Borrowed).to_vec();
        let Some(raw) = top.get(GPU_RESOURCES).filter(|raw| !raw.is_null()) else {
            return default();
        };
        let path = &Path::Key(&Path::Root, GPU_RESOURCES);
        let mut resources = self
            .strings(
                path,
                raw,
                Some((1, 16)),
                is_extended_resource,
                "an extended resource name with a domain prefix that does not start with requests. (the API server keeps it for quotas), such as amd.com/gpu",
            )
            .unwrap_or_else(default);
        // A resource listed twice is one resource: its GPUs are counted once.
        first_of_each(&mut resources);
        resources
    }

    /// `preflight`: `warn` (also when absent or `null`), `reject` or `off`.
    pub(super) fn preflight(&mut self, top: Value<'_, '_>) -> Mode {
        let Some(raw) = top.get(PREFLIGHT).filter(|raw| !raw.is_null()) else {
            return Mode::default();
        };
        raw.as_str()
            .and_then(|name| Mode::named(name))
            .unwrap_or_else(|| {
                self.errors.push(format!(
                    "{PREFLIGHT}: must be one of {}, got {}",
                    join(&Mode::NAMES, ", "),
                    show(raw)
                ));
                Mode::default()
            })
    }
}

impl Reader {
    /// `validateOnly`: `true` or `false` (also when absent or `null`).
    pub(super) fn validate_only(&mut self, top: Value<'_, '_>) -> bool {
        self.switch(&Path::Root, top, VALIDATE_ONLY)
            .unwrap_or(false)
    }
}

/// Keeps the first of each repeated item, in order: a key or resource listed twice counts once.
pub(super) fn first_of_each(items: &mut Vec<Cow<'_, str>>) {
    let mut at = 0;
    while at < items.len() {
        if items[..at].contains(&items[at]) {
            items.remove(at);
        } else {
            at += 1;
        }
    }
}
