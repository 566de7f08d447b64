//! The log target: where pmcstat's own messages go (standard error), and
//! whether `-q` keeps the informational ones back. Errors and warnings
//! (`diag!`) always print; notes (`note!`) not with `-q`.

/// Writes a diagnostic line to standard error, ignoring errors: a closed or full standard
/// error has nowhere to report to, and `eprintln!` would panic there
/// (`pmcstat ... 2>&1 | head -1`).
macro_rules! diag {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// `-q`: informational lines (`note!`) are not printed.
pub static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether `-q` asked for fewer messages.
pub fn quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

/// An informational line on standard error (what was written where, what a
/// log held, how many symbols were missing): as [`diag!`], but not with
/// `-q`. Errors and warnings use `diag!` and are always printed.
macro_rules! note {
    ($($arg:tt)*) => {{
        if !$crate::diag::quiet() {
            diag!($($arg)*);
        }
    }};
}
