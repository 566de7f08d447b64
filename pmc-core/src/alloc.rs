//! Allocation parameters: scope, mode, flags, and targets.

use crate::event::EventSpec;
use crate::ErrorKind;
use std::fmt;

/// Which CPUs a system-scope PMC counts on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
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
    /// use pmc::Cpus;
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
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
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
///
/// [`Period(n)`](Rate::Period) is in the event's own unit, which for the
/// time events ([`EventSpec::is_time`](crate::EventSpec::is_time)) is not a
/// count of occurrences:
///
/// | event | unit of `n` | Linux | FreeBSD |
/// |---|---|---|---|
/// | `cpu-clock`, `task-clock` | **nanoseconds** | perf's `sample_period`, ns | rounded to ticks of `kern.hz` (`SOFT-CLOCK.HARD`, `1e9 / kern.hz` ns a tick, at least one) |
/// | hwpmc's SOFT clocks: `SOFT-CLOCK.HARD` (`clock.hard`), `clock.stat`, `clock.prof` | **ticks** of that clock ([`SoftClock`](crate::SoftClock)) | `cpu-clock` (hard) or `task-clock` every `n` ticks of FreeBSD's default rate: `n` x 1 ms, x 7.874 ms, x 123 us | `n` ticks (hwpmc's reload count) |
/// | every other event (`instructions`, `page-faults`, raw...) | events | `sample_period` | reload count |
///
/// [`Frequency(n)`](Rate::Frequency) is about `n` samples a second while
/// the PMC counts, whatever the event.
///
/// ```
/// use pmc::{Allocation, Rate};
/// // One sample per millisecond of CPU time (cpu-clock counts nanoseconds)...
/// let ms = Allocation::sampling("cpu-clock".parse()?, Rate::Period(1_000_000));
/// // ...the same as one per tick of FreeBSD's hardclock at kern.hz = 1000.
/// let tick = Allocation::sampling("SOFT-CLOCK.HARD".parse()?, Rate::Period(1));
/// // One sample per 100,000 instructions.
/// let insns = Allocation::sampling("instructions".parse()?, Rate::Period(100_000));
/// # assert!(ms.event.is_time() && tick.event.is_time() && !insns.event.is_time());
/// # Ok::<(), pmc::ParseError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Rate {
    /// Once every N units of the event (hwpmc's reload count; perf's
    /// `sample_period`): events, but nanoseconds for `cpu-clock` and
    /// `task-clock` and ticks for hwpmc's SOFT clocks (see [`Rate`]).
    Period(u64),
    /// About N times a second while the PMC counts (perf's `sample_freq`;
    /// emulated on FreeBSD by choosing a period).
    Frequency(u64),
}

/// How a sampling PMC with [`Flags::CALLCHAIN`] takes its callchains.
///
/// ```
/// use pmc::{Allocation, CallGraph, Flags, Rate};
/// let a = Allocation::sampling("cpu-clock".parse().unwrap(), Rate::Frequency(1000))
///     .call_graph(CallGraph::dwarf());
/// assert_eq!(a.call_graph, CallGraph::Dwarf { stack_size: 8192 });
/// assert!(a.flags.contains(Flags::CALLCHAIN));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum CallGraph {
    /// The kernel follows frame pointers (hwpmc's `PMC_F_CALLCHAIN`; perf's `fp`). Code built
    /// without frame pointers (most distribution packages, Rust release builds) gives short or
    /// wrong user chains.
    #[default]
    FramePointers,
    /// Linux: with each sample the kernel copies the user registers and the top `stack_size`
    /// bytes of the user stack (`PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER`, as
    /// `perf record --call-graph dwarf`), and the recorder unwinds them with the objects'
    /// DWARF call-frame information, so the log stores callchains, not stacks. Kernel frames
    /// still come from the kernel. `stack_size` is a multiple of 8 up to 65528. FreeBSD's
    /// hwpmc cannot capture user stacks: allocation fails with `ErrorKind::NotSupported`.
    Dwarf {
        /// Bytes of user stack copied per sample (perf's default: 8192).
        stack_size: u32,
    },
    /// As [`CallGraph::Dwarf`], but the registers and stack go into the log (a
    /// `UserStack` record after each sample, kilobytes each, as in perf.data) and are unwound
    /// when the log is read, with the same code: for binaries that will only be at hand
    /// later, or on another machine (pmcstat's `-R LOG -r DIR`).
    DwarfRaw {
        /// Bytes of user stack copied per sample (perf's default: 8192).
        stack_size: u32,
    },
}

