//! Running a command-line program of the workspace (`pmcstat`) and capturing
//! what it did.
//!
//! The binary's path stays with the caller (integration tests name it with
//! `env!("CARGO_BIN_EXE_pmcstat")`, which only their crate knows).

use std::ffi::OsStr;
use std::process::{Command, Stdio};

/// What a finished program gave: its exit code and its output, decoded
/// lossily as UTF-8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// The exit code; `-1` when a signal ended the program.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Output {
    /// `(code, stdout, stderr)`, for `let (code, out, err) = ...` at call sites.
    pub fn into_parts(self) -> (i32, String, String) {
        (self.code, self.stdout, self.stderr)
    }

    /// Whether the program exited with code 0.
    pub fn success(&self) -> bool {
        self.code == 0
    }
}

impl From<std::process::Output> for Output {
    fn from(out: std::process::Output) -> Output {
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// Runs `bin` with `args`, stdin empty, and waits for it.
///
/// Panics (failing the test) when `bin` cannot be started: the binary under
/// test is missing, which is not a skip.
///
/// ```
/// let out = pmc_testkit::cli::run("sh", ["-c", "echo hi; echo oops >&2; exit 3"]);
/// assert_eq!(out.into_parts(), (3, "hi\n".to_owned(), "oops\n".to_owned()));
/// ```
pub fn run<I, S>(bin: impl AsRef<OsStr>, args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run_with_limit(bin, args, watchdog_limit())
}

/// [`run`] with the watchdog's limit given.
fn run_with_limit<I, S>(bin: impl AsRef<OsStr>, args: I, limit: std::time::Duration) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let bin = bin.as_ref();
    let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let child = Command::new(bin)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.to_string_lossy()));
    // A watchdog: a program that never ends (a usage that became a run until Ctrl-C) fails
    // its test after the limit instead of holding CI until its own timeout.
    let pid = child.id().to_string();
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let dog = std::thread::spawn(move || {
        let fired = matches!(
            wait.recv_timeout(limit),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout)
        );
        if fired {
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
        }
        fired
    });
    let out = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("cannot wait for {}: {e}", bin.to_string_lossy()));
    let _ = done.send(());
    if dog.join().unwrap_or(false) {
        panic!(
            "{} {args:?} ran past {limit:?} and was killed (PMC_TEST_CMD_TIMEOUT sets the limit \
             in seconds); stderr so far:\n{}",
            bin.to_string_lossy(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out.into()
}

/// How long [`run`] lets a program run: `PMC_TEST_CMD_TIMEOUT` seconds, 900 by default (the
/// slowest pmcstat run of the suites takes a few minutes in the PMU lab's emulated guest).
fn watchdog_limit() -> std::time::Duration {
    let secs = std::env::var("PMC_TEST_CMD_TIMEOUT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(900);
    std::time::Duration::from_secs(secs)
}

/// [`run`], then prints the command line and what it wrote to stderr (shown
/// for a failing test), as `$ NAME ARGS`, its stdout and stderr, and
/// `[exit CODE]`; `name` stands for the binary's path in that line.
///
/// ```
/// let out = pmc_testkit::cli::run_echoed("sh", "sh", &["-c", "exit 0"]);
/// assert!(out.success());
/// ```
pub fn run_echoed(bin: impl AsRef<OsStr>, name: &str, args: &[&str]) -> Output {
    let out = run(bin, args);
    eprintln!(
        "$ {name} {}\n{}{}[exit {}]",
        args.join(" "),
        out.stdout,
        out.stderr,
        out.code
    );
    out
}

/// Whether `tool arg...` starts and exits with status 0: a probe for an
/// optional oracle (`perf --version`, `go version`) before a test that needs
/// it records a skip.
///
/// ```
/// assert!(pmc_testkit::cli::works("sh", &["-c", "true"]));
/// assert!(!pmc_testkit::cli::works("pmc-testkit-no-such-tool", &[]));
/// ```
pub fn works(tool: &str, args: &[&str]) -> bool {
    Command::new(tool)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Makes `cmd` start as user `uid` and group `gid`, with no supplementary
/// groups, as a test running as root does to check what an unprivileged user
/// sees. (std sets them between fork and exec: `setgroups(0)` when the parent
/// is root, then `setgid`, then `setuid`, which for root set the real, effective
/// and saved IDs.) Starting the command fails when the caller may not switch.
///
/// ```
/// use std::os::unix::fs::MetadataExt;
/// let me = std::fs::metadata("/proc/self").map(|m| (m.uid(), m.gid()));
/// # let Ok((uid, gid)) = me else { return };
/// let mut cmd = std::process::Command::new("sh");
/// pmc_testkit::cli::as_user(cmd.args(["-c", "id -u"]), uid, gid);
/// let out = cmd.output().unwrap();
/// assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), uid.to_string());
/// ```
#[cfg(unix)]
pub fn as_user(cmd: &mut Command, uid: u32, gid: u32) -> &mut Command {
    use std::os::unix::process::CommandExt as _;
    cmd.gid(gid).uid(uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program that never ends is killed at the limit, and the test fails saying so.
    #[test]
    #[should_panic(expected = "ran past 1s and was killed")]
    fn the_watchdog_kills_a_program_that_never_ends() {
        run_with_limit("sleep", ["600"], std::time::Duration::from_secs(1));
    }

    #[test]
    fn a_program_within_the_limit_is_untouched() {
        let out = run_with_limit("sh", ["-c", "exit 4"], std::time::Duration::from_secs(60));
        assert_eq!(out.code, 4);
    }
}
