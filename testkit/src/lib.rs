//! Test support shared by the pmc workspace's test suites.
//!
//! A test that cannot run on this machine (no hardware PMU, no `perf`, not
//! root, ...) must say so where CI's summary shows it and must never count as
//! a pass. libtest has no run-time skip, so a skipping test returns early and
//! calls [`skip!`] first, which:
//!
//! 1. prints `SKIP <test>: <reason>` to stderr (seen with `--nocapture`);
//! 2. appends `<test>\t<reason>` to the file named by `PMC_SKIP_LOG`, if set.
//!    `ci/check.sh` sets it, lists every skip after the test run, and
//!    subtracts them from the passes in its closing `N passed, N failed,
//!    N skipped` line;
//! 3. panics when `PMC_NO_SKIP=1`, so that an environment that must run
//!    everything (the PMU lab, the FreeBSD VM job) fails instead of skipping.
//!
//! ```no_run
//! fn needs_perf() -> Option<&'static str> { Some("perf is not installed") }
//! # std::env::remove_var("PMC_NO_SKIP");
//! if let Some(why) = needs_perf() {
//!     pmc_testkit::skip!("{why}");
//!     return;
//! }
//! ```
//!
//! It also holds the helpers the test suites used to copy from file to file:
//! [`cli`] runs a binary under test and captures its exit code and output,
//! [`cc`] builds a C test program (skipping visibly without a compiler), and
//! [`workdir`] makes a scratch directory.

pub mod cc;
pub mod cli;

use std::fmt;
use std::io::Write as _;
use std::path::PathBuf;

/// Environment variable naming the file that collects skips.
pub const SKIP_LOG_ENV: &str = "PMC_SKIP_LOG";
/// Environment variable that turns every skip into a failure when `1`.
pub const NO_SKIP_ENV: &str = "PMC_NO_SKIP";

/// Appends `text` to the file at `path` in one write with `O_APPEND`, so the
/// lines of tests running at once do not interleave.
fn append(path: &std::ffi::OsStr, text: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
}

/// Records that the current test skips, for `reason`. Use [`skip!`].
///
/// `test` names the test; `None` takes the name libtest gives the test's
/// thread. Panics when `PMC_NO_SKIP=1`.
pub fn record_skip(test: Option<&str>, reason: fmt::Arguments<'_>) {
    let thread = std::thread::current();
    let name = test
        .or_else(|| thread.name())
        .unwrap_or("<unnamed test>")
        .to_owned();
    let reason = reason.to_string().replace(['\n', '\t'], " ");
    eprintln!("SKIP {name}: {reason}");
    if let Some(path) = std::env::var_os(SKIP_LOG_ENV) {
        if let Err(e) = append(&path, &format!("{name}\t{reason}\n")) {
            panic!("SKIP {name}: could not record the skip in {path:?}: {e}");
        }
    }
    if std::env::var(NO_SKIP_ENV).is_ok_and(|v| v == "1") {
        panic!("SKIP {name}: {reason} (skips are failures here: {NO_SKIP_ENV}=1)");
    }
}

/// Environment variable naming the file where [`row!`] appends its rows.
pub const ROWS_LOG_ENV: &str = "PMC_ROWS_LOG";

/// Prints one result row of a judged or fault-injected case (`FAULT ...`,
/// `JUDGE ...`) to stderr, and appends `<suite>\t<row>` to the file named by
/// `PMC_ROWS_LOG`, if set. Use [`row!`].
///
/// `ci/check.sh` sets the variable for its one `cargo test --workspace`
/// run and prints the rows by suite afterwards, so the suites that show
/// rows do not run a second time to show them.
pub fn record_row(suite: &str, row: fmt::Arguments<'_>) {
    let row = row.to_string();
    eprintln!("{row}");
    if let Some(path) = std::env::var_os(ROWS_LOG_ENV) {
        // Each line of a row is a line of the log, suite first.
        let lines: String = row.lines().map(|l| format!("{suite}\t{l}\n")).collect();
        if let Err(e) = append(&path, &lines) {
            panic!("could not record the row in {path:?}: {e}");
        }
    }
}

