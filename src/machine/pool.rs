//! The node pools a pod selects (behaviour.md §3.5): the values of the pool labels (the built-in
//! ones and those the settings map) in its node selector, else in its required node affinity, and
//! the machines the settings' `pools` give them. A pod that names an instance type is read by
//! its type alone; this is for the pods that pick their nodes by pool.
//!
//! Within the node selector, or one affinity term, every recognised entry must hold, so their
//! machines intersect; across terms they add up; a term without one means "anywhere", and the pod
//! names no machine. A pool the settings do not map may hold any machine: beside a mapped one in
//! the same term it narrows nothing, and alone it is an unknown machine.

use std::borrow::Cow;

use serde_json::value::RawValue;

use crate::json::lenient::{members, string};
use crate::json::object::Object;
use crate::merge::{Read, expect_read};
use crate::placement::{LabelSource, required_terms, term_entries};
use crate::settings::Pools;

/// What the pools a pod selects say of its machines.
#[derive(Debug, Default)]
pub struct Pooled<'a> {
    /// The machines (row keys) of the pools it may run in, each once, in the order named.
    pub machines: Vec<Cow<'a, str>>,
    /// The pools it may run in that the settings do not map: `(label, value)`.
    pub unknown: Vec<(String, String)>,
    /// Where the first pool label it selects by is.
    pub source: Option<LabelSource<'a>>,
}

/// One selector entry on a pool label: the label and the values it allows.
type Entry<'r> = (String, Vec<Cow<'r, str>>);

/// The pools `spec` selects, by `pools`.
pub fn pooled<'a>(pools: &Pools<'a>, spec: &Object<'_>) -> Pooled<'a> {
    let labels = pools.labels();
    let raw = |key| {
        expect_read(spec, key, Read::Text);
        spec.get(key).and_then(|node| node.raw())
    };
    let selector: Vec<Entry<'_>> = raw("nodeSelector")
        .map(|selector| {
            let selector = members(selector);
            labels
                .iter()
                .filter_map(|l| Some(((*l).to_owned(), vec![selector.get(l).and_then(string)?])))
                .collect()
        })
        .unwrap_or_default();
    let (terms, field) = if selector.is_empty() {
        let terms = raw("affinity").map_or_else(Vec::new, |a| affinity_terms(a, &labels));
        (terms, "affinity")
    } else {
        (vec![selector], "nodeSelector")
    };
    let mut out = Pooled::default();
    if terms.iter().any(Vec::is_empty) {
        // A term the pool labels do not restrict: the pod may run anywhere.
        return out;
    }
    out.source = terms
        .first()
        .and_then(|t| t.first())
        .map(|(label, _)| LabelSource {
            field,
            label: Cow::Owned(label.clone()),
        });
    for term in &terms {
        add_term(pools, term, &mut out);
    }
    out
}

/// The entries on pool labels of each required node affinity term; a term with none is empty.
fn affinity_terms<'r>(affinity: &'r RawValue, labels: &[&str]) -> Vec<Vec<Entry<'r>>> {
    required_terms(affinity)
        .into_iter()
        .map(|term| {
            term_entries(term, labels)
                .into_iter()
                .map(|(at, values)| (labels[at].to_owned(), values))
                .collect()
        })
        .collect()
}

/// Adds the machines one term allows: the intersection of its mapped entries' machines, else
/// (every entry unmapped somewhere) the union of what its entries name.
fn add_term<'a>(pools: &Pools<'a>, term: &[Entry<'_>], out: &mut Pooled<'a>) {
    let mut narrowed: Option<Vec<Cow<'a, str>>> = None;
    let mut loose: Vec<Cow<'a, str>> = Vec::new();
    let mut unknown: Vec<(String, String)> = Vec::new();
    for (label, values) in term {
        let mut allowed: Vec<Cow<'a, str>> = Vec::new();
        let mut mapped = true;
        for value in values {
            match pools.machines(label, value) {
                Some(machines) => once(&mut allowed, machines),
                None => {
                    mapped = false;
                    unknown.push((label.clone(), value.to_string()));
                }
            }
        }
        if !mapped {
            once(&mut loose, &allowed);
            continue;
        }
        narrowed = Some(match narrowed {
            None => allowed,
            Some(before) => before.into_iter().filter(|m| allowed.contains(m)).collect(),
        });
    }
    match narrowed {
        Some(machines) => once(&mut out.machines, &machines),
        None => {
            once(&mut out.machines, &loose);
            for pool in unknown {
                if !out.unknown.contains(&pool) {
                    out.unknown.push(pool);
                }
            }
        }
    }
}

/// Appends each of `names` that `list` lacks.
fn once<'a>(list: &mut Vec<Cow<'a, str>>, names: &[Cow<'a, str>]) {
    for name in names {
        if !list.contains(name) {
            list.push(name.clone());
        }
    }
}
