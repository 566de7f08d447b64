//! The truth matrix's workload (`tests/tests/truth_matrix.rs`): one shape of
//! threads and processes, run in the test process itself (the calling-process
//! cells) or in `pmc-workload matrix-worker`/`matrix-run` (the pid and exec'd
//! cells), and the truth of each run, measured by the kernel's own accounting
//! (`getrusage`) or exact by construction (freshly touched pages), never by
//! pmc.
//!
//! One `work` is: every thread of the shape touches [`Shape::pages`] fresh
//! pages (one page fault each: `touch_pages` maps them with
//! `MADV_NOHUGEPAGE`) and spins [`Shape::spin_ms`] of its own CPU time; every
//! child process does the same.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

/// How many threads besides the main one a shape with threads runs.
pub const EXTRA_THREADS: u64 = 2;

/// When the shape's extra threads are created, relative to attach and start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// The main thread only.
    None,
    /// Created before the attach, working in every `work`.
    Before,
    /// Created by each `work` (after the start), joined at its end.
    After,
    /// Created before the attach; they work in the first `work` and exit
    /// there (mid-run).
    Exiting,
}

/// Which child processes one `work` creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Procs {
    /// None.
    None,
    /// One `fork`ed child working and exiting.
    Fork,
    /// One child that `exec`s `pmc-workload matrix-run` (no threads, no children).
    ForkExec,
    /// A forked child that forks a grandchild: both work.
    Grand,
}

/// A workload shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// The extra threads.
    pub threads: Threads,
    /// The child processes.
    pub procs: Procs,
    /// Pages each thread and each process touches.
    pub pages: u64,
    /// Milliseconds of CPU time each thread and each process spins.
    pub spin_ms: u64,
}

impl Shape {
    /// `threads=... procs=... pages=N spin=N`, as `pmc-workload` takes it.
    pub fn to_args(&self) -> Vec<String> {
        let t = match self.threads {
            Threads::None => "none",
            Threads::Before => "before",
            Threads::After => "after",
            Threads::Exiting => "exiting",
        };
        let p = match self.procs {
            Procs::None => "none",
            Procs::Fork => "fork",
            Procs::ForkExec => "forkexec",
            Procs::Grand => "grand",
        };
        vec![
            format!("threads={t}"),
            format!("procs={p}"),
            format!("pages={}", self.pages),
            format!("spin={}", self.spin_ms),
        ]
    }

    /// The inverse of [`Shape::to_args`] (unknown words are ignored).
    pub fn parse(args: &[String]) -> Option<Shape> {
        let mut s = Shape {
            threads: Threads::None,
            procs: Procs::None,
            pages: 0,
            spin_ms: 0,
        };
        for a in args {
            let (k, v) = a.split_once('=')?;
            match k {
                "threads" => {
                    s.threads = match v {
                        "none" => Threads::None,
                        "before" => Threads::Before,
                        "after" => Threads::After,
                        "exiting" => Threads::Exiting,
                        _ => return None,
                    }
                }
                "procs" => {
                    s.procs = match v {
                        "none" => Procs::None,
                        "fork" => Procs::Fork,
                        "forkexec" => Procs::ForkExec,
                        "grand" => Procs::Grand,
                        _ => return None,
                    }
                }
                "pages" => s.pages = v.parse().ok()?,
                "spin" => s.spin_ms = v.parse().ok()?,
                _ => {}
            }
        }
        Some(s)
    }

    /// The same work without threads or children (what a `ForkExec` child runs).
    pub fn alone(&self) -> Shape {
        Shape {
            threads: Threads::None,
            procs: Procs::None,
            ..*self
        }
    }
}

/// What one or more `work`s did, from the kernel's accounting, never pmc's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Truth {
    /// Pages freshly touched by the process's own threads (exact: one fault each).
    pub own_pages: u64,
    /// Pages freshly touched by its child and grandchild processes.
    pub child_pages: u64,
    /// Of `own_pages`, those the thread calling `work` touched itself.
    pub main_pages: u64,
    /// CPU time of the thread calling `work` (`RUSAGE_THREAD` difference).
    pub main_cpu_ns: u64,
    /// CPU time of the process (`getrusage(RUSAGE_SELF)` difference).
    pub own_cpu_ns: u64,
    /// CPU time of the children it waited for (`RUSAGE_CHILDREN` difference).
    pub child_cpu_ns: u64,
    /// Threads that were created (each costs a few faults of its own: stack, TLS).
    pub threads_created: u64,
    /// Processes forked (each costs copy-on-write faults in parent and child).
    pub forks: u64,
    /// Processes that exec'd (each costs the start-up of a new program).
    pub execs: u64,
    /// The process that did the work (`matrix-run` fills it in; 0 otherwise).
    pub pid: u64,
}

impl Truth {
    /// Sums two truths.
    pub fn add(&mut self, o: &Truth) {
        self.own_pages += o.own_pages;
        self.child_pages += o.child_pages;
        self.main_pages += o.main_pages;
        self.main_cpu_ns += o.main_cpu_ns;
        self.own_cpu_ns += o.own_cpu_ns;
        self.child_cpu_ns += o.child_cpu_ns;
        self.threads_created += o.threads_created;
        self.forks += o.forks;
        self.execs += o.execs;
    }