/// Prints a result row and records it for CI's summary (see [`record_row`]);
/// the suite is the test binary's crate name.
///
/// ```
/// # std::env::remove_var("PMC_ROWS_LOG");
/// pmc_testkit::row!("FAULT disk-full: injected=ENOSPC expected=exit 1 got=exit 1");
/// ```
#[macro_export]
macro_rules! row {
    ($($row:tt)+) => {
        $crate::record_row(env!("CARGO_CRATE_NAME"), format_args!($($row)+))
    };
}

/// The environment variable that divides the iteration counts of
/// randomized and fixed-iteration tests (see [`iterations`]).
pub const DIVISOR_ENV: &str = "PMC_TEST_DIVISOR";

/// How many iterations a randomized or fixed-iteration test runs: `n`
/// normally; `n / PMC_TEST_DIVISOR` (at least 1) when that variable holds a
/// number above 1, which the PMU lab sets for its emulated aarch64 runs,
/// where code runs ~10x slower (it says so in its summary; the host suite
/// always runs the full counts); `miri` under Miri.
///
/// ```
/// let rounds = pmc_testkit::iterations(1000, 3);
/// assert!((1..=1000).contains(&rounds));
/// ```
pub fn iterations(n: u32, miri: u32) -> u32 {
    if cfg!(miri) {
        return miri;
    }
    match std::env::var(DIVISOR_ENV)
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
    {
        Some(d) if d > 1 => (n / d).max(1),
        _ => n,
    }
}

/// Whether skips are failures in this environment (`PMC_NO_SKIP=1`).
pub fn skips_forbidden() -> bool {
    std::env::var(NO_SKIP_ENV).is_ok_and(|v| v == "1")
}

/// A scratch directory for a test, `$TMPDIR/NAME-PID`, created (with its
/// parents) if missing. It is left in place after the test, for a look at
/// what a failing test wrote; the PID keeps runs apart. The directories of
/// earlier runs whose process is gone (`$TMPDIR/NAME-PID` with no `/proc/PID`)
/// are removed first, so a machine that runs the suites every day does not
/// fill its disk (C test programs linked statically weigh 60 MB a run).
/// Panics when it cannot be created.
///
/// ```
/// let d = pmc_testkit::workdir("pmc-testkit-doc");
/// assert!(d.is_dir());
/// # std::fs::remove_dir(&d).unwrap();
/// ```
pub fn workdir(name: &str) -> PathBuf {
    let tmp = std::env::temp_dir();
    remove_dead_runs(&tmp, name);
    let d = tmp.join(format!("{name}-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&d) {
        panic!("cannot create the test directory {}: {e}", d.display());
    }
    d
}

/// Time the whole machine spent outside tasks so far, in ns: what the
/// hypervisor stole from its vCPUs and what interrupts took (`/proc/stat`'s
/// irq, softirq and steal columns, in USER_HZ ticks of 10 ms, summed over the
/// CPUs; 0 where `/proc/stat` cannot be read). task-clock and cpu-clock run on
/// the clock of the task's context, which keeps running through both; a
/// task's CPU-time clocks (`CLOCK_*_CPUTIME_ID`, getrusage) do not
/// (`rq_clock_task()` leaves out IRQ and steal time). A test that bounds
/// task-clock from above by CPU time adds the growth of this over its window.
///
/// ```
/// let before = pmc_testkit::outside_tasks_ns();
/// assert!(pmc_testkit::outside_tasks_ns() >= before);
/// ```
pub fn outside_tasks_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(cpu) = stat.lines().find(|l| l.starts_with("cpu ")) else {
        return 0;
    };
    // user nice system idle iowait irq softirq steal ...
    let ticks: u64 = cpu
        .split_whitespace()
        .skip(6)
        .take(3)
        .map(|v| v.parse::<u64>().unwrap_or(0))
        .sum();
    ticks.saturating_mul(10_000_000)
}

