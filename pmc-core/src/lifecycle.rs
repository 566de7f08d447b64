//! The life cycle of one PMC as hwpmc(4) defines it, kept in user space: its
//! [`State`], the targets it is attached to, and the rule each verb must
//! pass, answered with the typed [`Error`] both backends give.
//!
//! [`Lifecycle`] holds one PMC's state and targets; its `check_*` methods return a [`Refusal`]
//! naming a [`Rule`]; [`LogNeed`] says when a log is required; [`fan_out`],
//! [`fan_out_or_undo`] and [`check_read_slots`] serve group members. Details follow.
//!
//! hwpmc enforces these rules in the kernel (`sys/dev/hwpmc/hwpmc_mod.c`,
//! cited at each rule by function); perf_event does not, so the Linux backend
//! checks them itself, and the FreeBSD backend keeps the same bookkeeping to
//! know its state and targets without asking the kernel. One [`Lifecycle`]
//! per PMC (or group) holds:
//!
//! * the state, `Allocated` -> `Running` <-> `Stopped` ([`Lifecycle::record_start`],
//!   [`Lifecycle::record_stop`]);
//! * the attached targets, compared by process: [`Target::Current`] is the same
//!   process as `Target::Pid(getpid())`, and `Target::Exec(p)` as `Target::Pid(p)`
//!   ([`Lifecycle::same_target`]);
//! * the preconditions, each a `check_*` method returning a [`Refusal`] that
//!   names the [`Rule`], the hwpmc errno and the [`ErrorKind`], and converts
//!   into the [`Error`] callers see.
//!
//! A backend calls the check, does the work, then records the transition:
//!
//! ```
//! use pmc::lifecycle::{Lifecycle, Rule};
//! use pmc::{ErrorKind, Op, Scope, State, Target};
//!
//! let mut life = Lifecycle::new(&Scope::Process, 4242);
//! life.check_attach(Target::Current)?;
//! // ... the backend attaches the counter to the calling process ...
//! life.record_attach(Target::Current);
//!
//! // The same process by pid is the same target: EEXIST.
//! let refused = life.check_attach(Target::Pid(4242)).unwrap_err();
//! assert_eq!(refused.rule(), Rule::AlreadyAttached);
//! assert_eq!(refused.kind(), ErrorKind::AlreadyAttached);
//!
//! assert!(life.start_needed());
//! life.record_start();
//! assert_eq!(life.state(), State::Running);
//! // set_count and write need the PMC stopped: EBUSY.
//! let e = pmc::Error::from(life.check_stopped(Op::SetCount).unwrap_err());
//! assert_eq!(e.kind(), ErrorKind::Busy);
//! assert_eq!((e.message(), e.errno()), ("cannot set_count a running PMC", Some(16)));
//! # Ok::<(), pmc::lifecycle::Refusal>(())
//! ```
//!
//! Groups apply each verb to every member: [`fan_out`] stops at the first
//! error, [`fan_out_or_undo`] also undoes the members already done, so a
//! group is never left half started or half attached.

use crate::{Error, ErrorKind, Op, Result, Scope, State, Target};
use std::fmt;

/// hwpmc's errno values (FreeBSD's `<sys/errno.h>`; EBUSY, EEXIST and
/// EINVAL have the same numbers on Linux).
mod errno {
    pub(super) const EBUSY: i32 = 16;
    pub(super) const EEXIST: i32 = 17;
    pub(super) const EINVAL: i32 = 22;
    /// FreeBSD only (on Linux 88 is ENOTSOCK), so never put in an [`Error`](crate::Error).
    pub(super) const EDOOFUS: i32 = 88;
}

/// Why a PMC cannot start without a log: what hwpmc marks with
/// `PMC_F_NEEDS_LOGFILE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LogNeed {
    /// A sampling PMC: its samples go to the log.
    Sampling,
    /// `Flags::LOG_PROCCSW`: its counts at context switches go to the log.
    LogProcCsw,
    /// `Flags::LOG_PROCEXIT`: its counts at process exits go to the log.
    LogProcExit,
}

