//! The backend through the public pmc-core API, on the simulated driver.

use pmc_core::testing::{self, Workload};
use pmc_core::{
    Allocation, Backend as _, Cpus, ErrorKind, Flags, Group as _, Instance, Mode, Pmc as _, Rate,
    Scope, State, Target,
};
use pmc_freebsd::sys::abi::*;
use pmc_freebsd::sys::sim::{SimConfig, SimCpu, SimDriver, Work};
use pmc_freebsd::Backend;
use std::io::Write;
use std::sync::{Arc, Mutex};

type B = Backend<Arc<SimDriver>>;

fn backend(cfg: SimConfig) -> (Arc<SimDriver>, B) {
    let sim = Arc::new(SimDriver::new(cfg));
    let b = Backend::with_sys(sim.clone()).expect("handshake with the simulator");
    (sim, b)
}

fn default() -> (Arc<SimDriver>, B) {
    backend(SimConfig::default())
}

fn counting(spec: &str) -> Allocation {
    Allocation::counting(spec.parse().expect("spec parses"))
}

struct PageFaults(Arc<SimDriver>);
impl Workload for PageFaults {
    fn run(&self, n: u64) {
        self.0.tick(1_000_000, 0, n);
    }
}

#[test]
fn conformance_suite_passes() {
    let (sim, b) = default();
    let failures = testing::run_all(&b, &PageFaults(sim.clone()));
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(sim.allocated(), 0, "every PMC released");
}

/// A simulator whose machine has the CPUID `cpu`: the CPU reaches the
/// backend through `Sys::cpu_id`, like every other fact.
struct WithCpu(Arc<SimDriver>, pmc_events::CpuId);

impl pmc_freebsd::Sys for WithCpu {
    fn call(&self, arg: pmc_freebsd::sys::OpArg<'_>) -> Result<(), pmc_freebsd::Errno> {
        self.0.call(arg)
    }
    fn current_pid(&self) -> i32 {
        self.0.current_pid()
    }
    fn sysctl_string(&self, name: &str) -> Option<String> {
        self.0.sysctl_string(name)
    }
    fn cpu_id(&self) -> Option<pmc_events::CpuId> {
        Some(self.1)
    }
}

#[test]
fn the_cpu_comes_through_sys_never_from_the_host() {
    use pmc_freebsd::Sys as _;
    // The simulator has no CPUID: its Skylake is named by its
    // kern.hwpmc.cpuid, whatever CPU runs the test.
    let (sim, b) = default();
    assert_eq!(sim.cpu_id(), None);
    let skylake = pmc_events::CpuId::from_hwpmc_cpuid("GenuineIntel-6-5E-3");
    assert!(skylake.is_some());
    assert_eq!(b.machine().cpu, skylake);
    // A Sys that has one (an Ice Lake, same vendor as pm_cputype) is used.
    let icelake = pmc_events::CpuId::from_hwpmc_cpuid("GenuineIntel-6-7E-5").unwrap();
    let b = Backend::with_sys(WithCpu(Arc::new(SimDriver::default()), icelake)).unwrap();
    assert_eq!(b.machine().cpu, Some(icelake));
    // One of another vendor than pm_cputype's is not.
    let zen = pmc_events::CpuId::from_hwpmc_cpuid("AuthenticAMD-25-21-0").unwrap();
    let b = Backend::with_sys(WithCpu(Arc::new(SimDriver::default()), zen)).unwrap();
    assert_eq!(b.machine().cpu, skylake);
}

#[test]
fn handshake_learns_the_machine() {
    let (_, b) = default();
    assert_eq!(b.machine().cputype, PMC_CPU_INTEL_SKYLAKE);
    assert_eq!(b.machine().version, PMC_VERSION);
    assert_eq!(b.ncpu(), 2);
    assert!(b
        .machine()
        .soft_events
        .iter()
        .any(|(n, _)| n == "PAGE_FAULT.ALL"));
    assert_eq!(b.name(), "freebsd-hwpmc");
    // FreeBSD 12/13's major 0x09 is accepted; anything else is not.
    let (_, old) = backend(SimConfig {
        version: 0x0903_0000,
        ..SimConfig::default()
    });
    assert_eq!(old.machine().version >> 24, 9);
    let sim = Arc::new(SimDriver::new(SimConfig {
        version: 0x0B00_0000,
        ..SimConfig::default()
    }));
    let e = Backend::with_sys(sim).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::VersionMismatch);
}

#[test]
fn process_counting_tc() {
    let (sim, b) = default();
    let mut p = b.allocate(&counting("instructions")).unwrap();
    assert!(p
        .native_config()
        .iter()
        .any(|f| f.name == "event" && f.value.starts_with("IAF")));
    p.start().unwrap();
    assert_eq!(p.targets(), vec![Target::Current]);
    sim.tick(1_000, 5_000, 0);
    p.stop().unwrap();
    let r = p.read().unwrap();
    assert_eq!(r.value, 5_000);
    assert_eq!(r.scaled(), Some(5_000), "hwpmc never multiplexes");
    assert_eq!(p.write(7).unwrap(), 5_000);
    assert_eq!(p.read().unwrap().value, 7);
    // Two instruction PMCs: the second falls back from IAF to IAP.
    let mut q = b.allocate(&counting("instructions")).unwrap();
    assert!(q
        .native_config()
        .iter()
        .any(|f| f.name == "event" && f.value.starts_with("IAP")));
    q.start().unwrap();
    sim.tick(1_000, 10, 0);
    assert_eq!(q.read().unwrap().value, 10);
    let inst = q.read_instances().unwrap();
    assert_eq!(inst[0].instance, Instance::Target(Target::Current));
    drop(p);
    drop(q);
    assert_eq!(sim.allocated(), 0, "drop releases");
}

#[test]
fn process_counting_other_target_and_descendants() {
    let (sim, b) = default();
    sim.spawn(2000, 1000, true, "/bin/sh");
    let mut p = b.allocate(&counting("page-faults").descendants()).unwrap();
    p.attach(Target::Pid(2000)).unwrap();
    p.start().unwrap();
    sim.spawn(2001, 2000, true, "/bin/ls");
    sim.run(Work {
        pid: 2001,
        page_faults_read: 2,
        ..Work::default()
    });
    sim.run(Work {
        pid: 2000,
        page_faults_write: 3,
        ..Work::default()
    });
    assert_eq!(p.read().unwrap().value, 5);
    p.stop().unwrap();
    // With DESCENDANTS, detaching 2000 detaches its tree (2001 too), and
    // hwpmc forgets the PMC was ever attached: start attaches the owner.
    p.detach(Target::Pid(2000)).unwrap();
    assert!(p.targets().is_empty());
    p.detach(Target::Pid(2001)).unwrap(); // errors are ignored for trees
    p.start().unwrap();
    assert_eq!(p.targets(), vec![Target::Current]);
    sim.run(Work {
        pid: 2001,
        page_faults_read: 100,
        ..Work::default()
    });
    assert_eq!(
        p.read().unwrap().value,
        105,
        "start attached the owner and, with DESCENDANTS, its tree (2000, 2001)"
    );

    // Without DESCENDANTS, a PMC detached from everything cannot start.
    let mut q = b.allocate(&counting("cpu-clock")).unwrap();
    q.attach(Target::Pid(2000)).unwrap();
    q.detach(Target::Pid(2000)).unwrap();
    let e = q.start().unwrap_err();
    assert_eq!((e.kind(), e.errno()), (ErrorKind::InvalidState, Some(3)));
    assert!(e.help().unwrap_or("").contains("attach"));
}

#[test]
fn system_counting_sc_per_cpu() {
    let (sim, b) = default();
    let mut p = b
        .allocate(&counting("instructions").system(Cpus::All))
        .unwrap();
    assert_eq!(p.pmc_ids().len(), 2);
    p.start().unwrap();
    assert!(p.targets().is_empty());
    sim.run(Work {
        pid: 0,
        cpu: 0,
        instructions: 100,
        ..Work::default()
    });
    sim.run(Work {
        pid: 0,
        cpu: 1,
        instructions: 20,
        ..Work::default()
    });
    sim.run(Work {
        pid: 4242,
        cpu: 1,
        instructions: 3,
        ..Work::default()
    }); // any process counts
    assert_eq!(p.read().unwrap().value, 123);
    let per_cpu = p.read_instances().unwrap();
    assert_eq!(per_cpu.len(), 2);
    assert_eq!(per_cpu[0].instance, Instance::Cpu(0));
    assert_eq!(per_cpu[0].reading.value, 100);
    assert_eq!(per_cpu[1].reading.value, 23);
    // TSC: system counting on one CPU.
    let mut t = b
        .allocate(&counting("tsc-tsc").system(Cpus::One(1)))
        .unwrap();
    t.start().unwrap();
    sim.advance(1_000);
    assert_eq!(t.read().unwrap().value, 2_000);
    // attach on a system PMC is refused.
    assert_eq!(
        t.attach(Target::Current).unwrap_err().kind(),
        ErrorKind::InvalidState
    );
    // An offline CPU is skipped by Cpus::All and refused by Cpus::One.
    sim.set_cpu_online(1, false);
    let all = b
        .allocate(&counting("page-faults").system(Cpus::All))
        .unwrap();
    assert_eq!(all.pmc_ids().len(), 1);
    let e = b
        .allocate(&counting("page-faults").system(Cpus::One(1)))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoSuchCpu);
    assert!(e.to_string().contains("CPU 1"), "{e}");
    // Starting a PMC whose CPU went away: ENXIO.
    assert_eq!(t.stop().unwrap_err().kind(), ErrorKind::NoSuchCpu);
}

