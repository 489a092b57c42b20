//! The launcher as a child process: in an environment of exactly the given variables, in a
//! session of its own, with a deadline. Every process of the job is killed when the launcher
//! exits or the deadline passes: those of its session (the launcher, the agents, Open MPI 4's
//! daemons, the ranks; Open MPI puts each agent in a process group of its own, but none leaves
//! the session), and those that name the bed's directory on their command line or work in it
//! (Open MPI 5's daemons start sessions of their own, and outlive a failed job).

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
            kill_job(session, dir);
            break (child.wait()?, true);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Daemons that outlive their launcher would hold ports and session directories.
    kill_job(session, dir);
    let output = String::from_utf8_lossy(&fs::read(&output_path)?).into_owned();
    Ok(Ran {
        status,
        timed_out,
        output,
    })
}

/// Kills (SIGKILL) every process of the job, until none is left.
fn kill_job(session: u32, dir: &Path) {
    for _ in 0..50 {
        let pids = of_job(session, dir);
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

/// The live processes of the job: in the session `session` (the sixth field of
/// `/proc/<pid>/stat`, counted after the command name in parentheses, which may hold spaces),
/// or working in `dir`, or naming it on their command line. Zombies are left out: they are dead
/// already, and gone once their parent reaps them.
fn of_job(session: u32, dir: &Path) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let own = std::process::id();
    // A file of the bed: the directory alone would also match `<dir>0`, another run's.
    let needle = format!("{}/", dir.display()).into_bytes();
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != own)
        .filter(|pid| {
            let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            // state ppid pgrp session
            let fields: Vec<&str> = rest.split_whitespace().collect();
            if fields.len() < 4 || fields[0] == "Z" {
                return false;
            }
            fields[3] == session.to_string()
                || fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(dir))
                || fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.windows(needle.len()).any(|w| w == needle.as_slice()))
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
