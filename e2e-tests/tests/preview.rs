//! `make preview`, the main job, on the lean engine: on the example pod with each cloud's example
//! settings it shows the pod the policy server's engine answers; it refuses a module the policy
//! server would not load, and shows settings the module refuses as refused, with the module's
//! message.

use std::path::{Path, PathBuf};

use e2e_tests::{admission_request, default_module_path, plain_module_path, pod_kind, policy};
use preview::{Outcome, preview};
use serde_json::{Value, json};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn module(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e} (run `make test`)", path.display()))
}

#[test]
fn the_preview_shows_the_pod_the_policy_server_would_get() {
    let module = module(&default_module_path());
    let pod = e2e_tests::read_yaml(&examples().join("pod.yaml")).unwrap();
    let server = policy().instance().unwrap();
    for cloud in ["aws", "azure", "gcp", "oci", "rdma"] {
        let path = examples().join("settings").join(format!("{cloud}.yaml"));
        let settings = e2e_tests::read_yaml(&path).unwrap();
        let want = server
            .validate(&admission_request("CREATE", &pod_kind(), &pod), &settings)
            .unwrap();
        assert!(
            want.mutated_object.is_some(),
            "{cloud}: the example pod is not wired"
        );
        match preview(&module, &pod, &settings).unwrap() {
            Outcome::Accepted { warnings, mutated } => {
                assert_eq!(mutated, want.mutated_object, "{cloud}");
                assert_eq!(warnings, want.warnings.unwrap_or_default(), "{cloud}");
            }
            other => panic!("{cloud}: {other:?}"),
        }
    }
}

#[test]
fn the_preview_refuses_what_the_policy_server_would_refuse() {
    let pod = e2e_tests::read_yaml(&examples().join("pod.yaml")).unwrap();
    let settings = json!({"aws": {"enabled": true}});
    let unannotated = preview(&module(&plain_module_path()), &pod, &settings).unwrap_err();
    let message = format!("{unannotated:#}");
    assert!(
        message.contains("the policy server would not load it"),
        "{message}"
    );

    let bad: Value = json!({"aws": {"enabled": true, "efaDevicesPerGpu": -1}});
    let want = policy()
        .instance()
        .unwrap()
        .validate_settings(&bad)
        .unwrap();
    assert!(!want.valid);
    match preview(&module(&default_module_path()), &pod, &bad).unwrap() {
        Outcome::SettingsRejected(message) => assert_eq!(Some(message), want.message),
        other => panic!("{other:?}"),
    }
}
