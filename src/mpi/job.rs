//! The launcher's MPIJob, read once through the request's [`Cluster`] (masked to what is read:
//! [`MPI_JOB`]), and the worker pod mpi-operator v2 makes from its Worker template (`newWorker`,
//! `pkg/controller/mpi_job_controller.go`): the template's metadata and spec, its labels with the
//! operator's own over them, owned by the MPIJob. What the operator adds besides (host name,
//! subdomain, DNS search, restart policy, `sshd` as the default command, its ssh volume and mount,
//! `K_MPI_JOB_ROLE`) is nothing the policy reads to choose a worker's env, and is left out.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::forms::{MPIS, Mpi, OPEN_MPI};
use crate::cluster::{self, Cluster, MPI_JOB};
use crate::json::lenient::{Members, members, read_members, string};
use crate::json::write::push_string;

/// mpi-operator's labels on every pod it makes (`defaultLabels`, `pkg/controller/
/// mpi_job_controller.go`): the operator, the MPIJob, the pod's role, and a worker's index.
pub const OPERATOR_LABEL: &str = "training.kubeflow.org/operator-name";
pub const OPERATOR: &str = "mpi-operator";
pub const JOB_LABEL: &str = "training.kubeflow.org/job-name";
pub const ROLE_LABEL: &str = "training.kubeflow.org/job-role";
pub const INDEX_LABEL: &str = "training.kubeflow.org/replica-index";

/// What the policy reads of an MPIJob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// Its name, and its namespace (the request's; empty without one).
    pub name: String,
    pub namespace: String,
    /// `spec.mpiImplementation` (mpi-operator's default: Open MPI).
    pub mpi: &'static Mpi,
    /// `spec.runLauncherAsWorker`: the launcher runs a rank too.
    pub launcher_is_rank: bool,
    /// The worker pod mpi-operator makes from `spec.mpiReplicaSpecs.Worker.template`, as the
    /// JSON text of an admission payload whose `request.object` it is, as the engine reads a
    /// pod; `None` where the job has no Worker.
    pub worker: Option<String>,
}

/// Why an MPIJob gave the policy nothing to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unread {
    /// The read gave no object, for this reason (behaviour.md §9); `Unreadable` also where the
    /// object is not of the shape mpi-operator's CRD gives it.
    Read(cluster::Unread),
    /// `spec.mpiImplementation` is none of mpi-operator's (its CRD's enum).
    Implementation(String),
}

/// The MPIJob `name` in the request's namespace, as far as its launcher needs it.
pub fn read(cluster: &Cluster<'_>, name: &str) -> Result<Job, Unread> {
    let object = cluster.get(&MPI_JOB, None, name).map_err(Unread::Read)?;
    let namespace = cluster.namespace().unwrap_or_default().to_string();
    of(&object, name, namespace)
}

/// The job `name` of namespace `namespace`, from the host's answer `object`.
fn of(object: &str, name: &str, namespace: String) -> Result<Job, Unread> {
    let unreadable = || Unread::Read(cluster::Unread::Unreadable);
    let members = read_members(object).map_err(|_| unreadable())?;
    if !object.trim_start().starts_with('{') {
        return Err(unreadable());
    }
    let object = members;
    let spec = object_at(&object, "spec")
        .ok_or_else(unreadable)?
        .unwrap_or_default();
    let mpi = match spec.get("mpiImplementation").filter(|v| v.get() != "null") {
        None => &OPEN_MPI,
        Some(value) => {
            let named = string(value).ok_or_else(unreadable)?;
            *MPIS
                .iter()
                .find(|mpi| mpi.name == named)
                .ok_or_else(|| Unread::Implementation(named.into_owned()))?
        }
    };
    let launcher_is_rank = match spec.get("runLauncherAsWorker").map(RawValue::get) {
        None | Some("null" | "false") => false,
        Some("true") => true,
        Some(_) => return Err(unreadable()),
    };
    let replicas = object_at(&spec, "mpiReplicaSpecs")
        .ok_or_else(unreadable)?
        .unwrap_or_default();
    let worker = match object_at(&replicas, "Worker").ok_or_else(unreadable)? {
        None => None,
        Some(worker) => {
            let template = object_at(&worker, "template")
                .ok_or_else(unreadable)?
                .unwrap_or_default();
            Some(worker_pod(name, &namespace, launcher_is_rank, &template).ok_or_else(unreadable)?)
        }
    };
    Ok(Job {
        name: name.to_string(),
        namespace,
        mpi,
        launcher_is_rank,
        worker,
    })
}

/// The members of the object at `key`: `Some(None)` where it is absent or null, `None` where it
/// is another JSON type than an object.
fn object_at<'a>(parent: &Members<'a>, key: &str) -> Option<Option<Members<'a>>> {
    match parent.get(key) {
        None => Some(None),
        Some(value) if value.get() == "null" => Some(None),
        Some(value) if value.get().starts_with('{') => Some(Some(members(value))),
        Some(_) => None,
    }
}

