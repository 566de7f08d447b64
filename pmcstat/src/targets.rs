//! `-t PID|REGEX`: the running processes the process-mode PMCs attach to.

use crate::cli::AttachSpec;
use crate::error::Failure;
use crate::sys::launch::{Command, Session};
use pmc::{ErrorKind, Pmc, Target};
use std::ffi::OsString;

/// The run's subject: `-t`'s processes, or the command launched paused
/// before `exec` (the library's launch session), or nothing (system mode).
pub fn session(attach: Option<&AttachSpec>, command: &[OsString]) -> Result<Session, Failure> {
    match (attach, command.first()) {
        (Some(spec), _) => Ok(Session::attach_to(resolve(spec)?)),
        (None, Some(prog)) => Ok(Session::launch(Command::new(prog).args(&command[1..]))?),
        (None, None) => Ok(Session::attach_to([])),
    }
}

/// The processes `-t` names: the pid, or every process (but pmcstat) whose
/// command name matches the regular expression, in pid order. No match is a
/// usage error that says where the names were read.
pub fn resolve(spec: &AttachSpec) -> Result<Vec<Target>, Failure> {
    match spec {
        AttachSpec::Pid(pid) => Ok(vec![Target::Pid(*pid)]),
        AttachSpec::Regex(re) => {
            let pids = matching(re)?;
            if pids.is_empty() {
                return Err(Failure::Usage(format!(
                    "-t {re}: no running process has a command name that matches (names \
                     as ps -o comm shows them: Linux's /proc/PID/comm, at most 15 characters; \
                     FreeBSD's ki_comm, at most 19; pmcstat itself is left out)"
                )));
            }
            Ok(pids.into_iter().map(Target::Pid).collect())
        }
    }
}

/// The pids (but pmcstat's) whose command name matches `re`, from
/// `pmc::process::list` (on Linux `/proc/PID/comm`, on FreeBSD `ki_comm`).
fn matching(re: &regex::Regex) -> Result<Vec<u32>, Failure> {
    let me = std::process::id();
    let procs = pmc::process::list().map_err(|e| match e.kind() {
        ErrorKind::NotSupported => Failure::Usage(format!(
            "-t {re}: matching command names is not implemented on this system \
             (Linux and FreeBSD only); give a process id"
        )),
        _ => {
            let mut err = pmc::Error::new(e.kind(), e.op(), format!("-t {re}: {}", e.message()));
            if let Some(n) = e.errno() {
                err = err.with_errno(n);
            }
            Failure::Setup(err)
        }
    })?;
    Ok(procs
        .into_iter()
        .filter(|p| p.pid != me && re.is_match(&p.name))
        .map(|p| p.pid)
        .collect())
}

/// Attaches `pmc` to every target of the session. With several targets (a
/// `-t REGEX`), one that exited since it was listed is skipped; the others
/// must attach.
pub fn attach_all(pmc: &mut impl Pmc, session: &Session) -> Result<(), Failure> {
    match session.attach(pmc) {
        Ok(_) => Ok(()),
        Err(e) if session.targets().len() > 1 && e.kind() == ErrorKind::NoSuchProcess => {
            Err(Failure::Usage(
                "-t: every matching process exited before it could be attached to".into(),
            ))
        }
        Err(e) => Err(Failure::Setup(e)),
    }
}

/// [`attach_all`] for a perf `{...}` group.
pub fn attach_group_all(group: &mut impl pmc::Group, session: &Session) -> Result<(), Failure> {
    match session.attach_group(group) {
        Ok(_) => Ok(()),
        Err(e) if session.targets().len() > 1 && e.kind() == ErrorKind::NoSuchProcess => {
            Err(Failure::Usage(
                "-t: every matching process exited before it could be attached to".into(),
            ))
        }
        Err(e) => Err(Failure::Setup(e)),
    }
}

/// The pids of `-t`'s targets, for the report.
pub fn pids(targets: &[Target]) -> Vec<u32> {
    targets
        .iter()
        .filter_map(|t| match t {
            Target::Pid(p) => Some(*p),
            _ => None,
        })
        .collect()
}