/// A rule of hwpmc's PMC life cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// Attach and detach are for process-scope PMCs
    /// (`hwpmc_mod.c:pmc_syscall_handler`, PMC_OP_PMCATTACH:
    /// `PMC_IS_SYSTEM_MODE` -> EINVAL).
    SystemScope,
    /// The verb needs the PMC stopped: PMC_OP_PMCATTACH ("PMCs may be
    /// (re)attached only when allocated or stopped"), PMC_OP_PMCRW with
    /// `PMC_F_NEWVALUE` and PMC_OP_PMCSETCOUNT on a `PMC_STATE_RUNNING` PMC
    /// give EBUSY (`hwpmc_mod.c:pmc_syscall_handler`).
    Running,
    /// The target is already attached (`hwpmc_mod.c:pmc_attach_one_process`:
    /// the PMC is already at the process's row -> EEXIST).
    AlreadyAttached,
    /// The target is not attached (`hwpmc_mod.c:pmc_detach_one_process`: the
    /// PMC is not at the process's row -> EINVAL).
    NotAttached,
    /// The PMC needs a log to start (`hwpmc_mod.c:pmc_start`:
    /// `PMC_F_NEEDS_LOGFILE` without a log file -> EDOOFUS).
    LogRequired(LogNeed),
}

impl Rule {
    /// The kind of the error a refusal under this rule gives.
    pub fn kind(self) -> ErrorKind {
        match self {
            Rule::SystemScope => ErrorKind::InvalidState,
            Rule::Running => ErrorKind::Busy,
            Rule::AlreadyAttached => ErrorKind::AlreadyAttached,
            Rule::NotAttached => ErrorKind::NotAttached,
            Rule::LogRequired(_) => ErrorKind::LogRequired,
        }
    }

    /// The errno hwpmc answers (FreeBSD's numbers: EDOOFUS is 88 there), for
    /// a backend that reports refusals in the kernel's words.
    pub fn hwpmc_errno(self) -> i32 {
        match self {
            Rule::SystemScope | Rule::NotAttached => errno::EINVAL,
            Rule::Running => errno::EBUSY,
            Rule::AlreadyAttached => errno::EEXIST,
            Rule::LogRequired(_) => errno::EDOOFUS,
        }
    }
}

/// A request a [`Lifecycle`] refused: the rule it broke, the verb, and the
/// target involved. `?` turns it into the [`Error`] callers see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    rule: Rule,
    op: Op,
    target: Option<Target>,
}

impl Refusal {
    fn new(rule: Rule, op: Op, target: Option<Target>) -> Refusal {
        Refusal { rule, op, target }
    }

    /// The rule broken.
    pub fn rule(&self) -> Rule {
        self.rule
    }

    /// The refused verb.
    pub fn op(&self) -> Op {
        self.op
    }

    /// The target of a refused attach or detach.
    pub fn target(&self) -> Option<Target> {
        self.target
    }

    /// The error kind ([`Rule::kind`]).
    pub fn kind(&self) -> ErrorKind {
        self.rule.kind()
    }

    /// The errno hwpmc gives for this ([`Rule::hwpmc_errno`]).
    pub fn hwpmc_errno(&self) -> i32 {
        self.rule.hwpmc_errno()
    }

    /// The error: the rule's kind, the verb, the fact, the errno where it is
    /// the same on every system (EBUSY, EEXIST, EINVAL of a detach; not
    /// FreeBSD's EDOOFUS) and the remedy.
    pub fn to_error(&self) -> Error {
        let op = self.op;
        let target = self
            .target
            .map_or_else(|| "the target".to_owned(), |t| t.to_string());
        match self.rule {
            Rule::SystemScope => Error::new(
                ErrorKind::InvalidState,
                op,
                format!("cannot {op} a system-scope PMC: it counts every process on its CPUs"),
            ),
            Rule::Running => Error::new(ErrorKind::Busy, op, format!("cannot {op} a running PMC"))
                .with_errno(errno::EBUSY)
                .with_help("stop it first"),
            Rule::AlreadyAttached => Error::new(
                ErrorKind::AlreadyAttached,
                op,
                format!("the PMC is already attached to {target}"),
            )
            .with_errno(errno::EEXIST),
            Rule::NotAttached => Error::new(
                ErrorKind::NotAttached,
                op,
                format!("the PMC is not attached to {target}"),
            )
            .with_errno(errno::EINVAL),
            Rule::LogRequired(need) => Error::new(
                ErrorKind::LogRequired,
                op,
                match need {
                    LogNeed::Sampling => {
                        "a sampling PMC needs a log to write its samples to (hwpmc's EDOOFUS)"
                    }
                    LogNeed::LogProcCsw => {
                        "a PMC with log-proccsw needs a log for its counts at context switches \
                         (hwpmc's EDOOFUS)"
                    }
                    LogNeed::LogProcExit => {
                        "a PMC with log-procexit needs a log for its counts at process exits \
                         (hwpmc's EDOOFUS)"
                    }
                },
            )
            .with_help("call `Backend::configure_log` first"),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.to_error().message())
    }
}

