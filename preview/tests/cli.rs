//! `make preview` as users run it: the preview binary on job manifests, Lists, empty and foreign
//! files, pods that are not opted in, and CLOUD beside SETTINGS. The module is the annotated one
//! `make annotated-policy.wasm` writes (POLICY_WASM names another).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn module() -> PathBuf {
    let path = std::env::var_os("POLICY_WASM")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("annotated-policy.wasm"));
    assert!(
        path.exists(),
        "{}: missing (run `make annotated-policy.wasm`)",
        path.display()
    );
    path
}

fn preview(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_preview"))
        .arg("--module")
        .arg(module())
        .args(args)
        .current_dir(root())
        .output()
        .expect("the preview binary runs")
}

/// A file of `text` under the test's own folder in the target directory.
fn file(name: &str, text: &str) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("preview-cli");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn each_example_job_gives_its_worker_wired() {
    for (job, cloud, owner) in [
        ("pytorchjob", "aws", "kind: PyTorchJob"),
        ("mpijob", "azure", "kind: MPIJob"),
        (
            "volcano-job",
            "gcp",
            "apiVersion: batch.volcano.sh/v1alpha1",
        ),
        (
            "jobset",
            "oci",
            "jobset.sigs.k8s.io/jobset-name: mixtral-ft",
        ),
        (
            "gb200-pytorchjob",
            "aws",
            "training.kubeflow.org/job-name: llama-gb200",
        ),
    ] {
        let output = preview(&[
            "--pod",
            &format!("examples/jobs/{job}.yaml"),
            "--cloud",
            cloud,
        ]);
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{job}: {stdout}{stderr}");
        assert!(
            stdout.contains("the first worker pod of") && stdout.contains("\nadded:\n"),
            "{job}: {stdout}"
        );
        assert!(stdout.contains(owner), "{job}: no {owner:?} in\n{stdout}");
        // The summary comes first: what was added, the warnings, what was not checked.
        let summary = stdout.find("added:").unwrap();
        let patch = stdout.find("patch operations").unwrap();
        let not_checked = stdout.find("not checked without a cluster").unwrap();
        assert!(
            summary < not_checked && not_checked < patch,
            "{job}: {stdout}"
        );
    }
    // The GB200 file's ComputeDomain is left aside, saying so.
    let (_, stderr) = text(&preview(&[
        "--pod",
        "examples/jobs/gb200-pytorchjob.yaml",
        "--cloud",
        "aws",
    ]));
    assert!(
        stderr.contains("left aside resource.nvidia.com/v1beta1 ComputeDomain llama-gb200"),
        "{stderr}"
    );
}

#[test]
fn a_list_runs_each_pod() {
    let list = file(
        "list.yaml",
        "apiVersion: v1\nkind: List\nitems:\n\
         - apiVersion: v1\n  kind: Pod\n  metadata: {name: a, annotations: {nmp.nvidia.com/enable-multi-node-networking: \"true\"}, ownerReferences: [{apiVersion: batch/v1, kind: Job, name: j, uid: u}]}\n  spec: {containers: [{name: c, image: i, resources: {limits: {nvidia.com/gpu: \"8\"}}}]}\n\
         - apiVersion: v1\n  kind: Pod\n  metadata: {name: b}\n  spec: {containers: [{name: c, image: i}]}\n",
    );
    let output = preview(&["--pod", &list, "--cloud", "aws"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("# pod: v1 Pod a"), "{stdout}");
    assert!(stdout.contains("# pod: v1 Pod b"), "{stdout}");
    assert!(stdout.contains("unchanged: not opted in"), "{stdout}");
}

#[test]
fn an_empty_file_or_a_foreign_kind_is_refused() {
    for (name, text_, wanted) in [
        ("empty.yaml", "", "holds no YAML document"),
        (
            "comments.yaml",
            "# nothing\n---\n",
            "holds no YAML document",
        ),
        (
            "deployment.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
            "apps/v1 Deployment web",
        ),
        (
            "spec.yaml",
            "containers: [{name: c}]\n",
            "a document without `kind:`",
        ),
    ] {
        let output = preview(&["--pod", &file(name, text_)]);
        let (stdout, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{name}: {stdout}{stderr}");
        assert!(stderr.contains(wanted), "{name}: {stderr}");
        assert!(
            stderr.contains("PyTorchJob"),
            "{name} names what it takes: {stderr}"
        );
    }
}

#[test]
fn an_unchanged_pod_gets_its_reason() {
    let (stdout, _) = text(&preview(&["--pod", "examples/pods/not-opted-in.yaml"]));
    assert!(stdout.contains("unchanged: not opted in"), "{stdout}");
    assert!(
        stdout.contains("nmp.nvidia.com/enable-multi-node-networking: \"true\""),
        "{stdout}"
    );
    // YAML's unquoted true is a boolean.
    let pod = std::fs::read_to_string(root().join("examples/pod.yaml"))
        .unwrap()
        .replace(
            "nmp.nvidia.com/enable-multi-node-networking: \"true\"",
            "nmp.nvidia.com/enable-multi-node-networking: true",
        );
    let (stdout, _) = text(&preview(&["--pod", &file("unquoted.yaml", &pod)]));
    assert!(stdout.contains("is the boolean true"), "{stdout}");
}

#[test]
fn cloud_beside_settings_is_refused_naming_cloud() {
    let output = preview(&["--cloud", "gcp", "--settings", "examples/settings/aws.yaml"]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr.contains("CLOUD=gcp") && stderr.contains("ignored"),
        "{stderr}"
    );
}
