//! Section 6, scale: many counters, many threads.

use super::{backend, bare_read, counting, row, vs, Opts};
use pmc_bench::{interleave, median, rss_bytes, skipped, sw_attr, sys, Row};
use pmc_core::{Backend as _, Cpus, Pmc as _, Target};
use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub(super) fn bench_scale(o: &Opts, rows: &mut Vec<Row>) {
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

pub(super) fn helper_threads(n: usize) {
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
