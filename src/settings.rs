//! Settings (behaviour.md §1): the chart's `multinodeNetworking` values and the keys that fit the
//! policy to a cluster, checked, and turned into a [`Config`] that names exactly one cloud.
//!
//! The reader is written by hand so that every message names the full path of the field
//! (`aws.instanceTypes[p5.48xlarge].devicesPerNode`) and says what is allowed there: a misspelt
//! key must never fall back to a default silently. Settings come with every request, so they are
//! read from their JSON text without building a tree: an object is a list of its keys and the
//! text of their values, and strings borrow from the text. Each cloud's keys are data
//! ([`crate::clouds`]); this file knows no cloud by name.

use std::borrow::Cow;
use std::fmt::Display;

use crate::clouds::{self, Cloud, Key, Kind, Param, apply_env};
use crate::error::Path;
use crate::fragment::render_string;
use crate::k8s_names::{
    is_capability, is_dns1123_subdomain, is_env_name, is_kind, is_qualified_name,
    is_qualified_name_part,
};
use crate::lenient::read;
use crate::merge::same_capability;
use crate::profile::{EnvChange, InstanceTable, InstanceType, Profile};
use crate::ratio::{MAX_DECIMALS, Ratio};
use crate::tape::{JsonType, Tape, Value};
use serde_json::value::RawValue;

pub const DEFAULT_TRIGGER: &str = "nmp.nvidia.com/enable-multi-node-networking";
pub const DEFAULT_OWNER_KINDS: [&str; 5] = ["PyTorchJob", "MPIJob", "Job", "RunaiJob", "JobSet"];
pub const DEFAULT_OWNER_GROUPS: [&str; 5] = [
    "batch.volcano.sh",
    "kubeflow.org",
    "run.ai",
    "jobset.x-k8s.io",
    "batch",
];
const MAX_PER_GPU: u64 = 64;
const COMMON_KEYS: [&str; 3] = ["triggerAnnotation", "ownerKinds", "ownerApiGroups"];
/// The keys every cloud block has besides its own; `instanceTypes` where it has a device.
const BLOCK_KEYS: [&str; 3] = ["enabled", "env", "capabilities"];
const INSTANCE_TYPES: &str = "instanceTypes";
const INSTANCE_KEYS: [&str; 3] = ["devicesPerNode", "gpusPerNode", "env"];
const MAX_DEVICES_PER_NODE: u64 = 1024;

/// Validated settings: what the rest of the policy works from.
#[derive(Debug, Clone)]
pub struct Config<'a> {
    /// The one enabled cloud, with what the settings give its keys.
    pub cloud: CloudSettings<'a>,
    pub common: Common<'a>,
}

/// The settings that decide whether a pod is the policy's (behaviour.md §2): all that is read
/// for the pods that are not, most pods of a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Common<'a> {
    pub trigger: Cow<'a, str>,
    /// Empty means any owner kind, or none.
    pub owner_kinds: Vec<Cow<'a, str>>,
    /// Empty means any owner API group, or none.
    pub owner_groups: Vec<Cow<'a, str>>,
}

/// What the settings give one cloud's block.
#[derive(Debug, Clone)]
pub struct CloudSettings<'a> {
    pub cloud: &'static Cloud,
    /// The cloud's own keys that are set, in the order of [`Cloud::keys`].
    pub set: Vec<(&'static Key, Param<'a>)>,
    /// `env`, sorted by name, one entry a name.
    pub env: Vec<EnvChange<'a>>,
    pub capabilities: Vec<Cow<'a, str>>,
    /// `instanceTypes`, as its text: its rows are read when a pod names them (they were all
    /// checked when the policy server loaded the settings).
    pub instance_types: Option<&'a RawValue>,
}

