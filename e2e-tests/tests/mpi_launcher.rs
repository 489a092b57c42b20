//! MPI jobs (behaviour.md §3.12) with the real launchers: the launcher environment the compiled
//! module answers for an MPIJob's launcher (the cases of `e2e-tests/cases/mpi/`, each with its
//! MPIJob in the fixture cluster) is run by `mpi-ranks`' bed, the real `mpirun` with exactly that
//! environment and its remote daemons started clean, as sshd starts them. Every rank must see
//! every variable the module gives the job's workers, with the same value, but those the launcher
//! sets itself; with `-x` on the command line, with six daemons in a tree, and a user's `-x`
//! winning. The workers' env is the module's answer for the worker pod mpi-operator makes from the
//! MPIJob (`fixtures::mpi`, written from its controller's code, apart from the policy's own making
//! of it).

use std::collections::BTreeMap;

use case_runner::cases::Case;
use e2e_tests::{Instance, Response, admission_request, pod_kind, policy};
use mpi_ranks::{Mpi, Options, Run, Spawn, run};
use serde_json::{Value, json};

use e2e_tests::case_named as case;

/// The module's answer to `pod` under `case`'s settings and cluster.
fn answer(instance: &Instance, case: &Case, settings: &Value, pod: &Value) -> Response {
    instance.set_cluster(case.cluster.clone());
    let request = admission_request("CREATE", &pod_kind(), pod);
    let response = instance.validate(&request, settings).expect("an answer");
    assert!(response.accepted, "{}: {:?}", case.name, response.message);
    response
}

