//! Resolving an [`EventSpec`] against this machine: generic names, sysfs
//! PMUs and their aliases, tracepoint ids, hwpmc SOFT names, and the CPU's
//! own event names from the [`pmc_events`] table (selected by the CPU in
//! `/proc/cpuinfo`, after sysfs aliases).

use perf_event_open_sys::bindings as b;
use pmc_core::event::Term;
use pmc_core::{Error, ErrorKind, EventSource, EventSpec, Op, PortableEvent};
use pmc_events::{CpuId, Kind, Table};
use std::path::{Path, PathBuf};

use crate::sys::Sys;

/// An event as `perf_event_attr` needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// `attr.type`.
    pub type_: u32,
    /// `attr.config`.
    pub config: u64,
    /// `attr.config1`.
    pub config1: u64,
    /// `attr.config2`.
    pub config2: u64,
}

impl Resolved {
    fn new(type_: u32, config: u64) -> Resolved {
        Resolved {
            type_,
            config,
            config1: 0,
            config2: 0,
        }
    }
    /// Whether the event needs a hardware PMU.
    pub(crate) fn is_hardware(&self) -> bool {
        matches!(
            self.type_,
            b::PERF_TYPE_HARDWARE | b::PERF_TYPE_HW_CACHE | b::PERF_TYPE_RAW
        )
    }
    /// Whether this is a tracepoint.
    pub(crate) fn is_tracepoint(&self) -> bool {
        self.type_ == b::PERF_TYPE_TRACEPOINT
    }
}

/// Where sysfs lists the PMUs.
pub(crate) const PMU_DIR: &str = crate::sys::facts::PMU_DIR;
/// Where tracefs may be mounted.
pub(crate) const TRACEFS_DIRS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

fn no_event(spec: &EventSpec, why: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::NoSuchEvent,
        Op::Allocate,
        format!("no such event `{spec}`: {}", why.into()),
    )
    .with_help("`Backend::list_events` lists the events this machine has")
}

/// The portable events' Linux encodings.
pub(crate) fn portable(p: PortableEvent) -> Resolved {
    use PortableEvent::*;
    let (t, c) = match p {
        Cycles => (b::PERF_TYPE_HARDWARE, b::PERF_COUNT_HW_CPU_CYCLES),
        Instructions => (b::PERF_TYPE_HARDWARE, b::PERF_COUNT_HW_INSTRUCTIONS),
        Branches => (b::PERF_TYPE_HARDWARE, b::PERF_COUNT_HW_BRANCH_INSTRUCTIONS),
        BranchMisses => (b::PERF_TYPE_HARDWARE, b::PERF_COUNT_HW_BRANCH_MISSES),
        CacheReferences => (b::PERF_TYPE_HARDWARE, b::PERF_COUNT_HW_CACHE_REFERENCES),
        CacheMisses => (b::PERF_TYPE_HARDWARE, b::PERF_COUNT_HW_CACHE_MISSES),
        CpuClock => (b::PERF_TYPE_SOFTWARE, b::PERF_COUNT_SW_CPU_CLOCK),
        TaskClock => (b::PERF_TYPE_SOFTWARE, b::PERF_COUNT_SW_TASK_CLOCK),
        PageFaults => (b::PERF_TYPE_SOFTWARE, b::PERF_COUNT_SW_PAGE_FAULTS),
        ContextSwitches => (b::PERF_TYPE_SOFTWARE, b::PERF_COUNT_SW_CONTEXT_SWITCHES),
        CpuMigrations => (b::PERF_TYPE_SOFTWARE, b::PERF_COUNT_SW_CPU_MIGRATIONS),
    };
    Resolved::new(t, u64::from(c))
}

fn generic(name: &str) -> Option<Resolved> {
    let n = name.to_ascii_lowercase();
    let hw = |c: u32| Some(Resolved::new(b::PERF_TYPE_HARDWARE, u64::from(c)));
    let sw = |c: u32| Some(Resolved::new(b::PERF_TYPE_SOFTWARE, u64::from(c)));
    match n.as_str() {
        "bus-cycles" => return hw(b::PERF_COUNT_HW_BUS_CYCLES),
        "stalled-cycles-frontend" | "idle-cycles-frontend" => {
            return hw(b::PERF_COUNT_HW_STALLED_CYCLES_FRONTEND)
        }
        "stalled-cycles-backend" | "idle-cycles-backend" => {
            return hw(b::PERF_COUNT_HW_STALLED_CYCLES_BACKEND)
        }
        "ref-cycles" => return hw(b::PERF_COUNT_HW_REF_CPU_CYCLES),
        "minor-faults" => return sw(b::PERF_COUNT_SW_PAGE_FAULTS_MIN),
        "major-faults" => return sw(b::PERF_COUNT_SW_PAGE_FAULTS_MAJ),
        "alignment-faults" => return sw(b::PERF_COUNT_SW_ALIGNMENT_FAULTS),
        "emulation-faults" => return sw(b::PERF_COUNT_SW_EMULATION_FAULTS),
        "dummy" => return sw(b::PERF_COUNT_SW_DUMMY),
        "bpf-output" => return sw(b::PERF_COUNT_SW_BPF_OUTPUT),
        "cgroup-switches" => return sw(b::PERF_COUNT_SW_CGROUP_SWITCHES),
        _ => {}
    }
    // Cache events: <cache>-<op>[-misses].
    let caches = [
        ("l1-dcache", 0u64),
        ("l1-icache", 1),
        ("llc", 2),
        ("dtlb", 3),
        ("itlb", 4),
        ("branch", 5),
        ("node", 6),
    ];
    let ops = [
        ("loads", 0u64, 0u64),
        ("load-misses", 0, 1),
        ("stores", 1, 0),
        ("store-misses", 1, 1),
        ("prefetches", 2, 0),
        ("prefetch-misses", 2, 1),
    ];
    for (cname, cid) in caches {
        if let Some(rest) = n.strip_prefix(cname).and_then(|r| r.strip_prefix('-')) {
            for (oname, op, res) in ops {
                if rest == oname {
                    return Some(Resolved::new(
                        b::PERF_TYPE_HW_CACHE,
                        cid | (op << 8) | (res << 16),
                    ));
                }
            }
        }
    }
    None
}

