//! The launch-attach-start-resume-wait session a measuring tool runs around
//! a command or running processes (see [`Session`]).

use super::child::{Command, PausedChild};
use pmc_core::{Error, ErrorKind, Op, Result};
use pmc_core::{Group, Pmc, Target};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

/// How often [`Session::wait`] looks whether running target processes are
/// still there (a launched command's exit wakes it at once instead).
const PID_CHECK: Duration = Duration::from_millis(100);

/// What [`Session::wait`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// The launched command exited, with this status.
    Exited(ExitStatus),
    /// Every running process the session attached to has exited.
    Gone,
    /// Still running when the timeout passed.
    Running,
}

/// One measurement's subject and its life cycle: a command launched paused
/// before `exec` ([`Session::launch`]) or running processes
/// ([`Session::attach_to`]).
///
/// The order is the one `perf stat` and
/// `pmcstat(8)` follow, so the command is counted from its first
/// instruction:
///
/// 1. [`Session::launch`] (or [`Session::attach_to`]);
/// 2. allocate PMCs and [`Session::attach`] each (the launched command is
///    [`Target::Exec`]);
/// 3. start them ([`Pmc::start`]);
/// 4. [`Session::resume`]: the command execs;
/// 5. [`Session::wait`] until it exits (or the processes are gone), with a
///    timeout so the caller can do periodic work; [`Session::signal`] passes
///    a stop signal on;
/// 6. stop and read the PMCs.
///
/// Dropping a session whose command was never resumed makes the command
/// exit without running; a resumed command is waited for (never orphaned).
///
/// What a launched command's count covers (Linux): its PMCs start at its
/// `exec` (`enable_on_exec`), as `perf stat`'s do, and count the same. The
/// kernel's `getrusage` count of the child's page faults is larger by what
/// no PMC sees: the child's faults between `fork` and `exec`, and the pages
/// of the `exec`'s arguments and environment, faulted in through
/// `get_user_pages` (counted in `ru_minflt`, never a perf_event page fault).
///
/// ```no_run
/// use pmc::launch::{Command, Progress, Session};
/// use pmc::{Allocation, Backend, Pmc};
/// # fn count<B: Backend>(backend: &B) -> pmc::Result<()> {
/// let mut session = Session::launch(Command::new("make").arg("-j2"))?;
/// let mut pmc = backend.allocate(&Allocation::counting("task-clock".parse()?).descendants())?;
/// session.attach(&mut pmc)?;
/// pmc.start()?;
/// session.resume()?;
/// let status = loop {
///     match session.wait(std::time::Duration::from_secs(1))? {
///         Progress::Exited(status) => break Some(status),
///         Progress::Gone => break None,
///         Progress::Running => println!("{} ns so far", pmc.read()?.value),
///     }
/// };
/// pmc.stop()?;
/// println!("{:?}: {} ns of CPU", status, pmc.read()?.value);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Session {
    child: Option<PausedChild>,
    targets: Vec<Target>,
}

impl Session {
    /// Launches `command` paused before `exec`; its target is
    /// [`Target::Exec`] of the child's pid.
    ///
    /// # Errors
    /// As [`Command::spawn_paused`].
    pub fn launch(command: &mut Command) -> Result<Session> {
        let child = command.spawn_paused()?;
        let targets = vec![Target::Exec(child.pid())];
        Ok(Session {
            child: Some(child),
            targets,
        })
    }

    /// A session on processes that already run (or [`Target::Current`]).
    pub fn attach_to(targets: impl IntoIterator<Item = Target>) -> Session {
        Session {
            child: None,
            targets: targets.into_iter().collect(),
        }
    }

    /// The targets PMCs attach to.
    pub fn targets(&self) -> &[Target] {
        &self.targets
    }

    /// The launched command, if any.
    pub fn child(&self) -> Option<&PausedChild> {
        self.child.as_ref()
    }

    /// The launched command, if any, mutably (to wait on it or take its
    /// pid for a signal).
    pub fn child_mut(&mut self) -> Option<&mut PausedChild> {
        self.child.as_mut()
    }

