//! MPI jobs (behaviour.md §3.12): Kubeflow's MPIJob (mpi-operator v2, `kubeflow.org/v2beta1`).
//! Its launcher's `mpirun` starts a daemon on every worker through ssh, and sshd gives each
//! session a fresh environment: the env the policy adds to the workers' containers reaches no
//! rank. What the launcher's container holds reaches them only in the forms its MPI passes on
//! ([`forms`], each MPI a row), which `mpi-ranks/` measures with the real launchers.
//!
//! Here: which pods are an MPIJob's launcher or workers (mpi-operator's labels, [`role`]); the
//! read of the launcher's MPIJob, once, through the request's [`Cluster`] ([`job`]), and the
//! worker pod mpi-operator makes from its Worker template, which the admission step wires as it
//! wires a worker to learn the env the ranks should have; and what the launcher's container sets
//! itself ([`Own`]), which stays its own.

pub mod forms;
mod job;
mod own;

pub use forms::{Agent, INTEL, MPICH, MPIS, Mpi, OPEN_MPI, Passing, pass, shell_safe};
pub use job::{INDEX_LABEL, JOB_LABEL, Job, OPERATOR, OPERATOR_LABEL, ROLE_LABEL, Unread, read};
pub use own::{Own, Set};

use std::borrow::Cow;

use crate::json::lenient::{members, string};
use crate::json::object::{Node, Object};
use crate::merge::{Read, expect_read, object};

/// What an opted-in pod is to mpi-operator.
#[derive(Debug, PartialEq, Eq)]
pub enum Role<'a> {
    /// The launcher, with the value of its label naming its MPIJob (`None`: it has none).
    Launcher(Option<Cow<'a, str>>),
    /// A worker of the MPIJob its label names (`None`: it has none).
    Worker(Option<Cow<'a, str>>),
}

/// The pod's role, by the labels mpi-operator gives the pods it makes; `None` for any other pod.
/// Read leniently: labels of the wrong type are no labels.
pub fn role<'a>(pod: &Object<'a>) -> Option<Role<'a>> {
    let metadata = object(pod, "metadata").ok().flatten()?;
    expect_read(metadata, "labels", Read::Text);
    let labels = members(metadata.get("labels").and_then(Node::raw)?);
    let label = |key: &str| labels.get(key).and_then(string);
    if label(OPERATOR_LABEL)? != OPERATOR {
        return None;
    }
    match label(ROLE_LABEL)?.as_ref() {
        "launcher" => Some(Role::Launcher(label(JOB_LABEL))),
        "worker" => Some(Role::Worker(label(JOB_LABEL))),
        _ => None,
    }
}

/// The line every wired worker of an MPIJob gets: its container's env reaches no rank. `job`
/// is `namespace/name`, or where the pod names none, empty.
pub fn worker_line(job: &str) -> String {
    let job = match job {
        "" => "an MPIJob".to_string(),
        job => format!("MPIJob {job}"),
    };
    format!(
        "multi-node networking: this pod is a worker of {job}: its launcher's mpirun starts the ranks here through sshd, which gives them none of this container's env, so the env the policy adds here reaches the ranks only through the launcher, opted in too (README, \"MPI jobs\")"
    )
}

/// The first container of `pod`: where mpi-operator runs the launcher's `mpirun` (and a
/// worker's `sshd`), and puts its own env and mounts.
pub fn first_container<'o, 'a>(pod: &'o Object<'a>) -> Option<&'o Object<'a>> {
    let spec = object(pod, "spec").ok().flatten()?;
    expect_read(spec, "containers", Read::List);
    match spec.get("containers")? {
        Node::List(containers) => containers.first()?.as_object(),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
