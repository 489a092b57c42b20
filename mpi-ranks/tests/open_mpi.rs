//! What reaches the ranks of Debian's Open MPI 4.1 from the launcher's environment, when the
//! remote daemons start in an empty environment as sshd gives them: each finding the policy's
//! launcher answer rests on, held with the real `mpirun`.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use mpi_ranks::{Error, ErrorKind, Launch, Mpi, Options, Run, Spawn, env, run};

const AGENT: &str = "env A=1 B=2 orted";

fn options(hosts: usize) -> Options {
    Options {
        mpi: Mpi::OpenMpi,
        hosts,
        ..Options::default()
    }
}

fn with_args(hosts: usize, args: &[&str]) -> Options {
    Options {
        args: args.iter().map(|a| a.to_string()).collect(),
        ..options(hosts)
    }
}

fn ok(launcher_env: &[(&str, &str)], options: &Options) -> Run {
    run(&env(launcher_env), options).unwrap_or_else(|e| panic!("{e}"))
}

fn every(run: &Run, value: &str) -> Vec<Option<String>> {
    vec![Some(value.to_string()); run.ranks.len()]
}

fn by<'a>(run: &'a Run, parent: &str) -> Vec<&'a Launch> {
    run.launches.iter().filter(|l| l.parent == parent).collect()
}

/// A fresh directory for marker files, and a name for it that only sh's safe characters make.
fn marker_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mpi-ranks-marker.{}.{test}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_plain_launcher_variable_reaches_no_rank() {
    for hosts in [1, 6] {
        let run = ok(&[("NCCL_IB_HCA", "mlx5")], &options(hosts));
        assert_eq!(
            run.values("NCCL_IB_HCA"),
            vec![None; hosts],
            "{hosts} hosts"
        );
    }
}

/// Beyond the plain variables: `mpirun` forwards every `OMPI_*` and `PMIX_*` variable of its
/// environment to the ranks (Open MPI's own parameters, `OMPI_MCA_*`, among them), so those
/// need no launch agent.
#[test]
fn launcher_variables_named_ompi_or_pmix_reach_every_rank() {
    let run = ok(
        &[
            ("OMPI_MCA_coll_hcoll_enable", "0"),
            ("OMPI_ANYTHING", "x"),
            ("PMIX_ANYTHING", "y"),
            ("PRTE_MCA_anything", "z"),
        ],
        &options(6),
    );
    assert_eq!(run.values("OMPI_MCA_coll_hcoll_enable"), every(&run, "0"));
    assert_eq!(run.values("OMPI_ANYTHING"), every(&run, "x"));
    assert_eq!(run.values("PMIX_ANYTHING"), every(&run, "y"));
    assert_eq!(run.values("PRTE_MCA_anything"), vec![None; 6]);
}

#[test]
fn the_launch_agent_env_reaches_the_rank_of_one_host() {
    let run = ok(&[("OMPI_MCA_orte_launch_agent", AGENT)], &options(1));
    assert_eq!(run.values("A"), every(&run, "1"));
    assert_eq!(run.values("B"), every(&run, "2"));
    // The one daemon, started through the agent by mpirun: the path of every host.
    assert_eq!(run.launches.len(), 1);
    assert_eq!(run.launches[0].parent, "mpirun.openmpi");
    assert!(run.launches[0].command.starts_with("env A=1 B=2 orted "));
}

#[test]
fn the_launch_agent_env_reaches_every_rank_of_six_hosts_through_a_tree_of_two_levels() {
    let run = ok(&[("OMPI_MCA_orte_launch_agent", AGENT)], &options(6));
    assert_eq!(run.values("A"), every(&run, "1"));
    assert_eq!(run.values("B"), every(&run, "2"));
    // mpirun starts daemons 1 and 2; each starts two more (radix 2), through the same agent,
    // with the same launch agent in front: the words went through a remote shell twice.
    let mut first: Vec<u32> = by(&run, "mpirun.openmpi")
        .iter()
        .map(|l| l.vpid().unwrap())
        .collect();
    first.sort();
    assert_eq!(first, [1, 2], "{:#?}", run.launches);
    let mut second: Vec<(u32, u32)> = by(&run, "orted")
        .iter()
        .map(|l| (l.parent_vpid().unwrap(), l.vpid().unwrap()))
        .collect();
    second.sort();
    assert_eq!(
        second,
        [(1, 3), (1, 5), (2, 4), (2, 6)],
        "{:#?}",
        run.launches
    );
    for launch in &run.launches {
        assert!(
            launch.command.starts_with("env A=1 B=2 orted "),
            "{launch:#?}"
        );
    }
}