    /// Attaches `pmc` to every target; returns how many it attached to.
    /// With several targets, one that exited since it was named is skipped.
    ///
    /// # Errors
    /// The first attach error but a skipped exit; with every target gone,
    /// [`ErrorKind::NoSuchProcess`].
    pub fn attach<P: Pmc + ?Sized>(&self, pmc: &mut P) -> Result<usize> {
        attach_each(&self.targets, |t| pmc.attach(t))
    }

    /// [`Session::attach`] for a group.
    ///
    /// # Errors
    /// As [`Session::attach`].
    pub fn attach_group<G: Group + ?Sized>(&self, group: &mut G) -> Result<usize> {
        attach_each(&self.targets, |t| group.attach(t))
    }

    /// Lets the launched command `exec` (call it after starting the PMCs).
    /// Does nothing for a session on running processes.
    ///
    /// # Errors
    /// As [`PausedChild::resume`]: the command could not be executed.
    pub fn resume(&mut self) -> Result<()> {
        match self.child.as_mut() {
            Some(c) => c.resume(),
            None => Ok(()),
        }
    }

    /// Waits up to `timeout` for the end: the launched command's exit, or
    /// the exit of every running process the session names (checked every
    /// 100 ms; [`process::exists`](crate::process::exists), so zombies still count as
    /// running). A session with neither (only [`Target::Current`]) runs
    /// until the timeout.
    ///
    /// # Errors
    /// The command cannot be waited for (it was reaped elsewhere).
    pub fn wait(&mut self, timeout: Duration) -> Result<Progress> {
        if let Some(c) = self.child.as_mut() {
            return Ok(match c.wait_timeout(timeout)? {
                Some(s) => Progress::Exited(s),
                None => Progress::Running,
            });
        }
        let pids: Vec<u32> = self.targets.iter().filter_map(Target::pid).collect();
        let deadline = Instant::now() + timeout;
        loop {
            if !pids.is_empty() && pids.iter().all(|&p| !super::process::exists(p)) {
                return Ok(Progress::Gone);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(Progress::Running);
            }
            std::thread::sleep((deadline - now).min(PID_CHECK));
        }
    }

    /// Sends signal `sig` (`SIGINT`, `SIGTERM`...) to the launched command,
    /// which has not been reaped, so its pid cannot name another process.
    /// Returns `false` when there is no launched command or it has exited.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] for a number that is not a signal;
    /// [`ErrorKind::Os`] when `kill(2)` refuses it.
    pub fn signal(&mut self, sig: i32) -> Result<bool> {
        use nix::sys::signal::{kill, Signal};
        let Some(c) = self.child.as_mut() else {
            return Ok(false);
        };
        if c.try_wait()?.is_some() {
            return Ok(false);
        }
        let sig = Signal::try_from(sig).map_err(|_| {
            Error::new(
                ErrorKind::InvalidArgument,
                Op::Launch,
                format!("{sig} is not a signal number"),
            )
            .with_help("pass a signal such as libc::SIGINT or libc::SIGTERM")
        })?;
        // `spawn_paused` made the pid from a pid_t.
        let pid = nix::unistd::Pid::from_raw(c.pid() as libc::pid_t);
        match kill(pid, sig) {
            Ok(()) => Ok(true),
            // Exited between the check above and the kill.
            Err(nix::errno::Errno::ESRCH) => Ok(false),
            Err(e) => Err(Error::new(
                ErrorKind::Os,
                Op::Launch,
                format!("cannot send {sig} to the command (pid {})", c.pid()),
            )
            .with_errno(e as i32)),
        }
    }

    /// Waits for the launched command to exit and returns its status
    /// (`None` for a session on running processes).
    ///
    /// # Errors
    /// As [`PausedChild::wait`].
    pub fn finish(mut self) -> Result<Option<ExitStatus>> {
        match self.child.as_mut() {
            Some(c) => c.wait().map(Some),
            None => Ok(None),
        }
    }

    /// The launched command's handle, ending the session.
    pub fn into_child(self) -> Option<PausedChild> {
        self.child
    }
}

