//! Derived metrics: the ratios `perf stat` prints next to its counts. [`derive()`] gives
//! every [`Derived`] [`Metric`] a set of readings allows; [`ratio`], [`insn_per_cycle`],
//! [`branch_miss_rate`], [`cache_miss_rate`] and their kin compute one.
//!
//! The metrics (instructions per cycle, branch- and cache-miss rates, stalled cycles per
//! instruction, idle cycle shares, clock rate) are computed from readings so a
//! program does not recompute them.
//!
//! Every metric uses the *scaled* values ([`Reading::scaled`]), as perf does
//! (`tools/perf/util/stat-shadow.c`), so multiplexed counters give the same
//! ratio they would unmultiplexed. A metric is absent (`None`, or left out of
//! [`derive()`]) when one of its readings did not count or its denominator is
//! zero: never a made-up number.
//!
//! ```
//! use pmc::metrics::{self, Metric};
//! use pmc::{EventSpec, Reading};
//!
//! let cycles: EventSpec = "cycles:u".parse().unwrap();
//! let insns: EventSpec = "instructions:u".parse().unwrap();
//! let c = Reading::new(2_000_000, 100, 100);
//! let i = Reading::new(3_000_000, 100, 50); // multiplexed: scaled to 6,000,000
//! assert_eq!(metrics::insn_per_cycle(&i, &c), Some(3.0));
//! let d = metrics::derive(&[(&cycles, &c), (&insns, &i)]);
//! assert_eq!(d.len(), 1);
//! assert_eq!((d[0].index, d[0].metric, d[0].value), (1, Metric::InsnPerCycle, 3.0));
//! assert_eq!(d[0].to_string(), "#    3.00  insn per cycle");
//! ```

use std::fmt;

use crate::event::{EventSource, EventSpec, PortableEvent};
use crate::reading::Reading;

/// A derived metric, named after what `perf stat` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Metric {
    /// instructions / cycles, on the instructions line: `insn per cycle`.
    InsnPerCycle,
    /// max(stalled-cycles-frontend, stalled-cycles-backend) / instructions,
    /// on the instructions line: `stalled cycles per insn`.
    StalledCyclesPerInsn,
    /// branch-misses / branches, in percent: `of all branches`.
    BranchMissRate,
    /// cache-misses / cache-references, in percent: `of all cache refs`.
    CacheMissRate,
    /// stalled-cycles-frontend / cycles, in percent: `frontend cycles idle`.
    FrontendIdle,
    /// stalled-cycles-backend / cycles, in percent: `backend cycles idle`.
    BackendIdle,
    /// cycles / task-clock nanoseconds: `GHz`.
    Ghz,
}

impl Metric {
    /// The unit perf prints after the value.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::InsnPerCycle => "insn per cycle",
            Metric::StalledCyclesPerInsn => "stalled cycles per insn",
            Metric::BranchMissRate => "of all branches",
            Metric::CacheMissRate => "of all cache refs",
            Metric::FrontendIdle => "frontend cycles idle",
            Metric::BackendIdle => "backend cycles idle",
            Metric::Ghz => "GHz",
        }
    }

    /// Whether the value is a percentage.
    pub fn is_percent(self) -> bool {
        matches!(
            self,
            Metric::BranchMissRate
                | Metric::CacheMissRate
                | Metric::FrontendIdle
                | Metric::BackendIdle
        )
    }
}

/// One metric computed by [`derive()`]: it annotates event `index` of the
/// input (the line perf prints it on).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Derived {
    /// The index, in `derive`'s input, of the event this metric belongs to.
    pub index: usize,
    /// Which metric.
    pub metric: Metric,
    /// Its value (a ratio, a percentage for [`Metric::is_percent`], or GHz).
    pub value: f64,
}

/// perf stat's comment: `#    1.00  insn per cycle`, `#    2.50% of all
/// branches`, `#    3.000 GHz` (`print_metric_std` in perf's
/// `stat-display.c` with the formats of `stat-shadow.c`).
impl fmt::Display for Derived {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.metric {
            Metric::Ghz => write!(f, "# {:8.3} {}", self.value, self.metric.unit()),
            m if m.is_percent() => write!(f, "# {:7.2}% {}", self.value, m.unit()),
            m => write!(f, "# {:7.2}  {}", self.value, m.unit()),
        }
    }
}