/// Resolves a spec on this machine.
///
/// # Errors
///
/// [`ErrorKind::NoSuchEvent`] for unknown PMUs, aliases, formats or
/// tracepoints; [`ErrorKind::NotSupported`] for hwpmc events Linux has no
/// counterpart for.
pub(crate) fn resolve(sys: &dyn Sys, spec: &EventSpec) -> Result<Resolved, Error> {
    resolve_in(
        sys,
        spec,
        Path::new(PMU_DIR),
        &TRACEFS_DIRS.map(PathBuf::from),
    )
}

/// This machine's CPU, from `/proc/cpuinfo` (which `sys` reads once).
pub(crate) fn host_cpu(sys: &dyn Sys) -> Option<CpuId> {
    CpuId::from_proc_cpuinfo(&sys.cpuinfo())
}

/// [`resolve`] against other sysfs/tracefs roots (for tests).
pub(crate) fn resolve_in(
    sys: &dyn Sys,
    spec: &EventSpec,
    pmu_dir: &Path,
    tracefs: &[PathBuf],
) -> Result<Resolved, Error> {
    resolve_for(sys, spec, pmu_dir, tracefs, host_cpu(sys).as_ref())
}

/// [`resolve_in`] for a given CPU (the seam for tests with fake CPUIDs).
pub(crate) fn resolve_for(
    sys: &dyn Sys,
    spec: &EventSpec,
    pmu_dir: &Path,
    tracefs: &[PathBuf],
    cpu: Option<&CpuId>,
) -> Result<Resolved, Error> {
    match &spec.source {
        EventSource::Portable(p) => Ok(portable(*p)),
        EventSource::Generic(_) if spec.is_duration_time() => Err(Error::new(
            ErrorKind::NotSupported,
            Op::Allocate,
            format!(
                "`{spec}` is perf stat's tool event, the run's wall-clock time: no kernel counter \
                 counts it (perf opens a dummy event and times the run itself)"
            ),
        )
        .with_help("time the work with std::time::Instant")),
        EventSource::Generic(g) => {
            generic(g).ok_or_else(|| no_event(spec, "not a Linux generic event"))
        }
        EventSource::Raw(c) => Ok(Resolved::new(b::PERF_TYPE_RAW, *c)),
        EventSource::Pmu { pmu, terms } => pmu_event(sys, spec, pmu_dir, pmu, terms),
        EventSource::Tracepoint { subsystem, name } => {
            if let Some((why, fix)) = crate::env::Tracefs::probe_on(sys, tracefs).problem() {
                return Err(
                    no_event(spec, format!("{why}, so tracepoints cannot be resolved"))
                        .with_help(fix),
                );
            }
            for dir in tracefs {
                let id_path = dir.join("events").join(subsystem).join(name).join("id");
                if let Ok(s) = read_string(sys, &id_path) {
                    let id: u64 = s.trim().parse().map_err(|_| {
                        no_event(spec, format!("{} holds `{}`", id_path.display(), s.trim()))
                    })?;
                    return Ok(Resolved::new(b::PERF_TYPE_TRACEPOINT, id));
                }
            }
            Err(no_event(
                spec,
                format!(
                    "no tracepoint {subsystem}:{name} under {}/events",
                    tracefs[0].display()
                ),
            )
            .with_help(
                "list them: ls /sys/kernel/tracing/events (or `Backend::list_events(true)`)",
            ))
        }
        EventSource::Hwpmc(name) => named(sys, spec, name, pmu_dir, cpu),
        EventSource::HwpmcTerms(terms) => match terms.first() {
            Some(first) if first.value.is_none() && !is_flag_term(&first.key) => {
                // `inst_retired.any,cmask=1,inv`: a table event plus qualifiers.
                let base = named(sys, spec, &first.key, pmu_dir, cpu)?;
                if base.type_ != b::PERF_TYPE_RAW && !is_cpu_pmu_type(sys, base.type_, pmu_dir) {
                    return Err(no_event(
                        spec,
                        format!(
                            "qualifiers apply to CPU events only, and `{}` is not one",
                            first.key
                        ),
                    ));
                }
                let extra = hwpmc_terms(spec, &terms[1..])?;
                // A qualifier replaces the field it names.
                let mut config = base.config;
                for t in &terms[1..] {
                    let mask = match t.key.to_ascii_lowercase().as_str() {
                        "event" => 0xFF,
                        "umask" => 0xFF00,
                        "cmask" | "threshold" => 0xFF00_0000,
                        _ => 0,
                    };
                    config &= !mask;
                }
                Ok(Resolved {
                    config: config | extra.config,
                    ..base
                })
            }
            _ => hwpmc_terms(spec, terms),
        },
    }
}