fn attach_each(targets: &[Target], mut attach: impl FnMut(Target) -> Result<()>) -> Result<usize> {
    let mut attached = 0;
    let mut gone = None;
    for &t in targets {
        match attach(t) {
            Ok(()) => attached += 1,
            Err(e) if targets.len() > 1 && e.kind() == ErrorKind::NoSuchProcess => gone = Some(e),
            Err(e) => return Err(e),
        }
    }
    if attached == 0 {
        if let Some(e) = gone {
            return Err(Error::new(
                ErrorKind::NoSuchProcess,
                Op::Attach,
                format!(
                    "every one of the {} target processes exited before it could be attached to \
                     (the last: {})",
                    targets.len(),
                    e.message()
                ),
            )
            .with_help(
                "list the processes again (pmc::process::list) and attach to those running",
            ));
        }
    }
    Ok(attached)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launched_command_ends_with_its_status() {
        let mut s = Session::launch(Command::new("sh").args(["-c", "exit 5"])).unwrap();
        assert!(matches!(s.targets(), [Target::Exec(p)] if *p == s.child().unwrap().pid()));
        s.resume().unwrap();
        let end = loop {
            match s.wait(Duration::from_secs(10)).unwrap() {
                Progress::Running => continue,
                p => break p,
            }
        };
        assert!(
            matches!(end, Progress::Exited(st) if st.code() == Some(5)),
            "{end:?}"
        );
    }

    #[test]
    fn running_processes_end_when_all_are_gone() {
        let mut a = Command::new("sleep").arg("0.3").spawn_paused().unwrap();
        a.resume().unwrap();
        let pid = a.pid();
        let reaper = std::thread::spawn(move || a.wait().unwrap());
        let mut s = Session::attach_to([Target::Pid(pid)]);
        assert_eq!(
            s.wait(Duration::from_millis(10)).unwrap(),
            Progress::Running
        );
        let t0 = Instant::now();
        let mut end = Progress::Running;
        while end == Progress::Running && t0.elapsed() < Duration::from_secs(20) {
            end = s.wait(Duration::from_secs(1)).unwrap();
        }
        assert_eq!(end, Progress::Gone);
        assert!(reaper.join().unwrap().success());
        assert!(!s.signal(15).unwrap(), "no launched command to signal");
    }

    #[test]
    fn current_only_runs_until_the_timeout() {
        let mut s = Session::attach_to([Target::Current]);
        let t0 = Instant::now();
        assert_eq!(
            s.wait(Duration::from_millis(30)).unwrap(),
            Progress::Running
        );
        assert!(t0.elapsed() >= Duration::from_millis(25));
    }

    #[test]
    fn signal_reaches_the_command() {
        let mut s = Session::launch(Command::new("sleep").arg("30")).unwrap();
        s.resume().unwrap();
        assert!(s.signal(libc::SIGTERM).unwrap());
        let st = s.finish().unwrap().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(st.signal(), Some(libc::SIGTERM));
    }

    #[test]
    fn attach_skips_vanished_targets_but_not_all() {
        let gone = || Error::new(ErrorKind::NoSuchProcess, Op::Attach, "no such process");
        let targets = [Target::Pid(1), Target::Pid(2)];
        let n = attach_each(&targets, |t| {
            if t == Target::Pid(1) {
                Err(gone())
            } else {
                Ok(())
            }
        })
        .unwrap();
        assert_eq!(n, 1);
        let e = attach_each(&targets, |_| Err(gone())).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NoSuchProcess);
        assert!(e.to_string().contains("every one of the 2"), "{e}");
        // One target: its own error, whatever it is.
        let e = attach_each(&targets[..1], |_| Err(gone())).unwrap_err();
        assert_eq!(e.message(), "no such process");
        let perm = attach_each(&targets, |_| {
            Err(Error::new(ErrorKind::Permission, Op::Attach, "denied"))
        })
        .unwrap_err();
        assert_eq!(perm.kind(), ErrorKind::Permission);
    }
}
