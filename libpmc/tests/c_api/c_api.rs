//! The judges of the C library: C programs written as a FreeBSD libpmc user
//! writes them (`tests/c/*.c`), compiled with `cc` against `include/pmc.h`
//! and linked against the `libpmc.so` and `libpmc.a` that cargo built for
//! this test, their counts judged against truths the library has no part
//! in: N fresh pages give N page faults, `perf stat` on the same program,
//! the spin time and the wall clock around a system-mode count.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pmc_testkit::skip;

/// `target/debug/deps`, where cargo put this test and the library built
/// for it (`cargo test` does not copy them up to `target/debug`).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent().expect("deps directory").to_path_buf()
}

fn include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include")
}

fn source(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(format!("{name}.c"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[derive(Clone, Copy, Debug)]
enum Link {
    Shared,
    Static,
    /// Where the link does not matter: shared here, static where only static programs
    /// were built (the PMU lab).
    Either,
}

/// The environment variable naming a directory of programs built beforehand, one static
/// executable per `tests/c/NAME.c` named NAME: the PMU lab builds them for aarch64 on the
/// host (zig cc against the aarch64 `libpmc.a`), since its guest has no C compiler.
const PREBUILT_ENV: &str = "PMC_CAPI_PREBUILT";

/// Compiles `tests/c/NAME.c` against libpmc (`cc -I include -o EXE SRC
/// LIBS`); `None` after a visible skip when there is no `cc`. A program
/// that does not compile fails the test: the header must take FreeBSD code.
/// With `PMC_CAPI_PREBUILT` set, the program built beforehand instead (static: a test
/// of the shared library skips there).
fn build(name: &str, link: Link, tag: &str) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(PREBUILT_ENV) {
        if matches!(link, Link::Shared) {
            skip!("{PREBUILT_ENV} holds static programs only: no libpmc.so to link here");
            return None;
        }
        let exe = Path::new(&dir).join(name);
        assert!(
            exe.is_file(),
            "{PREBUILT_ENV}: {} was not built (each tests/c program must be)",
            exe.display()
        );
        return Some(exe);
    }
    let link = match link {
        Link::Either => Link::Shared,
        l => l,
    };
    let lib = lib_dir();
    let so = lib.join("libpmc.so");
    let a = lib.join("libpmc.a");
    if !(so.exists() && a.exists()) {
        // A test binary copied without its deps directory (a cross-built
        // run elsewhere).
        skip!(
            "no {} and {} beside this test binary",
            so.display(),
            a.display()
        );
        return None;
    }
    let dir = pmc_testkit::workdir("pmc-capi-c");
    // One source and executable per test: tests run in parallel.
    let src = dir.join(format!("{name}-{tag}.c"));
    std::fs::write(&src, source(name)).expect("write the C source");
    let suffix = if matches!(link, Link::Shared) {
        "so"
    } else {
        "a"
    };
    let exe = dir.join(format!("{name}-{suffix}-{tag}"));
    let mut cc = Command::new("cc");
    cc.arg(format!("-I{}", include_dir().display()))
        // tests/c/portable.h, which the programs include by name.
        .arg(format!(
            "-I{}",
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/c")
                .display()
        ))
        .args([
            "-O1",
            "-Wall",
            "-Werror",
            "-std=c99",
            "-D_DEFAULT_SOURCE",
            "-o",
        ])
        .arg(&exe)
        .arg(&src);
    match link {
        Link::Shared => {
            cc.arg(format!("-L{}", lib.display()))
                // DT_RPATH, which LD_LIBRARY_PATH cannot override: cargo's
                // puts target/debug first, where an older libpmc.so may be.
                .arg("-Wl,--disable-new-dtags")
                .arg(format!("-Wl,-rpath,{}", lib.display()))
                .arg("-lpmc")
                .arg("-lpthread");
        }
        // rustc --print native-static-libs for a staticlib on Linux.
        Link::Static | Link::Either => {
            cc.arg(&a).args([
                "-lgcc_s",
                "-lutil",
                "-lrt",
                "-lpthread",
                "-lm",
                "-ldl",
                "-lc",
            ]);
        }
    }
    let out = match cc.output() {
        Ok(o) => o,
        Err(e) => {
            skip!("no C compiler (cc) to build {name}: {e}");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "{name}.c does not build against pmc.h and libpmc.{suffix}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(exe)
}

fn run(exe: &Path, args: &[&str]) -> Output {
    Command::new(exe)
        .args(args)
        .output()
        .expect("run the C program")
}

/// The program's stdout when it ran; a visible skip when perf_event itself
/// is missing (pmc_init failed: exit 2).
fn stdout_of(exe: &Path, args: &[&str]) -> Option<String> {
    let out = run(exe, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(2) && stderr.contains("pmc_init") {
        skip!("pmc_init failed here (no perf_event?): {stderr}");
        return None;
    }
    assert!(
        out.status.success(),
        "{} {args:?} failed ({}): {stderr}{}",
        exe.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn count_of(line: &str) -> u64 {
    line.split_whitespace()
        .last()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no count in {line:?}"))
}

/// The numbers after `key` on the program's line that starts with it.
fn numbers_of<T: std::str::FromStr>(text: &str, key: &str) -> Vec<T> {
    let line = text
        .lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("no {key:?} line in {text}"));
    line.split_whitespace()
        .skip(1)
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{v:?} is not a number: {line}"))
        })
        .collect()
}

/// Faults of the loop itself may add a few (a page of the stack or code
/// first touched inside the window); never fewer than N.
const SLACK: u64 = 16;

fn judge_fresh_pages(link: Link, event: &str) {
    let Some(exe) = build("pagefaults", link, &format!("{link:?}-{event}")) else {
        return;
    };
    for n in [1000u64, 5000] {
        let Some(out) = stdout_of(&exe, &[event, &n.to_string()]) else {
            return;
        };
        let got = count_of(out.trim());
        println!(
            "{link:?} {event}: {n} fresh pages -> {got} page faults (truth {n}..={})",
            n + SLACK
        );
        assert!(
            (n..=n + SLACK).contains(&got),
            "{event} over {n} fresh pages counted {got}, want {n}..={}",
            n + SLACK
        );
    }
}

#[test]
fn page_faults_of_fresh_pages_shared() {
    judge_fresh_pages(Link::Shared, "page-faults");
}

#[test]
fn page_faults_of_fresh_pages_static() {
    judge_fresh_pages(Link::Static, "page-faults");
}

#[test]
fn page_faults_by_freebsd_soft_name() {
    judge_fresh_pages(Link::Either, "SOFT-PAGE_FAULT.ALL");
}

/// `perf stat -e page-faults` counts the whole program, libpmc's set-up
/// included; the difference between two sizes is the pages' faults alone,
/// and must equal the difference of libpmc's counts.
#[test]
fn page_faults_agree_with_perf_stat() {
    if !pmc_testkit::cli::works("perf", &["stat", "-e", "page-faults", "--", "true"]) {
        skip!("perf stat does not run here");
        return;
    }
    let Some(exe) = build("pagefaults", Link::Either, "perf") else {
        return;
    };
    let mut ours = Vec::new();
    let mut perfs = Vec::new();
    for n in ["1000", "5000"] {
        let out = Command::new("perf")
            .env_remove("LD_LIBRARY_PATH")
            .args(["stat", "-x,", "-e", "page-faults", "--"])
            .arg(&exe)
            .args(["page-faults", n])
            .output()
            .expect("perf stat");
        assert!(
            out.status.success(),
            "perf stat failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        let perf_line = stderr
            .lines()
            .find(|l| l.contains("page-faults"))
            .unwrap_or_else(|| panic!("no page-faults line in {stderr}"));
        let perf: u64 = perf_line
            .split(',')
            .next()
            .and_then(|v| v.parse().ok())
            .expect("count");
        let mine = count_of(String::from_utf8_lossy(&out.stdout).trim());
        println!("N={n}: libpmc {mine}, perf stat (whole program) {perf}");
        assert!(
            mine <= perf,
            "libpmc counted {mine} > perf's whole-program {perf}"
        );
        ours.push(mine);
        perfs.push(perf);
    }
    let d_ours = ours[1] - ours[0];
    let d_perf = perfs[1].abs_diff(perfs[0]);
    println!("4000 more pages: libpmc +{d_ours}, perf stat +{d_perf}");
    assert!(
        d_ours.abs_diff(d_perf) <= 2 * SLACK,
        "4000 more pages: libpmc +{d_ours}, perf stat +{d_perf}"
    );
}

/// PMC_MODE_SC cpu-clock, one PMC per CPU, each read alone: each CPU's
/// count covers the spin (the spin runs between the last start and the
/// first stop), and none exceeds the wall time around all starts and stops.
#[test]
fn system_mode_cpu_clock_per_cpu() {
    let Some(exe) = build("system", Link::Either, "system") else {
        return;
    };
    let spin_ms = 200u64;
    let Some(out) = stdout_of(&exe, &["cpu-clock", &spin_ms.to_string()]) else {
        return;
    };
    print!("{out}");
    let value = |key: &str| {
        out.lines()
            .find(|l| l.starts_with(key))
            .map(count_of)
            .unwrap_or_else(|| panic!("no {key} in {out}"))
    };
    let wall = value("wall ");
    let cpus: Vec<u64> = out
        .lines()
        .filter(|l| l.starts_with("cpu "))
        .map(count_of)
        .collect();
    let ncpu = usize::try_from(
        nix::unistd::sysconf(nix::unistd::SysconfVar::_NPROCESSORS_CONF)
            .ok()
            .flatten()
            .unwrap_or(1),
    )
    .unwrap_or(1);
    assert_eq!(cpus.len(), ncpu, "one reading per CPU");
    for (cpu, ns) in cpus.iter().enumerate() {
        assert!(
            *ns >= spin_ms * 1_000_000 && *ns <= wall,
            "CPU {cpu}: cpu-clock {ns} ns, want between the spin {} ns and the wall time {wall} ns",
            spin_ms * 1_000_000
        );
    }
}

/// Every call's return value and errno (tests/c/api.c prints one line per
/// check).
#[test]
fn every_call_and_its_errors() {
    let Some(exe) = build("api", Link::Either, "api") else {
        return;
    };
    let have_pmu = Path::new("/sys/bus/event_source/devices/cpu").exists()
        || std::fs::read_dir("/sys/bus/event_source/devices")
            .map(|d| {
                d.flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with("armv8"))
            })
            .unwrap_or(false);
    let out = run(&exe, &[if have_pmu { "1" } else { "0" }]);
    let text = String::from_utf8_lossy(&out.stdout);
    print!("{text}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    let fails: Vec<&str> = text.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(
        fails.is_empty() && out.status.success(),
        "failed checks:\n{}",
        fails.join("\n")
    );
    assert!(text.lines().filter(|l| l.starts_with("ok ")).count() >= 60);
}

/// The extension's measurement (`pmc_measure_begin`, a group read, `pmc_measure_end`),
/// judged by fresh pages: N/2 touched before the mid-way group read, N/2 more in a thread
/// created after the measurement began; then its error paths (tests/c/measure.c).
#[test]
fn measurement_counts_fresh_pages_and_later_threads() {
    const N: u64 = 4000;
    // pthread_create maps and touches the new thread's stack and TLS inside the window.
    const THREAD_SLACK: u64 = 64;
    // Where only static programs were built (the PMU lab), the static one alone.
    let links: &[Link] = if std::env::var_os(PREBUILT_ENV).is_some() {
        &[Link::Static]
    } else {
        &[Link::Static, Link::Shared]
    };
    for &link in links {
        let Some(exe) = build("measure", link, &format!("measure-{link:?}")) else {
            return;
        };
        let out = run(&exe, &[&N.to_string()]);
        let text = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() == Some(2) && stderr.contains("pmc_init") {
            skip!("pmc_init failed here (no perf_event?): {stderr}");
            return;
        }
        print!("{text}");
        let fails: Vec<&str> = text.lines().filter(|l| l.starts_with("FAIL")).collect();
        assert!(
            fails.is_empty() && out.status.success(),
            "{link:?}: measure failed ({}): {stderr}\n{}",
            out.status,
            fails.join("\n")
        );
        let mid = numbers_of(&text, "mid ")[0];
        let end = numbers_of(&text, "end ");
        let (faults, clock_ns) = (end[0], end[1]);
        println!(
            "{link:?}: {} fresh pages -> {mid} page faults at the group read, {N} -> {faults} \
             at the end (the second half in a later thread), task-clock {clock_ns} ns",
            N / 2
        );
        assert!(
            (N / 2..=N / 2 + SLACK).contains(&mid),
            "mid-way group read: {mid} page faults for {} fresh pages",
            N / 2
        );
        assert!(
            (N..=N + SLACK + THREAD_SLACK).contains(&faults),
            "{faults} page faults for {N} fresh pages, half in a thread created after \
             pmc_measure_begin (a count near {} misses the later thread)",
            N / 2
        );
        assert!(clock_ns > 0, "task-clock counted nothing");
        assert!(text.lines().filter(|l| l.starts_with("ok ")).count() >= 16);
    }
}

/// Exact instruction counts through the C API (tests/c/instructions.c): a loop of exactly
/// 2 user instructions per iteration, so instructions:u at N and at 0 differ by exactly 2N,
/// through pmc(3) and through the extension's group; cycles:u too where cycles are exact
/// (the PMU lab's precise-icount boot, `PMC_LAB_BOOT=exact`). Without a PMU it skips, and
/// fails where one is required (`PMC_REQUIRE_HW=1`, the lab).
#[test]
fn instructions_of_an_exact_loop() {
    const N: u64 = 1_000_000;
    let Some(exe) = build("instructions", Link::Either, "instructions") else {
        return;
    };
    let out = run(&exe, &[&N.to_string()]);
    let text = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(3) || out.status.code() == Some(2) {
        let why = format!("instructions:u cannot be counted here: {}", stderr.trim());
        assert!(
            std::env::var("PMC_REQUIRE_HW").map_or(true, |v| v != "1"),
            "PMC_REQUIRE_HW=1 but {why}"
        );
        skip!("{why}");
        return;
    }
    assert!(
        out.status.success(),
        "instructions failed ({}): {stderr}{text}",
        out.status
    );
    print!("{text}");
    let two_n = 2 * N as i64;
    let pmc3: Vec<i64> = numbers_of(&text, "pmc3 ");
    let m: Vec<i64> = numbers_of(&text, "measure ");
    let exact_cycles = std::env::var("PMC_LAB_BOOT").is_ok_and(|b| b == "exact");
    let mut checks = vec![
        ("pmc(3) instructions:u", pmc3[0], pmc3[1]),
        ("pmc_measure instructions:u", m[0], m[1]),
    ];
    if exact_cycles {
        checks.push(("pmc_measure cycles:u", m[2], m[3]));
    }
    for (what, base, count) in checks {
        println!(
            "{what}: N=0 -> {base}, N={N} -> {count} (2N + {})",
            count - two_n
        );
        // The library's own user instructions around the loop, the same in both runs.
        assert!(base < 20_000, "{what}: the fixed cost is small, got {base}");
        assert!(
            (count - base - two_n).abs() <= 8,
            "{what}: {count} is not 2N + {base} (the loop is exactly 2N instructions)"
        );
    }
}

/// The README's C examples build against the header and library and run: pmc(3) as
/// FreeBSD has it (tests/c/readme_example.c), then the extension's measurement
/// (tests/c/readme_measure.c).
#[test]
fn readme_examples_build_and_run() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .expect("README.md");
    let section = readme
        .split("## C library")
        .nth(1)
        .expect("the README's C library section");
    let examples: Vec<&str> = section
        .split("```c\n")
        .skip(1)
        .filter_map(|s| s.split("```").next())
        .collect();
    let names = ["readme_example", "readme_measure"];
    assert_eq!(
        examples.len(),
        names.len(),
        "the README's C library section has {} ```c blocks: {names:?} are kept in tests/c",
        examples.len()
    );
    for (name, example) in names.iter().zip(&examples) {
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/c")
            .join(format!("{name}.c"));
        // Kept as a file too, so the example is in the tree as C.
        let kept = std::fs::read_to_string(&src).unwrap_or_default();
        assert_eq!(
            &kept, example,
            "tests/c/{name}.c differs from the README's example: copy the README's block there"
        );
        let Some(exe) = build(name, Link::Either, "readme") else {
            return;
        };
        let Some(out) = stdout_of(&exe, &[]) else {
            return;
        };
        print!("{out}");
        assert!(out.ends_with("page faults\n"), "{out}");
    }
}

/// PMC_MODE_TS cpu-clock into a log through pmc_configure_logfile: the
/// samples' periods add up to the CPU time the process spent between start
/// and stop (getrusage), and pmc_writelog's user data is in the log.
#[test]
fn process_sampling_into_the_log() {
    let Some(exe) = build("sample", Link::Either, "sample") else {
        return;
    };
    let dir = pmc_testkit::workdir("pmc-capi-c");
    let log = dir.join("sample.pmclog");
    let period: u64 = 1_000_000;
    let Some(out) = stdout_of(
        &exe,
        &[
            log.to_str().expect("UTF-8 path"),
            "300",
            &period.to_string(),
        ],
    ) else {
        return;
    };
    print!("{out}");
    let value = |key: &str| {
        out.lines()
            .find(|l| l.starts_with(key))
            .map(count_of)
            .unwrap_or_else(|| panic!("no {key} in {out}"))
    };
    let (pid, cpu_ns) = (value("pid "), value("self "));
    let bytes = std::fs::read(&log).expect("the log");
    let reader = pmc_log::read::Reader::new(&bytes).expect("a pmc-log file");
    let (mut samples, mut sampled_ns, mut userdata) = (0u64, 0u64, false);
    for r in reader.records() {
        match r {
            pmc_log::record::Record::Sample(s) if u64::try_from(s.pid).ok() == Some(pid) => {
                samples += 1;
                sampled_ns += if s.period == 0 { period } else { s.period };
            }
            pmc_log::record::Record::UserData(u) => {
                userdata |= u.data.0.as_ref() == 0xC0FFEEu32.to_le_bytes()
            }
            _ => {}
        }
    }
    println!("{samples} samples of {period} ns: {sampled_ns} ns sampled, {cpu_ns} ns of CPU time (getrusage)");
    assert!(
        sampled_ns.abs_diff(cpu_ns) <= cpu_ns / 10 + 2 * period,
        "{sampled_ns} ns sampled against {cpu_ns} ns of CPU time"
    );
    assert!(userdata, "pmc_writelog(0xC0FFEE) left no user-data record");

    // pmclog(3) reads the same log back, from the descriptor and fed in
    // pieces, and finds what pmc-log's reader found.
    let Some(reader_exe) = build("readlog", Link::Either, "readlog") else {
        return;
    };
    for mode in ["fd", "feed"] {
        let Some(text) = stdout_of(
            &reader_exe,
            &[log.to_str().expect("UTF-8"), &pid.to_string(), mode],
        ) else {
            return;
        };
        println!("pmclog_read ({mode}):\n{text}");
        for want in [
            "initialize version 0xa030000".to_string(),
            format!("allocate cpu-clock {period} event 0"),
            format!("samples {pid} {samples}"),
            "userdata 0xc0ffee".to_string(),
            "end EOF".to_string(),
        ] {
            assert!(
                text.lines().any(|l| l == want),
                "pmclog ({mode}) has no line {want:?}:\n{text}"
            );
        }
    }
}

/// pmclog(3) over a FreeBSD hwpmc log (written by pmc-log's encoder of the
/// kernel's format): every CALLCHAIN of the pid, its user/kernel flag, the
/// user data and the CLOSELOG end, from the descriptor and fed in pieces.
#[test]
fn pmclog_reads_an_hwpmc_log() {
    use pmc_log::hwpmc::Encoder;
    let Some(exe) = build("readlog", Link::Either, "hwpmc") else {
        return;
    };
    let mut enc = Encoder::new(Vec::new());
    enc.initialize(
        1,
        0x0A03_0000,
        0x400,
        1_000_000_000,
        1_700_000_000,
        0,
        "GenuineIntel-6-55-4",
    )
    .expect("encode");
    enc.pmc_allocate(2, 0x0001_0001, 0x20000, 0, 65536)
        .expect("encode");
    let (mut user, mut kernel) = (0, 0);
    for i in 0..37u64 {
        let is_user = i % 3 != 0;
        if is_user {
            user += 1;
        } else {
            kernel += 1;
        }
        let pcs: Vec<u64> = (0..=(i % 5)).map(|d| 0x40_1000 + i * 16 + d).collect();
        enc.callchain(
            10 + i,
            4242,
            4243,
            0x0001_0001,
            (i % 2) as u16,
            is_user,
            &pcs,
        )
        .expect("encode");
        // Another process's samples are not counted for 4242.
        enc.callchain(10 + i, 99, 99, 0x0001_0001, 0, true, &[0x1000])
            .expect("encode");
    }
    enc.userdata(100, 0xC0FFEE).expect("encode");
    enc.closelog(101).expect("encode");
    let dir = pmc_testkit::workdir("pmc-capi-c");
    let log = dir.join("synthetic.hwpmc");
    std::fs::write(&log, enc.into_inner()).expect("write the log");
    for mode in ["fd", "feed"] {
        let Some(text) = stdout_of(&exe, &[log.to_str().expect("UTF-8"), "4242", mode]) else {
            return;
        };
        println!("pmclog_read of an hwpmc log ({mode}):\n{text}");
        for want in [
            "allocate event=0x20000 0 event 0x20000".to_string(),
            "samples 4242 37".to_string(),
            format!("user {user} kernel {kernel}"),
            "userdata 0xc0ffee".to_string(),
            "end EOF".to_string(),
        ] {
            assert!(
                text.lines().any(|l| l == want),
                "pmclog ({mode}) has no line {want:?}:\n{text}"
            );
        }
    }
}

/// Python binds libpmc.so with ctypes as it is: N fresh pages touched from
/// Python give at least N page faults, and not many more (the interpreter's
/// own work inside the window: a loop of byte stores, no allocation).
#[test]
fn python_ctypes_counts_fresh_pages() {
    let so = lib_dir().join("libpmc.so");
    if !so.exists() {
        skip!("no {} beside this test binary", so.display());
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/pagefaults.py");
    let n = 2000u64;
    let out = match Command::new("python3")
        .arg(&script)
        .arg(&so)
        .arg(n.to_string())
        .env_remove("LD_LIBRARY_PATH")
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            skip!("no python3: {e}");
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python3 pagefaults.py failed: {}{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = count_of(stdout.trim());
    println!("python ctypes: {n} fresh pages -> {got} page faults");
    assert!(
        (n..=n + 4 * SLACK).contains(&got),
        "{n} fresh pages from Python counted {got}, want {n}..={}",
        n + 4 * SLACK
    );
}

/// Several threads allocate, attach, start, stop, read and release at
/// once: distinct ids, and each count between its own pages and everyone's
/// (plus slack for the other threads' stacks and heap growth inside the
/// window).
#[test]
fn threads_use_the_library_at_once() {
    let Some(exe) = build("threads", Link::Either, "threads") else {
        return;
    };
    let (threads, n) = (4u64, 2000u64);
    let Some(out) = stdout_of(&exe, &[&threads.to_string(), &n.to_string()]) else {
        return;
    };
    print!("{out}");
    let rows: Vec<(String, u64)> = out
        .lines()
        .filter(|l| l.starts_with("thread "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[2].to_string(), count_of(l))
        })
        .collect();
    assert_eq!(rows.len() as u64, threads, "one row per thread");
    let mut ids: Vec<&String> = rows.iter().map(|(id, _)| id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len() as u64, threads, "ids are distinct: {out}");
    for (id, count) in &rows {
        assert!(
            (n..=threads * n + 4 * threads * SLACK).contains(count),
            "PMC {id}: {count} page faults, want {n}..={}",
            threads * n + 4 * threads * SLACK
        );
    }
}

/// `libpmc.pc` gives the flags a program builds and links with: the
/// README's example through `pkg-config --cflags --libs libpmc`, over a
/// prefix laid out as an install would be.
#[test]
fn pkg_config_file_builds_the_example() {
    if !pmc_testkit::cli::works("pkg-config", &["--version"]) {
        skip!("no pkg-config");
        return;
    }
    let lib = lib_dir();
    if !lib.join("libpmc.so").exists() {
        skip!("no libpmc.so beside this test binary");
        return;
    }
    // prefix/lib -> the built library, prefix/include -> the headers.
    let prefix = pmc_testkit::workdir("pmc-capi-pc");
    for (link, to) in [("lib", lib.clone()), ("include", include_dir())] {
        let at = prefix.join(link);
        let _ = std::fs::remove_file(&at);
        std::os::unix::fs::symlink(&to, &at).expect("symlink");
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("pkg-config")
        .env("PKG_CONFIG_PATH", manifest)
        .arg(format!("--define-variable=prefix={}", prefix.display()))
        .args(["--cflags", "--libs", "libpmc"])
        .output()
        .expect("pkg-config");
    assert!(
        out.status.success(),
        "pkg-config: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let flags = String::from_utf8_lossy(&out.stdout).to_string();
    println!("pkg-config --cflags --libs libpmc: {flags}");
    let exe = prefix.join("readme-pc");
    let mut cc = Command::new("cc");
    cc.arg("-o")
        .arg(&exe)
        .arg(manifest.join("tests/c/readme_example.c"))
        .args(flags.split_whitespace())
        .arg("-Wl,--disable-new-dtags")
        .arg(format!("-Wl,-rpath,{}", prefix.join("lib").display()));
    let built = match cc.output() {
        Ok(o) => o,
        Err(e) => {
            skip!("no C compiler (cc): {e}");
            return;
        }
    };
    assert!(
        built.status.success(),
        "cc with pkg-config's flags: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let Some(text) = stdout_of(&exe, &[]) else {
        return;
    };
    assert!(text.ends_with("page faults\n"), "{text}");
}

/// pmc_attach to another process: a child's N fresh pages, counted from
/// the parent, give N page faults (plus the child's copy-on-write faults of
/// its stack after the fork and its exit: a little slack).
#[test]
fn counting_a_child_process() {
    let Some(exe) = build("child", Link::Either, "child") else {
        return;
    };
    let n = 3000u64;
    let Some(out) = stdout_of(&exe, &[&n.to_string()]) else {
        return;
    };
    let got = count_of(out.trim());
    println!(
        "child: {n} fresh pages -> {got} page faults (truth {n}..={})",
        n + 4 * SLACK
    );
    assert!(
        (n..=n + 4 * SLACK).contains(&got),
        "the child's {n} fresh pages counted {got}"
    );
}
