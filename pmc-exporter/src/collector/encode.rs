//! The exposition of a scrape: the [`Collector`] implementation, in named steps (the
//! events' counters, their times enabled and running, the derived ratios, the exporter's
//! own reads and, by source, its cgroups or targets), and the count each series exports.

use std::collections::HashMap;

use pmc::{Backend, Reading};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

use super::{Labels, PmcCollector, Source, State};

/// Derived ratios: (metric, numerator event, denominator event, help).
const RATIOS: [(&str, &str, &str, &str); 3] = [
    (
        "ipc",
        "instructions",
        "cycles",
        "Instructions per cycle since the exporter started",
    ),
    (
        "branch_miss_ratio",
        "branch-misses",
        "branches",
        "Branch misses per branch since the exporter started",
    ),
    (
        "cache_miss_ratio",
        "cache-misses",
        "cache-references",
        "Cache misses per cache reference since the exporter started",
    ),
];

/// The count to export: scaled; 0 for a counter that has not run yet (a process
/// target that has not been scheduled since it was attached); none for an event
/// that is unsupported or stopped running after counting (no estimate).
fn count(r: &Reading) -> Option<u64> {
    match r.status() {
        pmc::Status::NotCounted if r.value == 0 => Some(0),
        _ => r.scaled(),
    }
}

/// Keeps each series monotonic: a scaled estimate of a multiplexed counter can
/// come out lower than the one before it (`raw * enabled / running` with a new
/// ratio), which Prometheus would take for a counter reset; such a count is
/// exported as the last one instead, until the estimate passes it.
fn monotonic(last: &mut Vec<u64>, counts: &mut [Option<u64>]) {
    if last.len() < counts.len() {
        last.resize(counts.len(), 0);
    }
    for (l, c) in last.iter_mut().zip(counts.iter_mut()) {
        if let Some(v) = c {
            *v = (*v).max(*l);
            *l = *v;
        }
    }
}

/// `s` for a `# HELP` text: prometheus_client's OpenMetrics encoder writes help as given, so
/// the characters that would need escaping there (`\\`, `"`, control characters) become `?`.
fn help_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == '\\' || c == '"' || c.is_control() {
                '?'
            } else {
                c
            }
        })
        .collect()
}

fn with(labels: &Labels, key: &'static str, value: &str) -> Labels {
    let mut l = labels.clone();
    l.push((key, value.to_string()));
    l
}

impl<B: Backend + 'static> Collector for PmcCollector<B> {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut state = self.lock();
        let rows = self.read_rows(&mut state);
        let counts = counts_of(&rows, &mut state.last);
        self.encode_events(&mut encoder, &rows, &counts)?;
        self.encode_times(&mut encoder, &rows)?;
        self.encode_ratios(&mut encoder, &rows, &counts)?;
        self.encode_reads(&mut encoder, &state)?;
        match &state.source {
            Source::Cgroups { tracked, .. } => {
                self.encode_cgroups(&mut encoder, &state, tracked.len())
            }
            Source::Processes { targets, .. } => {
                self.encode_targets(&mut encoder, &state, targets.len())
            }
            Source::Fixed { .. } => Ok(()),
        }
    }
}

/// Each row's counts, made monotonic against the previous scrape's (`last`, which forgets
/// the rows gone).
fn counts_of(
    rows: &[(Labels, Vec<Reading>)],
    last: &mut HashMap<Labels, Vec<u64>>,
) -> Vec<Vec<Option<u64>>> {
    last.retain(|k, _| rows.iter().any(|(l, _)| l == k));
    rows.iter()
        .map(|(labels, readings)| {
            let mut c: Vec<Option<u64>> = readings.iter().map(count).collect();
            monotonic(last.entry(labels.clone()).or_default(), &mut c);
            c
        })
        .collect()
}