fn is_flag_term(k: &str) -> bool {
    matches!(
        k.to_ascii_lowercase().as_str(),
        "edge" | "inv" | "anythread" | "any"
    )
}

/// A sysfs or tracefs file's text.
fn read_string(sys: &dyn Sys, path: &Path) -> std::io::Result<String> {
    String::from_utf8(sys.read_file(path)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

fn is_cpu_pmu_type(sys: &dyn Sys, t: u32, pmu_dir: &Path) -> bool {
    ["cpu", "cpu_core", "cpu_atom", "armv8_pmuv3_0"]
        .iter()
        .any(|p| {
            read_string(sys, &pmu_dir.join(p).join("type"))
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok())
                == Some(t)
        })
}

/// hwpmc class prefixes a table name may carry (`iap-inst_retired.any`).
const CLASS_PREFIXES: [&str; 4] = ["iap-", "iaf-", "k8-", "armv8-"];

/// A named event: `tsc`, a table event for this CPU (with or without a
/// hwpmc class prefix), a libpmc alias, or a SOFT name.
fn named(
    sys: &dyn Sys,
    spec: &EventSpec,
    name: &str,
    pmu_dir: &Path,
    cpu: Option<&CpuId>,
) -> Result<Resolved, Error> {
    if name.eq_ignore_ascii_case("tsc") || name.eq_ignore_ascii_case("tsc-tsc") {
        // The msr PMU's `tsc` event (arch/x86/events/msr.c).
        return pmu_event(sys, spec, pmu_dir, "msr", &[Term { key: "tsc".into(), value: None }]).map_err(|_| {
            Error::new(ErrorKind::NotSupported, Op::Allocate, format!("`{spec}`: the time-stamp counter is read through the msr PMU, which this kernel does not have ({}/msr)", pmu_dir.display()))
                .with_help("use ref-cycles or cpu-clock, or load a kernel with CONFIG_PERF_EVENTS_INTEL_MSR / AMD msr support")
        });
    }
    let lower = name.to_ascii_lowercase();
    let bare = CLASS_PREFIXES
        .iter()
        .find_map(|p| lower.strip_prefix(p).map(|_| &name[p.len()..]))
        .unwrap_or(name);
    let table = cpu.and_then(Table::for_cpu);
    if let Some(t) = table {
        if let Some((e, _alias)) = pmc_events::lookup(t, bare) {
            let type_ = if t.kind() == Kind::IntelCore {
                // Hybrid Intel: the table is the P-core's (cpu_core PMU).
                read_string(sys, &pmu_dir.join("cpu_core").join("type"))
                    .ok()
                    .and_then(|s| s.trim().parse::<u32>().ok())
                    .unwrap_or(b::PERF_TYPE_RAW)
            } else {
                b::PERF_TYPE_RAW
            };
            return Ok(Resolved {
                type_,
                config: e.config(),
                config1: e.config1(),
                config2: 0,
            });
        }
    }
    // A legacy libpmc name (pmc.k8(3), pmc.iaf(3), Intel's architectural events) whose
    // event is a generic one: the kernel programs it for this CPU.
    if let Some(g) = pmc_events::libpmc_generic(name).or_else(|| pmc_events::libpmc_generic(bare)) {
        if let Some(r) = PortableEvent::from_name(g)
            .map(portable)
            .or_else(|| generic(g))
        {
            return Ok(r);
        }
    }
    let elsewhere: Vec<&str> = pmc_events::tables_with(bare)
        .map(|(t, _)| t.name())
        .collect();
    let alias = pmc_events::is_libpmc_alias(bare);
    if !elsewhere.is_empty() || alias {
        let here = match (cpu, table) {
            (Some(c), Some(t)) => format!(
                "this CPU ({c}) uses the {} table, which has no `{bare}`",
                t.name()
            ),
            (Some(c), None) => format!("this CPU ({c}) has no pmu-events table in pmc"),
            (None, _) => "this machine's CPU could not be identified from /proc/cpuinfo".to_owned(),
        };
        let what = if elsewhere.is_empty() {
            format!("`{bare}` is a libpmc alias")
        } else {
            format!("`{bare}` is an event of {}", elsewhere.join(", "))
        };
        return Err(Error::new(ErrorKind::NotSupported, Op::Allocate, format!("`{spec}`: {what}, but {here}"))
            .with_help("`Backend::list_events` lists this CPU's events; raw encodings work too (rNNNN, cpu/event=..,umask=../)"));
    }
    hwpmc_name(spec, name)
}

/// The kernel's `sample_period` for a sampling period of `period` events of `spec`: the same
/// number, except for FreeBSD's SOFT clocks (`clock.hard`, `clock.stat`, `clock.prof`), whose
/// unit is a tick of their clock. Linux has no such tick counter, so they sample `cpu-clock`
/// (`clock.hard`) or `task-clock` (`clock.stat`, `clock.prof`) every `period` ticks of
/// FreeBSD's default rate: N x 1 ms for `clock.hard` (kern.hz = 1000), N x 7.874 ms for
/// `clock.stat` (stathz = 127), N x 123 us for `clock.prof` (profhz = 127 x 64); see
/// [`pmc_core::SoftClock`] for the FreeBSD sources. The samples' own periods in the log stay
/// what the kernel reports for those events: the nanoseconds each sample stands for.
pub(crate) fn soft_clock_period(spec: &EventSpec, period: u64) -> u64 {
    match spec.soft_clock() {
        Some(c) => period.saturating_mul(c.tick_ns()),
        None => period,
    }
}

/// The largest `sample_period` the kernel takes (`perf_event_open` rejects one with the top
/// bit set: `kernel/events/core.c`, `perf_event_open`, `attr.sample_period & (1ULL << 63)`).
const MAX_KERNEL_PERIOD: u64 = i64::MAX as u64;

/// Whether `spec` can be allocated in this mode with its unit kept: a FreeBSD SOFT clock
/// (`clock.hard`, `clock.stat`, `clock.prof`) counts ticks, and Linux has no tick counter,
/// so counting one is refused (a count in nanoseconds under a tick's name would be a silent
/// unit change: `clock.hard` read 546,986,168 for 0.55 s where FreeBSD reads about 550).
/// Sampling one keeps the unit in the period ([`soft_clock_period`]).
pub(crate) fn check_allocation(a: &pmc_core::Allocation) -> Result<(), Error> {
    let Some(clock) = a.event.soft_clock() else {
        return Ok(());
    };
    let base = if clock == pmc_core::SoftClock::Hard {
        "cpu-clock"
    } else {
        "task-clock"
    };
    match a.mode {
        pmc_core::Mode::Counting => Err(Error::new(
            ErrorKind::NotSupported,
            Op::Allocate,
            format!(
                "`{}` counts FreeBSD's clock ticks ({}, {} a second by default); Linux has no \
                 tick counter, and {base} counts nanoseconds",
                a.event,
                clock.rate_name(),
                clock.default_hz()
            ),
        )
        .with_help(format!(
            "count `{base}` (nanoseconds) with `Allocation::counting`; `{}` works for \
                 `Allocation::sampling`, one sample every N ticks of {} ns",
            a.event,
            clock.tick_ns()
        ))),
        pmc_core::Mode::Sampling(pmc_core::Rate::Period(p))
            if p.checked_mul(clock.tick_ns())
                .is_none_or(|ns| ns > MAX_KERNEL_PERIOD) =>
        {
            Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Allocate,
                format!(
                    "`{}`: a period of {p} ticks is {p} x {} ns of {base}, more than the \
                 kernel's largest period",
                    a.event,
                    clock.tick_ns()
                ),
            )
            .with_help("use a smaller period"))
        }
        pmc_core::Mode::Sampling(_) => Ok(()),
    }
}

