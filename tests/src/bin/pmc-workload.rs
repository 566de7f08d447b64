//! `pmc-workload`: small deterministic workloads for the cross-crate tests,
//! run as a separate process so that the library and `perf` can count the
//! very same command from its `exec`.
//!
//! ```text
//! pmc-workload touch-pages N      mmap N fresh anonymous pages, write one byte to each
//! pmc-workload spin-cpu-ms N      spin until this process has used N ms more of CPU time
//! pmc-workload sleep-ms N         sleep N ms
//! pmc-workload exit N             exit with status N
//! pmc-workload insns N            run exactly 2N user instructions of loop (pmc_tests::insn_loop)
//! pmc-workload fast-reads EVENT [READS]
//!                                 (single-threaded, as FastReader requires) read EVENT
//!                                 with pmc_linux::FastReader and with read(2),
//!                                 counting raw_syscalls:sys_enter around READS (1M) fast reads
//!                                 and 1000 read(2)s; print the facts as one JSON object
//! pmc-workload spin-threads N           start N threads that each use 150 ms of CPU
//! pmc-workload callers N          main -> outer_caller -> hot_leaf 3N times and
//!                                 main -> side_caller -> hot_leaf N times, each call
//!                                 spinning 1 ms of thread CPU time (clock_gettime
//!                                 through the vdso): a known call structure for the
//!                                 call-graph tests
//! pmc-workload matrix-run SHAPE... [truth=FILE]
//!                                 (the truth matrix) run pmc_tests::matrix's shape once
//!                                 (threads=, procs=, pages=, spin=); write its truth line
//!                                 (this process's whole CPU time, its children's) to FILE
//! pmc-workload matrix-worker SHAPE...
//!                                 create the shape's standing threads, print `ready`, then
//!                                 per stdin line `work` run it and print its truth line;
//!                                 `quit` (or end of input) exits
//! pmc-workload pingpong N [fork]  N pipe round trips between two threads (or a forked
//!                                 child); print the context switches getrusage saw
//! pmc-workload unprivileged-check WORKLOAD
//!                                 (run as an unprivileged user) try what an
//!                                 unprivileged user may and may not count;
//!                                 print the facts as one JSON object
//! ```
//!
//! Exit status 0 on success, 2 on a usage error.
#![allow(missing_docs)]

use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!(
        "usage: pmc-workload touch-pages N | spin-cpu-ms N | sleep-ms N | exit N | insns N | fast-reads EVENT [READS] | spin-threads N | callers N | unprivileged-check WORKLOAD"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(mode), arg) = (args.first(), args.get(1)) else {
        return usage();
    };
    let num = || arg.and_then(|a| a.parse::<u64>().ok());
    match (mode.as_str(), num()) {
        ("touch-pages", Some(n)) => pmc_tests::touch_pages(n as usize),
        ("spin-cpu-ms", Some(n)) => {
            pmc_tests::spin_cpu(std::time::Duration::from_millis(n));
        }
        ("sleep-ms", Some(n)) => std::thread::sleep(std::time::Duration::from_millis(n)),
        ("exit", Some(n)) => return ExitCode::from(n as u8),
        ("insns", Some(n)) => pmc_tests::insn_loop(n),
        ("spin-threads", Some(n)) => spin_threads(n),
        ("callers", Some(n)) => {
            let a = outer_caller(3 * n);
            let b = side_caller(n);
            println!("{}", a ^ b);
        }
        ("matrix-run", _) => return matrix_run(&args[1..]),
        ("matrix-worker", _) => return matrix_worker(&args[1..]),
        ("pingpong", Some(n)) => println!(
            "{}",
            pmc_tests::matrix::ping_pong(n, args.get(2).is_some_and(|a| a == "fork"))
        ),
        ("fast-reads", _) => match arg {
            Some(e) => println!(
                "{}",
                fast_reads(
                    e,
                    args.get(2)
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(1_000_000)
                )
            ),
            None => return usage(),
        },
        ("unprivileged-check", _) => match arg {
            Some(w) => {
                println!("{}", unprivileged::check(w));
            }
            None => return usage(),
        },
        _ => return usage(),
    }
    ExitCode::SUCCESS
}

