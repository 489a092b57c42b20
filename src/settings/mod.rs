//! Settings (behaviour.md §1): the chart's `multinodeNetworking` values and the keys that fit the
//! policy to a cluster, checked, and turned into a [`Config`] that names exactly one cloud.
//!
//! The reader is written by hand so that every message names the full path of the field
//! (`aws.instanceTypes[p5.48xlarge].devicesPerNode`) and says what is allowed there: a misspelt
//! key must never fall back to a default silently. Settings come with every request, so they are
//! read from their JSON text without building a tree: an object is a list of its keys and the
//! text of their values, and strings borrow from the text. Each cloud's keys are data
//! ([`crate::clouds`]); this module knows no cloud by name. [`reader`] holds the primitives,
//! [`common`] the keys every request reads, [`block`] a cloud's block and its rows, read into the
//! overlays of [`crate::layers`], and [`rows`] a type's row laid over its built-in one.

mod attachments;
mod block;
mod classes;
mod common;
mod domain;
mod pools;
mod reader;
mod rows;

pub use classes::{
    DEFAULT_FABRIC_DEVICE_CLASSES, DEFAULT_GPU_DEVICE_CLASSES, DeviceClasses,
    FABRIC_DEVICE_CLASSES, GPU_DEVICE_CLASSES,
};
pub use common::{
    DEFAULT_GPU_RESOURCES, DEFAULT_OPT_OUTS, DEFAULT_OWNER_GROUPS, DEFAULT_OWNER_KINDS,
    DEFAULT_RECORD, DEFAULT_TRIGGERS,
};
pub use domain::{COMPUTE_DOMAIN, ComputeDomain};
pub use pools::{POOL_LABELS, POOLS, Pools};
pub use rows::{Row, UserRow};

use std::borrow::Cow;

use crate::clouds::{self, Cloud, Fabric};
use crate::cluster::Mode;
use crate::error::{Error, Path, join};
use crate::json::JsonType;
use crate::json::envelope::LAZY_SETTINGS;
use crate::json::tape::{Tape, Value};
use crate::layers::{self, Overlay};
use crate::profile::Profile;
use block::Place;
use reader::Reader;
use serde_json::value::RawValue;

const MAX_PER_GPU: u64 = 64;
const COMMON_KEYS: [&str; 5] = [
    "triggerAnnotation",
    "optOutAnnotation",
    "recordAnnotation",
    "ownerKinds",
    "ownerApiGroups",
];
const RECORD: &str = "recordAnnotation";
const GPU_RESOURCES: &str = "gpuResources";
const PREFLIGHT: &str = "preflight";
const VALIDATE_ONLY: &str = "validateOnly";
const INSTANCE_TYPES: &str = "instanceTypes";

/// Validated settings: what the rest of the policy works from.
#[derive(Debug, Clone)]
pub struct Config<'a> {
    /// The one enabled cloud, with what the settings give its keys.
    pub cloud: CloudSettings<'a>,
    pub common: Common<'a>,
    /// The resources a container's GPUs are counted from (behaviour.md §2).
    pub gpu_resources: Vec<Cow<'a, str>>,
    /// The DeviceClasses of GPUs and of fabrics, which a pod's DRA claims are read by
    /// (behaviour.md §3.10).
    pub device_classes: DeviceClasses<'a>,
    /// What a missing object the pod refers to gets (behaviour.md §9).
    pub preflight: Mode,
    /// The annotation the record is written under; `None` when `recordAnnotation` is `""`.
    pub record: Option<Cow<'a, str>>,
    /// Refuse a pod that would be changed instead of changing it (behaviour.md §10).
    pub validate_only: bool,
    /// Where a multi-node NVLink pod's ComputeDomain is (behaviour.md §3.11); `None`: the policy
    /// adds no channel.
    pub compute_domain: Option<ComputeDomain<'a>>,
}

/// The settings that decide whether a pod is the policy's (behaviour.md §2): all that is read
/// for the pods that are not, most pods of a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Common<'a> {
    /// The annotations any of whose `"true"` opts a pod in, in the settings' order.
    pub triggers: Vec<Cow<'a, str>>,
    /// The annotations any of whose `"true"` keeps an opted-in pod untouched.
    pub opt_outs: Vec<Cow<'a, str>>,
    /// Empty means any owner kind, or none.
    pub owner_kinds: Vec<Cow<'a, str>>,
    /// Empty means any owner API group, or none.
    pub owner_groups: Vec<Cow<'a, str>>,
}

