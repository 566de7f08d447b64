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

/// C, and C++ where programs are built here: where they were built beforehand
/// (`PMC_CAPI_PREBUILT`, the PMU lab's C programs), C alone.
fn langs() -> &'static [bool] {
    if std::env::var_os(PREBUILT_ENV).is_some() {
        &[false]
    } else {
        &[false, true]
    }
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
    build_as(name, link, tag, false)
}

/// [`build`], as C++ with `cxx` (`c++ -x c++`: the FreeBSD programs here are
/// C that a C++ program could be, and the headers must take both).
fn build_as(name: &str, link: Link, tag: &str, cxx: bool) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(PREBUILT_ENV) {
        if cxx {
            skip!("{PREBUILT_ENV} holds C programs only: no C++ build here");
            return None;
        }
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
    let src = dir.join(format!("{name}-{tag}{}.c", if cxx { "-cxx" } else { "" }));
    std::fs::write(&src, source(name)).expect("write the C source");
    let suffix = if matches!(link, Link::Shared) {
        "so"
    } else {
        "a"
    };
    let exe = dir.join(format!(
        "{name}-{suffix}-{tag}{}",
        if cxx { "-cxx" } else { "" }
    ));
    let mut cc = Command::new(if cxx { "c++" } else { "cc" });
    if cxx {
        cc.args(["-x", "c++"]);
    }
    cc.arg(format!("-I{}", include_dir().display()))
        // tests/c/portable.h, which the programs include by name.
        .arg(format!(
            "-I{}",
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/c")
                .display()
        ))
        // The OS headers FreeBSD programs include that Linux lacks (tests/shim/README).
        .arg(format!(
            "-I{}",
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/shim")
                .display()
        ))
        .arg("-D_GNU_SOURCE")
        .args(["-O1", "-Wall", "-Werror", "-D_DEFAULT_SOURCE"])
        .arg(if cxx { "-std=c++17" } else { "-std=c99" })
        .arg("-o")
        .arg(&exe)
        .arg(&src);
    if cxx {
        // What follows the source is linked as it is.
        cc.args(["-x", "none"]);
    }
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
            skip!(
                "no compiler ({}) to build {name}: {e}",
                if cxx { "c++" } else { "cc" }
            );
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
    judge_fresh_pages_as(link, event, false);
}

