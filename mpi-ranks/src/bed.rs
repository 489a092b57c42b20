//! The files of one run, in a fresh directory: the hostfile, the agent standing for ssh, the
//! program each rank runs, the home directory, and the folders the agent and the ranks report
//! into. Also the launcher's arguments, which name them.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::{Error, ErrorKind, Mpi, Options, Result, SESSION_PATH, Spawn};

/// The most hosts: the loopback addresses 127.0.0.2 to 127.0.0.251.
const MOST_HOSTS: usize = 250;

pub struct Bed {
    dir: PathBuf,
}

impl Bed {
    pub fn create(options: &Options) -> Result<Bed> {
        if options.hosts == 0 || options.hosts > MOST_HOSTS {
            return Err(setup(format!(
                "hosts must be 1 to {MOST_HOSTS}, not {}",
                options.hosts
            )));
        }
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mpi-ranks.{}.{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed)
        ));
        let bed = Bed { dir };
        let _ = fs::remove_dir_all(&bed.dir);
        for sub in ["home", "ranks", "launches", "tmp"] {
            fs::create_dir_all(bed.dir.join(sub)).map_err(|e| setup(e.to_string()))?;
        }
        bed.write("hostfile", &hostfile(options), false)?;
        bed.write("agent", &agent(&bed), true)?;
        bed.write("rank", &rank(&bed.ranks_dir()), true)?;
        Ok(bed)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn home(&self) -> PathBuf {
        self.dir.join("home")
    }

    pub fn ranks_dir(&self) -> PathBuf {
        self.dir.join("ranks")
    }

    pub fn launches_dir(&self) -> PathBuf {
        self.dir.join("launches")
    }

    /// The launcher's command line: the program, the bed's arguments, the user's, then the
    /// rank's program; for Open MPI 5, in a network namespace of its own.
    pub fn command(&self, options: &Options, launcher_env: &[(String, String)]) -> Vec<String> {
        let path = |name: &str| self.dir.join(name).display().to_string();
        let mut args: Vec<String> = vec![options.mpi.program()];
        let mut push = |words: &[&str]| args.extend(words.iter().map(|w| w.to_string()));
        match &options.mpi {
            Mpi::OpenMpi => {
                push(&["--allow-run-as-root"]);
                push(&["--mca", "plm_rsh_agent", &path("agent")]);
                push(&["--hostfile", &path("hostfile")]);
                push(&["-np", &options.hosts.to_string()]);
                // The session directories in the bed, apart from other runs' (the daemons
                // pass it on to the daemons they start).
                push(&["--mca", "orte_tmpdir_base", &path("tmp")]);
                // The daemons' and the ranks' TCP on loopback only.
                push(&["--mca", "oob_tcp_if_include", "lo"]);
                push(&[
                    "--mca",
                    "btl_tcp_if_include",
                    "lo",
                    "--mca",
                    "btl",
                    "self,tcp",
                ]);
                match options.spawn {
                    Spawn::Flat => push(&["--mca", "plm_rsh_no_tree_spawn", "1"]),
                    Spawn::Tree { radix } => push(&[
                        "--mca",
                        "routed",
                        "radix",
                        "--mca",
                        "routed_radix",
                        &radix.to_string(),
                    ]),
                }
            }
            Mpi::OpenMpi5 { .. } => {
                push(&["--allow-run-as-root"]);
                push(&["--mca", "plm_rsh_agent", &path("agent")]);
                push(&["--hostfile", &path("hostfile")]);
                push(&["-np", &options.hosts.to_string()]);
                push(&["--prtemca", "prte_tmpdir_base", &path("tmp")]);
                match options.spawn {
                    Spawn::Flat => push(&["--prtemca", "plm_ssh_no_tree_spawn", "1"]),
                    Spawn::Tree { radix } => {
                        push(&["--prtemca", "routed_radix", &radix.to_string()])
                    }
                }
            }
            Mpi::Mpich => {
                push(&["-launcher", "rsh", "-launcher-exec", &path("agent")]);
                push(&["-f", &path("hostfile")]);
                push(&["-n", &options.hosts.to_string()]);
                // The proxies call back to 127.0.0.1, whatever this machine's name resolves to.
                push(&["-localhost", "127.0.0.1"]);
            }
        }
        args.extend(options.args.iter().cloned());
        args.push(path("rank"));
        match options.mpi {
            Mpi::OpenMpi5 { .. } => in_network_namespace(args, launcher_env),
            _ => args,
        }
    }

    fn write(&self, name: &str, text: &str, executable: bool) -> Result<()> {
        let path = self.dir.join(name);
        fs::write(&path, text).map_err(|e| setup(format!("{}: {e}", path.display())))?;
        if executable {
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755))
                .map_err(|e| setup(format!("{}: {e}", path.display())))?;
        }
        Ok(())
    }
}

