//! The merge engine: applies any cloud's [`Profile`](crate::profile::Profile) to an opted-in pod,
//! in place, with the merge rules of behaviour.md §4 and §5. It knows no cloud by name.
//!
//! [`inject`] runs four steps in order, each in its own file: `read` what the pod has (its GPU
//! containers, its machine and so the fabric's profile, its volumes, seccomp profiles and device
//! counts, or why it gets nothing), `wire` the mutations, `judge` the warnings, `record` what was
//! injected. The steps are apart so that each reads at once, and so that the order of the
//! mutations, which the answer's bytes follow, is one list in `wire`, and the order of the
//! warnings one list in `judge`. Everything is decided in `read`; `wire` reads only what each
//! merge compares against. The parts the mutations are made of are beside them: `container`
//! (each GPU container's), `claim`, `sidecar`, `volumes`, `annotations`. Each says what it added,
//! collected in [`added::Added`]: the outcome's account of the change, which the Pod Security
//! check and the validate-only answer read.

pub mod added;
mod annotations;
mod channel;
mod claim;
mod container;
mod gpus;
mod judge;
mod launcher;
mod read;
mod record;
mod sidecar;
mod size;
mod volumes;
mod wire;

pub use container::container_name;
pub use gpus::DEVICE_CLASS_RESOURCE;
pub use record::AUDIT_KEY;

use crate::claims::PodClaims;
use crate::cluster::Cluster;
use crate::error::Error;
use crate::json::object::{Member, Object, Shape};
use crate::mpi::Passing;
use crate::preflight::{self, Reference};
use crate::settings::Config;
use added::{Added, Container};
use read::Declined;
use record::Launched;

/// The objects of a pod the engine reads members of or adds members to; the view parses these
/// and keeps everything else as the request's text.
pub const POD: Shape = Shape {
    members: &[
        ("metadata", Member::Object(&METADATA)),
        ("spec", Member::Object(&SPEC)),
    ],
};
const METADATA: Shape = Shape {
    members: &[("annotations", Member::Object(&MEMBERS))],
};
const SPEC: Shape = Shape {
    members: &[
        ("containers", Member::List(&CONTAINER)),
        ("securityContext", Member::Object(&MEMBERS)),
        ("os", Member::Object(&MEMBERS)),
    ],
};
const CONTAINER: Shape = Shape {
    members: &[
        ("resources", Member::Object(&RESOURCES)),
        ("securityContext", Member::Object(&SECURITY_CONTEXT)),
    ],
};
const RESOURCES: Shape = Shape {
    members: &[
        ("requests", Member::Object(&MEMBERS)),
        ("limits", Member::Object(&MEMBERS)),
    ],
};
const SECURITY_CONTEXT: Shape = Shape {
    members: &[("capabilities", Member::Object(&MEMBERS))],
};
const MEMBERS: Shape = Shape::TEXT;

/// What the engine did to a pod it may change.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome<'a> {
    /// What the pod gained: nothing, where the pod is left as it was.
    pub added: Added<'a>,
    /// The fabric it was wired for; empty where it gets none.
    pub fabric: &'static str,
    pub warnings: Vec<String>,
    /// The objects of the cluster the pod now refers to through the injection (behaviour.md §9).
    pub references: Vec<Reference<'a>>,
    /// The record of what was injected, when the pod changed (behaviour.md §2.1), as a JSON
    /// string: the annotation's value and the audit annotation's, escaped once.
    pub record: Option<String>,
}

