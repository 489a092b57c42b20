//! MPI jobs (behaviour.md §3.12): an MPIJob's launcher, as mpi-operator makes it, whose MPIJob's
//! Worker template is any generated pod (its spec, labels and annotations), under any valid
//! settings, MPI and answer of the cluster to the MPIJob's read. Whatever they are, the launcher
//! is never refused; one that runs no rank gains only `env` entries in its first container (and
//! the record); each launch agent is `env NAME=value … <daemon>` of shell-safe words, both agents
//! alike; what its ranks would see is what the policy gives the workers (the worker pod
//! `fixtures::mpi` makes from the same template, sent as its own request), but what the
//! launcher sets itself and what a warning names as left out; a second pass changes nothing; and
//! no object is read twice.

use std::cell::RefCell;
use std::collections::BTreeMap;

use crate::generators::case;
use crate::generators::host::{Answer, answers, asked, missing};
use crate::run::{answer_of, payload};
use fixtures::mpi::{mpi_job, mpi_launcher, mpi_worker};
use multinode_networking_policy::admission;
use multinode_networking_policy::mpi::shell_safe;
use proptest::prelude::*;
use proptest::sample::{select, subsequence};
use serde_json::{Value, json};

const JOB: &str = "nccl";
const NAMESPACE: &str = "jobs";
const AGENTS: [(&str, &str); 2] = [
    ("OMPI_MCA_orte_launch_agent", "orted"),
    ("PRTE_MCA_prte_launch_agent", "prted"),
];

/// Entries a launcher's container may set itself: a fabric's variable with another value, one
/// of Open MPI's, an agent of its own, one by `valueFrom`.
fn own_env() -> impl Strategy<Value = Vec<Value>> {
    subsequence(
        vec![
            json!({"name": "NCCL_SOCKET_IFNAME", "value": "ib0"}),
            json!({"name": "OMPI_MCA_coll_hcoll_enable", "value": "1"}),
            json!({"name": "FI_PROVIDER", "value": "efa"}),
            json!({"name": "UCX_TLS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}),
            json!({"name": "OMPI_MCA_orte_launch_agent", "value": "orted"}),
        ],
        0..3,
    )
}

/// The MPI, one of mpi-operator's mostly, or one it does not know.
fn mpis() -> impl Strategy<Value = &'static str> {
    select(vec!["OpenMPI", "OpenMPI", "Intel", "MPICH", "OpenMPI5"])
}

/// The first trigger key of `settings`: the launcher opts in as a job's author writes it.
fn trigger(settings: &Value) -> String {
    match &settings["triggerAnnotation"] {
        Value::String(key) => key.clone(),
        Value::Array(keys) => keys[0].as_str().unwrap_or(fixtures::TRIGGER).to_string(),
        _ => fixtures::TRIGGER.to_string(),
    }
}

/// The cluster: the MPIJob `job` as `answer` says; every other object (a worker's claims,
/// ComputeDomain, ConfigMaps, the namespace) missing. Each call is recorded in `calls`.
fn host<'h>(
    job: &'h Value,
    answer: &'h Answer,
    calls: &'h RefCell<Vec<Vec<u8>>>,
) -> impl Fn(&str, &[u8]) -> Result<Vec<u8>, String> + 'h {
    move |_: &str, request: &[u8]| {
        calls.borrow_mut().push(request.to_vec());
        let (request, _) = asked(request);
        if request["kind"] != "MPIJob" {
            return Err(missing(&request));
        }
        match answer {
            Answer::Present => Ok(job.to_string().into_bytes()),
            Answer::Missing => Err(missing(&request)),
            Answer::Error(words) => Err(words.to_string()),
            Answer::Garbage(bytes) => Ok(bytes.clone()),
        }
    }
}

/// A container's env, by name (the last entry of a name counts), `None` for one by `valueFrom`.
fn env_map(container: &Value) -> BTreeMap<String, Option<String>> {
    let entries = container["env"].as_array().into_iter().flatten();
    entries
        .filter_map(|e| {
            let value = match e.get("valueFrom") {
                Some(from) if !from.is_null() => None,
                _ => Some(e["value"].as_str().unwrap_or_default().to_string()),
            };
            Some((e["name"].as_str()?.to_string(), value))
        })
        .collect()
}

