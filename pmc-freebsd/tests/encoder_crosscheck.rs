//! The simulator's kernel-format writer against pmc-log's independent
//! `hwpmc::Encoder`: two implementations of `sys/sys/pmclog.h` must agree
//! byte for byte, record by record and over a whole simulated session.

use pmc_core::{Allocation, Backend as _, Cpus, Flags, Pmc as _, Rate, Target};
use pmc_freebsd::sim::log::{KernelFormat, LogEncoder, LogRecord};
use pmc_freebsd::sim::{SimDriver, Work};
use pmc_freebsd::Backend;
use pmc_log::hwpmc::Encoder;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// `LogEncoder` over pmc-log's encoder.
struct PmcLogEncoder;

impl LogEncoder for PmcLogEncoder {
    fn encode(&mut self, tsc: u64, rec: &LogRecord, out: &mut Vec<u8>) {
        let mut e = Encoder::new(Vec::new());
        let r = match rec {
            LogRecord::Initialize {
                version,
                cputype,
                tsc_freq,
                ts_sec,
                ts_nsec,
                cpuid,
            } => e.initialize(tsc, *version, *cputype, *tsc_freq, *ts_sec, *ts_nsec, cpuid),
            LogRecord::CloseLog => e.closelog(tsc),
            LogRecord::PmcAllocate {
                pmcid,
                event,
                flags,
                rate,
            } => e.pmc_allocate(tsc, *pmcid, *event, *flags, *rate),
            LogRecord::PmcAllocateDyn {
                pmcid,
                event,
                flags,
                rate,
                name,
            } => e.pmc_allocate_dyn(tsc, *pmcid, *event, *flags, *rate, name),
            LogRecord::PmcAttach { pmcid, pid, path } => {
                e.pmc_attach(tsc, *pmcid, *pid, path.as_bytes())
            }
            LogRecord::PmcDetach { pmcid, pid } => e.pmc_detach(tsc, *pmcid, *pid),
            LogRecord::ProcExit { pmcid, pid, value } => e.procexit(tsc, *pmcid, *pid, *value),
            LogRecord::ProcFork { oldpid, newpid } => e.procfork(tsc, *oldpid, *newpid),
            LogRecord::ProcCsw {
                value,
                pmcid,
                pid,
                tid,
            } => e.proccsw(tsc, *pmcid, *pid, *tid, *value),
            LogRecord::UserData { userdata } => e.userdata(tsc, *userdata),
            LogRecord::Callchain {
                pid,
                tid,
                pmcid,
                cpu,
                flags,
                pcs,
            } => e.callchain(
                tsc,
                *pid,
                *tid,
                *pmcid,
                *cpu as u16,
                flags & pmc_freebsd::sys::abi::PMC_CC_F_USERSPACE != 0,
                pcs,
            ),
        };
        r.expect("pmc-log encodes every record the simulator emits");
        out.extend_from_slice(&e.into_inner());
    }
}

fn both(tsc: u64, rec: LogRecord) -> (Vec<u8>, Vec<u8>) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    KernelFormat.encode(tsc, &rec, &mut a);
    PmcLogEncoder.encode(tsc, &rec, &mut b);
    (a, b)
}

#[test]
fn every_record_kind_agrees() {
    let recs = vec![
        LogRecord::Initialize {
            version: 0x0A03_0000,
            cputype: 0x98,
            tsc_freq: 2_000_000_000,
            ts_sec: 1_700_000_000,
            ts_nsec: 5,
            cpuid: "GenuineIntel-6-5E-3".into(),
        },
        LogRecord::CloseLog,
        LogRecord::PmcAllocate {
            pmcid: 0x0003_0711,
            event: 0x1_0000,
            flags: 0x280,
            rate: 65536,
        },
        LogRecord::PmcAllocateDyn {
            pmcid: 1,
            event: 0x2_0003,
            flags: 2,
            rate: 1000,
            name: "PAGE_FAULT.ALL".into(),
        },
        LogRecord::PmcAllocateDyn {
            pmcid: 1,
            event: 0x2_0003,
            flags: 2,
            rate: 0,
            name: "X".repeat(70),
        },
        LogRecord::PmcAttach {
            pmcid: 7,
            pid: 42,
            path: "/usr/bin/make".into(),
        },
        LogRecord::PmcAttach {
            pmcid: 7,
            pid: 42,
            path: String::new(),
        },
        LogRecord::PmcDetach { pmcid: 7, pid: 42 },
        LogRecord::ProcExit {
            pmcid: 7,
            pid: 42,
            value: 1 << 40,
        },
        LogRecord::ProcFork {
            oldpid: 42,
            newpid: 43,
        },
        LogRecord::ProcCsw {
            value: 99,
            pmcid: 7,
            pid: 42,
            tid: 4200,
        },
        LogRecord::UserData { userdata: 0xC0FFEE },
        LogRecord::Callchain {
            pid: 42,
            tid: 4200,
            pmcid: 7,
            cpu: 1,
            flags: 1,
            pcs: vec![0x401000, 0x401100, 0x401200],
        },
        LogRecord::Callchain {
            pid: 42,
            tid: 4200,
            pmcid: 7,
            cpu: 3,
            flags: 0,
            pcs: vec![0xffff_ffff_8000_0000],
        },
    ];
    for (i, rec) in recs.into_iter().enumerate() {
        let (a, b) = both(0x1122_3344_5566_7788 + i as u64, rec.clone());
        assert_eq!(a, b, "{rec:?}");
    }
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

fn session(sim: Arc<SimDriver>) -> Vec<u8> {
    let b = Backend::with_driver(sim.clone()).unwrap();
    let buf = SharedBuf::default();
    b.configure_log(Box::new(buf.clone())).unwrap();
    sim.spawn(2000, 1000, true, "/usr/bin/make");
    let mut csw = b
        .allocate(
            &Allocation::counting("page-faults".parse().unwrap())
                .flags(Flags::LOG_PROCCSW | Flags::LOG_PROCEXIT),
        )
        .unwrap();
    csw.attach(Target::Pid(2000)).unwrap();
    csw.start().unwrap();
    let mut ts = b
        .allocate(&Allocation::sampling(
            "instructions".parse().unwrap(),
            Rate::Period(10_000),
        ))
        .unwrap();
    ts.attach(Target::Pid(2000)).unwrap();
    ts.start().unwrap();
    let mut ss = b
        .allocate(
            &Allocation::sampling("cpu-clock".parse().unwrap(), Rate::Period(1000))
                .system(Cpus::All),
        )
        .unwrap();
    ss.start().unwrap();
    sim.tick(1_000_000, 35_000, 3);
    sim.run(Work {
        pid: 2000,
        cpu: 1,
        nanos: 1_200_000_000,
        page_faults_write: 5,
        ..Work::default()
    });
    sim.exit(2000);
    b.write_log(7).unwrap();
    b.close_log().unwrap();
    let out = buf.0.lock().unwrap().clone();
    out
}

#[test]
fn a_whole_session_agrees_and_pmc_log_imports_it() {
    let ours = session(Arc::new(SimDriver::default()));
    let sim = Arc::new(SimDriver::default());
    sim.set_encoder(Box::new(PmcLogEncoder));
    let theirs = session(sim);
    assert!(ours.len() > 500);
    assert_eq!(ours, theirs);
}
