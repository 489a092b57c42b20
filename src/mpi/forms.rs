//! How each MPI gets the launcher's env to its ranks, as data (behaviour.md §3.12), and what an
//! MPIJob's launcher is given so that its ranks see the env the policy gives its workers. Each
//! row's facts are held with the real launchers in `mpi-ranks/` (docs/development.md, "MPI
//! launchers"): Open MPI's `mpirun` passes its `OMPI_*` variables to every rank and no other
//! (4.1 also `PMIX_*`, 5.0 not), and starts each remote daemon with its launch agent's words,
//! whose `env NAME=value` the daemon and its ranks inherit; Hydra (MPICH, Intel MPI) sends the
//! launcher's whole environment to its proxies itself, past the shell.

use std::borrow::Cow;

use super::own::{Own, Set};
use crate::error::join;
use crate::profile::EnvVar;

/// One MPI of mpi-operator's `spec.mpiImplementation`.
#[derive(Debug, PartialEq, Eq)]
pub struct Mpi {
    /// As `spec.mpiImplementation` names it.
    pub name: &'static str,
    /// The launcher's variables its launcher gives every rank as they are: those whose names
    /// begin with one of these; `None`: every one.
    pub forwards: Option<&'static [&'static str]>,
    /// The launch agents: each remote daemon starts as `env NAME=value … <daemon>`, from which
    /// it and its ranks inherit the variables.
    pub agents: &'static [Agent],
    /// Variables set beside the agents (the launcher's own, where it sets them, win).
    pub beside: &'static [(&'static str, &'static str)],
}

/// A launch agent: the launcher's variable it is read from, and the daemon it starts.
#[derive(Debug, PartialEq, Eq)]
pub struct Agent {
    pub variable: &'static str,
    pub daemon: &'static str,
}

/// Open MPI, mpi-operator's default: `OMPI_*` variables reach the ranks as they are (4.1 and
/// 5.0); every other variable through the launch agents. 4.1 (ORTE) reads
/// `OMPI_MCA_orte_launch_agent`; 5.0 (PRRTE) ignores it and reads `PRTE_MCA_prte_launch_agent`,
/// which 4.1 ignores. PRRTE 3.0 passes its `PRTE_MCA_*` variables on to the daemons it starts
/// under tree spawn with their values cut at the first `=` (`plm_base_launch_support.c`, fixed
/// on PRRTE's master in 8b1dd2a40b, in no release), so that its agent reaches the second level
/// of the tree as `env NAME` and no daemon starts there: with the default radix, from the 65th
/// host on. `PRTE_MCA_plm_ssh_no_tree_spawn=1` has `mpirun` start every daemon itself.
pub const OPEN_MPI: Mpi = Mpi {
    name: "OpenMPI",
    forwards: Some(&["OMPI_"]),
    agents: &[
        Agent {
            variable: "OMPI_MCA_orte_launch_agent",
            daemon: "orted",
        },
        Agent {
            variable: "PRTE_MCA_prte_launch_agent",
            daemon: "prted",
        },
    ],
    beside: &[("PRTE_MCA_plm_ssh_no_tree_spawn", "1")],
};

/// Intel MPI: its `mpirun` is Hydra, which passes the launcher's whole environment (its
/// `-genvall`, the default: Intel's documentation; MPICH's Hydra held in `mpi-ranks/`).
pub const INTEL: Mpi = Mpi {
    name: "Intel",
    forwards: None,
    agents: &[],
    beside: &[],
};

/// MPICH: Hydra, which passes the launcher's whole environment.
pub const MPICH: Mpi = Mpi {
    name: "MPICH",
    ..INTEL
};

/// mpi-operator's three, in its CRD's order.
pub const MPIS: [&Mpi; 3] = [&OPEN_MPI, &INTEL, &MPICH];

/// Whether `text` passes through the remote shells that start Open MPI's daemons as it is:
/// letters, digits and `_./:,=+@%^-`, held intact through two levels of tree spawn in
/// `mpi-ranks/`. A `;` there ends the command and runs the rest on the worker, `$(…)` runs on
/// it, and quotes do not survive one level.
pub fn shell_safe(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"_./:,=+@%^-".contains(&b))
}

/// A name `env` sets as a variable: safe, not empty, no `=`, and no leading `-`, which `env`
/// would read as an option.
fn safe_name(name: &str) -> bool {
    shell_safe(name) && !name.is_empty() && !name.starts_with('-') && !name.contains('=')
}

/// What a launcher is given for its ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passing<'a> {
    /// The MPIJob, `namespace/name` (`name` without a namespace).
    pub job: String,
    /// The fabric its workers are wired for.
    pub fabric: &'static str,
    pub mpi: &'static Mpi,
    /// The entries for the launcher's container, in order: the variables its MPI passes as they
    /// are, then the launch agents and what goes beside them.
    pub env: Vec<EnvVar<'a>>,
    /// The variables the launch agents carry (or would, where the launcher sets its own agent).
    pub carried: Vec<Cow<'a, str>>,
    /// The launch agents are among `env`.
    pub agents: bool,
    /// The workers' variables the launcher sets itself to other values, which its MPI does not
    /// pass to the ranks as they are: its own are kept, and reach the ranks only by `-x`.
    pub kept: Vec<Cow<'a, str>>,
    /// The launch agents the launcher sets itself to other words: kept, and none is added.
    pub own_agents: Vec<&'static str>,
    /// The workers' variables left out of the agents: their names or values are not shell-safe.
    pub left_out: Vec<Cow<'a, str>>,
}