/// The words an agent carries, as name and value, checked to be `env … <daemon>` of shell-safe
/// words.
fn agent_words(value: &str, daemon: &str) -> Result<Vec<(String, String)>, TestCaseError> {
    let inner = value
        .strip_prefix("env ")
        .and_then(|v| v.strip_suffix(&format!(" {daemon}")));
    let inner = inner.ok_or_else(|| TestCaseError::fail(format!("agent {value:?}")))?;
    inner
        .split(' ')
        .map(|word| {
            prop_assert!(shell_safe(word), "{:?} in the agent {:?}", word, value);
            let (name, value) = word.split_once('=').unwrap_or((word, ""));
            prop_assert!(!name.is_empty() && !name.starts_with('-'), "{:?}", word);
            Ok((name.to_string(), value.to_string()))
        })
        .collect()
}

proptest! {
    #![proptest_config(crate::config())]

    #[test]
    fn a_launchers_ranks_see_what_the_policy_gives_its_workers(
        (settings, template) in case(),
        mpi in mpis(),
        rank in any::<bool>(),
        own in own_env(),
        answer in answers(),
    ) {
        let template = json!({"metadata": {"labels": template["metadata"]["labels"],
            "annotations": template["metadata"]["annotations"]}, "spec": template["spec"]});
        let job = mpi_job(JOB, NAMESPACE, mpi, rank, Some(template));
        let mut launcher = mpi_launcher(JOB, NAMESPACE, mpi, rank, if rank { 8 } else { 0 });
        launcher["metadata"]["annotations"] = json!({trigger(&settings): "true"});
        let env = launcher["spec"]["containers"][0]["env"].as_array_mut().unwrap();
        env.extend(own);
        let calls = RefCell::new(Vec::new());
        let host = host(&job, &answer, &calls);
        let verdict = admission::evaluate_with(&payload("CREATE", &launcher, &settings), &host);
        let calls = calls.take();
        prop_assert!(fixtures::none_asked_twice(&calls), "an object was read twice");
        // `preflight: skip` makes no host call: the job is read only where it is asked for.
        let read = matches!(answer, Answer::Present)
            && calls.iter().any(|call| asked(call).0["kind"] == "MPIJob");
        let (accepted, mutated, warnings, _) = answer_of(verdict);
        // Only a launcher that runs a rank has GPUs, whose wiring a worker's refusals may refuse.
        prop_assert!(accepted || rank, "the launcher was refused: {:?}", warnings);
        let Some(mutated) = mutated else {
            return Ok(());
        };
        let before = env_map(&launcher["spec"]["containers"][0]);
        let after = env_map(&mutated["spec"]["containers"][0]);
        let record = fixtures::record_key(&settings).unwrap_or_default().to_string();
        if !rank {
            let mut unchanged = mutated.clone();
            unchanged["spec"]["containers"][0]["env"] = launcher["spec"]["containers"][0]["env"].clone();
            if let Some(annotations) = unchanged["metadata"]["annotations"].as_object_mut() {
                annotations.remove(&record);
            }
            prop_assert_eq!(&unchanged, &launcher, "a launcher that runs no rank gained more than env");
        }
        // The agents, both alike; then what the ranks see.
        let mut carried = None;
        for (variable, daemon) in AGENTS {
            let added = !before.contains_key(variable);
            if let (true, Some(Some(value))) = (added, after.get(variable)) {
                let words = agent_words(value, daemon)?;
                prop_assert!(carried.as_ref().is_none_or(|c| *c == words), "the agents differ");
                carried = Some(words);
            }
        }
        if !read || mpi == "OpenMPI5" {
            prop_assert!(carried.is_none(), "an agent without the job");
            return Ok(());
        }
        let Some(worker) = mpi_worker(&job) else { return Ok(()) };
        let worker_verdict = admission::evaluate_with(&payload("CREATE", &worker, &settings), &host);
        let (_, wired, _, _) = answer_of(worker_verdict);
        let Some(wired) = wired else { return Ok(()) };
        let had = env_map(&worker["spec"]["containers"][0]);
        let gained: Vec<(String, String)> = env_map(&wired["spec"]["containers"][0])
            .into_iter()
            .filter(|(name, _)| !had.contains_key(name))
            .filter_map(|(name, value)| Some((name, value?)))
            .collect();
        let carried = carried.unwrap_or_default();
        for (name, value) in &carried {
            prop_assert!(gained.contains(&(name.clone(), value.clone())), "the agent carries {}={}, which the workers do not get", name, value);
        }
        let left_out = named(&warnings, " were left out of the launch agent");
        let own_agent = warnings.iter().any(|w| w.contains("so the policy adds no launch agent"));
        for (name, value) in &gained {
            if before.contains_key(name) {
                continue;
            }
            let forwarded = mpi != "OpenMPI" || name.starts_with("OMPI_");
            let reaches = if forwarded {
                // A launcher that runs a rank has its own §3 env first, which reaches the ranks.
                after.get(name) == Some(&Some(value.clone())) || (rank && after.contains_key(name))
            } else {
                carried.iter().any(|(n, v)| n == name && v == value)
                    || left_out.contains(name)
                    || own_agent
            };
            prop_assert!(
                reaches,
                "{}={} reaches no rank of the {} launcher: {:?} {:?}", name, value, mpi, after, warnings
            );
        }
        let again = admission::evaluate_with(&payload("CREATE", &mutated, &settings), &host);
        prop_assert!(answer_of(again).1.is_none(), "a second pass changed {}", mutated);
    }
}

