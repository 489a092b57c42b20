//! The job controllers and the pod label each writes with its job's name, which names the job's
//! ComputeDomain (behaviour.md §3.11, `computeDomain.fromLabel`): the outermost controller first,
//! since a JobSet's and an MPIJob's child Jobs label their pods with the child's name too, and
//! batch's label last. A controller is known by its CustomResourceDefinitions.

/// One job controller: its name in comments, its CRDs, the label on its pods.
pub struct Controller {
    pub name: &'static str,
    pub crds: &'static [&'static str],
    pub label: &'static str,
}

/// The controllers, outermost first. Sources: Kubeflow Trainer's TrainJob labels its pods
/// `trainer.kubeflow.org/trainjob-name` (the selector of the Service it makes for them,
/// kubeflow/trainer); JobSet `jobset.sigs.k8s.io/jobset-name` (kubernetes-sigs/jobset
/// `labelAndAnnotateObject`); the Training Operator and the MPI Operator
/// `training.kubeflow.org/job-name` (kubeflow/training-operator `GenLabels`, kubeflow/mpi-operator
/// `defaultLabels`); Volcano `volcano.sh/job-name` (volcano-sh/volcano `createJobPod`); a batch
/// Job `batch.kubernetes.io/job-name` (kubernetes `pkg/registry/batch/job/strategy.go`), which the
/// API server writes on every Job's pods, so that it is always there and always last.
pub const CONTROLLERS: [Controller; 5] = [
    Controller {
        name: "Kubeflow Trainer (TrainJob)",
        crds: &["trainjobs.trainer.kubeflow.org"],
        label: "trainer.kubeflow.org/trainjob-name",
    },
    Controller {
        name: "JobSet",
        crds: &["jobsets.jobset.x-k8s.io"],
        label: "jobset.sigs.k8s.io/jobset-name",
    },
    Controller {
        name: "Kubeflow (PyTorchJob, MPIJob)",
        crds: &[
            "pytorchjobs.kubeflow.org",
            "mpijobs.kubeflow.org",
            "tfjobs.kubeflow.org",
            "jaxjobs.kubeflow.org",
            "paddlejobs.kubeflow.org",
            "xgboostjobs.kubeflow.org",
        ],
        label: "training.kubeflow.org/job-name",
    },
    Controller {
        name: "Volcano",
        crds: &["jobs.batch.volcano.sh"],
        label: "volcano.sh/job-name",
    },
    Controller {
        name: "batch Jobs",
        crds: &[],
        label: "batch.kubernetes.io/job-name",
    },
];

/// The controllers whose CRDs `crds` holds (batch's always), or all of them where no CRDs were
/// given.
pub fn running(crds: Option<&[String]>) -> Vec<&'static Controller> {
    CONTROLLERS
        .iter()
        .filter(|c| match crds {
            None => true,
            Some(crds) => c.crds.is_empty() || c.crds.iter().any(|n| crds.iter().any(|g| g == n)),
        })
        .collect()
}
