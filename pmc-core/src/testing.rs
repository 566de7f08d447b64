//! The conformance suite: hwpmc(4) semantics, checked against any backend.
//!
//! Each backend runs these with a [`Workload`] that makes the counted event
//! advance (the Linux backend touches fresh pages in the calling process; a
//! simulated hwpmc driver advances its SOFT page-fault counter), so that "the
//! same API on both systems" is a test, not a claim.
//!
//! Every check returns `Err(String)` describing the first deviation.

use crate::{Allocation, Backend, ErrorKind, EventSpec, Group, Pmc, PortableEvent, State, Target};

/// Makes the counted event advance in the calling process.
pub trait Workload {
    /// The event the workload drives (e.g. `page-faults`).
    fn event(&self) -> EventSpec {
        EventSpec::portable(PortableEvent::PageFaults)
    }
    /// Causes at least `n` occurrences of [`Workload::event`] in the
    /// calling process.
    fn run(&self, n: u64);
}

/// The outcome of one named check.
pub type CheckResult = Result<(), String>;

fn expect_kind<T>(what: &str, r: crate::Result<T>, kind: ErrorKind) -> CheckResult {
    match r {
        Ok(_) => Err(format!("{what}: expected {kind:?}, got Ok")),
        Err(e) if e.kind() == kind => {
            if e.to_string().is_empty() {
                return Err(format!("{what}: {kind:?} error has an empty message"));
            }
            Ok(())
        }
        Err(e) => Err(format!(
            "{what}: expected {kind:?}, got {:?}: {e}",
            e.kind()
        )),
    }
}

