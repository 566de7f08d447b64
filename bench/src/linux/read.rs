//! Section 1, read: one counter's read through pmc-linux, a bare fd and the
//! perf-event crates; rdpmc; a group's read.

use super::{backend, bare_read, counting, ratio, row, target, vs, Opts};
use pmc_bench::{interleave, median, skipped, sw_attr, sys, Row};
use pmc_core::{Allocation, Backend as _, Group as _, Pmc as _, Reading, Target};
use pmc_linux::{FastReader, ReadPath};
use std::hint::black_box;
use std::os::fd::{AsFd, OwnedFd};

pub(super) fn bench_read(o: &Opts, rows: &mut Vec<Row>) {
    const S: &str = "read";
    let (rounds, batch) = if o.quick { (101, 200) } else { (1001, 200) };
    let be = backend();
    let mut pmc = be
        .allocate(&counting("task-clock"))
        .expect("allocate task-clock");
    // This thread alone, as the bare fd and the other crates count it.
    pmc.attach(Target::CurrentThread).expect("attach");
    pmc.start().expect("start");
    let fd = pmc.first_fd().expect("an fd");
    let mut pe = perf_event::Builder::new()
        .kind(perf_event::events::Software::TASK_CLOCK)
        .build()
        .expect("perf-event counter");
    pe.enable().expect("enable");
    let mut pe2 = perf_event2::Builder::new(perf_event2::events::Software::TASK_CLOCK)
        .build()
        .expect("perf-event2 counter");
    pe2.enable().expect("enable");
    let fast = FastReader::new(&pmc).expect("fast reader");
    let (_, path) = fast.read_traced(false).expect("fast read");
    let fast_note = match path {
        ReadPath::User => "user-space read (rdpmc)".to_string(),
        ReadPath::Syscall(why) => format!("falls back to read(2): {why}"),
    };

    let mut buf = [0u8; 32];
    let mut v_bare = || {
        black_box(bare_read(fd, &mut buf));
    };
    let mut v_pmc = || {
        black_box(pmc.read().expect("read"));
    };
    let mut v_pe = || {
        black_box(pe.read_count_and_time().expect("read"));
    };
    let mut v_pe2 = || {
        black_box(pe2.read_full().expect("read").count());
    };
    let mut v_fast = || {
        black_box(fast.read().expect("read"));
    };
    let r = interleave(
        rounds,
        batch,
        &mut [&mut v_bare, &mut v_pmc, &mut v_pe, &mut v_pe2, &mut v_fast],
    );
    let base = "bare read(2), same fd";
    rows.push(row(S, "bare read(2) of task-clock (32 B)", &r[0], "ns"));
    rows.push(target(
        vs(
            row(S, "Pmc::read() task-clock", &r[1], "ns"),
            base,
            &r[1],
            &r[0],
        ),
        1.10,
        "<= 1.10x bare",
    ));
    let mut pe_row = vs(
        row(
            S,
            "perf-event 0.4 Counter::read_count_and_time",
            &r[2],
            "ns",
        ),
        "Pmc::read()",
        &r[1],
        &r[2],
    );
    pe_row.what = "Pmc::read() vs perf-event 0.4 (task-clock)".into();
    pe_row.value = median(&mut r[2].clone());
    pe_row.note = format!(
        "value = perf-event median; ratio = pmc/perf-event; target <= 1.00x: {}",
        if ratio(&r[1], &r[2]) <= 1.0 {
            "met"
        } else {
            "MISSED"
        }
    );
    rows.push(pe_row);
    let mut pe2_row = vs(row(S, "", &r[3], "ns"), "Pmc::read()", &r[1], &r[3]);
    pe2_row.what = "Pmc::read() vs perf-event2 0.7 (task-clock)".into();
    pe2_row.note = format!(
        "value = perf-event2 median; ratio = pmc/perf-event2; target <= 1.00x: {}",
        if ratio(&r[1], &r[3]) <= 1.0 {
            "met"
        } else {
            "MISSED"
        }
    );
    rows.push(pe2_row);
    let mut f = vs(
        row(S, "FastReader::read() task-clock", &r[4], "ns"),
        base,
        &r[4],
        &r[0],
    );
    f.note = fast_note;
    rows.push(f);
    drop(fast);
    pmc.stop().ok();

    bench_rdpmc(o, rows, &be);
    bench_group_read(o, rows, &be);
}