impl std::error::Error for Refusal {}

impl From<Refusal> for Error {
    fn from(r: Refusal) -> Error {
        r.to_error()
    }
}

/// One PMC's (or group's) state and attached targets, with hwpmc's rules.
///
/// It holds what the caller did: the targets it attached, in the form it
/// named them. A kernel that keeps its own target set (hwpmc adds the
/// descendants of a `PMC_F_DESCENDANTS` target and drops targets that exit)
/// stays the authority for membership there; this set is what the backend
/// reports as [`Pmc::targets`](crate::Pmc::targets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lifecycle {
    system: bool,
    owner: u32,
    state: State,
    targets: Vec<Target>,
}

impl Lifecycle {
    /// A freshly allocated PMC of `scope`, owned by process `owner_pid` (the
    /// pid [`Target::Current`] stands for).
    pub fn new(scope: &Scope, owner_pid: u32) -> Lifecycle {
        Lifecycle {
            system: scope.is_system(),
            owner: owner_pid,
            state: State::Allocated,
            targets: Vec::new(),
        }
    }

    /// A freshly allocated PMC of `scope` owned by the calling process.
    pub fn for_caller(scope: &Scope) -> Lifecycle {
        Lifecycle::new(scope, std::process::id())
    }

    /// The state.
    pub fn state(&self) -> State {
        self.state
    }

    /// The state is [`State::Running`].
    pub fn is_running(&self) -> bool {
        self.state == State::Running
    }

    /// The PMC is system-scope.
    pub fn is_system(&self) -> bool {
        self.system
    }

    /// The pid of the owner, the process [`Target::Current`] names.
    pub fn owner_pid(&self) -> u32 {
        self.owner
    }

    /// The attached targets, as they were named at attach, in attach order.
    pub fn targets(&self) -> &[Target] {
        &self.targets
    }

    /// The process a target names: [`Target::Current`] is the owner
    /// (hwpmc's PMC_OP_PMCATTACH turns pid 0 into the caller's pid,
    /// `hwpmc_mod.c:pmc_syscall_handler`).
    pub fn pid_of(&self, target: Target) -> u32 {
        target.pid().unwrap_or(self.owner)
    }

    /// Whether two targets are the same process: hwpmc keys targets by
    /// process, so `Current`, `Pid(owner)` and `Exec(owner)` are one.
    pub fn same_target(&self, a: Target, b: Target) -> bool {
        self.pid_of(a) == self.pid_of(b)
    }

    /// Whether `target` is the owner itself.
    pub fn is_owner(&self, target: Target) -> bool {
        self.pid_of(target) == self.owner
    }

    /// The attached target that is the same process as `target`, in the
    /// form it was attached as.
    pub fn attached(&self, target: Target) -> Option<Target> {
        self.targets
            .iter()
            .copied()
            .find(|t| self.same_target(*t, target))
    }

    /// Whether `target`'s process is attached.
    pub fn is_attached(&self, target: Target) -> bool {
        self.attached(target).is_some()
    }

    /// Attach and detach need process scope ([`Rule::SystemScope`]:
    /// `hwpmc_mod.c:pmc_syscall_handler`, PMC_OP_PMCATTACH,
    /// `PMC_IS_SYSTEM_MODE(pm->pm_mode)` -> EINVAL).
    ///
    /// # Errors
    /// A [`Refusal`] under [`Rule::SystemScope`] for a system-scope PMC.
    pub fn check_process_scope(&self, op: Op) -> Result<(), Refusal> {
        if self.system {
            return Err(Refusal::new(Rule::SystemScope, op, None));
        }
        Ok(())
    }