/// A container's env as name and value, as the kubelet gives it (an entry without a value is
/// the empty string).
fn env_of(container: &Value) -> Vec<(String, String)> {
    container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|entry| {
            let name = entry["name"].as_str().expect("a name").to_string();
            (
                name,
                entry["value"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// The first worker pod mpi-operator v2 makes from the case's MPIJob, as `fixtures` writes it
/// from its controller's code.
fn worker_of(case: &Case) -> Value {
    let job = case
        .cluster
        .as_ref()
        .and_then(|c| c.objects.iter().find(|o| o["kind"] == "MPIJob"))
        .expect("the case's MPIJob");
    fixtures::mpi::mpi_worker(job).expect("the job has a Worker")
}

/// What the module gives the case's launcher and its workers: the launcher's env as it was, as
/// the module answers it, and the env the workers' first container gains.
struct Job {
    launcher_before: Vec<(String, String)>,
    launcher: Vec<(String, String)>,
    workers: Vec<(String, String)>,
    warnings: Vec<String>,
}

fn job(instance: &Instance, case: &Case, settings: &Value) -> Job {
    let launcher = answer(instance, case, settings, &case.object);
    let mutated = launcher.mutated_object.expect("the launcher gains its env");
    // Only its first container's env (and the record) changed.
    let mut unchanged = mutated.clone();
    unchanged["spec"]["containers"][0]["env"] = case.object["spec"]["containers"][0]["env"].clone();
    unchanged["metadata"]["annotations"]
        .as_object_mut()
        .unwrap()
        .remove("nmp.nvidia.com/multi-node-networking-injected");
    assert_eq!(
        unchanged, case.object,
        "{}: more than env changed",
        case.name
    );
    let worker = worker_of(case);
    let wired = answer(instance, case, settings, &worker)
        .mutated_object
        .expect("the worker is wired");
    let before: Vec<(String, String)> = env_of(&worker["spec"]["containers"][0]);
    let workers = env_of(&wired["spec"]["containers"][0])
        .into_iter()
        .filter(|var| !before.contains(var))
        .collect();
    Job {
        launcher_before: env_of(&case.object["spec"]["containers"][0]),
        launcher: env_of(&mutated["spec"]["containers"][0]),
        workers,
        warnings: launcher.warnings.unwrap_or_default(),
    }
}

fn open_mpi(hosts: usize, args: &[&str]) -> Options {
    Options {
        mpi: Mpi::OpenMpi,
        hosts,
        spawn: Spawn::Tree { radix: 2 },
        args: args.iter().map(|a| a.to_string()).collect(),
        ..Options::default()
    }
}

fn ranks(launcher_env: &[(String, String)], options: &Options) -> Run {
    run(launcher_env, options).unwrap_or_else(|e| panic!("{e}"))
}

/// Every rank sees each of `want` (name, value), by rank; what it sees otherwise is named.
fn assert_every_rank_sees(run: &Run, want: &[(String, String)], what: &str) {
    for (rank, seen) in run.ranks.iter().enumerate() {
        let wrong: BTreeMap<&str, Option<&String>> = want
            .iter()
            .filter(|(name, value)| seen.get(name) != Some(value))
            .map(|(name, _)| (name.as_str(), seen.get(name)))
            .collect();
        assert!(
            wrong.is_empty(),
            "{what}: rank {rank} sees {wrong:?}, not the workers' values\n{}",
            run.command
        );
    }
}

/// The workers' variables, but those the launcher sets itself: they stay its own.
fn expected(job: &Job) -> Vec<(String, String)> {
    let own = |name: &str| job.launcher_before.iter().any(|(n, _)| n == name);
    job.workers
        .iter()
        .filter(|(name, _)| !own(name))
        .cloned()
        .collect()
}

const OPEN_MPI_CASES: [&str; 3] = [
    "mpi-launcher-azure-nd-h100-v5-open-mpi",
    "mpi-launcher-gcp-a3-mega-tcpxo-open-mpi",
    "mpi-launcher-aws-p6e-gb200-without-compute-domain",
];

#[test]
fn open_mpi_4s_ranks_see_every_variable_the_policy_gives_the_workers() {
    let instance = policy().instance().unwrap();
    for name in OPEN_MPI_CASES {
        let case = case(name);
        let job = job(&instance, &case, &case.settings);
        let want = expected(&job);
        assert!(want.len() >= 4, "{name}: the workers get {:?}", job.workers);
        for (hosts, args) in [
            (1, &[][..]),
            (6, &[][..]),
            (6, &["-x", "NCCL_DEBUG=INFO"][..]),
        ] {
            let run = ranks(&job.launcher, &open_mpi(hosts, args));
            assert_every_rank_sees(&run, &want, &format!("{name}, {hosts} hosts, {args:?}"));
            // Six daemons in a tree: mpirun starts two, each of them two more.
            if hosts == 6 {
                let by_orted = run.launches.iter().filter(|l| l.parent == "orted").count();
                assert_eq!(by_orted, 4, "{name}: {:#?}", run.launches);
            }
            if !args.is_empty() {
                assert!(run.ranks.iter().all(|r| r["NCCL_DEBUG"] == "INFO"));
            }
        }
        // What the launcher sets itself stays its own: mpi-operator's Open MPI variables.
        let run = ranks(&job.launcher, &open_mpi(2, &[]));
        for rank in &run.ranks {
            assert_eq!(rank["OMPI_MCA_orte_keep_fqdn_hostnames"], "true", "{name}");
        }
        assert!(job.warnings.is_empty(), "{name}: {:?}", job.warnings);
    }
}

#[test]
fn a_users_x_wins_over_the_workers_value() {
    let instance = policy().instance().unwrap();
    let case = case("mpi-launcher-azure-nd-h100-v5-open-mpi");
    let job = job(&instance, &case, &case.settings);
    let (name, value) = job
        .workers
        .iter()
        .find(|(name, _)| name == "NCCL_SOCKET_IFNAME")
        .expect("Azure's workers get NCCL_SOCKET_IFNAME");
    assert_eq!(value, "eth0");
    let run = ranks(
        &job.launcher,
        &open_mpi(6, &["-x", &format!("{name}=ib0"), "-x", "NCCL_DEBUG=INFO"]),
    );
    for rank in &run.ranks {
        assert_eq!(rank[name.as_str()], "ib0");
        assert_eq!(rank["UCX_TLS"], "tcp");
    }
}

/// Open MPI 5 (PRRTE) takes its own agent, which the policy gives beside Open MPI 4's, and with
/// it `PRTE_MCA_plm_ssh_no_tree_spawn=1`: a tree of two levels, which loses the agent from its
/// second level on, is launched flat instead, and every rank gets the workers' env.
#[test]
fn open_mpi_5s_ranks_see_the_workers_env_through_its_own_agent() {
    let prefix = mpi_ranks::open_mpi_5(env!("CARGO_TARGET_TMPDIR"));
    let instance = policy().instance().unwrap();
    for name in OPEN_MPI_CASES {
        let case = case(name);
        let job = job(&instance, &case, &case.settings);
        let names: Vec<&str> = job.launcher.iter().map(|(n, _)| n.as_str()).collect();
        assert!(
            names.contains(&"OMPI_MCA_orte_launch_agent")
                && names.contains(&"PRTE_MCA_prte_launch_agent"),
            "{name}: {names:?}"
        );
        let options = Options {
            mpi: Mpi::OpenMpi5 {
                prefix: prefix.clone(),
            },
            hosts: 6,
            spawn: Spawn::Tree { radix: 2 },
            ..Options::default()
        };
        let run = ranks(&job.launcher, &options);
        assert_every_rank_sees(&run, &expected(&job), &format!("{name}, Open MPI 5"));
        assert!(run.launches.iter().all(|l| l.parent == "prterun"), "{name}");
    }
}

/// Intel MPI's launcher carries the variables as they are; MPICH's Hydra, which Intel's
/// `mpirun` is too, gives them to every rank, a value with a `;` as it is.
#[test]
fn hydra_launchers_carry_the_workers_env_as_it_is() {
    let instance = policy().instance().unwrap();
    for name in [
        "mpi-launcher-azure-intel-mpi-plain-env",
        "mpi-launcher-mpich-passes-a-semicolon-as-it-is",
    ] {
        let case = case(name);
        let job = job(&instance, &case, &case.settings);
        let want = expected(&job);
        for var in &want {
            assert!(
                job.launcher.contains(var),
                "{name}: {var:?} not on the launcher"
            );
        }
        let options = Options {
            mpi: Mpi::Mpich,
            hosts: 2,
            ..Options::default()
        };
        assert_every_rank_sees(&ranks(&job.launcher, &options), &want, name);
    }
}

/// A settings value with a `;` and a command after it: Open MPI's launcher gets it in no agent
/// (a warning names it), the command runs on no worker, and the other variables arrive.
#[test]
fn a_value_with_a_semicolon_never_runs_on_a_worker() {
    let instance = policy().instance().unwrap();
    let case = case("mpi-launcher-open-mpi-leaves-a-semicolon-out-of-the-agent");
    let dir = std::env::temp_dir().join(format!("mpi-launcher-marker.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("ran");
    let mut settings = case.settings.clone();
    let value = format!("eth0;touch {}", marker.display());
    settings["azure"]["env"]["NCCL_SOCKET_IFNAME"] = json!(value);
    let job = job(&instance, &case, &settings);
    assert!(
        job.warnings
            .iter()
            .any(|w| w.starts_with("multi-node networking: NCCL_SOCKET_IFNAME of the env")),
        "{:?}",
        job.warnings
    );
    assert!(
        job.workers
            .contains(&("NCCL_SOCKET_IFNAME".to_string(), value.clone()))
    );
    let run = ranks(&job.launcher, &open_mpi(6, &[]));
    assert!(
        !marker.exists(),
        "the value ran on a worker: {}",
        run.output
    );
    let want: Vec<(String, String)> = expected(&job)
        .into_iter()
        .filter(|(name, _)| name != "NCCL_SOCKET_IFNAME")
        .collect();
    assert_every_rank_sees(&run, &want, "beside the value left out");
    for rank in &run.ranks {
        assert_eq!(rank.get("NCCL_SOCKET_IFNAME"), None);
    }
    std::fs::remove_dir_all(dir).unwrap();
}