impl<B: Backend + 'static> PmcCollector<B> {
    /// One counter per event: its scaled counts per row (seconds for time events).
    fn encode_events(
        &self,
        encoder: &mut DescriptorEncoder,
        rows: &[(Labels, Vec<Reading>)],
        counts: &[Vec<Option<u64>>],
    ) -> Result<(), std::fmt::Error> {
        for (i, ev) in self.events.iter().enumerate() {
            let unit = ev.time.then_some(Unit::Seconds);
            // System-wide on a CPU, perf's time events count the idle task too: elapsed time,
            // one second per second busy or idle. Named so, not taken for busy time.
            let elapsed = ev.time && self.elapsed_time();
            let help = if elapsed {
                format!(
                    "{} on each CPU in seconds: elapsed time, busy or idle (the idle task counts), not utilisation",
                    help_safe(&ev.spec)
                )
            } else if ev.time {
                format!(
                    "{} in seconds, scaled for multiplexing",
                    help_safe(&ev.spec)
                )
            } else {
                format!("{} events, scaled for multiplexing", help_safe(&ev.spec))
            };
            let name = if elapsed {
                format!("{}_{}_elapsed", self.prefix, ev.name)
            } else {
                format!("{}_{}", self.prefix, ev.name)
            };
            let mut m =
                encoder.encode_descriptor(&name, &help, unit.as_ref(), MetricType::Counter)?;
            for ((labels, _), c) in rows.iter().zip(counts) {
                let Some(v) = c.get(i).copied().flatten() else {
                    continue;
                };
                let mut f = m.encode_family(labels)?;
                if ev.time {
                    f.encode_counter::<NoLabelSet, f64, f64>(&(v as f64 / 1e9), None)?;
                } else {
                    f.encode_counter::<NoLabelSet, u64, f64>(&v, None)?;
                }
            }
        }
        Ok(())
    }

    /// Each event's time enabled and running, per row.
    fn encode_times(
        &self,
        encoder: &mut DescriptorEncoder,
        rows: &[(Labels, Vec<Reading>)],
    ) -> Result<(), std::fmt::Error> {
        for (name, help, pick) in [
            (
                "time_enabled",
                "Seconds each event was enabled",
                (|r: &Reading| r.time_enabled) as fn(&Reading) -> u64,
            ),
            (
                "time_running",
                "Seconds each event was counting (less than enabled when multiplexed)",
                |r: &Reading| r.time_running,
            ),
        ] {
            let name = format!("{}_{name}", self.prefix);
            let mut m = encoder.encode_descriptor(
                &name,
                help,
                Some(&Unit::Seconds),
                MetricType::Counter,
            )?;
            for (labels, readings) in rows {
                for (ev, r) in self.events.iter().zip(readings) {
                    let l = with(labels, "event", &ev.spec);
                    m.encode_family(&l)?
                        .encode_counter::<NoLabelSet, f64, f64>(&(pick(r) as f64 / 1e9), None)?;
                }
            }
        }
        Ok(())
    }

    /// The [`RATIOS`] whose two events are counted, per row.
    fn encode_ratios(
        &self,
        encoder: &mut DescriptorEncoder,
        rows: &[(Labels, Vec<Reading>)],
        counts: &[Vec<Option<u64>>],
    ) -> Result<(), std::fmt::Error> {
        for (name, num, den, help) in RATIOS {
            let (Some(n), Some(d)) = (
                self.events.iter().position(|e| e.spec == num),
                self.events.iter().position(|e| e.spec == den),
            ) else {
                continue;
            };
            let name = format!("{}_{name}", self.prefix);
            let mut m = encoder.encode_descriptor(&name, help, None, MetricType::Gauge)?;
            for ((labels, _), c) in rows.iter().zip(counts) {
                let n = c.get(n).copied().flatten();
                let d = c.get(d).copied().flatten();
                if let (Some(n), Some(d)) = (n, d.filter(|d| *d > 0)) {
                    m.encode_family(labels)?
                        .encode_gauge(&(n as f64 / d as f64))?;
                }
            }
        }
        Ok(())
    }

    /// The exporter's own reads: how long this scrape's took, how many failed.
    fn encode_reads(
        &self,
        encoder: &mut DescriptorEncoder,
        state: &State<B::Group>,
    ) -> Result<(), std::fmt::Error> {
        let name = format!("{}_exporter_read", self.prefix);
        let mut m = encoder.encode_descriptor(
            &name,
            "Seconds the counter reads of this scrape took",
            Some(&Unit::Seconds),
            MetricType::Gauge,
        )?;
        m.encode_gauge(&state.last_read_secs)?;
        let name = format!("{}_exporter_read_errors", self.prefix);
        let mut m = encoder.encode_descriptor(
            &name,
            "Group reads that failed",
            None,
            MetricType::Counter,
        )?;
        m.encode_counter::<NoLabelSet, u64, f64>(&state.read_errors, None)
    }

    /// Counting cgroups: how many are counted (`tracked`), over the cap, refused, failed to
    /// open, reopened.
    fn encode_cgroups(
        &self,
        encoder: &mut DescriptorEncoder,
        state: &State<B::Group>,
        tracked: usize,
    ) -> Result<(), std::fmt::Error> {
        let p = self.prefix;
        let name = format!("{p}_exporter_cgroups");
        let mut m = encoder.encode_descriptor(&name, "Cgroups counted", None, MetricType::Gauge)?;
        m.encode_gauge(&(tracked as u64))?;
        let name = format!("{p}_exporter_cgroups_over_cap");
        let mut m = encoder.encode_descriptor(
            &name,
            "Cgroups found but not counted at this scrape because of the cap",
            None,
            MetricType::Gauge,
        )?;
        m.encode_gauge(&state.over_cap)?;
        for (name, help, v) in [
            (
                "cgroups_refused",
                "Times a cgroup found was not opened because of the cap",
                state.refused,
            ),
            (
                "cgroups_open_errors",
                "Cgroups found that could not be opened (gone first, name not UTF-8)",
                state.open_errors,
            ),
            (
                "cgroups_reopened",
                "Cgroups found removed and created again (another inode) and opened again",
                state.reopened,
            ),
        ] {
            let name = format!("{p}_exporter_{name}");
            let mut m = encoder.encode_descriptor(&name, help, None, MetricType::Counter)?;
            m.encode_counter::<NoLabelSet, u64, f64>(&v, None)?;
        }
        Ok(())
    }

    /// Counting processes by name: the late ones and their missed CPU, how many are counted
    /// (`targets`), over the cap, refused.
    fn encode_targets(
        &self,
        encoder: &mut DescriptorEncoder,
        state: &State<B::Group>,
        targets: usize,
    ) -> Result<(), std::fmt::Error> {
        let name = format!("{}_exporter_targets_late", self.prefix);
        let mut m = encoder.encode_descriptor(
            &name,
            "Matching processes attached after they had run (born since the previous scrape): their counts before it are missing; processes born and gone between two scrapes are not seen at all (count cgroups for every process)",
            None,
            MetricType::Counter,
        )?;
        m.encode_counter::<NoLabelSet, u64, f64>(&state.late, None)?;
        let name = format!("{}_exporter_targets_missed_cpu", self.prefix);
        let mut m = encoder.encode_descriptor(
            &name,
            "CPU time the late processes had used before they were attached (/proc/PID/stat)",
            Some(&Unit::Seconds),
            MetricType::Counter,
        )?;
        m.encode_counter::<NoLabelSet, f64, f64>(&state.missed_cpu, None)?;
        let name = format!("{}_exporter_targets", self.prefix);
        let mut m =
            encoder.encode_descriptor(&name, "Processes counted", None, MetricType::Gauge)?;
        m.encode_gauge(&(targets as u64))?;
        let name = format!("{}_exporter_targets_over_cap", self.prefix);
        let mut m = encoder.encode_descriptor(
            &name,
            "Matching processes not counted at this scrape because of the target cap",
            None,
            MetricType::Gauge,
        )?;
        m.encode_gauge(&state.over_cap)?;
        let name = format!("{}_exporter_targets_refused", self.prefix);
        let mut m = encoder.encode_descriptor(
            &name,
            "Times a matching process was not attached because of the target cap",
            None,
            MetricType::Counter,
        )?;
        m.encode_counter::<NoLabelSet, u64, f64>(&state.refused, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaled_estimates_never_go_back() {
        let mut last = Vec::new();
        // Multiplexed: 100 of 50 ns running out of 100 enabled, then 150 of 100 of 250.
        let first = Reading::new(100, 100, 50);
        let second = Reading::new(150, 250, 100);
        assert_eq!((first.scaled(), second.scaled()), (Some(200), Some(375)));
        let third = Reading::new(160, 300, 150); // estimate 320 < 375
        let mut c = vec![count(&first), None];
        monotonic(&mut last, &mut c);
        assert_eq!(c, [Some(200), None]);
        let mut c = vec![count(&second), Some(7)];
        monotonic(&mut last, &mut c);
        assert_eq!(c, [Some(375), Some(7)]);
        let mut c = vec![count(&third), Some(9)];
        monotonic(&mut last, &mut c);
        assert_eq!(c, [Some(375), Some(9)], "the lower estimate is held at 375");
        // Not counted yet: 0; never counted after counting: no sample.
        assert_eq!(count(&Reading::new(0, 10, 0)), Some(0));
        assert_eq!(count(&Reading::new(5, 10, 0)), None);
        assert_eq!(count(&Reading::not_supported()), None);
    }
}
