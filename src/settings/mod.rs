//! Settings (behaviour.md §1): the chart's `multinodeNetworking` values and the keys that fit the
//! policy to a cluster, checked, and turned into a [`Config`] that names exactly one cloud.
//!
//! The reader is written by hand so that every message names the full path of the field
//! (`aws.instanceTypes[p5.48xlarge].devicesPerNode`) and says what is allowed there: a misspelt
//! key must never fall back to a default silently. Settings come with every request, so they are
//! read from their JSON text without building a tree: an object is a list of its keys and the
//! text of their values, and strings borrow from the text. Each cloud's keys are data
//! ([`crate::clouds`]); this module knows no cloud by name. [`reader`] holds the primitives,
//! [`block`] a cloud's block and its rows, [`overlay`] what they set.

mod block;
mod reader;

use std::borrow::Cow;

use crate::clouds::{self, Cloud, Fabric, Machine};
use crate::error::{Error, Path};
use crate::json::JsonType;
use crate::json::envelope::LAZY_SETTINGS;
use crate::json::lenient::read;
use crate::json::tape::{Tape, Value};
use crate::k8s_names::{is_dns1123_subdomain, is_extended_resource, is_kind, is_qualified_name};
use crate::layers::{self, Overlay};
use crate::preflight::Mode;
use crate::profile::Profile;
use crate::ratio::Ratio;
use block::Place;
use reader::Reader;
use serde_json::value::RawValue;

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
const INSTANCE_TYPES: &str = "instanceTypes";

/// Validated settings: what the rest of the policy works from.
#[derive(Debug, Clone)]
pub struct Config<'a> {
    /// The one enabled cloud, with what the settings give its keys.
    pub cloud: CloudSettings<'a>,
    pub common: Common<'a>,
    /// The resources a container's GPUs are counted from (behaviour.md §2).
    pub gpu_resources: Vec<Cow<'a, str>>,
    /// What a missing object the pod refers to gets (behaviour.md §9).
    pub preflight: Mode,
    /// The annotation the record is written under; `None` when `recordAnnotation` is `""`.
    pub record: Option<Cow<'a, str>>,
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
}

/// An instance row as the settings write it.
#[derive(Debug, Clone, PartialEq)]
pub struct UserRow<'a> {
    pub devices: Option<u64>,
    pub gpus: Option<u64>,
    pub overlay: Overlay<'a>,
}

/// One instance type's row (behaviour.md §3.5): the settings' row over the built-in one, key by
/// key.
#[derive(Debug, Clone, PartialEq)]
pub struct Row<'a> {
    pub name: Cow<'a, str>,
    /// The built-in row: the vendor's facts about the machine.
    pub machine: Option<&'static Machine>,
    /// `devicesPerNode` of the settings' row.
    pub devices: Option<u64>,
    /// The node's GPUs: the settings' row's, else the machine's.
    pub gpus: Option<u64>,
    pub overlay: Overlay<'a>,
}

