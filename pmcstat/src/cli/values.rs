//! The value parsers of the flags: each range-checked, each error saying
//! what a valid value is.

use super::{AttachSpec, MAX_SECS, MIN_INTERVAL_SECS};

/// `-c`: a CPU list `Cpus::parse_list` takes, kept as typed.
pub(super) fn parse_cpus(s: &str) -> Result<String, String> {
    pmc::Cpus::parse_list(s).map(|_| s.to_owned())
}

/// pmcstat(8)'s rule: an argument that is a whole number is a pid, anything
/// else a regular expression.
pub(super) fn parse_attach(s: &str) -> Result<AttachSpec, String> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return match s.parse::<u32>() {
            Ok(p) if (1..=i32::MAX as u32).contains(&p) => Ok(AttachSpec::Pid(p)),
            _ => Err(format!(
                "`{s}` is not a process id (1 to {}); a command name pattern is a regular \
                 expression that is not a number",
                i32::MAX
            )),
        };
    }
    if s.is_empty() {
        return Err("give a process id or a regular expression for command names".into());
    }
    regex::Regex::new(s)
        .map(AttachSpec::Regex)
        .map_err(|e| format!("`{s}` is neither a process id nor a valid regular expression: {e}"))
}

/// Seconds in `[min, MAX_SECS]` (`min` itself excluded when `open`).
pub(super) fn parse_secs(s: &str, min: f64, open: bool) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    let low_ok = if open { v > min } else { v >= min };
    if !(v.is_finite() && low_ok && v <= MAX_SECS) {
        let low = if open { "more than" } else { "at least" };
        return Err(format!(
            "`{s}` is out of range: give {low} {min} and at most {MAX_SECS} seconds (a year)"
        ));
    }
    Ok(v)
}

/// `-w SECS`: 10 ms to a year.
pub(super) fn parse_interval(s: &str) -> Result<f64, String> {
    parse_secs(s, MIN_INTERVAL_SECS, false)
}

/// `-I MS`: 10 ms to a year, in milliseconds.
pub(super) fn parse_interval_ms(s: &str) -> Result<f64, String> {
    let ms: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of milliseconds"))?;
    parse_interval(&(ms / 1000.0).to_string())
        .map(|secs| secs * 1000.0)
        .map_err(|e| format!("{e} (-I takes milliseconds: {s} ms)"))
}

/// `-l SECS`: more than 0, at most a year.
pub(super) fn parse_duration(s: &str) -> Result<f64, String> {
    parse_secs(s, 0.0, true)
}

/// A count in `[MIN, MAX]`.
pub(super) fn parse_count<const MIN: usize, const MAX: usize>(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(v) if (MIN..=MAX).contains(&v) => Ok(v),
        _ => Err(format!("`{s}` is not a whole number from {MIN} to {MAX}")),
    }
}

pub(super) fn parse_call_graph(s: &str) -> Result<pmc::CallGraph, String> {
    pmc::CallGraph::parse(s)
}

/// Why `sep` cannot separate CSV cells, if it cannot: empty (the cells would run together)
/// or holding a line break (one row would be several lines).
pub(super) fn csv_separator_refused(sep: &str) -> Option<&'static str> {
    if sep.is_empty() {
        return Some("an empty separator runs the cells together");
    }
    let breaks = [
        '\n', '\r', '\u{b}', '\u{c}', '\u{85}', '\u{2028}', '\u{2029}',
    ];
    if sep.contains(breaks) {
        return Some("a line break in the separator splits each row over several lines");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::csv_separator_refused;

    #[test]
    fn separators_that_break_rows_are_refused() {
        assert!(csv_separator_refused("").is_some());
        assert!(csv_separator_refused("\n").is_some());
        assert!(csv_separator_refused(";\r").is_some());
        assert!(csv_separator_refused("\t").is_none());
    }
}
