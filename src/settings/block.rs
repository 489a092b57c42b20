//! A cloud's settings block and its instance rows, which may set any of the block's keys
//! (behaviour.md §1.2, §1.3): both are read into an [`Overlay`] by the same reader, which knows
//! the keys from the cloud's data alone.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::pools::POOLS;
use super::reader::{Reader, show};
use super::{INSTANCE_TYPES, MAX_PER_GPU, Rows, UserRow};
use crate::clouds::{Cloud, DEVICE_CLAIM_KEY, Fabric, Param};
use crate::error::{Path, join};
use crate::json::JsonType;
use crate::json::lenient::read;
use crate::json::tape::{Tape, Value};
use crate::k8s::names::{is_capability, is_qualified_name_part};
use crate::layers::{Overlay, Set};
use crate::merge::same_capability;
use crate::profile::Network;
use crate::ratio::Ratio;

const ENABLED: &str = "enabled";
const FABRIC: &str = "fabric";
const ENV: &str = "env";
const CAPABILITIES: &str = "capabilities";
const PIN_TRANSPORT: &str = "pinTransport";
pub(super) const DEVICES_PER_NODE: &str = "devicesPerNode";
const GPUS_PER_NODE: &str = "gpusPerNode";
/// A row's word on whether its machine is part of a multi-node NVLink domain (behaviour.md §3.11).
const MULTI_NODE_NVLINK: &str = "multiNodeNVLink";
const MAX_DEVICES_PER_NODE: u64 = 1024;

/// Where a block of a cloud's keys is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// The cloud's own block: `enabled`, and `instanceTypes`.
    Cloud,
    /// An instance row: `devicesPerNode` and `gpusPerNode`.
    Row,
}

