//! MPICH's Hydra (`mpiexec`, Intel MPI's `mpirun` too) through the same clean agent: it sends
//! the launcher's whole environment to its proxies itself, not on their command lines, so the
//! plain variables reach every rank, and Open MPI's launch agent is one more plain variable.

use mpi_ranks::{Mpi, Options, env, run};

fn hydra(hosts: usize) -> Options {
    Options {
        mpi: Mpi::Mpich,
        hosts,
        ..Options::default()
    }
}

#[test]
fn hydra_passes_the_launchers_whole_environment_to_every_rank() {
    for hosts in [1, 6] {
        let run = run(
            &env(&[
                ("NCCL_IB_HCA", "mlx5"),
                ("NCCL_TOPO_FILE", "/etc/nccl/topo.xml"),
                ("ODD", "a;b $(c) \"d e\""),
            ]),
            &hydra(hosts),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let all = |v: &str| vec![Some(v.to_string()); hosts];
        assert_eq!(run.values("NCCL_IB_HCA"), all("mlx5"));
        assert_eq!(run.values("NCCL_TOPO_FILE"), all("/etc/nccl/topo.xml"));
        // Any value: it never passes through a shell.
        assert_eq!(run.values("ODD"), all("a;b $(c) \"d e\""));
        // Every proxy started by mpiexec through the agent, its command line free of the env.
        assert_eq!(run.launches.len(), hosts);
        for launch in &run.launches {
            assert_eq!(launch.parent, "mpiexec.hydra");
            assert!(launch.command.contains("hydra_pmi_proxy"), "{launch:#?}");
            assert!(!launch.command.contains("mlx5"), "{launch:#?}");
        }
    }
}

#[test]
fn open_mpis_launch_agent_is_a_plain_variable_to_hydra() {
    let agent = "env NCCL_IB_HCA=mlx5 orted";
    let run = run(
        &env(&[
            ("NCCL_IB_HCA", "mlx5"),
            ("OMPI_MCA_orte_launch_agent", agent),
            ("PRTE_MCA_prte_launch_agent", "env NCCL_IB_HCA=mlx5 prted"),
        ]),
        &hydra(2),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let all = |v: &str| vec![Some(v.to_string()); 2];
    assert_eq!(run.values("NCCL_IB_HCA"), all("mlx5"));
    assert_eq!(run.values("OMPI_MCA_orte_launch_agent"), all(agent));
    for launch in &run.launches {
        assert!(!launch.command.contains("orted"), "{launch:#?}");
    }
}