fn ok<T>(what: &str, r: crate::Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

/// One conformance check.
pub type Check<B> = fn(&B, &dyn Workload) -> CheckResult;

/// Runs every check, returning the names of those that failed with why.
pub fn run_all<B: Backend>(backend: &B, work: &dyn Workload) -> Vec<(&'static str, String)> {
    let checks: [(&'static str, Check<B>); 8] = [
        ("start_attaches_to_caller", start_attaches_to_caller),
        ("counts_advance", counts_advance),
        (
            "set_count_while_running_is_busy",
            set_count_while_running_is_busy,
        ),
        ("reattach_is_already_attached", reattach_is_already_attached),
        (
            "detach_unattached_is_not_attached",
            detach_unattached_is_not_attached,
        ),
        ("write_returns_old_value", write_returns_old_value),
        ("group_reads_every_member", group_reads_every_member),
        ("log_proccsw_rules", log_proccsw_rules),
    ];
    checks
        .iter()
        .filter_map(|(name, f)| f(backend, work).err().map(|e| (*name, e)))
        .collect()
}

/// log-proccsw follows hwpmc(4): valid only for process scope (a system-scope one is refused as
/// invalid, or as not permitted where system PMCs are), and such a PMC cannot start
/// before a log is configured (EDOOFUS). Expects a backend with no log configured. A backend
/// that cannot offer the flag here (e.g. Linux without kernel-mode counting) must refuse it at
/// allocate with a permission or not-supported error; the start rule is then not checked.
pub fn log_proccsw_rules<B: Backend>(b: &B, w: &dyn Workload) -> CheckResult {
    let system = Allocation::counting(w.event())
        .system(crate::Cpus::All)
        .flags(crate::Flags::LOG_PROCCSW);
    // Refused as invalid, or first as not permitted (an unprivileged FreeBSD process may not
    // allocate system PMCs at all).
    match b.allocate(&system) {
        Err(e) if matches!(e.kind(), ErrorKind::InvalidArgument | ErrorKind::Permission) => {}
        Err(e) => {
            return Err(format!(
                "allocate system-scope log-proccsw: expected InvalidArgument, got {:?}: {e}",
                e.kind()
            ))
        }
        Ok(_) => return Err("allocate system-scope log-proccsw: expected an error, got Ok".into()),
    }
    let process = Allocation::counting(w.event()).flags(crate::Flags::LOG_PROCCSW);
    let mut pmc = match b.allocate(&process) {
        Ok(p) => p,
        Err(e) if matches!(e.kind(), ErrorKind::Permission | ErrorKind::NotSupported) => {
            return Ok(());
        }
        Err(e) => return Err(format!("allocate process-scope log-proccsw: {e}")),
    };
    expect_kind(
        "start log-proccsw without a log",
        pmc.start(),
        ErrorKind::LogRequired,
    )?;
    if pmc.state() == State::Running {
        return Err("a failed start left the PMC running".into());
    }
    Ok(())
}

/// `start` on an unattached process PMC attaches it to the caller.
pub fn start_attaches_to_caller<B: Backend>(b: &B, w: &dyn Workload) -> CheckResult {
    let mut pmc = ok("allocate", b.allocate(&Allocation::counting(w.event())))?;
    if pmc.state() != State::Allocated {
        return Err(format!("fresh PMC in state {:?}", pmc.state()));
    }
    if !pmc.targets().is_empty() {
        return Err("fresh PMC already has targets".into());
    }
    ok("start", pmc.start())?;
    if pmc.state() != State::Running {
        return Err(format!("started PMC in state {:?}", pmc.state()));
    }
    if pmc.targets() != vec![Target::Current] {
        return Err(format!(
            "start attached {:?}, expected [Current]",
            pmc.targets()
        ));
    }
    ok("stop", pmc.stop())?;
    if pmc.state() != State::Stopped {
        return Err(format!("stopped PMC in state {:?}", pmc.state()));
    }
    ok("release", pmc.release())
}

/// A counting PMC sees the workload, and stops counting when stopped.
pub fn counts_advance<B: Backend>(b: &B, w: &dyn Workload) -> CheckResult {
    let mut pmc = ok("allocate", b.allocate(&Allocation::counting(w.event())))?;
    ok("start", pmc.start())?;
    w.run(256);
    ok("stop", pmc.stop())?;
    let r = ok("read", pmc.read())?;
    let v = r.scaled().ok_or_else(|| format!("not counted: {r:?}"))?;
    if v < 256 {
        return Err(format!("counted {v}, expected >= 256"));
    }
    w.run(256);
    let r2 = ok("read", pmc.read())?;
    if r2.value != r.value {
        return Err(format!(
            "stopped PMC advanced from {} to {}",
            r.value, r2.value
        ));
    }
    Ok(())
}

/// set_count and write on a running PMC give `Busy` (EBUSY).
pub fn set_count_while_running_is_busy<B: Backend>(b: &B, w: &dyn Workload) -> CheckResult {
    let mut pmc = ok("allocate", b.allocate(&Allocation::counting(w.event())))?;
    ok("start", pmc.start())?;
    expect_kind(
        "set_count while running",
        pmc.set_count(10),
        ErrorKind::Busy,
    )?;
    expect_kind("write while running", pmc.write(10), ErrorKind::Busy)?;
    ok("stop", pmc.stop())?;
    ok("set_count while stopped", pmc.set_count(10))
}

/// Attaching twice to one target gives `AlreadyAttached` (EEXIST).
pub fn reattach_is_already_attached<B: Backend>(b: &B, w: &dyn Workload) -> CheckResult {
    let mut pmc = ok("allocate", b.allocate(&Allocation::counting(w.event())))?;
    ok("attach", pmc.attach(Target::Current))?;
    expect_kind(
        "re-attach",
        pmc.attach(Target::Current),
        ErrorKind::AlreadyAttached,
    )
}

/// Detaching what is not attached gives `NotAttached` (EINVAL).
pub fn detach_unattached_is_not_attached<B: Backend>(b: &B, w: &dyn Workload) -> CheckResult {
    let mut pmc = ok("allocate", b.allocate(&Allocation::counting(w.event())))?;
    expect_kind(
        "detach unattached",
        pmc.detach(Target::Current),
        ErrorKind::NotAttached,
    )?;
    let mut sys = match b.allocate(&Allocation::counting(w.event()).system(crate::Cpus::One(0))) {
        Ok(p) => p,
        // Unprivileged callers may not allocate system PMCs; that is checked elsewhere.
        Err(e) if e.kind() == ErrorKind::Permission => return Ok(()),
        Err(e) => return Err(format!("allocate system: {e}")),
    };
    expect_kind(
        "attach a system PMC",
        sys.attach(Target::Current),
        ErrorKind::InvalidState,
    )
}

/// write returns the old value and the new value is what reads continue from.
pub fn write_returns_old_value<B: Backend>(b: &B, w: &dyn Workload) -> CheckResult {
    let mut pmc = ok("allocate", b.allocate(&Allocation::counting(w.event())))?;
    ok("start", pmc.start())?;
    w.run(64);
    ok("stop", pmc.stop())?;
    let before = ok("read", pmc.read())?.value;
    let old = ok("write", pmc.write(1_000_000))?;
    if old != before {
        return Err(format!("write returned {old}, read said {before}"));
    }
    let now = ok("read", pmc.read())?.value;
    if now != 1_000_000 {
        return Err(format!("after write(1000000) read {now}"));
    }
    ok("start", pmc.start())?;
    w.run(64);
    ok("stop", pmc.stop())?;
    let after = ok("read", pmc.read())?.value;
    if after < 1_000_064 {
        return Err(format!(
            "after write and more work read {after}, expected >= 1000064"
        ));
    }
    Ok(())
}

/// A group of two reads both members, by position and by their
/// [`Member`](crate::Member) handles (so the group keeps the allocations
/// it was given).
pub fn group_reads_every_member<B: Backend>(b: &B, w: &dyn Workload) -> CheckResult {
    let mut spec = crate::GroupSpec::new();
    let members = [
        spec.add(Allocation::counting(w.event())),
        spec.add(Allocation::counting(w.event())),
    ];
    let mut g = ok("allocate_group", b.allocate_group(&spec))?;
    ok("start", g.start())?;
    w.run(128);
    ok("stop", g.stop())?;
    let r = ok("read", g.read())?;
    if r.len() != 2 {
        return Err(format!("group read {} members, expected 2", r.len()));
    }
    for (i, m) in r.iter().enumerate() {
        if m.value < 128 {
            return Err(format!("member {i} counted {}, expected >= 128", m.value));
        }
    }
    let by_member = ok("read_members", g.read_members())?;
    for m in members {
        if let Err(e) = by_member.member(m) {
            return Err(format!("read_members by its own handle: {e}"));
        }
    }
    Ok(())
}
