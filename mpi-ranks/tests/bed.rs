//! The bed itself: what the agent gives a remote command, that one host takes the same path as
//! many, and that a hang ends at the timeout with the command and its output.

use std::fs;
use std::time::{Duration, Instant};

use mpi_ranks::{ErrorKind, Mpi, Options, SESSION_ENV, env, run};

/// What a rank of Open MPI 4.1 has besides the session's variables, with nothing in the
/// launcher's environment: the working directory, and what the daemon adds for the rank (`OMPI_*`,
/// `PMIX_*`, and two that keep the PSM libraries from installing signal handlers).
fn added_by_open_mpi(name: &str) -> bool {
    name.starts_with("OMPI_")
        || name.starts_with("PMIX_")
        || ["PWD", "HFI_NO_BACKTRACE", "IPATH_NO_BACKTRACE"].contains(&name)
}

#[test]
fn a_rank_has_the_session_environment_and_what_open_mpi_adds_alone() {
    let options = Options {
        hosts: 1,
        ..Options::default()
    };
    let run = run(&env(&[("NCCL_DEBUG", "INFO")]), &options).unwrap_or_else(|e| panic!("{e}"));
    let rank = &run.ranks[0];
    let others: Vec<&String> = rank
        .keys()
        .filter(|n| !SESSION_ENV.contains(&n.as_str()) && !added_by_open_mpi(n))
        .collect();
    assert!(others.is_empty(), "{others:?} in {rank:#?}");
    assert_eq!(rank["PATH"], mpi_ranks::SESSION_PATH);
    assert_eq!(rank["SHELL"], "/bin/sh");
    // The host is the address it was started as, in its own UTS namespace.
    assert_eq!(rank["PMIX_HOSTNAME"], "127.0.0.2");
}

#[test]
fn the_launcher_runs_in_exactly_the_given_environment_and_path_and_home() {
    let run = run(
        &env(&[("A", "1"), ("A", "2"), ("OMPI_SEEN", "yes")]),
        &Options::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // The command names the launcher's environment in full, the later of two values last.
    assert!(
        run.command
            .starts_with("env -i A=1 A=2 OMPI_SEEN=yes PATH=/usr/bin:/bin HOME=/"),
        "{}",
        run.command
    );
    // OMPI_* variables travel to the ranks: the bed's own run-as-root permission is a
    // command-line flag, so that none of its words shows there.
    assert!(run.command.contains(" --allow-run-as-root "));
    for rank in &run.ranks {
        assert_eq!(rank.get("OMPI_SEEN").map(String::as_str), Some("yes"));
        assert!(!rank.keys().any(|n| n.starts_with("OMPI_ALLOW_RUN_AS_ROOT")));
    }
}

#[test]
fn a_hang_ends_at_the_timeout_with_the_command_and_its_output_and_no_process_left() {
    let options = Options {
        hosts: 2,
        timeout: Duration::from_secs(3),
        ..Options::default()
    };
    // Each daemon's start sleeps first: mpirun waits for daemons that never call back.
    let started = Instant::now();
    let err = run(
        &env(&[("OMPI_MCA_orte_launch_agent", "sleep 987654;orted")]),
        &options,
    )
    .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(err.kind, ErrorKind::TimedOut(Duration::from_secs(3)));
    let text = err.to_string();
    assert!(
        text.starts_with(
            "the MPI job ran past its timeout of 3s, and was killed\ncommand: env -i "
        ),
        "{text}"
    );
    assert!(
        text.contains("mpirun.openmpi --allow-run-as-root"),
        "{text}"
    );
    assert!(!sleeping("987654"), "a sleep of the job outlived it");
}

/// Whether a process `sleep SECONDS` runs.
fn sleeping(seconds: &str) -> bool {
    let wanted = format!("sleep\0{seconds}\0");
    fs::read_dir("/proc").unwrap().any(|entry| {
        let path = entry.unwrap().path().join("cmdline");
        fs::read(path).is_ok_and(|c| c.ends_with(wanted.as_bytes()))
    })
}

#[test]
fn a_failed_job_reports_its_exit_code_command_and_output() {
    let options = Options {
        mpi: Mpi::OpenMpi,
        hosts: 1,
        args: vec!["--no-such-option".to_string()],
        ..Options::default()
    };
    let err = run(&[], &options).unwrap_err();
    assert!(
        matches!(err.kind, ErrorKind::Exited(Some(code)) if code != 0),
        "{err}"
    );
    assert!(err.command.contains("--no-such-option"), "{err}");
    assert!(err.output.contains("no-such-option"), "{err}");
}

#[test]
fn hosts_out_of_range_are_refused() {
    for hosts in [0, 251] {
        let err = run(
            &[],
            &Options {
                hosts,
                ..Options::default()
            },
        )
        .unwrap_err();
        assert_eq!(
            err.kind,
            ErrorKind::Start(format!("hosts must be 1 to 250, not {hosts}"))
        );
    }
}