impl Row<'_> {
    /// Devices of `resource` on one node: the settings' count, else the built-in one where
    /// `resource` is the one the built-in rows count (`plugin`); a cloud without a device counts
    /// the machine's NICs.
    pub fn devices(&self, resource: Option<&str>, plugin: Option<&str>) -> Option<u64> {
        let built_in = self.machine.and_then(|m| m.devices);
        self.devices.or(built_in.filter(|_| resource == plugin))
    }

    /// The NICs of one node, for a cloud without a device (GCP): the settings' count, else the
    /// machine's.
    pub fn nics(&self) -> Option<u64> {
        self.devices.or(self.machine.and_then(|m| m.devices))
    }

    /// Devices of `resource` per GPU on this type, where both counts are known.
    pub fn per_gpu(&self, resource: Option<&str>, plugin: Option<&str>) -> Option<Ratio> {
        Ratio::new(self.devices(resource, plugin)?, self.gpus?)
    }
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

    /// Whether any row counts devices of `resource`: without one the per-GPU setting is the
    /// cluster's one count, as in the chart.
    pub fn counts(&self, resource: Option<&str>) -> bool {
        let settings = self
            .instance_types
            .is_some_and(|t| !crate::json::lenient::members(t).0.is_empty());
        let built_in = resource == self.cloud.plugin
            && self.cloud.machines.iter().any(|m| m.devices.is_some());
        settings || built_in
    }

    /// The row of `name`: the settings' over the built-in one. An error is a settings problem
    /// of the settings' row, which is read and checked only now (the last of a repeated type
    /// counts).
    pub fn row(&self, name: &str) -> Result<Option<Row<'a>>, Error> {
        let users = match self.instance_types {
            Some(table) => user_row(self.cloud, table, name)?,
            None => None,
        };
        let machine = self.cloud.machine(name);
        let facts = machine.map_or_else(Overlay::default, |m| Overlay::from(&m.facts));
        Ok(match (users, machine) {
            (None, None) => None,
            (None, Some(machine)) => Some(Row {
                name: Cow::Owned(name.to_string()),
                machine: Some(machine),
                devices: None,
                gpus: Some(machine.gpus),
                overlay: facts,
            }),
            (Some((key, users)), machine) => Some(Row {
                name: key,
                machine,
                devices: users.devices,
                gpus: users.gpus.or(machine.map(|m| m.gpus)),
                overlay: users.overlay.over(facts),
            }),
        })
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
        let known = |key: &str| {
            COMMON_KEYS.contains(&key)
                || key == GPU_RESOURCES
                || key == PREFLIGHT
                || clouds::ALL.iter().any(|cloud| cloud.name == key)
        };
        for (key, _) in top.members() {
            if !known(key) {
                let allowed: Vec<&str> = clouds::ALL
                    .iter()
                    .map(|cloud| cloud.name)
                    .chain(COMMON_KEYS)
                    .chain([GPU_RESOURCES, PREFLIGHT])
                    .collect();
                r.unknown_key(&Path::Root, key, &allowed);
            }
        }

        // Every block is read, enabled or not: a typo in a disabled block is still a typo, and it
        // would bite the day that block is switched on.
        let mut enabled = Vec::new();
        for cloud in clouds::ALL {
            if let Some(block) = r.block(top, cloud.name) {
                let path = &Path::Key(&Path::Root, cloud.name);
                let on = r.enabled(path, block);
                let overlay = r.overlay(cloud, path, block, Place::Cloud);
                let instance_types = match block.get(INSTANCE_TYPES) {
                    Some(table) => {
                        r.instance_table(cloud, &Path::Key(path, INSTANCE_TYPES), table, rows)
                    }
                    None => None,
                };
                if on {
                    enabled.push(CloudSettings {
                        cloud,
                        overlay,
                        instance_types,
                    });
                }
            }
        }
        let common = common.unwrap_or_else(|| r.common(top));
        let gpu_resources = r.gpu_resources(top);
        let preflight = r.preflight(top);
        let record = r.record(top, &common);

        let cloud = match enabled.len() {
            1 => enabled.pop(),
            0 => {
                r.errors.push(format!(
                    "no cloud is enabled: set enabled: true in exactly one of {}",
                    cloud_names()
                ));
                None
            }
            _ => {
                let names: Vec<_> = enabled.iter().map(|c| c.cloud.name).collect();
                r.errors.push(format!(
                    "{} are all enabled: enable exactly one cloud per policy",
                    names.join(", ")
                ));
                None
            }
        };
        match cloud {
            Some(cloud) if r.errors.is_empty() => Ok(Config {
                cloud,
                common,
                gpu_resources,
                preflight,
                record,
            }),
            _ => Err(Error::Settings(r.errors)),
        }
    }
}

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
    names.join(", ")
}

impl Reader {
    /// `triggerAnnotation`, `optOutAnnotation`, `ownerKinds`, `ownerApiGroups`.
    fn common<'a>(&mut self, top: Value<'_, 'a>) -> Common<'a> {
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
    fn annotation_keys<'a>(
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
        let mut seen = Vec::with_capacity(keys.len());
        keys.retain(|k| {
            let first = !seen.contains(k);
            seen.push(k.clone());
            first
        });
        keys
    }