/// `numerator / denominator` over scaled values; `None` if either did not
/// count or the denominator is zero.
pub fn ratio(numerator: &Reading, denominator: &Reading) -> Option<f64> {
    let n = numerator.scaled()?;
    let d = denominator.scaled().filter(|d| *d != 0)?;
    Some(n as f64 / d as f64)
}

/// Instructions per cycle.
pub fn insn_per_cycle(instructions: &Reading, cycles: &Reading) -> Option<f64> {
    ratio(instructions, cycles)
}

/// Branch misses as a percentage of branches.
pub fn branch_miss_rate(branch_misses: &Reading, branches: &Reading) -> Option<f64> {
    ratio(branch_misses, branches).map(|r| r * 100.0)
}

/// Cache misses as a percentage of cache references.
pub fn cache_miss_rate(cache_misses: &Reading, cache_references: &Reading) -> Option<f64> {
    ratio(cache_misses, cache_references).map(|r| r * 100.0)
}

/// Stalled cycles per instruction: the larger of the frontend and backend
/// stalls (either may be absent) over instructions.
pub fn stalled_cycles_per_insn(
    frontend: Option<&Reading>,
    backend: Option<&Reading>,
    instructions: &Reading,
) -> Option<f64> {
    let stalls = [frontend, backend]
        .into_iter()
        .flatten()
        .filter_map(Reading::scaled)
        .max()?;
    let i = instructions.scaled().filter(|i| *i != 0)?;
    Some(stalls as f64 / i as f64)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Cycles,
    Instructions,
    Branches,
    BranchMisses,
    CacheReferences,
    CacheMisses,
    StalledFrontend,
    StalledBackend,
    TaskClock,
}

fn role(spec: &EventSpec) -> Option<Role> {
    match &spec.source {
        EventSource::Portable(p) => Some(match p {
            PortableEvent::Cycles => Role::Cycles,
            PortableEvent::Instructions => Role::Instructions,
            PortableEvent::Branches => Role::Branches,
            PortableEvent::BranchMisses => Role::BranchMisses,
            PortableEvent::CacheReferences => Role::CacheReferences,
            PortableEvent::CacheMisses => Role::CacheMisses,
            PortableEvent::TaskClock => Role::TaskClock,
            _ => return None,
        }),
        EventSource::Generic(name) => match name.to_ascii_lowercase().as_str() {
            "stalled-cycles-frontend" | "idle-cycles-frontend" => Some(Role::StalledFrontend),
            "stalled-cycles-backend" | "idle-cycles-backend" => Some(Role::StalledBackend),
            "cpu-cycles" => Some(Role::Cycles),
            "branch-instructions" => Some(Role::Branches),
            _ => None,
        },
        _ => None,
    }
}