#[test]
fn the_launch_agent_env_reaches_every_rank_of_six_hosts_started_by_mpirun_alone() {
    let flat = Options {
        spawn: Spawn::Flat,
        ..options(6)
    };
    let run = ok(&[("OMPI_MCA_orte_launch_agent", AGENT)], &flat);
    assert_eq!(run.values("A"), every(&run, "1"));
    assert_eq!(by(&run, "mpirun.openmpi").len(), 6);
}

#[test]
fn the_launch_agent_and_x_on_the_command_line_both_reach_the_ranks() {
    let run = ok(
        &[
            ("OMPI_MCA_orte_launch_agent", AGENT),
            ("NCCL_SOCKET_IFNAME", "eth0"),
        ],
        &with_args(6, &["-x", "NCCL_DEBUG=INFO", "-x", "NCCL_SOCKET_IFNAME"]),
    );
    assert_eq!(run.values("NCCL_DEBUG"), every(&run, "INFO"));
    assert_eq!(run.values("NCCL_SOCKET_IFNAME"), every(&run, "eth0"));
    assert_eq!(run.values("A"), every(&run, "1"));
    assert_eq!(run.values("B"), every(&run, "2"));
}

#[test]
fn a_users_x_wins_over_the_launch_agents_value() {
    let run = ok(
        &[("OMPI_MCA_orte_launch_agent", AGENT)],
        &with_args(6, &["-x", "A=other"]),
    );
    assert_eq!(run.values("A"), every(&run, "other"));
    assert_eq!(run.values("B"), every(&run, "2"));
}

#[test]
fn mca_base_env_list_forwards_alone_and_aborts_the_job_beside_x() {
    let list = [("OMPI_MCA_mca_base_env_list", "A=1;B"), ("B", "2")];
    let run = ok(&list, &options(2));
    assert_eq!(run.values("A"), every(&run, "1"));
    assert_eq!(run.values("B"), every(&run, "2"));

    let err = run_err(&list, &with_args(2, &["-x", "NCCL_DEBUG=INFO"]));
    assert_eq!(err.kind, ErrorKind::Exited(Some(1)), "{err}");
    assert!(
        err.output
            .contains("Open MPI does not support mixing these two methods"),
        "{err}"
    );
}

/// A `;` in the launch agent ends the remote command there: what precedes it runs on its own,
/// what follows runs as a command on the worker, and the daemon starts after the last `;`
/// with only what is written there.
#[test]
fn a_semicolon_in_the_launch_agent_runs_the_rest_as_a_command_on_the_worker() {
    let dir = marker_dir("semicolon");
    let marker = dir.join("ran");
    let agent = format!("env A=1;touch {};B=2 orted", marker.display());
    let run = ok(&[("OMPI_MCA_orte_launch_agent", &agent)], &options(2));
    // A never arrives, B does; `env A=1` printed the session's environment.
    assert_eq!(run.values("A"), vec![None; 2]);
    assert_eq!(run.values("B"), every(&run, "2"));
    assert!(run.output.lines().any(|l| l == "A=1"), "{}", run.output);
    // `touch` ran on the workers: the danger of any value with a `;` in it.
    assert!(marker.exists(), "{}", run.output);
    fs::remove_dir_all(dir).unwrap();
}

/// `$(…)` runs on the worker: in the first pass on the daemon's own host; under tree spawn
/// the daemon's command line quotes the agent in double quotes, where the first pass expands
/// it already, so the daemons it starts get the value of their parent's host.
#[test]
fn command_substitution_in_the_launch_agent_runs_on_the_worker_once_per_pass() {
    let run = ok(
        &[("OMPI_MCA_orte_launch_agent", "env A=$(hostname) orted")],
        &options(6),
    );
    let host_of_vpid: BTreeMap<u32, String> = run
        .launches
        .iter()
        .map(|l| (l.vpid().unwrap(), l.host.clone()))
        .collect();
    for rank in &run.ranks {
        let host = &rank["PMIX_HOSTNAME"];
        let launch = run.launches.iter().find(|l| &l.host == host).unwrap();
        let expected = match launch.parent_vpid() {
            None => host.clone(),
            Some(parent) => host_of_vpid[&parent].clone(),
        };
        assert_eq!(rank.get("A"), Some(&expected), "rank on {host}");
    }
    // Both cases happened.
    assert_eq!(by(&run, "orted").len(), 4);
}

