//! [`EventSpec`] and what it holds ([`EventSource`], [`Term`],
//! [`SoftClock`]); its canonical `Display`.

use std::fmt;

use super::modifiers::{write_mods, Modifiers};
use super::names::{normalize, PortableEvent};
use super::parse_error::ParseError;

/// One `key=value` or bare `name` term inside `pmu/.../` or a hwpmc-style
/// qualifier list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Term {
    /// The term's name (`event`, `umask`, `cmask`, `edge`, or an alias).
    pub key: String,
    /// The numeric value, if the term had `=value`.
    pub value: Option<u64>,
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Some(v) => write!(f, "{}={:#x}", self.key, v),
            None => f.write_str(&self.key),
        }
    }
}

/// What kind of event a spec names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum EventSource {
    /// One of the portable names.
    Portable(PortableEvent),
    /// A Linux generic or cache event name (`minor-faults`,
    /// `L1-dcache-load-misses`), stored as written.
    Generic(String),
    /// A raw, model-specific encoding (`r01c2` on Linux; `event=,umask=`
    /// on FreeBSD), as an `attr.config`-style value.
    Raw(u64),
    /// A named PMU with terms: `cpu/event=0x3c,umask=0x0/` or `cpu/mem-loads/`.
    /// The terms are resolved against sysfs (`/sys/bus/event_source/devices`)
    /// by the Linux backend.
    Pmu {
        /// The PMU's name (`cpu`, `msr`, `power`, ...).
        pmu: String,
        /// The terms between the slashes.
        terms: Vec<Term>,
    },
    /// A hwpmc-style raw event: `event=0x..,umask=0x..` with qualifiers such
    /// as `edge`, `inv`, `cmask=N`.
    HwpmcTerms(Vec<Term>),
    /// A tracepoint: `subsystem:name`.
    Tracepoint {
        /// The tracepoint subsystem (`sched`).
        subsystem: String,
        /// The tracepoint name (`sched_switch`).
        name: String,
    },
    /// A native named event: SOFT (`SOFT-CLOCK.HARD`, `PAGE_FAULT.ALL`),
    /// TSC, a class-prefixed name (`k8-dc-misses`, `iap-inst_retired.any`),
    /// a CPU event from the `pmc-events` crate's table (`inst_retired.any`) or a
    /// libpmc alias (`dc-misses`). Which CPU has it is the backend's question.
    Hwpmc(String),
}

/// One of FreeBSD's kernel clocks as an hwpmc SOFT event (`SOFT-CLOCK.HARD`,
/// `clock.stat`, ...).
///
/// Each counts **one per tick** of its clock on the CPU where the measured
/// thread runs; the unit is a tick, not a nanosecond.
///
/// FreeBSD: `hardclock()` and `statclock()` in `sys/kern/kern_clock.c`
/// (fel1x-developer/freebsd-src@2d614aa2fe3e, a mirror of freebsd-src main)
/// call `PMC_SOFT_CALL_TF( , , clock, hard|stat, td->td_intr_frame)` once per
/// call, and `pmc_soft_intr()` in `sys/dev/hwpmc/hwpmc_soft.c`
/// (freebsd/freebsd-src@685dc743dc3b) adds 1 to a counting PMC, or takes one
/// sample every `pm_reloadcount` calls of a sampling one. `profclock()` calls
/// the `clock, prof` hook only while a process is being profiled (profil(2)),
/// since `handleevents()` runs it only then.
///
/// The rates: `kern.hz` defaults to `HZ` = 1000 (`sys/kern/subr_param.c`
/// `init_param1()`, same commit; 100, `HZ_VM`, in a detected VM guest unless
/// `kern.hz` is set). `stathz` is about 127 Hz and `profhz` 64 times that with
/// the default one-shot event timers of amd64 and arm64
/// (`cpu_initclocks_bsp()` in `sys/kern/kern_clocksource.c`,
/// freebsd/freebsd-src@020458eb98ba: `stathz = round_freq(timer, 127)`,
/// `profhz = round_freq(timer, stathz * 64)`).
///
/// ```
/// use pmc::event::SoftClock;
/// let spec: pmc::EventSpec = "SOFT-CLOCK.HARD".parse().unwrap();
/// assert_eq!(spec.soft_clock(), Some(SoftClock::Hard));
/// assert_eq!(SoftClock::Hard.tick_ns(), 1_000_000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SoftClock {
    /// `CLOCK.HARD`: `hardclock()`, `kern.hz` ticks a second (1000 by default).
    Hard,
    /// `CLOCK.STAT`: `statclock()`, `stathz` ticks a second (about 127).
    Stat,
    /// `CLOCK.PROF`: `profclock()`, `profhz` ticks a second (about 8128), only
    /// while some process is profiled with profil(2).
    Prof,
}

