//! Writes a deterministic hwpmc(4) kernel log, produced by the simulated
//! driver, to a file: a fixture for log readers (pmc-log's hwpmc importer,
//! `pmcstat -R` on FreeBSD).
//!
//! ```text
//! cargo run -p pmc-freebsd --features sim --example sim_pmclog -- out.pmclog
//! ```
//!
//! The log holds INITIALIZE, PMCALLOCATEDYN (SOFT), PMCALLOCATE (IAP),
//! PMCATTACH, CALLCHAIN samples from a process-sampling and a
//! system-sampling PMC, PROCCSW, PROCFORK, PROCEXIT, USERDATA and CLOSELOG.

use pmc_core::{Allocation, Backend as _, Cpus, Flags, Pmc as _, Rate, Target};
use pmc_freebsd::sys::sim::{SimDriver, Work};
use pmc_freebsd::Backend;
use std::sync::Arc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: sim_pmclog OUT.pmclog")?;
    let file = std::fs::File::create(&path)?;
    let sim = Arc::new(SimDriver::default());
    let b = Backend::with_sys(sim.clone())?;
    b.configure_hwpmc_log(Box::new(file))?;

    sim.spawn(2000, 1000, true, "/usr/bin/make");
    let mut csw = b.allocate(
        &Allocation::counting("page-faults".parse()?)
            .flags(Flags::LOG_PROCCSW | Flags::LOG_PROCEXIT | Flags::DESCENDANTS),
    )?;
    csw.attach(Target::Pid(2000))?;
    csw.start()?;
    // Process sampling of another process (samples of a PMC attached to its
    // own owner feed profil(2) and are not logged).
    let mut ts = b.allocate(&Allocation::sampling(
        "instructions".parse()?,
        Rate::Period(10_000),
    ))?;
    ts.attach(Target::Pid(2000))?;
    ts.start()?;
    let mut ss = b.allocate(
        &Allocation::sampling("cpu-clock".parse()?, Rate::Period(1000)).system(Cpus::One(1)),
    )?;
    ss.start()?;

    sim.tick(1_000_000, 35_000, 3);
    sim.spawn(2001, 2000, true, "/usr/bin/cc");
    sim.run(Work {
        pid: 2001,
        cpu: 1,
        nanos: 1_200_000_000,
        page_faults_write: 5,
        ..Work::default()
    });
    sim.run(Work {
        pid: 2000,
        cpu: 0,
        nanos: 10_000_000,
        instructions: 35_000,
        page_faults_read: 2,
        ..Work::default()
    });
    sim.exit(2001);
    b.write_log(0xC0FFEE)?;
    ss.stop()?;
    ts.stop()?;
    csw.stop()?;
    b.close_log()?;
    eprintln!("wrote {path}");
    Ok(())
}
