//! Why pmcstat stops early, and the exit status each reason gets.

use pmc::Error;

/// Exit status of a usage error (bad options), as getopt-style tools.
pub const EXIT_USAGE: u8 = 2;
/// Exit status when counters cannot be set up or results cannot be written.
pub const EXIT_FAILURE: u8 = 1;
/// Exit status when the command to measure is not found (as shells and perf: POSIX's
/// "Command Search and Execution").
pub const EXIT_NOT_FOUND: u8 = 127;
/// Exit status when the command is found but cannot be executed (not executable, a
/// directory, a bad binary), as shells and perf.
pub const EXIT_NOT_EXECUTABLE: u8 = 126;

/// The exit status of a setup error: a command that could not be launched exits as a shell
/// would (127 not found, 126 not executable), anything else [`EXIT_FAILURE`].
fn setup_status(e: &Error) -> u8 {
    let exec = crate::sys::LAUNCH_EXEC_PREFIXES
        .iter()
        .any(|p| e.message().starts_with(p));
    if e.op() != pmc::Op::Launch || !exec {
        return EXIT_FAILURE;
    }
    if crate::sys::is_not_found(e.errno()) {
        EXIT_NOT_FOUND
    } else {
        EXIT_NOT_EXECUTABLE
    }
}

/// Why pmcstat stopped before the command ran.
pub enum Failure {
    /// Bad options: exit 2.
    Usage(String),
    /// Counters could not be set up: exit 1.
    Setup(Error),
    /// Results could not be written (`-o /dev/full`, a full disk): exit 1 with this message.
    Output(String),
}

/// The library's errors name API calls (`Backend::list_events`); pmcstat's
/// users get the options that do the same (`pmcstat -L`). Applied to every
/// error pmcstat prints when it stops.
pub fn cli_terms(text: &str) -> String {
    const TERMS: &[(&str, &str)] = &[
        ("`Backend::list_events(true)`", "`pmcstat -L --tracepoints`"),
        ("`Backend::list_events`", "`pmcstat -L`"),
        ("call `Backend::configure_log` first", "give a log with -O file"),
        ("(`Backend::configure_log`)", "(-O file)"),
        ("`Pmc::native_config`", "`pmcstat -v`"),
        (
            "a process-scope sampling PMC (`Allocation::sampling`, with `Flags::DESCENDANTS` for child processes)",
            "process sampling (-P, with -d for child processes)",
        ),
        ("or read a counting PMC when the command ends", "or count with -p"),
        (
            "must be converted with pmc_log::hwpmc",
            "is read from a regular file: save it to a file and give that to -R",
        ),
    ];
    let mut out = text.to_owned();
    for (api, cli) in TERMS {
        if out.contains(api) {
            out = out.replace(api, cli);
        }
    }
    // "use a smaller buffer (Backend::set_ring_pages(32))" -> "(--mmap-pages 32)".
    const RING: &str = "Backend::set_ring_pages";
    while let Some(at) = out.find(RING) {
        let rest = &out[at + RING.len()..];
        let (flag, used) = match rest
            .strip_prefix('(')
            .and_then(|r| r.split_once(')'))
            .filter(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
            Some((n, _)) => (format!("--mmap-pages {n}"), n.len() + 2),
            None => ("--mmap-pages PAGES".to_owned(), 0),
        };
        out.replace_range(at..at + RING.len() + used, &flag);
    }
    out
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Setup(e)
    }
}

impl Failure {
    /// Prints the failure as pmcstat's last words and returns its exit status.
    /// `stopped` is the status of a stop signal that ended a report (0 if none).
    pub fn report(self, stopped: u8) -> u8 {
        match self {
            Failure::Usage(msg) => {
                diag!("pmcstat: {}", cli_terms(&msg));
                diag!("Try 'pmcstat --help' for more information.");
                EXIT_USAGE
            }
            Failure::Setup(e) => {
                diag!("pmcstat: {}", cli_terms(&e.to_string()));
                setup_status(&e)
            }
            Failure::Output(msg) => {
                diag!("pmcstat: {msg}");
                // A report stopped by SIGINT/SIGTERM/SIGHUP exits as the shell's 128 + signal.
                stopped.max(EXIT_FAILURE)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::cli_terms;

    /// Issue 21 item 13: the library's remedies name its API; pmcstat's name its flags.
    #[test]
    fn library_advice_becomes_flags() {
        let mlock = "use a smaller buffer (Backend::set_ring_pages(32)), fewer threads or CPUs";
        assert_eq!(
            cli_terms(mlock),
            "use a smaller buffer (--mmap-pages 32), fewer threads or CPUs"
        );
        assert_eq!(
            cli_terms("use a smaller buffer (Backend::set_ring_pages)"),
            "use a smaller buffer (--mmap-pages PAGES)"
        );
        let hwpmc = "a FreeBSD hwpmc log (first byte pattern `.. .. .. ee`) must be converted \
                     with pmc_log::hwpmc";
        assert!(
            !cli_terms(hwpmc).contains("pmc_log::"),
            "{}",
            cli_terms(hwpmc)
        );
    }
}
