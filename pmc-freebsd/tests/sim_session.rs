//! A whole simulated session's hwpmc log (written by pmc-log's
//! kernel-format encoder, the simulator's only writer) imports cleanly.
//! The record layouts themselves are pinned against `abi-amd64.json` in
//! pmc-log's tests and in `sim::log`'s unit tests.

use pmc_core::{Allocation, Backend as _, Cpus, Flags, Pmc as _, Rate, Target};
use pmc_freebsd::sys::sim::{SimDriver, Work};
use pmc_freebsd::Backend;
use std::io::Write;
use std::sync::{Arc, Mutex};

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
    let b = Backend::with_sys(sim.clone()).unwrap();
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
            &Allocation::sampling("SOFT-CLOCK.HARD".parse().unwrap(), Rate::Period(1000))
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
fn a_whole_session_imports_cleanly() {
    use pmc_log::record::{CounterKind, Record};
    let out = session(Arc::new(SimDriver::default()));
    let reader = pmc_log::Reader::new(&out).unwrap();
    let mut it = reader.records();
    let recs: Vec<Record<'_>> = it.by_ref().collect();
    let report = it.report();
    assert!(report.closed_cleanly && report.is_clean(), "{report}");
    let samples = recs
        .iter()
        .filter(|r| matches!(r, Record::Sample(_)))
        .count();
    let csw = recs
        .iter()
        .filter(|r| matches!(r, Record::Counter(c) if c.kind == CounterKind::ContextSwitch))
        .count();
    let exits: Vec<u64> = recs
        .iter()
        .filter_map(|r| match r {
            Record::Counter(c) if c.kind == CounterKind::ProcessExit => Some(c.value),
            _ => None,
        })
        .collect();
    // 1201 clock ticks on each of 2 CPUs at one sample per 1000.
    assert_eq!(samples, 2, "{samples} samples");
    assert_eq!(csw, 1);
    assert_eq!(exits, vec![5]);
    assert!(recs
        .iter()
        .any(|r| matches!(r, Record::UserData(u) if u.data.as_bytes() == 7u32.to_le_bytes())));
}
