//! The worker pod a job's controller would create from a job manifest, so that `make preview`
//! takes what users have at hand. Each controller copies the worker's pod template and adds its
//! own labels, annotations, name and an ownerReference to the job; the policy reads the owner
//! (ownerKinds, ownerApiGroups) and the labels (computeDomain.fromLabel), so the preview gives
//! the pod those, as the controller would, for the first worker (index 0).
//!
//! Where each controller sets them, read in its source:
//! - Kubeflow Training Operator (PyTorchJob, TFJob): `kubeflow/training-operator`
//!   `pkg/controller.v1/common/pod.go` (`createNewPod`: `GenLabels` — operator-name and job-name —
//!   then replica-type, replica-index; the name `<job>-<type>-<index>`; job-role `master` only
//!   for the master) at 141c150173b0d43ef168d10d930ed4d6af5679dd, the label keys in
//!   `kubeflow/common` `pkg/apis/common/v1/constants.go`.
//! - MPI Operator v2 (MPIJob kubeflow.org/v2beta1): `kubeflow/mpi-operator`
//!   `pkg/controller/mpi_job_controller.go` (`newWorker`: `defaultLabels(job, "worker")` —
//!   operator-name `mpi-operator`, job-name, job-role — and replica-index; the name
//!   `<job>-worker-<index>`, hostname the same, subdomain the job's name).
//! - Volcano (Job batch.volcano.sh/v1alpha1): `volcano-sh/volcano`
//!   `pkg/controllers/job/job_controller_util.go` (`createJobPod`: the name `<job>-<task>-<index>`,
//!   the annotations group-name, job-name, task-spec, queue-name, job-version, template-uid, the
//!   labels task-index, job-name, task-spec, job-namespace, queue-name; the scheduler the job's).
//! - JobSet (jobset.x-k8s.io/v1alpha2): `kubernetes-sigs/jobset`
//!   `pkg/controllers/jobset_controller.go` (`labelAndAnnotateObject` on the child Job and its pod
//!   template: jobset-name, replicatedjob-name, restart-attempt, replicatedjob-replicas,
//!   job-index, job-key; the Job's name `<jobset>-<replicatedjob>-<index>`), whose batch/v1 Job
//!   then makes the pods as below.
//! - batch/v1 Job: `kubernetes/kubernetes` `pkg/registry/batch/job/strategy.go`
//!   (`generateSelector`: controller-uid and job-name, with and without the
//!   `batch.kubernetes.io/` prefix) and `pkg/controller/job/indexed_job_utils.go` (an Indexed
//!   Job's pod: the completion index as annotation and label, the name `<job>-<index>-…`).
//!
//! The JobSet's `job-key` label (a SHA-1 of the child Job's namespace and name) is left out: the
//! policy never reads it, and the preview carries no hash crate for it.

use anyhow::{Result, bail};
use serde_json::{Map, Value, json};

/// The uid the preview gives a job that has none (a manifest not yet applied): ownerReferences
/// and some labels need one.
const PLACEHOLDER_UID: &str = "00000000-0000-4000-8000-000000000000";

/// A job kind the preview knows: its API group, kind, and how its controller makes a worker.
struct Controller {
    group: &'static str,
    kind: &'static str,
    worker: fn(&Job) -> Result<Value>,
}

/// The controllers the preview knows, one row each.
const CONTROLLERS: &[Controller] = &[
    Controller {
        group: "kubeflow.org",
        kind: "PyTorchJob",
        worker: |job| training_operator(job, "pytorchReplicaSpecs", "pytorchjob-controller"),
    },
    Controller {
        group: "kubeflow.org",
        kind: "TFJob",
        worker: |job| training_operator(job, "tfReplicaSpecs", "tfjob-controller"),
    },
    Controller {
        group: "kubeflow.org",
        kind: "MPIJob",
        worker: mpi_operator,
    },
    Controller {
        group: "batch.volcano.sh",
        kind: "Job",
        worker: volcano,
    },
    Controller {
        group: "jobset.x-k8s.io",
        kind: "JobSet",
        worker: jobset,
    },
    Controller {
        group: "batch",
        kind: "Job",
        worker: batch_job,
    },
];

