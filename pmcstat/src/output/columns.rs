//! `--columns`: FreeBSD pmcstat(8)'s columns for counting PMCs, a `# `
//! header with one column per PMC (per CPU), then a row per interval.

use super::rows::*;
use std::io::Write;
use std::time::Duration;

/// `--columns`.
#[derive(Default)]
pub(super) struct Columns {
    /// Rows printed since the last header.
    rows: usize,
}

impl CountFormat for Columns {
    /// One row of counts, after the header when it is due (pmcstat(8)'s
    /// `pmcstat_print_pmcs`: the header before the first row and again every
    /// [`COLUMNS_HEIGHT`] rows).
    fn interval(&mut self, o: &mut dyn Write, _at: Duration, _secs: Option<f64>, c: &[Counter]) {
        self.rows += 1;
        if self.rows > COLUMNS_HEIGHT {
            self.rows = 1;
        }
        if self.rows == 1 {
            let _ = writeln!(o, "{}", columns_header(c));
        }
        let _ = writeln!(o, "{}", columns_values(c));
    }

    /// pmcstat(8) prints its rows only: the last was printed at the end of the run.
    fn report(&mut self, _o: &mut dyn Write, _r: &Report) {}

    /// Not reached: `--columns` with `-r N` is refused.
    fn repeated(&mut self, _o: &mut dyn Write, _s: &Repeated<'_>) {}
}

/// `--columns`, FreeBSD pmcstat(8)'s counting output, after
/// usr.sbin/pmcstat/pmcstat.c (`pmcstat_print_headers`,
/// `pmcstat_print_counters`, `pmcstat_print_pmcs` and the "compute printout
/// widths" loop of `main`): the header's prefix, `PRINT_HEADER_PREFIX`.
pub(super) const COLUMNS_PREFIX: &str = "# ";

/// pmcstat(8)'s `DEFAULT_DISPLAY_HEIGHT` ("file virtual height"): the header
/// is printed again after this many rows. (On a terminal pmcstat(8) uses its
/// height; this pmcstat does not read it.)
pub(super) const COLUMNS_HEIGHT: usize = 256;

/// The width of a counter in bits, `pmc_width(3)`: perf_event counts are
/// 64-bit, as hwpmc's software PMCs are.
pub(super) const COLUMNS_COUNTER_BITS: u32 = 64;

/// pmcstat(8)'s `ev_name`: the event spec up to its first comma, space or tab
/// (`instructions,usr` is `instructions`); with `--cgroup`, `@` and the cgroup
/// after it (`page-faults@user.slice`), its spaces and tabs as `_` so that the
/// header stays one field per column.
pub(super) fn column_event(c: &Counter) -> std::borrow::Cow<'_, str> {
    let event = c.event.split([',', ' ', '\t']).next().unwrap_or(&c.event);
    match &c.cgroup {
        Some(cg) => format!(
            "{event}@{}",
            pmc_log::escape::escape(cg).replace([' ', '\t'], "_")
        )
        .into(),
        None => event.into(),
    }
}

/// A column's `(fieldskip, fieldwidth)`: wide enough for the header
/// (`p/` or `s/NN/` and the name) and for the largest count
/// (`floor(bits / 3.32193) + 1` digits, 20 for 64 bits), the header right
/// aligned in it.
// 3.32193 is pmcstat(8)'s literal (log2 10, rounded), kept as it is.
#[allow(clippy::approx_constant)]
pub(super) fn column_widths(c: &Counter) -> (usize, usize) {
    let mut header = column_event(c).len() + 2; // "p/" or "s/"
    if c.scope.is_system() {
        header += 3; // 2-digit CPU number and '/'
    }
    let display = (f64::from(COLUMNS_COUNTER_BITS) / 3.32193).floor() as usize + 1;
    if header > display {
        (0, header)
    } else {
        (display - header, display)
    }
}

/// The header line: `# ` and, per PMC, `p/EVENT` right-aligned in its field,
/// or `s/NN/EVENT` (NN the CPU) left-aligned after the skip, each followed by
/// a space, as pmcstat(8)'s `"p/%*s "` and `"s/%02d/%-*s "`.
pub(super) fn columns_header(counters: &[Counter]) -> String {
    let mut line = String::from(COLUMNS_PREFIX);
    for c in counters {
        let (skip, width) = column_widths(c);
        let w = width - skip - 2;
        line.push_str(&" ".repeat(skip));
        let name = column_event(c);
        match (c.scope.is_system(), c.cpu) {
            (true, cpu) => line.push_str(&format!(
                "s/{:02}/{name:<w$} ",
                cpu.unwrap_or(0),
                w = w.saturating_sub(3)
            )),
            (false, _) => line.push_str(&format!("p/{name:>w$} ")),
        }
    }
    line
}

/// A row of counts, each right-aligned under its header and followed by a
/// space; the first field is wider by the header's `# `, as pmcstat(8)'s
/// `"%*ju "` with `ev_fieldwidth + extra_width`.
pub(super) fn columns_values(counters: &[Counter]) -> String {
    let mut line = String::new();
    let mut extra = COLUMNS_PREFIX.len();
    for c in counters {
        let (_, width) = column_widths(c);
        // The raw count, as hwpmc's (which never multiplexes): unscaled, the
        // rows of one PMC add up to its total exactly.
        let v = c.reading.value;
        line.push_str(&format!("{v:>w$} ", w = width + extra));
        extra = 0;
    }
    line
}
