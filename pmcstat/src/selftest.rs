//! `--selftest`: pmc's self-test of this machine's counters
//! ([`pmc::selftest()`]), as a table, `--json` or `-x SEP` rows.
//!
//! Exit status: 0 when no check FAILed (PASS, WARN and SKIP rows are not
//! failures; a WARN is printed with its note), 1 when one did.

use crate::config::Format;
use crate::error::Failure;
use pmc::selftest::Report;
use std::io::Write;

/// Runs the self-test; returns the exit status.
pub fn run(format: &Format) -> Result<u8, Failure> {
    let report = pmc::selftest()?;
    let mut out = crate::dest::Checked::new(crate::dest::stdout_stream());
    if *format == Format::Json {
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string(&report).unwrap_or_default()
        );
    } else if let Format::Csv(sep) = format {
        write_csv(&mut out, &report, sep);
    } else {
        let _ = write!(out, "{report}");
    }
    crate::dest::write_outcome(out.finish(), "the self-test report")?;
    Ok(if report.passed() { 0 } else { 1 })
}

/// One row per check: check, event, measured, expected, ratio, verdict,
/// note (the separator replaced by a space inside the note).
fn write_csv(out: &mut impl Write, report: &Report, sep: &str) {
    let cell = |s: &str| s.replace(sep, " ");
    for r in &report.rows {
        let num = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        let ratio = r.ratio().map(|x| format!("{x:.4}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "{}{sep}{}{sep}{}{sep}{}{sep}{ratio}{sep}{}{sep}{}",
            cell(r.check),
            cell(&r.event),
            num(r.measured),
            num(r.expected),
            r.verdict,
            cell(&r.note)
        );
    }
}
