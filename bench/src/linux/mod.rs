//! The Linux suite: pmc-linux against bare perf_event fds and the perf-event crates.

mod dwarf;
mod metrics;
mod profiler;

use pmc_bench::{interleave, median, print_table, rss_bytes, skipped, sw_attr, sys, Row};
use pmc_core::{Allocation, Backend as _, Cpus, Group as _, Pmc as _, Reading, Target};
use pmc_linux::{FastReader, ReadPath};
use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One section of the suite: appends its rows.
type Section = fn(&Opts, &mut Vec<Row>);

struct Opts {
    quick: bool,
    only: Option<String>,
    pmcstat: Option<PathBuf>,
}

pub(crate) fn main() {
    let args: Vec<String> = std::env::args().collect();
    // Helper modes (children of the benchmark).
    if let Some(i) = args.iter().position(|a| a == "--spin") {
        let n: u64 = args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or(1);
        if let Some(j) = args.iter().position(|a| a == "--sampled") {
            let hz: u64 = args.get(j + 1).and_then(|v| v.parse().ok()).unwrap_or(1000);
            if let Err(e) = spin_sampled(hz, n) {
                eprintln!("sampling: {e}");
                std::process::exit(1);
            }
            return;
        }
        if let Some(k) = args.iter().position(|a| a == "--report") {
            // The profiler section's workload: reports its own spin wall
            // time and its own CPU (ns), so a profiler's tree CPU can be split,
            // and its parent's (the profiler's) CPU when the spin began, so
            // that the profiler's start-up can be told from the rest.
            let parent = process_cpu_ns(std::os::unix::process::parent_id());
            let t = Instant::now();
            black_box(spin(n));
            let wall = t.elapsed().as_nanos();
            let line = format!("{wall} {} {}\n", sys::self_cpu_ns(), parent.unwrap_or(0));
            if let Some(f) = args.get(k + 1) {
                std::fs::write(f, line).expect("write the report");
            }
            return;
        }
        black_box(spin(n));
        return;
    }
    if args.get(1).map(String::as_str) == Some("--rusage-child") {
        profiler::rusage_child(&args[2..]);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--helper-threads") {
        let n: usize = args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or(256);
        helper_threads(n);
        return;
    }
    let opts = Opts {
        quick: args.iter().any(|a| a == "--quick"),
        only: args
            .iter()
            .position(|a| a == "--only")
            .and_then(|i| args.get(i + 1))
            .cloned(),
        pmcstat: args
            .iter()
            .position(|a| a == "--pmcstat")
            .and_then(|i| args.get(i + 1))
            .map(PathBuf::from)
            .or_else(find_pmcstat),
    };
    let t0 = Instant::now();
    print_machine();
    let mut rows = Vec::new();
    let sections: [(&str, Section); 11] = [
        ("read latency", bench_read),
        ("control latency", bench_control),
        ("start-up and counting overhead", bench_startup),
        ("log throughput", bench_log),
        ("scale", bench_scale),
        ("sampling", bench_sampling),
        ("profiler against perf record", profiler::bench_profiler),
        (
            "profiler instructions (callgrind)",
            profiler::bench_instructions,
        ),
        ("symbolize", profiler::bench_symbolize),
        ("dwarf call graphs", dwarf::bench_dwarf),
        ("metrics scrape cost", metrics::bench_metrics),
    ];
    for (name, f) in sections {
        if opts.only.as_deref().is_some_and(|o| !name.starts_with(o)) {
            continue;
        }
        eprintln!("[{:>5.1}s] {name} ...", t0.elapsed().as_secs_f64());
        f(&opts, &mut rows);
    }
    println!();
    print_table(&rows);
    println!(
        "\ntotal run time: {:.1} s; load average at the end: {}",
        t0.elapsed().as_secs_f64(),
        loadavg()
    );
}

fn print_machine() {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let date = Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!(
        "pmc-bench  {date}  (load average at the start: {})",
        loadavg()
    );
    println!(
        "machine: {} CPUs, {cpu}, Linux {}, perf_event_paranoid {}, hardware PMU: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        read("/proc/sys/kernel/osrelease").trim(),
        read("/proc/sys/kernel/perf_event_paranoid").trim(),
        if std::path::Path::new("/sys/bus/event_source/devices/cpu").exists() {
            "yes"
        } else {
            "no"
        }
    );
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn find_pmcstat() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("PMCSTAT") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let p = exe.parent()?.join("pmcstat");
    p.exists().then_some(p)
}