impl<'a> CloudSettings<'a> {
    /// The cloud's injection with the settings applied (behaviour.md §1.2, §1.3, §3.6).
    pub fn profile(&self) -> Profile<'a> {
        let mut profile = (self.cloud.profile)();
        for (key, param) in &self.set {
            (key.apply)(&mut profile, param.clone());
        }
        apply_env(&mut profile.env, &self.env);
        for capability in &self.capabilities {
            let present = profile
                .capabilities
                .iter()
                .any(|c| same_capability(c, capability));
            if !present {
                profile.capabilities.push(capability.clone());
            }
        }
        // A built-in row is a fact about one plugin's resource.
        let built_in = match (self.cloud.plugin, &profile.device) {
            (Some(plugin), Some(device)) if device.resource == plugin.resource => plugin.rows,
            _ => &[],
        };
        profile.instance_types = InstanceTable {
            cloud: self.cloud.name,
            settings: self.instance_types,
            read: instance_row,
            built_in,
        };
        profile
    }
}

/// The paths of the settings kept as text on the request's tape: the instance tables.
pub const LAZY: &[&str] = &["*", INSTANCE_TYPES];

/// The settings of a request, read onto a tape in the request's own pass.
pub fn read_tape<'de: 'a, 'a, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Tape<'a>>, D::Error> {
    Tape::read_lazy(deserializer, LAZY).map(Some)
}

/// Every problem found in the settings, each naming its field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError(pub Vec<String>);

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join("; "))
    }
}

impl<'a> Config<'a> {
    /// Reads and checks settings given as JSON text, every row of every instance table
    /// included: what `validate_settings` answers. `null` counts as `{}` (the host sends `{}` when
    /// there are none).
    pub fn read(text: &'a str) -> Result<Config<'a>, SettingsError> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let tape = Tape::read_lazy(&mut deserializer, LAZY)
            .and_then(|tape| deserializer.end().map(|()| tape))
            .map_err(|e| SettingsError(vec![format!("settings are not valid JSON: {e}")]))?;
        Config::checked(&tape, Rows::All, None)
    }

    /// Reads and checks the settings of a request whose common keys were read already; the
    /// instance tables' rows are checked when a pod names them. The configuration borrows the
    /// text the tape borrows, not the tape.
    pub fn from_tape(tape: &Tape<'a>, common: Common<'a>) -> Result<Config<'a>, SettingsError> {
        Config::checked(tape, Rows::Named, Some(common))
    }

    fn checked(
        tape: &Tape<'a>,
        rows: Rows,
        common: Option<Common<'a>>,
    ) -> Result<Config<'a>, SettingsError> {
        let top = top(tape)?;
        let mut r = Reader::default();
        for (key, _) in top.members() {
            let known = COMMON_KEYS.contains(&key.as_ref())
                || clouds::ALL.iter().any(|cloud| cloud.name == key);
            if !known {
                let allowed: Vec<&str> = clouds::ALL
                    .iter()
                    .map(|cloud| cloud.name)
                    .chain(COMMON_KEYS)
                    .collect();
                r.unknown_key(&Path::Root, key, &allowed);
            }
        }

        // Every block is read, enabled or not: a typo in a disabled block is still a typo, and it
        // would bite the day that block is switched on.
        let mut enabled = Vec::new();
        for cloud in clouds::ALL {
            if let Some(block) = r.block(top, cloud.name) {
                let on = r.enabled(&Path::Key(&Path::Root, cloud.name), block);
                let settings = r.cloud(cloud, block, rows);
                if on {
                    enabled.push(settings);
                }
            }
        }
        let common = common.unwrap_or_else(|| r.common(top));

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
            Some(cloud) if r.errors.is_empty() => Ok(Config { cloud, common }),
            _ => Err(SettingsError(r.errors)),
        }
    }
}

