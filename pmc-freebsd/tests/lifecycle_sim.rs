//! `pmc_core::lifecycle` in the FreeBSD backend: target identity, the PMC_OP_PMCATTACH /
//! PMCRW / PMCSETCOUNT checks answered in user space in the kernel's words, and group
//! verbs that undo what they did when a member fails.

use pmc_core::{
    Allocation, Backend as _, Cpus, ErrorKind, Flags, Group as _, Pmc as _, State, Target,
};
use pmc_freebsd::sys::sim::{SimConfig, SimDriver};
use pmc_freebsd::sys::{PmcOp, Sys as _};
use pmc_freebsd::Backend;
use std::sync::Arc;

type B = Backend<Arc<SimDriver>>;

fn backend() -> (Arc<SimDriver>, B) {
    let sim = Arc::new(SimDriver::new(SimConfig::default()));
    let b = Backend::with_sys(sim.clone()).expect("handshake with the simulator");
    (sim, b)
}

fn counting(spec: &str) -> Allocation {
    Allocation::counting(spec.parse().expect("spec parses"))
}

fn calls_of(sim: &SimDriver, op: PmcOp) -> usize {
    sim.take_calls().iter().filter(|(o, _)| *o == op).count()
}

/// A target is a process: `Exec(p)` and `Pid(p)` are one, as `Current` and `Pid(getpid())`
/// are; detaching it by either name removes it from `targets()`.
#[test]
fn targets_are_processes_whatever_their_name() {
    let (sim, b) = backend();
    sim.spawn(2000, 1000, true, "/bin/sh");
    let me = b.sys().current_pid() as u32;
    let mut p = b.allocate(&counting("page-faults")).unwrap();
    p.attach(Target::Exec(2000)).unwrap();
    let e = p.attach(Target::Pid(2000)).unwrap_err();
    assert_eq!(
        (e.kind(), e.errno()),
        (ErrorKind::AlreadyAttached, Some(17))
    );
    assert_eq!(p.targets(), [Target::Exec(2000)]);
    p.detach(Target::Pid(2000)).unwrap();
    assert!(p.targets().is_empty(), "{:?}", p.targets());
    p.attach(Target::Current).unwrap();
    p.detach(Target::Pid(me)).unwrap();
    assert!(p.targets().is_empty(), "{:?}", p.targets());
}

/// What hwpmc refuses from the PMC's own state (EBUSY while running, EINVAL for a system
/// PMC) is answered by the life cycle before any request, in the same words the kernel's
/// errno gets.
#[test]
fn state_checks_are_answered_without_a_request_in_the_kernels_words() {
    let (sim, b) = backend();
    sim.spawn(2000, 1000, true, "/bin/sh");
    let mut p = b.allocate(&counting("page-faults")).unwrap();
    p.start().unwrap();
    sim.take_calls();
    let e = p.write(5).unwrap_err();
    assert_eq!((e.kind(), e.errno()), (ErrorKind::Busy, Some(16)));
    assert!(
        e.message()
            .starts_with("PMC_OP_PMCRW failed: cannot write the count of a running PMC"),
        "{e}"
    );
    assert_eq!(calls_of(&sim, PmcOp::PmcRw), 0);
    let e = p.set_count(5).unwrap_err();
    assert_eq!((e.kind(), e.errno()), (ErrorKind::Busy, Some(16)));
    assert!(
        e.message()
            .starts_with("PMC_OP_PMCSETCOUNT failed: cannot set the count"),
        "{e}"
    );
    assert_eq!(calls_of(&sim, PmcOp::PmcSetCount), 0);
    let e = p.attach(Target::Pid(2000)).unwrap_err();
    assert_eq!((e.kind(), e.errno()), (ErrorKind::Busy, Some(16)));
    assert!(
        e.message()
            .starts_with("PMC_OP_PMCATTACH failed: cannot attach to pid 2000"),
        "{e}"
    );
    assert_eq!(calls_of(&sim, PmcOp::PmcAttach), 0);
    p.stop().unwrap();
    p.set_count(5).unwrap();
    assert_eq!(p.write(7).unwrap(), 5);

    let mut s = b
        .allocate(&counting("page-faults").system(Cpus::One(0)))
        .unwrap();
    sim.take_calls();
    let e = s.attach(Target::Current).unwrap_err();
    assert_eq!((e.kind(), e.errno()), (ErrorKind::InvalidState, Some(22)));
    assert!(e.message().contains("process-scope PMCs only"), "{e}");
    assert_eq!(calls_of(&sim, PmcOp::PmcAttach), 0);
}

/// A group start that fails on a member (log-proccsw without a log: EDOOFUS) stops the
/// members it had started: nothing counts, and the group is still Allocated.
#[test]
fn a_group_start_failing_on_a_member_stops_the_members_started() {
    let (sim, b) = backend();
    let mut g = b
        .allocate_group(&[
            counting("page-faults"),
            counting("page-faults").flags(Flags::LOG_PROCCSW),
        ])
        .unwrap();
    let e = g.start().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LogRequired, "{e}");
    assert_eq!(g.state(), State::Allocated);
    sim.tick(1_000_000, 0, 42);
    let r = g.read().unwrap();
    assert_eq!(
        r[0].value, 0,
        "the leader kept counting after the failed start"
    );
    // With a log, the same group starts whole.
    b.configure_log(Box::new(std::io::sink())).unwrap();
    g.start().unwrap();
    sim.tick(1_000_000, 0, 42);
    g.stop().unwrap();
    assert_eq!(g.state(), State::Stopped);
    assert!(g.read().unwrap().iter().all(|r| r.value == 42));
}

/// A group attach that fails on a member (a sampling member refuses the owner: hwpmc would
/// feed its samples to profil(2)) detaches the members it had attached, so the same attach
/// can be made again once the cause is gone, and nothing is left half attached.
#[test]
fn a_group_attach_failing_on_a_member_detaches_the_members_attached() {
    let (sim, b) = backend();
    let sampling = Allocation::sampling(
        "instructions".parse().unwrap(),
        pmc_core::Rate::Period(10_000),
    );
    let mut g = b
        .allocate_group(&[counting("instructions"), sampling])
        .unwrap();
    sim.take_calls();
    let e = g.attach(Target::Current).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
    let calls = sim.take_calls();
    let ops: Vec<PmcOp> = calls.iter().map(|(o, _)| *o).collect();
    assert_eq!(ops, [PmcOp::PmcAttach, PmcOp::PmcDetach], "{calls:?}");
    assert!(calls.iter().all(|(_, r)| r.is_ok()), "{calls:?}");
    // The leader is free again: attaching it alone to the owner works.
    sim.spawn(2000, 1000, true, "/bin/sh");
    g.attach(Target::Pid(2000)).unwrap();
    g.detach(Target::Pid(2000)).unwrap();
}

/// hwpmc delivers samples to its log only: in-process sampling is the capability's default
/// refusal, with what to do instead.
#[test]
fn in_process_samples_are_not_supported() {
    let (_sim, b) = backend();
    let a = Allocation::sampling(
        "instructions".parse().unwrap(),
        pmc_core::Rate::Period(100_000),
    );
    let mut p = b.allocate(&a).unwrap();
    let e = p.sample_in_process().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported);
    assert!(e.to_string().contains("configure_log"), "{e}");
    assert_eq!(p.samples().unwrap_err().kind(), ErrorKind::NotSupported);
}
