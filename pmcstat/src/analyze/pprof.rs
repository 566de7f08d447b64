//! `--pprof FILE`: the log as a gzipped pprof profile.

use std::path::Path;

use pmc_analyze::AnalyzeOptions;

use crate::error::Failure;

use super::fail;
use super::input::Whole;
use super::report::{io_error, print_warnings, report_to};

/// `--pprof FILE`: the log as a gzipped pprof profile. Its warnings are
/// printed when no other report (which prints the same ones) is asked for.
pub(super) fn write_pprof(
    log: &Whole<'_>,
    path: &Path,
    to: &Path,
    warn: bool,
    opts: AnalyzeOptions,
) -> Result<(), Failure> {
    let mut b = pmc_analyze::pprof::PprofBuilder::new(opts);
    let report = log
        .each_record(&mut |r| {
            b.add(r);
            Ok(())
        })
        .map_err(|e| fail(format!("{}: {e}", path.display())))?;
    b.set_read_report(&report);
    let export = b.finish();
    if warn {
        print_warnings(&export.warnings);
    }
    report_to(to, "the pprof profile", |out| {
        export.write_gzip(&mut &mut *out).map_err(io_error)
    })
}