impl<'a> Common<'a> {
    /// Reads and checks only the keys that decide whether a pod is the policy's.
    pub fn from_tape(tape: &Tape<'a>) -> Result<Common<'a>, SettingsError> {
        let top = top(tape)?;
        let mut r = Reader::default();
        let common = r.common(top);
        if r.errors.is_empty() {
            Ok(common)
        } else {
            Err(SettingsError(r.errors))
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
fn top<'t, 'a>(tape: &'t Tape<'a>) -> Result<Value<'t, 'a>, SettingsError> {
    let top = tape.root();
    match top.json_type() {
        JsonType::Null | JsonType::Object => Ok(top),
        other => Err(SettingsError(vec![format!(
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

/// A value as it appears in a message: short, and typed, so `"4"` and `4` read differently.
fn show(value: Value<'_, '_>) -> String {
    let text = match (value.as_str(), value.as_number(), value.as_bool()) {
        (Some(s), _, _) => render_string(s),
        (_, Some(n), _) => n.to_string(),
        (_, _, Some(b)) => b.to_string(),
        _ => return value.json_type().name().to_string(),
    };
    if text.len() > 80 {
        format!("{}…", text.chars().take(80).collect::<String>())
    } else {
        text
    }
}

/// Collects errors while reading, so that one answer lists every problem. Paths are built on the
/// stack and formatted only into a message: settings are read with every request.
#[derive(Default)]
struct Reader {
    errors: Vec<String>,
}

impl Reader {
    /// `triggerAnnotation`, `ownerKinds`, `ownerApiGroups`.
    fn common<'a>(&mut self, top: Value<'_, 'a>) -> Common<'a> {
        let trigger = self.text(
            &Path::Key(&Path::Root, "triggerAnnotation"),
            top.get("triggerAnnotation"),
            is_qualified_name,
            "a valid annotation key ([prefix/]name, the prefix a DNS subdomain, the name at most 63 characters)",
        );
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
            trigger: trigger.unwrap_or(Cow::Borrowed(DEFAULT_TRIGGER)),
            owner_kinds,
            owner_groups,
        }
    }

    fn unknown_key(&mut self, path: &Path<'_>, key: &str, allowed: &[&str]) {
        let place = match path {
            Path::Root => "at the top level".to_string(),
            _ => format!("under {path}"),
        };
        self.errors.push(format!(
            "{}: unknown key; the keys allowed {place} are {}",
            Path::Key(path, key),
            allowed.join(", ")
        ));
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

    /// `raw` when it is of type `want`; `None` when it is `null` (not there), or of another type,
    /// which is an error: `{path}: must be {must_be}, got {type}`.
    fn of_type<'t, 'a>(
        &mut self,
        path: &dyn Display,
        raw: Value<'t, 'a>,
        want: JsonType,
        must_be: &dyn Display,
    ) -> Option<Value<'t, 'a>> {
        match raw.json_type() {
            JsonType::Null => None,
            found if found == want => Some(raw),
            other => {
                self.errors
                    .push(format!("{path}: must be {must_be}, got {}", other.name()));
                None
            }
        }
    }

    fn enabled(&mut self, path: &Path<'_>, block: Value<'_, '_>) -> bool {
        let Some(raw) = block.get("enabled") else {
            return false;
        };
        match raw.as_bool() {
            Some(on) => on,
            None if raw.is_null() => false,
            None => {
                self.errors.push(format!(
                    "{}: must be true or false, got {}",
                    Path::Key(path, "enabled"),
                    show(raw)
                ));
                false
            }
        }
    }

    /// Everything a cloud block sets.
    fn cloud<'a>(
        &mut self,
        cloud: &'static Cloud,
        block: Value<'_, 'a>,
        rows: Rows,
    ) -> CloudSettings<'a> {
        let path = &Path::Key(&Path::Root, cloud.name);
        for (key, _) in block.members() {
            let known = BLOCK_KEYS.contains(&key.as_ref())
                || (cloud.plugin.is_some() && key == INSTANCE_TYPES)
                || cloud.key(key).is_some();
            if !known {
                let mut allowed = vec![BLOCK_KEYS[0]];
                allowed.extend(cloud.keys.iter().map(|k| k.name));
                allowed.extend(&BLOCK_KEYS[1..]);
                if cloud.plugin.is_some() {
                    allowed.push(INSTANCE_TYPES);
                }
                self.unknown_key(path, key, &allowed);
            }
        }
        let mut set = Vec::new();
        for key in cloud.keys {
            let Some(raw) = block.get(key.name) else {
                continue;
            };
            if let Some(param) = self.param(&Path::Key(path, key.name), key.kind, raw) {
                set.push((key, param));
            }
        }
        for (a, b) in cloud.exclusive {
            if set.iter().any(|(k, _)| k.name == *a) && set.iter().any(|(k, _)| k.name == *b) {
                self.errors.push(format!(
                    "{} and {} cannot both be set; keep the one that matches the cluster's device plugin",
                    Path::Key(path, a),
                    Path::Key(path, b)
                ));
            }
        }
        let env = match block.get("env") {
            Some(raw) => self.env(&Path::Key(path, "env"), raw),
            None => Vec::new(),
        };
        let capabilities = match block.get("capabilities") {
            Some(raw) => self
                .strings(
                    &Path::Key(path, "capabilities"),
                    raw,
                    None,
                    |c| is_capability(c) && !same_capability(c, "SYS_ADMIN"),
                    "a capability name such as IPC_LOCK (letters, digits and '_'), and not SYS_ADMIN in any spelling, which allowPrivilegeEscalation: false cannot hold back (the API server refuses CAP_SYS_ADMIN beside it): grant it in the pod spec",
                )
                .unwrap_or_default(),
            None => Vec::new(),
        };
        let instance_types = match block.get(INSTANCE_TYPES).filter(|_| cloud.plugin.is_some()) {
            Some(table) => self.instance_table(&Path::Key(path, INSTANCE_TYPES), table, rows),
            None => None,
        };
        CloudSettings {
            cloud,
            set,
            env,
            capabilities,
            instance_types,
        }
    }

    /// A cloud key's value; `None` when it is `null` (the default stays) or wrong.
    fn param<'a>(&mut self, path: &Path<'_>, kind: Kind, raw: Value<'_, 'a>) -> Option<Param<'a>> {
        match kind {
            Kind::PerGpu => self.per_gpu(path, raw).map(Param::PerGpu),
            Kind::Whole { min, max } => self.whole(path, raw, min, max).map(Param::Whole),
            Kind::Text { valid, what } => self.text(path, Some(raw), valid, what).map(Param::Text),
            Kind::Optional { valid, what } => match raw.as_str() {
                _ if raw.is_null() => Some(Param::Off),
                Some(s) if s.is_empty() => Some(Param::Off),
                _ => self.text(path, Some(raw), valid, what).map(Param::Text),
            },
            Kind::Texts { len, valid, what } => {
                self.strings(path, raw, len, valid, what).map(Param::Texts)
            }
        }
    }

    fn per_gpu(&mut self, path: &Path<'_>, raw: Value<'_, '_>) -> Option<Ratio> {
        if raw.is_null() {
            return None;
        }
        // serde_json writes a number as the shortest text that reads back to it: `0.5`, `1e-6`.
        let ratio = raw
            .as_number()
            .and_then(|n| Ratio::parse_decimal(&n.to_string()))
            .filter(|r| !r.is_zero() && r.at_most(MAX_PER_GPU));
        if ratio.is_none() {
            self.errors.push(format!(
                "{path}: must be a number greater than 0 and at most {MAX_PER_GPU} with at most {MAX_DECIMALS} decimal places, the node's devices divided by its GPUs (0.5 for 4 per 8 GPUs), got {}",
                show(raw)
            ));
        }
        ratio
    }

    fn whole(&mut self, path: &Path<'_>, raw: Value<'_, '_>, min: u64, max: u64) -> Option<u64> {
        if raw.is_null() {
            return None;
        }
        let n = raw
            .as_number()
            .and_then(serde_json::Number::as_u64)
            .filter(|n| (min..=max).contains(n));
        if n.is_none() {
            self.errors.push(format!(
                "{path}: must be a whole number from {min} to {max}, got {}",
                show(raw)
            ));
        }
        n
    }

    /// A string that `valid` accepts; `None` when absent, `null` or wrong.
    fn text<'a>(
        &mut self,
        path: &Path<'_>,
        raw: Option<Value<'_, 'a>>,
        valid: fn(&str) -> bool,
        what: &str,
    ) -> Option<Cow<'a, str>> {
        let raw = raw.filter(|raw| !raw.is_null())?;
        match raw.as_str() {
            Some(s) if valid(s) => Some(s.clone()),
            _ => {
                self.errors
                    .push(format!("{path}: must be {what}, got {}", show(raw)));
                None
            }
        }
    }

    /// A list of strings `valid` accepts, of `len` items when given; `None` when `null` or wrong.
    fn strings<'a>(
        &mut self,
        path: &Path<'_>,
        raw: Value<'_, 'a>,
        len: Option<usize>,
        valid: fn(&str) -> bool,
        what: &str,
    ) -> Option<Vec<Cow<'a, str>>> {
        let raw = self.of_type(
            path,
            raw,
            JsonType::List,
            &format_args!("a list, each item {what}"),
        )?;
        let errors = self.errors.len();
        let count = raw.count();
        if let Some(len) = len.filter(|len| *len != count) {
            self.errors.push(format!(
                "{path}: must have exactly {len} items, got {count}"
            ));
        }
        let mut out = Vec::with_capacity(count);
        for (i, item) in raw.items().enumerate() {
            out.extend(self.text(&Path::Index(path, i), Some(item), valid, what));
        }
        (self.errors.len() == errors).then_some(out)
    }

    fn list<'a>(
        &mut self,
        key: &str,
        top: Value<'_, 'a>,
        default: &[&'static str],
        valid: fn(&str) -> bool,
        what: &str,
    ) -> Vec<Cow<'a, str>> {
        let raw = top.get(key).filter(|raw| !raw.is_null());
        let Some(raw) = raw else {
            return default.iter().map(|s| Cow::Borrowed(*s)).collect();
        };
        let list_of_any = &"a list (an empty list means any owner)";
        let Some(raw) = self.of_type(&key, raw, JsonType::List, list_of_any) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in raw.items().enumerate() {
            match item.as_str().filter(|s| valid(s)) {
                Some(s) => out.push(s.clone()),
                None => self
                    .errors
                    .push(format!("{key}[{i}]: must be {what}, got {}", show(item))),
            }
        }
        out
    }

    /// An `env` map (behaviour.md §1.2), sorted by name, the last of a repeated name counting.
    fn env<'a>(&mut self, path: &Path<'_>, raw: Value<'_, 'a>) -> Vec<EnvChange<'a>> {
        let must_be = &"an object of NAME: \"value\", or NAME: null to not inject NAME";
        let Some(raw) = self.of_type(path, raw, JsonType::Object, must_be) else {
            return Vec::new();
        };
        let mut changes: Vec<EnvChange<'a>> = Vec::new();
        for (name, value) in raw.members() {
            if !is_env_name(name) {
                self.errors.push(format!(
                    "{}: not a variable name; names are printable ASCII without '='",
                    Path::Entry(path, name)
                ));
                continue;
            }
            let value = match value.json_type() {
                JsonType::Null => None,
                JsonType::String => value.as_str().cloned(),
                JsonType::Number | JsonType::Bool => {
                    self.errors.push(format!(
                        "{}: must be a string or null, got {}; quote it: \"{}\"",
                        Path::Entry(path, name),
                        show(value),
                        show(value)
                    ));
                    continue;
                }
                other => {
                    self.errors.push(format!(
                        "{}: must be a string or null, got {}",
                        Path::Entry(path, name),
                        other.name()
                    ));
                    continue;
                }
            };
            // Kept sorted as it is built; a repeated name replaces the earlier value.
            let change = EnvChange {
                name: name.clone(),
                value,
            };
            match changes.binary_search_by(|c| c.name.cmp(&change.name)) {
                Ok(at) => changes[at] = change,
                Err(at) => changes.insert(at, change),
            }
        }
        changes
    }

    /// An `instanceTypes` map (behaviour.md §1.2), as its text; its rows checked if `rows` asks.
    fn instance_table<'a>(
        &mut self,
        path: &Path<'_>,
        table: Value<'_, 'a>,
        rows: Rows,
    ) -> Option<&'a RawValue> {
        let must_be = &"an object of instance type: {devicesPerNode: D, gpusPerNode: P}";
        let table = self.of_type(path, table, JsonType::Object, must_be)?;
        let text = table.as_text()?;
        if rows == Rows::All {
            // The text was read as JSON already: it reads again.
            if let Ok(tape) = read::<Tape<'a>>(text.get()) {
                for (name, entry) in tape.root().members() {
                    self.row(&Path::Entry(path, name), name, entry);
                }
            }
        }
        Some(text)
    }

    /// One row of an instance table.
    fn row<'a>(
        &mut self,
        at: &Path<'_>,
        name: &Cow<'a, str>,
        entry: Value<'_, 'a>,
    ) -> Option<InstanceType<'a>> {
        if !is_qualified_name_part(name) {
            self.errors.push(format!(
                "{at}: not an instance type; node.kubernetes.io/instance-type values are at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
            ));
            return None;
        }
        if entry.json_type() != JsonType::Object {
            self.errors.push(format!(
                "{at}: must be an object such as {{devicesPerNode: 32, gpusPerNode: 8}}, got {}",
                entry.json_type().name()
            ));
            return None;
        }
        for (key, _) in entry.members() {
            if !INSTANCE_KEYS.contains(&key.as_ref()) {
                self.unknown_key(at, key, &INSTANCE_KEYS);
            }
        }
        let mut count = |key: &str, min: u64, max: u64, what: &str| {
            let field = &Path::Key(at, key);
            match entry.get(key).filter(|raw| !raw.is_null()) {
                Some(raw) => self.whole(field, raw, min, max),
                None => {
                    self.errors.push(format!("{field}: missing; set {what}"));
                    None
                }
            }
        };
        let devices = count(
            "devicesPerNode",
            0,
            MAX_DEVICES_PER_NODE,
            "the devices the node's device plugin advertises",
        );
        let gpus = count("gpusPerNode", 1, MAX_PER_GPU, "the node's GPUs");
        let env = match entry.get("env") {
            Some(raw) => self.env(&Path::Key(at, "env"), raw),
            None => Vec::new(),
        };
        Some(InstanceType {
            name: name.clone(),
            devices: devices?,
            gpus: gpus?,
            env,
        })
    }
}

