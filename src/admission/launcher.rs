//! MPI jobs (behaviour.md §3.12): what an opted-in pod is to mpi-operator, and for its launcher
//! what it passes to its ranks, decided before the engine wires the pod. The launcher's MPIJob is
//! read once ([`mpi::read`]); the worker pod mpi-operator makes from its Worker template goes
//! through the policy's own decision and engine, exactly as a worker's request would, and the env
//! its first container (where sshd runs, and so the ranks) gains is what the launcher passes, in
//! the forms its MPI passes on ([`mpi::forms`]). Whatever the read answers, the launcher is
//! answered: a job that cannot be read, or whose workers the policy would not wire, is a warning,
//! and the launcher gets today's answer.

use std::borrow::Cow;

use super::trigger::{self, Decision};
use crate::claims;
use crate::cluster::Cluster;
use crate::engine::{self, Outcome, container_name};
use crate::error::{Error, join};
use crate::json::envelope::PodPeek;
use crate::json::object::{self, Object};
use crate::mpi::{self, Job, Own, Passing, Role, Unread};
use crate::profile::EnvVar;
use crate::settings::Config;

/// What an opted-in pod is to mpi-operator, and what follows for its answer.
pub(super) enum Part<'a> {
    /// Not one of its pods.
    Other,
    /// A worker of the MPIJob this names (`namespace/name`; empty where its label names none):
    /// wired as any pod, with one more line.
    Worker(String),
    Launcher(Plan<'a>),
}

/// What a launcher gets.
pub(super) struct Plan<'a> {
    /// What it passes to its ranks, where there is something to pass.
    passing: Option<Passing<'a>>,
    /// It is wired as a worker too: a rank itself (`runLauncherAsWorker`), or a launcher whose
    /// MPIJob was not read, which gets today's answer.
    as_worker: bool,
    /// Said after the engine's warnings.
    warnings: Vec<String>,
}

/// What `pod` is to mpi-operator; for a launcher, its MPIJob and its workers read through
/// `cluster`.
pub(super) fn part<'a>(pod: &Object<'_>, config: &Config<'a>, cluster: &Cluster<'_>) -> Part<'a> {
    match mpi::role(pod) {
        None => Part::Other,
        Some(Role::Worker(job)) => Part::Worker(match (cluster.namespace(), job) {
            (_, None) => String::new(),
            (Some(namespace), Some(job)) => format!("{namespace}/{job}"),
            (None, Some(job)) => job.into_owned(),
        }),
        Some(Role::Launcher(job)) => Part::Launcher(plan(pod, job, config, cluster)),
    }
}

impl<'a> Part<'a> {
    /// The engine's answer for `pod`: a launcher that runs no rank gains only what it passes to
    /// its ranks; any other pod is wired as a worker, a launcher that is a rank too with what it
    /// passes besides.
    pub(super) fn wire(
        &self,
        pod: &mut Object<'_>,
        config: &Config<'a>,
        cluster: &Cluster<'_>,
    ) -> Result<Outcome<'a>, Error> {
        let passing = match self {
            Part::Launcher(plan) if !plan.as_worker => {
                return match &plan.passing {
                    Some(passing) => engine::launcher_only(pod, config, passing),
                    None => Ok(Outcome::default()),
                };
            }
            Part::Launcher(plan) => plan.passing.as_ref(),
            _ => None,
        };
        let claims = claims::read(pod, config, cluster);
        engine::inject(pod, config, &claims, passing, cluster)
    }

    /// Adds what is said of the pod as an MPIJob's to `outcome`'s warnings: the launcher's, and
    /// for a wired worker the line that its env reaches the ranks only through the launcher.
    pub(super) fn warn(self, outcome: &mut Outcome<'_>) {
        match self {
            Part::Launcher(plan) => outcome.warnings.extend(plan.warnings),
            Part::Worker(job) if !outcome.fabric.is_empty() => {
                outcome.warnings.push(mpi::worker_line(&job));
            }
            _ => {}
        }
    }
}