    /// `recordAnnotation`: an annotation key other than the trigger, the opt-out and those the
    /// policy writes (the record would overwrite them), the default when absent or `null`; `""`
    /// writes no record on the pod.
    fn record<'a>(&mut self, top: Value<'_, 'a>, common: &Common<'_>) -> Option<Cow<'a, str>> {
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
                    || key == crate::multus::ANNOTATION
                    || key.starts_with("networking.gke.io/")
                    || key.starts_with("devices.gke.io/") =>
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
    fn gpu_resources<'a>(&mut self, top: Value<'_, 'a>) -> Vec<Cow<'a, str>> {
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
                "an extended resource name with a domain prefix, such as amd.com/gpu",
            )
            .unwrap_or_else(default);
        // A resource listed twice is one resource: its GPUs are counted once.
        let mut seen = Vec::with_capacity(resources.len());
        resources.retain(|r| {
            let first = !seen.contains(r);
            seen.push(r.clone());
            first
        });
        resources
    }

    /// `preflight`: `warn` (also when absent or `null`), `reject` or `off`.
    fn preflight(&mut self, top: Value<'_, '_>) -> Mode {
        let Some(raw) = top.get(PREFLIGHT).filter(|raw| !raw.is_null()) else {
            return Mode::default();
        };
        raw.as_str()
            .and_then(|name| Mode::named(name))
            .unwrap_or_else(|| {
                self.errors.push(format!(
                    "{PREFLIGHT}: must be one of {}, got {}",
                    Mode::NAMES.join(", "),
                    reader::show(raw)
                ));
                Mode::default()
            })
    }

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