#[derive(Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);
impl Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn record_types(bytes: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    let mut off = 0;
    while off + 16 <= bytes.len() {
        let h = u32::from_le_bytes(bytes[off..off + 4].try_into().unwrap());
        assert_eq!(h >> 24, 0xEE, "magic at {off}");
        let len = (h & 0xFFFF) as usize;
        assert!(len >= 16 && len % 4 == 0, "length {len} at {off}");
        out.push((h >> 16) & 0xFF);
        off += len;
    }
    assert_eq!(off, bytes.len(), "records end on a record boundary");
    out
}

#[test]
fn system_sampling_ss_needs_a_log_then_logs() {
    let (sim, b) = default();
    let a = Allocation::sampling("SOFT-CLOCK.HARD".parse().unwrap(), Rate::Period(1000))
        .system(Cpus::One(0));
    let mut p = b.allocate(&a).unwrap();
    let e = p.start().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LogRequired);
    assert_eq!(e.errno(), Some(88), "EDOOFUS kept");
    assert!(e.help().unwrap().contains("configure a log first"));
    let buf = SharedBuf::default();
    b.configure_log(Box::new(buf.clone())).unwrap();
    p.start().unwrap();
    sim.advance(3_000_000_000); // 3000 ticks: 3 samples
                                // hwpmc reads a sampling PMC as the countdown to its next sample
                                // (hwpmc_core.c:iap_read_pmc), not a total: read() refuses it.
    let e = p.read().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
    assert!(e.message().contains("countdown"), "{e}");
    assert_eq!(p.sample_countdown().unwrap(), vec![(Some(0), 1000)]);
    sim.advance(250_000_000);
    assert_eq!(p.sample_countdown().unwrap(), vec![(Some(0), 750)]);
    b.write_log(0x5EED).unwrap();
    b.flush_log().unwrap();
    p.stop().unwrap();
    b.close_log().unwrap();
    // configure_log hands over the pmc-log format.
    let bytes = buf.0.lock().unwrap().clone();
    let (kinds, closed) = pmc_log_kinds(&bytes);
    assert_eq!(
        kinds,
        // The first system sampling start dumps the two processes
        // (PROC_CREATE, THR_CREATE), the two kernel objects and the two
        // processes' mappings (MAP_IN): other records in pmc-log.
        vec![
            "header",
            "other",
            "other",
            "other",
            "other",
            "other",
            "other",
            "other",
            "other",
            "sample",
            "sample",
            "sample",
            "user-data",
            "close"
        ]
    );
    assert!(closed, "CLOSELOG became the clean-close marker");
    // After close, log operations say "no log".
    assert_eq!(b.flush_log().unwrap_err().kind(), ErrorKind::InvalidState);
}

#[test]
fn process_sampling_ts_logs_allocation_attach_and_samples() {
    let (sim, b) = default();
    let buf = SharedBuf::default();
    b.configure_hwpmc_log(Box::new(buf.clone())).unwrap();
    sim.spawn(2000, 1000, true, "/usr/bin/make");
    let a = Allocation::sampling("instructions".parse().unwrap(), Rate::Period(5_000));
    let mut p = b.allocate(&a).unwrap();
    assert_eq!(p.allocation().mode, Mode::Sampling(Rate::Period(5_000)));
    p.attach(Target::Pid(2000)).unwrap();
    p.start().unwrap();
    sim.run(Work {
        pid: 2000,
        nanos: 1_000,
        instructions: 12_000,
        ..Work::default()
    }); // 2 samples
    assert_eq!(p.set_count(10_000).unwrap_err().kind(), ErrorKind::Busy);
    p.stop().unwrap();
    p.set_count(10_000).unwrap();
    // Sampling itself: hwpmc feeds profil(2), nothing would reach the log;
    // the backend refuses instead of logging nothing.
    let mut own = b.allocate(&a).unwrap();
    let e = own.start().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
    assert!(e.message().contains("profil"), "{e}");
    assert!(e.help().unwrap().contains("Target::Exec"), "{e}");
    let e = own.attach(Target::Current).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
    let me = i64::from(sim.config().pid) as u32;
    assert_eq!(
        own.attach(Target::Pid(me)).unwrap_err().kind(),
        ErrorKind::NotSupported
    );
    b.close_log().unwrap();
    let types = record_types(&buf.0.lock().unwrap());
    assert_eq!(
        types,
        vec![
            PMCLOG_TYPE_INITIALIZE,
            PMCLOG_TYPE_PMCALLOCATE,
            PMCLOG_TYPE_PMCATTACH,
            // The target's mapping (sampling attach), then the kernel
            // objects at the owner's first sampling start.
            PMCLOG_TYPE_MAP_IN,
            PMCLOG_TYPE_MAP_IN,
            PMCLOG_TYPE_MAP_IN,
            PMCLOG_TYPE_CALLCHAIN,
            PMCLOG_TYPE_CALLCHAIN,
            PMCLOG_TYPE_PMCALLOCATE,
            PMCLOG_TYPE_CLOSELOG
        ]
    );
}

#[test]
fn process_sampling_another_process_needs_a_log() {
    let (sim, b) = default();
    sim.spawn(2000, 1000, true, "/usr/bin/make");
    let a = Allocation::sampling("instructions".parse().unwrap(), Rate::Period(5_000));
    let mut p = b.allocate(&a).unwrap();
    p.attach(Target::Pid(2000)).unwrap();
    assert_eq!(p.start().unwrap_err().kind(), ErrorKind::LogRequired);
    // Sampling itself would need none, but logs nothing: refused.
    let mut own = b.allocate(&a).unwrap();
    assert_eq!(own.start().unwrap_err().kind(), ErrorKind::NotSupported);
}

/// Issue 14 item 5: hwpmc raises a reload count below its minimum (1000,
/// or kern.hwpmc.mincount); the backend asks for what the kernel honours
/// and says what the effective rate is.
#[test]
fn frequencies_below_the_kernels_floor_are_reported() {
    use pmc_core::Pmc as _;
    let (sim, b) = default();
    let a = Allocation::sampling("cpu-clock".parse().unwrap(), Rate::Frequency(99))
        .system(Cpus::One(0));
    let p = b.allocate(&a).unwrap();
    let w = p.rate_warning().expect("a warning").to_owned();
    assert!(w.contains("99 Hz") && w.contains("1000"), "{w}");
    assert!(w.contains("1.000 Hz"), "{w}");
    let nc = p.native_config();
    assert!(nc.iter().any(|f| f.name == "warning" && f.value == w));
    assert!(nc.iter().any(|f| f.name == "pm_count" && f.value == "1000"));
    let info = b.rows(0).unwrap();
    assert!(info
        .iter()
        .any(|r| r.owner_pid.is_some() && r.reload_count == 1000));
    drop(p);
    // Page faults have no clock: a period of 1 becomes 1 in 1000.
    let a = Allocation::sampling("page-faults".parse().unwrap(), Rate::Frequency(10));
    let p = b.allocate(&a).unwrap();
    assert!(
        p.rate_warning()
            .unwrap()
            .contains("one sample per 1000 events"),
        "{:?}",
        p.rate_warning()
    );
    // A period at or above the floor: no warning.
    let a = Allocation::sampling("SOFT-CLOCK.HARD".parse().unwrap(), Rate::Period(2000))
        .system(Cpus::One(0));
    assert_eq!(b.allocate(&a).unwrap().rate_warning(), None);
    drop(sim);
    // A kernel with kern.hwpmc.mincount = 5: 99 Hz is 10 ticks, honoured.
    let (_sim, b) = backend(SimConfig {
        mincount: Some(5),
        ..SimConfig::default()
    });
    let a = Allocation::sampling("cpu-clock".parse().unwrap(), Rate::Frequency(99))
        .system(Cpus::One(0));
    let p = b.allocate(&a).unwrap();
    assert_eq!(p.rate_warning(), None);
    assert!(p
        .native_config()
        .iter()
        .any(|f| f.name == "pm_count" && f.value == "10"));
}

#[test]
fn replacing_a_log_flushes_the_old_one() {
    let (_sim, b) = default();
    let first = SharedBuf::default();
    b.configure_log(Box::new(first.clone())).unwrap();
    b.write_log(1).unwrap();
    let second = SharedBuf::default();
    b.configure_log(Box::new(second.clone())).unwrap();
    b.write_log(2).unwrap();
    b.close_log().unwrap();
    // Deconfiguring the first log closed it (pmclog_close writes CLOSELOG).
    let (kinds, closed) = pmc_log_kinds(&first.0.lock().unwrap());
    assert_eq!(kinds, vec!["header", "user-data", "close"]);
    assert!(closed);
    let (kinds, closed) = pmc_log_kinds(&second.0.lock().unwrap());
    assert_eq!(kinds, vec!["header", "user-data", "close"]);
    assert!(closed);
    assert_eq!(b.write_log(3).unwrap_err().kind(), ErrorKind::InvalidState);
}

