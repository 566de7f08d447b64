//! Metric names from event specs.

/// The part of the metric name an event is exported under that comes from the
/// event (after the collector's `pmc_` or `pmc_process_` prefix, before the
/// `_seconds` unit and the `_total` suffix the exposition adds), and whether the event counts time in
/// nanoseconds (`cpu-clock`, `task-clock`: exported in seconds).
///
/// Every character outside `[a-z0-9_]` becomes `_` (runs of them one `_`), letters
/// are lowercased.
///
/// ```
/// assert_eq!(pmc_exporter::metric_name("page-faults"), ("page_faults".to_string(), false));
/// assert_eq!(pmc_exporter::metric_name("cpu-clock"), ("cpu_clock".to_string(), true));
/// assert_eq!(pmc_exporter::metric_name("task-clock:u"), ("task_clock_u".to_string(), true));
/// assert_eq!(pmc_exporter::metric_name("sched:sched_switch").0, "sched_sched_switch");
/// ```
pub fn metric_name(event: &str) -> (String, bool) {
    let mut name = String::new();
    for c in event.trim().chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() {
            name.push(c);
        } else if !name.ends_with('_') {
            name.push('_');
        }
    }
    let mut name = name.trim_matches('_').to_string();
    if name.is_empty() {
        name.push_str("event");
    } else if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert_str(0, "event_");
    }
    let base = event
        .trim()
        .split([':', ',', '/'])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let time = matches!(base.as_str(), "cpu-clock" | "task-clock");
    (name, time)
}

#[cfg(test)]
mod tests {
    use super::metric_name;

    #[test]
    fn odd_names_stay_valid() {
        for e in [
            "",
            "---",
            "r01c2",
            "cpu/event=0x3c,umask=0/",
            "ÄÖ",
            "instructions,usr",
            "-x-",
            "0x3c",
        ] {
            let (n, _) = metric_name(e);
            assert!(!n.is_empty() && !n.ends_with('_'), "{n}");
            assert!(
                n.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{n}"
            );
        }
        assert_eq!(
            metric_name("cpu/event=0x3c,umask=0/").0,
            "cpu_event_0x3c_umask_0"
        );
        assert!(!metric_name("cpu-clocks").1);
    }
}
