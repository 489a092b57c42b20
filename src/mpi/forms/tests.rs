use super::*;
use crate::cluster::{Cluster, Mode};
use crate::json::object::{Shape, read_object};
use crate::profile::var;

/// The own env of a launcher container whose JSON is `container`, for `names`; its `envFrom`
/// ConfigMap `env` gives `NCCL_IB_HCA`, any other read is refused.
fn own_of(container: &str, names: &[&str]) -> Own<'static> {
    let host = |_: &str, request: &[u8]| {
        let request = String::from_utf8_lossy(request);
        if request.contains(r#""name":"env""#) {
            Ok(br#"{"metadata":{"name":"env"},"data":{"NCCL_IB_HCA":"mlx5_1"}}"#.to_vec())
        } else {
            Err("Callback evaluation failure: error sending request".to_string())
        }
    };
    let cluster = Cluster::new(Some("jobs"), Mode::Warn, &host);
    let payload = Box::leak(format!(r#"{{"request":{{"object":{container}}}}}"#).into_boxed_str());
    let container = read_object(payload, &Shape::TEXT).unwrap();
    // The entries borrow the container's text, which outlives the view of it.
    Own::read(Some(&container), names, &cluster)
}

const JOB: &str = "jobs/nccl";

fn worker() -> Vec<EnvVar<'static>> {
    vec![
        var!("CUDA_DEVICE_ORDER", "PCI_BUS_ID"),
        var!("OMPI_MCA_coll_hcoll_enable", "0"),
        var!("NCCL_TOPO_FILE", "/etc/nccl/nccl-topo.xml"),
        var!("UCX_TLS", "tcp"),
    ]
}

fn names(env: &[EnvVar<'_>]) -> Vec<String> {
    env.iter()
        .map(|v| format!("{}={}", v.name, v.value))
        .collect()
}

#[test]
fn open_mpi_passes_ompi_variables_as_they_are_and_the_others_through_both_agents() {
    let own = own_of(r#"{"name":"launcher"}"#, &[]);
    let passing = pass(JOB.into(), (&OPEN_MPI, "infiniband"), &worker(), &own);
    assert_eq!(
        names(&passing.env),
        [
            "OMPI_MCA_coll_hcoll_enable=0",
            "OMPI_MCA_orte_launch_agent=env CUDA_DEVICE_ORDER=PCI_BUS_ID NCCL_TOPO_FILE=/etc/nccl/nccl-topo.xml UCX_TLS=tcp orted",
            "PRTE_MCA_prte_launch_agent=env CUDA_DEVICE_ORDER=PCI_BUS_ID NCCL_TOPO_FILE=/etc/nccl/nccl-topo.xml UCX_TLS=tcp prted",
            "PRTE_MCA_plm_ssh_no_tree_spawn=1",
        ]
    );
    assert_eq!(
        passing.carried,
        ["CUDA_DEVICE_ORDER", "NCCL_TOPO_FILE", "UCX_TLS"]
    );
    assert!(passing.agents && passing.kept.is_empty() && passing.left_out.is_empty());
    assert!(passing.warnings("launcher", &own).is_empty());
}

#[test]
fn hydra_passes_everything_as_it_is() {
    let own = own_of(r#"{"name":"launcher"}"#, &[]);
    let odd = [var!("A", "x;touch y"), var!("OMPI_X", "1")];
    for mpi in [&INTEL, &MPICH] {
        let passing = pass(JOB.into(), (mpi, "infiniband"), &odd, &own);
        assert_eq!(names(&passing.env), ["A=x;touch y", "OMPI_X=1"]);
        assert!(!passing.agents && passing.carried.is_empty() && passing.left_out.is_empty());
    }
}

#[test]
fn the_launchers_own_env_and_agents_win_and_a_second_pass_says_nothing() {
    let container = r#"{"name":"launcher","env":[
        {"name":"OMPI_MCA_coll_hcoll_enable","value":"1"},
        {"name":"CUDA_DEVICE_ORDER","value":"PCI_BUS_ID"},
        {"name":"UCX_TLS","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}],
        "envFrom":[{"configMapRef":{"name":"env"}},{"secretRef":{"name":"secret"}}]}"#;
    let mut worker = worker();
    worker.push(var!("NCCL_IB_HCA", "mlx5"));
    let names_asked: Vec<&str> = worker.iter().map(|v| v.name.as_ref()).collect();
    let own = own_of(container, &names_asked);
    let passing = pass(JOB.into(), (&OPEN_MPI, "infiniband"), &worker, &own);
    // The same value is no conflict; another, one by valueFrom or envFrom, is the launcher's:
    // said where it reaches no rank (an OMPI_ variable reaches them as the launcher sets it).
    assert_eq!(passing.kept, ["UCX_TLS", "NCCL_IB_HCA"]);
    assert_eq!(passing.carried, ["NCCL_TOPO_FILE"]);
    assert!(
        !passing
            .env
            .iter()
            .any(|var| var.name == "OMPI_MCA_coll_hcoll_enable")
    );
    let warnings = passing.warnings("launcher", &own);
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert!(
        warnings[0].contains("sets UCX_TLS, NCCL_IB_HCA itself: kept"),
        "{}",
        warnings[0]
    );
    // The Secret could give the agents' variables, which the container gains.
    assert!(
        warnings[1].contains("takes env from Secret secret"),
        "{}",
        warnings[1]
    );

    // A launcher that has the agents the policy writes gets nothing more, and no warning.
    let mut wired = String::from(r#"{"name":"launcher","env":["#);
    let once = pass(
        JOB.into(),
        (&OPEN_MPI, "infiniband"),
        &worker,
        &own_of(r#"{"name":"launcher"}"#, &[]),
    );
    for (at, var) in once.env.iter().enumerate() {
        if at > 0 {
            wired.push(',');
        }
        wired.push_str(&var.json);
    }
    wired.push_str("]}");
    let own = own_of(&wired, &names_asked);
    let again = pass(JOB.into(), (&OPEN_MPI, "infiniband"), &worker, &own);
    assert!(again.env.is_empty(), "{:?}", again.env);
    assert!(again.warnings("launcher", &own).is_empty());

    // An agent of the launcher's own: kept, and none added beside it.
    let own = own_of(
        r#"{"name":"launcher","env":[{"name":"PRTE_MCA_prte_launch_agent","value":"prted"}]}"#,
        &names_asked,
    );
    let theirs = pass(JOB.into(), (&OPEN_MPI, "infiniband"), &worker, &own);
    assert_eq!(names(&theirs.env), ["OMPI_MCA_coll_hcoll_enable=0"]);
    assert_eq!(theirs.own_agents, ["PRTE_MCA_prte_launch_agent"]);
    let warnings = theirs.warnings("launcher", &own);
    assert!(
        warnings[0].contains("sets PRTE_MCA_prte_launch_agent itself"),
        "{warnings:?}"
    );
}

#[test]
fn only_shell_safe_names_and_values_ride_the_agent() {
    assert!(shell_safe("Az09_./:,=+@%^-") && shell_safe(""));
    for unsafe_text in [
        "a;b", "$(x)", "a b", "\"q\"", "'q'", "a`b`", "a|b", "a&b", "~", "a\nb", "é",
    ] {
        assert!(!shell_safe(unsafe_text), "{unsafe_text}");
    }
    let worker = [
        var!("SAFE", "a,b:c"),
        var!("SEMI", "a;touch /tmp/x"),
        var!("-n", "1"),
        var!("EMPTY", ""),
    ];
    let own = own_of(r#"{"name":"launcher"}"#, &[]);
    let passing = pass(JOB.into(), (&OPEN_MPI, "infiniband"), &worker, &own);
    assert_eq!(passing.carried, ["SAFE", "EMPTY"]);
    assert_eq!(passing.left_out, ["SEMI", "-n"]);
    assert_eq!(
        passing.env[0].value, "env SAFE=a,b:c EMPTY= orted",
        "{:?}",
        passing.env
    );
    let warnings = passing.warnings("launcher", &own);
    assert!(
        warnings[0].starts_with("multi-node networking: SEMI, -n of the env"),
        "{warnings:?}"
    );
}

#[test]
fn a_launcher_with_nothing_to_carry_gets_no_agent() {
    let own = own_of(r#"{"name":"launcher"}"#, &[]);
    let passing = pass(
        JOB.into(),
        (&OPEN_MPI, "infiniband"),
        &[var!("OMPI_MCA_x", "1")],
        &own,
    );
    assert_eq!(names(&passing.env), ["OMPI_MCA_x=1"]);
    assert!(!passing.agents);
    assert!(
        pass(JOB.into(), (&OPEN_MPI, "infiniband"), &[], &own)
            .env
            .is_empty()
    );
}
