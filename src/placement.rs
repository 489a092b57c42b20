//! Where a pod may run, and what that decides for its devices (behaviour.md §3.5): the values of
//! the node labels its spec requires, the device count per GPU the instance table gives the
//! instance types among them, and the warnings when the table cannot say or the pod cannot fit.
//!
//! The fields are read leniently: a value of the wrong JSON type reads as absent, because the
//! API server refuses such a pod itself and a wrong guess costs only a warning's worth.

use std::borrow::Cow;

use serde_json::value::RawValue;

use crate::json::lenient::{items, members, string};
use crate::json::object::Object;
use crate::merge::{Read, expect_read};
use crate::profile::{Device, DeviceCount};
use crate::ratio::Ratio;
use crate::settings::{CloudSettings, Row};

/// The node labels that name an instance type, the current one first.
pub const INSTANCE_TYPE_LABELS: [&str; 2] = [
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
];

/// A machine the pod may run on: a row key (an instance type) with its row where the table has
/// one, or a node pool the settings do not map, which may hold any machine.
#[derive(Debug)]
pub struct Candidate<'a> {
    /// The row key, or the unmapped pool's name (its label's value).
    pub name: Cow<'a, str>,
    pub row: Option<Row<'a>>,
    /// The label of the unmapped pool `name` is.
    pub pool: Option<String>,
}

/// What the pod's instance types decide for its devices.
#[derive(Debug)]
pub struct Placement {
    /// How many devices a GPU container gets.
    pub count: DeviceCount,
    /// The devices on one node of each named type whose count the table knows.
    pub known: Vec<(String, u64)>,
    pub warnings: Vec<String>,
}

/// Where a pod's spec names the values of a label: the field (`nodeSelector` or `affinity`, its
/// required node affinity) and the label (a pool's may be one the settings name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelSource<'a> {
    pub field: &'static str,
    pub label: Cow<'a, str>,
}

/// The values of `labels` (the first a node selector has, else the union over the required node
/// affinity's terms) that `spec` restricts the pod to, in the order it names them, and where it
/// names them; empty when it may run on any.
pub fn labelled<'a>(
    spec: &Object<'a>,
    labels: &[&'static str],
) -> (Vec<Cow<'a, str>>, Option<LabelSource<'static>>) {
    let raw = |key| {
        expect_read(spec, key, Read::Text);
        spec.get(key).and_then(|node| node.raw())
    };
    if let Some(selector) = raw("nodeSelector").map(members) {
        if let Some((label, named)) = labels
            .iter()
            .find_map(|label| Some((*label, selector.get(label).and_then(string)?)))
        {
            let field = "nodeSelector";
            let label = Cow::Borrowed(label);
            return (vec![named], Some(LabelSource { field, label }));
        }
    }
    raw("affinity")
        .map(|affinity| required_types(affinity, labels))
        .unwrap_or_default()
}

/// The union over the required node affinity's terms of the types each allows, and the label of
/// the first expression that allows some; empty when a term allows any.
fn required_types<'r>(
    affinity: &'r RawValue,
    labels: &[&'static str],
) -> (Vec<Cow<'r, str>>, Option<LabelSource<'static>>) {
    let terms = required_terms(affinity);
    let mut union: Vec<Cow<'_, str>> = Vec::new();
    let mut source = None;
    for term in terms {
        let Some((allowed, label)) = term_types(term, labels) else {
            return (Vec::new(), None);
        };
        if !allowed.is_empty() {
            source.get_or_insert(LabelSource {
                field: "affinity",
                label: Cow::Borrowed(label),
            });
        }
        for name in allowed {
            if !union.contains(&name) {
                union.push(name);
            }
        }
    }
    (union, source)
}

/// The terms of a required node affinity.
pub(crate) fn required_terms(affinity: &RawValue) -> Vec<&RawValue> {
    let member = |object, key| members(object).get(key);
    member(affinity, "nodeAffinity")
        .and_then(|node| member(node, "requiredDuringSchedulingIgnoredDuringExecution"))
        .and_then(|required| member(required, "nodeSelectorTerms"))
        .map(items)
        .unwrap_or_default()
}

/// The `In` expressions of one term on `labels`, in order: each label's index and the values it
/// allows.
pub(crate) fn term_entries<'r, L: AsRef<str>>(
    term: &'r RawValue,
    labels: &[L],
) -> Vec<(usize, Vec<Cow<'r, str>>)> {
    let expressions = members(term).get("matchExpressions").map(items);
    let mut entries = Vec::new();
    for expression in expressions.unwrap_or_default() {
        let expression = members(expression);
        let key = expression.get("key").and_then(string);
        let operator = expression.get("operator").and_then(string);
        let Some(at) = labels
            .iter()
            .position(|l| key.as_deref() == Some(l.as_ref()))
        else {
            continue;
        };
        if operator.as_deref() != Some("In") {
            continue;
        }
        let values = expression.get("values").map(items).unwrap_or_default();
        entries.push((at, values.into_iter().filter_map(string).collect()));
    }
    entries
}