    /// One line of `key=value` words.
    pub fn to_line(&self) -> String {
        format!(
            "own_pages={} child_pages={} main_pages={} main_cpu_ns={} own_cpu_ns={} child_cpu_ns={} threads_created={} forks={} execs={} pid={}",
            self.own_pages,
            self.child_pages,
            self.main_pages,
            self.main_cpu_ns,
            self.own_cpu_ns,
            self.child_cpu_ns,
            self.threads_created,
            self.forks,
            self.execs,
            self.pid
        )
    }

    /// The inverse of [`Truth::to_line`].
    pub fn from_line(line: &str) -> Option<Truth> {
        let mut t = Truth::default();
        for w in line.split_whitespace() {
            let (k, v) = w.split_once('=')?;
            let v: u64 = v.parse().ok()?;
            match k {
                "own_pages" => t.own_pages = v,
                "child_pages" => t.child_pages = v,
                "main_pages" => t.main_pages = v,
                "main_cpu_ns" => t.main_cpu_ns = v,
                "own_cpu_ns" => t.own_cpu_ns = v,
                "child_cpu_ns" => t.child_cpu_ns = v,
                "threads_created" => t.threads_created = v,
                "forks" => t.forks = v,
                "execs" => t.execs = v,
                "pid" => t.pid = v,
                _ => return None,
            }
        }
        Some(t)
    }
}

/// `getrusage(who)`.
pub fn rusage(who: libc::c_int) -> libc::rusage {
    // SAFETY: getrusage fills the zeroed struct it is given.
    unsafe {
        let mut r: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut r);
        r
    }
}

/// User + system CPU time of a `rusage`, in nanoseconds.
pub fn cpu_ns(r: &libc::rusage) -> u64 {
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    tv(r.ru_utime) + tv(r.ru_stime)
}

/// Voluntary + involuntary context switches of a `rusage`.
pub fn switches(r: &libc::rusage) -> u64 {
    (r.ru_nvcsw + r.ru_nivcsw) as u64
}

/// CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Spins until the calling thread has used `ms` more milliseconds of CPU.
/// Only `clock_gettime` (a vdso call): safe in a forked child of a
/// multi-threaded process.
pub fn spin_thread_ms(ms: u64) {
    let end = thread_cpu() + Duration::from_millis(ms);
    let mut x = 1u64;
    while thread_cpu() < end {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

fn unit(shape: &Shape) {
    crate::touch_pages(shape.pages as usize);
    spin_thread_ms(shape.spin_ms);
}

/// Forks a child that runs `f` and `_exit`s; returns its pid (or -1).
fn fork_run(f: impl FnOnce()) -> libc::pid_t {
    // SAFETY: the child only runs `f` (mmap, page writes, clock_gettime,
    // fork, waitpid: async-signal-safe system calls, no allocation, no
    // locks) and `_exit`s without unwinding.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            f();
            libc::_exit(0);
        }
        pid
    }
}

fn wait_pid(pid: libc::pid_t) {
    let _ = wait_pid_rusage(pid);
}

/// Waits for our child `pid`; returns the rusage of that child alone (and of
/// the descendants it waited for). Unlike a `RUSAGE_CHILDREN` difference, no
/// other thread's children land in it: a test binary runs tests in parallel.
fn wait_pid_rusage(pid: libc::pid_t) -> Option<libc::rusage> {
    if pid <= 0 {
        return None;
    }
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child; `status` and `ru` are valid for writes.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    (r == pid).then_some(ru)
}

/// A standing thread: its "go" channel, its "done" channel, its handle
/// (`None` once joined).
type Standing = (Sender<()>, Receiver<()>, Option<JoinHandle<()>>);

/// A shape's threads and processes, ready to [`work`](Worker::work).
#[derive(Debug)]
pub struct Worker {
    shape: Shape,
    exe: Option<PathBuf>,
    standing: Vec<Standing>,
}

impl Worker {
    /// Creates the threads that exist before the attach (`Before`,
    /// `Exiting`); `exe` is `pmc-workload`, for `ForkExec`.
    pub fn new(shape: Shape, exe: Option<&Path>) -> Worker {
        let mut standing = Vec::new();
        if matches!(shape.threads, Threads::Before | Threads::Exiting) {
            let once = shape.threads == Threads::Exiting;
            for _ in 0..EXTRA_THREADS {
                let (go_tx, go_rx) = channel::<()>();
                let (done_tx, done_rx) = channel::<()>();
                let h = std::thread::spawn(move || {
                    while go_rx.recv().is_ok() {
                        unit(&shape);
                        let _ = done_tx.send(());
                        if once {
                            return;
                        }
                    }
                });
                standing.push((go_tx, done_rx, Some(h)));
            }
        }
        Worker {
            shape,
            exe: exe.map(Path::to_path_buf),
            standing,
        }
    }

