//! Section 2, control: enable, disable and reset.

use super::{backend, counting, row, target, vs, Opts};
use pmc_bench::{interleave, sw_attr, sys, Row};
use pmc_core::{Backend as _, Pmc as _, Target};
use std::os::fd::AsFd;

pub(super) fn bench_control(o: &Opts, rows: &mut Vec<Row>) {
    const S: &str = "control";
    let (rounds, batch) = if o.quick { (101, 50) } else { (1001, 50) };
    let be = backend();
    let mut pmc = be.allocate(&counting("task-clock")).expect("allocate");
    // This thread alone, as the bare fd counts it.
    pmc.attach(Target::CurrentThread).expect("attach");
    pmc.start().expect("start");
    pmc.stop().expect("stop");
    let bare = sys::perf_event_open(
        &mut sw_attr(pmc_bench::PERF_COUNT_SW_TASK_CLOCK, false, false),
        0,
        -1,
        None,
    )
    .expect("open");
    let mut v_bare = || {
        sys::ioctl_enable(bare.as_fd(), true).expect("enable");
        sys::ioctl_enable(bare.as_fd(), false).expect("disable");
    };
    let mut v_pmc = || {
        pmc.start().expect("start");
        pmc.stop().expect("stop");
    };
    let r = interleave(rounds, batch, &mut [&mut v_bare, &mut v_pmc]);
    rows.push(row(S, "bare ENABLE + DISABLE ioctl", &r[0], "ns"));
    rows.push(target(
        vs(
            row(S, "Pmc::start() + Pmc::stop()", &r[1], "ns"),
            "bare ioctl pair",
            &r[1],
            &r[0],
        ),
        1.10,
        "<= 1.10x bare",
    ));
}
