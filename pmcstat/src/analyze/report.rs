//! Writing one report: its destination (created through
//! `pmc_analyze::output`, `-` standard output), every write checked, and the
//! analysis' warnings.

use std::io::Write;
use std::path::Path;

use crate::dest::{write_outcome, Checked, Dest};
use crate::error::Failure;

use super::fail;

pub(super) fn create(path: &Path) -> Result<Dest, Failure> {
    if path == Path::new("-") {
        return Ok(Dest::Stream(crate::dest::stdout_stream()));
    }
    crate::dest::create_private_file(path)
        .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))
}

/// `-` or a path, for messages.
pub(super) fn named(path: &Path) -> String {
    if path == Path::new("-") {
        "standard output".into()
    } else {
        path.display().to_string()
    }
}

/// Writes one report to `path` (`-`: standard output) and checks every write and the final
/// flush: a failure is an error naming the file (exit 1); a closed pipe ends quietly.
pub(super) fn report_to(
    path: &Path,
    what: &str,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), Failure> {
    let mut out = Checked::new(create(path)?);
    let r = write(&mut out);
    let end = out.finish();
    // The writer's own error (ENOSPC, EPIPE) first: a report writer may wrap it. Only a
    // whole report is put in place (renamed over the file's name).
    let done = end.and(r).and_then(|()| out.get_mut().commit());
    write_outcome(done, &format!("{what} to {}", named(path)))
}

/// The analysis crate's error as an I/O error (its `Write` variant unwrapped).
pub(super) fn io_error(e: impl Into<pmc_analyze::Error>) -> std::io::Error {
    match e.into() {
        pmc_analyze::Error::Write(io) => io,
        e => std::io::Error::other(e),
    }
}

/// Prints the analysis' warnings, each on a line (escaped). With `-q`,
/// the warnings about single objects (unreadable, another build, cut, outside the root: a
/// log may name 100,000 of them) are one counted line; the log's own (lost samples,
/// damage) are printed each.
pub(super) fn print_warnings(warnings: &[pmc_analyze::Warning]) {
    use pmc_analyze::Warning as W;
    let per_object = |w: &&W| {
        matches!(
            w,
            W::ObjectUnreadable { .. }
                | W::BuildIdMismatch { .. }
                | W::BuildIdUnverified { .. }
                | W::TruncatedObject { .. }
                | W::OutsideRoot { .. }
                | W::DebugSectionSkipped { .. }
        )
    };
    let objects = warnings.iter().filter(per_object).count();
    let collapse = crate::diag::quiet() && objects > 1;
    // A warning is one line: its names' line breaks escaped too.
    let line = |w: &W| pmc_log::escape::escape(&w.to_string()).into_owned();
    for w in warnings.iter().filter(|w| !collapse || !per_object(w)) {
        diag!("pmcstat: warning: {}", line(w));
    }
    if let Some(first) = warnings.iter().find(per_object).filter(|_| collapse) {
        let first = line(first);
        diag!(
            "pmcstat: warning: {objects} objects the log names were not used as asked (the \
             first: {first}); without -q each is listed"
        );
    }
}