/// The job kinds the preview turns into a worker pod, for messages.
pub fn known_kinds() -> String {
    CONTROLLERS
        .iter()
        .map(|c| format!("{} ({})", c.kind, c.group))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `document` is a job the preview knows.
pub fn is_job(document: &Value) -> bool {
    controller(document).is_some()
}

fn controller(document: &Value) -> Option<&'static Controller> {
    let api_version = document["apiVersion"].as_str()?;
    let kind = document["kind"].as_str()?;
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    CONTROLLERS
        .iter()
        .find(|c| c.group == group && c.kind == kind)
}

/// The job's identity, as its pods' ownerReference and labels carry it.
struct Job<'a> {
    api_version: &'a str,
    kind: &'a str,
    name: &'a str,
    namespace: &'a str,
    uid: &'a str,
    spec: &'a Value,
}

/// The first worker pod `document`'s controller would create; an error naming what is missing
/// where the manifest has no worker template, or where it is no job the preview knows.
pub fn worker_pod(document: &Value) -> Result<Value> {
    let Some(controller) = controller(document) else {
        bail!(
            "{} is not a job kind the preview knows ({})",
            describe(document),
            known_kinds()
        );
    };
    let metadata = &document["metadata"];
    let Some(name) = metadata["name"].as_str() else {
        bail!("{} has no metadata.name", describe(document));
    };
    let job = Job {
        api_version: document["apiVersion"].as_str().unwrap_or_default(),
        kind: controller.kind,
        name,
        namespace: metadata["namespace"].as_str().unwrap_or("default"),
        uid: metadata["uid"].as_str().unwrap_or(PLACEHOLDER_UID),
        spec: &document["spec"],
    };
    (controller.worker)(&job)
}

/// `apiVersion kind name`, as messages name a document.
pub fn describe(document: &Value) -> String {
    let field = |key: &str| document[key].as_str().unwrap_or("?").to_string();
    let name = document["metadata"]["name"]
        .as_str()
        .map(|n| format!(" {n}"))
        .unwrap_or_default();
    format!("{} {}{name}", field("apiVersion"), field("kind"))
}

/// A pod from `template` (a PodTemplateSpec) named `name`, in the job's namespace, owned by
/// `owner` (apiVersion, kind, name, uid) as its controller.
fn pod_from(template: &Value, name: Option<&str>, namespace: &str, owner: [&str; 4]) -> Value {
    let mut metadata = template["metadata"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    if let Some(name) = name {
        metadata.insert("name".into(), json!(name));
    }
    metadata.insert("namespace".into(), json!(namespace));
    let [api_version, kind, owner_name, uid] = owner;
    // metav1.NewControllerRef, which every controller here uses.
    metadata.insert(
        "ownerReferences".into(),
        json!([{
            "apiVersion": api_version, "kind": kind, "name": owner_name, "uid": uid,
            "controller": true, "blockOwnerDeletion": true
        }]),
    );
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template["spec"].clone(),
    })
}

fn insert_all(pod: &mut Value, field: &str, entries: &[(&str, String)]) {
    let map = pod["metadata"]
        .as_object_mut()
        .expect("pod_from writes an object")
        .entry(field)
        .or_insert_with(|| Value::Object(Map::new()));
    if !map.is_object() {
        *map = Value::Object(Map::new());
    }
    for (key, value) in entries {
        map[*key] = json!(value);
    }
}

/// The replica spec of the worker in `specs`: `Worker`, else the only other one (a job of one
/// master).
fn worker_replica<'a>(job: &Job, specs: &'a Value, field: &str) -> Result<(&'a str, &'a Value)> {
    let Some(specs) = specs.as_object().filter(|s| !s.is_empty()) else {
        bail!(
            "{} {} has no spec.{field}: nothing to make a pod from",
            job.kind,
            job.name
        );
    };
    let (role, spec) = specs
        .get_key_value("Worker")
        .or_else(|| specs.iter().next())
        .expect("not empty");
    if !spec["template"].is_object() {
        bail!(
            "{} {}: spec.{field}.{role} has no template",
            job.kind,
            job.name
        );
    }
    Ok((role, spec))
}