/// pmc(3)'s "Typical Program Flow" (tests/c/pagefaults.c) over N fresh pages,
/// built as C or C++.
fn judge_fresh_pages_as(link: Link, event: &str, cxx: bool) {
    let Some(exe) = build_as("pagefaults", link, &format!("{link:?}-{event}"), cxx) else {
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

/// The same program built as C++ (the headers take both).
#[test]
fn page_faults_of_fresh_pages_cxx() {
    if langs().contains(&true) {
        judge_fresh_pages_as(Link::Either, "page-faults", true);
    }
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
            format!("allocate cpu-clock {period} event 0x30000 flags 0 id 0xfff20f00"),
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
/// user data and the CLOSELOG end, from the descriptor and fed in pieces;
/// each allocation as written (ids, event codes, flags 0x8e, and
/// PMCALLOCATEDYN with its name).
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
    // As FreeBSD writes them: the TSC with PMC_F_DESCENDANTS | LOG_PROCCSW |
    // LOG_PROCEXIT | CALLCHAIN (0x8e), a SOFT event by its name.
    enc.pmc_allocate(2, 0x0003_0001, 0x1000, 0x8e, 0)
        .expect("encode");
    enc.pmc_allocate_dyn(2, 0x0002_0002, 0x20001, 0x80, 1000, "CLOCK.HARD")
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
    let raw = enc.into_inner();
    std::fs::write(&log, &raw).expect("write the log");
    // The same log imported into pmc-log (as pmcstat converts one) reads the same.
    let imported = dir.join("imported.pmclog");
    let (bytes, _) = pmc_log::hwpmc::convert(&raw, Vec::new()).expect("convert");
    std::fs::write(&imported, bytes).expect("write the imported log");
    for (file, mode) in [(&log, "fd"), (&log, "feed"), (&imported, "fd")] {
        let Some(text) = stdout_of(&exe, &[file.to_str().expect("UTF-8"), "4242", mode]) else {
            return;
        };
        println!("pmclog_read of an hwpmc log ({mode}):\n{text}");
        for want in [
            "allocate SOFT-PAGE_FAULT.ALL 65536 event 0x20000 flags 0 id 0x10001".to_string(),
            "allocate TSC 0 event 0x1000 flags 0x8e id 0x30001".to_string(),
            "allocatedyn CLOCK.HARD event 0x20001 flags 0x80 id 0x20002".to_string(),
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
    // pmcstat -R prints each allocation's pl_flags as the records wrote them
    // (FreeBSD's pmcstat_print_log), from the hwpmc log and the imported one.
    let Some(pmcstat) = pmcstat_exe() else {
        return;
    };
    for file in [&log, &imported] {
        let r = pmcstat_r(&pmcstat, file);
        let mut allocs = pmcstat_allocs(&r);
        allocs.sort();
        let want = [
            ("allocate", 0x1_0001, 0),
            ("allocate", 0x3_0001, 0x8e),
            ("allocatedyn", 0x2_0002, 0x80),
        ]
        .map(|(k, id, f)| (k.to_string(), id, f));
        assert_eq!(allocs, want, "pmcstat -R {}:\n{r}", file.display());
    }
}

/// The Python module (`libpmc/python`, ctypes over libpmc.so, its constants,
/// structs and signatures generated from the headers' table), installed with
/// pip from a copy of the repository's directory, counts N fresh pages
/// touched from Python: at least N page faults and a few more (the
/// interpreter's own, inside the window); its errors carry the manual
/// pages' errno; and each ctypes struct has the size the C compiler gives
/// the headers' (`LAYOUTS`, checked against C by tests/header.rs).
#[test]
fn python_module_counts_fresh_pages() {
    let so = lib_dir().join("libpmc.so");
    if !so.exists() {
        skip!("no {} beside this test binary", so.display());
        return;
    }
    if !pmc_testkit::cli::works("python3", &["-c", "import setuptools, wheel"]) {
        skip!("no python3 with setuptools and wheel to install the module (ci/setup.sh)");
        return;
    }
    let dir = pmc_testkit::workdir("pmc-capi-python");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("python");
    let copy = dir.join("src");
    let target = dir.join("site");
    let _ = std::fs::remove_dir_all(&copy);
    std::fs::create_dir_all(copy.join("libpmc")).expect("mkdir");
    for f in [
        "pyproject.toml",
        "README.md",
        "libpmc/__init__.py",
        "libpmc/_abi.py",
    ] {
        std::fs::copy(src.join(f), copy.join(f)).expect("copy the package");
    }
    let pip = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-build-isolation",
            "--no-deps",
            "--disable-pip-version-check",
            "--target",
        ])
        .arg(&target)
        .arg(&copy)
        .output()
        .expect("pip");
    assert!(
        pip.status.success(),
        "pip install libpmc/python: {}",
        String::from_utf8_lossy(&pip.stderr)
    );
    let n = 2000u64;
    let out = Command::new("python3")
        .arg(src.join("tests/pagefaults.py"))
        .arg(n.to_string())
        .env("PYTHONPATH", &target)
        .env("LIBPMC", &so)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python3 pagefaults.py failed: {}{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = numbers_of::<u64>(&stdout, "page-faults ")[0];
    println!("python module: {n} fresh pages -> {got} page faults");
    assert!(
        (n..=n + 4 * SLACK).contains(&got),
        "{n} fresh pages from Python counted {got}, want {n}..={}",
        n + 4 * SLACK
    );
    assert!(!stdout.contains("FAIL"), "{stdout}");
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok ")).count(),
        3,
        "{stdout}"
    );
    assert!(stdout.contains("event TSC\n"), "{stdout}");
    let sizes = fields(&stdout, "sizeof");
    let mut checked = 0;
    for (name, visible, size, _) in pmc::abi::LAYOUTS {
        let tag = name.rsplit(' ').next().unwrap_or(name);
        if let Some(f) = sizes.iter().find(|f| f[0] == tag) {
            assert_eq!(
                f[1].parse::<usize>().ok(),
                Some(*size),
                "ctypes' sizeof({name})"
            );
            checked += usize::from(*visible);
        }
    }
    assert!(checked >= 60, "{checked} ctypes structs checked");
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

/// An independent check of every prototype: FreeBSD 14's, transcribed as data
/// from its `lib/libpmc/pmc.h` and `pmclog.h` (`tests/facts/`), asserted
/// against this library's headers in a C translation unit
/// (`__builtin_types_compatible_p`) and a C++ one (`std::is_same`, which also
/// tells an enum from the integer it is compatible with).
#[test]
fn every_prototype_is_freebsd_14s() {
    let facts = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/facts/freebsd14-prototypes.txt"),
    )
    .expect("the facts");
    let protos: Vec<(String, String, String)> = facts
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (decl, params) = l
                .trim_end_matches(';')
                .split_once('(')
                .expect("a prototype");
            let params = params.strip_suffix(')').expect("a parameter list");
            let at = decl.rfind([' ', '*']).expect("a name");
            let (ret, name) = (decl[..=at].trim(), decl[at + 1..].trim());
            (ret.to_string(), name.to_string(), params.to_string())
        })
        .collect();
    assert_eq!(
        protos.len(),
        47,
        "FreeBSD 14's libpmc declares 43 + 4 functions"
    );
    let mut c = String::from("#include <pmc.h>\n#include <pmclog.h>\n");
    let mut cxx = String::from("#include <type_traits>\n#include <pmc.h>\n#include <pmclog.h>\n");
    for (ret, name, params) in &protos {
        c += &format!(
            "_Static_assert(__builtin_types_compatible_p(__typeof__(&{name}), {ret} (*)({params})), \"{name}\");\n"
        );
        cxx += &format!(
            "static_assert(std::is_same<decltype(&{name}), {ret} (*)({params})>::value, \"{name}\");\n"
        );
    }
    let dir = pmc_testkit::workdir("pmc-capi-c");
    for (lang, src, compiler, std) in [
        ("c", &c, "cc", "-std=c11"),
        ("cc", &cxx, "c++", "-std=c++17"),
    ] {
        let file = dir.join(format!("prototypes.{lang}"));
        std::fs::write(&file, src).expect("write");
        let out = match Command::new(compiler)
            .arg(format!("-I{}", include_dir().display()))
            .args(["-fsyntax-only", "-Wall", "-Werror", std])
            .arg(&file)
            .output()
        {
            Ok(o) => o,
            Err(e) => {
                skip!("no {compiler}: {e}");
                return;
            }
        };
        assert!(
            out.status.success(),
            "a prototype differs from FreeBSD 14's ({compiler}):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    println!("{} prototypes are FreeBSD 14's, in C and C++", protos.len());
}

/// `nobody`'s uid and gid, when this runs as root and the user exists.
fn nobody() -> Option<(u32, u32)> {
    if !nix::unistd::geteuid().is_root() {
        skip!("not root: cannot run the unprivileged cases as `nobody`");
        return None;
    }
    match nix::unistd::User::from_name("nobody") {
        Ok(Some(u)) => Some((u.uid.as_raw(), u.gid.as_raw())),
        _ => {
            skip!("no user `nobody`");
            None
        }
    }
}

/// The program's "ok"/"FAIL"/"na" lines: the oks, after failing the test on a FAIL.
fn judged(what: &str, out: &Output) -> usize {
    let text = String::from_utf8_lossy(&out.stdout);
    print!("{text}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    let fails: Vec<&str> = text.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(
        fails.is_empty() && out.status.success(),
        "{what} ({}):\n{}",
        out.status,
        fails.join("\n")
    );
    text.lines().filter(|l| l.starts_with("ok ")).count()
}

/// Every ERRORS entry of the manual pages, one check each (tests/c/errno.c),
/// as C and as C++; the privilege cases (EPERM) as `nobody`, with a static
/// program in a directory `nobody` can reach.
#[test]
fn errno_as_the_manual_pages_say() {
    for &cxx in langs() {
        let Some(exe) = build_as("errno", Link::Either, "errno", cxx) else {
            return;
        };
        let oks = judged("errno.c", &run(&exe, &["root"]));
        assert!(oks >= 60, "{oks} checks");
        println!(
            "errno.c ({}): {oks} ERRORS entries as documented",
            if cxx { "C++" } else { "C" }
        );
    }
    let Some((uid, gid)) = nobody() else {
        return;
    };
    let Some(exe) = build("errno", Link::Static, "errno-user") else {
        return;
    };
    let dir = pmc_testkit::workdir("pmc-capi-nobody");
    let copy = dir.join("errno");
    std::fs::copy(&exe, &copy).expect("copy the program");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut cmd = Command::new(&copy);
    cmd.arg("user").current_dir("/");
    pmc_testkit::cli::as_user(&mut cmd, uid, gid);
    let out = cmd.output().expect("run as nobody");
    let oks = judged("errno.c as nobody", &out);
    // Where any user may count system-wide (perf_event_paranoid <= 0: the PMU lab's guest
    // sets -1), the system scope case cannot fail and says why ("na").
    let na = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("na "))
        .count();
    assert_eq!(
        (oks, oks + na),
        (4 - na, 4),
        "the four unprivileged cases (EPERM)"
    );
}

/// The number after `key` on each line starting with `key ` (hex or decimal fields).
fn fields(text: &str, key: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{key} ")))
        .map(|l| l.split_whitespace().skip(1).map(str::to_string).collect())
        .collect()
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or_else(|_| panic!("{s} is not hex"))
}

/// The log a C client reads describes its own PMCs (tests/c/logflow.c, a
/// program written from the manual pages): its PMCALLOCATE records carry the
/// ids `pmc_allocate` returned, `pmc_pmcinfo`'s event codes (which
/// `pmc_name_of_event` names) and the `PMC_F_*` flags given; PMCATTACH and
/// PMCDETACH records name the processes attached; each of the two targets of
/// the counting PMC has one PROCEXIT, the child's with its page faults (N
/// fresh pages, and no more than wait4's rusage), the other's though it exits
/// after the stop; the samples carry the sampling PMC's id. `pmcstat -R` of
/// the same log (when pmcstat is built) finds the same ids and flags.
#[test]
fn the_log_describes_the_clients_own_pmcs() {
    for &cxx in langs() {
        if !judge_logflow(cxx) {
            return;
        }
    }
}

/// [`the_log_describes_the_clients_own_pmcs`] of the C or the C++ build
/// (`pmcstat -R` of the C one's log); false after a skip.
fn judge_logflow(cxx: bool) -> bool {
    const N: u64 = 2000;
    let Some(exe) = build_as("logflow", Link::Either, "logflow", cxx) else {
        return false;
    };
    let dir = pmc_testkit::workdir("pmc-capi-c");
    let log = dir.join(format!("logflow-{cxx}.pmclog"));
    let Some(text) = stdout_of(&exe, &[log.to_str().expect("UTF-8"), &N.to_string()]) else {
        return false;
    };
    print!("{text}");
    let ids = &fields(&text, "ids")[0];
    let (cnt, samp) = (hex(&ids[0]), hex(&ids[1]));
    assert_eq!(
        (cnt, samp),
        (0xFFF3_0F00, 0xFFF2_0F00),
        "PMC_ID_MAKE_ID(PMC_CPU_ANY, mode, SOFT, 0)"
    );
    let pids = &fields(&text, "pids")[0];
    let (kid, other) = (pids[0].clone(), pids[1].clone());
    let info = fields(&text, "pmcinfo");
    let event_of = |mode: &str, flags: &str| -> String {
        info.iter()
            .find(|f| f[0] == mode && f[1] == flags)
            .unwrap_or_else(|| panic!("no pmc_pmcinfo row of mode {mode} flags {flags}: {info:?}"))
            [2]
        .clone()
    };
    let (ev_cnt, ev_samp) = (event_of("3", "0xa"), event_of("2", "0x80"));
    let allocs = fields(&text, "allocate");
    for (id, ev, flags, rate) in [
        (cnt, &ev_cnt, "0xa", "0"),
        (samp, &ev_samp, "0x80", "1000000"),
    ] {
        assert!(
            allocs.iter().any(|a| hex(&a[0]) == id && a[1] == *ev && a[2] == flags && a[3] == rate),
            "no PMCALLOCATE of {id:#x} with pmc_pmcinfo's event {ev}, flags {flags}, rate {rate}: {allocs:?}"
        );
    }
    let attach = fields(&text, "attach");
    for (id, pid) in [(cnt, &kid), (samp, &kid), (cnt, &other), (samp, &other)] {
        assert!(
            attach.iter().any(|a| hex(&a[0]) == id && a[1] == *pid),
            "no PMCATTACH of {id:#x} to {pid}: {attach:?}"
        );
    }
    assert!(
        fields(&text, "detach")
            .iter()
            .any(|d| hex(&d[0]) == samp && d[1] == other),
        "no PMCDETACH of {samp:#x} from {other}"
    );
    // Each target's exit has its PROCEXIT, whatever the other target does (hwpmc's
    // pmc_process_exit logs per process): the child's while the other still ran, the
    // other's after the stop. Judged by the kernel's own count of each child's faults
    // (wait4's rusage, its whole life: more than the PMC saw, never less).
    let exit = fields(&text, "procexit");
    let rusage = fields(&text, "rusage");
    let faults_of = |pid: &str| -> u64 {
        rusage
            .iter()
            .find(|r| r[0] == pid)
            .unwrap_or_else(|| panic!("no rusage of {pid}"))[1]
            .parse()
            .expect("faults")
    };
    let exit_of = |pid: &str| -> u64 {
        let mine: Vec<&Vec<String>> = exit
            .iter()
            .filter(|e| hex(&e[0]) == cnt && e[1] == pid)
            .collect();
        assert_eq!(
            mine.len(),
            1,
            "one PROCEXIT of {cnt:#x} for {pid}: {exit:?}"
        );
        mine[0][2].parse().expect("count")
    };
    let v = exit_of(&kid);
    let ru = faults_of(&kid);
    println!("PROCEXIT: the child's {N} fresh pages -> {v} page faults (rusage {ru})");
    assert!(
        (N..=N + 4 * SLACK).contains(&v) && v <= ru,
        "PROCEXIT {v} for {N} fresh pages, rusage {ru}"
    );
    let (v, ru) = (exit_of(&other), faults_of(&other));
    println!("PROCEXIT: the other child (exits after the stop) -> {v} (rusage {ru})");
    assert!(v <= ru, "PROCEXIT {v} of the other child, rusage {ru}");
    let samples = fields(&text, "samples");
    let s: u64 = samples
        .iter()
        .find(|s| hex(&s[0]) == samp && s[1] == kid)
        .unwrap_or_else(|| panic!("no CALLCHAIN of {samp:#x} for {kid}: {samples:?}"))[2]
        .parse()
        .expect("count");
    assert!(s >= 50, "{s} samples of 1 ms over 200 ms of CPU time");
    assert!(
        samples.iter().all(|s| hex(&s[0]) == samp),
        "samples of other ids: {samples:?}"
    );
    assert!(
        text.contains("userdata 0xc0ffee\n") && text.ends_with("end EOF\n"),
        "{text}"
    );

    if cxx {
        return true;
    }
    // pmcstat -R, the project's reader of the same log.
    let Some(pmcstat) = pmcstat_exe() else {
        return true;
    };
    let r = pmcstat_r(&pmcstat, &log);
    // pl_flags as the C client's pmclog_read gave them (the PMC_F_* values
    // it passed to pmc_allocate): pmcstat -R prints the same.
    for a in &allocs {
        let want = (hex(&a[0]), hex(&a[2]));
        assert!(
            pmcstat_allocs(&r).iter().any(|&(_, id, f)| (id, f) == want),
            "pmcstat -R has no allocate of {:#x} with pmclog_read's flags {:#x}:\n{r}",
            want.0,
            want.1
        );
    }
    for want in [
        format!("{cnt:#x} \"{PAGE_FAULTS}\""),
        format!("{samp:#x} \"cpu-clock\""),
        format!("{cnt:#x} {kid}"),
        format!("{samp:#x} {other}"),
    ] {
        assert!(r.contains(&want), "pmcstat -R has no {want:?}:\n{r}");
    }
    let callchains = r
        .lines()
        .filter(|l| l.starts_with("callchain") && l.contains(&format!("{samp:#x}")))
        .count();
    assert_eq!(callchains as u64, s, "pmcstat -R's callchains of {samp:#x}");
    true
}

/// The pmcstat built beside this test; `None` after a visible skip.
fn pmcstat_exe() -> Option<PathBuf> {
    let pmcstat = lib_dir().parent().map(|d| d.join("pmcstat"));
    let found = pmcstat.filter(|p| p.exists());
    if found.is_none() {
        skip!("no pmcstat built beside the test (cargo build -p pmcstat)");
    }
    found
}

/// `pmcstat -R LOG`'s output (pmcstat(8)'s record listing).
fn pmcstat_r(pmcstat: &Path, log: &Path) -> String {
    let out = Command::new(pmcstat)
        .arg("-R")
        .arg(log)
        .output()
        .expect("pmcstat -R");
    assert!(
        out.status.success(),
        "pmcstat -R {}: {}",
        log.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The `allocate`/`allocatedyn` lines of `pmcstat -R`'s output, as
/// pmcstat(8) prints them ("0x%x \"%s\" 0x%x", `pl_pmcid`, `pl_evname`,
/// `pl_flags`): (which, id, flags).
fn pmcstat_allocs(r: &str) -> Vec<(String, u64, u64)> {
    r.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let kind = w.next().filter(|k| k.starts_with("allocate"))?;
            let id = hex(w.next()?);
            Some((kind.to_string(), id, hex(w.last()?)))
        })
        .collect()
}

/// The page-fault event's name as the C programs spell it (portable.h).
const PAGE_FAULTS: &str = "page-faults";

/// pmclog(3)'s parser on FreeBSD's record-parsing cases (tests/c/parse.c,
/// built with `<sys/pmclog.h>`'s structs and macros: a single PC, kernel
/// mode at full depth, no PC, the records fed a byte at a time, malformed
/// lengths and magic, from memory and from a file), as C and C++; then real
/// logs with a byte flipped: a log libpmc wrote on this machine (every flip
/// is caught by pmc-log's CRCs) and an hwpmc log with a record length
/// damaged: each read ends in PMCLOG_ERROR with errno EINVAL and a message,
/// never a silent PMCLOG_EOF short of the records.
#[test]
fn pmclog_parses_as_freebsds_and_reports_damage() {
    for &cxx in langs() {
        let Some(exe) = build_as("parse", Link::Either, "parse", cxx) else {
            return;
        };
        let oks = judged("parse.c", &run(&exe, &[]));
        assert!(oks >= 14, "{oks} cases");
    }
    let Some(parse) = build("parse", Link::Either, "parse") else {
        return;
    };
    let Some(logflow) = build("logflow", Link::Either, "parse-logflow") else {
        return;
    };
    let dir = pmc_testkit::workdir("pmc-capi-c");
    let real = dir.join("real.pmclog");
    if stdout_of(&logflow, &[real.to_str().expect("UTF-8"), "500"]).is_none() {
        return;
    }
    let read = |bytes: &[u8], name: &str| -> (u64, String) {
        let p = dir.join(name);
        std::fs::write(&p, bytes).expect("write the log");
        let text = stdout_of(&parse, &[p.to_str().expect("UTF-8")]).expect("parse runs");
        let events = numbers_of::<u64>(&text, "events ")[0];
        let end = text
            .lines()
            .find(|l| l.starts_with("end "))
            .expect("an end")
            .to_string();
        (events, end)
    };
    let intact = std::fs::read(&real).expect("the log");
    let (all, end) = read(&intact, "intact.pmclog");
    assert_eq!(end, "end EOF 0", "the intact log");
    for frac in [3, 2] {
        let mut damaged = intact.clone();
        let at = damaged.len() * (frac - 1) / frac;
        damaged[at] ^= 0x40;
        let (n, end) = read(&damaged, "flipped.pmclog");
        println!(
            "pmc-log: byte {at} of {} flipped: {n} of {all} events, {end}",
            intact.len()
        );
        assert_eq!(
            end,
            format!("end ERROR {}", libc::EINVAL),
            "byte {at} flipped"
        );
        assert!(n < all);
    }
    // An hwpmc log: the 3rd record's length damaged (not a whole number of words).
    let mut enc = pmc_log::hwpmc::Encoder::new(Vec::new());
    enc.initialize(1, 0x0A03_0000, 0x400, 1_000_000_000, 1, 0, "x")
        .expect("encode");
    enc.pmc_allocate(2, 0xFFF2_0F00, 0x20000, 0, 1000)
        .expect("encode");
    for i in 0..10 {
        enc.callchain(3 + i, 7, 7, 0xFFF2_0F00, 0, true, &[1, 2, 3])
            .expect("encode");
    }
    enc.closelog(40).expect("encode");
    let mut hw = enc.into_inner();
    let (all, end) = read(&hw, "hwpmc.log");
    assert_eq!(
        (all, end.as_str()),
        (12, "end EOF 0"),
        "the intact hwpmc log"
    );
    let third = 112 + 40;
    hw[third] ^= 0x02;
    let (n, end) = read(&hw, "hwpmc-damaged.log");
    assert_eq!(
        (n, end),
        (2, format!("end ERROR {}", libc::EINVAL)),
        "the damaged hwpmc log"
    );
}

/// Issue 32, item 13: at the system's limits the library fails a call with
/// the right errno, and the program lives on (tests/c/limits.c). A log pipe
/// whose reader closed mid-run: the next log calls fail with EPIPE, and no
/// SIGPIPE kills the program (its disposition is the default one). No file
/// descriptor left: attaching and allocating fail with EMFILE, not ESRCH.
#[test]
fn the_library_at_the_systems_limits() {
    let Some(exe) = build("limits", Link::Either, "limits") else {
        return;
    };
    let call = |text: &str, name: &str| -> (i64, i32) {
        let f = fields(text, name);
        let f = f
            .first()
            .unwrap_or_else(|| panic!("no {name} line:\n{text}"));
        (f[0].parse().expect("ret"), f[1].parse().expect("errno"))
    };
    let out = run(&exe, &["epipe"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    print!("{text}");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        None,
        "killed by a signal (SIGPIPE is 13):\n{text}"
    );
    assert!(
        out.status.success() && text.contains("survived\n"),
        "{text}"
    );
    // pmc_writelog queues a record: it fails with the log's error once the log's writer has
    // met it, and succeeds before that (hwpmc's logger thread sets po_error the same way,
    // after the fact); the PMU lab's slower guest saw (0, 0). A flush waits for the writer,
    // so it and the close always report the reader's departure: EPIPE, never EIO.
    let writelog = call(&text, "pmc_writelog");
    assert!(
        writelog == (0, 0) || writelog == (-1, libc::EPIPE),
        "pmc_writelog after the reader left: {writelog:?}"
    );
    for name in ["pmc_flush_logfile", "pmc_close_logfile"] {
        assert_eq!(
            call(&text, name),
            (-1, libc::EPIPE),
            "{name} after the reader left"
        );
    }
    let out = run(&exe, &["emfile"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    print!("{text}");
    assert!(
        out.status.success() && text.contains("survived\n"),
        "{text}"
    );
    for name in ["pmc_attach_child", "pmc_attach_self", "pmc_allocate_more"] {
        assert_eq!(
            call(&text, name),
            (-1, libc::EMFILE),
            "{name} with no descriptor left"
        );
    }
}

/// pmccontrol(8)'s listings and the pmu layer (tests/c/listing.c, a FreeBSD
/// program built with the shims of tests/shim): `-L` lists this CPU's named
/// events (every event of its pmc-events table, once) and each class's
/// names; `-l` one row list per CPU of the process's cpuset (as many as
/// `nproc` counts, hw.ncpu as `getconf _NPROCESSORS_ONLN`);
/// `pmc_pmu_pmcallocate("instructions")` gives the vendor manuals' encoding
/// of retired instructions (AMD: event C0h, class K8; Intel: the fixed
/// counter's INST_RETIRED.ANY, class IAF; Arm: event 0x08, class ARMV8),
/// with PMC_F_EV_PMU, USR and OS, its index naming the event back. As C and
/// C++.
#[test]
fn pmccontrol_listings_and_the_pmu_layer() {
    for &cxx in langs() {
        let Some(exe) = build_as("listing", Link::Either, "listing", cxx) else {
            return;
        };
        let Some(l) = stdout_of(&exe, &["-L"]) else {
            return;
        };
        let table = pmc_events::sys::host()
            .or_else(|| {
                std::fs::read_to_string("/proc/cpuinfo")
                    .ok()
                    .and_then(|t| pmc_events::CpuId::from_proc_cpuinfo(&t))
            })
            .and_then(|c| pmc_events::Table::for_cpu(&c));
        let pmu: Vec<&str> = l
            .lines()
            .skip_while(|x| *x != "pmu")
            .skip(1)
            .take_while(|x| x.starts_with('\t'))
            .map(str::trim)
            .collect();
        if let Some(t) = table {
            assert_eq!(
                pmu.len(),
                t.len(),
                "-L lists the {} events of {}",
                t.len(),
                t.name()
            );
            assert!(pmu.iter().zip(t.events()).all(|(a, e)| *a == e.name));
        } else {
            assert!(pmu.is_empty(), "no table, no pmu events");
        }
        assert!(l.contains("SOFT\n\tSOFT-PAGE_FAULT.ALL\n"), "{l}");
        let Some(s) = stdout_of(&exe, &["-l"]) else {
            return;
        };
        // The C library's answers, pmc's no part: the affinity mask and sysconf.
        let affinity =
            nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).expect("affinity");
        let nproc = (0..nix::sched::CpuSet::count())
            .filter(|&c| affinity.is_set(c).unwrap_or(false))
            .count();
        let online = nix::unistd::sysconf(nix::unistd::SysconfVar::_NPROCESSORS_ONLN)
            .ok()
            .flatten()
            .expect("_SC_NPROCESSORS_ONLN");
        let head = numbers_of::<i64>(&s, "ncpu ");
        assert_eq!(head[1], online, "hw.ncpu: {s}");
        assert_eq!(
            s.lines().filter(|x| x.starts_with("cpu ")).count(),
            nproc,
            "{s}"
        );
        let Some(kind) = table.map(|t| t.kind()) else {
            skip!("no event table for this CPU: pmc_pmu_pmcallocate has nothing to find");
            return;
        };
        let Some(p) = stdout_of(&exe, &["-p", "instructions"]) else {
            return;
        };
        print!("{p}");
        let f = &fields(&p, "pmu")[0];
        let (ev, idx, class, flags, config, back) = (
            &f[1],
            &f[2],
            f[3].as_str(),
            hex(&f[4]),
            hex(&f[5]),
            f[6].as_str(),
        );
        assert_eq!(ev, idx, "pm_ev is pmc_pmu_idx_get_by_event's index");
        assert!(flags & 0x200 != 0, "PMC_F_EV_PMU");
        match kind {
            pmc_events::Kind::AmdZen => {
                assert_eq!(
                    (class, config & 0xFF),
                    ("K8", 0xC0),
                    "AMD: Retired Instructions, C0h"
                );
                assert_eq!(config & 0x3_0000, 0x3_0000, "AMD_PMC_USR | AMD_PMC_OS");
                assert!(back.eq_ignore_ascii_case("ex_ret_instr"), "{back}");
            }
            pmc_events::Kind::IntelCore => {
                assert_eq!(
                    (class, config & 0xFFFF),
                    ("IAF", 0x0100),
                    "INST_RETIRED.ANY"
                );
                assert_eq!(config & 0x3_0000, 0x3_0000, "IAP_USR | IAP_OS");
            }
            pmc_events::Kind::ArmV8 => {
                assert_eq!(
                    (class, config),
                    ("ARMV8", 0x08),
                    "INST_RETIRED is event 0x08"
                );
            }
        }
        assert!(
            p.contains(&format!("name: {back}\n")) && p.contains("event: event="),
            "{p}"
        );
        assert!(p.contains("rate 65536\n"), "{p}");
    }
}

/// pmcstat(8)'s counting loop (tests/c/pmcstat_count.c): a PMC attached to a
/// command held at its fork, read every 10 ms while the command touches N
/// fresh pages in four steps, with a CPU hog beside it. The total is exactly
/// the kernel's own count of the child's page faults (getrusage's minor +
/// major faults) less two windows no PMC can see, both known: the child's
/// faults before the attach (it reports its own count of them, "before";
/// 18-20 here, all of the old 1-21 "missed at load" figure but the one
/// below) and the one page of the exec's strings (no environment, short
/// arguments), which the kernel faults in through get_user_pages when it
/// copies them onto the new stack: counted in `min_flt`, never a perf_event
/// page fault (mm_account_fault: no perf event for GUP's faults; measured: 2,
/// 3 and 4 pages of environment make the difference 2, 3 and 4). The
/// intervals add up to the total. As C and C++.
#[test]
fn pmcstat_counting_loop_matches_rusage() {
    const N: u64 = 4000;
    /// The pages of the exec's strings (argv, no environment).
    const EXEC_STRING_PAGES: u64 = 1;
    let _hog = pmc_testkit::Hog::start();
    for &cxx in langs() {
        let Some(exe) = build_as("pmcstat_count", Link::Either, "pmcstat", cxx) else {
            return;
        };
        let Some(text) = stdout_of(&exe, &[&N.to_string()]) else {
            return;
        };
        let total = numbers_of::<u64>(&text, "total ")[0];
        let ru = numbers_of::<u64>(&text, "rusage ");
        let before = numbers_of::<u64>(&text, "before ")[0];
        let kernel = ru[0] + ru[1];

        let intervals: Vec<u64> = fields(&text, "interval")
            .iter()
            .map(|f| f[0].parse().expect("count"))
            .collect();
        println!(
            "{}: {N} fresh pages: pmc {total}, getrusage {kernel} ({before} before the \
             attach, {EXEC_STRING_PAGES} of the exec's strings), {} intervals",
            if cxx { "C++" } else { "C" },
            intervals.len()
        );
        assert_eq!(intervals.iter().sum::<u64>(), total, "{text}");
        assert!(total >= N, "{total} for {N} fresh pages");
        assert_eq!(
            total + before + EXEC_STRING_PAGES,
            kernel,
            "pmc {total}, kernel {kernel}, {before} before the attach"
        );
        assert!(
            intervals.len() >= 2,
            "the count grew over several intervals: {text}"
        );
    }
}