/// Item 1 of issue 14: hwpmc keeps PMC_PO_SHUTDOWN on the owner after
/// CLOSELOG or CONFIGURELOG(-1) (hwpmc_logging.c:pmclog_close), so a second
/// kernel log in one process fails with ENOMEM while it owns PMCs. The
/// backend configures the kernel log once and swaps the sink in user space.
#[test]
fn a_second_log_works_while_pmcs_are_allocated() {
    let (sim, b) = default();
    sim.spawn(2000, 1000, true, "/usr/bin/make");
    let a = Allocation::sampling("instructions".parse().unwrap(), Rate::Period(5_000));
    // A PMC owned before any log: close_log() gives the owner no log.
    let _early = b.allocate(&a).unwrap();
    let run = || {
        sim.run(Work {
            pid: 2000,
            nanos: 1_000,
            instructions: 10_000,
            ..Work::default()
        })
    };
    // close_log() with no log configured must not poison later logs.
    let _ = b.close_log();
    let logs: Vec<SharedBuf> = (0..3).map(|_| SharedBuf::default()).collect();
    // Replace a log while one is configured.
    b.configure_log(Box::new(logs[0].clone())).unwrap();
    let mut p = b.allocate(&a).unwrap();
    p.attach(Target::Pid(2000)).unwrap();
    p.start().unwrap();
    run();
    b.configure_log(Box::new(logs[1].clone())).unwrap();
    run();
    // close_log(), then configure_log() again.
    b.close_log().unwrap();
    b.configure_log(Box::new(logs[2].clone())).unwrap();
    run();
    b.write_log(7).unwrap();
    p.stop().unwrap();
    b.close_log().unwrap();
    for (i, log) in logs.iter().enumerate() {
        let (kinds, closed) = pmc_log_kinds(&log.0.lock().unwrap());
        assert!(closed, "log {i} closed cleanly: {kinds:?}");
        assert_eq!(kinds.first().copied(), Some("header"), "log {i}");
        assert_eq!(
            kinds.iter().filter(|k| **k == "sample").count(),
            2,
            "log {i} has its own samples: {kinds:?}"
        );
        assert!(
            kinds.contains(&"pmc"),
            "log {i} describes the PMC: {kinds:?}"
        );
    }
}

#[test]
fn hwpmc_format_streams_and_converts_the_same() {
    let (sim, b) = default();
    let raw = SharedBuf::default();
    b.configure_hwpmc_log(Box::new(raw.clone())).unwrap();
    let mut p = b
        .allocate(&Allocation::sampling(
            "instructions".parse().unwrap(),
            Rate::Period(5_000),
        ))
        .unwrap();
    sim.spawn(2000, 1000, true, "/usr/bin/make");
    p.attach(Target::Pid(2000)).unwrap();
    p.start().unwrap();
    sim.run(Work {
        pid: 2000,
        nanos: 1_000,
        instructions: 12_000,
        ..Work::default()
    });
    b.flush_log().unwrap();
    p.stop().unwrap();
    b.close_log().unwrap();
    let raw = raw.0.lock().unwrap().clone();
    // Converting hwpmc's bytes ourselves gives what configure_log gives.
    let (converted, report) = pmc_log::hwpmc::convert(&raw, Vec::new()).unwrap();
    assert!(report.closed_cleanly);
    let (kinds, closed) = pmc_log_kinds(&converted);
    assert_eq!(
        kinds,
        // The target's mapping at the attach, the kernel's objects at the
        // first sampling start (pid -1): MAP_IN, which pmc-log keeps as
        // other records.
        vec!["header", "pmc", "attach", "other", "other", "other", "sample", "sample", "close"]
    );
    assert!(closed);
}

/// The kinds of the records of a pmc-log file, and whether it was closed
/// cleanly.
fn pmc_log_kinds(bytes: &[u8]) -> (Vec<&'static str>, bool) {
    use pmc_log::Record;
    let reader = pmc_log::Reader::new(bytes).expect("a pmc-log file");
    let mut it = reader.records();
    let kinds = it
        .by_ref()
        .map(|r| match r {
            Record::Header(_) => "header",
            Record::Pmc(_) => "pmc",
            Record::Sample(_) => "sample",
            Record::Attach(_) => "attach",
            Record::Detach(_) => "detach",
            Record::UserData(_) => "user-data",
            Record::Counter(_) => "counter",
            Record::Close(_) => "close",
            _ => "other",
        })
        .collect();
    let closed = it.report().closed_cleanly;
    (kinds, closed)
}

#[test]
fn permission_errors_say_which_sysctl() {
    let (sim, b) = backend(SimConfig {
        privileged: false,
        ..SimConfig::default()
    });
    let e = b
        .allocate(&counting("page-faults").system(Cpus::One(0)))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Permission);
    assert_eq!(e.errno(), Some(1));
    let text = e.to_string();
    assert!(
        text.contains("help: run as root, or allow it: sysctl security.bsd.unprivileged_syspmcs=1"),
        "{text}"
    );
    assert!(
        text.contains("(security.bsd.unprivileged_syspmcs = 0), and this process runs as uid 1001"),
        "{text}"
    );
    sim.set_security(false, false, true, true);
    b.allocate(&counting("page-faults").system(Cpus::One(0)))
        .unwrap();
    // Jailed: refused whatever the sysctl says; the message says so.
    sim.set_security(true, true, true, true);
    let e = b
        .allocate(&counting("page-faults").system(Cpus::One(0)))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Permission);
    assert!(e.to_string().contains("security.jail.jailed = 1"), "{e}");
    assert!(e.help().unwrap().contains("outside the jail"));
    // Attaching to a process we may not debug.
    sim.set_security(false, false, false, false);
    sim.spawn(3000, 1, false, "/usr/sbin/sshd");
    let mut p = b.allocate(&counting("page-faults")).unwrap();
    let e = p.attach(Target::Pid(3000)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Permission);
    assert!(
        e.to_string()
            .contains("security.bsd.unprivileged_proc_debug = 0"),
        "{e}"
    );
    assert!(e
        .to_string()
        .contains("security.bsd.unprivileged_proc_debug=1"));
    // With the sysctl on, the refusal is about that particular target.
    sim.set_security(false, false, false, true);
    let e = p.attach(Target::Pid(3000)).unwrap_err();
    assert!(e.to_string().contains("p_candebug"), "{e}");
}

#[test]
fn attach_detach_errors() {
    let (sim, b) = default();
    sim.spawn(2000, 1000, true, "/bin/sh");
    let mut p = b.allocate(&counting("page-faults")).unwrap();
    let e = p.attach(Target::Pid(4242)).unwrap_err();
    assert_eq!((e.kind(), e.errno()), (ErrorKind::NoSuchProcess, Some(3)));
    assert!(e.to_string().contains("pid 4242"));
    p.attach(Target::Pid(2000)).unwrap();
    let e = p.attach(Target::Pid(2000)).unwrap_err();
    assert_eq!(
        (e.kind(), e.errno()),
        (ErrorKind::AlreadyAttached, Some(17))
    );
    let e = p.detach(Target::Current).unwrap_err();
    assert_eq!(
        (e.kind(), e.errno()),
        (ErrorKind::NotAttached, Some(3)),
        "self is not monitored at all: ESRCH"
    );
    let e = p.detach(Target::Pid(4242)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAttached, "never attached to 4242");
    let mut q = b.allocate(&counting("cpu-clock")).unwrap();
    q.attach(Target::Current).unwrap();
    let e = p.detach(Target::Current).unwrap_err();
    assert_eq!((e.kind(), e.errno()), (ErrorKind::NotAttached, Some(22)));
    // Attach while running: EBUSY.
    q.start().unwrap();
    assert_eq!(
        q.attach(Target::Pid(2000)).unwrap_err().kind(),
        ErrorKind::Busy
    );
}

#[test]
fn events_hwpmc_lacks_and_vms_without_pmu() {
    let (_, vm) = backend(SimConfig {
        cpu: SimCpu::Generic,
        ..SimConfig::default()
    });
    let e = vm.allocate(&counting("cycles")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoPmu);
    vm.allocate(&counting("page-faults")).unwrap();
    let (_, b) = default();
    assert_eq!(
        b.allocate(&counting("context-switches"))
            .unwrap_err()
            .kind(),
        ErrorKind::NotSupported
    );
    assert_eq!(
        b.allocate(&counting("SOFT-NOPE")).unwrap_err().kind(),
        ErrorKind::NoSuchEvent
    );
}