/// Removes the files unless `MPI_RANKS_KEEP` is set (to look at a failed run's scripts).
impl Drop for Bed {
    fn drop(&mut self) {
        if std::env::var_os("MPI_RANKS_KEEP").is_none() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

fn setup(message: String) -> Error {
    Error::new(ErrorKind::Start(message), String::new(), String::new())
}

/// The host names: 127.0.0.2, 127.0.0.3, …
pub fn host(index: usize) -> String {
    format!("127.0.0.{}", index + 2)
}

fn hostfile(options: &Options) -> String {
    (0..options.hosts)
        .map(|i| match options.mpi {
            Mpi::OpenMpi | Mpi::OpenMpi5 { .. } => format!("{} slots=1\n", host(i)),
            Mpi::Mpich => format!("{}:1\n", host(i)),
        })
        .collect()
}

/// The agent: `agent [ssh options] HOST COMMAND...`, as the launchers call ssh. It skips ssh's
/// options as ssh's own parser reads them (those that take a value take the next word; Open
/// MPI's `plm_rsh_args`, which mpi-operator sets to `-o ConnectionAttempts=10`, come here),
/// records the start (host, the parent process's name and command line, the command), and runs
/// the command as sshd does: the words joined by spaces, through `sh -c`, in the home directory,
/// in an environment of the session's variables alone. `unshare --uts` gives the "host" its own
/// host name, the address it was started as.
fn agent(bed: &Bed) -> String {
    let home = quote(&bed.home().display().to_string());
    let launches = quote(&bed.launches_dir().display().to_string());
    format!(
        r#"#!/bin/sh
# Stands for ssh: agent [ssh options] HOST COMMAND...
while [ $# -gt 0 ]; do
    case $1 in
        -[BbcDEeFIiJLlmOopQRSWw]) shift 2 ;;
        -*) shift ;;
        *) break ;;
    esac
done
host=$1
shift
parent=$(cat /proc/$PPID/comm)
parent_command=$(tr '\0' ' ' </proc/$PPID/cmdline)
printf '%s\0' "$host" "$parent" "$parent_command" "$*" >{launches}/$$
# As sshd: the words joined by spaces, through sh -c, in the home directory, in an environment
# of the session's variables alone; on a host named as it was started.
session='hostname "$1" && cd "$2" &&
    exec env -i USER="$3" LOGNAME="$3" HOME="$2" SHELL=/bin/sh PATH="$4" /bin/sh -c "$5"'
exec unshare --uts /bin/sh -c "$session" agent "$host" {home} "$(id -un)" {path} "$*"
"#,
        path = quote(SESSION_PATH),
    )
}

/// What each rank runs: its environment, each variable ended by a NUL, into `ranks/<rank>`
/// (Open MPI's `OMPI_COMM_WORLD_RANK`, Hydra's `PMI_RANK`; the shell's own variable `rank` is
/// not exported).
fn rank(ranks: &Path) -> String {
    let ranks = quote(&ranks.display().to_string());
    format!(
        "#!/bin/sh\n\
         rank=${{OMPI_COMM_WORLD_RANK:-${{PMI_RANK:-unknown.$$}}}}\n\
         exec /usr/bin/env -0 >{ranks}/\"$rank\"\n"
    )
}

/// `argv` run in a new network namespace holding `lo` and the veth `bed0` (10.77.0.1/24), both
/// up. The shell that sets it up exports `PWD`, which the launcher's environment gets back as it
/// was given: removed, or its own value.
fn in_network_namespace(argv: Vec<String>, launcher_env: &[(String, String)]) -> Vec<String> {
    let ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("ip");
    let setup = format!(
        "{ip} link set lo up && {ip} link add bed0 type veth peer name bed1 && \
         {ip} addr add 10.77.0.1/24 dev bed0 && {ip} link set bed0 up && {ip} link set bed1 up && \
         exec /usr/bin/env \"$@\""
    );
    let pwd = match launcher_env.iter().rev().find(|(n, _)| n == "PWD") {
        Some((_, value)) => vec![format!("PWD={value}")],
        None => vec!["-u".to_string(), "PWD".to_string()],
    };
    [
        "/usr/bin/unshare",
        "--net",
        "/bin/sh",
        "-c",
        &setup,
        "netns",
    ]
    .iter()
    .map(|w| w.to_string())
    .chain(pwd)
    .chain(argv)
    .collect()
}

/// One word for sh: single-quoted unless made of characters sh leaves alone.
pub fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./:,=+@%^-".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_leaves_plain_words_and_single_quotes_the_rest() {
        assert_eq!(quote("/tmp/a-b_c.d"), "/tmp/a-b_c.d");
        assert_eq!(quote("env A=1 orted"), "'env A=1 orted'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn hosts_are_loopback_addresses_one_slot_each() {
        let options = Options {
            hosts: 3,
            ..Options::default()
        };
        assert_eq!(
            hostfile(&options),
            "127.0.0.2 slots=1\n127.0.0.3 slots=1\n127.0.0.4 slots=1\n"
        );
        let mpich = Options {
            mpi: Mpi::Mpich,
            hosts: 2,
            ..Options::default()
        };
        assert_eq!(hostfile(&mpich), "127.0.0.2:1\n127.0.0.3:1\n");
    }
}