/// hwpmc SOFT names that have a Linux software counterpart.
fn hwpmc_name(spec: &EventSpec, name: &str) -> Result<Resolved, Error> {
    let n = name.to_ascii_uppercase().replace(['-', ' '], "_");
    let n = n.strip_prefix("SOFT_").unwrap_or(&n);
    let sw = |c: u32| Ok(Resolved::new(b::PERF_TYPE_SOFTWARE, u64::from(c)));
    match n {
        // The SOFT clocks count FreeBSD's ticks; `check_allocation` keeps that unit
        // (see `soft_clock_period`).
        "CLOCK.HARD" => sw(b::PERF_COUNT_SW_CPU_CLOCK),
        "CLOCK.PROF" | "CLOCK.STAT" => sw(b::PERF_COUNT_SW_TASK_CLOCK),
        "PAGE_FAULT.ALL" => sw(b::PERF_COUNT_SW_PAGE_FAULTS),
        "PAGE_FAULT.READ" | "PAGE_FAULT.WRITE" => Err(Error::new(
            ErrorKind::NotSupported,
            Op::Allocate,
            format!("`{spec}`: Linux counts page faults without a read/write split"),
        )
        .with_help("use page-faults (PAGE_FAULT.ALL), minor-faults or major-faults")),
        _ => Err(Error::new(
            ErrorKind::NoSuchEvent,
            Op::Allocate,
            format!("`{spec}` is a FreeBSD hwpmc event with no Linux counterpart"),
        )
        .with_help("use a portable name (cycles, instructions, page-faults, ...) or a perf event; `Backend::list_events` lists them")),
    }
}

/// hwpmc's `event=,umask=,cmask=,edge,inv` for x86, as a raw config.
fn hwpmc_terms(spec: &EventSpec, terms: &[Term]) -> Result<Resolved, Error> {
    let mut config = 0u64;
    for t in terms {
        let v = t.value.unwrap_or(1);
        let (shift, width) = match t.key.to_ascii_lowercase().as_str() {
            "event" => (0, 8),
            "umask" => (8, 8),
            "edge" => (18, 1),
            "anythread" => (21, 1),
            "inv" => (23, 1),
            "cmask" | "threshold" => (24, 8),
            _ => {
                return Err(Error::new(
                    ErrorKind::NotSupported,
                    Op::Allocate,
                    format!(
                        "`{spec}`: the term `{}` has no x86 raw encoding on Linux",
                        t.key
                    ),
                )
                .with_help("write it as a raw event (rNNNN) or cpu/event=..,umask=../"))
            }
        };
        if v >> width != 0 {
            return Err(no_event(
                spec,
                format!("{}={v:#x} does not fit in {width} bits", t.key),
            ));
        }
        config |= v << shift;
    }
    Ok(Resolved::new(b::PERF_TYPE_RAW, config))
}