impl SoftClock {
    /// The hwpmc name without the class prefix: `CLOCK.HARD`.
    pub const fn name(self) -> &'static str {
        match self {
            SoftClock::Hard => "CLOCK.HARD",
            SoftClock::Stat => "CLOCK.STAT",
            SoftClock::Prof => "CLOCK.PROF",
        }
    }

    /// The FreeBSD variable that holds the clock's rate: `kern.hz`, `stathz`, `profhz`.
    pub const fn rate_name(self) -> &'static str {
        match self {
            SoftClock::Hard => "kern.hz",
            SoftClock::Stat => "stathz",
            SoftClock::Prof => "profhz",
        }
    }

    /// The clock's default rate on FreeBSD amd64/arm64 outside a VM, in
    /// ticks a second: `kern.hz` 1000, `stathz` 127, `profhz` 127 x 64.
    pub const fn default_hz(self) -> u64 {
        match self {
            SoftClock::Hard => 1000,
            SoftClock::Stat => 127,
            SoftClock::Prof => 127 * 64,
        }
    }

    /// One tick at [`default_hz`](SoftClock::default_hz), in nanoseconds
    /// (rounded): what a backend without these clocks (Linux) uses to keep
    /// the unit.
    pub const fn tick_ns(self) -> u64 {
        (1_000_000_000 + self.default_hz() / 2) / self.default_hz()
    }

    /// `SOFT-CLOCK.HARD`, `clock.hard`, `SOFT_CLOCK.STAT`, any case.
    pub fn from_name(name: &str) -> Option<SoftClock> {
        let n = normalize(name);
        let n = n.strip_prefix("soft-").unwrap_or(&n);
        Some(match n {
            "clock.hard" => SoftClock::Hard,
            "clock.stat" => SoftClock::Stat,
            "clock.prof" => SoftClock::Prof,
            _ => return None,
        })
    }
}

/// A parsed event string.
///
/// `Display` prints a canonical form that parses back to an equal spec.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "String", into = "String"))]
pub struct EventSpec {
    /// What to count.
    pub source: EventSource,
    /// Which privilege levels, at which precision.
    pub modifiers: Modifiers,
    /// perf's `name=` term (`cpu/event=0x3c,name=busy/`, `page-faults/name=pf/`): the
    /// name the event's counts are shown under.
    pub name: Option<String>,
}

impl EventSpec {
    /// A spec for a portable event with no modifiers.
    ///
    /// ```
    /// use pmc::{EventSpec, PortableEvent};
    /// assert_eq!(EventSpec::portable(PortableEvent::PageFaults).to_string(), "page-faults");
    /// ```
    pub fn portable(event: PortableEvent) -> EventSpec {
        EventSpec {
            source: EventSource::Portable(event),
            modifiers: Modifiers::default(),
            name: None,
        }
    }

    /// The portable event this spec names, if any.
    pub fn as_portable(&self) -> Option<PortableEvent> {
        match self.source {
            EventSource::Portable(p) => Some(p),
            _ => None,
        }
    }