/// A Training Operator worker: `<job>-worker-0` with the operator's labels.
fn training_operator(job: &Job, field: &str, operator: &str) -> Result<Value> {
    let (role, spec) = worker_replica(job, &job.spec[field], field)?;
    let replica_type = role.to_lowercase();
    let name = format!("{}-{replica_type}-0", job.name);
    let mut pod = pod_from(
        &spec["template"],
        Some(&name),
        job.namespace,
        [job.api_version, job.kind, job.name, job.uid],
    );
    let mut labels = vec![
        ("training.kubeflow.org/operator-name", operator.to_string()),
        ("training.kubeflow.org/job-name", job.name.to_string()),
        ("training.kubeflow.org/replica-type", replica_type.clone()),
        ("training.kubeflow.org/replica-index", "0".to_string()),
    ];
    if role == "Master" {
        labels.push(("training.kubeflow.org/job-role", "master".to_string()));
    }
    insert_all(&mut pod, "labels", &labels);
    // The replica's restartPolicy wins over the template's (core.SetRestartPolicy); ExitCode is
    // the operator's own, and the pod gets Never.
    if let Some(policy) = spec["restartPolicy"].as_str() {
        let policy = if policy == "ExitCode" {
            "Never"
        } else {
            policy
        };
        pod["spec"]["restartPolicy"] = json!(policy);
    }
    Ok(pod)
}

/// An MPI Operator v2 worker: `<job>-worker-0`, its hostname, the job's subdomain.
fn mpi_operator(job: &Job) -> Result<Value> {
    let (_, spec) = worker_replica(job, &job.spec["mpiReplicaSpecs"], "mpiReplicaSpecs")?;
    let name = format!("{}-worker-0", job.name);
    let mut pod = pod_from(
        &spec["template"],
        Some(&name),
        job.namespace,
        [job.api_version, job.kind, job.name, job.uid],
    );
    insert_all(
        &mut pod,
        "labels",
        &[
            ("training.kubeflow.org/operator-name", "mpi-operator".into()),
            ("training.kubeflow.org/job-name", job.name.into()),
            ("training.kubeflow.org/job-role", "worker".into()),
            ("training.kubeflow.org/replica-index", "0".into()),
        ],
    );
    pod["spec"]["hostname"] = json!(name);
    pod["spec"]["subdomain"] = json!(job.name);
    Ok(pod)
}

/// The entry of `list` named like a worker, else the first.
fn worker_entry<'a>(job: &Job, list: &'a Value, field: &str) -> Result<&'a Value> {
    let Some(entries) = list.as_array().filter(|l| !l.is_empty()) else {
        bail!(
            "{} {} has no spec.{field}: nothing to make a pod from",
            job.kind,
            job.name
        );
    };
    Ok(entries
        .iter()
        .find(|e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.to_lowercase().starts_with("worker"))
        })
        .unwrap_or(&entries[0]))
}

/// A Volcano task's first pod: `<job>-<task>-0` with Volcano's labels and annotations.
fn volcano(job: &Job) -> Result<Value> {
    let task = worker_entry(job, &job.spec["tasks"], "tasks")?;
    let task_name = task["name"].as_str().unwrap_or("default");
    let queue = job.spec["queue"].as_str().unwrap_or("default");
    let name = format!("{}-{task_name}-0", job.name);
    let mut pod = pod_from(
        &task["template"],
        Some(&name),
        job.namespace,
        [job.api_version, job.kind, job.name, job.uid],
    );
    insert_all(
        &mut pod,
        "annotations",
        &[
            (
                "scheduling.k8s.io/group-name",
                format!("{}-{}", job.name, job.uid),
            ),
            ("volcano.sh/job-name", job.name.into()),
            ("volcano.sh/task-spec", task_name.into()),
            ("volcano.sh/queue-name", queue.into()),
            ("volcano.sh/job-version", "0".into()),
            (
                "volcano.sh/template-uid",
                format!("{}-{task_name}", job.name),
            ),
        ],
    );
    insert_all(
        &mut pod,
        "labels",
        &[
            ("volcano.sh/task-index", "0".into()),
            ("volcano.sh/job-name", job.name.into()),
            ("volcano.sh/task-spec", task_name.into()),
            ("volcano.sh/job-namespace", job.namespace.into()),
            ("volcano.sh/queue-name", queue.into()),
        ],
    );
    if let Some(scheduler) = job.spec["schedulerName"].as_str() {
        pod["spec"]["schedulerName"] = json!(scheduler);
    }
    Ok(pod)
}

