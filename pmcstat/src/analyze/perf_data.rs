//! `--perf-data FILE`: the log as a perf.data file.

use std::path::Path;

use crate::error::Failure;

use super::input::Whole;
use super::report::report_to;

/// `--perf-data FILE`: the log as a perf.data file (pmc-log's exporter), with
/// the number of samples written and anything the reader skipped.
pub(super) fn write_perf_data(log: &Whole<'_>, path: &Path, to: &Path) -> Result<(), Failure> {
    use pmc_log::export::perf_data::PerfDataWriter;
    use pmc_log::record::{Header, Record};
    let mut samples = 0;
    let mut report = None;
    report_to(to, "the perf.data file", |out| {
        // The log's header comes first; a log without one gets perf's defaults.
        let mut p: Option<PerfDataWriter> = None;
        let read = log.each_record(&mut |r| {
            let w = p.get_or_insert_with(|| match r {
                Record::Header(h) => PerfDataWriter::new(h),
                _ => PerfDataWriter::new(&Header::default()),
            });
            w.add(r);
            Ok(())
        });
        let read = read.map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))?;
        let p = p.unwrap_or_else(|| PerfDataWriter::new(&Header::default()));
        samples = p.samples();
        p.finish(&mut &mut *out)?;
        report = Some(read);
        Ok(())
    })?;
    let report = report.unwrap_or_default();
    note!(
        "pmcstat: {}: {samples} samples written as perf.data{}",
        to.display(),
        if report.is_clean() {
            String::new()
        } else {
            format!(" ({report})")
        }
    );
    Ok(())
}
