//! Allocation parameters: scope, mode, flags, and targets.

use crate::event::EventSpec;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Which CPUs a system-scope PMC counts on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cpus {
    /// Every online CPU (one counter per CPU, summed on read).
    All,
    /// One CPU.
    One(u32),
    /// A chosen list of CPUs (`pmcstat -c 0,2-3`).
    List(Vec<u32>),
}

impl Cpus {
    /// Parses a CPU list as `pmcstat -c` and `perf -C` take it: `0`, `0,2`,
    /// `1-3`, `0,4-7`, or `*`/`all`.
    ///
    /// ```
    /// use pmc_core::Cpus;
    /// assert_eq!(Cpus::parse_list("0,2-3").unwrap(), Cpus::List(vec![0, 2, 3]));
    /// assert_eq!(Cpus::parse_list("1").unwrap(), Cpus::One(1));
    /// assert!(Cpus::parse_list("3-1").is_err());
    /// ```
    pub fn parse_list(s: &str) -> Result<Cpus, String> {
        const MAX_CPU: u32 = 1 << 16;
        let s = s.trim();
        if s == "*" || s.eq_ignore_ascii_case("all") {
            return Ok(Cpus::All);
        }
        let mut cpus = Vec::new();
        for part in s.split(',') {
            let num = |x: &str| -> Result<u32, String> {
                let n: u32 = x
                    .trim()
                    .parse()
                    .map_err(|_| format!("bad CPU number `{x}` in `{s}`"))?;
                if n >= MAX_CPU {
                    return Err(format!("CPU {n} is out of range"));
                }
                Ok(n)
            };
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (num(a)?, num(b)?);
                    if a > b {
                        return Err(format!("bad CPU range `{part}`: {a} > {b}"));
                    }
                    cpus.extend(a..=b);
                }
                None => cpus.push(num(part)?),
            }
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(match cpus.as_slice() {
            [one] => Cpus::One(*one),
            _ => Cpus::List(cpus),
        })
    }
}

/// Where a PMC counts: hwpmc's process (virtual) or system scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Counts only while attached target processes run (hwpmc modes TC/TS;
    /// perf: `pid >= 0`, `cpu == -1`).
    Process,
    /// Counts everything that runs on the chosen CPUs (hwpmc modes SC/SS;
    /// perf: `pid == -1`, `cpu >= 0`).
    System {
        /// The CPUs to count on.
        cpu: Cpus,
    },
}

impl Scope {
    /// System scope on every CPU.
    pub fn all_cpus() -> Scope {
        Scope::System { cpu: Cpus::All }
    }
    /// Whether this is system scope.
    pub fn is_system(&self) -> bool {
        matches!(self, Scope::System { .. })
    }
}

/// How often a sampling PMC interrupts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    /// Once every N events (hwpmc's reload count; perf's `sample_period`).
    Period(u64),
    /// About N times a second (perf's `sample_freq`; emulated on FreeBSD by
    /// choosing a period).
    Frequency(u64),
}

/// Counting or sampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The PMC accumulates a count that you read.
    Counting,
    /// The PMC interrupts at a rate and logs a sample each time; samples go
    /// to the log configured with [`Backend::configure_log`](crate::Backend::configure_log).
    Sampling(Rate),
}

impl Mode {
    /// Whether this is a sampling mode.
    pub fn is_sampling(&self) -> bool {
        matches!(self, Mode::Sampling(_))
    }
}

/// hwpmc's `PMC_F_*` allocation flags, as a small bit set.
///
/// ```
/// use pmc_core::Flags;
/// let f = Flags::DESCENDANTS | Flags::CALLCHAIN;
/// assert!(f.contains(Flags::CALLCHAIN));
/// assert!(!f.contains(Flags::LOG_PROCEXIT));
/// assert_eq!(f.to_string(), "descendants,callchain");
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Flags(u32);