/// The plan of the launcher of MPIJob `job` (the value of its label; `None`: it has none).
fn plan<'a>(
    pod: &Object<'_>,
    job: Option<Cow<'_, str>>,
    config: &Config<'a>,
    cluster: &Cluster<'_>,
) -> Plan<'a> {
    let today = |warning: String| Plan {
        passing: None,
        as_worker: true,
        warnings: vec![warning],
    };
    let name = match job {
        Some(name) if crate::k8s::names::is_dns1123_subdomain(&name) => name,
        other => return today(unnamed(other.as_deref())),
    };
    let job = match mpi::read(cluster, &name) {
        Ok(job) => job,
        Err(why) => return today(unread(cluster.namespace(), &name, &why)),
    };
    let mut plan = Plan {
        passing: None,
        as_worker: job.launcher_is_rank,
        warnings: Vec::new(),
    };
    // A job of its launcher alone has no rank on a worker: nothing to pass.
    let Some(worker) = &job.worker else {
        return plan;
    };
    let (env, fabric) = match workers_env(&job, worker, config, cluster) {
        Ok(workers) => workers,
        Err(warning) => {
            plan.warnings.push(warning);
            return plan;
        }
    };
    let container = mpi::first_container(pod);
    let mut asked: Vec<&str> = env.iter().map(|var| var.name.as_ref()).collect();
    asked.extend(job.mpi.agents.iter().map(|agent| agent.variable));
    asked.extend(job.mpi.beside.iter().map(|(name, _)| *name));
    let own = Own::read(container, &asked, cluster);
    let passing = mpi::pass(qualified(&job), (job.mpi, fabric), &env, &own);
    let name = container.map_or_else(|| "#0".into(), |c| container_name(c, 0));
    plan.warnings = passing.warnings(&name, &own);
    plan.passing = Some(passing);
    plan
}

/// The env the policy gives the first container of `job`'s workers, `worker` being the first
/// as mpi-operator makes it, and their fabric; or why there is none to pass.
fn workers_env<'a>(
    job: &Job,
    worker: &str,
    config: &Config<'a>,
    cluster: &Cluster<'_>,
) -> Result<(Vec<EnvVar<'a>>, &'static str), String> {
    let nothing = |why: String| {
        format!(
            "multi-node networking: nothing of the env of MPIJob {}'s workers was passed to its ranks: {why}",
            qualified(job)
        )
    };
    let mut worker = object::read_object(worker, &engine::POD).map_err(|e| {
        nothing(format!(
            "the policy would refuse its workers: {}",
            e.refusal()
        ))
    })?;
    match trigger::decide(&PodPeek::of_pod(&worker), &config.common) {
        Decision::Inject(_) => {}
        Decision::Pass => {
            let keys = join(&config.common.triggers, " or ");
            return Err(nothing(format!(
                "its Worker template sets none of the annotations {keys} to \"true\", so the policy does not wire its workers"
            )));
        }
        Decision::PassWithWarning(warning) => {
            return Err(nothing(format!(
                "the policy does not wire its workers: {warning}"
            )));
        }
    }
    let claims = claims::read(&worker, config, cluster);
    let outcome = engine::inject(&mut worker, config, &claims, None, cluster).map_err(|e| {
        nothing(format!(
            "the policy would refuse its workers: {}",
            e.refusal()
        ))
    })?;
    if outcome.fabric.is_empty() {
        let why = outcome.warnings.first().map_or("", String::as_str);
        return Err(nothing(format!(
            "the policy does not wire its workers: {why}"
        )));
    }
    let first = mpi::first_container(&worker).map(|c| container_name(c, 0));
    let env = outcome
        .added
        .containers
        .into_iter()
        .find(|gained| Some(&gained.name) == first.as_ref())
        .map(|gained| gained.env)
        .unwrap_or_default();
    Ok((env, outcome.fabric))
}

/// `namespace/name` of `job`, `name` where the request has no namespace.
fn qualified(job: &Job) -> String {
    match job.namespace.as_str() {
        "" => job.name.clone(),
        namespace => format!("{namespace}/{}", job.name),
    }
}

/// A launcher whose label does not name its MPIJob.
fn unnamed(value: Option<&str>) -> String {
    let label = mpi::JOB_LABEL;
    let what = match value {
        None => format!("has no label {label} naming its MPIJob"),
        Some(value) => format!(
            "its label {label} is {}, which is no MPIJob name",
            crate::json::write::render_string(value)
        ),
    };
    format!(
        "multi-node networking: this pod is an MPIJob's launcher (label {}: launcher), but {what}, so nothing of its workers' env was passed to its ranks",
        mpi::ROLE_LABEL
    )
}

/// A launcher whose MPIJob `name` could not be read, for `why`.
fn unread(namespace: Option<&str>, name: &str, why: &Unread) -> String {
    let kind = &crate::cluster::MPI_JOB;
    let job = match namespace {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_string(),
    };
    let (why, remedy) = match why {
        Unread::Read(why) => (why.why(kind), why.remedy(kind)),
        Unread::Implementation(named) => (
            format!(
                "its spec.mpiImplementation is {}, none of {}",
                crate::json::write::render_string(named),
                join(&mpi::MPIS.map(|mpi| mpi.name), ", ")
            ),
            "check the MPIJob".to_string(),
        ),
    };
    format!(
        "multi-node networking: could not read MPIJob {job} (named by the launcher's label {}): {why}, so nothing of its workers' env was passed to its ranks; {remedy}",
        mpi::JOB_LABEL
    )
}
