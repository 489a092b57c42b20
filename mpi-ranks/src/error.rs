//! The one error of a run: what went wrong, with the launcher's command and what it printed.

use std::fmt;
use std::time::Duration;

use crate::Launch;

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The bed could not be set up or the launcher not started.
    Start(String),
    /// The launcher exited with this code (none when a signal ended it).
    Exited(Option<i32>),
    /// The job ran past its timeout, and was killed.
    TimedOut(Duration),
    /// The ranks' or the agent's reports are missing or malformed.
    Ranks(String),
}

#[derive(Clone, Debug)]
pub struct Error {
    pub kind: ErrorKind,
    /// The launcher's command, its environment included (empty when none was built yet).
    pub command: String,
    /// What the launcher printed.
    pub output: String,
    /// The daemons' starts through the agent before the failure, for a job that ran.
    pub launches: Vec<Launch>,
}

impl Error {
    pub fn new(kind: ErrorKind, command: String, output: String) -> Error {
        Error {
            kind,
            command,
            output,
            launches: Vec::new(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Start(why) => write!(f, "the MPI job could not start: {why}")?,
            ErrorKind::Exited(Some(code)) => write!(f, "the MPI launcher exited with {code}")?,
            ErrorKind::Exited(None) => write!(f, "the MPI launcher was killed by a signal")?,
            ErrorKind::TimedOut(after) => write!(
                f,
                "the MPI job ran past its timeout of {after:?}, and was killed"
            )?,
            ErrorKind::Ranks(why) => write!(f, "the ranks' reports: {why}")?,
        }
        if !self.command.is_empty() {
            write!(f, "\ncommand: {}", self.command)?;
        }
        if !self.output.is_empty() {
            write!(f, "\noutput:\n{}", self.output)?;
        }
        for launch in &self.launches {
            write!(
                f,
                "\nstarted by {} on {}: {}",
                launch.parent, launch.host, launch.command
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}