/// What the launcher of `job`, of `mpi`, whose container sets `own`, is given so that its ranks
/// see `worker`: the env the policy gives the first container of its workers, for `fabric`.
pub fn pass<'a>(
    job: String,
    (mpi, fabric): (&'static Mpi, &'static str),
    worker: &[EnvVar<'a>],
    own: &Own<'_>,
) -> Passing<'a> {
    let mut passing = Passing {
        job,
        fabric,
        mpi,
        env: Vec::new(),
        carried: Vec::new(),
        agents: false,
        kept: Vec::new(),
        own_agents: Vec::new(),
        left_out: Vec::new(),
    };
    let mut carried = Vec::new();
    for var in worker {
        let forwarded = mpi
            .forwards
            .is_none_or(|prefixes| prefixes.iter().any(|prefix| var.name.starts_with(prefix)));
        match own.get(&var.name) {
            // The launcher's own value reaches the ranks in the workers' place, as the user's
            // value of a worker's variable stays (behaviour.md §4): nothing to say.
            Some(_) if forwarded => continue,
            Some(Set::Value(value)) if value == var.value => continue,
            // Reaches no rank unless mpirun -x passes it, and the workers' does not either.
            Some(_) => {
                passing.kept.push(var.name.clone());
                continue;
            }
            None => {}
        }
        if forwarded {
            passing.env.push(var.clone());
        } else if safe_name(&var.name) && shell_safe(&var.value) {
            carried.push(var);
        } else {
            passing.left_out.push(var.name.clone());
        }
    }
    passing.carried = carried.iter().map(|var| var.name.clone()).collect();
    if !carried.is_empty() {
        add_agents(&mut passing, &carried, own);
    }
    passing
}

/// Adds `mpi`'s launch agents carrying `carried`, and what goes beside them, unless the
/// launcher sets an agent itself: then its own stands, and a second pass, which finds the
/// agents the policy wrote, adds nothing and says nothing.
fn add_agents(passing: &mut Passing<'_>, carried: &[&EnvVar<'_>], own: &Own<'_>) {
    let agents: Vec<EnvVar<'static>> = passing
        .mpi
        .agents
        .iter()
        .map(|agent| {
            let mut words = String::from("env");
            for var in carried {
                for part in [" ", &var.name, "=", &var.value] {
                    words.push_str(part);
                }
            }
            words.push(' ');
            words.push_str(agent.daemon);
            EnvVar::new(Cow::Borrowed(agent.variable), Cow::Owned(words))
        })
        .collect();
    let taken = |env: &[EnvVar<'_>], name: &str| env.iter().any(|var| var.name == name);
    let theirs: Vec<&'static str> = passing
        .mpi
        .agents
        .iter()
        .map(|agent| agent.variable)
        .filter(|&name| own.get(name).is_some() || taken(&passing.env, name))
        .collect();
    if !theirs.is_empty() {
        let same = agents
            .iter()
            .all(|ours| own.get(&ours.name) == Some(Set::Value(ours.value.clone())));
        if !same {
            passing.own_agents = theirs;
        }
        return;
    }
    passing.env.extend(agents);
    passing.agents = true;
    for (name, value) in passing.mpi.beside {
        if own.get(name).is_none() && !taken(&passing.env, name) {
            let var = EnvVar::new(Cow::Borrowed(*name), Cow::Borrowed(*value));
            passing.env.push(var);
        }
    }
}

impl Passing<'_> {
    /// The warnings of a launcher given this, whose first container is `container`: what it
    /// sets itself, the agents it has, what was left out, and the `envFrom` sources of its
    /// container whose keys are not known that could give one of the entries it gains
    /// (behaviour.md §4).
    pub fn warnings(&self, container: &str, own: &Own<'_>) -> Vec<String> {
        let job = &self.job;
        let mut warnings = Vec::new();
        if !self.kept.is_empty() {
            warnings.push(format!(
                "multi-node networking: the launcher's container {container} sets {} itself: kept, so the values the policy gives the workers of MPIJob {job} are not passed to the ranks, and the launcher's own reach them only where mpirun -x passes them",
                join(&self.kept, ", ")
            ));
        }
        if !self.own_agents.is_empty() {
            warnings.push(format!(
                "multi-node networking: the launcher's container {container} sets {} itself: kept, so the policy adds no launch agent, and {} of the env the policy gives the workers of MPIJob {job} reach the ranks only where mpirun -x passes them",
                join(&self.own_agents, ", "),
                join(&self.carried, ", ")
            ));
        }
        if !self.left_out.is_empty() {
            warnings.push(format!(
                "multi-node networking: {} of the env the policy gives the workers of MPIJob {job} were left out of the launch agent: their names or values hold characters other than letters, digits and _./:,=+@%^-, which the remote shell that starts Open MPI's daemons would read (a ; ends the command and runs the rest on the worker); pass them with mpirun -x NAME",
                join(&self.left_out, ", ")
            ));
        }
        let gained = || self.env.iter().map(|var| var.name.as_ref());
        let unknown = own.env_from.unknown.iter();
        warnings.extend(unknown.filter_map(|u| u.warning(container, gained())));
        warnings
    }
}

#[cfg(test)]
mod tests;