/// What the settings give one cloud's block.
#[derive(Debug, Clone)]
pub struct CloudSettings<'a> {
    pub cloud: &'static Cloud,
    /// The block's keys, env and capabilities, and the fabric it picks.
    pub overlay: Overlay<'a>,
    /// `instanceTypes`, as its text: its rows are read when a pod names them (they were all
    /// checked when the policy server loaded the settings).
    pub instance_types: Option<&'a RawValue>,
    /// `pools`: the machines of the node pools a pod may select (behaviour.md §3.5).
    pub pools: Pools<'a>,
}

impl<'a> CloudSettings<'a> {
    /// The fabric a pod gets: its machine's, else the settings', else the cloud's default.
    pub fn fabric(&self, machine: &Overlay<'_>) -> &'static Fabric {
        layers::fabric(self.cloud, &self.overlay, machine)
    }

    /// The injection of `fabric` for a pod on `machine` (behaviour.md §1.2, §1.3, §3.6).
    pub fn profile(&self, fabric: &'static Fabric, machine: &Overlay<'a>) -> Profile<'a> {
        layers::build(fabric, &self.overlay, machine)
    }

    /// The injection of a pod whose machine is not known, for tests.
    #[cfg(test)]
    pub fn default_profile(&self) -> Profile<'a> {
        let none = Overlay::default();
        self.profile(self.fabric(&none), &none)
    }
}

impl<'a> Config<'a> {
    /// Reads and checks settings given as JSON text, every row of every instance table
    /// included: what `validate_settings` answers. `null` counts as `{}` (the host sends `{}` when
    /// there are none).
    pub fn read(text: &'a str) -> Result<Config<'a>, Error> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let tape = Tape::read_lazy(&mut deserializer, LAZY_SETTINGS)
            .and_then(|tape| deserializer.end().map(|()| tape))
            .map_err(|e| Error::Settings(vec![format!("settings are not valid JSON: {e}")]))?;
        Config::checked(&tape, Rows::All, None)
    }

    /// Reads and checks the settings of a request whose common keys were read already; the
    /// instance tables' rows are checked when a pod names them. The configuration borrows the
    /// text the tape borrows, not the tape.
    pub fn from_tape(tape: &Tape<'a>, common: Common<'a>) -> Result<Config<'a>, Error> {
        Config::checked(tape, Rows::Named, Some(common))
    }

    fn checked(
        tape: &Tape<'a>,
        rows: Rows,
        common: Option<Common<'a>>,
    ) -> Result<Config<'a>, Error> {
        let top = top(tape)?;
        let mut r = Reader::default();
        r.top_keys(top);
        let enabled = r.cloud_blocks(top, rows);
        let common = common.unwrap_or_else(|| r.common(top));
        let gpu_resources = r.gpu_resources(top);
        let device_classes = r.device_classes(top);
        let preflight = r.preflight(top);
        let record = r.record(top, &common);
        let validate_only = r.validate_only(top);
        let compute_domain = r.compute_domain(top, preflight);
        let cloud = r.one_cloud(enabled);
        match cloud {
            Some(cloud) if r.errors.is_empty() => Ok(Config {
                cloud,
                common,
                gpu_resources,
                device_classes,
                preflight,
                record,
                validate_only,
                compute_domain,
            }),
            _ => Err(Error::Settings(r.errors)),
        }
    }
}

impl Reader {
    /// The settings' own keys: the clouds' blocks and the common keys; any other is a typo.
    fn top_keys(&mut self, top: Value<'_, '_>) {
        let known = |key: &str| {
            COMMON_KEYS.contains(&key)
                || key == GPU_RESOURCES
                || key == PREFLIGHT
                || key == GPU_DEVICE_CLASSES
                || key == FABRIC_DEVICE_CLASSES
                || key == VALIDATE_ONLY
                || key == COMPUTE_DOMAIN
                || clouds::ALL.iter().any(|cloud| cloud.name == key)
        };
        for (key, _) in top.members() {
            if !known(key) {
                let allowed: Vec<&str> = clouds::ALL
                    .iter()
                    .map(|cloud| cloud.name)
                    .chain(COMMON_KEYS)
                    .chain([
                        GPU_RESOURCES,
                        GPU_DEVICE_CLASSES,
                        FABRIC_DEVICE_CLASSES,
                        PREFLIGHT,
                        VALIDATE_ONLY,
                        COMPUTE_DOMAIN,
                    ])
                    .collect();
                self.unknown_key(&Path::Root, key, &allowed);
            }
        }
    }