fn backend() -> pmc_linux::Backend {
    pmc_linux::Backend::open().expect("the Linux backend")
}

fn counting(spec: &str) -> Allocation {
    Allocation::counting(spec.parse().expect("event spec"))
}

fn row(section: &'static str, what: &str, ns: &[f64], unit: &'static str) -> Row {
    Row {
        section,
        what: what.to_string(),
        value: median(&mut ns.to_vec()),
        unit,
        vs: None,
        note: String::new(),
    }
}

/// Sets the comparison: the ratio of the two medians.
fn vs(mut r: Row, base_name: &str, a: &[f64], base: &[f64]) -> Row {
    r.vs = Some((base_name.to_string(), ratio(a, base)));
    r
}

/// median(a) / median(base).
fn ratio(a: &[f64], base: &[f64]) -> f64 {
    median(&mut a.to_vec()) / median(&mut base.to_vec()).max(1e-12)
}

fn target(mut r: Row, max_ratio: f64, label: &str) -> Row {
    if let Some((_, x)) = r.vs {
        r.note = if x <= max_ratio {
            format!("target {label}: met")
        } else {
            format!(
                "target {label}: MISSED by {:.1}%",
                (x / max_ratio - 1.0) * 100.0
            )
        };
    }
    r
}

/// Reads a counter's `value, enabled, running, id` with one bare read(2).
fn bare_read(fd: std::os::fd::BorrowedFd<'_>, buf: &mut [u8]) -> u64 {
    let n = sys::read(fd, buf).expect("read");
    black_box(n as u64)
}

// ---------------------------------------------------------------- 1. read