/// The row of `name` in the instance table `table` of `cloud`'s block, checked; the last of a
/// repeated type counts. The table's rows are read as text and only that row is parsed.
pub fn instance_row<'a>(
    cloud: &'static str,
    table: &'a RawValue,
    name: &str,
) -> Result<Option<InstanceType<'a>>, String> {
    let rows = crate::lenient::members(table);
    let Some((key, text)) = rows.0.iter().rev().find(|(key, _)| key == name) else {
        return Ok(None);
    };
    let tape: Tape<'a> = read(text.get()).map_err(|e| e.to_string())?;
    let mut r = Reader::default();
    let block = Path::Key(&Path::Root, cloud);
    let path = Path::Key(&block, INSTANCE_TYPES);
    match r.row(&Path::Entry(&path, key), key, tape.root()) {
        Some(row) if r.errors.is_empty() => Ok(Some(row)),
        _ => Err(SettingsError(r.errors).to_string()),
    }
}

/// Checks settings as `validate_settings` receives them.
pub fn check(text: &str) -> Result<(), SettingsError> {
    Config::read(text).map(drop)
}

/// The enabled cloud's profile under `settings`, for tests (the text is kept for good).
#[cfg(test)]
pub(crate) fn profile_of(settings: serde_json::Value) -> crate::profile::Profile<'static> {
    let text: &'static str = Box::leak(settings.to_string().into_boxed_str());
    Config::read(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .cloud
        .profile()
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
        config.cloud.profile().device.expect("a device").count
    }

    #[test]
    fn one_cloud_with_defaults() {
        with(json!({"oci": {"enabled": true}}), |config| {
            assert_eq!(config.cloud.cloud.name, "oci");
            assert_eq!(count(config), DeviceCount::PerGpu(Ratio::whole(8)));
            assert_eq!(config.common.trigger, DEFAULT_TRIGGER);
            assert_eq!(config.common.owner_kinds, DEFAULT_OWNER_KINDS);
            assert_eq!(config.common.owner_groups, DEFAULT_OWNER_GROUPS);
        });
        with(json!({"azure": {"enabled": true}}), |config| {
            let device = config.cloud.profile().device.unwrap();
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
            "aws.efaDevicesPerGpu: unknown key; the keys allowed under aws are enabled, efaDevicesPerGPU, efaLibraryPath, cpuRequest, env, capabilities, instanceTypes"
        );
        assert!(
            errors(json!({"gcp": {"enabled": true}, "tigger": "x"}))
                .contains("tigger: unknown key; the keys allowed at the top level are aws, azure, gcp, oci, triggerAnnotation")
        );
        // No device, no instance types.
        assert!(
            errors(json!({"gcp": {"enabled": true, "instanceTypes": {}}}))
                .starts_with("gcp.instanceTypes: unknown key; the keys allowed under gcp are enabled, networks, daemonImage, daemonFlags, env, capabilities")
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
            |config| assert_eq!(config.common.trigger, "example.com/multi-node"),
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
                let names: Vec<_> = config.cloud.env.iter().map(|c| c.name.as_ref()).collect();
                assert_eq!(names, ["A", "M", "Z", "Z2"]);
                assert_eq!(config.cloud.env[0].value, None);
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
    fn instance_types_need_both_counts() {
        with(
            json!({"aws": {"enabled": true, "instanceTypes": {"p4d.24xlarge": {"devicesPerNode": 4, "gpusPerNode": 8, "env": {"X": "1"}}}}}),
            |config| {
                let table = config.cloud.profile().instance_types;
                let t = table.get("p4d.24xlarge").unwrap().unwrap();
                assert_eq!((t.name.as_ref(), t.devices, t.gpus), ("p4d.24xlarge", 4, 8));
                assert_eq!(t.env.len(), 1);
                // p5 is a built-in row.
                assert_eq!(table.get("p5.48xlarge").unwrap().unwrap().devices, 32);
                assert_eq!(table.get("g5.48xlarge").unwrap(), None);
            },
        );
        // At request time a row is read when a pod names it, and a wrong one is an error then.
        let text = json!({"aws": {"enabled": true, "instanceTypes": {"x": {"devicesPerNode": "4", "gpusPerNode": 8}, "y": {"devicesPerNode": 4, "gpusPerNode": 8}}}}).to_string();
        let mut de = serde_json::Deserializer::from_str(&text);
        let tape = Tape::read_lazy(&mut de, LAZY).unwrap();
        let common = Common::from_tape(&tape).unwrap();
        let config =
            Config::from_tape(&tape, common).expect("rows are not read before a pod names them");
        let table = config.cloud.profile().instance_types;
        assert_eq!(table.get("y").unwrap().unwrap().devices, 4);
        assert_eq!(
            table.get("x").unwrap_err(),
            "aws.instanceTypes[x].devicesPerNode: must be a whole number from 0 to 1024, got \"4\""
        );
        let message = errors(json!({"aws": {"enabled": true, "instanceTypes": {
            "p5.48xlarge": {"devicesPerNode": 1025, "gpusPerNode": 0, "bogus": 1},
            "p4d.24xlarge": {"gpusPerNode": 8},
            "bad type!": {"devicesPerNode": 1, "gpusPerNode": 1}
        }}}));
        for part in [
            "aws.instanceTypes[p5.48xlarge].bogus: unknown key; the keys allowed under aws.instanceTypes[p5.48xlarge] are devicesPerNode, gpusPerNode, env",
            "aws.instanceTypes[p5.48xlarge].devicesPerNode: must be a whole number from 0 to 1024, got 1025",
            "aws.instanceTypes[p5.48xlarge].gpusPerNode: must be a whole number from 1 to 64, got 0",
            "aws.instanceTypes[p4d.24xlarge].devicesPerNode: missing",
            "aws.instanceTypes[bad type!]: not an instance type",
        ] {
            assert!(message.contains(part), "{part}\n{message}");
        }
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
                    let profile = config.cloud.profile();
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