/// Removes `DIR/NAME-PID` directories whose process no longer runs. Only
/// where `/proc` answers for this process, so a missing `/proc` removes nothing.
fn remove_dead_runs(dir: &std::path::Path, name: &str) {
    if !std::path::Path::new(&format!("/proc/{}", std::process::id())).exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!("{name}-");
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Records a visible skip of the current test (see the crate docs); the
/// caller then returns. `skip!("reason {x}")` names the test after libtest's
/// thread; `skip!(name = "x", "reason")` names it explicitly.
#[macro_export]
macro_rules! skip {
    (name = $name:expr, $($reason:tt)+) => {
        $crate::record_skip(Some($name), format_args!($($reason)+))
    };
    ($($reason:tt)+) => {
        $crate::record_skip(None, format_args!($($reason)+))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_is_appended_to_the_log() {
        let dir = std::env::temp_dir().join(format!("pmc-testkit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("skips");
        // Only this test touches these variables in this binary.
        std::env::set_var(SKIP_LOG_ENV, &log);
        std::env::remove_var(NO_SKIP_ENV);
        record_skip(Some("t1"), format_args!("no\tperf"));
        record_skip(None, format_args!("second"));
        std::env::remove_var(SKIP_LOG_ENV);
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            text,
            "t1\tno perf\ntests::a_skip_is_appended_to_the_log\tsecond\n"
        );
        std::env::set_var(NO_SKIP_ENV, "1");
        let r = std::panic::catch_unwind(|| record_skip(Some("t2"), format_args!("x")));
        std::env::remove_var(NO_SKIP_ENV);
        assert!(r.is_err(), "PMC_NO_SKIP=1 must turn a skip into a failure");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn workdirs_of_finished_runs_are_removed_and_live_ones_kept() {
        let base = workdir("pmc-testkit-sweep-base");
        // PID 1 runs; a PID above the kernel's maximum (4194304) never does.
        let live = base.join("run-1");
        let dead = base.join("run-4194305");
        let other = base.join("run-notapid");
        for d in [&live, &dead, &other] {
            std::fs::create_dir_all(d.join("sub")).unwrap();
        }
        remove_dead_runs(&base, "run");
        assert!(live.is_dir() && other.is_dir());
        assert!(!dead.exists(), "the directory of a finished run is removed");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn workdir_is_created_under_the_temp_dir_with_the_pid() {
        let d = workdir("pmc-testkit-unit");
        assert!(d.is_dir());
        assert_eq!(
            d.file_name().unwrap().to_str().unwrap(),
            format!("pmc-testkit-unit-{}", std::process::id())
        );
        assert!(d.starts_with(std::env::temp_dir()));
        std::fs::remove_dir(&d).unwrap();
    }

    #[test]
    fn cli_run_captures_code_and_both_streams() {
        let out = cli::run("sh", ["-c", "printf out; printf err >&2; kill -9 $$"]);
        assert_eq!(out.code, -1, "killed by a signal");
        assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("out", "err"));
        assert!(!out.success());
        assert!(cli::run("sh", ["-c", "exit 0"]).success());
    }

    #[test]
    fn as_user_drops_to_the_user_and_its_group_alone() {
        let id = |flag: &str| cli::run("id", [flag]).stdout.trim().parse::<u32>().unwrap();
        // As root (where the suites use it): to `nobody`, without root's groups.
        // Otherwise only to oneself, which is allowed.
        let root = id("-u") == 0;
        let (uid, gid) = if root {
            (65534, 65534)
        } else {
            (id("-u"), id("-g"))
        };
        let mut cmd = std::process::Command::new("sh");
        cli::as_user(cmd.args(["-c", "id -u; id -g; id -G"]), uid, gid);
        let out = cli::Output::from(cmd.output().unwrap());
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(lines[..2], [uid.to_string(), gid.to_string()], "{out:?}");
        if root {
            assert_eq!(
                lines[2],
                gid.to_string(),
                "no supplementary groups: {out:?}"
            );
        }
    }

    #[test]
    fn cc_reports_why_a_program_does_not_build() {
        let d = workdir("pmc-testkit-cc");
        let why = cc::compile(&d, "bad", "this is not C", &["-O0"]).unwrap_err();
        assert!(why.contains("cc"), "{why}");
        if cli::works("cc", &["--version"]) {
            let exe = cc::compile(&d, "good", "int main(void) { return 7; }", &["-O0"]).unwrap();
            assert_eq!(exe, d.join("good"));
            assert_eq!(cli::run(&exe, [""; 0]).code, 7);
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}
