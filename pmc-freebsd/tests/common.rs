//! Set-up shared by the log-sink failure tests: `make` (pid 2000) sampled every 5,000
//! instructions into a sink, on the simulated driver.

use pmc_core::{Allocation, Backend as _, Error, Pmc as _, Rate, Target};
use pmc_freebsd::sys::sim::{SimConfig, SimDriver, Work};
use pmc_freebsd::Backend;
use std::sync::Arc;

pub type SimBackend = Backend<Arc<SimDriver>>;
pub type SimPmc = <SimBackend as pmc_core::Backend>::Pmc;

/// A backend whose log goes to `sink`, and a started sampling PMC on `make` (pid 2000).
pub fn sample_make_into(
    sink: impl std::io::Write + Send + 'static,
) -> (Arc<SimDriver>, SimBackend, SimPmc) {
    let sim = Arc::new(SimDriver::new(SimConfig::default()));
    let b: SimBackend = Backend::with_sys(sim.clone()).unwrap();
    b.configure_log(Box::new(sink)).unwrap();
    sim.spawn(2000, 1000, true, "/usr/bin/make");
    let mut p = b
        .allocate(&Allocation::sampling(
            "instructions".parse().unwrap(),
            Rate::Period(5_000),
        ))
        .unwrap();
    p.attach(Target::Pid(2000)).unwrap();
    p.start().unwrap();
    (sim, b, p)
}

/// One slice of `make`'s work: 1,000 samples' worth of instructions.
pub fn make_work() -> Work {
    Work {
        pid: 2000,
        nanos: 1_000,
        instructions: 5_000 * 1_000,
        ..Work::default()
    }
}

/// Runs `make` until the log pump reports an error (no timed assertion: as long as it takes,
/// up to 10,000 rounds); the error and the rounds it took.
pub fn run_until_log_error(sim: &SimDriver, b: &SimBackend, what: &str) -> (Error, u32) {
    let mut rounds = 0;
    loop {
        sim.run(make_work());
        let _ = b.flush_log();
        if let Some(e) = pmc_core::Backend::log_error(b) {
            return (e, rounds);
        }
        rounds += 1;
        assert!(rounds < 10_000, "{what}");
    }
}