/// Injects the configured cloud's fabric into `pod`, as its machine decides, with its GPUs
/// through DRA as `claims` read them (behaviour.md §3.10), and what it depends on in the
/// cluster (its ComputeDomain's channel, §3.11; its `envFrom` ConfigMaps' keys, §4) read from
/// `cluster`; an MPIJob's launcher that runs a rank too gets what it passes to the other ranks,
/// `launcher` (§3.12). On a rejection the pod may be half-changed and must be dropped.
pub fn inject<'a>(
    pod: &mut Object<'_>,
    config: &Config<'a>,
    claims: &PodClaims<'_>,
    launcher: Option<&Passing<'a>>,
    cluster: &Cluster<'_>,
) -> Result<Outcome<'a>, Error> {
    let facts = match read::pod(pod, config, claims, cluster)? {
        Ok(facts) => facts,
        Err(declined) => return declined_with(pod, config, declined, launcher),
    };
    let mut wiring = wire::pod(pod, &facts)?;
    let gained = match launcher {
        Some(passing) => launcher::wire(pod, passing, &wiring.added.containers)?,
        None => None,
    };
    let warnings = judge::warnings(&facts, config, &wiring);
    let part = launcher
        .zip(gained.as_ref())
        .map(|(p, g)| launched_part(p, g));
    let record = record::write(pod, config, (&facts, &wiring), part, !config.validate_only)?;
    let record = checked(pod, config, &wiring.added, record)?;
    if let Some(gained) = gained {
        launcher::merge(&mut wiring.added.containers, gained);
    }
    let references = preflight::references(
        &facts.profile,
        config.cloud.cloud.networks,
        &wiring.present,
        (wiring.devices, &wiring.rails),
        wiring.claim_template,
    );
    Ok(Outcome {
        added: wiring.added,
        fabric: facts.fabric.name,
        warnings,
        references,
        record,
    })
}

/// An MPIJob's launcher that runs no rank (behaviour.md §3.12): it gains what it passes to its
/// ranks, `passing`, and nothing else.
pub fn launcher_only<'a>(
    pod: &mut Object<'_>,
    config: &Config<'a>,
    passing: &Passing<'a>,
) -> Result<Outcome<'a>, Error> {
    let mut outcome = Outcome {
        fabric: passing.fabric,
        ..Outcome::default()
    };
    let Some(gained) = launcher::wire(pod, passing, &[])? else {
        return Ok(outcome);
    };
    let part = launched_part(passing, &gained);
    let record = record::write_launcher(pod, config, passing.fabric, part, !config.validate_only)?;
    outcome.added.containers.push(gained);
    outcome.record = checked(pod, config, &outcome.added, record)?;
    Ok(outcome)
}

/// The answer for a pod the engine declines: the warnings that say why; for an MPIJob's
/// launcher that runs a rank, what it passes to the other ranks all the same, without the
/// warning that it has no GPU (a launcher needs none).
fn declined_with<'a>(
    pod: &mut Object<'_>,
    config: &Config<'a>,
    declined: Declined,
    launcher: Option<&Passing<'a>>,
) -> Result<Outcome<'a>, Error> {
    let no_gpus = matches!(declined, Declined::NoGpus { .. });
    let warnings = judge::declined(declined, config)?;
    let mut outcome = match launcher {
        Some(passing) => launcher_only(pod, config, passing)?,
        None => Outcome::default(),
    };
    if launcher.is_none() || !no_gpus {
        outcome.warnings = warnings;
    }
    Ok(outcome)
}

/// The record's part for a launcher's container that gained `gained` of `passing`.
fn launched_part<'r>(passing: &'r Passing<'_>, gained: &'r Container<'_>) -> Launched<'r> {
    let agents = passing.mpi.agents;
    let has_agent = gained
        .env
        .iter()
        .any(|var| agents.iter().any(|agent| agent.variable == var.name));
    Launched {
        job: &passing.job,
        mpi: passing.mpi.name,
        container: &gained.name,
        env: &gained.env,
        agent: match has_agent {
            true => &passing.carried,
            false => &[],
        },
    }
}

/// The record to answer with, once the annotations the pod gained (`added`'s and the record)
/// are held to the API server's limit: none with `validateOnly`, which writes nothing back but
/// counts the record as the pod would carry it, so that both answers refuse alike.
fn checked(
    pod: &Object<'_>,
    config: &Config<'_>,
    added: &Added<'_>,
    record: Option<String>,
) -> Result<Option<String>, Error> {
    let mut keys: Vec<&str> = added.annotations.iter().map(|a| a.key).collect();
    let unwritten = match (&config.record, &record) {
        (Some(key), Some(record)) => {
            keys.push(key);
            config
                .validate_only
                .then_some((key.as_ref(), record.as_str()))
        }
        _ => None,
    };
    size::check(pod, &keys, unwritten)?;
    Ok(record.filter(|_| !config.validate_only))
}

impl Outcome<'_> {
    /// The engine changed the pod.
    pub fn changed(&self) -> bool {
        !self.added.is_empty()
    }
}

#[cfg(test)]
pub(super) mod tests;
