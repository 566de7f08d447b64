//! The FreeBSD suite: pmc-freebsd's read and control paths against the bare
//! hwpmc system call on the same PMC (`pmc_bench::sys::hwpmc`), interleaved
//! round by round. A SOFT event (page faults), so it runs in a VM without a
//! virtual PMU too; `--quick` shortens it.

use pmc_bench::sys::hwpmc;
use pmc_bench::{interleave, median, median_ratio, print_table, skipped, Row};
use pmc_core::{Allocation, Backend as _, Pmc as _};
use pmc_freebsd::sys::abi::{PMC_OP_PMCSTART, PMC_OP_PMCSTOP};
use std::hint::black_box;

pub(crate) fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let (rounds, batch) = if quick { (11, 2_000) } else { (31, 20_000) };
    let mut rows = Vec::new();
    match setup() {
        Ok((b, nr)) => {
            rows.extend(bench_read(&b, nr, rounds, batch));
            rows.extend(bench_control(&b, nr, rounds, batch / 4));
        }
        Err(why) => {
            rows.push(skipped("read", "Pmc::read vs PMC_OP_PMCRW", &why));
            rows.push(skipped("control", "start+stop vs PMCSTART+PMCSTOP", &why));
        }
    }
    print_table(&rows);
}

fn setup() -> Result<(pmc_freebsd::Backend, i32), String> {
    let b = pmc_freebsd::Backend::new().map_err(|e| e.to_string())?;
    let nr = pmc_freebsd::sys::RealSys::find()
        .map_err(|e| format!("hwpmc's system call: {e:?}"))?
        .syscall_number();
    Ok((b, nr))
}

fn row(section: &'static str, what: &str, a: &[f64], base_name: &str, base: &[f64]) -> Row {
    let ratio = median_ratio(a, base);
    Row {
        section,
        what: what.to_owned(),
        value: median(&mut a.to_vec()),
        unit: "ns",
        vs: Some((
            format!("{base_name} {:.0} ns", median(&mut base.to_vec())),
            ratio,
        )),
        note: "the bare syscall on the same PMC".to_owned(),
    }
}

/// `Pmc::read` of a running process counting PMC against `PMC_OP_PMCRW`
/// with `PMC_F_OLDVALUE` on its id.
fn bench_read(b: &pmc_freebsd::Backend, nr: i32, rounds: usize, batch: usize) -> Vec<Row> {
    let mut pmc = match b.allocate(&Allocation::counting("page-faults".parse().unwrap())) {
        Ok(p) => p,
        Err(e) => return vec![skipped("read", "Pmc::read vs PMC_OP_PMCRW", &e.to_string())],
    };
    if let Err(e) = pmc.start() {
        return vec![skipped("read", "Pmc::read vs PMC_OP_PMCRW", &e.to_string())];
    }
    let id = pmc.pmc_ids()[0].1;
    let mut lib = || {
        black_box(pmc.read().map(|r| r.value).unwrap_or(0));
    };
    let mut bare = || {
        black_box(hwpmc::read(nr, id).unwrap_or(0));
    };
    let r = interleave(rounds, batch, &mut [&mut lib, &mut bare]);
    vec![row(
        "read",
        "Pmc::read (SOFT page faults)",
        &r[0],
        "PMCRW",
        &r[1],
    )]
}

/// `Pmc::start` + `Pmc::stop` of a process counting PMC against
/// `PMC_OP_PMCSTART` + `PMC_OP_PMCSTOP` on another one.
fn bench_control(b: &pmc_freebsd::Backend, nr: i32, rounds: usize, batch: usize) -> Vec<Row> {
    let what = "start+stop vs PMCSTART+PMCSTOP";
    let a = Allocation::counting("page-faults".parse().unwrap());
    let (mut p, q) = match (b.allocate(&a), b.allocate(&a)) {
        (Ok(p), Ok(q)) => (p, q),
        (Err(e), _) | (_, Err(e)) => return vec![skipped("control", what, &e.to_string())],
    };
    // The bare PMC is attached to this process by its first start.
    let id = q.pmc_ids()[0].1;
    if let Err(e) = hwpmc::simple(nr, PMC_OP_PMCSTART, id) {
        return vec![skipped("control", what, &e.to_string())];
    }
    let _ = hwpmc::simple(nr, PMC_OP_PMCSTOP, id);
    let mut lib = || {
        let _ = p.start();
        let _ = p.stop();
    };
    let mut bare = || {
        let _ = hwpmc::simple(nr, PMC_OP_PMCSTART, id);
        let _ = hwpmc::simple(nr, PMC_OP_PMCSTOP, id);
    };
    let r = interleave(rounds, batch, &mut [&mut lib, &mut bare]);
    drop(q);
    vec![row(
        "control",
        "Pmc::start + stop",
        &r[0],
        "PMCSTART+STOP",
        &r[1],
    )]
}