impl CallGraph {
    /// perf's default stack copy for `--call-graph dwarf`.
    pub const DEFAULT_STACK_SIZE: u32 = 8192;
    /// The largest stack copy a sample can carry (the kernel's limit: a record is at most
    /// 64 KiB).
    pub const MAX_STACK_SIZE: u32 = 65528;

    /// DWARF unwinding with perf's default stack copy.
    pub fn dwarf() -> CallGraph {
        CallGraph::Dwarf {
            stack_size: CallGraph::DEFAULT_STACK_SIZE,
        }
    }

    /// The stack copied per sample, for the DWARF modes.
    pub fn stack_size(&self) -> Option<u32> {
        match *self {
            CallGraph::FramePointers => None,
            CallGraph::Dwarf { stack_size } | CallGraph::DwarfRaw { stack_size } => {
                Some(stack_size)
            }
        }
    }

    /// Parses perf's `--call-graph` value: `fp`, `dwarf` or `dwarf,SIZE` (SIZE rounded up
    /// to a multiple of 8, as perf does), and pmc's `dwarf-raw[,SIZE]`.
    ///
    /// ```
    /// use pmc::CallGraph;
    /// assert_eq!("dwarf,4000".parse::<CallGraph>(), Ok(CallGraph::Dwarf { stack_size: 4000 }));
    /// assert_eq!("fp".parse::<CallGraph>(), Ok(CallGraph::FramePointers));
    /// assert!("dwarf,70000".parse::<CallGraph>().is_err());
    /// ```
    pub fn parse(s: &str) -> Result<CallGraph, String> {
        let mut parts = s.splitn(2, ',');
        let mode = parts.next().unwrap_or("");
        let stack_size = match parts.next() {
            None => CallGraph::DEFAULT_STACK_SIZE,
            Some(n) => {
                let n: u32 = n
                    .trim()
                    .parse()
                    .map_err(|_| format!("'{n}' is not a stack size in bytes"))?;
                let n = n.div_ceil(8).saturating_mul(8);
                if n == 0 || n > CallGraph::MAX_STACK_SIZE {
                    return Err(format!(
                        "stack size {n} is outside 8..={}",
                        CallGraph::MAX_STACK_SIZE
                    ));
                }
                if mode == "fp" {
                    return Err("fp takes no stack size".into());
                }
                n
            }
        };
        match mode {
            "fp" => Ok(CallGraph::FramePointers),
            "dwarf" => Ok(CallGraph::Dwarf { stack_size }),
            "dwarf-raw" => Ok(CallGraph::DwarfRaw { stack_size }),
            m => Err(format!(
                "unknown call-graph mode '{m}' (use fp, dwarf[,SIZE] or dwarf-raw[,SIZE])"
            )),
        }
    }
}

impl std::str::FromStr for CallGraph {
    type Err = String;
    fn from_str(s: &str) -> Result<CallGraph, String> {
        CallGraph::parse(s)
    }
}