/// A JobSet's first pod: the child Job `<jobset>-<replicatedjob>-0`, labelled by the JobSet
/// controller, then that Job's first pod.
fn jobset(job: &Job) -> Result<Value> {
    let replicated = worker_entry(job, &job.spec["replicatedJobs"], "replicatedJobs")?;
    let replicated_name = replicated["name"].as_str().unwrap_or("workers");
    let replicas = replicated["replicas"].as_u64().unwrap_or(1).to_string();
    let child_name = format!("{}-{replicated_name}-0", job.name);
    let mut child_spec = replicated["template"]["spec"].clone();
    // JobSet's webhook makes its Jobs Indexed unless told otherwise.
    if child_spec.is_object() && child_spec["completionMode"].is_null() {
        child_spec["completionMode"] = json!("Indexed");
    }
    if !child_spec["template"].is_object() {
        bail!(
            "JobSet {}: replicatedJobs {replicated_name} has no template.spec.template",
            job.name
        );
    }
    let entries = [
        ("jobset.sigs.k8s.io/jobset-name", job.name.to_string()),
        (
            "jobset.sigs.k8s.io/replicatedjob-name",
            replicated_name.to_string(),
        ),
        ("jobset.sigs.k8s.io/restart-attempt", "0".to_string()),
        ("jobset.sigs.k8s.io/replicatedjob-replicas", replicas),
        ("jobset.sigs.k8s.io/job-index", "0".to_string()),
    ];
    // The JobSet controller labels the child Job's pod template; the Job copies it.
    let mut template = json!({"metadata": child_spec["template"]["metadata"].clone()});
    if !template["metadata"].is_object() {
        template["metadata"] = json!({});
    }
    insert_all(&mut template, "labels", &entries);
    insert_all(&mut template, "annotations", &entries);
    child_spec["template"]["metadata"] = template["metadata"].take();
    let child = Job {
        api_version: "batch/v1",
        kind: "Job",
        name: &child_name,
        namespace: job.namespace,
        uid: job.uid,
        spec: &child_spec,
    };
    batch_job(&child)
}