/// The variables the warning that ends its list of names with `then` names: `multi-node
/// networking: A, B<then>` (each name stands before ` of the env` or `, `).
fn named(warnings: &[String], then: &str) -> Vec<String> {
    warnings
        .iter()
        .filter(|w| w.contains(then))
        .filter_map(|w| w.strip_prefix("multi-node networking: "))
        .filter_map(|w| w.split_once(" of the env the policy gives"))
        .flat_map(|(names, _)| names.split(", ").map(str::to_string))
        .collect()
}

/// The property above is about launchers that pass env: the generators produce Open MPI
/// launchers that gain the agents and Hydra launchers that gain plain env, in a minimum share.
#[test]
fn the_generators_produce_launchers_that_pass_env() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    const SAMPLE: usize = 600;
    let mut runner = TestRunner::deterministic();
    let strategy = (case(), mpis(), any::<bool>());
    let (mut agents, mut plain) = (0, 0);
    for _ in 0..SAMPLE {
        let ((settings, template), mpi, rank) = strategy.new_tree(&mut runner).unwrap().current();
        let template = json!({"metadata": template["metadata"], "spec": template["spec"]});
        let job = mpi_job(JOB, NAMESPACE, mpi, rank, Some(template));
        let mut launcher = mpi_launcher(JOB, NAMESPACE, mpi, rank, 0);
        launcher["metadata"]["annotations"] = json!({trigger(&settings): "true"});
        let calls = RefCell::new(Vec::new());
        let host = host(&job, &Answer::Present, &calls);
        let verdict = admission::evaluate_with(&payload("CREATE", &launcher, &settings), &host);
        let Some(mutated) = answer_of(verdict).1 else {
            continue;
        };
        let after = env_map(&mutated["spec"]["containers"][0]);
        if after.contains_key(AGENTS[0].0) {
            agents += 1;
        } else if mpi != "OpenMPI" {
            plain += 1;
        }
    }
    eprintln!("{agents} of {SAMPLE} gained the agents, {plain} plain env");
    assert!(
        agents * 100 >= SAMPLE * 5,
        "{agents} of {SAMPLE} gained the agents"
    );
    assert!(
        plain * 100 >= SAMPLE * 5,
        "{plain} of {SAMPLE} gained plain env"
    );
}