/// Quotes do not survive: `mpirun` puts the agent on each daemon's command line inside double
/// quotes, where the value's own quotes end them, and no daemon starts.
#[test]
fn quotes_in_the_launch_agent_break_every_daemon() {
    for spawn in [Spawn::Flat, Spawn::Tree { radix: 2 }] {
        let err = run_err(
            &[("OMPI_MCA_orte_launch_agent", r#"env "A=1 2" orted"#)],
            &Options {
                spawn,
                ..options(2)
            },
        );
        assert!(
            err.output
                .contains(r#"orted: Error: unknown option "2 orted""#),
            "{err}"
        );
    }
}

/// Values of the characters `[A-Za-z0-9_./:,=+@%^-]` arrive intact through both passes.
#[test]
fn a_value_of_safe_characters_arrives_intact_through_the_tree() {
    let value = "Az09_./:,=+@%^-x";
    let agent = format!("env A={value} NCCL_TOPO_FILE=/etc/nccl/topo.xml orted");
    let run = ok(&[("OMPI_MCA_orte_launch_agent", &agent)], &options(6));
    assert_eq!(run.values("A"), every(&run, value));
    assert_eq!(
        run.values("NCCL_TOPO_FILE"),
        every(&run, "/etc/nccl/topo.xml")
    );
    assert_eq!(by(&run, "orted").len(), 4);
}

/// Open MPI 5's launch agent beside Open MPI 4's: 4.1 ignores it, and does not forward it.
#[test]
fn prte_launch_agent_beside_changes_nothing_on_open_mpi_4() {
    let alone = ok(&[("OMPI_MCA_orte_launch_agent", AGENT)], &options(6));
    let beside = ok(
        &[
            ("OMPI_MCA_orte_launch_agent", AGENT),
            ("PRTE_MCA_prte_launch_agent", "env A=9 C=3 prted"),
        ],
        &options(6),
    );
    assert_eq!(beside.values("A"), every(&beside, "1"));
    assert_eq!(beside.values("B"), every(&beside, "2"));
    assert_eq!(beside.values("C"), vec![None; 6]);
    assert_eq!(beside.values("PRTE_MCA_prte_launch_agent"), vec![None; 6]);
    for launch in &beside.launches {
        assert!(
            launch.command.starts_with("env A=1 B=2 orted "),
            "{launch:#?}"
        );
        assert!(!launch.command.contains("prted"), "{launch:#?}");
    }
    // The same variables in every rank, and the same daemons' tree.
    let names = |run: &Run| -> Vec<Vec<String>> {
        run.ranks
            .iter()
            .map(|r| r.keys().cloned().collect())
            .collect()
    };
    assert_eq!(names(&alone), names(&beside));
    let tree = |run: &Run| {
        let mut t: Vec<(Option<u32>, Option<u32>)> = run
            .launches
            .iter()
            .map(|l| (l.parent_vpid(), l.vpid()))
            .collect();
        t.sort();
        t
    };
    assert_eq!(tree(&alone), tree(&beside));
}

/// The env an MPIJob's launcher has from mpi-operator: its ssh options reach the agent, which
/// skips them as ssh does.
#[test]
fn mpi_operators_launcher_variables_leave_the_bed_working() {
    let run = ok(
        &[
            ("OMPI_MCA_orte_launch_agent", AGENT),
            ("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10 -p 22"),
            ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
            ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
        ],
        &options(2),
    );
    assert_eq!(run.values("A"), every(&run, "1"));
}

fn run_err(launcher_env: &[(&str, &str)], options: &Options) -> Error {
    match run(&env(launcher_env), options) {
        Ok(run) => panic!("expected a failure, the ranks saw {:#?}", run.ranks),
        Err(e) => e,
    }
}