/// `matrix-run SHAPE... [truth=FILE]`: the shape once; its truth line (with
/// the CPU time of the whole process, start-up included) to FILE or stdout.
fn matrix_run(args: &[String]) -> ExitCode {
    use pmc_tests::matrix::{cpu_ns, rusage, Shape, Worker};
    let (truth_file, shape_args): (Vec<&String>, Vec<&String>) =
        args.iter().partition(|a| a.starts_with("truth="));
    let shape_args: Vec<String> = shape_args.into_iter().cloned().collect();
    let Some(shape) = Shape::parse(&shape_args) else {
        return usage();
    };
    let exe = std::env::current_exe().ok();
    let mut w = Worker::new(shape, exe.as_deref());
    let mut t = w.work();
    drop(w);
    t.own_cpu_ns = cpu_ns(&rusage(libc::RUSAGE_SELF));
    t.child_cpu_ns = cpu_ns(&rusage(libc::RUSAGE_CHILDREN));
    t.pid = u64::from(std::process::id());
    match truth_file.first().and_then(|f| f.strip_prefix("truth=")) {
        Some(f) => {
            if std::fs::write(f, t.to_line()).is_err() {
                return ExitCode::from(1);
            }
        }
        None => println!("{}", t.to_line()),
    }
    ExitCode::SUCCESS
}

/// `matrix-worker SHAPE...`: standing threads now, `work` on demand.
fn matrix_worker(args: &[String]) -> ExitCode {
    use pmc_tests::matrix::{Shape, Worker};
    use std::io::{BufRead, Write};
    let Some(shape) = Shape::parse(args) else {
        return usage();
    };
    let exe = std::env::current_exe().ok();
    let mut w = Worker::new(shape, exe.as_deref());
    let mut out = std::io::stdout();
    let _ = writeln!(out, "ready");
    let _ = out.flush();
    for line in std::io::stdin().lock().lines() {
        match line.as_deref().map(str::trim) {
            Ok("work") => {
                let t = w.work();
                let _ = writeln!(out, "{}", t.to_line());
                let _ = out.flush();
            }
            _ => break,
        }
    }
    ExitCode::SUCCESS
}

