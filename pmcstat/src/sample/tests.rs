//! Unit tests of sampling mode's pure parts.

use super::rate::{split_freq, DEFAULT_RATE, DEFAULT_SOFT_RATE, DEFAULT_TIME_FREQ};
use super::*;

/// Issue 20, defect 4, and issue 34: the default rate follows the event's kind and the
/// kernel's frequency mode; -n and --freq win.
#[test]
fn default_rate_by_kind() {
    let rate = |argv: &[&str], spec: &str, native: bool| {
        let mut full = vec!["pmcstat"];
        full.extend_from_slice(argv);
        full.extend_from_slice(&["-P", spec, "true"]);
        let args = Sample::from(crate::cli::Args::parse_args(&full).expect("parses"));
        rate_for(&args, &spec.parse().unwrap(), native)
    };
    for native in [true, false] {
        for time in ["cpu-clock", "task-clock:u"] {
            let (r, note) = rate(&[], time, native);
            assert_eq!(r, Rate::Frequency(DEFAULT_TIME_FREQ), "{time}");
            assert!(note.unwrap().contains("4000 Hz"), "{time}");
        }
        // A clock samples at its tick: clock.hard at kern.hz, not 4000 a second.
        for clock in ["clock.hard", "SOFT-CLOCK.STAT"] {
            let (r, note) = rate(&[], clock, native);
            assert_eq!(r, Rate::Period(1), "{clock}");
            assert!(note.unwrap().contains("one sample per tick"), "{clock}");
        }
        let (r, note) = rate(&[], "sched:sched_switch", native);
        assert_eq!(r, Rate::Period(1));
        assert!(note.unwrap().contains("tracepoint"));
    }
    // Linux: every other event at perf record's 4 kHz.
    for counted in ["page-faults", "instructions", "minor-faults", "r1a"] {
        let (r, _) = rate(&[], counted, true);
        assert_eq!(r, Rate::Frequency(DEFAULT_TIME_FREQ), "{counted}");
    }
    // hwpmc: software events at its smallest reload count, hardware ones as pmcstat(8).
    for soft in [
        "page-faults",
        "PAGE_FAULT.ALL",
        "context-switches",
        "minor-faults",
    ] {
        let (r, note) = rate(&[], soft, false);
        assert_eq!(r, Rate::Period(DEFAULT_SOFT_RATE), "{soft}");
        assert!(note.unwrap().contains("1000"), "{soft}");
    }
    for hard in ["instructions", "inst_retired.any"] {
        let (r, note) = rate(&[], hard, false);
        assert_eq!(r, Rate::Period(DEFAULT_RATE), "{hard}");
        assert!(note.unwrap().contains("65536"), "{hard}");
    }
    assert_eq!(
        rate(&["-n", "7"], "cpu-clock", true),
        (Rate::Period(7), None)
    );
    assert_eq!(
        rate(&["--freq", "99"], "page-faults", false),
        (Rate::Frequency(99), None)
    );
}

#[test]
fn no_samples_warning_names_rates_and_remedy() {
    let w = no_samples_warning(
        &[format!("page-faults {}", rate_text(Rate::Period(65536)))],
        Duration::from_millis(1500),
    );
    assert!(w.contains("no samples in 1.500 s"), "{w}");
    assert!(w.contains("page-faults every 65536 events"), "{w}");
    assert!(w.contains("-n N") && w.contains("--freq HZ"), "{w}");
}

/// Issue 21: a run that lost samples exits [`LOST_STATUS`] when the command succeeded,
/// and keeps the command's own failure (or 128 + signal) visible otherwise.
#[test]
fn lost_samples_exit_status() {
    assert_eq!(exit_status(0, 0), 0);
    assert_eq!(exit_status(0, 1), LOST_STATUS);
    assert_eq!(exit_status(7, 1), 7);
    assert_eq!(exit_status(130, 5), 130);
    assert!(![0, 1, 2].contains(&LOST_STATUS));
}

/// Issue 21: on a kernel without PERF_FORMAT_LOST (the library's fake-kernel test
/// `a_kernel_without_format_lost_opens_without_it_and_says_so` sets the flag), the summary
/// says that the lost count may be incomplete, even with nothing counted as lost.
#[test]
fn an_incomplete_lost_count_is_said() {
    let mut s = pmc::SamplingSummary::default();
    s.lost_count_incomplete = true;
    let lines = held_up_lines_of(&s, Some(std::path::Path::new("-")));
    assert!(
        lines
            .iter()
            .any(|l| l.contains("lost count may miss") && l.contains("Linux 6.0")),
        "{lines:?}"
    );
    assert!(held_up_lines_of(&pmc::SamplingSummary::default(), None).is_empty());
}

/// A run during which pmcstat was stopped and continued: its losses are said to be the
/// stop's (faults_cli's samples_lost_while_pmcstat_is_stopped saw the kernel report them in
/// the rings once pmcstat drained again, with only the rate advice printed), and not when
/// the kernel's own count already said so, nor without a stop or a loss.
#[test]
fn losses_of_a_stopped_pmcstat_are_said() {
    let mut s = pmc::SamplingSummary::default();
    s.lost = 6950;
    let line = stopped_line(&s, true).expect("a line");
    assert!(
        line.contains("could not drain") && line.contains("6950"),
        "{line}"
    );
    assert!(stopped_line(&s, false).is_none());
    s.lost_unreported = 10;
    assert!(stopped_line(&s, true).is_none());
    assert!(stopped_line(&pmc::SamplingSummary::default(), true).is_none());
}

#[test]
fn freq_qualifier() {
    assert_eq!(
        split_freq("cpu-clock,freq=1000").unwrap(),
        ("cpu-clock".into(), Some(1000))
    );
    assert_eq!(
        split_freq("instructions,usr").unwrap(),
        ("instructions,usr".into(), None)
    );
    assert!(split_freq("cpu-clock,freq=x").is_err());
    assert!(split_freq("cpu-clock,freq=0").is_err());
}
