//! The launcher as a child process: in an environment of exactly the given variables, in a
//! session of its own, with a deadline. Every process of that session (the launcher, the agents,
//! the daemons, the ranks) is killed when the launcher exits or the deadline passes: Open MPI
//! puts each agent in a process group of its own, but none leaves the session.

use std::fs::{self, File};
use std::io;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::bed::quote;

pub struct Ran {
    pub status: ExitStatus,
    pub timed_out: bool,
    /// Standard output and error, in the order they were written.
    pub output: String,
}

pub fn run(
    argv: &[String],
    env: &[(String, String)],
    dir: &Path,
    timeout: Duration,
) -> io::Result<Ran> {
    let output_path = dir.join("output");
    let output = File::create(&output_path)?;
    // `setsid` makes the launcher a session leader without forking (a child of this process
    // leads no process group), so the session's id is the child's pid.
    let mut child = Command::new("/usr/bin/setsid")
        .args(argv)
        .env_clear()
        .envs(env.iter().map(|(n, v)| (n, v)))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(output.try_clone()?)
        .stderr(output)
        .spawn()?;
    let session = child.id();
    let deadline = Instant::now() + timeout;
    let (status, timed_out) = loop {
        if let Some(status) = child.try_wait()? {
            break (status, false);
        }
        if Instant::now() >= deadline {
            kill_session(session);
            break (child.wait()?, true);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Daemons that outlive their launcher would hold ports and session directories.
    kill_session(session);
    let output = String::from_utf8_lossy(&fs::read(&output_path)?).into_owned();
    Ok(Ran {
        status,
        timed_out,
        output,
    })
}

/// Kills (SIGKILL) every process whose session is `session`, until none is left.
fn kill_session(session: u32) {
    for _ in 0..50 {
        let pids = in_session(session);
        if pids.is_empty() {
            return;
        }
        let _ = Command::new("/usr/bin/kill")
            .arg("-KILL")
            .arg("--")
            .args(pids.iter().map(u32::to_string))
            .stderr(Stdio::null())
            .status();
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The processes of a session, read from `/proc/<pid>/stat` (whose sixth field is the session,
/// counted after the command name in parentheses, which may hold spaces). Zombies are left out:
/// they are dead already, and gone once their parent reaps them.
fn in_session(session: u32) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            // state ppid pgrp session
            fields.len() > 3 && fields[0] != "Z" && fields[3] == session.to_string()
        })
        .collect()
}

/// The command as a shell would run it: `env -i NAME=value ... program args...`.
pub fn describe(env: &[(String, String)], argv: &[String]) -> String {
    let mut words = vec!["env".to_string(), "-i".to_string()];
    words.extend(env.iter().map(|(n, v)| quote(&format!("{n}={v}"))));
    words.extend(argv.iter().map(|a| quote(a)));
    words.join(" ")
}