    /// `op` needs the PMC stopped ([`Rule::Running`]): PMC_OP_PMCATTACH,
    /// PMC_OP_PMCRW with `PMC_F_NEWVALUE` ([`Op::Write`]) and
    /// PMC_OP_PMCSETCOUNT ([`Op::SetCount`]) on a running PMC give EBUSY
    /// (`hwpmc_mod.c:pmc_syscall_handler`).
    ///
    /// # Errors
    /// A [`Refusal`] under [`Rule::Running`] while running.
    pub fn check_stopped(&self, op: Op) -> Result<(), Refusal> {
        if self.is_running() {
            return Err(Refusal::new(Rule::Running, op, None));
        }
        Ok(())
    }

    /// `target` is not attached yet ([`Rule::AlreadyAttached`]:
    /// `hwpmc_mod.c:pmc_attach_one_process` finds the PMC already at the
    /// process's row -> EEXIST), compared by process
    /// ([`Lifecycle::same_target`]).
    ///
    /// # Errors
    /// A [`Refusal`] under [`Rule::AlreadyAttached`].
    pub fn check_not_attached(&self, target: Target) -> Result<(), Refusal> {
        if self.is_attached(target) {
            return Err(Refusal::new(
                Rule::AlreadyAttached,
                Op::Attach,
                Some(target),
            ));
        }
        Ok(())
    }

    /// Every rule of PMC_OP_PMCATTACH, in hwpmc's order: process scope,
    /// stopped, not yet attached.
    ///
    /// # Errors
    /// A [`Refusal`] under [`Rule::SystemScope`], [`Rule::Running`] or
    /// [`Rule::AlreadyAttached`].
    pub fn check_attach(&self, target: Target) -> Result<(), Refusal> {
        self.check_process_scope(Op::Attach)?;
        self.check_stopped(Op::Attach)?;
        self.check_not_attached(target)
    }

    /// The rules of PMC_OP_PMCDETACH: process scope, and `target` attached
    /// ([`Rule::NotAttached`]: `hwpmc_mod.c:pmc_detach_one_process` finds
    /// another PMC, or none, at the process's row -> EINVAL). hwpmc itself has no
    /// system-scope check for detach (a system PMC is at no process's row,
    /// so it answers ESRCH or EINVAL); both say the same thing here.
    ///
    /// # Errors
    /// A [`Refusal`] under [`Rule::SystemScope`] or [`Rule::NotAttached`].
    pub fn check_detach(&self, target: Target) -> Result<(), Refusal> {
        self.check_process_scope(Op::Detach)?;
        if !self.is_attached(target) {
            return Err(Refusal::new(Rule::NotAttached, Op::Detach, Some(target)));
        }
        Ok(())
    }

    /// A PMC that needs a log cannot start without one ([`Rule::LogRequired`]:
    /// `hwpmc_mod.c:pmc_start` refuses a `PMC_F_NEEDS_LOGFILE` PMC whose
    /// owner has no log file, `PMC_PO_OWNS_LOGFILE`, with EDOOFUS). `need`
    /// is why the PMC needs one, if it does.
    ///
    /// # Errors
    /// A [`Refusal`] under [`Rule::LogRequired`] when `need` is set and
    /// `has_log` is not.
    pub fn check_log(need: Option<LogNeed>, has_log: bool) -> Result<(), Refusal> {
        match need {
            Some(n) if !has_log => Err(Refusal::new(Rule::LogRequired(n), Op::Start, None)),
            _ => Ok(()),
        }
    }

    /// Whether `start` has anything to do: starting a running PMC is a
    /// no-op (`hwpmc_mod.c:pmc_syscall_handler`, PMC_OP_PMCSTART: "if
    /// (pm->pm_state == PMC_STATE_RUNNING) /* already running */ break;").
    pub fn start_needed(&self) -> bool {
        !self.is_running()
    }

    /// Whether `start` attaches the owner first: a process-scope PMC started
    /// with no target is attached to its owner (`hwpmc_mod.c:pmc_start`:
    /// an empty `pm_targets` list, never attached before, ->
    /// `pmc_attach_process` of the owner; detached from every target since,
    /// ESRCH).
    pub fn start_attaches_owner(&self) -> bool {
        !self.system && self.targets.is_empty()
    }

    /// Whether `stop` has anything to do. hwpmc answers EINVAL to stopping a
    /// PMC that never started (`hwpmc_mod.c:pmc_stop`); pmc's backends make
    /// stopping anything not running a no-op, as perf's DISABLE is.
    pub fn stop_needed(&self) -> bool {
        self.is_running()
    }

    /// Records a successful attach (once per process).
    pub fn record_attach(&mut self, target: Target) {
        if !self.is_attached(target) {
            self.targets.push(target);
        }
    }

