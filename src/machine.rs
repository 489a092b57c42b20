//! The pod's machine (behaviour.md §3.7): the instance types its spec names, else the machines of
//! the node pools it selects ([`pool`]), else the GPU model it names on GKE, each looked up in the
//! cloud's instance table; what they agree on decides the
//! fabric and the row that changes the injection, and what they cannot agree on is a warning.

use std::borrow::Cow;

use crate::clouds::{ACCELERATOR_LABEL, Fabric};
use crate::error::{Error, join};
use crate::json::object::Object;
use crate::layers::Overlay;
use crate::merge::{Read, expect_read};
use crate::placement::{Candidate, INSTANCE_TYPE_LABELS, LabelSource, labelled};
use crate::settings::{CloudSettings, Row};
use pool::pooled;

mod pool;

/// What the pod's spec says about the node it will run on: its candidate machines and what they
/// agree on (a vendor's row is a [`crate::clouds::Machine`]).
#[derive(Debug)]
pub struct NodeFacts<'a> {
    /// The machines it names (its instance types, or its pools' machines and unmapped pools),
    /// each with its row where the table has one; empty when it names none.
    pub rows: Vec<Candidate<'a>>,
    /// The fabric to inject; `None` when none can be (the warnings say why).
    pub fabric: Option<&'static Fabric>,
    /// The rows' layer of settings: what all of them set alike.
    pub overlay: Overlay<'a>,
    /// The node's GPUs and NICs where every candidate machine knows them (the fewest).
    pub gpus: Option<u64>,
    pub nics: Option<u64>,
    /// Some candidate machine is part of a multi-node NVLink domain (its row says so).
    pub nvlink_domain: bool,
    /// Some candidate machine is known not to be: a ComputeDomain's channel could never be
    /// allocated there (behaviour.md §3.11). A machine no row speaks for is neither.
    pub without_nvlink: bool,
    /// The fabric's volumes the pod does without: a DRA-only machine's (behaviour.md §3.8).
    pub dra_without: &'static [&'static str],
    /// The one machine the pod names, where the table has its row, and where the spec names it:
    /// the record's `machine` (behaviour.md §2.1).
    pub named: Option<(Cow<'a, str>, LabelSource<'a>)>,
    pub warnings: Vec<String>,
}

/// Reads the machine of the pod whose spec is `spec`; `own_claim`: the pod's own DRA claim brings
/// its fabric (behaviour.md §3.10). An error is a settings problem in a row of the instance table
/// the pod names.
pub fn of<'a>(
    settings: &CloudSettings<'a>,
    spec: &Object<'_>,
    own_claim: bool,
) -> Result<NodeFacts<'a>, Error> {
    let named = candidates(settings, spec);
    let mut rows = Vec::with_capacity(named.types.len() + named.pools.len());
    for name in named.types {
        let row = settings.row(&name)?;
        rows.push(Candidate {
            name,
            row,
            pool: None,
        });
    }
    rows.extend(named.pools.into_iter().map(|(label, value)| Candidate {
        name: Cow::Owned(value),
        row: None,
        pool: Some(label),
    }));
    let known: Vec<&Row<'a>> = rows.iter().filter_map(|c| c.row.as_ref()).collect();
    let every_one_known =
        known.len() == rows.len() && named.fabric_only.iter().all(Option::is_some);
    let overlay = if every_one_known {
        let overlays: Vec<&Overlay<'a>> = known.iter().map(|row| &row.overlay).collect();
        Overlay::agreed(&overlays)
    } else {
        Overlay::default()
    };
    let mut warnings = Vec::new();
    let fabric = one_fabric(settings, &rows, &named.fabric_only, &mut warnings);
    let (fabric, dra_without) =
        wired_through_dra(settings, &overlay, &known, fabric, own_claim, &mut warnings);

    let fewest = |of: &dyn Fn(&Row<'a>) -> Option<u64>| -> Option<u64> {
        let counts: Option<Vec<u64>> = known.iter().map(|row| of(row)).collect();
        counts
            .filter(|_| every_one_known && !known.is_empty())?
            .into_iter()
            .min()
    };
    let nvlink_domain = known.iter().any(|row| row.nvlink == Some(true));
    // A GPU model that names only a fabric (GKE's nvidia-h100-80gb) is never a rack-scale one.
    let without_nvlink = known.iter().any(|row| row.nvlink == Some(false))
        || named.fabric_only.iter().any(Option::is_some);
    let named = match (rows.as_slice(), named.fabric_only.is_empty(), named.source) {
        ([one], true, Some(source)) if one.row.is_some() => Some((one.name.clone(), source)),
        _ => None,
    };
    Ok(NodeFacts {
        gpus: fewest(&|row| row.gpus),
        nics: fewest(&Row::nics),
        rows,
        fabric,
        overlay,
        nvlink_domain,
        without_nvlink,
        dra_without,
        named,
        warnings,
    })
}

