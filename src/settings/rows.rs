//! Instance rows (behaviour.md §3.5): the settings' row of a type laid over its built-in row, key
//! by key; a settings row is read and checked only when a pod names its type.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::block::DEVICES_PER_NODE;
use super::reader::Reader;
use super::{CloudSettings, INSTANCE_TYPES};
use crate::clouds::{Cloud, Machine};
use crate::error::{Error, Path};
use crate::json::lenient::read;
use crate::json::tape::Tape;
use crate::layers::Overlay;
use crate::ratio::Ratio;

/// An instance row as the settings write it.
#[derive(Debug, Clone, PartialEq)]
pub struct UserRow<'a> {
    pub devices: Option<u64>,
    pub gpus: Option<u64>,
    /// `multiNodeNVLink`; unset is unknown, not "no".
    pub nvlink: Option<bool>,
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
    /// Whether the machine is part of a multi-node NVLink domain: the settings' row's word, else
    /// the built-in row's (which knows its machine either way); `None` where neither says.
    pub nvlink: Option<bool>,
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
    /// Whether any row counts devices of `resource`: without one the per-GPU setting is the
    /// cluster's one count, as in the chart. A settings row counts where it gives
    /// `devicesPerNode`; one that sets only env or keys does not.
    pub fn counts(&self, resource: Option<&str>) -> bool {
        use crate::json::lenient::members;
        let counted = |row: &RawValue| {
            members(row)
                .get(DEVICES_PER_NODE)
                .is_some_and(|d| d.get() != "null")
        };
        let settings = self
            .instance_types
            .is_some_and(|t| members(t).0.iter().any(|(_, row)| counted(row)));
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
                nvlink: Some(machine.nvlink_domain),
                overlay: facts,
            }),
            (Some((key, users)), machine) => Some(Row {
                name: key,
                machine,
                devices: users.devices,
                gpus: users.gpus.or(machine.map(|m| m.gpus)),
                nvlink: users.nvlink.or(machine.map(|m| m.nvlink_domain)),
                overlay: users.overlay.over(facts),
            }),
        })
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