    /// The FreeBSD kernel clock this spec names (`SOFT-CLOCK.HARD`,
    /// `clock.stat`), if any.
    pub fn soft_clock(&self) -> Option<SoftClock> {
        match &self.source {
            EventSource::Hwpmc(name) => SoftClock::from_name(name),
            _ => None,
        }
    }

    /// Whether the event measures time rather than counting occurrences:
    /// `cpu-clock`, `task-clock` and the SOFT clocks ([`SoftClock`]). A
    /// sampler picks its default rate by this (a frequency for time, a
    /// period of events otherwise).
    ///
    /// ```
    /// use pmc::EventSpec;
    /// let time = |s: &str| s.parse::<EventSpec>().unwrap().is_time();
    /// assert!(time("cpu-clock") && time("task-clock:u") && time("clock.stat"));
    /// assert!(!time("page-faults") && !time("instructions"));
    /// ```
    pub fn is_time(&self) -> bool {
        self.as_portable().is_some_and(PortableEvent::is_clock) || self.soft_clock().is_some()
    }

    /// Parses an event string; same as `str::parse`.
    pub fn parse(input: &str) -> Result<EventSpec, ParseError> {
        input.parse()
    }

    /// Whether this is perf stat's `duration_time`: the run's wall-clock time in
    /// nanoseconds, which the tool measures itself (perf opens a dummy event for it and
    /// never reads a count). No kernel counts it, so the backends refuse it
    /// (`ErrorKind::NotSupported`); pmcstat times the run.
    pub fn is_duration_time(&self) -> bool {
        matches!(&self.source, EventSource::Generic(g) if g.eq_ignore_ascii_case("duration_time"))
    }

    /// The name the event's counts are shown under: perf's `name=` if given, else
    /// the event as written (`Display`).
    pub fn label(&self) -> String {
        self.name.clone().unwrap_or_else(|| self.to_string())
    }
}

impl TryFrom<String> for EventSpec {
    type Error = ParseError;
    fn try_from(s: String) -> Result<Self, ParseError> {
        s.parse()
    }
}

impl From<EventSpec> for String {
    fn from(s: EventSpec) -> String {
        s.to_string()
    }
}

impl fmt::Display for EventSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = &self.modifiers;
        match &self.source {
            EventSource::HwpmcTerms(terms) => {
                // hwpmc style keeps its own qualifier syntax.
                let mut first = true;
                for t in terms {
                    if !first {
                        f.write_str(",")?;
                    }
                    first = false;
                    write!(f, "{t}")?;
                }
                if m.user {
                    f.write_str(",usr")?;
                }
                if m.kernel {
                    f.write_str(",os")?;
                }
                return Ok(());
            }
            EventSource::Portable(p) if self.name.is_some() => {
                write!(
                    f,
                    "{}/name={}/",
                    p.name(),
                    self.name.as_deref().unwrap_or("")
                )?;
                return write_mods(f, m, false);
            }
            EventSource::Generic(g) if self.name.is_some() => {
                write!(f, "{g}/name={}/", self.name.as_deref().unwrap_or(""))?;
                return write_mods(f, m, false);
            }
            EventSource::Portable(p) => f.write_str(p.name())?,
            EventSource::Generic(g) => f.write_str(g)?,
            EventSource::Raw(r) => write!(f, "r{r:x}")?,
            EventSource::Pmu { pmu, terms } => {
                write!(f, "{pmu}/")?;
                for (i, t) in terms.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{t}")?;
                }
                if let Some(n) = &self.name {
                    write!(f, ",name={n}")?;
                }
                f.write_str("/")?;
                return write_mods(f, m, false);
            }
            EventSource::Tracepoint { subsystem, name } => write!(f, "{subsystem}:{name}")?,
            EventSource::Hwpmc(n) => f.write_str(n)?,
        }
        write_mods(f, m, true)
    }
}