impl Reader {
    /// The keys allowed in a block at `place`, in the order messages list them.
    fn allowed(cloud: &Cloud, place: Place) -> Vec<&'static str> {
        let mut allowed = match place {
            Place::Cloud => vec![ENABLED],
            Place::Row => vec![DEVICES_PER_NODE, GPUS_PER_NODE, MULTI_NODE_NVLINK],
        };
        if cloud.fabrics.len() > 1 {
            allowed.push(FABRIC);
        }
        allowed.extend(cloud.own_keys().iter().map(|k| k.name));
        if place == Place::Cloud && cloud.node_counts {
            allowed.extend([DEVICES_PER_NODE, GPUS_PER_NODE]);
        }
        allowed.extend(cloud.fabrics.iter().filter_map(|f| f.block.or(f.env_block)));
        allowed.extend([ENV, CAPABILITIES, PIN_TRANSPORT]);
        if place == Place::Cloud {
            allowed.extend([INSTANCE_TYPES, POOLS]);
        }
        allowed
    }

    /// Everything a block of `cloud`'s keys at `path` sets.
    pub(super) fn overlay<'a>(
        &mut self,
        cloud: &'static Cloud,
        path: &Path<'_>,
        block: Value<'_, 'a>,
        place: Place,
    ) -> Overlay<'a> {
        let allowed = Reader::allowed(cloud, place);
        for (key, _) in block.members() {
            if !allowed.contains(&key.as_ref()) {
                self.not_here(cloud, path, path, key, &allowed);
            }
        }
        let mut overlay = Overlay {
            fabric: block
                .get(FABRIC)
                .filter(|_| cloud.fabrics.len() > 1)
                .and_then(|raw| self.fabric(cloud, &Path::Key(path, FABRIC), raw)),
            env: match block.get(ENV) {
                Some(raw) => self.env(&Path::Key(path, ENV), raw),
                None => Vec::new(),
            },
            capabilities: match block.get(CAPABILITIES) {
                Some(raw) => self.capabilities(&Path::Key(path, CAPABILITIES), raw),
                None => Vec::new(),
            },
            pin_transport: self.switch(path, block, PIN_TRANSPORT),
            ..Overlay::default()
        };
        for fabric in cloud.fabrics.iter().copied() {
            if fabric.block.is_none() {
                self.keys(fabric, path, block, &mut overlay.set);
                if place == Place::Cloud && cloud.node_counts {
                    self.node_counts(fabric, path, block, &mut overlay.set);
                }
            }
            // The fabric's own block: its keys where they are not the cloud block's, and its env.
            let Some(name) = fabric.block.or(fabric.env_block) else {
                continue;
            };
            let Some(raw) = block.get(name) else {
                continue;
            };
            let at = &Path::Key(path, name);
            let must_be = &"an object of the fabric's keys";
            let Some(inner) = self.of_type(at, raw, JsonType::Object, must_be) else {
                continue;
            };
            let own_keys = if fabric.block.is_some() {
                fabric.keys
            } else {
                &[]
            };
            let mut allowed: Vec<&str> = own_keys.iter().map(|k| k.name).collect();
            allowed.push(ENV);
            for (key, _) in inner.members() {
                if !allowed.contains(&key.as_ref()) {
                    self.not_here(cloud, path, at, key, &allowed);
                }
            }
            if fabric.block.is_some() {
                self.keys(fabric, at, inner, &mut overlay.set);
            }
            if let Some(raw) = inner.get(ENV) {
                let env = self.env(&Path::Key(at, ENV), raw);
                overlay.fabric_env.push((fabric, env));
            }
        }
        overlay
    }

    /// A key not allowed at `at` (in `block`, a block of the cloud's keys): unknown, or a
    /// `deviceClaim` in the keys of a fabric that no DRA driver serves, which is told where it goes.
    fn not_here(
        &mut self,
        cloud: &Cloud,
        block: &Path<'_>,
        at: &Path<'_>,
        key: &str,
        allowed: &[&str],
    ) {
        let home = cloud
            .fabrics
            .iter()
            .filter(|f| f.key(DEVICE_CLAIM_KEY).is_some())
            .find_map(|f| f.block);
        match home {
            Some(home) if key == DEVICE_CLAIM_KEY => self.errors.push(format!(
                "{}: no DRA driver is documented for this fabric; set it in {} for the fabric that has one",
                Path::Key(at, key),
                Path::Key(block, home)
            )),
            _ => self.unknown_key(at, key, allowed),
        }
    }

    /// The keys of `fabric` that `block` sets.
    fn keys<'a>(
        &mut self,
        fabric: &'static Fabric,
        path: &Path<'_>,
        block: Value<'_, 'a>,
        set: &mut Vec<Set<'a>>,
    ) {
        let before = set.len();
        for key in fabric.keys {
            let Some(raw) = block.get(key.name) else {
                continue;
            };
            if let Some(param) = self.param(&Path::Key(path, key.name), key.kind, raw) {
                set.push(Set { fabric, key, param });
            }
        }
        let named = |name: &str| set[before..].iter().any(|s| s.key.name == name);
        for (a, b) in fabric.exclusive {
            if named(a) && named(b) {
                self.both_set(path, a, b);
            }
        }
        self.networks_once(path, &set[before..]);
    }

    /// A network of `networks` that is also the block's `network` or a rail's: the Multus list
    /// is extended to hold each network the times wanted, in order (behaviour.md §3.9), so the
    /// pod would get it once per device and not once more, fewer than the two keys promise.
    fn networks_once(&mut self, path: &Path<'_>, set: &[Set<'_>]) {
        let mut per_device = Vec::new();
        let mut per_pod: &[Network<'_>] = &[];
        for s in set {
            match &s.param {
                Param::Network(network) => per_device.push((s.key.name, network)),
                Param::Rails(rails) => {
                    per_device.extend(rails.iter().map(|r| (s.key.name, &r.network)));
                }
                Param::Networks(networks) => per_pod = networks,
                _ => {}
            }
        }
        for (at, network) in per_pod.iter().enumerate() {
            if let Some((key, _)) = per_device.iter().find(|(_, n)| n.same_attachment(network)) {
                self.errors.push(format!(
                    "{}: {} is attached once per device through {} already; list it in one of them",
                    Path::Index(&Path::Key(path, "networks"), at),
                    network.0,
                    Path::Key(path, key)
                ));
            }
        }
    }

    /// Two keys of `path` set that count one device two ways.
    fn both_set(&mut self, path: &Path<'_>, a: &str, b: &str) {
        self.errors.push(format!(
            "{} and {} cannot both be set; keep the one that matches the cluster's device plugin",
            Path::Key(path, a),
            Path::Key(path, b)
        ));
    }

    /// A block's `devicesPerNode` with `gpusPerNode`: every node's devices shared by its GPUs, as
    /// a row gives them for its machine, set as the per-GPU count they make.
    fn node_counts<'a>(
        &mut self,
        fabric: &'static Fabric,
        path: &Path<'_>,
        block: Value<'_, 'a>,
        set: &mut Vec<Set<'a>>,
    ) {
        let mut count = |key: &str, min: u64, max: u64| {
            let raw = block.get(key).filter(|raw| !raw.is_null())?;
            self.whole(&Path::Key(path, key), raw, min, max)
        };
        let devices = count(DEVICES_PER_NODE, 1, MAX_DEVICES_PER_NODE);
        let gpus = count(GPUS_PER_NODE, 1, MAX_PER_GPU);
        let given = |key| block.get(key).is_some_and(|v| !v.is_null());
        let (beside, missing) = match (given(DEVICES_PER_NODE), given(GPUS_PER_NODE)) {
            (true, false) => (DEVICES_PER_NODE, GPUS_PER_NODE),
            (false, true) => (GPUS_PER_NODE, DEVICES_PER_NODE),
            (false, false) => return,
            (true, true) => ("", ""),
        };
        if !missing.is_empty() {
            let what = if missing == GPUS_PER_NODE {
                "GPUs"
            } else {
                "devices"
            };
            self.errors.push(format!(
                "{}: missing; set the node's {what} beside {beside}",
                Path::Key(path, missing)
            ));
            return;
        }
        let per_gpu = fabric
            .keys
            .iter()
            .find(|k| matches!(k.kind, crate::clouds::Kind::PerGpu { .. }));
        for other in set.iter().filter(|s| s.fabric == fabric) {
            if matches!(
                other.param,
                Param::PerGpu(_) | Param::Whole(_) | Param::Rails(_)
            ) {
                self.both_set(path, DEVICES_PER_NODE, other.key.name);
                return;
            }
        }
        let (Some(devices), Some(gpus), Some(key)) = (devices, gpus, per_gpu) else {
            return;
        };
        if let Some(ratio) = Ratio::new(devices, gpus) {
            let param = Param::PerGpu(ratio);
            set.push(Set { fabric, key, param });
        }
    }

    fn fabric(
        &mut self,
        cloud: &'static Cloud,
        path: &Path<'_>,
        raw: Value<'_, '_>,
    ) -> Option<&'static Fabric> {
        if raw.is_null() {
            return None;
        }
        let fabric = raw.as_str().and_then(|name| cloud.fabric(name));
        if fabric.is_none() {
            let names: Vec<&str> = cloud.fabrics.iter().map(|f| f.name).collect();
            self.errors.push(format!(
                "{path}: must be one of {}, got {}",
                join(&names, ", "),
                show(raw)
            ));
        }
        fabric
    }

    /// The capabilities, each written without a `CAP_` prefix. containerd prepends `CAP_` to
    /// every name of `capabilities.add` (`WithCapabilities` in containerd's
    /// `internal/cri/opts/spec_linux_opts.go`: `"CAP_"+strings.ToUpper(c)`), so a written
    /// `CAP_IPC_LOCK` becomes `CAP_CAP_IPC_LOCK`, which grants nothing; CRI-O adds the prefix
    /// only where it is missing. The bare name means the same to both, and settings that spelt
    /// it with the prefix keep loading. `ALL` is refused in any spelling: containerd grants
    /// every capability for it, and CRI-O refuses `CAP_ALL` as an unknown capability.
    fn capabilities<'a>(&mut self, path: &Path<'_>, raw: Value<'_, 'a>) -> Vec<Cow<'a, str>> {
        let names = self
            .strings(
                path,
                raw,
                None,
                |c| {
                    is_capability(bare(c))
                        && !same_capability(c, "SYS_ADMIN")
                        && !same_capability(c, "ALL")
                },
                CAPABILITY,
            )
            .unwrap_or_default();
        names.into_iter().map(without_prefix).collect()
    }

    /// An `instanceTypes` map (behaviour.md §1.2), as its text; its rows checked if `rows` asks.
    pub(super) fn instance_table<'a>(
        &mut self,
        cloud: &'static Cloud,
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
                    self.row(cloud, &Path::Entry(path, name), name, entry);
                }
            }
        }
        Some(text)
    }

    /// One row of an instance table, as the settings write it.
    pub(super) fn row<'a>(
        &mut self,
        cloud: &'static Cloud,
        at: &Path<'_>,
        name: &Cow<'a, str>,
        entry: Value<'_, 'a>,
    ) -> Option<UserRow<'a>> {
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
        let errors = self.errors.len();
        let overlay = self.overlay(cloud, at, entry, Place::Row);
        let mut count = |key: &str, min: u64, max: u64| {
            let raw = entry.get(key).filter(|raw| !raw.is_null())?;
            self.whole(&Path::Key(at, key), raw, min, max)
        };
        let devices = count(DEVICES_PER_NODE, 0, MAX_DEVICES_PER_NODE);
        let gpus = count(GPUS_PER_NODE, 1, MAX_PER_GPU);
        let nvlink = self.switch(at, entry, MULTI_NODE_NVLINK);
        // A count of devices is one per node: it needs the node's GPUs, the row's or the
        // built-in row's.
        let known_gpus = gpus.is_some() || cloud.machine(name).is_some();
        if entry.get(DEVICES_PER_NODE).is_some_and(|d| !d.is_null()) && !known_gpus {
            self.errors.push(format!(
                "{}: missing; set the node's GPUs beside {DEVICES_PER_NODE}",
                Path::Key(at, GPUS_PER_NODE)
            ));
        }
        (self.errors.len() == errors).then_some(UserRow {
            devices,
            gpus,
            nvlink,
            overlay,
        })
    }
}

/// What `capabilities` must hold (behaviour.md §1.4).
const CAPABILITY: &str = "a capability name such as IPC_LOCK (letters, digits and '_'), not ALL in any spelling (containerd grants every capability for it, CRI-O refuses CAP_ALL): list the ones the job needs, and not SYS_ADMIN in any spelling, which allowPrivilegeEscalation: false cannot hold back (the API server refuses CAP_SYS_ADMIN beside it): grant it in the pod spec";

/// `name` without a leading `CAP_` in any case (`CAP_` alone is no name then).
fn bare(name: &str) -> &str {
    match name.get(..4) {
        Some(prefix) if prefix.eq_ignore_ascii_case("CAP_") => &name[4..],
        _ => name,
    }
}

/// `name` as [`bare`] gives it.
fn without_prefix(name: Cow<'_, str>) -> Cow<'_, str> {
    match name {
        Cow::Borrowed(text) => Cow::Borrowed(bare(text)),
        Cow::Owned(text) => Cow::Owned(bare(&text).to_owned()),
    }
}