/// The types one term allows, the intersection of its `In` expressions on the labels, and the
/// label of its first such expression; `None` when it has none.
fn term_types<'r>(
    term: &'r RawValue,
    labels: &[&'static str],
) -> Option<(Vec<Cow<'r, str>>, &'static str)> {
    let mut entries = term_entries(term, labels).into_iter();
    let (first, mut allowed) = entries.next()?;
    for (_, values) in entries {
        allowed.retain(|v| values.contains(v));
    }
    Some((allowed, labels[first]))
}

/// What the named machines, with their `rows`, decide for the profile's `device`.
pub fn place(
    settings: &CloudSettings<'_>,
    device: &Device<'_>,
    rows: &[Candidate<'_>],
) -> Placement {
    let resource = Some(device.resource.as_ref());
    let plugin = settings.cloud.plugin;
    let mut warnings = Vec::new();
    let worths: Vec<Option<Ratio>> = rows
        .iter()
        .map(|c| c.row.as_ref().and_then(|row| row.per_gpu(resource, plugin)))
        .collect();
    let count = match device.count {
        DeviceCount::PerContainer(n) => DeviceCount::PerContainer(n),
        DeviceCount::PerGpu(setting) if rows.is_empty() => DeviceCount::PerGpu(setting),
        DeviceCount::PerGpu(setting) => {
            // With no table at all the setting is the cluster's one count, as in the chart:
            // only a table that lacks the machine is worth a warning.
            if settings.counts(resource) {
                warnings.extend(unknown_warnings(device, setting, rows, &worths));
            }
            let worth = |i: usize| worths[i].unwrap_or(setting);
            // The first of the smallest, so that the answer does not depend on ties.
            let mut smallest = 0;
            for i in 1..rows.len() {
                if worth(i) < worth(smallest) {
                    smallest = i;
                }
            }
            if rows.len() > 1 {
                let why = match (&rows[smallest].row, worths[smallest]) {
                    (Some(row), Some(_)) => format!(
                        "{:?}: {} per {} GPUs",
                        row.name,
                        row.devices(resource, plugin).unwrap_or(0),
                        row.gpus.unwrap_or(0)
                    ),
                    _ => format!("{setting} per GPU"),
                };
                warnings.push(format!(
                    "multi-node networking: the pod may run on instance types {}; requested {} for the smallest count per GPU among them ({why}) so that it fits on each",
                    quoted(rows),
                    device.resource,
                ));
            }
            DeviceCount::PerGpu(worth(smallest))
        }
    };
    let known = rows
        .iter()
        .filter_map(|c| {
            let row = c.row.as_ref()?;
            row.per_gpu(resource, plugin)?;
            Some((row.name.to_string(), row.devices(resource, plugin)?))
        })
        .collect();
    Placement {
        count,
        known,
        warnings,
    }
}

/// The warnings for named machines the table does not count: the instance types in one, each
/// node pool the settings do not map in one of its own.
fn unknown_warnings(
    device: &Device<'_>,
    setting: Ratio,
    rows: &[Candidate<'_>],
    worths: &[Option<Ratio>],
) -> Vec<String> {
    let unknown = || rows.iter().zip(worths).filter(|(_, w)| w.is_none());
    let (cloud, key) = (device.cloud, device.per_gpu_key);
    let types: Vec<&Candidate<'_>> = unknown()
        .map(|(c, _)| c)
        .filter(|c| c.pool.is_none())
        .collect();
    let mut warnings = Vec::new();
    if !types.is_empty() {
        let (named, it) = match types.len() {
            1 => (format!("type {} has", quoted(&types)), "it"),
            _ => (format!("types {} have", quoted(&types)), "them"),
        };
        warnings.push(format!(
            "multi-node networking: instance {named} no entry for {} in the policy's table; requested {setting} per GPU ({cloud}.{key}); add {it} under {cloud}.instanceTypes",
            device.resource,
        ));
    }
    for (c, _) in unknown() {
        if let Some(label) = &c.pool {
            warnings.push(format!(
                "multi-node networking: node pool {:?} ({label}) has no entry in {cloud}.pools; requested {setting} per GPU ({cloud}.{key}); add it under {cloud}.pools[{label}] with its machine, and that machine under {cloud}.instanceTypes if the policy does not know it",
                c.name
            ));
        }
    }
    warnings
}

/// The warnings for known types whose nodes have fewer devices than the pod requests in all.
pub fn over_capacity(placement: &Placement, resource: &str, devices: u64) -> Vec<String> {
    placement
        .known
        .iter()
        .filter(|(_, on_node)| devices > *on_node)
        .map(|(name, on_node)| {
            format!(
                "multi-node networking: the pod requests {devices} {resource} in all, more than the {on_node} a {name:?} node has; it cannot be scheduled there"
            )
        })
        .collect()
}

/// `"a", "b"`; a node pool the settings do not map as `"p" (node pool of <label>)`.
fn quoted<'c, C: std::borrow::Borrow<Candidate<'c>>>(names: &[C]) -> String {
    let mut quoted = String::new();
    for (at, c) in names.iter().enumerate() {
        let c = c.borrow();
        if at > 0 {
            quoted.push_str(", ");
        }
        quoted.push_str(&format!("{:?}", c.name));
        if let Some(label) = &c.pool {
            quoted.push_str(&format!(" (node pool of {label})"));
        }
    }
    quoted
}