fn bench_rdpmc(o: &Opts, rows: &mut Vec<Row>, be: &pmc_linux::Backend) {
    const S: &str = "read";
    let what = "rdpmc FastReader vs read(2) (instructions:u)";
    let mut pmc = match be.allocate(&counting("instructions:u")) {
        Ok(p) => p,
        Err(e) => {
            rows.push(skipped(
                S,
                what,
                &format!("no hardware PMU ({})", e.message()),
            ));
            return;
        }
    };
    if let Err(e) = pmc.attach(Target::CurrentThread).and_then(|()| pmc.start()) {
        rows.push(skipped(
            S,
            what,
            &format!("cannot start instructions:u ({e})"),
        ));
        return;
    }
    let fast = match FastReader::new(&pmc) {
        Ok(f) => f,
        Err(e) => {
            rows.push(skipped(S, what, &e.to_string()));
            return;
        }
    };
    if let Some(why) = fast.unavailable() {
        rows.push(skipped(S, what, &why.to_string()));
        return;
    }
    let (rounds, batch) = if o.quick { (101, 200) } else { (1001, 200) };
    let fd = pmc.first_fd().expect("fd");
    let mut buf = [0u8; 32];
    let mut users = 0u64;
    let mut v_bare = || {
        black_box(bare_read(fd, &mut buf));
    };
    let mut v_fast = || {
        if let Ok((r, ReadPath::User)) = fast.read_traced(false) {
            users += 1;
            black_box(r);
        }
    };
    let mut v_ser = || {
        black_box(fast.read_serialized().expect("read"));
    };
    let r = interleave(rounds, batch, &mut [&mut v_bare, &mut v_fast, &mut v_ser]);
    rows.push(row(S, "bare read(2) of instructions:u", &r[0], "ns"));
    let mut f = vs(
        row(S, "FastReader::read() (rdpmc)", &r[1], "ns"),
        "bare read(2)",
        &r[1],
        &r[0],
    );
    f.note = format!("{users} reads in user space");
    rows.push(f);
    rows.push(vs(
        row(
            S,
            "FastReader::read_serialized() (lfence+rdpmc)",
            &r[2],
            "ns",
        ),
        "bare read(2)",
        &r[2],
        &r[0],
    ));
}

fn bench_group_read(o: &Opts, rows: &mut Vec<Row>, be: &pmc_linux::Backend) {
    const S: &str = "read";
    let (rounds, batch) = if o.quick { (101, 50) } else { (1001, 50) };
    let events = [
        "task-clock",
        "page-faults",
        "context-switches",
        "cpu-migrations",
    ];
    let configs = [
        pmc_bench::PERF_COUNT_SW_TASK_CLOCK,
        pmc_bench::PERF_COUNT_SW_PAGE_FAULTS,
        pmc_bench::PERF_COUNT_SW_CONTEXT_SWITCHES,
        pmc_bench::PERF_COUNT_SW_CPU_MIGRATIONS,
    ];
    let allocs: Vec<Allocation> = events.iter().map(|e| counting(e)).collect();
    let mut group = be.allocate_group(&allocs).expect("group");
    group.start().expect("start");
    let mut singles: Vec<_> = events
        .iter()
        .map(|e| {
            let mut p = be.allocate(&counting(e)).expect("allocate");
            p.start().expect("start");
            p
        })
        .collect();
    // Bare: one group with PERF_FORMAT_GROUP, and four independent fds.
    let mut bare_group: Vec<OwnedFd> = Vec::new();
    for c in configs {
        let mut attr = sw_attr(c, true, false);
        attr.set_disabled(u64::from(bare_group.is_empty()));
        let g = bare_group.first().map(|f| f.as_fd());
        let fd = sys::perf_event_open(&mut attr, 0, -1, g).expect("open");
        bare_group.push(fd);
    }
    sys::ioctl_enable(bare_group[0].as_fd(), true).expect("enable");
    let bare4: Vec<OwnedFd> = configs
        .iter()
        .map(|c| {
            let fd =
                sys::perf_event_open(&mut sw_attr(*c, false, false), 0, -1, None).expect("open");
            sys::ioctl_enable(fd.as_fd(), true).expect("enable");
            fd
        })
        .collect();

    let leader = bare_group[0].as_fd();
    let mut gbuf = [0u8; 8 * (3 + 2 * 4)];
    let mut v_bare_group = || {
        black_box(bare_read(leader, &mut gbuf));
    };
    let mut out = [Reading::default(); 4];
    let mut v_pmc_group = || {
        group.read_into(&mut out).expect("read");
        black_box(&out);
    };
    let mut buf = [0u8; 32];
    let mut v_bare4 = || {
        for fd in &bare4 {
            black_box(bare_read(fd.as_fd(), &mut buf));
        }
    };
    let mut v_pmc4 = || {
        for p in &singles {
            black_box(p.read().expect("read"));
        }
    };
    let r = interleave(
        rounds,
        batch,
        &mut [
            &mut v_bare_group,
            &mut v_pmc_group,
            &mut v_bare4,
            &mut v_pmc4,
        ],
    );
    rows.push(row(S, "bare group read(2), 4 events", &r[0], "ns"));
    rows.push(target(
        vs(
            row(S, "Group::read_into, 4 events", &r[1], "ns"),
            "bare group read(2)",
            &r[1],
            &r[0],
        ),
        1.10,
        "<= 1.10x bare",
    ));
    rows.push(vs(
        row(S, "4 bare read(2), 4 fds", &r[2], "ns"),
        "bare group read(2)",
        &r[2],
        &r[0],
    ));
    rows.push(target(
        vs(
            row(S, "4 x Pmc::read()", &r[3], "ns"),
            "4 bare read(2)",
            &r[3],
            &r[2],
        ),
        1.10,
        "<= 1.10x bare",
    ));
    for p in &mut singles {
        p.stop().ok();
    }
}