/// Cycles on AMD: the legacy K8 code without EV_PMU where the kernel
/// takes it (2020, 2023, 15-CURRENT), EV_PMU and the table index where it
/// does not (AMD's 2026 tree); cycles count on all of them, and on a 2020
/// kernel with a Zen 3 (no `kern.hwpmc.cpuid`, issue 23 item 5).
#[test]
fn amd_counts_cycles_on_every_tree() {
    use pmc_freebsd::sys::sim::SimTree;
    for (cpu, version, tree, flags) in [
        (SimCpu::AmdZen, PMC_VERSION, None, "0x0"),
        (SimCpu::AmdZen, PMC_VERSION, Some(SimTree::Amd2026), "0x200"),
        (SimCpu::AmdZen, 0x0903_0000, None, "0x0"),
        (SimCpu::AmdZen3, 0x0903_0000, None, "0x0"),
        (SimCpu::AmdZen3, PMC_VERSION, None, "0x0"),
    ] {
        let (sim, b) = backend(SimConfig {
            cpu,
            version,
            tree,
            ..SimConfig::default()
        });
        let what = format!("{cpu:?} {version:#x} {tree:?}");
        let mut p = b
            .allocate(&counting("cycles"))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(
            p.native_config()
                .iter()
                .any(|f| f.name == "pm_flags" && f.value == flags),
            "{what}: {:?}",
            p.native_config()
        );
        p.start().unwrap();
        sim.tick(1_000, 0, 0);
        assert_eq!(p.read().unwrap().value, 3_000, "{what}");
    }
    // Zen 3 under a 2020 kernel: events outside its K8 table are refused
    // by name, not with the kernel's bare EINVAL.
    let (_, b) = backend(SimConfig {
        cpu: SimCpu::AmdZen3,
        version: 0x0903_0000,
        ..SimConfig::default()
    });
    let e = b.allocate(&counting("branches")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
}

#[test]
fn rows_run_out_with_a_typed_error() {
    let (_, b) = default();
    // IAP has 4 rows and IAF 3; 'branches' only fits IAP.
    let held: Vec<_> = (0..4)
        .map(|_| b.allocate(&counting("branches")).unwrap())
        .collect();
    let e = b.allocate(&counting("branches")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.help().unwrap().contains("pmccontrol -l"));
    drop(held);
    b.allocate(&counting("branches")).unwrap();
}

#[test]
fn groups_start_and_read_together() {
    let (sim, b) = default();
    let mut g = b
        .allocate_group(&[
            counting("instructions"),
            counting("cycles"),
            counting("page-faults"),
        ])
        .unwrap();
    g.start().unwrap();
    assert_eq!(g.state(), State::Running);
    sim.tick(1_000, 400, 2);
    g.stop().unwrap();
    let r = g.read().unwrap();
    assert_eq!(
        r.iter().map(|r| r.value).collect::<Vec<_>>(),
        vec![400, 3_000, 2]
    );
    let e = b
        .allocate_group(&[
            counting("instructions"),
            counting("cycles").system(Cpus::All),
        ])
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}

/// `Group::read_instances`: every member per CPU (system scope) or per target (process
/// scope, one target), the instances in the leader's order; several process targets are
/// NotSupported (hwpmc reads only their total).
#[test]
fn group_read_instances_per_cpu_and_per_target() {
    let (sim, b) = default();
    let mut g = b
        .allocate_group(&[
            counting("instructions").system(Cpus::All),
            counting("page-faults").system(Cpus::All),
        ])
        .unwrap();
    g.start().unwrap();
    sim.run(Work {
        pid: 0,
        cpu: 0,
        instructions: 100,
        page_faults_read: 4,
        ..Work::default()
    });
    sim.run(Work {
        pid: 4242,
        cpu: 1,
        instructions: 23,
        page_faults_read: 1,
        ..Work::default()
    });
    g.stop().unwrap();
    let per_cpu = g.read_instances().unwrap();
    let got: Vec<_> = per_cpu
        .iter()
        .map(|i| {
            (
                i.instance,
                i.readings.iter().map(|r| r.value).collect::<Vec<_>>(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (Instance::Cpu(0), vec![100, 4]),
            (Instance::Cpu(1), vec![23, 1])
        ]
    );
    // The instances add up to the totals.
    let totals: Vec<u64> = g.read().unwrap().iter().map(|r| r.value).collect();
    assert_eq!(totals, vec![123, 5]);

    let mut p = b
        .allocate_group(&[counting("instructions"), counting("page-faults")])
        .unwrap();
    p.start().unwrap(); // attaches to the caller
    sim.tick(1_000, 400, 2);
    p.stop().unwrap();
    let one = p.read_instances().unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].instance, Instance::Target(Target::Current));
    assert_eq!(
        one[0].readings.iter().map(|r| r.value).collect::<Vec<_>>(),
        vec![400, 2]
    );
    sim.spawn(2000, 1000, true, "/usr/bin/make");
    p.attach(Target::Pid(2000)).unwrap();
    let e = p.read_instances().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
}

#[test]
fn flags_reach_the_kernel() {
    let (_sim, b) = default();
    let a = counting("page-faults").flags(Flags::LOG_PROCEXIT);
    let mut p = b.allocate(&a).unwrap();
    assert_eq!(
        p.start().unwrap_err().kind(),
        ErrorKind::LogRequired,
        "LOG_PROCEXIT needs a log"
    );
    let s = Allocation::sampling("page-faults".parse().unwrap(), Rate::Frequency(1_000))
        .scope(Scope::Process)
        .flags(Flags::CALLCHAIN);
    let p = b.allocate(&s).unwrap();
    // A period of 1 page fault is below hwpmc's floor: the count the
    // kernel honours is asked for.
    assert!(p
        .native_config()
        .iter()
        .any(|f| f.name == "pm_count" && f.value == "1000"));
    let count = |spec: &str, rate| {
        let p = b
            .allocate(&Allocation::sampling(spec.parse().unwrap(), rate))
            .unwrap();
        let value = p
            .native_config()
            .into_iter()
            .find(|f| f.name == "pm_count")
            .map(|f| f.value);
        value.unwrap_or_default()
    };
    assert_eq!(count("cycles", Rate::Frequency(1_000)), "2000000");
    // 100 Hz would be 10 ticks, below hwpmc's floor of 1000: the floor.
    assert_eq!(count("cpu-clock", Rate::Frequency(100)), "1000");
    assert_eq!(count("cpu-clock", Rate::Frequency(0)), "1000");
    assert_eq!(count("instructions", Rate::Period(65_536)), "65536");
}

#[test]
fn list_events_probes_what_works() {
    use pmc_core::info::{Availability, EventSource};
    let (sim, b) = default();
    let list = b.list_events(false);
    let get = |n: &str| {
        list.iter()
            .find(|e| e.name == n)
            .unwrap_or_else(|| panic!("{n} listed"))
    };
    assert_eq!(get("page-faults").availability, Availability::Available);
    assert_eq!(get("instructions").availability, Availability::Available);
    assert!(matches!(
        get("context-switches").availability,
        Availability::Unavailable(_)
    ));
    assert_eq!(
        get("SOFT-CLOCK.HARD").source,
        EventSource::HwpmcClass("SOFT".into())
    );
    assert_eq!(get("tsc-tsc").availability, Availability::Available);
    assert!(list
        .iter()
        .any(|e| e.source == EventSource::HwpmcClass("IAP".into())));
    assert_eq!(sim.allocated(), 0, "probes release what they allocate");
    // Unprivileged: the TSC (system scope only) is listed as unavailable, with why.
    sim.set_security(false, false, false, true);
    let list = b.list_events(false);
    let tsc = list.iter().find(|e| e.name == "tsc-tsc").unwrap();
    assert!(
        matches!(&tsc.availability, Availability::Unavailable(r) if r.contains("unprivileged_syspmcs"))
    );
}

#[test]
fn diagnose_explains_each_no() {
    use pmc_core::info::Verdict;
    let (sim, b) = backend(SimConfig {
        cpu: SimCpu::Generic,
        privileged: false,
        ..SimConfig::default()
    });
    sim.set_cpu_online(1, false);
    let d = b.diagnose();
    let get = |n: &str| {
        d.iter()
            .find(|c| c.name == n)
            .unwrap_or_else(|| panic!("{n} checked"))
    };
    assert_eq!(get("hwpmc driver").verdict, Verdict::Yes);
    assert_eq!(get("hardware PMCs").verdict, Verdict::No);
    assert!(get("hardware PMCs")
        .fix
        .as_deref()
        .unwrap()
        .contains("SOFT"));
    assert_eq!(get("process-scope counting").verdict, Verdict::Yes);
    let sys = get("system-scope counting");
    assert_eq!(sys.verdict, Verdict::No);
    assert!(sys
        .fix
        .as_deref()
        .unwrap()
        .contains("security.bsd.unprivileged_syspmcs=1"));
    assert!(get("CPUs").detail.contains('1'));
    assert_eq!(
        get("privilege").detail,
        "euid 1001, jailed false, security.bsd.unprivileged_syspmcs = 0, security.bsd.unprivileged_proc_debug = 1"
    );
}

#[test]
fn a_start_failing_on_one_cpu_leaves_none_running() {
    let (sim, b) = default();
    let mut p = b
        .allocate(&counting("page-faults").system(Cpus::All))
        .unwrap();
    sim.set_cpu_online(1, false);
    assert_eq!(p.start().unwrap_err().kind(), ErrorKind::NoSuchCpu);
    assert_eq!(p.state(), State::Allocated);
    sim.run(Work {
        cpu: 0,
        page_faults_read: 9,
        ..Work::default()
    });
    sim.set_cpu_online(1, true);
    assert_eq!(p.read().unwrap().value, 0, "CPU 0's PMC was stopped again");
}

#[test]
fn conformance_on_other_machines() {
    for cfg in [
        SimConfig {
            cpu: SimCpu::AmdZen,
            ..SimConfig::default()
        },
        SimConfig {
            cpu: SimCpu::Generic,
            ncpu: 1,
            ..SimConfig::default()
        },
        SimConfig {
            version: 0x0903_0000,
            ..SimConfig::default()
        },
        SimConfig {
            privileged: false,
            ..SimConfig::default()
        },
    ] {
        let (sim, b) = backend(cfg.clone());
        let failures = testing::run_all(&b, &PageFaults(sim.clone()));
        assert!(failures.is_empty(), "{cfg:?}: {failures:#?}");
        assert_eq!(sim.allocated(), 0);
    }
}

#[test]
fn backend_is_shared_across_threads() {
    let (sim, b) = default();
    let b = Arc::new(b);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let b = b.clone();
            std::thread::spawn(move || {
                let mut p = b.allocate(&counting("page-faults")).unwrap();
                p.start().unwrap();
                p.stop().unwrap();
                p.read().unwrap().value
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 0);
    }
    assert_eq!(sim.allocated(), 0);
}

#[test]
fn rows_and_offline_cpus_from_getpmcinfo() {
    let sim = Arc::new(SimDriver::new(SimConfig {
        ncpu: 3,
        ..SimConfig::default()
    }));
    sim.set_cpu_online(1, false);
    let b = Backend::with_sys(sim.clone()).unwrap();
    assert_eq!(b.offline_cpus(), &[1]);
    let p = b
        .allocate(&counting("page-faults").system(Cpus::All))
        .unwrap();
    assert_eq!(
        p.pmc_ids().iter().map(|(c, _)| *c).collect::<Vec<_>>(),
        vec![Some(0), Some(2)]
    );
    let mut tsc = b
        .allocate(&counting("tsc-tsc").system(Cpus::One(2)))
        .unwrap();
    tsc.start().unwrap();
    let rows = b.rows(2).unwrap();
    let row = rows.iter().find(|r| r.name == "TSC-0").unwrap();
    assert_eq!(row.class, PMC_CLASS_TSC);
    assert_eq!(row.disposition, PMC_DISP_STANDALONE);
    assert_eq!(row.owner_pid, Some(1000));
    assert_eq!(row.mode, PMC_MODE_SC);
    assert!(row.enabled);
    assert_eq!(b.rows(1).unwrap_err().kind(), ErrorKind::NoSuchCpu);
    assert_eq!(b.rows(7).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        b.rows(u32::MAX).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

#[test]
fn admin_through_the_backend() {
    let (sim, b) = default();
    // Disable the TSC row on CPU 0: the TSC can no longer be allocated there.
    b.set_row_enabled(0, 16, false).unwrap();
    assert!(!b.rows(0).unwrap()[16].enabled);
    let e = b
        .allocate(&counting("tsc-tsc").system(Cpus::One(0)))
        .unwrap_err();
    assert_eq!(
        e.kind(),
        ErrorKind::Permission,
        "hwpmc: EPERM for a disabled row"
    );
    assert!(e.help().unwrap().contains("pmccontrol"), "{e}");
    b.set_row_enabled(0, 16, true).unwrap();
    let _tsc = b
        .allocate(&counting("tsc-tsc").system(Cpus::One(0)))
        .unwrap();
    let e = b.set_row_enabled(0, 16, false).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy);
    assert!(e.help().unwrap().contains("release"));
    assert_eq!(
        b.set_row_enabled(0, 999, false).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        b.set_row_enabled(5, 0, false).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    sim.set_security(true, true, false, true);
    let e = b.set_row_enabled(1, 3, false).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Permission);
    assert!(e.to_string().contains("root"), "{e}");
}

#[test]
fn stopping_a_never_started_pmc_is_a_no_op() {
    let (sim, b) = default();
    let mut p = b.allocate(&counting("page-faults")).unwrap();
    p.stop().unwrap();
    assert_eq!(p.state(), State::Allocated);
    assert!(
        !sim.take_calls()
            .iter()
            .any(|(op, _)| *op == pmc_freebsd::sys::PmcOp::PmcStop),
        "no PMC_OP_PMCSTOP was sent (hwpmc would answer EINVAL)"
    );
}

/// Issue 14 item 3, end to end: a 0x09 kernel writes PMC ids in the old
/// layout (FreeBSD's own trees) or the new one (CheriBSD); the importer
/// reads both right from the log's evidence and notes the unusual one.
#[test]
fn both_id_layouts_of_0x09_kernels_import_right() {
    use pmc_log::hwpmc::IdLayout;
    use pmc_log::record::{Mode as LogMode, Record, Scope as LogScope};
    for layout in [None, Some(IdLayout::New)] {
        let (sim, b) = backend(SimConfig {
            version: PMC_VERSION_0X09,
            id_layout: layout,
            ..SimConfig::default()
        });
        let raw = SharedBuf::default();
        b.configure_hwpmc_log(Box::new(raw.clone())).unwrap();
        sim.spawn(2000, 1000, true, "/usr/bin/make");
        let a = Allocation::sampling("instructions".parse().unwrap(), Rate::Period(5_000));
        let mut p = b.allocate(&a).unwrap();
        p.attach(Target::Pid(2000)).unwrap();
        p.start().unwrap();
        sim.run(Work {
            pid: 2000,
            nanos: 1_000,
            instructions: 12_000,
            ..Work::default()
        });
        p.stop().unwrap();
        b.close_log().unwrap();
        let bytes = raw.0.lock().unwrap().clone();
        let mut imp = pmc_log::hwpmc::Importer::new(&bytes).unwrap();
        let pmcs: Vec<_> = imp
            .by_ref()
            .filter_map(|r| match r {
                Record::Pmc(d) => Some((d.scope, d.mode)),
                _ => None,
            })
            .collect();
        assert_eq!(
            pmcs,
            vec![(LogScope::Process, LogMode::SamplingPeriod(5_000))],
            "{layout:?}"
        );
        let notes = imp.report().notes;
        assert_eq!(
            notes.iter().any(|n| n.contains("New id layout")),
            layout.is_some(),
            "{layout:?}: {notes:?}"
        );
    }
}

/// hwpmc cannot copy user stacks: a DWARF call graph is NotSupported (and says what to use),
/// before anything reaches the kernel; frame-pointer callchains still allocate.
#[test]
fn dwarf_call_graphs_are_not_supported() {
    let (_sim, b) = default();
    let a = Allocation::sampling("instructions".parse().unwrap(), Rate::Period(5_000))
        .call_graph(pmc_core::CallGraph::dwarf());
    let Err(e) = b.allocate(&a) else {
        panic!("allocated")
    };
    assert_eq!(e.kind(), ErrorKind::NotSupported);
    assert!(e.to_string().contains("DWARF"), "{e}");
    assert!(
        e.help()
            .is_some_and(|h| h.contains("CallGraph::FramePointers")),
        "{e:?}"
    );
    let Err(e) = b.allocate_group(std::slice::from_ref(&a)) else {
        panic!("allocated")
    };
    assert_eq!(e.kind(), ErrorKind::NotSupported);
    let fp = Allocation::sampling("instructions".parse().unwrap(), Rate::Period(5_000));
    assert!(b.allocate(&fp).is_ok());
}

/// hwpmc counts whole processes: `Target::CurrentThread` (the calling thread alone, Linux's
/// user-space read target) is refused at attach, saying which target to use instead.
#[test]
fn current_thread_target_is_refused() {
    let (sim, b) = default();
    let mut p = b.allocate(&counting("instructions")).unwrap();
    let e = p.attach(Target::CurrentThread).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
    assert!(
        e.help().unwrap_or_default().contains("Target::Current"),
        "{e:?}"
    );
    assert!(p.targets().is_empty());
    p.start().unwrap();
    sim.tick(1_000, 42, 0);
    p.stop().unwrap();
    assert_eq!(p.read().unwrap().value, 42, "the whole process instead");
}

/// Issue 20, defect 3, the mirror side: the portable `cpu-clock` and `task-clock` are
/// nanoseconds on every backend (pmc-core's `PortableEvent::CpuClock`), but hwpmc counts
/// them as `SOFT-CLOCK.HARD` ticks of kern.hz. Before, a counting `cpu-clock` read 300 for
/// 300 ms at hz = 1000 (and pmcstat printed it as 0.00 msec); now it reads 300,000,000 ns,
/// while `SOFT-CLOCK.HARD` by its own name still reads ticks, as on FreeBSD. A sampling
/// period of a portable clock is nanoseconds too: 2 s of cpu-clock is 2000 ticks.
#[test]
fn portable_clocks_are_nanoseconds_soft_clocks_ticks() {
    let (sim, b) = default();
    let mut ns = b.allocate(&counting("cpu-clock")).unwrap();
    let mut task = b.allocate(&counting("task-clock")).unwrap();
    let mut ticks = b.allocate(&counting("SOFT-CLOCK.HARD")).unwrap();
    for p in [&mut ns, &mut task, &mut ticks] {
        p.start().unwrap();
    }
    sim.tick(300_000_000, 0, 0); // 300 ms on CPU 0: 300 hardclock ticks at hz = 1000
    for p in [&mut ns, &mut task, &mut ticks] {
        p.stop().unwrap();
    }
    assert_eq!(ticks.read().unwrap().value, 300);
    assert_eq!(ns.read().unwrap().value, 300_000_000);
    assert_eq!(task.read().unwrap().value, 300_000_000);
    // write takes nanoseconds and gives the old value back in them.
    assert_eq!(ns.write(5_000_000).unwrap(), 300_000_000);
    assert_eq!(ns.read().unwrap().value, 5_000_000);

    let pm_count = |spec: &str, rate| {
        let a = Allocation::sampling(spec.parse().unwrap(), rate).system(Cpus::One(0));
        let p = b.allocate(&a).unwrap();
        let f = p.native_config();
        f.into_iter()
            .find(|f| f.name == "pm_count")
            .map(|f| f.value)
            .unwrap_or_default()
    };
    assert_eq!(pm_count("cpu-clock", Rate::Period(2_000_000_000)), "2000");
    assert_eq!(pm_count("SOFT-CLOCK.HARD", Rate::Period(2000)), "2000");
}

/// `set_count` of a process counting PMC: hwpmc's SETCOUNT only sets
/// `pm_initial`, which a process PMC never loads (hwpmc_mod.c@009268db
/// PMC_OP_PMCSETCOUNT, pmc_start); the backend also writes the value
/// (PMC_F_NEWVALUE), so the count starts from it as asked.
#[test]
fn set_count_of_a_process_counting_pmc_resets_the_count() {
    let (sim, b) = default();
    let mut p = b.allocate(&counting("page-faults")).unwrap();
    p.start().unwrap();
    sim.tick(1_000_000, 0, 9);
    p.stop().unwrap();
    assert_eq!(p.read().unwrap().value, 9);
    p.set_count(0).unwrap();
    assert_eq!(p.read().unwrap().value, 0, "set_count(0) then read");
    p.set_count(5).unwrap();
    p.start().unwrap();
    sim.tick(1_000_000, 0, 2);
    p.stop().unwrap();
    assert_eq!(p.read().unwrap().value, 7, "counts on from 5");
    // System scope on two CPUs: the count starts from 100 in all.
    let mut s = b
        .allocate(&counting("page-faults").system(Cpus::All))
        .unwrap();
    s.start().unwrap();
    sim.tick(1_000_000, 0, 3);
    s.stop().unwrap();
    s.set_count(100).unwrap();
    assert_eq!(s.read().unwrap().value, 100);
    s.start().unwrap();
    sim.tick(1_000_000, 0, 1);
    s.stop().unwrap();
    assert_eq!(s.read().unwrap().value, 101, "SETCOUNT loaded at start");
}

/// A process sampling PMC has no countdown to read: hwpmc answers PMCRW with
/// `pm_savedvalue` (hwpmc_mod.c@009268db pmc_do_op_pmcrw), which sampling
/// never changes; `sample_countdown` refuses rather than return it.
#[test]
fn sample_countdown_refuses_process_scope() {
    let (sim, b) = default();
    let buf = SharedBuf::default();
    b.configure_hwpmc_log(Box::new(buf.clone())).unwrap();
    sim.spawn(2000, 1000, true, "/usr/bin/make");
    let a = Allocation::sampling("instructions".parse().unwrap(), Rate::Period(5_000));
    let mut p = b.allocate(&a).unwrap();
    p.attach(Target::Pid(2000)).unwrap();
    p.start().unwrap();
    sim.run(Work {
        pid: 2000,
        nanos: 1_000,
        instructions: 12_000,
        ..Work::default()
    });
    let e = p.sample_countdown().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
    assert!(e.message().contains("per target thread"), "{e}");
    p.stop().unwrap();
}

/// hwpmc writes one PROCFORK per `PMC_F_DESCENDANTS` PMC attached to the
/// parent (hwpmc_mod.c@009268db pmc_process_fork), so two such PMCs give two
/// in the kernel's log; the pmc-log a sink receives has one fork.
#[test]
fn two_descendants_pmcs_log_two_procforks_and_import_one_fork() {
    use pmc_log::hwpmc::{Event, Parser};
    let (sim, b) = default();
    let raw = SharedBuf::default();
    b.configure_hwpmc_log(Box::new(raw.clone())).unwrap();
    sim.spawn(2000, 1000, true, "/bin/sh");
    let mut pmcs = Vec::new();
    for ev in ["page-faults", "instructions"] {
        let mut p = b.allocate(&counting(ev).flags(Flags::DESCENDANTS)).unwrap();
        p.attach(Target::Pid(2000)).unwrap();
        p.start().unwrap();
        pmcs.push(p);
    }
    sim.spawn(2001, 2000, true, "/bin/sh");
    b.flush_log().unwrap();
    let bytes = raw.0.lock().unwrap().clone();
    let forks = Parser::new(&bytes)
        .unwrap()
        .filter(|e| {
            matches!(
                e,
                Event::ProcFork {
                    oldpid: 2000,
                    newpid: 2001,
                    ..
                }
            )
        })
        .count();
    assert_eq!(forks, 2, "one PROCFORK per DESCENDANTS PMC");
    // The same stream through the pmc-log conversion: one fork each.
    let buf = SharedBuf::default();
    b.configure_log(Box::new(buf.clone())).unwrap();
    sim.spawn(2002, 2000, true, "/bin/sh");
    b.close_log().unwrap();
    let bytes = buf.0.lock().unwrap().clone();
    let reader = pmc_log::Reader::new(&bytes).unwrap();
    let forks: Vec<(i32, i32)> = reader
        .records()
        .filter_map(|r| match r {
            pmc_log::Record::Fork(f) => Some((f.parent_pid, f.child_pid)),
            _ => None,
        })
        .collect();
    // The earlier fork comes with the replay that starts the new sink.
    assert_eq!(forks, vec![(2000, 2001), (2000, 2002)]);
}

/// A DESCENDANTS sampling attach to an ancestor of the owner takes in the
/// owner too: hwpmc sets PMC_F_ATTACHED_TO_OWNER
/// (hwpmc_mod.c@009268db pmc_link_target_process) and every sample goes to
/// profil(2) (pmc_process_samples), so the log would stay empty. Refused.
#[test]
fn descendants_sampling_of_an_ancestor_is_refused() {
    let (sim, b) = default();
    let buf = SharedBuf::default();
    b.configure_hwpmc_log(Box::new(buf.clone())).unwrap();
    // The shell that started us (pid 900) is our parent; 950 a sibling.
    sim.spawn(900, 1, true, "/bin/sh");
    sim.spawn(1000, 900, true, "/usr/bin/sim-self");
    sim.spawn(950, 900, true, "/bin/sleep");
    let a = Allocation::sampling("instructions".parse().unwrap(), Rate::Period(5_000))
        .flags(Flags::DESCENDANTS);
    let mut p = b.allocate(&a).unwrap();
    for ancestor in [900, 1] {
        let e = p.attach(Target::Pid(ancestor)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
        assert!(e.message().contains("ancestor"), "{e}");
    }
    // A sibling's subtree does not hold us: its samples are logged.
    p.attach(Target::Pid(950)).unwrap();
    p.start().unwrap();
    sim.run(Work {
        pid: 950,
        nanos: 1_000,
        instructions: 12_000,
        ..Work::default()
    });
    p.stop().unwrap();
    b.flush_log().unwrap();
    let bytes = buf.0.lock().unwrap().clone();
    let samples = pmc_log::hwpmc::Parser::new(&bytes)
        .unwrap()
        .filter(|e| matches!(e, pmc_log::hwpmc::Event::Callchain { .. }))
        .count();
    assert_eq!(samples, 2);
    // Without DESCENDANTS the parent alone is sampled: allowed.
    let mut q = b
        .allocate(&Allocation::sampling(
            "instructions".parse().unwrap(),
            Rate::Period(5_000),
        ))
        .unwrap();
    q.attach(Target::Pid(900)).unwrap();
}

/// Stopping a sampling PMC: the backend flushes the log first, so the
/// samples hwpmc still holds in its per-CPU rings (processed at the next
/// tick only if the PMC runs: hwpmc_mod.c@009268db pmc_process_samples)
/// reach the log.
#[test]
fn stop_keeps_the_samples_of_the_last_tick() {
    use pmc_log::hwpmc::{Event, Parser};
    let (sim, b) = default();
    let raw = SharedBuf::default();
    b.configure_hwpmc_log(Box::new(raw.clone())).unwrap();
    sim.spawn(2000, 1000, true, "/bin/sh");
    let a = Allocation::sampling("page-faults".parse().unwrap(), Rate::Period(1000));
    let mut p = b.allocate(&a).unwrap();
    p.attach(Target::Pid(2000)).unwrap();
    p.start().unwrap();
    // 10 samples over 2.5 ms; the last hardclock tick is at 2 ms.
    sim.run(Work {
        pid: 2000,
        nanos: 2_500_000,
        page_faults_read: 10_000,
        ..Work::default()
    });
    p.stop().unwrap();
    b.flush_log().unwrap();
    let bytes = raw.0.lock().unwrap().clone();
    let samples = Parser::new(&bytes)
        .unwrap()
        .filter(|e| matches!(e, Event::Callchain { .. }))
        .count();
    assert_eq!(samples, 10);
}

fn sample_count(bytes: &[u8]) -> usize {
    pmc_log::hwpmc::Parser::new(bytes)
        .unwrap()
        .filter(|e| matches!(e, pmc_log::hwpmc::Event::Callchain { .. }))
        .count()
}

/// A Backend that logged, then dropped, leaves no owner behind: hwpmc would
/// keep the process's shut-down owner descriptor (pmc_maybe_remove_owner
/// keeps it while OWNS_LOGFILE; CLOSELOG set PMC_PO_SHUTDOWN), so the next
/// Backend's configure_log would get ENOMEM and its start EDOOFUS.
#[test]
fn a_second_backend_in_the_process_can_log_after_the_first_is_dropped() {
    let sim = Arc::new(SimDriver::default());
    sim.spawn(2000, 1000, true, "/bin/sh");
    let a = Allocation::sampling("page-faults".parse().unwrap(), Rate::Period(1000));
    let work = || Work {
        pid: 2000,
        nanos: 2_000_000,
        page_faults_read: 3_000,
        ..Work::default()
    };
    {
        let b = Backend::with_sys(sim.clone()).unwrap();
        b.configure_hwpmc_log(Box::new(SharedBuf::default()))
            .unwrap();
        let mut p = b.allocate(&a).unwrap();
        p.attach(Target::Pid(2000)).unwrap();
        p.start().unwrap();
        sim.run(work());
        p.stop().unwrap();
    }
    let b = Backend::with_sys(sim.clone()).unwrap();
    let buf = SharedBuf::default();
    b.configure_hwpmc_log(Box::new(buf.clone()))
        .expect("a new log after the first Backend is gone");
    let mut p = b.allocate(&a).unwrap();
    p.attach(Target::Pid(2000)).unwrap();
    p.start().expect("sampling starts: the process has a log");
    sim.run(work());
    p.stop().unwrap();
    b.flush_log().unwrap();
    assert_eq!(sample_count(&buf.0.lock().unwrap()), 3);
}

/// Two live Backends share the process's one hwpmc log: the second cannot
/// configure its own (Busy, saying why), and its sampling PMCs, whose
/// records the kernel would write to the first Backend's sink, do not
/// start.
#[test]
fn two_live_backends_share_one_kernel_log_and_say_so() {
    let sim = Arc::new(SimDriver::default());
    sim.spawn(2000, 1000, true, "/bin/sh");
    let first = Backend::with_sys(sim.clone()).unwrap();
    let first_buf = SharedBuf::default();
    first
        .configure_hwpmc_log(Box::new(first_buf.clone()))
        .unwrap();
    let second = Backend::with_sys(sim.clone()).unwrap();
    let e = second
        .configure_hwpmc_log(Box::new(SharedBuf::default()))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    assert!(e.message().contains("one log per process"), "{e}");
    let a = Allocation::sampling("page-faults".parse().unwrap(), Rate::Period(1000));
    let mut p = second.allocate(&a).unwrap();
    p.attach(Target::Pid(2000)).unwrap();
    let e = p.start().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LogRequired, "{e}");
    assert!(e.message().contains("another pmc_freebsd::Backend"), "{e}");
    sim.run(Work {
        pid: 2000,
        nanos: 2_000_000,
        page_faults_read: 3_000,
        ..Work::default()
    });
    first.flush_log().unwrap();
    assert_eq!(
        sample_count(&first_buf.0.lock().unwrap()),
        0,
        "nothing of the second Backend's in the first's sink"
    );
    // Counting PMCs need no log: the second Backend still counts.
    let mut c = second.allocate(&counting("page-faults")).unwrap();
    c.start().unwrap();
    sim.tick(1_000_000, 0, 4);
    c.stop().unwrap();
    assert_eq!(c.read().unwrap().value, 4);
}

/// A sink swapped in later gets the session's state from records the
/// kernel writes once and never again: the allocation, the live attach
/// (3000's was detached), 2000's exec path (PROCEXEC); not what ended:
/// 2000's mapping at the attach (gone with its exec), libc (mapped, then
/// unmapped), 3000's attach (PMCDETACH).
#[test]
fn a_new_sink_gets_the_session_state_so_far() {
    use pmc_log::hwpmc::{Event, Parser};
    let (sim, b) = default();
    b.configure_hwpmc_log(Box::new(SharedBuf::default()))
        .unwrap();
    sim.spawn(2000, 1000, true, "/bin/sh");
    sim.spawn(3000, 1000, true, "/bin/sh");
    let a = Allocation::sampling("page-faults".parse().unwrap(), Rate::Period(1000));
    let mut p = b.allocate(&a).unwrap();
    p.attach(Target::Pid(2000)).unwrap();
    p.attach(Target::Pid(3000)).unwrap();
    sim.exec(2000, "/usr/bin/cc");
    sim.map(2000, 0x80_0000, "/lib/libc.so.7");
    sim.unmap(2000, 0x80_0000, 0x90_0000);
    p.detach(Target::Pid(3000)).unwrap();
    let buf = SharedBuf::default();
    b.configure_hwpmc_log(Box::new(buf.clone())).unwrap();
    b.flush_log().unwrap();
    let bytes = buf.0.lock().unwrap().clone();
    let kinds: Vec<&str> = Parser::new(&bytes)
        .unwrap()
        .filter_map(|e| match e {
            Event::Initialize { .. } => Some("init"),
            Event::PmcAllocateDyn { .. } | Event::PmcAllocate { .. } => Some("alloc"),
            Event::PmcAttach { .. } => Some("attach"),
            Event::PmcDetach { pid: 3000, .. } => Some("detach"),
            Event::ProcExec { pid: 2000, .. } => Some("exec"),
            Event::MapIn { pid: 2000, .. } => Some("map"),
            Event::MapOut { pid: 2000, .. } => Some("unmap"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, vec!["init", "alloc", "attach", "exec"]);
}

/// Issue 23 item 2: `-v` (`Pmc::native_config`) says how FreeBSD's own
/// `pmcstat -R` will name each hardware PMC of an hwpmc-format log, as
/// 15-CURRENT's pmclog.c computes it. Before: no such field.
#[test]
fn native_config_says_how_freebsd_names_the_pmc() {
    let field = |p: &dyn pmc_core::Pmc, name: &str| {
        p.native_config()
            .into_iter()
            .find(|f| f.name == name)
            .map(|f| f.value)
    };
    let (_, amd) = backend(SimConfig {
        cpu: SimCpu::AmdZen,
        ..SimConfig::default()
    });
    let c = amd.allocate(&counting("cycles")).unwrap();
    assert_eq!(
        field(&c, "freebsd-name").as_deref(),
        Some("FreeBSD's pmcstat -R names it BU_CPU_CLK_UNHALTED")
    );
    let (_, intel) = default();
    let i = intel.allocate(&counting("instructions")).unwrap();
    let v = field(&i, "freebsd-name").unwrap();
    assert!(v.contains("build-time pmu-events table"), "{v}");
    let s = intel.allocate(&counting("page-faults")).unwrap();
    assert_eq!(field(&s, "freebsd-name"), None, "SOFT: the kernel names it");
}

/// hwpmc has no cgroup filter: a system PMC with `Allocation::cgroup` is refused at allocate
/// (NotSupported, with the jail's way out), nothing allocated in the driver; a process PMC
/// with one breaks pmc-core's rule (InvalidArgument) first.
#[test]
fn a_cgroup_is_refused_at_allocate_with_help() {
    let (sim, b) = default();
    let a = counting("page-faults").system(Cpus::All).cgroup("pmctest");
    for e in [
        b.allocate(&a).expect_err("no cgroup filter"),
        b.allocate_group(&[counting("page-faults").system(Cpus::All), a.clone()])
            .expect_err("no cgroup filter"),
    ] {
        assert_eq!(
            (e.kind(), e.op()),
            (ErrorKind::NotSupported, pmc_core::Op::Allocate)
        );
        assert!(e.to_string().contains("hwpmc(4) has no cgroup"), "{e}");
        assert!(e.help().unwrap_or("").contains("Target::Pid"), "{e}");
    }
    assert_eq!(sim.allocated(), 0, "nothing allocated in the driver");
    let e = b
        .allocate(&counting("page-faults").cgroup("pmctest"))
        .expect_err("process scope");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.help().unwrap_or("").contains("Allocation::system"), "{e}");
}

fn faults_of(sim: &SimDriver, pid: i32, n: u64) {
    sim.run(Work {
        pid,
        nanos: 1_000_000,
        page_faults_read: n,
        ..Work::default()
    });
}

fn attach_requests(sim: &SimDriver) -> usize {
    sim.take_calls()
        .iter()
        .filter(|(op, _)| *op == pmc_freebsd::sys::PmcOp::PmcAttach)
        .count()
}

/// freebsd-audit-3 finding B: a second attach of a PMC to a process it
/// measures is refused by the backend, unsent. hwpmc would answer EEXIST
/// and, on the way out, clear the process's P_HWPMC flag: the PMC would
/// stop counting it (the simulator models the flag; the backend used to
/// send the request and this read then gave 5).
#[test]
fn a_re_attach_is_refused_unsent_and_the_target_keeps_counting() {
    let (sim, b) = default();
    sim.spawn(2000, 1, true, "/bin/sh");
    let mut p = b.allocate(&counting("page-faults")).unwrap();
    p.attach(Target::Pid(2000)).unwrap();
    p.start().unwrap();
    faults_of(&sim, 2000, 5);
    p.stop().unwrap();
    sim.take_calls();
    let e = p.attach(Target::Pid(2000)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyAttached);
    assert!(e.message().contains("not sent"), "{e}");
    assert_eq!(attach_requests(&sim), 0, "PMC_OP_PMCATTACH not sent");
    p.start().unwrap();
    faults_of(&sim, 2000, 3);
    assert_eq!(p.read().unwrap().value, 8);
}

/// The same with DESCENDANTS: a PMC measuring the child 2001 (attached
/// with descendants) must not be attached to its parent 2000, whose
/// subtree holds 2001: hwpmc would attach 2000, meet 2001 (EEXIST), clear
/// 2001's P_HWPMC and detach the whole subtree again, 2001 included.
#[test]
fn a_descendants_attach_over_a_measured_child_is_refused_unsent() {
    let (sim, b) = default();
    sim.spawn(2000, 1, true, "/bin/sh");
    sim.spawn(2001, 2000, true, "/bin/ls");
    let mut p = b.allocate(&counting("page-faults").descendants()).unwrap();
    p.attach(Target::Pid(2001)).unwrap();
    sim.take_calls();
    let e = p.attach(Target::Pid(2000)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyAttached);
    assert!(e.message().contains("pid 2001"), "{e}");
    assert_eq!(attach_requests(&sim), 0);
    p.start().unwrap();
    faults_of(&sim, 2001, 4);
    assert_eq!(p.read().unwrap().value, 4, "2001 still counted");
}

/// Another profiler's PMC on the same counter row of the target cannot be
/// seen from here (hwpmc tells no one which rows a process's PMCs use), so
/// that attach is sent and hwpmc refuses it with EBUSY, clearing the
/// target's P_HWPMC: the first profiler's PMC would stop counting. The
/// backend gives the flag back (a throwaway SOFT PMC attached and detached)
/// and says so; without that the first PMC reads 5.
#[test]
fn another_owners_busy_row_leaves_the_target_measured() {
    let (sim, first) = default();
    sim.spawn(2000, 1, true, "/bin/sh");
    let mut p = first.allocate(&counting("page-faults")).unwrap();
    p.attach(Target::Pid(2000)).unwrap();
    p.start().unwrap();
    faults_of(&sim, 2000, 5);
    // A second profiler process.
    sim.set_current_pid(3000);
    let second = Backend::with_sys(sim.clone()).unwrap();
    let mut q = second.allocate(&counting("page-faults")).unwrap();
    let e = q.attach(Target::Pid(2000)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy);
    assert!(
        e.message().contains("gave the flag back to pid 2000"),
        "{e}"
    );
    drop(q);
    sim.set_current_pid(1000);
    faults_of(&sim, 2000, 4);
    assert_eq!(p.read().unwrap().value, 9, "still switched in");
}

fn native(p: &impl pmc_core::Pmc, name: &str) -> String {
    p.native_config()
        .into_iter()
        .find(|f| f.name == name)
        .map(|f| f.value)
        .unwrap_or_default()
}

/// freebsd-audit-3 finding C: a 2019-2021 `iaf_allocate_pmc()` pins only
/// 0xC0, 0x3C and 0x00/3 to their rows and puts any other event select on
/// the first free row, so the fixed-only spelling of core cycles
/// (`event=0,umask=2`) would land on fixed counter 0 and count retired
/// instructions. The backend sends each fixed counter's own pair (0x3C/0
/// here), which every kernel version pins to its row. Sent as typed, this
/// reads 10 (the instructions).
#[test]
fn fixed_spellings_land_on_their_own_counter_on_a_2020_kernel() {
    let (sim, b) = backend(SimConfig {
        version: PMC_VERSION_0X09,
        tree: Some(pmc_freebsd::sys::sim::SimTree::Y2020),
        ..SimConfig::default()
    });
    let mut p = b.allocate(&counting("event=0x0,umask=0x2")).unwrap();
    assert!(
        native(&p, "event").starts_with("IAF"),
        "{:?}",
        p.native_config()
    );
    p.start().unwrap();
    sim.tick(1_000, 10, 0);
    assert_eq!(p.read().unwrap().value, 3_000, "core cycles (3 a ns)");
}

/// TOPDOWN.SLOTS is the fourth fixed counter of Ice Lake and later, which
/// 2023+ kernels allocate on row 3 ("case 3: /* TOPDOWN.SLOTS */"); the
/// backend used to offer no encoding at all for event 0, umask 4.
#[test]
fn topdown_slots_on_the_fourth_fixed_counter() {
    let (sim, b) = backend(SimConfig {
        cpu: SimCpu::IntelIcelake,
        ..SimConfig::default()
    });
    let mut p = b.allocate(&counting("event=0x0,umask=0x4")).unwrap();
    assert!(
        native(&p, "event").starts_with("IAF"),
        "{:?}",
        p.native_config()
    );
    p.start().unwrap();
    sim.tick(1_000, 10, 0);
    assert_eq!(p.read().unwrap().value, 12_000, "4 slots a cycle");
}

/// freebsd-audit-3 finding E: the first system sampling start dumps every
/// process and mapping (here about 1.5 MiB); the sink replay used to keep
/// the first megabyte and drop the rest, so a new sink lost the PMCs
/// allocated and attached after the dump. Now it keeps the session's
/// state: later PMCs always, processes that exited (SYSEXIT) never.
#[test]
fn a_large_dump_never_crowds_later_pmcs_out_of_a_new_sink() {
    use pmc_log::hwpmc::{Event, Parser};
    let (sim, b) = default();
    let path = format!("/{}", "p".repeat(900));
    for pid in 5000..5400 {
        sim.spawn(pid, 1, true, &path);
        for k in 0..3 {
            sim.map(pid, 0x1000_0000 + k * 0x1_0000, &path);
        }
    }
    b.configure_hwpmc_log(Box::new(SharedBuf::default()))
        .unwrap();
    let mut ss = b
        .allocate(
            &Allocation::sampling("SOFT-CLOCK.HARD".parse().unwrap(), Rate::Period(1000))
                .system(Cpus::One(0)),
        )
        .unwrap();
    ss.start().unwrap();
    for pid in 5000..5200 {
        sim.exit(pid);
    }
    sim.spawn(6000, 1, true, "/bin/late");
    let mut late = b
        .allocate(&Allocation::sampling(
            "page-faults".parse().unwrap(),
            Rate::Period(1000),
        ))
        .unwrap();
    late.attach(Target::Pid(6000)).unwrap();
    b.flush_log().unwrap();
    assert!(
        b.log_bytes_read().unwrap() > 1 << 20,
        "a dump over a megabyte"
    );
    let buf = SharedBuf::default();
    b.configure_hwpmc_log(Box::new(buf.clone())).unwrap();
    b.flush_log().unwrap();
    let bytes = buf.0.lock().unwrap().clone();
    let (mut allocs, mut late_attach, mut gone, mut live) = (0, 0, 0, 0);
    for e in Parser::new(&bytes).unwrap() {
        match e {
            Event::PmcAllocate { .. } | Event::PmcAllocateDyn { .. } => allocs += 1,
            Event::PmcAttach { pid: 6000, .. } => late_attach += 1,
            Event::MapIn { pid, .. } if (5000..5200).contains(&pid) => gone += 1,
            Event::MapIn { pid, .. } if (5200..5400).contains(&pid) => live += 1,
            _ => {}
        }
    }
    assert_eq!((allocs, late_attach), (2, 1), "the later PMC is replayed");
    assert_eq!(gone, 0, "exited processes are not");
    assert_eq!(live, 200 * 4, "live ones are");
    assert_eq!(b.log_replay_dropped(), Some(0));
}

/// freebsd-audit-3 N6's remainder: a sampling PMC with user callchains
/// stopped while its target is in a system call. Its samples wait for the
/// return to user mode (PMC_USER_CALLCHAIN_PENDING), which completes them
/// only while the PMC runs; the flush before PMCSTOP does not log them.
/// `stop()` now flushes again after two ticks of running, so the ones whose
/// return came in time are logged; it used to lose them (0 samples here).
#[test]
fn stop_keeps_user_callchains_pending_in_a_system_call() {
    let (sim, b) = backend(SimConfig {
        mincount: Some(1),
        ..SimConfig::default()
    });
    sim.spawn(2000, 1, true, "/bin/sh");
    let buf = SharedBuf::default();
    b.configure_hwpmc_log(Box::new(buf.clone())).unwrap();
    let a = Allocation::sampling("page-faults".parse().unwrap(), Rate::Period(1))
        .flags(Flags::CALLCHAIN | Flags::USERCALLCHAIN);
    let mut p = b.allocate(&a).unwrap();
    p.attach(Target::Pid(2000)).unwrap();
    p.start().unwrap();
    sim.run(Work {
        pid: 2000,
        nanos: 200_000,
        page_faults_read: 3,
        returns_to_user_after: Some(300_000),
        ..Work::default()
    });
    p.stop().unwrap();
    b.flush_log().unwrap();
    assert_eq!(sample_count(&buf.0.lock().unwrap()), 3);
}

/// freebsd-audit-3 finding I: a FreeBSD 14-era kernel has no case for a
/// Sapphire Rapids (model 0x8F) in `pmc_intel_initialize()`: hwpmc runs as
/// on a generic CPU (SOFT only) though `kern.hwpmc.cpuid` names the CPU and
/// pmc-events has its table. Allocation errors, `-L` and `--diagnose` say
/// so instead of offering the table's names (which all failed with "no
/// hardware PMCs").
#[test]
fn a_cpu_the_kernel_does_not_know_is_named() {
    let (_sim, b) = backend(SimConfig {
        cpu: SimCpu::UnknownIntel(0x8F),
        version: 0x0A00_0000,
        ..SimConfig::default()
    });
    let e = b.allocate(&counting("instructions")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoPmu);
    assert!(
        e.message().contains("Intel model 0x8F (Sapphire Rapids)"),
        "{e}"
    );
    assert!(e.message().contains("FreeBSD 14"), "{e}");
    let list = b.list_events(false);
    assert!(
        !list
            .iter()
            .any(|i| i.name.eq_ignore_ascii_case("inst_retired.any")),
        "no table names offered"
    );
    let hw = list
        .iter()
        .find(|i| i.name == "(hardware events)")
        .expect("one line says why");
    assert!(
        matches!(&hw.availability, pmc_core::info::Availability::Unavailable(w) if w.contains("Sapphire Rapids")),
        "{hw:?}"
    );
    let d = b.diagnose();
    let pmu = d.iter().find(|c| c.name == "hardware PMCs").unwrap();
    assert!(pmu.detail.contains("Sapphire Rapids"), "{pmu:?}");
    // SOFT events still work.
    assert!(b.allocate(&counting("page-faults")).is_ok());
}