/// `pmu/terms/`: the PMU's dynamic type and each term placed by its sysfs
/// format (`config:0-7`), aliases expanded from `events/`.
fn pmu_event(
    sys: &dyn Sys,
    spec: &EventSpec,
    dir: &Path,
    pmu: &str,
    terms: &[Term],
) -> Result<Resolved, Error> {
    let pmu_dir = dir.join(pmu);
    let type_ = read_string(sys, &pmu_dir.join("type"))
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .ok_or_else(|| {
            let mut e = no_event(spec, format!("no PMU `{pmu}` in {}", dir.display()));
            if pmu == "cpu" && !crate::sys::facts::has_hardware_pmu(sys) {
                e = Error::new(ErrorKind::NoPmu, Op::Allocate, format!("`{spec}`: this machine exposes no hardware PMU (no {}/cpu; common in virtual machines)", dir.display()))
                    .with_help("use software events (task-clock, page-faults, cpu-clock), or enable a virtual PMU in the hypervisor");
            }
            e
        })?;
    let mut r = Resolved::new(type_, 0);
    let mut expanded: Vec<(String, u64)> = Vec::new();
    for t in terms {
        match t.value {
            Some(v) => expanded.push((t.key.clone(), v)),
            None if sys.metadata(&pmu_dir.join("format").join(&t.key)).is_ok() => {
                expanded.push((t.key.clone(), 1))
            }
            None => {
                let alias =
                    read_string(sys, &pmu_dir.join("events").join(&t.key)).map_err(|_| {
                        no_event(
                            spec,
                            format!("PMU `{pmu}` has no format or event named `{}`", t.key),
                        )
                    })?;
                for part in alias.trim().split(',').filter(|p| !p.is_empty()) {
                    let (k, v) = part.split_once('=').unwrap_or((part, "1"));
                    let v = parse_sysfs_number(v).ok_or_else(|| {
                        no_event(spec, format!("alias `{}` has a bad term `{part}`", t.key))
                    })?;
                    expanded.push((k.trim().to_owned(), v));
                }
            }
        }
    }
    for (key, value) in expanded {
        let fmt = match read_string(sys, &pmu_dir.join("format").join(&key)) {
            Ok(f) => f,
            // perf's built-in terms, for any PMU (`software/config=2/`): the whole field.
            Err(_) if matches!(key.as_str(), "config" | "config1" | "config2") => {
                format!("{key}:0-63")
            }
            Err(_) => return Err(no_event(spec, format!("PMU `{pmu}` has no format `{key}`"))),
        };
        place(&mut r, fmt.trim(), value)
            .map_err(|why| no_event(spec, format!("term {key}={value:#x}: {why}")))?;
    }
    Ok(r)
}

