//! kwctl's contract: for every case under `e2e-tests/cases`, the AdmissionResponse that
//! `kwctl run` prints and the policy server sends (`e2e_tests::admission_response`) is the one
//! the case's own expectations and the contract give: the request's uid, `allowed` as
//! expected, a `JSONPatch` patch that is `json_patch::diff` from the pod to the expected pod
//! (absent when the case expects no mutation), the rejection message in `status`, the
//! warnings exactly, and `auditAnnotations` the record of the expected pod (behaviour.md §2.1;
//! `e2e_tests::record` checks and adds it where a case was written before it), null without a
//! mutation. `make e2e-kwctl` holds a real kwctl to these answers.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use e2e_tests::admission_response::{MUTATED_DELETE, admission_response, decoded_patch};
use e2e_tests::cases::{self, Case};
use e2e_tests::{Response, admission_request, policy, record};
use serde_json::{Map, Value, json};

/// The pod `case` expects, its record checked and added where the case does not give it.
fn expected_pod(case: &Case, answer: &Response) -> Option<Value> {
    let pod = case.expect.pod.as_ref()?;
    Some(
        record::expected_pod(&case.settings, pod, answer)
            .unwrap_or_else(|e| panic!("{}: {e:#}", case.name)),
    )
}

/// The response the contract gives for what `case` expects, built without the module but for the
/// record, which is checked against the case.
fn expected(case: &Case, request: &Value, answer: &Response) -> Value {
    let mut response = Map::new();
    response.insert("uid".into(), request["uid"].clone());
    response.insert("allowed".into(), case.expect.accepted.into());
    let pod = expected_pod(case, answer);
    if let Some(pod) = &pod {
        let patch = json_patch::diff(&case.object, pod);
        response.insert("patchType".into(), "JSONPatch".into());
        response.insert(
            "patch".into(),
            BASE64.encode(serde_json::to_string(&patch).unwrap()).into(),
        );
    }
    if let Some(message) = &case.expect.message {
        // The module never sends a code: the server's default applies.
        response.insert("status".into(), json!({"message": message}));
    }
    let audit = pod
        .as_ref()
        .and_then(|pod| record::expected_audit(&case.settings, pod, answer));
    response.insert("auditAnnotations".into(), audit.unwrap_or(Value::Null));
    let warnings = &case.expect.warnings;
    response.insert(
        "warnings".into(),
        if warnings.is_empty() {
            Value::Null
        } else {
            json!(warnings)
        },
    );
    Value::Object(response)
}

#[test]
fn every_case_answers_the_admission_response_the_contract_gives() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    let instance = policy().instance().unwrap();
    let mut failures = Vec::new();
    let mut mutations = 0;
    let all = cases::load::<Case>(&dir).unwrap();
    for (file, case) in &all {
        if case.payload.is_some() {
            continue; // not a request kwctl could be given
        }
        let request = case.request();
        // The cluster the case's preflight host calls are answered from (behaviour.md §9).
        instance.set_cluster(case.cluster.clone());
        let answer = instance.validate(&request, &case.settings).unwrap();
        let got = admission_response(&request, &answer);
        let want = expected(case, &request, &answer);
        if got != want {
            failures.push(format!(
                "{} ({}):\n  want {want}\n  got  {got}",
                case.name,
                file.display()
            ));
            continue;
        }
        if let Some(patch) = decoded_patch(&got).unwrap() {
            mutations += 1;
            // Applied as the API server applies it, the patch gives the expected pod.
            let mut pod = case.object.clone();
            json_patch::patch(&mut pod, &patch).unwrap();
            if Some(&pod) != expected_pod(case, &answer).as_ref() {
                failures.push(format!(
                    "{}: the patch does not give the expected pod",
                    case.name
                ));
            }
        }
    }
    assert!(
        mutations > 10,
        "only {mutations} cases mutate: the cases did not load"
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases answer another AdmissionResponse:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}

#[test]
fn the_contracts_edges_no_patch_for_an_unchanged_object_and_none_on_delete() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
    let request = admission_request("CREATE", &e2e_tests::pod_kind(), &pod);
    let answer = |mutated: Option<Value>| Response {
        accepted: true,
        message: None,
        code: None,
        mutated_object: mutated,
        audit_annotations: None,
        warnings: None,
    };
    // A mutated object equal to the request's: an empty diff, so no patch at all.
    assert_eq!(
        admission_response(&request, &answer(Some(pod.clone()))),
        json!({"uid": request["uid"], "allowed": true, "auditAnnotations": null, "warnings": null})
    );
    // A mutation of a request without object is refused.
    let mut delete = request.clone();
    delete["object"] = Value::Null;
    let refused = admission_response(&delete, &answer(Some(pod)));
    assert_eq!(refused["allowed"], false);
    assert_eq!(refused["status"]["message"], MUTATED_DELETE);
    assert!(refused.get("patch").is_none());
}
