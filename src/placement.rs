//! Where a pod may run, and what that decides (behaviour.md §3.5, §3.6): the instance types its
//! spec names, the device count per GPU the instance table gives them, the env of their entries,
//! and the warnings when the table cannot say or the pod cannot fit.
//!
//! The fields are read leniently: a value of the wrong JSON type reads as absent, because the
//! API server refuses such a pod itself and a wrong guess costs only a warning's worth.

use std::borrow::Cow;

use serde_json::value::RawValue;

use crate::error::Rejection;
use crate::lenient::{items, members, string};
use crate::merge::{Read, expect_read};
use crate::profile::{Device, DeviceCount, EnvChange, InstanceType, Profile};
use crate::view::Object;

/// The node labels that name an instance type, the current one first.
const LABELS: [&str; 2] = [
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
];

/// What the pod's instance types decide.
#[derive(Debug)]
pub struct Placement<'a> {
    /// How many devices a GPU container gets.
    pub count: DeviceCount,
    /// The named types the table knows, in the order the pod names them.
    pub known: Vec<InstanceType<'a>>,
    /// The instance-type env entries that apply.
    pub env: Vec<EnvChange<'a>>,
    pub warnings: Vec<String>,
}

/// The instance types `spec` restricts the pod to, in the order it names them; empty when it
/// may run on any.
pub fn instance_types<'a>(spec: &Object<'a>) -> Vec<Cow<'a, str>> {
    let raw = |key| {
        expect_read(spec, key, Read::Text);
        spec.get(key).and_then(|node| node.raw())
    };
    if let Some(selector) = raw("nodeSelector").map(members) {
        if let Some(named) = LABELS
            .iter()
            .find_map(|label| selector.get(label).and_then(string))
        {
            return vec![named];
        }
    }
    raw("affinity").map(required_types).unwrap_or_default()
}

/// The union over the required node affinity's terms of the types each allows; empty when a
/// term allows any.
fn required_types(affinity: &RawValue) -> Vec<Cow<'_, str>> {
    let member = |object, key| members(object).get(key);
    let terms = member(affinity, "nodeAffinity")
        .and_then(|node| member(node, "requiredDuringSchedulingIgnoredDuringExecution"))
        .and_then(|required| member(required, "nodeSelectorTerms"))
        .map(items)
        .unwrap_or_default();
    let mut union: Vec<Cow<'_, str>> = Vec::new();
    for term in terms {
        let Some(allowed) = term_types(term) else {
            return Vec::new();
        };
        for name in allowed {
            if !union.contains(&name) {
                union.push(name);
            }
        }
    }
    union
}

/// The types one term allows: the intersection of its `In` expressions on the labels; `None`
/// when it has none.
fn term_types(term: &RawValue) -> Option<Vec<Cow<'_, str>>> {
    let expressions = members(term).get("matchExpressions").map(items)?;
    let mut allowed: Option<Vec<Cow<'_, str>>> = None;
    for expression in expressions {
        let expression = members(expression);
        let key = expression.get("key").and_then(string);
        let operator = expression.get("operator").and_then(string);
        if !key.is_some_and(|key| LABELS.contains(&key.as_ref()))
            || operator.as_deref() != Some("In")
        {
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
            None => values,
            Some(before) => before.into_iter().filter(|v| values.contains(v)).collect(),
        });
    }
    allowed
}

/// What the named `types` decide for `profile`'s `device`. An error is a settings problem in a
/// row of the instance table the pod names.
pub fn place<'a>(
    profile: &Profile<'a>,
    device: &Device<'_>,
    types: &[Cow<'_, str>],
) -> Result<Placement<'a>, Rejection> {
    // Each named type's row, read once: `None` where the table does not know it.
    let mut rows = Vec::with_capacity(types.len());
    for name in types {
        rows.push(
            profile
                .instance_types
                .get(name)
                .map_err(|message| Rejection::Settings { message })?,
        );
    }
    let mut warnings = Vec::new();
    let count = match device.count {
        DeviceCount::PerContainer(n) => DeviceCount::PerContainer(n),
        DeviceCount::PerGpu(setting) if types.is_empty() => DeviceCount::PerGpu(setting),
        DeviceCount::PerGpu(setting) => {
            let unknown: Vec<&Cow<'_, str>> = types
                .iter()
                .zip(&rows)
                .filter(|(_, row)| row.is_none())
                .map(|(name, _)| name)
                .collect();
            // With no table at all the setting is the cluster's one count, as in the chart:
            // only a table that lacks the type is worth a warning.
            if !unknown.is_empty() && !profile.instance_types.is_empty() {
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
            let worth = |row: &Option<InstanceType<'_>>| {
                row.as_ref().map_or(setting, InstanceType::per_gpu)
            };
            // The first of the smallest, so that the answer does not depend on ties.
            let mut smallest = 0;
            for (i, row) in rows.iter().enumerate().skip(1) {
                if worth(row) < worth(&rows[smallest]) {
                    smallest = i;
                }
            }
            if types.len() > 1 {
                let why = match &rows[smallest] {
                    Some(t) => format!("{:?}: {} per {} GPUs", t.name, t.devices, t.gpus),
                    None => format!("{setting} per GPU"),
                };
                let names: Vec<&Cow<'_, str>> = types.iter().collect();
                warnings.push(format!(
                    "multi-node networking: the pod may run on instance types {}; requested {} for the smallest count per GPU among them ({why}) so that it fits on each",
                    quoted(&names),
                    device.resource,
                ));
            }
            DeviceCount::PerGpu(worth(&rows[smallest]))
        }
    };
    let named = types.len();
    let known: Vec<InstanceType<'a>> = rows.into_iter().flatten().collect();
    Ok(Placement {
        count,
        env: agreed_env(&known, named),
        known,
        warnings,
    })
}

/// The env entries every named type has alike; none unless the table knows every one.
fn agreed_env<'a>(known: &[InstanceType<'a>], named: usize) -> Vec<EnvChange<'a>> {
    let Some((first, others)) = known.split_first().filter(|_| known.len() == named) else {
        return Vec::new();
    };
    first
        .env
        .iter()
        .filter(|change| others.iter().all(|t| t.env.contains(change)))
        .cloned()
        .collect()
}

/// The warnings for known types whose nodes have fewer devices than the pod requests in all.
pub fn over_capacity(placement: &Placement<'_>, resource: &str, devices: u64) -> Vec<String> {
    placement
        .known
        .iter()
        .filter(|t| devices > t.devices)
        .map(|t| {
            format!(
                "multi-node networking: the pod requests {devices} {resource} in all, more than the {} a {:?} node has; it cannot be scheduled there",
                t.devices, t.name
            )
        })
        .collect()
}

/// `"a", "b"`
fn quoted(names: &[&Cow<'_, str>]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    quoted.join(", ")
}