/// Every metric perf stat would print for these events, in input order,
/// each attached to the event whose line carries it.
///
/// Events pair up only with events of the same privilege modifiers
/// (`cycles:u` with `instructions:u`, not with `instructions:k`), as perf
/// pairs them only within one context; the first such partner is used.
/// Readings that did not count give no metric.
pub fn derive(events: &[(&EventSpec, &Reading)]) -> Vec<Derived> {
    let find = |role_: Role, like: &EventSpec| {
        events
            .iter()
            .find(|(s, r)| {
                role(s) == Some(role_)
                    && (role_ == Role::TaskClock || s.modifiers == like.modifiers)
                    && r.scaled().is_some()
            })
            .map(|(_, r)| *r)
    };
    let mut out = Vec::new();
    for (index, (spec, reading)) in events.iter().enumerate() {
        let mut push = |metric, value: Option<f64>| {
            if let Some(value) = value.filter(|v| v.is_finite()) {
                out.push(Derived {
                    index,
                    metric,
                    value,
                });
            }
        };
        match role(spec) {
            Some(Role::Cycles) => {
                // cycles per nanosecond of task-clock = GHz.
                if let Some(t) = find(Role::TaskClock, spec) {
                    push(Metric::Ghz, ratio(reading, t));
                }
            }
            Some(Role::Instructions) => {
                if let Some(c) = find(Role::Cycles, spec) {
                    push(Metric::InsnPerCycle, insn_per_cycle(reading, c));
                }
                let fe = find(Role::StalledFrontend, spec);
                let be = find(Role::StalledBackend, spec);
                if fe.is_some() || be.is_some() {
                    push(
                        Metric::StalledCyclesPerInsn,
                        stalled_cycles_per_insn(fe, be, reading),
                    );
                }
            }
            Some(Role::BranchMisses) => {
                if let Some(b) = find(Role::Branches, spec) {
                    push(Metric::BranchMissRate, branch_miss_rate(reading, b));
                }
            }
            Some(Role::CacheMisses) => {
                if let Some(c) = find(Role::CacheReferences, spec) {
                    push(Metric::CacheMissRate, cache_miss_rate(reading, c));
                }
            }
            Some(Role::StalledFrontend) => {
                if let Some(c) = find(Role::Cycles, spec) {
                    push(Metric::FrontendIdle, ratio(reading, c).map(|r| r * 100.0));
                }
            }
            Some(Role::StalledBackend) => {
                if let Some(c) = find(Role::Cycles, spec) {
                    push(Metric::BackendIdle, ratio(reading, c).map(|r| r * 100.0));
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> EventSpec {
        s.parse().unwrap()
    }

    #[test]
    fn metrics_use_scaled_values_and_refuse_missing_ones() {
        let full = Reading::new(1_000, 10, 10);
        let half = Reading::new(1_000, 10, 5); // scaled 2,000
        assert_eq!(ratio(&half, &full), Some(2.0));
        assert_eq!(insn_per_cycle(&full, &half), Some(0.5));
        assert_eq!(branch_miss_rate(&Reading::new(25, 1, 1), &full), Some(2.5));
        assert_eq!(cache_miss_rate(&Reading::new(100, 1, 1), &full), Some(10.0));
        let not_counted = Reading::new(0, 10, 0);
        assert_eq!(ratio(&full, &not_counted), None);
        assert_eq!(ratio(&not_counted, &full), None);
        assert_eq!(
            ratio(&full, &Reading::new(0, 1, 1)),
            None,
            "zero denominator"
        );
        assert_eq!(
            stalled_cycles_per_insn(
                Some(&Reading::new(300, 1, 1)),
                Some(&Reading::new(500, 1, 1)),
                &full
            ),
            Some(0.5)
        );
        assert_eq!(stalled_cycles_per_insn(None, None, &full), None);
    }

    #[test]
    fn derive_pairs_events_like_perf_stat() {
        let s = [
            spec("task-clock"),
            spec("cycles"),
            spec("instructions"),
            spec("branches"),
            spec("branch-misses"),
            spec("cache-references"),
            spec("cache-misses"),
            spec("stalled-cycles-frontend"),
            spec("stalled-cycles-backend"),
            spec("instructions:u"),
        ];
        let r = [
            Reading::new(1_000_000, 1, 1), // 1 ms
            Reading::new(3_000_000, 1, 1), // 3 GHz
            Reading::new(6_000_000, 1, 1), // IPC 2
            Reading::new(1_000_000, 1, 1),
            Reading::new(10_000, 1, 1), // 1 %
            Reading::new(50_000, 1, 1),
            Reading::new(5_000, 1, 1),     // 10 %
            Reading::new(600_000, 1, 1),   // 20 % idle
            Reading::new(1_500_000, 1, 1), // 50 % idle; 0.25 per insn
            Reading::new(5, 1, 1),         // no `:u` cycles: nothing
        ];
        let ev: Vec<(&EventSpec, &Reading)> = s.iter().zip(r.iter()).collect();
        let d = derive(&ev);
        let got: Vec<(usize, Metric, String)> = d
            .iter()
            .map(|d| (d.index, d.metric, d.to_string()))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, Metric::Ghz, "#    3.000 GHz".to_owned()),
                (
                    2,
                    Metric::InsnPerCycle,
                    "#    2.00  insn per cycle".to_owned()
                ),
                (
                    2,
                    Metric::StalledCyclesPerInsn,
                    "#    0.25  stalled cycles per insn".to_owned()
                ),
                (
                    4,
                    Metric::BranchMissRate,
                    "#    1.00% of all branches".to_owned()
                ),
                (
                    6,
                    Metric::CacheMissRate,
                    "#   10.00% of all cache refs".to_owned()
                ),
                (
                    7,
                    Metric::FrontendIdle,
                    "#   20.00% frontend cycles idle".to_owned()
                ),
                (
                    8,
                    Metric::BackendIdle,
                    "#   50.00% backend cycles idle".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn derive_skips_uncounted_partners() {
        let (c, i) = (spec("cycles"), spec("instructions"));
        let counted = Reading::new(10, 1, 1);
        let not = Reading::new(0, 1, 0);
        assert!(derive(&[(&c, &not), (&i, &counted)]).is_empty());
        assert!(derive(&[(&c, &counted), (&i, &not)]).is_empty());
    }
}
