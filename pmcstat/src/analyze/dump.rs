//! `-R` alone: the record dump (pmcstat(8)'s lines, `--dump`, `--json`).

use std::io::Write;
use std::path::Path;

use crate::config::Analyze;
use crate::error::Failure;
use crate::output::document;

use super::filter::ThreadFilter;
use super::input::{damage_only, Input};
use super::report::report_to;

/// pmcstat -R alone: one line per record (or JSON), and what was wrong with the log.
pub(super) fn dump_records(
    input: &Input,
    path: &Path,
    args: &Analyze,
    mut thread: Option<&mut ThreadFilter>,
    out_path: &Path,
) -> Result<(), Failure> {
    let mut report = None;
    report_to(out_path, "the record dump", |out| {
        report = Some(dump(input, path, args, thread.as_deref_mut(), out)?);
        Ok(())
    })?;
    if let (Input::Stream(_), Some(f)) = (input, &thread) {
        f.report();
    }
    if let Some(report) = report.filter(|r| !r.is_clean()) {
        // A stream is known to be nothing but damage once read through.
        damage_only(&report, path)?;
        diag!("pmcstat: {}: {report}", path.display());
    }
    Ok(())
}

/// The record dump (text or JSON Lines) of a mapped or streamed log; returns the reader's
/// report.
pub(super) fn dump(
    input: &Input,
    path: &Path,
    args: &Analyze,
    mut thread: Option<&mut ThreadFilter>,
    out: &mut dyn Write,
) -> std::io::Result<pmc_log::ReadReport> {
    let bad = |e: pmc_log::ReadError| std::io::Error::other(format!("{}: {e}", path.display()));
    let write = document::record_writer(&args.format, args.dump);
    match input {
        Input::Bytes(b) => {
            let reader = pmc_log::Reader::new(b).map_err(bad)?;
            let mut it = reader.records();
            for r in &mut it {
                write(&r, &mut *out)?;
            }
            Ok(it.into_report())
        }
        Input::Stream(f) => {
            let mut reader = pmc_log::StreamReader::new(std::io::BufReader::new(f))
                .map_err(bad)?
                .to_end();
            while let Some(r) = reader.next_record().map_err(bad)? {
                if thread.as_mut().is_some_and(|f| !f.keep(&r)) {
                    continue;
                }
                write(&r, &mut *out)?;
            }
            Ok(reader.finish())
        }
    }
}