/// The first worker pod of job `name`, from its pod `template`: its metadata (the operator's
/// labels over the template's, the template's annotations, the job as its owner) and the
/// template's spec. `None` where the template's parts have types no pod has.
fn worker_pod(
    name: &str,
    namespace: &str,
    launcher_is_rank: bool,
    template: &Members<'_>,
) -> Option<String> {
    let metadata = object_at(template, "metadata")?.unwrap_or_default();
    let spec = match template.get("spec") {
        None => "{}",
        Some(spec) if spec.get() == "null" => "{}",
        Some(spec) if spec.get().starts_with('{') => spec.get(),
        Some(_) => return None,
    };
    let labels = object_at(&metadata, "labels")?.unwrap_or_default();
    // With its launcher a rank, mpi-operator numbers the workers from 1 (`workerReplicaIndexLabel`).
    let index = if launcher_is_rank { "1" } else { "0" };
    let ours = [
        (OPERATOR_LABEL, OPERATOR),
        (JOB_LABEL, name),
        (ROLE_LABEL, "worker"),
        (INDEX_LABEL, index),
    ];
    let mut text = String::with_capacity(spec.len() + 512);
    text.push_str(r#"{"request":{"object":{"metadata":{"name":"#);
    push_string(&mut text, &format!("{name}-worker-0"));
    if !namespace.is_empty() {
        text.push_str(r#","namespace":"#);
        push_string(&mut text, namespace);
    }
    text.push_str(r#","labels":{"#);
    let theirs = labels
        .0
        .iter()
        .filter(|(key, _)| !ours.iter().any(|(ours, _)| ours == key))
        .filter_map(|(key, value)| Some((key.clone(), string(value)?)));
    let all = theirs.chain(ours.map(|(k, v)| (Cow::Borrowed(k), Cow::Borrowed(v))));
    for (at, (key, value)) in all.enumerate() {
        if at > 0 {
            text.push(',');
        }
        push_string(&mut text, &key);
        text.push(':');
        push_string(&mut text, &value);
    }
    text.push('}');
    if let Some(annotations) = metadata
        .get("annotations")
        .filter(|a| a.get().starts_with('{'))
    {
        text.push_str(r#","annotations":"#);
        text.push_str(annotations.get());
    }
    text.push_str(
        r#","ownerReferences":[{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","name":"#,
    );
    push_string(&mut text, name);
    text.push_str(r#","controller":true,"blockOwnerDeletion":true}]},"spec":"#);
    text.push_str(spec);
    text.push_str("}}}");
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn job(spec: Value) -> Result<Job, Unread> {
        let object = json!({"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
                            "metadata": {"name": "nccl", "namespace": "jobs"}, "spec": spec});
        of(&object.to_string(), "nccl", "jobs".to_string())
    }

    #[test]
    fn the_worker_is_the_template_with_the_operators_labels_owned_by_the_job() {
        let job = job(
            json!({"mpiImplementation": "Intel", "mpiReplicaSpecs": {"Worker": {"template": {
            "metadata": {"labels": {"team": "a", "training.kubeflow.org/job-role": "mine"},
                         "annotations": {"nmp.nvidia.com/enable-multi-node-networking": "true"}},
            "spec": {"containers": [{"name": "worker"}]}}}}}),
        )
        .unwrap();
        assert_eq!(job.mpi.name, "Intel");
        assert!(!job.launcher_is_rank);
        let worker: Value = serde_json::from_str(job.worker.as_deref().unwrap()).unwrap();
        assert_eq!(
            worker["request"]["object"],
            json!({"metadata": {"name": "nccl-worker-0", "namespace": "jobs",
                "labels": {"team": "a", OPERATOR_LABEL: "mpi-operator", JOB_LABEL: "nccl",
                           ROLE_LABEL: "worker", INDEX_LABEL: "0"},
                "annotations": {"nmp.nvidia.com/enable-multi-node-networking": "true"},
                "ownerReferences": [{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
                    "name": "nccl", "controller": true, "blockOwnerDeletion": true}]},
                "spec": {"containers": [{"name": "worker"}]}})
        );
    }

    #[test]
    fn defaults_and_a_job_without_workers() {
        let alone =
            job(json!({"runLauncherAsWorker": true, "mpiReplicaSpecs": {"Launcher": {}}})).unwrap();
        assert_eq!((alone.mpi.name, alone.launcher_is_rank), ("OpenMPI", true));
        assert_eq!(alone.worker, None);
        let empty = job(json!({"mpiReplicaSpecs": {"Worker": {}}})).unwrap();
        let worker: Value = serde_json::from_str(empty.worker.as_deref().unwrap()).unwrap();
        let worker = &worker["request"]["object"];
        assert_eq!(worker["spec"], json!({}));
        assert_eq!(worker["metadata"]["labels"][INDEX_LABEL], "0");
    }

    #[test]
    fn strange_shapes_are_unreadable_and_an_unknown_mpi_is_named() {
        let unreadable = Err(Unread::Read(cluster::Unread::Unreadable));
        for spec in [
            json!([]),
            json!({"mpiImplementation": 5}),
            json!({"runLauncherAsWorker": "yes"}),
            json!({"mpiReplicaSpecs": []}),
            json!({"mpiReplicaSpecs": {"Worker": "w"}}),
            json!({"mpiReplicaSpecs": {"Worker": {"template": {"spec": []}}}}),
            json!({"mpiReplicaSpecs": {"Worker": {"template": {"metadata": {"labels": 1}}}}}),
        ] {
            assert_eq!(job(spec.clone()), unreadable, "{spec}");
        }
        assert_eq!(
            job(json!({"mpiImplementation": "OpenMPI5"})),
            Err(Unread::Implementation("OpenMPI5".to_string()))
        );
        assert_eq!(of("[1]", "nccl", String::new()), unreadable);
        assert_eq!(of("{", "nccl", String::new()), unreadable);
    }
}