/// The machines a pod's spec names: instance types, or its pools' machines and the pools the
/// settings do not map (`(label, value)`), or GPU models that name a machine or only its fabric
/// (`None`: a model the policy does not know).
struct Candidates<'a> {
    types: Vec<Cow<'a, str>>,
    pools: Vec<(String, String)>,
    fabric_only: Vec<Option<&'static Fabric>>,
    source: Option<LabelSource<'a>>,
}

/// The pod's candidate machines (behaviour.md §3.7): its instance types, else its node pools'
/// machines, else its GPU model's.
fn candidates<'a>(settings: &CloudSettings<'a>, spec: &Object<'_>) -> Candidates<'a> {
    let cloud = settings.cloud;
    // The instance type first, then the labels by which the cloud's rows may name a machine.
    let labels: Vec<&'static str> = INSTANCE_TYPE_LABELS
        .iter()
        .chain(cloud.machine_labels)
        .copied()
        .collect();
    let (types, source) = labelled(spec, &labels);
    let mut source: Option<LabelSource<'a>> = source;
    let mut types: Vec<Cow<'a, str>> = types
        .into_iter()
        .map(|name| Cow::Owned(name.into_owned()))
        .collect();
    let mut pools = Vec::new();
    if types.is_empty() {
        let by_pool = pooled(&settings.pools, spec);
        if by_pool.source.is_some() {
            (types, pools, source) = (by_pool.machines, by_pool.unknown, by_pool.source);
        }
    }
    // Where no instance type is named, the GPU model may name the machine, or only its fabric.
    let mut fabric_only = Vec::new();
    if types.is_empty() && pools.is_empty() && !cloud.accelerators.is_empty() {
        let (models, from) = labelled(spec, &[ACCELERATOR_LABEL]);
        source = from;
        for label in models {
            match cloud.accelerators.iter().find(|a| a.label == label) {
                Some(accelerator) => match accelerator.machine {
                    Some(machine) => types.push(Cow::Borrowed(machine.name)),
                    None => fabric_only.push(Some(accelerator.fabric)),
                },
                // A GPU model the policy does not know: the pod may land where nothing is known.
                None => fabric_only.push(None),
            }
        }
    }
    Candidates {
        types,
        pools,
        fabric_only,
        source,
    }
}

/// The one fabric of every candidate: its row's, else the one its GPU model implies, else the
/// settings'. Candidates of different fabrics get none, and a warning.
fn one_fabric(
    settings: &CloudSettings<'_>,
    rows: &[Candidate<'_>],
    fabric_only: &[Option<&'static Fabric>],
    warnings: &mut Vec<String>,
) -> Option<&'static Fabric> {
    let unsettled = settings.fabric(&Overlay::default());
    let rows = rows
        .iter()
        .map(|c| c.row.as_ref().and_then(|row| row.overlay.fabric));
    let mut fabrics: Vec<&'static Fabric> = Vec::new();
    for fabric in rows.chain(fabric_only.iter().copied()) {
        let fabric = fabric.unwrap_or(unsettled);
        if !fabrics.contains(&fabric) {
            fabrics.push(fabric);
        }
    }
    match fabrics.as_slice() {
        [] => Some(unsettled),
        [one] => Some(*one),
        several => {
            let names: Vec<&str> = several.iter().map(|f| f.name).collect();
            warnings.push(format!(
                "multi-node networking not injected: the pod may run on machines of different fabrics ({}); name one machine type or GPU model per pod",
                join(&names, ", ")
            ));
            None
        }
    }
}

/// A machine wired only through DRA: nothing the policy adds would work, unless the settings
/// give the fabric a claim (behaviour.md §3.8) or the pod's own claim brings it (`own_claim`,
/// §3.10); then the pod does without the volumes the claim replaces.
fn wired_through_dra(
    settings: &CloudSettings<'_>,
    overlay: &Overlay<'_>,
    known: &[&Row<'_>],
    fabric: Option<&'static Fabric>,
    own_claim: bool,
    warnings: &mut Vec<String>,
) -> (Option<&'static Fabric>, &'static [&'static str]) {
    let dra_only = known
        .iter()
        .find_map(|row| row.machine.filter(|m| m.dra_only.is_some()));
    let claimed = |fabric: &'static Fabric| {
        own_claim || settings.overlay.claims(fabric) || overlay.claims(fabric)
    };
    match (dra_only, fabric) {
        (Some(machine), Some(fabric)) if claimed(fabric) => (Some(fabric), machine.dra_without),
        (Some(machine), _) => {
            let why = machine.dra_only.unwrap_or_default();
            warnings.push(format!("multi-node networking not injected: {why}"));
            (None, &[])
        }
        (None, fabric) => (fabric, &[]),
    }
}

/// Whether the pod carries any `spec.resourceClaims`.
pub fn has_claims(spec: &Object<'_>) -> bool {
    expect_read(spec, "resourceClaims", Read::Text);
    spec.get("resourceClaims")
        .and_then(|node| node.raw())
        .is_some_and(|raw| !crate::json::lenient::items(raw).is_empty())
}