/// Spins for 1 ms of this thread's CPU time.
#[inline(never)]
fn hot_leaf() -> u64 {
    let start = thread_cpu_ns();
    let mut x = 1u64;
    while thread_cpu_ns().wrapping_sub(start) < 1_000_000 {
        for _ in 0..200 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    x
}

#[inline(never)]
fn outer_caller(rounds: u64) -> u64 {
    let mut t = 0u64;
    for _ in 0..rounds {
        t = t.wrapping_add(std::hint::black_box(hot_leaf()));
    }
    t
}

#[inline(never)]
fn side_caller(rounds: u64) -> u64 {
    let mut t = 7u64;
    for _ in 0..rounds {
        t ^= std::hint::black_box(hot_leaf());
    }
    t
}

/// Starts `n` threads after a short sleep (so a counter attached at exec is already running),
/// each spinning until it has used 150 ms of its own CPU time, and waits for them.
/// The facts of `fast-reads EVENT`: the path and values of a fast read next
/// to a read(2), and the system calls made by `reads` fast reads and by 1000
/// read(2)s (counted by a `raw_syscalls:sys_enter` PMC on this thread), and
/// the mean latency of each kind of read.
fn fast_reads(event: &str, reads: u64) -> serde_json::Value {
    use pmc_core::{Allocation, Backend as _, Pmc as _, Target};
    use pmc_linux::FastReader;
    let fail = |what: &str, e: &dyn std::fmt::Display| serde_json::json!({ "error": format!("{what}: {e}") });
    let b = match pmc_linux::Backend::open() {
        Ok(b) => b,
        Err(e) => return fail("open", &e),
    };
    let spec = match event.parse() {
        Ok(s) => s,
        Err(e) => return fail("parse", &e),
    };
    let sys_enter = |work: &dyn Fn()| -> Option<u64> {
        let mut s = b
            .allocate(&Allocation::counting(
                "raw_syscalls:sys_enter".parse().ok()?,
            ))
            .ok()?;
        s.start().ok()?;
        work();
        s.stop().ok()?;
        s.read().ok().map(|r| r.value)
    };
    let mut p = match b.allocate(&Allocation::counting(spec)) {
        Ok(p) => p,
        Err(e) => return fail("allocate", &e),
    };
    if let Err(e) = p.attach(Target::CurrentThread).and_then(|()| p.start()) {
        return fail("start", &e);
    }
    let f = match FastReader::new(&p) {
        Ok(f) => f,
        Err(e) => return fail("FastReader::new", &e),
    };
    let first = f.read_traced(true);
    let slow = p.read();
    let (Ok((fast, path)), Ok(slow)) = (first, slow) else {
        return serde_json::json!({ "error": "a read failed" });
    };
    let none = sys_enter(&|| {});
    let timed = |n: u64, read: &dyn Fn()| {
        let t0 = std::time::Instant::now();
        for _ in 0..n {
            read();
        }
        t0.elapsed().as_nanos() as f64 / n.max(1) as f64
    };
    let fast_n = sys_enter(&|| {
        for _ in 0..reads {
            std::hint::black_box(f.read().ok());
        }
    });
    let slow_1k = sys_enter(&|| {
        for _ in 0..1_000 {
            std::hint::black_box(p.read().ok());
        }
    });
    // Latencies (outside the syscall counting): mean ns per read.
    let fast_ns = timed(reads.min(100_000), &|| {
        std::hint::black_box(f.read().ok());
    });
    let read_ns = timed(1_000, &|| {
        std::hint::black_box(p.read().ok());
    });
    let paths: Vec<String> = (0..3)
        .filter_map(|_| f.read_traced(false).ok())
        .map(|(_, path)| format!("{path:?}"))
        .collect();
    serde_json::json!({
        "event": event,
        "unavailable": f.unavailable().map(|w| w.to_string()),
        "path": format!("{path:?}"),
        "later_paths": paths,
        "fast": fast.value,
        "read": slow.value,
        "sys_enter_none": none,
        "reads": reads,
        "sys_enter_fast": fast_n,
        "sys_enter_1k_read": slow_1k,
        "fast_read_ns": fast_ns,
        "read_syscall_ns": read_ns,
    })
}

fn spin_threads(n: u64) {
    std::thread::sleep(std::time::Duration::from_millis(20));
    let threads: Vec<_> = (0..n)
        .map(|_| {
            std::thread::spawn(|| {
                let mut x = 1u64;
                while thread_cpu_ns() < 150_000_000 {
                    for _ in 0..1000 {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                }
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
}

/// CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`), in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}

mod unprivileged {
    use pmc::launch::PausedChild;
    use pmc_core::{Allocation, Backend as _, Cpus, Pmc as _, Target};
    use serde_json::{json, Value};

    fn ids() -> Value {
        let (mut r, mut e, mut s) = (0, 0, 0);
        let (mut gr, mut ge, mut gs) = (0, 0, 0);
        // SAFETY: all six pointers are to valid, writable locals.
        unsafe {
            libc::getresuid(&mut r, &mut e, &mut s);
            libc::getresgid(&mut gr, &mut ge, &mut gs);
        }
        json!({ "uid": [r, e, s], "gid": [gr, ge, gs] })
    }

    fn error_json(e: &pmc_core::Error) -> Value {
        json!({
            "kind": format!("{:?}", e.kind()),
            "message": e.to_string(),
            "errno": e.errno(),
        })
    }

    /// System-wide cpu-clock (must be refused), then page-faults and
    /// task-clock of a launched child (must work).
    pub fn check(workload: &str) -> Value {
        let backend = match pmc_linux::Backend::open() {
            Ok(b) => b,
            Err(e) => return json!({ "ids": ids(), "open_error": error_json(&e) }),
        };
        let system =
            backend.allocate(&Allocation::counting("cpu-clock".parse().unwrap()).system(Cpus::All));
        let system = match system {
            Ok(_) => json!({ "ok": true }),
            Err(e) => json!({ "ok": false, "error": error_json(&e) }),
        };
        let mut exec = serde_json::Map::new();
        for event in ["page-faults", "task-clock"] {
            exec.insert(event.into(), count_exec(&backend, event, workload));
        }
        // log-proccsw samples the kernel's context-switch event: kernel mode.
        let proccsw = backend.allocate(
            &Allocation::counting("task-clock".parse().unwrap())
                .flags(pmc_core::Flags::LOG_PROCCSW),
        );
        let proccsw = match proccsw {
            Ok(_) => json!({ "ok": true }),
            Err(e) => json!({ "ok": false, "error": error_json(&e) }),
        };
        json!({
            "ids": ids(),
            "has_perfmon": pmc_linux::env::has_perfmon(),
            "paranoid": pmc_linux::env::paranoid_level(),
            "system": system,
            "proccsw": proccsw,
            "exec": exec,
        })
    }

    fn count_exec(backend: &pmc_linux::Backend, event: &str, workload: &str) -> Value {
        let run = || -> pmc_core::Result<(u64, Option<i32>)> {
            let mut pmc = backend.allocate(&Allocation::counting(event.parse()?))?;
            let mut child = PausedChild::spawn(workload, &["touch-pages".into(), "256".into()])?;
            pmc.attach(Target::Exec(child.pid()))?;
            pmc.start()?;
            child.resume()?;
            let status = child.wait()?;
            pmc.stop()?;
            Ok((pmc.read()?.value, status.code()))
        };
        match run() {
            Ok((value, code)) => json!({ "ok": true, "value": value, "exit_code": code }),
            Err(e) => json!({ "ok": false, "error": error_json(&e) }),
        }
    }
}
