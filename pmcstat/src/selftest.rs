//! `--selftest`: the self-test of this machine's counters
//! ([`pmc_selftest::run_native`]), as a table, `--json` or `-x SEP` rows.
//!
//! Exit status: 0 when no check FAILed (PASS, WARN and SKIP rows are not
//! failures; a WARN is printed with its note), 1 when one did.

use crate::config::Format;
use crate::error::Failure;
use crate::output::document::{self, csv_row, json_line, Document};
use pmc_selftest::Report;
use std::io::{self, Write};

/// Runs the self-test; returns the exit status.
pub fn run(format: &Format) -> Result<u8, Failure> {
    let report = SelfTest(pmc_selftest::run_native()?);
    let mut out = crate::dest::Checked::new(crate::dest::stdout_stream());
    let written = document::write(format, &report, &mut out);
    crate::dest::write_outcome(out.finish().and(written), "the self-test report")?;
    Ok(if report.0.passed() { 0 } else { 1 })
}

/// `--selftest`'s document.
struct SelfTest(Report);

impl Document for SelfTest {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        write!(o, "{}", self.0)
    }
    fn json(&self, o: &mut dyn Write) -> io::Result<()> {
        json_line(o, &self.0)
    }
    /// One row per check: check, event, measured, expected, ratio, verdict, note.
    fn csv(&self, o: &mut dyn Write, sep: &str) -> io::Result<()> {
        for r in &self.0.rows {
            let num = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
            let ratio = r.ratio().map(|x| format!("{x:.4}")).unwrap_or_default();
            let verdict = r.verdict.to_string();
            let (measured, expected) = (num(r.measured), num(r.expected));
            csv_row(
                o,
                sep,
                &[
                    r.check, &r.event, &measured, &expected, &ratio, &verdict, &r.note,
                ],
            )?;
        }
        Ok(())
    }
}
