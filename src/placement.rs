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
/// required node affinity) and the label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LabelSource {
    pub field: &'static str,
    pub label: &'static str,
}

/// The values of `labels` (the first a node selector has, else the union over the required node
/// affinity's terms) that `spec` restricts the pod to, in the order it names them, and where it
/// names them; empty when it may run on any.
pub fn labelled<'a>(
    spec: &Object<'a>,
    labels: &[&'static str],
) -> (Vec<Cow<'a, str>>, Option<LabelSource>) {
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
) -> (Vec<Cow<'r, str>>, Option<LabelSource>) {
    let member = |object, key| members(object).get(key);
    let terms = member(affinity, "nodeAffinity")
        .and_then(|node| member(node, "requiredDuringSchedulingIgnoredDuringExecution"))
        .and_then(|required| member(required, "nodeSelectorTerms"))
        .map(items)
        .unwrap_or_default();
    let mut union: Vec<Cow<'_, str>> = Vec::new();
    let mut source = None;
    for term in terms {
        let Some((allowed, label)) = term_types(term, labels) else {
            return (Vec::new(), None);
        };
        if !allowed.is_empty() {
            source.get_or_insert(LabelSource {
                field: "affinity",
                label,
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

/// The types one term allows, the intersection of its `In` expressions on the labels, and the
/// label of its first such expression; `None` when it has none.
fn term_types<'r>(
    term: &'r RawValue,
    labels: &[&'static str],
) -> Option<(Vec<Cow<'r, str>>, &'static str)> {
    let expressions = members(term).get("matchExpressions").map(items)?;
    let mut allowed: Option<(Vec<Cow<'_, str>>, &'static str)> = None;
    for expression in expressions {
        let expression = members(expression);
        let key = expression.get("key").and_then(string);
        let operator = expression.get("operator").and_then(string);
        let Some(label) = labels.iter().find(|l| key.as_deref() == Some(**l)) else {
            continue;
        };
        if operator.as_deref() != Some("In") {
            continue;
        }
        let values: Vec<Cow<'_, str>> = expression
            .get("values")
            .map(items)
            .unwrap_or_default()
            .into_iter()
            .filter_map(string)
            .collect();
        allowed = Some(match allowed {
            None => (values, *label),
            Some((before, first)) => (
                before.into_iter().filter(|v| values.contains(v)).collect(),
                first,
            ),
        });
    }
    allowed
}

/// What the named types, with their `rows`, decide for the profile's `device`.
pub fn place(
    settings: &CloudSettings<'_>,
    device: &Device<'_>,
    rows: &[(Cow<'_, str>, Option<Row<'_>>)],
) -> Placement {
    let resource = Some(device.resource.as_ref());
    let plugin = settings.cloud.plugin;
    let mut warnings = Vec::new();
    let worths: Vec<Option<Ratio>> = rows
        .iter()
        .map(|(_, row)| row.as_ref().and_then(|row| row.per_gpu(resource, plugin)))
        .collect();
    let count = match device.count {
        DeviceCount::PerContainer(n) => DeviceCount::PerContainer(n),
        DeviceCount::PerGpu(setting) if rows.is_empty() => DeviceCount::PerGpu(setting),
        DeviceCount::PerGpu(setting) => {
            let unknown: Vec<&Cow<'_, str>> = rows
                .iter()
                .zip(&worths)
                .filter(|(_, worth)| worth.is_none())
                .map(|((name, _), _)| name)
                .collect();
            // With no table at all the setting is the cluster's one count, as in the chart:
            // only a table that lacks the type is worth a warning.
            if !unknown.is_empty() && settings.counts(resource) {
                let (named, it) = match unknown.len() {
                    1 => (format!("type {} has", quoted(&unknown)), "it"),
                    _ => (format!("types {} have", quoted(&unknown)), "them"),
                };
                warnings.push(format!(
                    "multi-node networking: instance {named} no entry for {} in the policy's table; requested {setting} per GPU ({}.{}); add {it} under {}.instanceTypes",
                    device.resource,
                    device.cloud,
                    device.per_gpu_key,
                    device.cloud,
                ));
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
                let why = match (&rows[smallest].1, worths[smallest]) {
                    (Some(row), Some(_)) => format!(
                        "{:?}: {} per {} GPUs",
                        row.name,
                        row.devices(resource, plugin).unwrap_or(0),
                        row.gpus.unwrap_or(0)
                    ),
                    _ => format!("{setting} per GPU"),
                };
                let names: Vec<&Cow<'_, str>> = rows.iter().map(|(name, _)| name).collect();
                warnings.push(format!(
                    "multi-node networking: the pod may run on instance types {}; requested {} for the smallest count per GPU among them ({why}) so that it fits on each",
                    quoted(&names),
                    device.resource,
                ));
            }
            DeviceCount::PerGpu(worth(smallest))
        }
    };
    let known = rows
        .iter()
        .filter_map(|(_, row)| {
            let row = row.as_ref()?;
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

/// `"a", "b"`
fn quoted(names: &[&Cow<'_, str>]) -> String {
    let mut quoted = String::new();
    for (at, name) in names.iter().enumerate() {
        if at > 0 {
            quoted.push_str(", ");
        }
        quoted.push_str(&format!("{name:?}"));
    }
    quoted
}
