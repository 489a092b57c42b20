//! The cluster's answer to an MPIJob launcher's read of its MPIJob (behaviour.md §3.12): the
//! fuzzer's bytes are the object the host answers every `MPIJob` read, for the launchers
//! mpi-operator makes (Open MPI, running a rank or not, Intel MPI, MPICH), on every cloud; every
//! other read (its workers' claims, ComputeDomain and ConfigMaps, the namespace) is missing. Beyond
//! "no panic": the answer is the SDK's response with a boolean `accepted`, a launcher that runs no
//! rank is never refused and gains nothing but `env` entries in its first container and the
//! record, each launch agent it gains is `env NAME=value … <daemon>` of shell-safe words, and no
//! object is asked for twice in one request. The job reader alone, given the same bytes, never
//! panics either.
#![no_main]

use std::cell::RefCell;

use fixtures::mpi::mpi_launcher;
use libfuzzer_sys::fuzz_target;
use multinode_networking_policy::admission;
use multinode_networking_policy::cluster::{Cluster, Mode};
use multinode_networking_policy::mpi::shell_safe;
use serde_json::{Value, json};

const AGENTS: [(&str, &str); 2] = [
    ("OMPI_MCA_orte_launch_agent", "orted"),
    ("PRTE_MCA_prte_launch_agent", "prted"),
];

/// Checks the launch agents the launcher's first container gained.
fn agents_are_shell_safe(before: &Value, after: &Value) {
    let had = |name: &str| {
        before["env"]
            .as_array()
            .is_some_and(|env| env.iter().any(|e| e["name"] == name))
    };
    for entry in after["env"].as_array().into_iter().flatten() {
        for (variable, daemon) in AGENTS {
            if entry["name"] != variable || had(variable) {
                continue;
            }
            let value = entry["value"].as_str().expect("an agent is a value");
            let words = value
                .strip_prefix("env ")
                .and_then(|v| v.strip_suffix(&format!(" {daemon}")))
                .unwrap_or_else(|| panic!("agent {value:?}"));
            for word in words.split(' ') {
                assert!(shell_safe(word) && word.contains('='), "{word:?} in {value:?}");
                assert!(!word.starts_with('-') && !word.starts_with('='), "{word:?}");
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let answer_all = |_: &str, _: &[u8]| Ok(data.to_vec());
    let cluster = Cluster::new(Some("jobs"), Mode::Warn, &answer_all);
    let _ = multinode_networking_policy::mpi::read(&cluster, "nccl");
    let record = fixtures::RECORD;
    for settings in [
        json!({"aws": {"enabled": true}, "computeDomain": {"fromLabel": "training.kubeflow.org/job-name"}}),
        json!({"azure": {"enabled": true}}),
        json!({"gcp": {"enabled": true}, "preflight": "reject"}),
        json!({"oci": {"enabled": true}}),
    ] {
        for (mpi, rank) in [("OpenMPI", false), ("OpenMPI", true), ("Intel", false), ("MPICH", false)] {
            let pod = mpi_launcher("nccl", "jobs", mpi, rank, if rank { 8 } else { 0 });
            let calls = RefCell::new(Vec::new());
            let host = |operation: &str, request: &[u8]| {
                calls.borrow_mut().push([operation.as_bytes(), request].concat());
                let asked: Value = serde_json::from_slice(request).expect("the policy writes JSON");
                match asked["kind"].as_str() {
                    Some("MPIJob") => Ok(data.to_vec()),
                    kind => Err(format!(
                        "Callback evaluation failure: Cannot find v1/{} named '{}'",
                        kind.unwrap_or_default(),
                        asked["name"].as_str().unwrap_or_default()
                    )),
                }
            };
            let answer = admission::validate_with(&fixtures::create_payload(&pod, &settings), &host);
            let answer: Value = serde_json::from_slice(&answer).expect("the answer is JSON");
            assert!(answer["accepted"].is_boolean(), "{answer}");
            let calls = calls.into_inner();
            assert!(fixtures::none_asked_twice(&calls), "an object was asked for twice");
            if rank {
                continue;
            }
            assert_eq!(answer["accepted"], true, "{answer}");
            let Some(after) = answer.get("mutated_object").filter(|m| !m.is_null()) else {
                continue;
            };
            agents_are_shell_safe(&pod["spec"]["containers"][0], &after["spec"]["containers"][0]);
            let mut unchanged = after.clone();
            unchanged["spec"]["containers"][0]["env"] = pod["spec"]["containers"][0]["env"].clone();
            unchanged["metadata"]["annotations"]
                .as_object_mut()
                .expect("annotations")
                .remove(record);
            assert_eq!(unchanged, pod, "a launcher that runs no rank gained more than env");
        }
    }
});
