use super::*;
use crate::engine::POD;
use crate::json::object::read_object;

fn role_of(labels: &str) -> Option<Role<'_>> {
    let text = Box::leak(
        format!(r#"{{"request":{{"object":{{"metadata":{{"labels":{labels}}}}}}}}}"#)
            .into_boxed_str(),
    );
    let pod = Box::leak(Box::new(read_object(text, &POD).unwrap()));
    role(pod)
}

#[test]
fn mpi_operators_labels_say_which_pod_is_a_launcher_or_a_worker() {
    let launcher = r#"{"training.kubeflow.org/operator-name":"mpi-operator","training.kubeflow.org/job-role":"launcher","training.kubeflow.org/job-name":"nccl"}"#;
    assert_eq!(role_of(launcher), Some(Role::Launcher(Some("nccl".into()))));
    let unnamed = r#"{"training.kubeflow.org/operator-name":"mpi-operator","training.kubeflow.org/job-role":"launcher"}"#;
    assert_eq!(role_of(unnamed), Some(Role::Launcher(None)));
    let worker = r#"{"training.kubeflow.org/operator-name":"mpi-operator","training.kubeflow.org/job-role":"worker","training.kubeflow.org/job-name":"nccl"}"#;
    assert_eq!(role_of(worker), Some(Role::Worker(Some("nccl".into()))));
    // The training operator's pods, another role, labels of the wrong type: none of them.
    for other in [
        r#"{"training.kubeflow.org/operator-name":"pytorchjob-controller","training.kubeflow.org/job-role":"launcher"}"#,
        r#"{"training.kubeflow.org/operator-name":"mpi-operator","training.kubeflow.org/job-role":"master"}"#,
        r#"{"training.kubeflow.org/operator-name":"mpi-operator","training.kubeflow.org/job-role":1}"#,
        r#"["mpi-operator"]"#,
        "null",
    ] {
        assert_eq!(role_of(other), None, "{other}");
    }
}