impl Flags {
    /// No flags.
    pub const NONE: Flags = Flags(0);
    /// Also count the targets' descendants (`PMC_F_DESCENDANTS`; perf's
    /// `inherit`).
    pub const DESCENDANTS: Flags = Flags(1);
    /// Record a callchain with each sample (`PMC_F_CALLCHAIN`).
    pub const CALLCHAIN: Flags = Flags(2);
    /// Log the counts of each target process at its exit
    /// (`PMC_F_LOG_PROCEXIT`).
    pub const LOG_PROCEXIT: Flags = Flags(4);
    /// Log the counts at each context switch of a target
    /// (`PMC_F_LOG_PROCCSW`): process scope only, and the PMC needs a log
    /// before it starts. On Linux each switch-out of a target thread logs the
    /// counts of the slice that just ended; this needs kernel-mode counting
    /// (CAP_PERFMON or `perf_event_paranoid` <= 1), and the slice that ends
    /// at a thread's exit is not logged.
    pub const LOG_PROCCSW: Flags = Flags(8);
    const NAMES: [(Flags, &'static str); 4] = [
        (Flags::DESCENDANTS, "descendants"),
        (Flags::CALLCHAIN, "callchain"),
        (Flags::LOG_PROCEXIT, "log-procexit"),
        (Flags::LOG_PROCCSW, "log-proccsw"),
    ];

    /// The raw bits (the same values pmc-log records).
    pub const fn bits(self) -> u32 {
        self.0
    }
    /// Flags from raw bits; unknown bits are dropped.
    pub const fn from_bits_truncate(bits: u32) -> Flags {
        Flags(bits & 0xf)
    }
    /// Whether every flag in `other` is set.
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
    /// Whether no flag is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for Flags {
    fn bitor_assign(&mut self, rhs: Flags) {
        self.0 |= rhs.0;
    }
}

impl fmt::Display for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (flag, name) in Flags::NAMES {
            if self.contains(flag) {
                if !first {
                    f.write_str(",")?;
                }
                first = false;
                f.write_str(name)?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Flags({self})")
    }
}

/// Everything needed to allocate one PMC: event, scope, mode and flags.
///
/// Built with consuming setters:
///
/// ```
/// use pmc_core::{Allocation, Cpus, Flags, Mode, Rate, Scope};
/// let a = Allocation::counting("page-faults".parse().unwrap()).descendants();
/// assert_eq!(a.scope, Scope::Process);
/// assert!(a.flags.contains(Flags::DESCENDANTS));
///
/// let s = Allocation::sampling("cpu-clock".parse().unwrap(), Rate::Frequency(4000))
///     .scope(Scope::System { cpu: Cpus::All });
/// assert_eq!(s.mode, Mode::Sampling(Rate::Frequency(4000)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Allocation {
    /// What to count.
    pub event: EventSpec,
    /// Process or system scope.
    pub scope: Scope,
    /// Counting or sampling.
    pub mode: Mode,
    /// `PMC_F_*` flags.
    pub flags: Flags,
}

impl Allocation {
    /// A process-scope counting PMC.
    pub fn counting(event: EventSpec) -> Allocation {
        Allocation {
            event,
            scope: Scope::Process,
            mode: Mode::Counting,
            flags: Flags::NONE,
        }
    }
    /// A process-scope sampling PMC, with callchains (as pmcstat does by
    /// default).
    pub fn sampling(event: EventSpec, rate: Rate) -> Allocation {
        Allocation {
            event,
            scope: Scope::Process,
            mode: Mode::Sampling(rate),
            flags: Flags::CALLCHAIN,
        }
    }
    /// Sets the scope.
    pub fn scope(mut self, scope: Scope) -> Allocation {
        self.scope = scope;
        self
    }
    /// System scope on the given CPUs.
    pub fn system(self, cpu: Cpus) -> Allocation {
        self.scope(Scope::System { cpu })
    }
    /// Sets the mode.
    pub fn mode(mut self, mode: Mode) -> Allocation {
        self.mode = mode;
        self
    }
    /// Replaces the flags.
    pub fn flags(mut self, flags: Flags) -> Allocation {
        self.flags = flags;
        self
    }
    /// Adds [`Flags::DESCENDANTS`].
    pub fn descendants(mut self) -> Allocation {
        self.flags |= Flags::DESCENDANTS;
        self
    }
}

/// A process a process-scope PMC attaches to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// The calling process (hwpmc's "owner"). On Linux: every thread of
    /// the process at attach time (one counter per thread, summed); with
    /// [`Flags::DESCENDANTS`] also the threads and processes they create
    /// afterwards. Without it, threads created after the attach are not
    /// counted on Linux, unlike hwpmc.
    Current,
    /// A running process, by pid: all its threads, including those it
    /// creates later (on Linux, `inherit_thread`, 5.13+); its child
    /// processes only with [`Flags::DESCENDANTS`].
    Pid(u32),
    /// A child created paused (see `pmc::launch`), whose counting starts at
    /// its `exec` (perf's `enable_on_exec`; on FreeBSD, at attach, while the
    /// child still waits to exec). Like [`Target::Pid`], all its threads.
    Exec(u32),
}

impl Target {
    /// The pid, or `None` for [`Target::Current`].
    pub fn pid(&self) -> Option<u32> {
        match self {
            Target::Current => None,
            Target::Pid(p) | Target::Exec(p) => Some(*p),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Current => f.write_str("self"),
            Target::Pid(p) => write!(f, "pid {p}"),
            Target::Exec(p) => write!(f, "pid {p} (from exec)"),
        }
    }
}