/// The settings' row of `name` in `cloud`'s instance table `table`, checked, with the name as the
/// table spells it; the last of a repeated type counts. Only that row is parsed.
fn user_row<'a>(
    cloud: &'static Cloud,
    table: &'a RawValue,
    name: &str,
) -> Result<Option<(Cow<'a, str>, UserRow<'a>)>, Error> {
    let rows = crate::json::lenient::members(table);
    let Some((key, text)) = rows.0.iter().rev().find(|(key, _)| key == name) else {
        return Ok(None);
    };
    let tape: Tape<'a> = read(text.get()).map_err(|e| Error::Settings(vec![e.to_string()]))?;
    let mut r = Reader::default();
    let block = Path::Key(&Path::Root, cloud.name);
    let path = Path::Key(&block, INSTANCE_TYPES);
    match r.row(cloud, &Path::Entry(&path, key), key, tape.root()) {
        Some(row) if r.errors.is_empty() => Ok(Some((key.clone(), row))),
        _ => Err(Error::Settings(r.errors)),
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
mod tests {
    use super::*;
    use crate::profile::DeviceCount;
    use serde_json::{Value, json};

    fn errors(settings: Value) -> String {
        check(&settings.to_string())
            .expect_err("settings should be invalid")
            .to_string()
    }

    /// The enabled cloud's profile, described for comparison.
    fn with(settings: Value, check: impl FnOnce(&Config<'_>)) {
        let text = settings.to_string();
        let config = Config::read(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        check(&config);
    }

    fn count(config: &Config<'_>) -> DeviceCount {
        config
            .cloud
            .default_profile()
            .device
            .expect("a device")
            .count
    }

    #[test]
    fn the_lazy_paths_are_the_instance_tables() {
        assert_eq!(LAZY_SETTINGS, ["*", INSTANCE_TYPES]);
    }

    #[test]
    fn one_cloud_with_defaults() {
        with(json!({"oci": {"enabled": true}}), |config| {
            assert_eq!(config.cloud.cloud.name, "oci");
            assert_eq!(count(config), DeviceCount::PerGpu(Ratio::whole(8)));
            assert_eq!(config.common.triggers, DEFAULT_TRIGGERS);
            assert_eq!(config.common.opt_outs, DEFAULT_OPT_OUTS);
            assert_eq!(config.common.owner_kinds, DEFAULT_OWNER_KINDS);
            assert_eq!(config.common.owner_groups, DEFAULT_OWNER_GROUPS);
        });
        with(json!({"azure": {"enabled": true}}), |config| {
            let device = config.cloud.default_profile().device.unwrap();
            assert_eq!(device.resource, "rdma/hca_shared_devices_a");
            assert_eq!(device.count, DeviceCount::PerGpu(Ratio::whole(1)));
        });
    }

    #[test]
    fn the_charts_values_block_pastes_as_is() {
        let values = json!({
            "aws": {"enabled": true, "efaDevicesPerGPU": 4},
            "azure": {"enabled": false, "rdmaDevicesPerGPU": 1, "rdmaDeviceName": "hca_shared_devices_a"},
            "gcp": {"enabled": false},
            "oci": {"enabled": false, "rdmaDevicesPerGPU": 8}
        });
        with(values, |config| {
            assert_eq!(config.cloud.cloud.name, "aws");
            assert_eq!(count(config), DeviceCount::PerGpu(Ratio::whole(4)));
        });
    }

    #[test]
    fn exactly_one_cloud() {
        assert!(errors(json!({})).contains("no cloud is enabled"));
        assert!(errors(json!(null)).contains("no cloud is enabled"));
        let several = errors(
            json!({"aws": {"enabled": true}, "gcp": {"enabled": true}, "oci": {"enabled": true}}),
        );
        assert!(
            several.contains("aws, gcp, oci are all enabled"),
            "{several}"
        );
        assert_eq!(
            errors(json!("aws")),
            "settings must be an object with one of aws, azure, gcp, oci, got a string"
        );
        assert!(
            check("{")
                .unwrap_err()
                .to_string()
                .starts_with("settings are not valid JSON")
        );
    }

    #[test]
    fn a_misspelt_key_is_named_with_the_right_spelling() {
        assert_eq!(
            errors(json!({"aws": {"enabled": true, "efaDevicesPerGpu": 4}})),
            "aws.efaDevicesPerGpu: unknown key; the keys allowed under aws are enabled, efaDevicesPerGPU, efaLibraryPath, cpuRequest, deviceClaim, env, capabilities, pinTransport, instanceTypes"
        );
        assert!(
            errors(json!({"gcp": {"enabled": true}, "tigger": "x"}))
                .contains("tigger: unknown key; the keys allowed at the top level are aws, azure, gcp, oci, triggerAnnotation")
        );
        // A cloud of several fabrics: the fabric, the chart's TCPXO keys, the other fabrics' blocks.
        assert_eq!(
            errors(json!({"gcp": {"enabled": true, "network": []}})),
            "gcp.network: unknown key; the keys allowed under gcp are enabled, fabric, networks, daemonImage, daemonFlags, daemonStartupProbe, tcpxo, tcpx, rdma, env, capabilities, pinTransport, instanceTypes"
        );
    }

    #[test]
    fn per_gpu_counts_are_numbers_above_0_up_to_64() {
        for bad in [
            json!(0),
            json!(65),
            json!(-1),
            json!(64.5),
            json!(0.0000001),
            json!("4"),
            json!(true),
        ] {
            let message = errors(json!({"oci": {"enabled": true, "rdmaDevicesPerGPU": bad}}));
            assert!(
                message.starts_with(
                    "oci.rdmaDevicesPerGPU: must be a number greater than 0 and at most 64"
                ),
                "{message}"
            );
        }
        for (good, expected) in [
            (json!(1), Ratio::whole(1)),
            (json!(64), Ratio::whole(64)),
            (json!(0.5), Ratio::new(1, 2).unwrap()),
            (json!(1.5), Ratio::new(3, 2).unwrap()),
        ] {
            with(
                json!({"oci": {"enabled": true, "rdmaDevicesPerGPU": good}}),
                |config| {
                    assert_eq!(count(config), DeviceCount::PerGpu(expected));
                },
            );
        }
        // A disabled block is still read.
        assert!(
            errors(json!({"gcp": {"enabled": true}, "aws": {"efaDevicesPerGPU": 0}}))
                .contains("aws.efaDevicesPerGPU")
        );
    }

    #[test]
    fn names_are_kubernetes_names() {
        assert!(
            errors(json!({"azure": {"enabled": true, "rdmaDeviceName": "bad name!"}}))
                .contains("azure.rdmaDeviceName")
        );
        assert!(
            errors(json!({"azure": {"enabled": true, "ncclTopologyConfigMap": "Bad_Name"}}))
                .contains("azure.ncclTopologyConfigMap")
        );
        assert!(
            errors(json!({"gcp": {"enabled": true}, "triggerAnnotation": "a/b/c"}))
                .contains("triggerAnnotation")
        );
        with(
            json!({"gcp": {"enabled": true}, "triggerAnnotation": "example.com/multi-node"}),
            |config| assert_eq!(config.common.triggers, ["example.com/multi-node"]),
        );
    }

    #[test]
    fn annotation_keys_are_one_key_or_a_list() {
        with(
            json!({"gcp": {"enabled": true}, "triggerAnnotation": ["a.io/x", "b.io/y", "a.io/x"], "optOutAnnotation": "a.io/no"}),
            |config| {
                assert_eq!(config.common.triggers, ["a.io/x", "b.io/y"]);
                assert_eq!(config.common.opt_outs, ["a.io/no"]);
            },
        );
        with(
            json!({"gcp": {"enabled": true}, "triggerAnnotation": null, "optOutAnnotation": null}),
            |config| {
                assert_eq!(config.common.triggers, DEFAULT_TRIGGERS);
                assert_eq!(config.common.opt_outs, DEFAULT_OPT_OUTS);
            },
        );
        assert_eq!(
            errors(json!({"gcp": {"enabled": true}, "triggerAnnotation": []})),
            "triggerAnnotation: must have from 1 to 16 items, got 0"
        );
        assert_eq!(
            errors(json!({"gcp": {"enabled": true}, "optOutAnnotation": ["a.io/no", 3]})),
            "optOutAnnotation[1]: must be a valid annotation key ([prefix/]name, the prefix a DNS subdomain, the name at most 63 characters), got 3"
        );
        assert_eq!(
            errors(json!({"gcp": {"enabled": true}, "triggerAnnotation": {"a.io/x": true}})),
            "triggerAnnotation: must be an annotation key or a list of 1 to 16 annotation keys, got an object"
        );
        // The record must differ from every key of both lists.
        assert!(
            errors(json!({"gcp": {"enabled": true}, "recordAnnotation": "nhx.nvidia.com/disable-multi-node-networking"}))
                .starts_with("recordAnnotation: must differ")
        );
    }

    #[test]
    fn owner_lists() {
        with(
            json!({"gcp": {"enabled": true}, "ownerKinds": [], "ownerApiGroups": []}),
            |config| {
                assert!(
                    config.common.owner_kinds.is_empty() && config.common.owner_groups.is_empty()
                )
            },
        );
        assert!(
            errors(json!({"gcp": {"enabled": true}, "ownerKinds": "Job"}))
                .contains("ownerKinds: must be a list")
        );
        assert!(
            errors(json!({"gcp": {"enabled": true}, "ownerApiGroups": [3]}))
                .contains("ownerApiGroups[0]")
        );
    }

    #[test]
    fn env_maps_are_sorted_and_values_must_be_strings() {
        with(
            json!({"aws": {"enabled": true, "env": {"Z": "1", "A": null, "M": "x", "Z2": "2"}}}),
            |config| {
                let env = &config.cloud.overlay.env;
                let names: Vec<_> = env.iter().map(|c| c.name.as_ref()).collect();
                assert_eq!(names, ["A", "M", "Z", "Z2"]);
                assert_eq!(env[0].value, None);
            },
        );
        assert_eq!(
            errors(json!({"oci": {"enabled": true, "env": {"NCCL_IB_TC": 41}}})),
            "oci.env[NCCL_IB_TC]: must be a string or null, got 41; quote it: \"41\""
        );
        assert!(
            errors(json!({"oci": {"enabled": true, "env": {"A=B": "1"}}}))
                .starts_with("oci.env[A=B]: not a variable name")
        );
        assert!(
            errors(json!({"oci": {"enabled": true, "env": ["A"]}}))
                .starts_with("oci.env: must be an object")
        );
    }

    #[test]
    fn instance_rows_merge_over_the_built_in_ones() {
        with(
            json!({"aws": {"enabled": true, "instanceTypes": {
                "p4d.24xlarge": {"devicesPerNode": 2, "env": {"X": "1"}},
                "g6.48xlarge": {"devicesPerNode": 1, "gpusPerNode": 8}
            }}}),
            |config| {
                let settings = &config.cloud;
                // The user's count over the built-in row: its GPUs stay the machine's.
                let t = settings.row("p4d.24xlarge").unwrap().unwrap();
                assert_eq!(
                    (t.name.as_ref(), t.devices, t.gpus),
                    ("p4d.24xlarge", Some(2), Some(8))
                );
                assert_eq!(t.overlay.env.len(), 1);
                // p5 is a built-in row, counting the EFA plugin's resource only.
                let p5 = settings.row("p5.48xlarge").unwrap().unwrap();
                let efa = Some("vpc.amazonaws.com/efa");
                assert_eq!(p5.devices(efa, settings.cloud.plugin), Some(32));
                assert_eq!(
                    p5.devices(Some("example.com/nic"), settings.cloud.plugin),
                    None
                );
                assert_eq!(settings.row("g5.48xlarge").unwrap(), None);
                assert_eq!(settings.row("g6.48xlarge").unwrap().unwrap().gpus, Some(8));
            },
        );
        // At request time a row is read when a pod names it, and a wrong one is an error then.
        let text = json!({"aws": {"enabled": true, "instanceTypes": {"x": {"devicesPerNode": "4", "gpusPerNode": 8}, "y": {"devicesPerNode": 4, "gpusPerNode": 8}}}}).to_string();
        let mut de = serde_json::Deserializer::from_str(&text);
        let tape = Tape::read_lazy(&mut de, LAZY_SETTINGS).unwrap();
        let common = Common::from_tape(&tape).unwrap();
        let config =
            Config::from_tape(&tape, common).expect("rows are not read before a pod names them");
        assert_eq!(config.cloud.row("y").unwrap().unwrap().devices, Some(4));
        assert_eq!(
            config.cloud.row("x").unwrap_err().to_string(),
            "aws.instanceTypes[x].devicesPerNode: must be a whole number from 0 to 1024, got \"4\""
        );
        let message = errors(json!({"aws": {"enabled": true, "instanceTypes": {
            "p5.48xlarge": {"devicesPerNode": 1025, "gpusPerNode": 0, "bogus": 1},
            "g6.48xlarge": {"devicesPerNode": 8},
            "bad type!": {"devicesPerNode": 1, "gpusPerNode": 1}
        }}}));
        for part in [
            "aws.instanceTypes[p5.48xlarge].bogus: unknown key; the keys allowed under aws.instanceTypes[p5.48xlarge] are devicesPerNode, gpusPerNode, efaDevicesPerGPU, efaLibraryPath, cpuRequest, deviceClaim, env, capabilities, pinTransport",
            "aws.instanceTypes[p5.48xlarge].devicesPerNode: must be a whole number from 0 to 1024, got 1025",
            "aws.instanceTypes[p5.48xlarge].gpusPerNode: must be a whole number from 1 to 64, got 0",
            "aws.instanceTypes[g6.48xlarge].gpusPerNode: missing; set the node's GPUs beside devicesPerNode",
            "aws.instanceTypes[bad type!]: not an instance type",
        ] {
            assert!(message.contains(part), "{part}\n{message}");
        }
    }

    #[test]
    fn a_row_may_set_the_clouds_keys_and_a_gcp_fabric() {
        with(
            json!({"gcp": {"enabled": true, "fabric": "rdma", "instanceTypes": {
                "a3-ultragpu-8g": {"rdma": {"networks": ["a", "b"], "env": {"NCCL_IB_TC": "53"}}},
                "a3-megagpu-8g": {"fabric": "tcpx"}
            }}}),
            |config| {
                let settings = &config.cloud;
                assert_eq!(settings.overlay.fabric.map(|f| f.name), Some("rdma"));
                let ultra = settings.row("a3-ultragpu-8g").unwrap().unwrap();
                // The user's keys over the built-in facts: the fabric stays, the env merges.
                assert_eq!(ultra.overlay.fabric.map(|f| f.name), Some("rdma"));
                let env: Vec<_> = ultra.overlay.fabric_env[0]
                    .1
                    .iter()
                    .map(|e| e.name.as_ref())
                    .collect();
                assert_eq!(env, ["NCCL_IB_TC", "NCCL_TUNER_CONFIG_PATH"]);
                let profile = settings.profile(settings.fabric(&ultra.overlay), &ultra.overlay);
                assert_eq!(profile.interfaces.unwrap().networks, ["a", "b"]);
                // Only a row the user writes changes a machine's fabric.
                let mega = settings.row("a3-megagpu-8g").unwrap().unwrap();
                assert_eq!(settings.fabric(&mega.overlay).name, "tcpx");
            },
        );
        assert_eq!(
            errors(json!({"gcp": {"enabled": true, "fabric": "tcpxx"}})),
            "gcp.fabric: must be one of tcpxo, tcpx, rdma, got \"tcpxx\""
        );
        assert!(
            errors(json!({"gcp": {"enabled": true, "tcpx": {"networks": ["a"], "daemonFlags": ["a\nb"], "x": 1}}}))
                .contains("gcp.tcpx.x: unknown key; the keys allowed under gcp.tcpx are networks, daemonImage, daemonFlags, env")
        );
        assert!(
            errors(json!({"gcp": {"enabled": true, "rdma": {"networks": []}}}))
                .contains("gcp.rdma.networks: must have from 1 to 16 items, got 0")
        );
    }

    #[test]
    fn pin_transport_names_each_fabrics_plugin() {
        let nccl_net = |settings: Value| {
            let profile = profile_of(settings);
            let net: Vec<_> = profile
                .env
                .iter()
                .filter(|e| e.name == "NCCL_NET")
                .collect();
            assert!(net.len() <= 1);
            net.first().map(|e| e.value.to_string())
        };
        for (settings, expected) in [
            (
                json!({"aws": {"enabled": true, "pinTransport": true}}),
                Some("AWS Libfabric"),
            ),
            (
                json!({"azure": {"enabled": true, "pinTransport": true}}),
                Some("IB"),
            ),
            (
                json!({"oci": {"enabled": true, "pinTransport": true}}),
                Some("IB"),
            ),
            (
                json!({"gcp": {"enabled": true, "pinTransport": true}}),
                Some("FasTrak"),
            ),
            (
                json!({"gcp": {"enabled": true, "fabric": "tcpx", "pinTransport": true}}),
                Some("GPUDirectTCPX_v7"),
            ),
            // gIB's values set it anyway.
            (
                json!({"gcp": {"enabled": true, "fabric": "rdma"}}),
                Some("gIB"),
            ),
            (json!({"aws": {"enabled": true}}), None),
            (
                json!({"aws": {"enabled": true, "pinTransport": false}}),
                None,
            ),
            // The settings' env wins: a value, or null for none.
            (
                json!({"aws": {"enabled": true, "pinTransport": true, "env": {"NCCL_NET": "OFI"}}}),
                Some("OFI"),
            ),
            (
                json!({"oci": {"enabled": true, "pinTransport": true, "env": {"NCCL_NET": null}}}),
                None,
            ),
        ] {
            assert_eq!(
                nccl_net(settings.clone()).as_deref(),
                expected,
                "{settings}"
            );
        }
        assert_eq!(
            errors(json!({"aws": {"enabled": true, "pinTransport": "yes"}})),
            "aws.pinTransport: must be true or false, got \"yes\""
        );
    }

    #[test]
    fn gpu_resources_are_extended_resource_names() {
        with(json!({"oci": {"enabled": true}}), |config| {
            assert_eq!(config.gpu_resources, DEFAULT_GPU_RESOURCES);
        });
        with(
            json!({"oci": {"enabled": true}, "gpuResources": ["amd.com/gpu"]}),
            |config| assert_eq!(config.gpu_resources, ["amd.com/gpu"]),
        );
        with(
            json!({"oci": {"enabled": true}, "gpuResources": ["amd.com/gpu", "x.io/gpu", "amd.com/gpu"]}),
            |config| assert_eq!(config.gpu_resources, ["amd.com/gpu", "x.io/gpu"]),
        );
        assert!(
            errors(json!({"oci": {"enabled": true}, "gpuResources": ["gpu"]}))
                .starts_with("gpuResources[0]: must be an extended resource name")
        );
        assert!(
            errors(json!({"oci": {"enabled": true}, "gpuResources": []}))
                .starts_with("gpuResources: must have from 1 to 16 items, got 0")
        );
    }

    #[test]
    fn per_gpu_and_per_container_exclude_each_other() {
        assert_eq!(
            errors(
                json!({"azure": {"enabled": true, "rdmaDevicesPerGPU": 1, "rdmaDevicesPerContainer": 1}})
            ),
            "azure.rdmaDevicesPerGPU and azure.rdmaDevicesPerContainer cannot both be set; keep the one that matches the cluster's device plugin"
        );
        with(
            json!({"azure": {"enabled": true, "rdmaDevicesPerContainer": 1, "rdmaDeviceName": "shared_ib"}}),
            |config| assert_eq!(count(config), DeviceCount::PerContainer(1)),
        );
    }

    #[test]
    fn lists_of_names_are_checked_item_by_item() {
        let seven: Vec<String> = (1..8).map(|i| format!("vpc{i}")).collect();
        assert_eq!(
            errors(json!({"gcp": {"enabled": true, "networks": seven}})),
            "gcp.networks: must have exactly 8 items, got 7"
        );
        let message = errors(
            json!({"gcp": {"enabled": true, "networks": ["vpc1", "vpc2", "vpc3", "VPC_4", "vpc5", "vpc6", "vpc7", "vpc8"], "daemonFlags": ["--a;b"]}}),
        );
        assert!(
            message.contains("gcp.networks[3]: must be a GKE network name"),
            "{message}"
        );
        assert!(
            message.contains("gcp.daemonFlags[0]: must be a flag"),
            "{message}"
        );
        assert!(
            errors(json!({"aws": {"enabled": true, "capabilities": ["IPC LOCK"]}}))
                .starts_with("aws.capabilities[0]: must be a capability name")
        );
        // Added to a container that sets allowPrivilegeEscalation: false, CAP_SYS_ADMIN would make
        // the pod one the API server refuses; every spelling is refused alike.
        assert!(
            errors(
                json!({"azure": {"enabled": true, "capabilities": ["IPC_LOCK", "cap_sys_admin"]}})
            )
            .starts_with("azure.capabilities[1]: must be a capability name")
        );
    }

    #[test]
    fn optional_values_turn_off_with_null_or_empty() {
        for off in [json!(null), json!("")] {
            with(
                json!({"aws": {"enabled": true, "efaLibraryPath": off, "cpuRequest": off}}),
                |config| {
                    let profile = config.cloud.default_profile();
                    assert!(profile.mounts.iter().all(|m| m.volume != "amazon-efa"));
                    assert!(profile.volumes.iter().all(|v| v.name != "amazon-efa"));
                    assert_eq!(profile.default_cpu_request, None);
                },
            );
        }
        assert!(
            errors(json!({"aws": {"enabled": true, "efaLibraryPath": "opt/efa"}}))
                .starts_with("aws.efaLibraryPath: must be an absolute path")
        );
        assert!(
            errors(json!({"aws": {"enabled": true, "cpuRequest": "lots"}}))
                .starts_with("aws.cpuRequest: must be a Kubernetes quantity")
        );
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let message = errors(json!({"aws": {"enabled": "yes", "efaDevicesPerGPU": 0}, "bogus": 1}));
        assert!(
            message.contains("bogus")
                && message.contains("aws.enabled")
                && message.contains("aws.efaDevicesPerGPU"),
            "{message}"
        );
    }
}