/// A batch/v1 Job's first pod: the selector labels the API server gives the template, and for
/// an Indexed Job its completion index. Its name is generated (`generateName`), so the pod has
/// none, as at admission.
fn batch_job(job: &Job) -> Result<Value> {
    let spec = job.spec;
    if !spec["template"].is_object() {
        bail!("Job {} has no spec.template", job.name);
    }
    let mut pod = pod_from(
        &spec["template"],
        None,
        job.namespace,
        [job.api_version, job.kind, job.name, job.uid],
    );
    let indexed = spec["completionMode"] == "Indexed";
    let prefix = if indexed {
        format!("{}-0-", job.name)
    } else {
        format!("{}-", job.name)
    };
    pod["metadata"]["generateName"] = json!(prefix);
    insert_all(
        &mut pod,
        "labels",
        &[
            ("batch.kubernetes.io/controller-uid", job.uid.into()),
            ("batch.kubernetes.io/job-name", job.name.into()),
            ("controller-uid", job.uid.into()),
            ("job-name", job.name.into()),
        ],
    );
    if indexed {
        let index = [("batch.kubernetes.io/job-completion-index", "0".to_string())];
        insert_all(&mut pod, "labels", &index);
        insert_all(&mut pod, "annotations", &index);
    }
    Ok(pod)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Value {
        serde_yaml::from_str(text).unwrap()
    }

    fn owner(pod: &Value) -> (&str, &str, &str) {
        let o = &pod["metadata"]["ownerReferences"][0];
        assert_eq!(o["controller"], true);
        (
            o["apiVersion"].as_str().unwrap(),
            o["kind"].as_str().unwrap(),
            o["name"].as_str().unwrap(),
        )
    }

    const TEMPLATE: &str =
        "template: {metadata: {annotations: {a: \"true\"}}, spec: {containers: [{name: c}]}}";

    #[test]
    fn a_pytorchjob_gives_its_worker_with_the_operators_labels() {
        let job = yaml(&format!(
            "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: p, namespace: ns}}\n\
             spec: {{pytorchReplicaSpecs: {{Master: {{replicas: 1, {TEMPLATE}}}, Worker: {{replicas: 2, restartPolicy: ExitCode, {TEMPLATE}}}}}}}"
        ));
        let pod = worker_pod(&job).unwrap();
        assert_eq!(owner(&pod), ("kubeflow.org/v1", "PyTorchJob", "p"));
        let metadata = &pod["metadata"];
        assert_eq!(metadata["name"], "p-worker-0");
        assert_eq!(metadata["namespace"], "ns");
        assert_eq!(metadata["annotations"]["a"], "true");
        let labels = &metadata["labels"];
        assert_eq!(labels["training.kubeflow.org/job-name"], "p");
        assert_eq!(
            labels["training.kubeflow.org/operator-name"],
            "pytorchjob-controller"
        );
        assert_eq!(labels["training.kubeflow.org/replica-type"], "worker");
        assert_eq!(labels["training.kubeflow.org/replica-index"], "0");
        assert!(labels.get("training.kubeflow.org/job-role").is_none());
        assert_eq!(pod["spec"]["restartPolicy"], "Never");
    }

    #[test]
    fn a_tfjob_and_an_mpijob_name_their_operators() {
        let tf = yaml(&format!(
            "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {{name: t}}\nspec: {{tfReplicaSpecs: {{Worker: {{{TEMPLATE}}}}}}}"
        ));
        let pod = worker_pod(&tf).unwrap();
        assert_eq!(owner(&pod), ("kubeflow.org/v1", "TFJob", "t"));
        assert_eq!(pod["metadata"]["namespace"], "default");
        assert_eq!(
            pod["metadata"]["labels"]["training.kubeflow.org/operator-name"],
            "tfjob-controller"
        );
        let mpi = yaml(&format!(
            "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata: {{name: m}}\nspec: {{mpiReplicaSpecs: {{Launcher: {{{TEMPLATE}}}, Worker: {{{TEMPLATE}}}}}}}"
        ));
        let pod = worker_pod(&mpi).unwrap();
        assert_eq!(owner(&pod), ("kubeflow.org/v2beta1", "MPIJob", "m"));
        assert_eq!(
            pod["metadata"]["labels"]["training.kubeflow.org/job-role"],
            "worker"
        );
        assert_eq!(pod["spec"]["hostname"], "m-worker-0");
        assert_eq!(pod["spec"]["subdomain"], "m");
    }

    #[test]
    fn a_volcano_job_and_a_jobset_and_a_batch_job() {
        let vc = yaml(&format!(
            "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: v}}\nspec: {{schedulerName: volcano, tasks: [{{name: master, {TEMPLATE}}}, {{name: worker, {TEMPLATE}}}]}}"
        ));
        let pod = worker_pod(&vc).unwrap();
        assert_eq!(owner(&pod), ("batch.volcano.sh/v1alpha1", "Job", "v"));
        assert_eq!(pod["metadata"]["name"], "v-worker-0");
        assert_eq!(pod["metadata"]["labels"]["volcano.sh/task-spec"], "worker");
        assert_eq!(
            pod["metadata"]["labels"]["volcano.sh/queue-name"],
            "default"
        );
        assert_eq!(pod["spec"]["schedulerName"], "volcano");

        let js = yaml(&format!(
            "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {{name: s, namespace: ns}}\nspec: {{replicatedJobs: [{{name: workers, replicas: 2, template: {{spec: {{{TEMPLATE}}}}}}}]}}"
        ));
        let pod = worker_pod(&js).unwrap();
        // The JobSet's child Job owns the pod.
        assert_eq!(owner(&pod), ("batch/v1", "Job", "s-workers-0"));
        let labels = &pod["metadata"]["labels"];
        assert_eq!(labels["jobset.sigs.k8s.io/jobset-name"], "s");
        assert_eq!(labels["jobset.sigs.k8s.io/replicatedjob-replicas"], "2");
        assert_eq!(labels["batch.kubernetes.io/job-name"], "s-workers-0");
        assert_eq!(labels["batch.kubernetes.io/job-completion-index"], "0");
        assert_eq!(pod["metadata"]["generateName"], "s-workers-0-0-");
        assert_eq!(pod["metadata"]["annotations"]["a"], "true");

        let job = yaml(&format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: b}}\nspec: {{{TEMPLATE}}}"
        ));
        let pod = worker_pod(&job).unwrap();
        assert_eq!(owner(&pod), ("batch/v1", "Job", "b"));
        assert_eq!(pod["metadata"]["generateName"], "b-");
        assert!(
            pod["metadata"]["labels"]
                .get("batch.kubernetes.io/job-completion-index")
                .is_none()
        );
    }

    #[test]
    fn unknown_kinds_and_missing_templates_are_named() {
        let ray = yaml("apiVersion: ray.io/v1\nkind: RayJob\nmetadata: {name: r}\n");
        let message = worker_pod(&ray).unwrap_err().to_string();
        assert!(message.contains("ray.io/v1 RayJob r"), "{message}");
        let empty =
            yaml("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: p}\nspec: {}\n");
        let message = worker_pod(&empty).unwrap_err().to_string();
        assert!(message.contains("no spec.pytorchReplicaSpecs"), "{message}");
    }
}