fn bench_read(o: &Opts, rows: &mut Vec<Row>) {
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

// ---------------------------------------------------------------- 2. control

fn bench_control(o: &Opts, rows: &mut Vec<Row>) {
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

// ---------------------------------------------------------------- 3. start-up

/// Runs `cmd` to completion, output discarded: (wall ms, CPU ms of it and its children).
fn run_timed(cmd: &mut Command) -> Option<(f64, f64)> {
    let cpu0 = sys::children_cpu_ns();
    let t = Instant::now();
    let st = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    let wall = t.elapsed().as_secs_f64() * 1e3;
    let cpu = (sys::children_cpu_ns() - cpu0) as f64 / 1e6;
    st.success().then_some((wall, cpu))
}

fn have(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn bench_startup(o: &Opts, rows: &mut Vec<Row>) {
    const S: &str = "start-up";
    let Some(pmcstat) = o.pmcstat.clone().filter(|p| p.exists()) else {
        rows.push(skipped(
            S,
            "pmcstat start-up",
            "no pmcstat binary: cargo build --release -p pmcstat, or --pmcstat PATH",
        ));
        return;
    };
    let perf = have("perf", &["stat", "-e", "task-clock", "--", "true"]);
    let truebin = if std::path::Path::new("/usr/bin/true").exists() {
        "/usr/bin/true"
    } else {
        "/bin/true"
    };
    let n = if o.quick { 9 } else { 31 };
    let mk = |which: usize, prog: &[String]| -> Command {
        match which {
            0 => {
                let mut c = Command::new(&prog[0]);
                c.args(&prog[1..]);
                c
            }
            1 => {
                let mut c = Command::new(&pmcstat);
                c.args(["-p", "task-clock", "--"]).args(prog);
                c
            }
            _ => {
                let mut c = Command::new("perf");
                c.args(["stat", "-e", "task-clock", "--"]).args(prog);
                c
            }
        }
    };
    let k = if perf { 3 } else { 2 };
    let prog = vec![truebin.to_string()];
    let mut wall = vec![Vec::new(); 3];
    for r in 0..n {
        for j in 0..k {
            let i = (r + j) % k;
            if let Some((w, _)) = run_timed(&mut mk(i, &prog)) {
                wall[i].push(w);
            }
        }
    }
    let med = |v: &[f64]| median(&mut v.to_vec());
    let (t_true, t_pmc) = (med(&wall[0]), med(&wall[1]));
    rows.push(row(S, "bare `true` (fork+exec+wait)", &wall[0], "ms"));
    let mut p = row(S, "pmcstat -p task-clock -- true", &wall[1], "ms");
    p.vs = Some(("bare true".into(), ratio(&wall[1], &wall[0])));
    p.note = format!("overhead {:.2} ms", t_pmc - t_true);
    rows.push(p);
    if perf {
        let t_perf = med(&wall[2]);
        let mut q = row(S, "perf stat -e task-clock -- true", &wall[2], "ms");
        q.vs = Some(("bare true".into(), ratio(&wall[2], &wall[0])));
        q.note = format!("overhead {:.2} ms", t_perf - t_true);
        rows.push(q);
        let ratio = (t_pmc - t_true) / (t_perf - t_true).max(1e-9);
        rows.push(Row {
            section: S,
            what: "pmcstat overhead / perf stat overhead".into(),
            value: t_pmc - t_true,
            unit: "ms",
            vs: Some(("perf stat overhead".into(), ratio)),
            note: if ratio <= 0.5 {
                "target <= 0.5x: met".into()
            } else {
                format!(
                    "target <= 0.5x: MISSED by {:.1}%",
                    (ratio / 0.5 - 1.0) * 100.0
                )
            },
        });
    } else {
        rows.push(skipped(
            S,
            "perf stat -e task-clock -- true",
            "perf not runnable",
        ));
    }

    // A ~1 s CPU-bound program: this binary with --spin N, N calibrated here.
    let exe = std::env::current_exe().expect("current exe");
    let iters = calibrate(if o.quick { 0.3 } else { 1.0 });
    let prog = vec![
        exe.display().to_string(),
        "--spin".into(),
        iters.to_string(),
    ];
    let m = if o.quick { 3 } else { 5 };
    let mut wall = vec![Vec::new(); 3];
    let mut cpu = vec![Vec::new(); 3];
    for r in 0..m {
        for j in 0..k {
            let i = (r + j) % k;
            if let Some((w, c)) = run_timed(&mut mk(i, &prog)) {
                wall[i].push(w);
                cpu[i].push(c);
            }
        }
    }
    let label = format!("{:.1} s spin", med(&wall[0]) / 1e3);
    rows.push(row(S, &format!("bare {label}: wall"), &wall[0], "ms"));
    rows.push(row(S, &format!("bare {label}: CPU"), &cpu[0], "ms"));
    let names = ["", "pmcstat", "perf stat"];
    for i in 1..k {
        let mut w = row(
            S,
            &format!("{} on {label}: extra wall", names[i]),
            &[],
            "ms",
        );
        w.value = med(&wall[i]) - med(&wall[0]);
        w.vs = Some(("bare wall".into(), ratio(&wall[i], &wall[0])));
        rows.push(w);
        let mut c = row(S, &format!("{} on {label}: extra CPU", names[i]), &[], "ms");
        c.value = med(&cpu[i]) - med(&cpu[0]);
        c.vs = Some(("bare CPU".into(), ratio(&cpu[i], &cpu[0])));
        rows.push(c);
    }
}

/// A CPU-bound loop of `n` iterations (xorshift; the compiler cannot fold it).
fn spin(n: u64) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = black_box(x);
    }
    x
}

// ---------------------------------------------------------------- 5. log

fn bench_log(o: &Opts, rows: &mut Vec<Row>) {
    use pmc_log::record::{Callchain, Clock, Header, Record, Sample};
    const S: &str = "log";
    let n: u64 = if o.quick { 100_000 } else { 1_000_000 };
    const DEPTH: usize = 16;
    let header = Header {
        os: "Linux".into(),
        clock: Clock::Monotonic,
        ticks_per_second: 1_000_000_000,
        backend: "bench".into(),
        ..Header::default()
    };
    let passes = if o.quick { 1 } else { 3 };
    let mut enc = Vec::new();
    let mut dec = Vec::new();
    let mut copy = Vec::new();
    let mut size = 0usize;
    let mut last = Vec::new();
    for _ in 0..passes {
        let mut frames = [0u64; DEPTH];
        let t = Instant::now();
        let mut w = pmc_log::Writer::new(Vec::with_capacity(200 << 20), &header).expect("writer");
        for i in 0..n {
            for (d, f) in frames.iter_mut().enumerate() {
                *f = 0x5555_0000_0000
                    + (i.wrapping_mul(2_654_435_761) % 4096) * 16
                    + d as u64 * 0x1000;
            }
            let s = Sample {
                time: 1_000_000 + i * 1000,
                pmc_id: 0,
                pid: 1000 + (i % 7) as i32,
                tid: 1000 + (i % 13) as i32,
                cpu: Some((i % 2) as u32),
                period: 65536,
                callchain: Callchain::from_frames(&frames),
                kernel_frames: 2,
                raw: Default::default(),
            };
            w.write(&Record::Sample(s)).expect("write");
        }
        let bytes = w.finish().expect("finish");
        enc.push(t.elapsed().as_secs_f64() * 1e9 / n as f64);
        size = bytes.len();
        // Decode (zero-copy), touching every frame.
        let t = Instant::now();
        let reader = pmc_log::Reader::new(&bytes).expect("reader");
        let mut sum = 0u64;
        let mut count = 0u64;
        for rec in reader.records() {
            if let Record::Sample(s) = rec {
                sum = sum.wrapping_add(s.callchain.iter().fold(s.time, u64::wrapping_add));
                count += 1;
            }
        }
        black_box(sum);
        dec.push(t.elapsed().as_secs_f64() * 1e9 / n as f64);
        assert_eq!(count, n, "decoded sample count");
        // Baseline: copying the same bytes (memory bandwidth).
        let t = Instant::now();
        let c = black_box(bytes.clone());
        copy.push(t.elapsed().as_secs_f64() * 1e9 / n as f64);
        drop(c);
        last = bytes;
    }
    let mb = size as f64 / 1e6;
    let per = size as f64 / n as f64;
    let mut e = vs(
        row(
            S,
            &format!("encode {n} samples x {DEPTH} frames"),
            &enc,
            "ns/smp",
        ),
        "memcpy of the log",
        &enc,
        &copy,
    );
    e.note = format!(
        "{:.2} M samples/s, {:.0} MB/s, {:.1} B/sample ({mb:.0} MB)",
        1e3 / median(&mut enc.clone()),
        per * 1e3 / median(&mut enc.clone()),
        per
    );
    rows.push(e);
    let mut d = vs(
        row(S, "decode (zero-copy Reader, all frames)", &dec, "ns/smp"),
        "memcpy of the log",
        &dec,
        &copy,
    );
    d.note = format!(
        "{:.2} M samples/s, {:.0} MB/s",
        1e3 / median(&mut dec.clone()),
        per * 1e3 / median(&mut dec.clone())
    );
    rows.push(d);
    profiler::log_vs_perf_script(o, rows, &last, median(&mut dec.clone()));
}

// ---------------------------------------------------------------- 6. scale

fn bench_scale(o: &Opts, rows: &mut Vec<Row>) {
    const S: &str = "scale";
    let be = backend();
    let n: usize = 1000;
    let lim = sys::raise_nofile(2 * n as u64 + 512);
    if lim < n as u64 + 64 {
        rows.push(skipped(S, "1000 PMCs", &format!("RLIMIT_NOFILE is {lim}")));
    } else {
        let rounds = if o.quick { 1 } else { 3 };
        let mut t_pmc = Vec::new();
        let mut t_bare = Vec::new();
        let mut m_pmc = Vec::new();
        let mut m_bare = Vec::new();
        for _ in 0..rounds {
            // pmc: allocate + start + read, all kept open.
            let rss0 = rss_bytes();
            let t = Instant::now();
            let mut pmcs = Vec::with_capacity(n);
            for _ in 0..n {
                let mut p = be.allocate(&counting("task-clock")).expect("allocate");
                p.start().expect("start");
                black_box(p.read().expect("read"));
                pmcs.push(p);
            }
            t_pmc.push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
            m_pmc.push((rss_bytes().saturating_sub(rss0)) as f64 / n as f64);
            drop(pmcs);
            // bare: perf_event_open + ENABLE + read(2).
            let rss0 = rss_bytes();
            let t = Instant::now();
            let mut fds = Vec::with_capacity(n);
            let mut buf = [0u8; 32];
            for _ in 0..n {
                let fd = sys::perf_event_open(
                    &mut sw_attr(pmc_bench::PERF_COUNT_SW_TASK_CLOCK, false, false),
                    0,
                    -1,
                    None,
                )
                .expect("open");
                sys::ioctl_enable(fd.as_fd(), true).expect("enable");
                black_box(bare_read(fd.as_fd(), &mut buf));
                fds.push(fd);
            }
            t_bare.push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
            m_bare.push((rss_bytes().saturating_sub(rss0)) as f64 / n as f64);
            drop(fds);
        }
        rows.push(row(
            S,
            "1000 x bare open+enable+read: time",
            &t_bare,
            "us/PMC",
        ));
        rows.push(vs(
            row(S, "1000 x allocate+start+read: time", &t_pmc, "us/PMC"),
            "bare open+enable+read",
            &t_pmc,
            &t_bare,
        ));
        rows.push(row(S, "1000 x bare: RSS delta", &m_bare, "B/PMC"));
        let mut m = row(S, "1000 x allocate+start+read: RSS delta", &m_pmc, "B/PMC");
        m.note = "user-space memory per PMC (kernel perf_event memory not included)".into();
        rows.push(m);
    }

    // System-wide on every CPU.
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    let sys_alloc = counting("cpu-clock").system(Cpus::All);
    match be.allocate(&sys_alloc) {
        Err(e) => rows.push(skipped(S, "system-wide PMC on every CPU", &e.to_string())),
        Ok(p) => {
            drop(p);
            let rounds = if o.quick { 5 } else { 21 };
            let mut v_pmc = || {
                let mut p = be.allocate(&sys_alloc).expect("allocate");
                p.start().expect("start");
                black_box(p.read().expect("read"));
                p.release().expect("release");
            };
            let mut buf = [0u8; 32];
            let mut v_bare = || {
                for cpu in 0..ncpu {
                    let fd = sys::perf_event_open(
                        &mut sw_attr(pmc_bench::PERF_COUNT_SW_CPU_CLOCK, false, false),
                        -1,
                        cpu as i32,
                        None,
                    )
                    .expect("open");
                    sys::ioctl_enable(fd.as_fd(), true).expect("enable");
                    black_box(bare_read(fd.as_fd(), &mut buf));
                }
            };
            let r = interleave(rounds, 20, &mut [&mut v_bare, &mut v_pmc]);
            let us = |v: &[f64]| v.iter().map(|x| x / 1e3).collect::<Vec<_>>();
            rows.push(row(
                S,
                &format!("bare open+enable+read+close, {ncpu} CPUs"),
                &us(&r[0]),
                "us",
            ));
            rows.push(vs(
                row(
                    S,
                    &format!("system-wide allocate..release, {ncpu} CPUs"),
                    &us(&r[1]),
                    "us",
                ),
                "bare, every CPU",
                &r[1],
                &r[0],
            ));
        }
    }

    // Attach to a process with 256 threads, with descendants.
    bench_threads(o, rows, &be);
}

fn helper_threads(n: usize) {
    let handles: Vec<_> = (0..n)
        .map(|_| std::thread::spawn(|| std::thread::sleep(Duration::from_secs(600))))
        .collect();
    println!("ready");
    std::io::stdout().flush().ok();
    // Exit when the parent closes our stdin.
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    drop(handles);
    std::process::exit(0);
}

fn bench_threads(o: &Opts, rows: &mut Vec<Row>, be: &pmc_linux::Backend) {
    const S: &str = "scale";
    let threads = 256;
    let exe = std::env::current_exe().expect("exe");
    let mut child = match Command::new(exe)
        .args(["--helper-threads", &threads.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            rows.push(skipped(S, "attach to 256 threads", &e.to_string()));
            return;
        }
    };
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut line);
    }
    let pid = child.id();
    let ntids = std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count());
    let alloc = counting("task-clock").descendants();
    let rounds = if o.quick { 3 } else { 11 };
    let mut v_pmc = || {
        let mut p = be.allocate(&alloc).expect("allocate");
        p.attach(Target::Pid(pid)).expect("attach");
        p.start().expect("start");
        black_box(p.read().expect("read"));
        p.release().expect("release");
    };
    let mut buf = [0u8; 32];
    let mut v_bare = || {
        let tids: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
            .expect("task dir")
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
            .collect();
        let fds: Vec<OwnedFd> = tids
            .iter()
            .filter_map(|t| {
                sys::perf_event_open(
                    &mut sw_attr(pmc_bench::PERF_COUNT_SW_TASK_CLOCK, false, true),
                    *t,
                    -1,
                    None,
                )
                .ok()
            })
            .collect();
        for fd in &fds {
            sys::ioctl_enable(fd.as_fd(), true).expect("enable");
        }
        for fd in &fds {
            black_box(bare_read(fd.as_fd(), &mut buf));
        }
    };
    let r = interleave(rounds, 1, &mut [&mut v_bare, &mut v_pmc]);
    drop(child.stdin.take()); // the helper exits
    let _ = child.wait();
    let per = |v: &[f64]| {
        v.iter()
            .map(|x| x / 1e3 / ntids.max(1) as f64)
            .collect::<Vec<_>>()
    };
    rows.push(row(
        S,
        &format!("bare open+enable+read, {ntids} threads, inherit"),
        &per(&r[0]),
        "us/thr",
    ));
    let mut p = vs(
        row(
            S,
            &format!("attach+start+read+release, {ntids} threads"),
            &per(&r[1]),
            "us/thr",
        ),
        "bare, every thread",
        &r[1],
        &r[0],
    );
    p.note = format!("total {:.2} ms per attach", median(&mut r[1].clone()) / 1e6);
    rows.push(p);
}

