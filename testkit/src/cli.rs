//! Running a command-line program of the workspace (`pmcstat`) and capturing
//! what it did.
//!
//! The binary's path stays with the caller (integration tests name it with
//! `env!("CARGO_BIN_EXE_pmcstat")`, which only their crate knows).

use std::ffi::OsStr;
use std::process::Command;

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
    let bin = bin.as_ref();
    Command::new(bin)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.to_string_lossy()))
        .into()
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