    /// Runs the shape once; returns what it did.
    pub fn work(&mut self) -> Truth {
        let s = self.shape;
        let mut t = Truth::default();
        let self0 = rusage(libc::RUSAGE_SELF);
        let main0 = rusage(libc::RUSAGE_THREAD);
        let child0 = rusage(libc::RUSAGE_CHILDREN);
        // Threads.
        let mut spawned = Vec::new();
        let mut woken = 0;
        for (go, _, h) in &self.standing {
            if h.is_some() && go.send(()).is_ok() {
                woken += 1;
            }
        }
        if s.threads == Threads::After {
            for _ in 0..EXTRA_THREADS {
                spawned.push(std::thread::spawn(move || unit(&s)));
            }
            t.threads_created += EXTRA_THREADS;
        }
        // Processes, while the threads run.
        match s.procs {
            Procs::None => {}
            Procs::Fork => {
                wait_pid(fork_run(|| unit(&s)));
                t.child_pages += s.pages;
                t.forks += 1;
            }
            Procs::Grand => {
                wait_pid(fork_run(|| {
                    wait_pid(fork_run(|| unit(&s)));
                    unit(&s);
                }));
                t.child_pages += 2 * s.pages;
                t.forks += 2;
            }
            Procs::ForkExec => {
                if let Some(exe) = &self.exe {
                    let ok = std::process::Command::new(exe)
                        .arg("matrix-run")
                        .args(s.alone().to_args())
                        // Its truth line is not the worker's: `matrix-worker`'s
                        // stdout is the test's pipe.
                        .stdout(std::process::Stdio::null())
                        .status()
                        .is_ok_and(|st| st.success());
                    if ok {
                        t.child_pages += s.pages;
                    }
                    t.forks += 1;
                    t.execs += 1;
                }
            }
        }
        unit(&s);
        t.own_pages += s.pages;
        t.main_pages += s.pages;
        for h in spawned {
            let _ = h.join();
            t.own_pages += s.pages;
        }
        for (_, done, h) in &mut self.standing {
            if h.is_none() {
                continue;
            }
            if woken > 0 && done.recv().is_ok() {
                t.own_pages += s.pages;
            }
            if s.threads == Threads::Exiting {
                if let Some(h) = h.take() {
                    let _ = h.join();
                }
            }
        }
        t.main_cpu_ns = cpu_ns(&rusage(libc::RUSAGE_THREAD)).saturating_sub(cpu_ns(&main0));
        let self1 = rusage(libc::RUSAGE_SELF);
        let child1 = rusage(libc::RUSAGE_CHILDREN);
        t.own_cpu_ns = cpu_ns(&self1).saturating_sub(cpu_ns(&self0));
        t.child_cpu_ns = cpu_ns(&child1).saturating_sub(cpu_ns(&child0));
        t
    }
}

/// `n` round trips of one byte over two pipes between the calling thread
/// and a peer: a new thread (`across_fork` false) or a forked child. Returns
/// the context switches of both sides from the kernel's own per-task
/// counters (`RUSAGE_THREAD` of each thread, or the caller's thread and
/// `wait4`'s rusage of the child); each blocking read is one switch, so
/// there are at least about `2n`.
pub fn ping_pong(n: u64, across_fork: bool) -> u64 {
    let mut a = [0i32; 2];
    let mut b = [0i32; 2];
    // SAFETY: two valid 2-int arrays for pipe(2).
    unsafe {
        libc::pipe(a.as_mut_ptr());
        libc::pipe(b.as_mut_ptr());
    }
    let peer = move |n: u64| -> u64 {
        let r0 = rusage(libc::RUSAGE_THREAD);
        let mut byte = [0u8; 1];
        for _ in 0..n {
            // SAFETY: valid pipe fds and a 1-byte buffer.
            unsafe {
                libc::read(a[0], byte.as_mut_ptr().cast(), 1);
                libc::write(b[1], byte.as_ptr().cast(), 1);
            }
        }
        switches(&rusage(libc::RUSAGE_THREAD)) - switches(&r0)
    };
    let me0 = rusage(libc::RUSAGE_THREAD);
    let (thread, pid) = if across_fork {
        (
            None,
            fork_run(|| {
                let _ = peer(n);
            }),
        )
    } else {
        (Some(std::thread::spawn(move || peer(n))), -1)
    };
    let mut byte = [7u8; 1];
    for _ in 0..n {
        // SAFETY: valid pipe fds and a 1-byte buffer.
        unsafe {
            libc::write(a[1], byte.as_ptr().cast(), 1);
            libc::read(b[0], byte.as_mut_ptr().cast(), 1);
        }
    }
    let mine = switches(&rusage(libc::RUSAGE_THREAD)) - switches(&me0);
    let theirs = match thread {
        Some(h) => h.join().unwrap_or(0),
        None => wait_pid_rusage(pid).map_or(0, |r| switches(&r)),
    };
    for fd in a.into_iter().chain(b) {
        // SAFETY: closing the pipe fds opened above.
        unsafe { libc::close(fd) };
    }
    mine + theirs
}
