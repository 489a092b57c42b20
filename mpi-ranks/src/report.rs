//! Reads back what the ranks and the agent wrote: each rank's environment (`env -0`), and each
//! daemon start (host, parent process, command).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// One start of a daemon through the agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The "host" it was started on, as the launcher named it.
    pub host: String,
    /// The name of the process that ran the agent: the launcher (`mpirun.openmpi`,
    /// `mpiexec.hydra`) or, under tree spawn, a daemon (`orted`).
    pub parent: String,
    /// That process's command line, its words joined by spaces.
    pub parent_command: String,
    /// The command the agent was given, its words joined by spaces, as ssh sends it.
    pub command: String,
}

impl Launch {
    /// The started daemon's Open MPI rank among the daemons (`ess_base_vpid` on its command
    /// line; `mpirun` is 0).
    pub fn vpid(&self) -> Option<u32> {
        vpid(&self.command)
    }

    /// The starting daemon's (`None` for `mpirun`, whose command line does not name it).
    pub fn parent_vpid(&self) -> Option<u32> {
        vpid(&self.parent_command)
    }
}

fn vpid(command: &str) -> Option<u32> {
    let mut words = command.split_whitespace();
    words.find(|w| *w == "ess_base_vpid")?;
    words.next()?.trim_matches('"').parse().ok()
}

/// The environments of ranks 0 to `count - 1`, from `dir/<rank>`.
pub fn ranks(dir: &Path, count: usize) -> Result<Vec<BTreeMap<String, String>>, String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    names.sort();
    let expected: Vec<String> = {
        let mut v: Vec<String> = (0..count).map(|r| r.to_string()).collect();
        v.sort();
        v
    };
    if names != expected {
        return Err(format!(
            "expected the reports of ranks 0 to {}, found {names:?}",
            count - 1
        ));
    }
    (0..count)
        .map(|rank| {
            let bytes = fs::read(dir.join(rank.to_string())).map_err(|e| e.to_string())?;
            environment(&bytes).map_err(|e| format!("rank {rank}: {e}"))
        })
        .collect()
}

/// An environment as `env -0` prints it. A name given twice is an error: which of the two a
/// program sees depends on how it reads its environment.
pub fn environment(bytes: &[u8]) -> Result<BTreeMap<String, String>, String> {
    let text = String::from_utf8_lossy(bytes);
    let mut env = BTreeMap::new();
    for entry in text.split_terminator('\0') {
        let (name, value) = entry
            .split_once('=')
            .ok_or_else(|| format!("an entry without '=': {entry:?}"))?;
        if let Some(first) = env.insert(name.to_string(), value.to_string()) {
            return Err(format!("{name} is set twice: {first:?} and {value:?}"));
        }
    }
    Ok(env)
}

/// The agent's records, one file per start: four fields, each ended by a NUL. Those that are
/// not whole (an agent killed as it wrote, when a job fails) are returned apart, as messages.
pub fn launches(dir: &Path) -> (Vec<Launch>, Vec<String>) {
    let mut launches = Vec::new();
    let mut broken = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => return (launches, vec![format!("{}: {e}", dir.display())]),
    };
    for entry in entries {
        let path = match entry {
            Ok(entry) => entry.path(),
            Err(e) => {
                broken.push(e.to_string());
                continue;
            }
        };
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) => {
                broken.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        let text = String::from_utf8_lossy(&bytes);
        let fields: Vec<&str> = text.split_terminator('\0').collect();
        let [host, parent, parent_command, command] = fields[..] else {
            broken.push(format!("{}: not four fields: {text:?}", path.display()));
            continue;
        };
        launches.push(Launch {
            host: host.to_string(),
            parent: parent.trim().to_string(),
            parent_command: parent_command.trim().to_string(),
            command: command.to_string(),
        });
    }
    (launches, broken)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_splits_at_the_first_equals_sign() {
        let env = environment(b"A=1\0B=x=y\0EMPTY=\0").unwrap();
        assert_eq!(env["A"], "1");
        assert_eq!(env["B"], "x=y");
        assert_eq!(env["EMPTY"], "");
        assert_eq!(env.len(), 3);
    }

    #[test]
    fn environment_refuses_a_name_given_twice() {
        let err = environment(b"A=1\0A=2\0").unwrap_err();
        assert_eq!(err, r#"A is set twice: "1" and "2""#);
    }

    #[test]
    fn vpid_is_read_from_open_mpi_command_lines() {
        let launch = Launch {
            host: "127.0.0.4".into(),
            parent: "orted".into(),
            parent_command: "orted -mca ess env -mca ess_base_vpid 1 -mca x y".into(),
            command: r#"orted -mca ess "env" -mca ess_base_vpid 3 -mca"#.into(),
        };
        assert_eq!(launch.vpid(), Some(3));
        assert_eq!(launch.parent_vpid(), Some(1));
    }
}