// ---------------------------------------------------------------- 4. sampling

fn bench_sampling(o: &Opts, rows: &mut Vec<Row>) {
    const S: &str = "sampling";
    let exe = std::env::current_exe().expect("current exe");
    let iters = calibrate(if o.quick { 0.2 } else { 0.5 });
    let data = std::env::temp_dir().join(format!("pmc-bench-{}.data", std::process::id()));
    let perf = have(
        "perf",
        &[
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-F",
            "1000",
            "-o",
            &data.display().to_string(),
            "--",
            "true",
        ],
    );
    let rates = [1000u64, 4000];
    let spin_args = |extra: &[String]| -> Command {
        let mut c = Command::new(&exe);
        c.args(extra)
            .args(["--spin".to_string(), iters.to_string()]);
        c
    };
    // Variant 0: bare; 1..=2: pmc at each rate; 3..=4: perf record at each rate.
    let mk = |v: usize| -> Command {
        match v {
            0 => spin_args(&[]),
            1 | 2 => spin_args(&["--sampled".into(), rates[v - 1].to_string()]),
            _ => {
                let mut c = Command::new("perf");
                c.args(["record", "-q", "-e", "cpu-clock", "-F"])
                    .arg(rates[v - 3].to_string())
                    .arg("-o")
                    .arg(&data)
                    .arg("--")
                    .arg(&exe)
                    .args(["--spin".to_string(), iters.to_string()]);
                c
            }
        }
    };
    // A trial run: is sampling available in this build?
    if run_timed(&mut spin_args(&["--sampled".into(), "1000".into()])).is_none() {
        let be = backend();
        let _ = be.configure_log(Box::new(std::io::sink()));
        let why = match be
            .allocate(&Allocation::sampling(
                "cpu-clock".parse().expect("spec"),
                pmc_core::Rate::Frequency(1000),
            ))
            .and_then(|mut p| p.start())
        {
            Ok(()) => "the sampled child failed".to_string(),
            Err(e) => e.message().to_string(),
        };
        rows.push(skipped(
            S,
            "sampling overhead",
            &format!("not yet measurable: {why}"),
        ));
        return;
    }
    let k = if perf { 5 } else { 3 };
    let m = if o.quick { 3 } else { 5 };
    let mut wall = vec![Vec::new(); 5];
    let mut cpu = vec![Vec::new(); 5];
    for r in 0..m {
        for j in 0..k {
            let i = (r + j) % k;
            if let Some((w, c)) = run_timed(&mut mk(i)) {
                wall[i].push(w);
                cpu[i].push(c);
            }
        }
    }
    let _ = std::fs::remove_file(&data);
    let _ = std::fs::remove_file(format!("{}.old", data.display()));
    let med = |v: &[f64]| median(&mut v.to_vec());
    let label = format!("{:.1} s spin", med(&wall[0]) / 1e3);
    rows.push(row(S, &format!("bare {label}: wall"), &wall[0], "ms"));
    rows.push(row(S, &format!("bare {label}: CPU"), &cpu[0], "ms"));
    if !perf {
        rows.push(skipped(
            S,
            "perf record on the same spin",
            "perf record not runnable",
        ));
    }
    for i in 1..k {
        if wall[i].is_empty() {
            continue;
        }
        let who = if i <= 2 {
            "pmc sampling"
        } else {
            "perf record"
        };
        let hz = rates[(i - 1) % 2];
        let mut w = row(
            S,
            &format!("{who} cpu-clock {hz} Hz: extra wall"),
            &[],
            "ms",
        );
        w.value = med(&wall[i]) - med(&wall[0]);
        w.vs = Some(("bare wall".into(), ratio(&wall[i], &wall[0])));
        rows.push(w);
        let mut c = row(S, &format!("{who} cpu-clock {hz} Hz: extra CPU"), &[], "ms");
        c.value = med(&cpu[i]) - med(&cpu[0]);
        c.vs = Some(("bare CPU".into(), ratio(&cpu[i], &cpu[0])));
        let samples = hz as f64 * med(&wall[0]) / 1e3;
        c.note = format!(
            "~{:.1} us CPU per sample (incl. start-up)",
            c.value * 1e3 / samples.max(1.0)
        );
        rows.push(c);
    }
    // Marginal cost per sample: the CPU difference between the two rates
    // over the extra samples, which cancels the fixed start-up cost.
    let secs = med(&wall[0]) / 1e3;
    for (who, lo, hi) in [("pmc sampling", 1, 2), ("perf record", 3, 4)] {
        if hi >= k || cpu[lo].is_empty() || cpu[hi].is_empty() {
            continue;
        }
        let extra = (rates[1] - rates[0]) as f64 * secs;
        let per = (med(&cpu[hi]) - med(&cpu[lo])) * 1e3 / extra.max(1.0);
        let fixed = med(&cpu[lo]) - med(&cpu[0]) - per * rates[0] as f64 * secs / 1e3;
        rows.push(Row {
            section: S,
            what: format!("{who}: marginal CPU per sample (4k-1k)"),
            value: per,
            unit: "us",
            vs: None,
            note: format!("fixed cost ~{fixed:.1} ms CPU; kernel budget 2.5 us/sample"),
        });
    }
}