fn parse_sysfs_number(v: &str) -> Option<u64> {
    let v = v.trim();
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

/// Places `value` into the config field(s) a sysfs format describes:
/// `config:0-7`, `config1:0-63`, `config:0-7,32-35` (bits filled low to high).
pub(crate) fn place(r: &mut Resolved, format: &str, mut value: u64) -> Result<(), String> {
    let (field, ranges) = format
        .split_once(':')
        .ok_or_else(|| format!("bad format `{format}`"))?;
    let target = match field {
        "config" => &mut r.config,
        "config1" => &mut r.config1,
        "config2" => &mut r.config2,
        _ => return Err(format!("unsupported format field `{field}`")),
    };
    for range in ranges.split(',') {
        let (lo, hi) = match range.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>(), b.trim().parse::<u32>()),
            None => (range.trim().parse::<u32>(), range.trim().parse::<u32>()),
        };
        let (lo, hi) = match (lo, hi) {
            (Ok(l), Ok(h)) if l <= h && h < 64 => (l, h),
            _ => return Err(format!("bad bit range `{range}`")),
        };
        let width = hi - lo + 1;
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        *target |= (value & mask) << lo;
        value = if width == 64 { 0 } else { value >> width };
    }
    if value != 0 {
        return Err(format!("value too wide for `{format}`"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soft_clock_periods_are_ticks() {
        let spec = |s: &str| s.parse().unwrap();
        assert_eq!(soft_clock_period(&spec("clock.hard"), 3), 3_000_000);
        assert_eq!(soft_clock_period(&spec("cpu-clock"), 3), 3);
    }

    #[test]
    fn soft_clocks_count_only_by_sampling() {
        use pmc_core::{Allocation, Rate};
        let hard = || "clock.hard".parse().unwrap();
        let e = check_allocation(&Allocation::counting(hard())).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotSupported);
        assert!(check_allocation(&Allocation::sampling(hard(), Rate::Period(1))).is_ok());
    }

    fn fake_pmu() -> tempdir::Dir {
        let d = tempdir::Dir::new();
        let cpu = d.path().join("cpu");
        std::fs::create_dir_all(cpu.join("format")).unwrap();
        std::fs::create_dir_all(cpu.join("events")).unwrap();
        std::fs::write(cpu.join("type"), "4\n").unwrap();
        std::fs::write(cpu.join("format/event"), "config:0-7\n").unwrap();
        std::fs::write(cpu.join("format/umask"), "config:8-15\n").unwrap();
        std::fs::write(cpu.join("format/edge"), "config:18\n").unwrap();
        std::fs::write(cpu.join("format/ldlat"), "config1:0-15\n").unwrap();
        std::fs::write(
            cpu.join("events/mem-loads"),
            "event=0xcd,umask=0x1,ldlat=3\n",
        )
        .unwrap();
        d
    }

    mod tempdir {
        pub(super) struct Dir(std::path::PathBuf);
        impl Dir {
            pub(super) fn new() -> Dir {
                use std::sync::atomic::{AtomicU32, Ordering};
                static N: AtomicU32 = AtomicU32::new(0);
                let p = std::env::temp_dir().join(format!(
                    "pmc-resolve-{}-{}",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
            pub(super) fn path(&self) -> &std::path::Path {
                &self.0
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    fn r(s: &str, d: &Path) -> Result<Resolved, Error> {
        resolve_in(&crate::sys::RealSys, &s.parse().unwrap(), d, &[])
    }

    #[test]
    fn pmu_terms_use_sysfs_formats() {
        let d = fake_pmu();
        let x = r("cpu/event=0x3c,umask=0x1,edge/", d.path()).unwrap();
        assert_eq!(
            x,
            Resolved {
                type_: 4,
                config: 0x3c | 0x100 | (1 << 18),
                config1: 0,
                config2: 0
            }
        );
        let x = r("cpu/mem-loads/", d.path()).unwrap();
        assert_eq!((x.config, x.config1), (0x1cd, 3));
        let e = r("cpu/event=0x1ff/", d.path()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NoSuchEvent, "{e}");
        let e = r("cpu/bogus/", d.path()).unwrap_err();
        assert!(
            e.to_string().contains("no format or event named `bogus`"),
            "{e}"
        );
        let e = r("nopmu/event=1/", d.path()).unwrap_err();
        assert!(e.to_string().contains("no PMU `nopmu`"), "{e}");
    }

    /// Issue 20, defect 3: `clock.hard` read 546,986,168 (nanoseconds of cpu-clock) where
    /// FreeBSD reads about 530 ticks. Counting a SOFT clock is refused, naming the
    /// nanosecond event; sampling one keeps the tick as the period's unit.
    #[test]
    fn soft_clocks_keep_their_tick_unit() {
        use pmc_core::{Allocation, Rate};
        let spec = |s: &str| s.parse::<EventSpec>().unwrap();
        for (name, base) in [
            ("clock.hard", "cpu-clock"),
            ("SOFT-CLOCK.HARD", "cpu-clock"),
            ("clock.stat", "task-clock"),
            ("SOFT_CLOCK.PROF", "task-clock"),
        ] {
            let e = check_allocation(&Allocation::counting(spec(name))).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NotSupported, "{name}");
            assert!(e.message().contains("ticks"), "{name}: {e}");
            let help = e.help().unwrap_or_default();
            assert!(help.contains(base), "{name}: {help}");
            for rate in [Rate::Period(1), Rate::Frequency(4000)] {
                assert!(
                    check_allocation(&Allocation::sampling(spec(name), rate)).is_ok(),
                    "{name} {rate:?}"
                );
            }
        }
        // Ticks of kern.hz = 1000, stathz = 127, profhz = 8128, in nanoseconds.
        assert_eq!(soft_clock_period(&spec("clock.hard"), 1), 1_000_000);
        assert_eq!(
            soft_clock_period(&spec("clock.hard"), 65536),
            65_536_000_000
        );
        assert_eq!(soft_clock_period(&spec("clock.stat"), 2), 2 * 7_874_016);
        assert_eq!(soft_clock_period(&spec("clock.prof"), 1), 123_031);
        // Everything else keeps its period and its counting.
        for name in ["cpu-clock", "task-clock", "page-faults", "PAGE_FAULT.ALL"] {
            assert_eq!(soft_clock_period(&spec(name), 7), 7, "{name}");
            assert!(check_allocation(&Allocation::counting(spec(name))).is_ok());
        }
        // A period the kernel cannot take once in nanoseconds is refused, not wrapped.
        let huge = Allocation::sampling(spec("clock.hard"), Rate::Period(u64::MAX / 1000));
        assert_eq!(
            check_allocation(&huge).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }

    #[test]
    fn generic_and_cache() {
        let d = Path::new("/nonexistent");
        assert_eq!(r("page-faults", d).unwrap(), Resolved::new(1, 2));
        assert_eq!(r("cycles", d).unwrap(), Resolved::new(0, 0));
        assert_eq!(
            r("L1-dcache-load-misses", d).unwrap(),
            Resolved::new(3, 0x10000)
        );
        assert_eq!(r("LLC-stores", d).unwrap(), Resolved::new(3, 0x102));
        assert_eq!(r("r01c2", d).unwrap(), Resolved::new(4, 0x1c2));
        assert_eq!(r("SOFT-CLOCK.HARD", d).unwrap(), Resolved::new(1, 0));
        assert_eq!(r("PAGE_FAULT.ALL", d).unwrap(), Resolved::new(1, 2));
        assert_eq!(
            r("PAGE_FAULT.WRITE", d).unwrap_err().kind(),
            ErrorKind::NotSupported
        );
        assert_eq!(
            r("k8-no-such-event", d).unwrap_err().kind(),
            ErrorKind::NoSuchEvent
        );
        assert_eq!(
            r("event=0xc0,umask=0x1,cmask=2,inv", d).unwrap(),
            Resolved::new(4, 0xc0 | 0x100 | (2 << 24) | (1 << 23))
        );
        assert!(r("sched:sched_switch", d)
            .unwrap_err()
            .to_string()
            .contains("tracefs"));
    }

    fn rc(s: &str, d: &Path, cpu: CpuId) -> Result<Resolved, Error> {
        resolve_for(
            &crate::sys::RealSys,
            &s.parse().unwrap(),
            d,
            &[],
            Some(&cpu),
        )
    }

    fn x86(vendor: pmc_events::X86Vendor, family: u32, model: u32) -> CpuId {
        CpuId::X86 {
            vendor,
            family,
            model,
            stepping: 0,
        }
    }

    /// Issue 24: libpmc's legacy names (pmc.k8(3), pmc.iaf(3), Intel's
    /// architectural events) resolve to the generic event they count on any
    /// CPU, or to the table event of the same code; a name with neither
    /// keeps a clear refusal.
    #[test]
    fn legacy_libpmc_names_map_to_linux_events() {
        use pmc_events::X86Vendor::{Amd, Intel};
        let d = Path::new("/nonexistent");
        let zen3 = x86(Amd, 25, 0x21);
        let skl = x86(Intel, 6, 0x5E);
        let unknown = x86(Intel, 6, 0x1C);
        let hw = |c: u32| Resolved::new(b::PERF_TYPE_HARDWARE, u64::from(c));
        let cache = |c: u64| Resolved::new(b::PERF_TYPE_HW_CACHE, c);
        for cpu in [zen3, skl, unknown] {
            let r = |s: &str| rc(s, d, cpu);
            // pmcstat(8)'s EXAMPLES name, on any CPU.
            assert_eq!(
                r("k8-fr-retired-x86-instructions").unwrap(),
                hw(b::PERF_COUNT_HW_INSTRUCTIONS),
                "{cpu}"
            );
            assert_eq!(
                r("K8-BU-CPU-CLK-UNHALTED").unwrap(),
                hw(b::PERF_COUNT_HW_CPU_CYCLES)
            );
            assert_eq!(
                r("k8-fr-retired-branches-mispredicted").unwrap(),
                hw(b::PERF_COUNT_HW_BRANCH_MISSES)
            );
            // L1D, read, miss: PERF_COUNT_HW_CACHE_L1D | OP_READ << 8 | RESULT_MISS << 16.
            assert_eq!(r("k8-dc-miss").unwrap(), cache(1 << 16));
            assert_eq!(r("k8-ic-fetch").unwrap(), cache(1));
            assert!(r("k8-fr-retired-x86-instructions,usr").is_ok());
        }
        // The IAF names: Intel's table event where the CPU has one (libpmc's alias),
        // the generic event elsewhere.
        assert_eq!(
            rc("iaf-cpu-clk-unhalted-ref", d, skl).unwrap(),
            Resolved::new(b::PERF_TYPE_RAW, 0x300)
        );
        for cpu in [zen3, unknown] {
            assert_eq!(
                rc("iaf-cpu-clk-unhalted-ref", d, cpu).unwrap(),
                hw(b::PERF_COUNT_HW_REF_CPU_CYCLES)
            );
        }
        // No table for this CPU: the architectural names still count.
        assert_eq!(
            rc("llc-reference", d, unknown).unwrap(),
            hw(b::PERF_COUNT_HW_CACHE_REFERENCES)
        );
        // A K8 event without a generic counterpart: Zen's event of the same code.
        assert_eq!(
            rc("k8-fr-retired-uops", d, zen3).unwrap(),
            Resolved::new(b::PERF_TYPE_RAW, 0xC1)
        );
        assert_eq!(
            rc("k8-fr-retired-taken-branches", d, zen3).unwrap(),
            Resolved::new(b::PERF_TYPE_RAW, 0xC4)
        );
        // ... which an Intel CPU has not: said so, as for other libpmc aliases.
        let e = rc("k8-fr-retired-uops", d, skl).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
        assert!(e.to_string().contains("libpmc alias"), "{e}");
        // A K8 event with no counterpart at all stays a clear refusal.
        let e = rc("k8-fp-dispatched-fpu-ops", d, unknown).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NoSuchEvent, "{e}");
        assert!(
            e.to_string()
                .contains("is a FreeBSD hwpmc event with no Linux counterpart"),
            "{e}"
        );
    }

    /// Table names resolve per CPU, with fake CPUIDs/MIDRs; the expected
    /// encodings are the kernel JSON's (the oracle test in pmc-events
    /// compares every entry with the JSON itself).
    #[test]
    fn table_names_per_cpu() {
        use pmc_events::X86Vendor::{Amd, Intel};
        let d = Path::new("/nonexistent");
        let skl = x86(Intel, 6, 0x5E);
        let raw = |c| Resolved::new(b::PERF_TYPE_RAW, c);
        assert_eq!(rc("inst_retired.any_p", d, skl).unwrap(), raw(0xC0));
        assert_eq!(rc("INST_RETIRED.ANY", d, skl).unwrap(), raw(0x100));
        assert_eq!(
            rc("cpu_clk_unhalted.thread_p:u", d, skl).unwrap(),
            raw(0x3C)
        );
        assert_eq!(
            rc("iap-arith.divider_active", d, skl).unwrap(),
            raw(0x0100_0114)
        );
        assert_eq!(
            rc("arith.divider_active,cmask=2,inv", d, skl).unwrap(),
            raw(0x14 | 0x100 | (2 << 24) | (1 << 23))
        );
        assert_eq!(rc("LLC_REFERENCE", d, skl).unwrap(), raw(0x4F2E));
        assert_eq!(rc("llc-reference", d, skl).unwrap(), raw(0x4F2E));
        assert_eq!(rc("RESOURCE_STALL", d, skl).unwrap(), raw(0x01A2));
        assert_eq!(rc("branch_misses_retired", d, skl).unwrap(), raw(0xC5));
        // ic-misses = frontend_retired.l1i_miss: MSR_PEBS_FRONTEND value in config1.
        let ic = rc("ic-misses", d, skl).unwrap();
        assert_eq!((ic.config, ic.config1), (0x01C6, 0x12));
        let icl = x86(Intel, 6, 0x7E);
        assert_eq!(rc("inst_retired.any_p", d, icl).unwrap(), raw(0xC0));
        let spr = x86(Intel, 6, 0x8F);
        assert_eq!(
            rc("br_misp_retired.all_branches", d, spr).unwrap(),
            raw(0xC5)
        );
        let adl = x86(Intel, 6, 0x97);
        assert_eq!(rc("inst_retired.any_p", d, adl).unwrap(), raw(0xC0));
        // AMD Zen 2 / 3 / 4.
        for (f, m) in [(23, 0x31), (25, 0x21), (25, 0x61)] {
            let zen = x86(Amd, f, m);
            assert_eq!(rc("ex_ret_instr", d, zen).unwrap(), raw(0xC0), "{f} {m:#x}");
            assert_eq!(rc("LS_NOT_HALTED_CYC", d, zen).unwrap(), raw(0x76));
            // libpmc's UNHALTED_CORE_CYCLES is the portable `cycles` here.
            assert_eq!(
                rc("UNHALTED_CORE_CYCLES", d, zen).unwrap(),
                Resolved::new(b::PERF_TYPE_HARDWARE, 0)
            );
            assert_eq!(rc("k8-ex_ret_brn_misp", d, zen).unwrap(), raw(0xC3));
            let e = rc("inst_retired.any", d, zen).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
        }
        // Zen 1 has its table (amdzen1) since the server CPUs were added.
        assert_eq!(rc("ex_ret_instr", d, x86(Amd, 23, 1)).unwrap(), raw(0xC0));
        // Penryn (a Core 2, family 6 model 0x17): a known name, but no table
        // for this model (neither the kernel's nor FreeBSD's mapfile has one).
        let e = rc("arith.divider_active", d, x86(Intel, 6, 0x17)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
        assert!(e.message().contains("no pmu-events table"), "{e}");
        // Arm: Neoverse N1, Cortex-A57, and QEMU -cpu max (MIDR 0x000f0510).
        for midr in [0x410f_d0c0u64, 0x411f_d070, 0x000f_0510] {
            let arm = CpuId::from_midr(midr);
            assert_eq!(rc("inst_retired", d, arm).unwrap(), raw(0x08), "{midr:#x}");
            assert_eq!(rc("L1D_CACHE_REFILL:u", d, arm).unwrap(), raw(0x03));
            assert_eq!(rc("armv8-br_mis_pred", d, arm).unwrap(), raw(0x10));
        }
        // Unknown names stay unknown.
        assert_eq!(
            rc("inst_retired.nope", d, skl).unwrap_err().kind(),
            ErrorKind::NoSuchEvent
        );
    }

    #[test]
    fn hybrid_intel_uses_the_cpu_core_pmu() {
        let d = tempdir::Dir::new();
        std::fs::create_dir_all(d.path().join("cpu_core")).unwrap();
        std::fs::write(d.path().join("cpu_core/type"), "8\n").unwrap();
        let adl = x86(pmc_events::X86Vendor::Intel, 6, 0x9A);
        let x = rc("br_inst_retired.all_branches", d.path(), adl).unwrap();
        assert_eq!((x.type_, x.config), (8, 0xC4));
    }

    #[test]
    fn place_bit_ranges() {
        let mut x = Resolved::new(0, 0);
        place(&mut x, "config:0-3,8-11", 0xab).unwrap();
        assert_eq!(x.config, 0xa0b);
        assert!(place(&mut x, "config:0-3", 0x10).is_err());
        assert!(place(&mut x, "config:9-2", 1).is_err());
        assert!(place(&mut x, "config:0-64", 1).is_err());
        place(&mut x, "config2:0-63", u64::MAX).unwrap();
        assert_eq!(x.config2, u64::MAX);
    }
}
