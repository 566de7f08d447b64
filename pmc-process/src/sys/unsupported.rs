//! The launcher of a system without a backend (macOS in the cross-check): the same
//! [`Command`] and [`PausedChild`] as Linux's and FreeBSD's, so that a tool measuring
//! through `pmc::launch` builds everywhere, but nothing is ever launched:
//! [`Command::spawn_paused`] answers [`ErrorKind::Unsupported`], and no [`PausedChild`]
//! can exist (an empty enum). [`Session`](super::launch::Session) is the common one, over
//! these.

use pmc_core::{Error, ErrorKind, Op, Result};
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::ExitStatus;

use super::stdio::Stdio;

/// A command, as on Linux and FreeBSD; here it can be described but not launched.
#[derive(Debug)]
pub struct Command {
    program: OsString,
}

impl Command {
    /// A command running `program`.
    pub fn new(program: impl AsRef<OsStr>) -> Command {
        Command {
            program: program.as_ref().to_owned(),
        }
    }

    /// Adds an argument (kept nowhere: the command cannot run here).
    pub fn arg(&mut self, _arg: impl AsRef<OsStr>) -> &mut Command {
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(&mut self, _args: I) -> &mut Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self
    }

    /// Sets an environment variable.
    pub fn env(&mut self, _key: impl AsRef<OsStr>, _value: impl AsRef<OsStr>) -> &mut Command {
        self
    }

    /// Removes an environment variable.
    pub fn env_remove(&mut self, _key: impl AsRef<OsStr>) -> &mut Command {
        self
    }

    /// Starts from an empty environment.
    pub fn env_clear(&mut self) -> &mut Command {
        self
    }

    /// Sets the working directory.
    pub fn current_dir(&mut self, _dir: impl AsRef<Path>) -> &mut Command {
        self
    }

    /// Sets standard input.
    pub fn stdin(&mut self, _s: impl Into<Stdio>) -> &mut Command {
        self
    }

    /// Sets standard output.
    pub fn stdout(&mut self, _s: impl Into<Stdio>) -> &mut Command {
        self
    }

    /// Sets standard error.
    pub fn stderr(&mut self, _s: impl Into<Stdio>) -> &mut Command {
        self
    }

    /// The program.
    pub fn program(&self) -> &OsStr {
        &self.program
    }

    /// Fails: this system has no launcher.
    ///
    /// # Errors
    /// Always [`ErrorKind::Unsupported`].
    pub fn spawn_paused(&mut self) -> Result<PausedChild> {
        Err(unsupported(&self.program))
    }
}

fn unsupported(program: &OsStr) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        Op::Launch,
        format!(
            "cannot launch {} paused before exec on this OS ({}): pmc launches commands on \
             Linux and FreeBSD, the systems with a backend",
            program.to_string_lossy(),
            std::env::consts::OS
        ),
    )
    .with_help("run it on Linux or FreeBSD")
}

/// A child paused before `exec`: none can exist on this system.
#[derive(Debug)]
pub enum PausedChild {}

impl PausedChild {
    /// Fails: this system has no launcher.
    ///
    /// # Errors
    /// Always [`ErrorKind::Unsupported`].
    pub fn spawn(program: impl AsRef<OsStr>, _args: &[OsString]) -> Result<PausedChild> {
        Err(unsupported(program.as_ref()))
    }

    /// The child's pid (no child exists).
    pub fn pid(&self) -> u32 {
        match *self {}
    }

    /// Lets the child `exec` (no child exists).
    ///
    /// # Errors
    /// None: no child exists.
    pub fn resume(&mut self) -> Result<()> {
        match *self {}
    }

    /// Whether the child exited (no child exists).
    ///
    /// # Errors
    /// None: no child exists.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>> {
        match *self {}
    }

    /// Waits up to `timeout` (no child exists).
    ///
    /// # Errors
    /// None: no child exists.
    pub fn wait_timeout(&mut self, _timeout: std::time::Duration) -> Result<Option<ExitStatus>> {
        match *self {}
    }

    /// Waits for the exit (no child exists).
    ///
    /// # Errors
    /// None: no child exists.
    pub fn wait(&mut self) -> Result<ExitStatus> {
        match *self {}
    }
}