    /// The enabled clouds' blocks. Every block is read, enabled or not: a typo in a disabled
    /// block is still a typo, and it would bite the day that block is switched on.
    fn cloud_blocks<'a>(&mut self, top: Value<'_, 'a>, rows: Rows) -> Vec<CloudSettings<'a>> {
        let mut enabled = Vec::new();
        for cloud in clouds::ALL {
            let Some(block) = self.block(top, cloud.name) else {
                continue;
            };
            let path = &Path::Key(&Path::Root, cloud.name);
            let on = self.enabled(path, block);
            let overlay = self.overlay(cloud, path, block, Place::Cloud);
            let instance_types = block.get(INSTANCE_TYPES).and_then(|table| {
                self.instance_table(cloud, &Path::Key(path, INSTANCE_TYPES), table, rows)
            });
            let pools = match block.get(POOLS) {
                Some(raw) => self.pools(&Path::Key(path, POOLS), raw),
                None => Pools::default(),
            };
            if on {
                enabled.push(CloudSettings {
                    cloud,
                    overlay,
                    instance_types,
                    pools,
                });
            }
        }
        enabled
    }

    /// The one enabled cloud; none, or several, is a problem.
    fn one_cloud<'a>(&mut self, mut enabled: Vec<CloudSettings<'a>>) -> Option<CloudSettings<'a>> {
        match enabled.len() {
            1 => enabled.pop(),
            0 => {
                self.errors.push(format!(
                    "no cloud is enabled: set enabled: true in exactly one of {}",
                    cloud_names()
                ));
                None
            }
            _ => {
                let names: Vec<_> = enabled.iter().map(|c| c.cloud.name).collect();
                self.errors.push(format!(
                    "{} are all enabled: enable exactly one cloud per policy",
                    join(&names, ", ")
                ));
                None
            }
        }
    }
}

/// Which rows of the instance tables a read checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rows {
    /// All of them: the settings the policy server loads.
    All,
    /// Those a pod names, when it names them: the settings of a request.
    Named,
}

/// The settings object; `null` reads as `{}`.
fn top<'t, 'a>(tape: &'t Tape<'a>) -> Result<Value<'t, 'a>, Error> {
    let top = tape.root();
    match top.json_type() {
        JsonType::Null | JsonType::Object => Ok(top),
        other => Err(Error::Settings(vec![format!(
            "settings must be an object with one of {}, got {}",
            cloud_names(),
            other.name()
        )])),
    }
}

fn cloud_names() -> String {
    let names: Vec<&str> = clouds::ALL.iter().map(|cloud| cloud.name).collect();
    join(&names, ", ")
}

impl Reader {
    /// A cloud block: absent and `null` read as "not there".
    fn block<'t, 'a>(&mut self, top: Value<'t, 'a>, name: &str) -> Option<Value<'t, 'a>> {
        let raw = top.get(name)?;
        self.of_type(
            &name,
            raw,
            JsonType::Object,
            &"an object such as {enabled: true}",
        )
    }
}

/// Checks settings as `validate_settings` receives them.
pub fn check(text: &str) -> Result<(), Error> {
    Config::read(text).map(drop)
}

/// The configuration of `settings`, for tests (the text is kept for good).
#[cfg(test)]
pub(crate) fn config_of(settings: serde_json::Value) -> Config<'static> {
    let text: &'static str = Box::leak(settings.to_string().into_boxed_str());
    Config::read(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The enabled cloud's profile under `settings` for a pod whose machine is not known, for tests.
#[cfg(test)]
pub(crate) fn profile_of(settings: serde_json::Value) -> crate::profile::Profile<'static> {
    config_of(settings).cloud.default_profile()
}

#[cfg(test)]
mod tests;