    /// Records a successful detach; returns the target as it was attached.
    pub fn record_detach(&mut self, target: Target) -> Option<Target> {
        let pos = self
            .targets
            .iter()
            .position(|t| self.same_target(*t, target))?;
        Some(self.targets.remove(pos))
    }

    /// Records a successful start: running, and, for a process PMC started
    /// with no target, attached to its owner ([`Target::Current`]).
    pub fn record_start(&mut self) {
        if self.start_attaches_owner() {
            self.targets.push(Target::Current);
        }
        self.state = State::Running;
    }

    /// Records a successful stop: a running PMC is stopped; any other state
    /// stays.
    pub fn record_stop(&mut self) {
        if self.is_running() {
            self.state = State::Stopped;
        }
    }
}

/// Applies a group verb to each member in order, stopping at the first
/// error, which it returns unchanged.
///
/// ```
/// use pmc::lifecycle::fan_out;
///
/// let mut members = [1, 2, 3];
/// let mut seen = vec![];
/// fan_out(&mut members, |m| { seen.push(*m); Ok(()) })?;
/// assert_eq!(seen, [1, 2, 3]);
/// # Ok::<(), pmc::Error>(())
/// ```
///
/// # Errors
/// The first member's error.
pub fn fan_out<M>(members: &mut [M], mut verb: impl FnMut(&mut M) -> Result<()>) -> Result<()> {
    members.iter_mut().try_for_each(&mut verb)
}

/// Applies a group verb to each member in order, undoing the members already
/// done at the first error.
///
/// At the first error, applies `undo` to the members already done, last first, and returns the error, so
/// the group is left as it was (a group start that fails on its third
/// member stops the first two). `undo`'s own errors are ignored: the
/// caller learns of the error that made it undo.
///
/// ```
/// use pmc::lifecycle::fan_out_or_undo;
/// use pmc::{Error, ErrorKind, Op};
///
/// let mut running = [false; 3];
/// let mut next = 0;
/// let r = fan_out_or_undo(
///     &mut running,
///     |m| {
///         next += 1;
///         if next == 3 {
///             return Err(Error::new(ErrorKind::Busy, Op::Start, "no counter left"));
///         }
///         *m = true;
///         Ok(())
///     },
///     |m| *m = false,
/// );
/// assert_eq!(r.unwrap_err().kind(), ErrorKind::Busy);
/// assert_eq!(running, [false; 3]);
/// ```
///
/// # Errors
/// The first member's error.
pub fn fan_out_or_undo<M>(
    members: &mut [M],
    mut verb: impl FnMut(&mut M) -> Result<()>,
    mut undo: impl FnMut(&mut M),
) -> Result<()> {
    for i in 0..members.len() {
        if let Err(e) = verb(&mut members[i]) {
            for done in members[..i].iter_mut().rev() {
                undo(done);
            }
            return Err(e);
        }
    }
    Ok(())
}

