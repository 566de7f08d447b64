//! What a machine offers: event listings (`pmcstat -L`) and a diagnostics
//! report (`pmcstat --diagnose`), in a backend-neutral shape.

/// Where an event in a listing comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum EventSource {
    /// The portable names of [`PortableEvent`](crate::PortableEvent).
    Portable,
    /// Linux generic hardware events (`PERF_TYPE_HARDWARE`).
    Hardware,
    /// Kernel software events (`PERF_TYPE_SOFTWARE`).
    Software,
    /// Linux generic cache events (`PERF_TYPE_HW_CACHE`).
    Cache,
    /// A sysfs PMU (`/sys/bus/event_source/devices/<name>`) and its aliases.
    Pmu(String),
    /// Tracepoints.
    Tracepoint,
    /// A FreeBSD hwpmc class (`SOFT`, `TSC`, `IAP`, ...).
    HwpmcClass(String),
}

impl std::fmt::Display for EventSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EventSource::Portable => f.write_str("portable events"),
            EventSource::Hardware => f.write_str("Linux generic hardware events"),
            EventSource::Software => f.write_str("software events"),
            EventSource::Cache => f.write_str("cache events"),
            EventSource::Pmu(p) => write!(f, "PMU {p}"),
            EventSource::Tracepoint => f.write_str("tracepoints"),
            EventSource::HwpmcClass(c) => write!(f, "hwpmc class {c}"),
        }
    }
}

/// Whether an event can be opened here, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(
    feature = "serde",
    serde(rename_all = "snake_case", tag = "state", content = "reason")
)]
pub enum Availability {
    /// It was opened successfully (and closed again).
    Available,
    /// It cannot be opened; the reason says why.
    Unavailable(String),
    /// It was not probed (the reason says why, e.g. too many to try).
    NotProbed(String),
}

/// One event in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EventInfo {
    /// The name to pass to the parser.
    pub name: String,
    /// Where it comes from.
    pub source: EventSource,
    /// A short description.
    pub description: String,
    /// Whether it can be opened here.
    pub availability: Availability,
}

/// The verdict of one diagnostic check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Verdict {
    /// Works.
    Yes,
    /// Does not work; see the fix.
    No,
    /// Informational: neither good nor bad.
    Info,
}

/// One line of a diagnostics report.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Check {
    /// What was checked ("hardware PMU", "system-wide counting", ...).
    pub name: String,
    /// The verdict.
    pub verdict: Verdict,
    /// The facts found.
    pub detail: String,
    /// For a "no": the command or setting that fixes it.
    pub fix: Option<String>,
}

impl Check {
    /// A "yes" line.
    pub fn yes(name: &str, detail: impl Into<String>) -> Check {
        Check {
            name: name.to_owned(),
            verdict: Verdict::Yes,
            detail: detail.into(),
            fix: None,
        }
    }
    /// A "no" line with its fix.
    pub fn no(name: &str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name: name.to_owned(),
            verdict: Verdict::No,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
    /// An informational line.
    pub fn info(name: &str, detail: impl Into<String>) -> Check {
        Check {
            name: name.to_owned(),
            verdict: Verdict::Info,
            detail: detail.into(),
            fix: None,
        }
    }
}