/// Iterations of [`spin`] that take about `secs` here.
/// CPU time (ns) of process `pid` so far: the sum over its threads of the
/// scheduler's run time (`/proc/PID/task/TID/schedstat`, first field), which
/// has nanosecond resolution where `/proc/PID/stat`'s ticks have 10 ms.
pub(crate) fn process_cpu_ns(pid: u32) -> Option<u64> {
    let mut total = 0u64;
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let Ok(t) = t else { continue };
        let s = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
        total += s
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Some(total)
}

fn calibrate(secs: f64) -> u64 {
    let t = Instant::now();
    let mut n = 1u64 << 20;
    let mut done = 0u64;
    while t.elapsed() < Duration::from_millis(50) {
        black_box(spin(n));
        done += n;
        n *= 2;
    }
    let per_iter = t.elapsed().as_secs_f64() / done as f64;
    ((secs / per_iter) as u64).max(1)
}

/// `--sampled HZ --spin N`: spins under a sampling cpu-clock PMC on itself,
/// logging to /dev/null.
fn spin_sampled(hz: u64, n: u64) -> pmc_core::Result<()> {
    let be = backend();
    let null = std::fs::File::create("/dev/null").map_err(|e| {
        pmc_core::Error::new(pmc_core::ErrorKind::Os, pmc_core::Op::Log, e.to_string())
    })?;
    be.configure_log(Box::new(null))?;
    let mut p = be.allocate(&Allocation::sampling(
        "cpu-clock".parse()?,
        pmc_core::Rate::Frequency(hz),
    ))?;
    p.start()?;
    black_box(spin(n));
    p.stop()?;
    p.release()?;
    be.close_log()
}