/// `Group::read_into`'s one precondition, shared by the backends: one slot per
/// member.
///
/// ```
/// use pmc::lifecycle::check_read_slots;
/// assert!(check_read_slots(2, 2).is_ok());
/// let e = check_read_slots(2, 3).unwrap_err();
/// assert_eq!(e.kind(), pmc::ErrorKind::InvalidArgument);
/// ```
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] when `slots` is not `members`.
pub fn check_read_slots(members: usize, slots: usize) -> Result<()> {
    if slots == members {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::InvalidArgument,
        Op::Read,
        format!("read_into needs {members} slots, got {slots}"),
    )
    .with_help("pass one Reading per member: as many as Group::allocations().len()"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cpus;

    const ME: u32 = 4242;

    fn process() -> Lifecycle {
        Lifecycle::new(&Scope::Process, ME)
    }

    fn system() -> Lifecycle {
        Lifecycle::new(&Scope::System { cpu: Cpus::All }, ME)
    }

    #[test]
    fn a_fresh_pmc_is_allocated_with_no_target() {
        let l = process();
        assert_eq!(l.state(), State::Allocated);
        assert!(l.targets().is_empty());
        assert!(!l.is_system());
        assert!(system().is_system());
        assert_eq!(
            Lifecycle::for_caller(&Scope::Process).owner_pid(),
            std::process::id()
        );
    }

    #[test]
    fn current_is_the_owner_by_pid_and_exec_is_its_pid() {
        let l = process();
        assert!(l.same_target(Target::Current, Target::Pid(ME)));
        assert!(l.same_target(Target::Pid(ME), Target::Current));
        assert!(l.same_target(Target::Exec(7), Target::Pid(7)));
        assert!(!l.same_target(Target::Current, Target::Pid(ME + 1)));
        assert!(!l.same_target(Target::Pid(7), Target::Pid(8)));
        assert!(l.is_owner(Target::Exec(ME)));
        assert!(!l.is_owner(Target::Pid(1)));
        assert_eq!(l.pid_of(Target::Current), ME);
    }

    #[test]
    fn reattach_by_any_name_is_already_attached_eexist() {
        let mut l = process();
        l.check_attach(Target::Current).unwrap();
        l.record_attach(Target::Current);
        for again in [Target::Current, Target::Pid(ME), Target::Exec(ME)] {
            let r = l.check_attach(again).unwrap_err();
            assert_eq!(r.rule(), Rule::AlreadyAttached, "{again:?}");
            assert_eq!(
                (r.kind(), r.hwpmc_errno()),
                (ErrorKind::AlreadyAttached, 17)
            );
            let e = Error::from(r);
            assert_eq!(e.errno(), Some(17));
            assert_eq!(e.op(), Op::Attach);
            assert_eq!(
                e.message(),
                format!("the PMC is already attached to {again}")
            );
        }
        l.check_attach(Target::Pid(1)).unwrap();
        // Recording twice keeps one entry, in the form first attached.
        l.record_attach(Target::Pid(ME));
        assert_eq!(l.targets(), [Target::Current]);
    }

    #[test]
    fn detach_of_a_non_target_is_not_attached_einval() {
        let mut l = process();
        let r = l.check_detach(Target::Current).unwrap_err();
        assert_eq!((r.rule(), r.hwpmc_errno()), (Rule::NotAttached, 22));
        let e = r.to_error();
        assert_eq!(
            (e.kind(), e.op(), e.errno()),
            (ErrorKind::NotAttached, Op::Detach, Some(22))
        );
        assert_eq!(e.message(), "the PMC is not attached to self");
        l.record_attach(Target::Current);
        l.check_detach(Target::Pid(ME)).unwrap();
        assert_eq!(l.record_detach(Target::Pid(ME)), Some(Target::Current));
        assert!(l.targets().is_empty());
        assert_eq!(l.record_detach(Target::Pid(ME)), None);
        assert!(l.check_detach(Target::Current).is_err());
    }

    #[test]
    fn attach_and_detach_of_a_system_pmc_are_invalid_state() {
        let l = system();
        for (r, op) in [
            (l.check_attach(Target::Current), Op::Attach),
            (l.check_detach(Target::Current), Op::Detach),
        ] {
            let r = r.unwrap_err();
            assert_eq!(
                (r.rule(), r.op(), r.hwpmc_errno()),
                (Rule::SystemScope, op, 22)
            );
            let e = r.to_error();
            assert_eq!(e.kind(), ErrorKind::InvalidState);
            assert_eq!(e.errno(), None);
            assert_eq!(
                e.message(),
                format!("cannot {op} a system-scope PMC: it counts every process on its CPUs")
            );
        }
        process().check_process_scope(Op::Attach).unwrap();
    }

    #[test]
    fn write_set_count_and_attach_while_running_are_busy_ebusy() {
        let mut l = process();
        l.check_stopped(Op::Write).unwrap();
        l.record_start();
        for op in [Op::Write, Op::SetCount, Op::Attach] {
            let r = l.check_stopped(op).unwrap_err();
            assert_eq!((r.rule(), r.hwpmc_errno()), (Rule::Running, 16));
            let e = r.to_error();
            assert_eq!(
                (e.kind(), e.op(), e.errno()),
                (ErrorKind::Busy, op, Some(16))
            );
            assert_eq!(e.message(), format!("cannot {op} a running PMC"));
            assert_eq!(e.help(), Some("stop it first"));
        }
        // Attach: the running check comes before the target check (hwpmc's order).
        assert_eq!(
            l.check_attach(Target::Current).unwrap_err().rule(),
            Rule::Running
        );
        l.record_stop();
        l.check_stopped(Op::SetCount).unwrap();
        assert_eq!(
            l.check_attach(Target::Current).unwrap_err().rule(),
            Rule::AlreadyAttached
        );
    }

    #[test]
    fn system_scope_is_checked_before_running() {
        let mut l = system();
        l.record_start();
        assert_eq!(
            l.check_attach(Target::Current).unwrap_err().rule(),
            Rule::SystemScope
        );
    }

    #[test]
    fn start_attaches_the_owner_of_a_process_pmc_with_no_target() {
        let mut l = process();
        assert!(l.start_attaches_owner());
        assert!(l.start_needed() && !l.stop_needed());
        l.record_start();
        assert_eq!(l.state(), State::Running);
        assert_eq!(l.targets(), [Target::Current]);
        assert!(!l.start_needed() && l.stop_needed());
        // A second start is a no-op and attaches nothing more.
        l.record_start();
        assert_eq!(l.targets(), [Target::Current]);
        l.record_stop();
        assert_eq!(l.state(), State::Stopped);
        l.record_start();
        assert_eq!(l.targets(), [Target::Current]);

        let mut other = process();
        other.record_attach(Target::Pid(7));
        assert!(!other.start_attaches_owner());
        other.record_start();
        assert_eq!(other.targets(), [Target::Pid(7)]);

        let mut sys = system();
        assert!(!sys.start_attaches_owner());
        sys.record_start();
        assert!(sys.targets().is_empty());
    }

    #[test]
    fn stop_of_a_pmc_never_started_changes_nothing() {
        let mut l = process();
        assert!(!l.stop_needed());
        l.record_stop();
        assert_eq!(l.state(), State::Allocated);
    }

    #[test]
    fn start_without_a_needed_log_is_log_required() {
        Lifecycle::check_log(None, false).unwrap();
        Lifecycle::check_log(Some(LogNeed::Sampling), true).unwrap();
        for (need, words) in [
            (LogNeed::Sampling, "a sampling PMC needs a log"),
            (LogNeed::LogProcCsw, "log-proccsw"),
            (LogNeed::LogProcExit, "log-procexit"),
        ] {
            let r = Lifecycle::check_log(Some(need), false).unwrap_err();
            assert_eq!(
                (r.rule(), r.op(), r.hwpmc_errno()),
                (Rule::LogRequired(need), Op::Start, 88)
            );
            let e = r.to_error();
            assert_eq!(e.kind(), ErrorKind::LogRequired);
            // EDOOFUS is FreeBSD's number only: not put in the error.
            assert_eq!(e.errno(), None);
            assert!(e.message().contains(words), "{e}");
            assert!(e.message().contains("hwpmc's EDOOFUS"), "{e}");
            assert_eq!(e.help(), Some("call `Backend::configure_log` first"));
            assert_eq!(r.to_string(), e.message());
        }
    }

    #[test]
    fn fan_out_stops_at_the_first_error() {
        let mut members = [0u32; 4];
        let mut calls = 0;
        let r = fan_out(&mut members, |m| {
            calls += 1;
            if calls == 2 {
                return Err(Error::new(ErrorKind::Busy, Op::Attach, "second"));
            }
            *m += 1;
            Ok(())
        });
        assert_eq!(r.unwrap_err().message(), "second");
        assert_eq!(calls, 2);
        assert_eq!(members, [1, 0, 0, 0]);
    }

    #[test]
    fn fan_out_or_undo_undoes_the_members_done_last_first() {
        let mut members = [(0u8, false); 4];
        for (i, m) in members.iter_mut().enumerate() {
            m.0 = i as u8;
        }
        let mut undone = vec![];
        let r = fan_out_or_undo(
            &mut members,
            |m| {
                if m.0 == 2 {
                    return Err(Error::new(ErrorKind::NoSuchCpu, Op::Start, "member 2"));
                }
                m.1 = true;
                Ok(())
            },
            |m| {
                undone.push(m.0);
                m.1 = false;
            },
        );
        assert_eq!(r.unwrap_err().kind(), ErrorKind::NoSuchCpu);
        assert_eq!(undone, [1, 0]);
        assert!(members.iter().all(|m| !m.1));
        // Without an error nothing is undone.
        let mut undone = 0;
        fan_out_or_undo(
            &mut members,
            |m| {
                m.1 = true;
                Ok(())
            },
            |_| undone += 1,
        )
        .unwrap();
        assert_eq!(undone, 0);
        assert!(members.iter().all(|m| m.1));
    }
}