/// Counting or sampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
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
/// use pmc::Flags;
/// let f = Flags::DESCENDANTS | Flags::CALLCHAIN;
/// assert!(f.contains(Flags::CALLCHAIN));
/// assert!(!f.contains(Flags::LOG_PROCEXIT));
/// assert_eq!(f.to_string(), "descendants,callchain");
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
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
    /// With [`Flags::CALLCHAIN`]: the callchain of a sample taken in the kernel
    /// also has the user-space frames of the thread below the kernel's
    /// (`PMC_F_USERCALLCHAIN`, pmcstat(8) -U). Without it such a callchain
    /// ends at the kernel's entry, as hwpmc's: user frames are only in the
    /// callchains of samples taken in user mode. (Bit 16 is pmc-log's
    /// `FLAG_DWARF_CALLCHAIN`, a property of the log, not an allocation flag.)
    pub const USERCALLCHAIN: Flags = Flags(32);
    const NAMES: [(Flags, &'static str); 5] = [
        (Flags::DESCENDANTS, "descendants"),
        (Flags::CALLCHAIN, "callchain"),
        (Flags::LOG_PROCEXIT, "log-procexit"),
        (Flags::LOG_PROCCSW, "log-proccsw"),
        (Flags::USERCALLCHAIN, "usercallchain"),
    ];

    /// The raw bits (the same values pmc-log records).
    pub const fn bits(self) -> u32 {
        self.0
    }
    /// Flags from raw bits; unknown bits are dropped.
    pub const fn from_bits_truncate(bits: u32) -> Flags {
        Flags(bits & 0x2f)
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
/// use pmc::{Allocation, Cpus, Flags, Mode, Rate, Scope};
/// let a = Allocation::counting("page-faults".parse().unwrap()).descendants();
/// assert_eq!(a.scope, Scope::Process);
/// assert!(a.flags.contains(Flags::DESCENDANTS));
///
/// let s = Allocation::sampling("cpu-clock".parse().unwrap(), Rate::Frequency(4000))
///     .scope(Scope::System { cpu: Cpus::All });
/// assert_eq!(s.mode, Mode::Sampling(Rate::Frequency(4000)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Allocation {
    /// What to count.
    pub event: EventSpec,
    /// Process or system scope.
    pub scope: Scope,
    /// Counting or sampling.
    pub mode: Mode,
    /// `PMC_F_*` flags.
    pub flags: Flags,
    /// How callchains are taken, for a sampling PMC with [`Flags::CALLCHAIN`].
    #[cfg_attr(feature = "serde", serde(default))]
    pub call_graph: CallGraph,
    /// A system-scope PMC counts only the tasks of this control group: perf's cgroup mode
    /// (`perf stat -a -G NAME`), for the processes of one container. `None` (the default)
    /// counts everything on the CPUs. Set it with [`Allocation::cgroup`], which documents the
    /// names taken; a process-scope PMC with a cgroup is refused at allocate
    /// ([`check_cgroup`](Allocation::check_cgroup)).
    #[cfg_attr(feature = "serde", serde(default))]
    pub cgroup: Option<String>,
    /// The id log records name this PMC by, when the caller chooses it (FreeBSD libpmc's
    /// `pmc_allocate` ids, so that a C client finds its own ids in its log); `None` (the
    /// default): the backend numbers its PMCs. A backend whose kernel names the PMCs (hwpmc)
    /// ignores it: the log carries the kernel's ids. Set it with [`Allocation::log_id`].
    #[cfg_attr(feature = "serde", serde(default))]
    pub log_id: Option<u32>,
}

impl Allocation {
    /// A process-scope counting PMC.
    pub fn counting(event: EventSpec) -> Allocation {
        Allocation {
            event,
            scope: Scope::Process,
            mode: Mode::Counting,
            flags: Flags::NONE,
            call_graph: CallGraph::FramePointers,
            cgroup: None,
            log_id: None,
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
            call_graph: CallGraph::FramePointers,
            cgroup: None,
            log_id: None,
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
    /// Sets how callchains are taken; [`CallGraph::Dwarf`] also adds [`Flags::CALLCHAIN`].
    pub fn call_graph(mut self, call_graph: CallGraph) -> Allocation {
        self.call_graph = call_graph;
        if call_graph.stack_size().is_some() {
            self.flags |= Flags::CALLCHAIN;
        }
        self
    }
    /// Names the PMC `id` in log records (see [`Allocation::log_id`](#structfield.log_id)).
    ///
    /// ```
    /// let a = pmc::Allocation::counting("page-faults".parse().unwrap()).log_id(0xFFF3_0F00);
    /// assert_eq!(a.log_id, Some(0xFFF3_0F00));
    /// ```
    pub fn log_id(mut self, id: u32) -> Allocation {
        self.log_id = Some(id);
        self
    }
    /// Adds [`Flags::DESCENDANTS`].
    pub fn descendants(mut self) -> Allocation {
        self.flags |= Flags::DESCENDANTS;
        self
    }
    /// Counts only the tasks of one control group, on the CPUs of a system-scope PMC: perf's
    /// cgroup mode (`perf stat -a -G NAME`), for everything that runs inside one container.
    ///
    /// `name` is a path relative to the cgroup mount that has perf_event (cgroup v2, or a
    /// v1 hierarchy mounted with the `perf_event` controller), as perf's `-G` takes it
    /// (`docker/<id>`, `system.slice/foo.service`; a leading `/` is allowed), or an absolute
    /// path inside such a mount (`/sys/fs/cgroup/system.slice`). The backend finds the mount
    /// at allocate.
    ///
    /// Counting or sampling (`perf record -a -G`): a sampler's samples are of the cgroup's
    /// tasks only.
    ///
    /// Linux only: FreeBSD's hwpmc has no cgroup filter and refuses such a PMC with
    /// [`ErrorKind::NotSupported`] (an option this system cannot do). Only with system
    /// scope ([`Allocation::system`]): a process-scope PMC with a cgroup is refused with
    /// [`ErrorKind::InvalidArgument`].
    ///
    /// ```
    /// use pmc::{Allocation, Cpus};
    /// let a = Allocation::counting("page-faults".parse().unwrap())
    ///     .system(Cpus::All)
    ///     .cgroup("system.slice/docker-0123.scope");
    /// assert_eq!(a.cgroup.as_deref(), Some("system.slice/docker-0123.scope"));
    /// assert!(a.check_cgroup().is_ok());
    ///
    /// // Process scope has no cgroup filter:
    /// let p = Allocation::counting("page-faults".parse().unwrap()).cgroup("pmctest");
    /// assert_eq!(p.check_cgroup().unwrap_err().kind(), pmc::ErrorKind::InvalidArgument);
    /// ```
    pub fn cgroup(mut self, name: impl Into<String>) -> Allocation {
        self.cgroup = Some(name.into());
        self
    }
    /// The backend-neutral rules of [`Allocation::cgroup`], which every backend applies at
    /// allocate: a cgroup filters a system-scope PMC only, and its name is not empty.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidArgument`] for a cgroup on a process-scope PMC, or an empty name
    /// (`/` is the root of the hierarchy, as perf's `-G /`).
    ///
    /// ```
    /// use pmc::{Allocation, Cpus};
    /// let a = Allocation::counting("page-faults".parse().unwrap()).cgroup("pmctest");
    /// let e = a.check_cgroup().unwrap_err();
    /// assert!(e.help().unwrap_or("").contains("Allocation::system"));
    /// assert!(a.system(Cpus::All).check_cgroup().is_ok());
    /// // `/` is the whole hierarchy, as perf -G / takes it; an empty name is refused.
    /// let all = Allocation::counting("page-faults".parse().unwrap()).system(Cpus::All);
    /// assert!(all.clone().cgroup("/").check_cgroup().is_ok());
    /// assert!(all.cgroup("").check_cgroup().is_err());
    /// ```
    pub fn check_cgroup(&self) -> crate::Result<()> {
        let Some(name) = &self.cgroup else {
            return Ok(());
        };
        if !self.scope.is_system() {
            return Err(crate::Error::new(
                ErrorKind::InvalidArgument,
                crate::Op::Allocate,
                format!(
                    "`{}`: cgroup `{name}` on a process-scope PMC; a cgroup filters what a \
                     system-scope PMC counts on its CPUs",
                    self.event
                ),
            )
            .with_help(
                "allocate it with Allocation::system(Cpus::All).cgroup(NAME) (perf stat -a -G), \
                 or count a process of the cgroup with a process-scope PMC attached to its pid",
            ));
        }
        if name.is_empty() {
            return Err(crate::Error::new(
                ErrorKind::InvalidArgument,
                crate::Op::Allocate,
                format!("`{}`: an empty cgroup name", self.event),
            )
            .with_help(
                "name a cgroup below the mount (`docker/<id>`), or leave the cgroup out to \
                 count everything on the CPUs",
            ));
        }
        Ok(())
    }
}

/// A process a process-scope PMC attaches to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Target {
    /// The calling process (hwpmc's "owner"), whole: every thread it has at
    /// attach time and every thread it creates later, as hwpmc counts a
    /// process (on Linux, `inherit` with `inherit_thread`, 5.13+; older
    /// kernels cannot follow new threads without following child processes
    /// too, and the attach is refused there rather than undercounting). Its
    /// child processes only with [`Flags::DESCENDANTS`]. A process PMC
    /// started without a target attaches to this.
    Current,
    /// The calling thread alone, not the threads it creates: what user-space
    /// counter reads need (`pmc::native::FastReader`). Linux only; hwpmc
    /// counts whole processes, and FreeBSD refuses it at attach. With
    /// [`Flags::DESCENDANTS`] the threads and processes it creates too.
    CurrentThread,
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
    /// The pid, or `None` for the calling process ([`Target::Current`],
    /// [`Target::CurrentThread`]).
    pub fn pid(&self) -> Option<u32> {
        match self {
            Target::Current | Target::CurrentThread => None,
            Target::Pid(p) | Target::Exec(p) => Some(*p),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Current => f.write_str("self"),
            Target::CurrentThread => f.write_str("the calling thread"),
            Target::Pid(p) => write!(f, "pid {p}"),
            Target::Exec(p) => write!(f, "pid {p} (from exec)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An allocation serialized before `cgroup` existed still reads, as no cgroup; one with
    /// a cgroup round-trips.
    #[test]
    fn cgroup_is_a_serde_default() {
        let a = Allocation::counting("page-faults".parse().unwrap()).system(Cpus::All);
        let mut j: serde_json::Value = serde_json::to_value(&a).unwrap();
        assert_eq!(j["cgroup"], serde_json::Value::Null);
        j.as_object_mut().unwrap().remove("cgroup");
        let back: Allocation = serde_json::from_value(j).unwrap();
        assert_eq!(back, a);
        let c = a.cgroup("docker/0123");
        let back: Allocation = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back.cgroup.as_deref(), Some("docker/0123"));
    }
}
