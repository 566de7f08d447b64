//! The scrape-time collector.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use pmc::{
    Allocation, Backend, Cpus, Error, ErrorKind, EventSpec, Group, Instance, Native, Op, Reading,
    Target,
};

mod encode;

/// The labels of one series: `cpu` (and `cgroup` for [`PmcCollector::system_cgroup`]), or
/// `pid` and `comm`, or none.
pub type Labels = Vec<(&'static str, String)>;

/// The default cap on per-process targets ([`PmcCollector::max_targets`]).
pub const DEFAULT_MAX_TARGETS: usize = 64;

/// Which processes [`PmcCollector::processes`] counts.
pub enum Selector {
    /// One process.
    Pid(u32),
    /// Every process whose command name (`/proc/PID/comm`) the function accepts,
    /// this process excepted.
    Comm(Box<dyn Fn(&str) -> bool + Send + Sync>),
}

impl std::fmt::Debug for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Selector::Pid(p) => write!(f, "Pid({p})"),
            Selector::Comm(_) => f.write_str("Comm(..)"),
        }
    }
}

struct Event {
    spec: String,
    name: String,
    time: bool,
}

struct Tracked<G> {
    comm: String,
    /// The process's start time (`pmc::process::Process::started`): a pid the
    /// kernel reused for a new process of the same name is another process.
    started: Option<u64>,
    group: G,
}

enum Source<G> {
    /// The calling process, or one group over every CPU.
    Fixed { group: Box<G>, per_cpu: bool },
    /// Processes attached as they appear.
    Processes {
        selector: Selector,
        targets: BTreeMap<u32, Tracked<G>>,
        /// The processes (pid, start) of the previous scan, all names: a match absent from
        /// it was born since, and what it ran before this scan was missed.
        seen: Option<std::collections::HashSet<(u32, Option<u64>)>>,
    },
    /// The cgroups under a root, opened as they appear (`crate::cgroups`).
    Cgroups {
        root: crate::cgroups::Root,
        /// By label (`/` and the path below the mount).
        tracked: BTreeMap<String, crate::cgroups::Opened<G>>,
    },
}

struct State<G> {
    source: Source<G>,
    read_errors: u64,
    refused: u64,
    over_cap: u64,
    /// Processes attached after they had run (born since the previous scan).
    late: u64,
    /// The CPU time those had used before they were attached, in seconds.
    missed_cpu: f64,
    /// Cgroups that could not be opened (gone before their open, a name not UTF-8, ...).
    open_errors: u64,
    /// Cgroups seen again with another inode (removed and created again), reopened.
    reopened: u64,
    last_read_secs: f64,
    /// The counts last exported per series (at most one entry per CPU or target).
    last: HashMap<Labels, Vec<u64>>,
}

/// A [`prometheus_client`] collector that reads performance counters when the
/// registry is encoded (at scrape time): one group read per target.
///
/// Every name starts with `P`, `pmc` for [`system`](Self::system) and
/// `pmc_process` for [`this_process`](Self::this_process) and
/// [`processes`](Self::processes) (so both kinds can share a registry).
/// Exported, for each counted event `E` (named by [`metric_name`](crate::metric_name)):
/// `P_E_total` (or `P_E_seconds_total` for `cpu-clock`/`task-clock`), scaled
/// for multiplexing; `P_time_enabled_seconds_total{event="E"}` and
/// `P_time_running_seconds_total{event="E"}`; the gauges `P_ipc`,
/// `P_branch_miss_ratio`, `P_cache_miss_ratio` where both their events are
/// counted (over the whole time counted; `rate()` of the counters gives a window's);
/// `P_exporter_read_seconds` (the reads of the last scrape),
/// `P_exporter_read_errors_total`; and for [`processes`](Self::processes)
/// `P_exporter_targets`, `P_exporter_targets_over_cap` and
/// `P_exporter_targets_refused_total`.
///
/// Events this machine cannot count (cycles without a PMU) are left out and
/// listed by [`unsupported`](Self::unsupported).
///
/// ```no_run
/// use prometheus_client::registry::Registry;
/// let mut registry = Registry::default();
/// let c = pmc_exporter::PmcCollector::this_process(&["task-clock", "page-faults", "instructions", "cycles"])?;
/// for e in c.unsupported() {
///     eprintln!("not counted here: {e}");
/// }
/// registry.register_collector(Box::new(c));
/// # Ok::<(), pmc::Error>(())
/// ```
pub struct PmcCollector<B: Backend = Native> {
    /// `pmc` (system) or `pmc_process`: the two kinds can share a registry.
    prefix: &'static str,
    /// [`system_cgroup`](Self::system_cgroup): the cgroup counted, a `cgroup` label.
    cgroup: Option<String>,
    backend: B,
    events: Vec<Event>,
    unsupported: Vec<String>,
    max_targets: usize,
    state: Mutex<State<B::Group>>,
}

impl<B: Backend> std::fmt::Debug for PmcCollector<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PmcCollector")
            .field("events", &self.events().collect::<Vec<_>>())
            .field("unsupported", &self.unsupported)
            .field("max_targets", &self.max_targets)
            .finish_non_exhaustive()
    }
}

fn not_counted_here(e: &Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::NoPmu | ErrorKind::NoSuchEvent | ErrorKind::NotSupported
    )
}

impl PmcCollector {
    /// Counts `events` in the calling process: every thread it has and every
    /// thread it starts (child processes too), from now on. No labels.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Parse`] for a bad event spec; [`ErrorKind::NotSupported`] when
    /// none of the events can be counted; the backend's errors (permission, file
    /// descriptors) from `Native::open`, [`Backend::allocate_group`], `attach` and `start`.
    pub fn this_process(events: &[&str]) -> pmc::Result<PmcCollector> {
        PmcCollector::this_process_on(Native::open()?, events)
    }

    /// Counts `events` system-wide on every CPU, one series per CPU (`cpu` label).
    ///
    /// # Errors
    ///
    /// As [`this_process`](Self::this_process); system scope needs
    /// `perf_event_paranoid` <= 0 or CAP_PERFMON on Linux, root on FreeBSD.
    pub fn system(events: &[&str]) -> pmc::Result<PmcCollector> {
        PmcCollector::system_on(Native::open()?, events)
    }

    /// Counts `events` of the tasks of one control group on every CPU, as `perf stat -a -G
    /// NAME` ([`Allocation::cgroup`] names the cgroups taken): one series per CPU, labelled
    /// `cpu` and `cgroup` (the name as given). Linux only.
    ///
    /// ```no_run
    /// let c = pmc_exporter::PmcCollector::system_cgroup(&["page-faults"], "system.slice")?;
    /// # let _ = c;
    /// # Ok::<(), pmc::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`system`](Self::system); [`ErrorKind::NoSuchCgroup`] when the cgroup does not
    /// exist, [`ErrorKind::NotSupported`] where cgroups cannot be counted (FreeBSD, a kernel
    /// without `CONFIG_CGROUP_PERF`).
    pub fn system_cgroup(events: &[&str], cgroup: &str) -> pmc::Result<PmcCollector> {
        PmcCollector::system_cgroup_on(Native::open()?, events, cgroup)
    }

    /// Counts `events` in each process the selector names (`pid` and `comm`
    /// labels). At each scrape, processes that appeared are attached (at most
    /// [`max_targets`](Self::max_targets) at once; the others are counted in
    /// `pmc_process_exporter_targets_refused_total` and
    /// `pmc_process_exporter_targets_over_cap`) and processes that are gone are
    /// dropped: a restarted process is a new series. Processes are found in
    /// [`pmc::process::list`] (Linux's `/proc`, FreeBSD's `kern.proc.proc`
    /// sysctl); where there is no such list only [`Selector::Pid`] works, with
    /// an empty `comm`.
    ///
    /// # Errors
    ///
    /// As [`this_process`](Self::this_process) (the events are probed on this
    /// process).
    pub fn processes(events: &[&str], selector: Selector) -> pmc::Result<PmcCollector> {
        PmcCollector::processes_on(Native::open()?, events, selector)
    }

    /// Counts `events` in every cgroup under `root` (the root included), as cAdvisor exports
    /// containers: one series per cgroup, labelled `cgroup` with its path below the cgroup
    /// mount (`/system.slice/nginx.service`), names `pmc_cgroup_*`. Each cgroup is counted
    /// with perf's cgroup events on every CPU ([`Allocation::cgroup`]), so every task in it,
    /// however short-lived, is counted by construction, and a cgroup's counts include its
    /// descendants' (as its `cpu.stat` does). At each scrape the tree is walked again: new
    /// cgroups are opened (at most [`max_targets`](Self::max_targets); the others are counted
    /// in `pmc_cgroup_exporter_cgroups_refused_total`), removed ones dropped with their
    /// series, and one removed and created again under the same path (another inode) is
    /// opened again, its series starting from 0. A cgroup is counted from the scrape that
    /// found it. Linux only.
    ///
    /// `root` is a path below the cgroup mount that has perf_event (cgroup2, or a v1
    /// hierarchy with perf_event), as perf's `-G` takes it (`system.slice`, `/` for all), or
    /// an absolute path in such a mount (`/sys/fs/cgroup/system.slice`).
    ///
    /// Each cgroup costs one perf event per event and CPU (file descriptors), and the kernel
    /// switches cgroup events at every context switch between cgroups: keep the cap to what
    /// a dashboard needs.
    ///
    /// # Errors
    ///
    /// As [`system_cgroup`](Self::system_cgroup) for the root.
    pub fn cgroups(events: &[&str], root: &str) -> pmc::Result<PmcCollector> {
        PmcCollector::cgroups_on(Native::open()?, events, root)
    }
}

impl<B: Backend> PmcCollector<B> {
    /// [`PmcCollector::this_process`] on a given backend (a simulator, a test double).
    ///
    /// # Errors
    ///
    /// As [`PmcCollector::this_process`].
    pub fn this_process_on(backend: B, events: &[&str]) -> pmc::Result<PmcCollector<B>> {
        let (events, unsupported) = probe(&backend, events, Scoping::Process)?;
        let allocs = allocations(&events, Scoping::Process)?;
        let mut group = backend.allocate_group(&allocs)?;
        group.attach(Target::Current)?;
        group.start()?;
        Ok(Self::new(
            backend,
            events,
            unsupported,
            Source::Fixed {
                group: Box::new(group),
                per_cpu: false,
            },
        ))
    }

    /// [`PmcCollector::system`] on a given backend, e.g. FreeBSD's hwpmc simulator:
    ///
    /// ```no_run
    /// # #[cfg(target_os = "linux")] {
    /// let backend = pmc::Native::open()?;
    /// let c = pmc_exporter::PmcCollector::system_on(backend, &["cpu-clock"]);
    /// # let _ = c;
    /// # }
    /// # Ok::<(), pmc::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`PmcCollector::system`].
    pub fn system_on(backend: B, events: &[&str]) -> pmc::Result<PmcCollector<B>> {
        Self::system_scope(backend, events, None)
    }

    /// [`PmcCollector::system_cgroup`] on a given backend.
    ///
    /// # Errors
    ///
    /// As [`PmcCollector::system_cgroup`].
    pub fn system_cgroup_on(
        backend: B,
        events: &[&str],
        cgroup: &str,
    ) -> pmc::Result<PmcCollector<B>> {
        Self::system_scope(backend, events, Some(cgroup))
    }

    fn system_scope(
        backend: B,
        events: &[&str],
        cgroup: Option<&str>,
    ) -> pmc::Result<PmcCollector<B>> {
        let scope = Scoping::System(cgroup);
        let (events, unsupported) = probe(&backend, events, scope)?;
        let allocs = allocations(&events, scope)?;
        let mut group = backend.allocate_group(&allocs)?;
        group.start()?;
        let mut c = Self::new(
            backend,
            events,
            unsupported,
            Source::Fixed {
                group: Box::new(group),
                per_cpu: true,
            },
        );
        c.cgroup = cgroup.map(str::to_owned);
        Ok(c)
    }

    /// [`PmcCollector::processes`] on a given backend.
    ///
    /// # Errors
    ///
    /// As [`PmcCollector::processes`].
    pub fn processes_on(
        backend: B,
        events: &[&str],
        selector: Selector,
    ) -> pmc::Result<PmcCollector<B>> {
        let (events, unsupported) = probe(&backend, events, Scoping::Process)?;
        Ok(Self::new(
            backend,
            events,
            unsupported,
            Source::Processes {
                selector,
                targets: BTreeMap::new(),
                seen: None,
            },
        ))
    }

    /// [`PmcCollector::cgroups`] on a given backend.
    ///
    /// # Errors
    ///
    /// As [`PmcCollector::cgroups`].
    pub fn cgroups_on(backend: B, events: &[&str], root: &str) -> pmc::Result<PmcCollector<B>> {
        let root = crate::cgroups::Root::resolve(root)?;
        let scope = Scoping::System(Some(root.path_str()?));
        let (events, unsupported) = probe(&backend, events, scope)?;
        let mut c = Self::new(
            backend,
            events,
            unsupported,
            Source::Cgroups {
                root,
                tracked: BTreeMap::new(),
            },
        );
        c.prefix = "pmc_cgroup";
        Ok(c)
    }

    fn new(
        backend: B,
        events: Vec<Event>,
        unsupported: Vec<String>,
        source: Source<B::Group>,
    ) -> PmcCollector<B> {
        let system = matches!(source, Source::Fixed { per_cpu: true, .. });
        PmcCollector {
            prefix: if system { "pmc" } else { "pmc_process" },
            cgroup: None,
            backend,
            events,
            unsupported,
            max_targets: DEFAULT_MAX_TARGETS,
            state: Mutex::new(State {
                source,
                read_errors: 0,
                refused: 0,
                over_cap: 0,
                late: 0,
                missed_cpu: 0.0,
                open_errors: 0,
                reopened: 0,
                last_read_secs: 0.0,
                last: HashMap::new(),
            }),
        }
    }

    /// Sets the cap on per-process targets (default [`DEFAULT_MAX_TARGETS`]).
    pub fn max_targets(mut self, n: usize) -> PmcCollector<B> {
        self.max_targets = n;
        self
    }

    /// The events exported, as given.
    pub fn events(&self) -> impl Iterator<Item = &str> {
        self.events.iter().map(|e| e.spec.as_str())
    }

    /// The events left out because this machine cannot count them.
    pub fn unsupported(&self) -> &[String] {
        &self.unsupported
    }

    /// How many matching processes were not attached because of the cap, in all.
    pub fn refused(&self) -> u64 {
        self.lock().refused
    }

    /// Whether this collector's time events count elapsed time: every task of every CPU,
    /// the idle task included ([`system`](Self::system) without a cgroup).
    fn elapsed_time(&self) -> bool {
        self.prefix == "pmc" && self.cgroup.is_none()
    }

    fn lock(&self) -> MutexGuard<'_, State<B::Group>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Attaches new matches, drops gone ones, reads every target: one row each.
    fn read_rows(&self, state: &mut State<B::Group>) -> Vec<(Labels, Vec<Reading>)> {
        let started = Instant::now();
        let mut rows = Vec::new();
        let mut errors = 0;
        match &mut state.source {
            Source::Fixed { group, per_cpu } if *per_cpu => match group.read_instances() {
                Ok(list) => {
                    for i in list {
                        if let Instance::Cpu(cpu) = i.instance {
                            let mut labels = vec![("cpu", cpu.to_string())];
                            if let Some(cg) = &self.cgroup {
                                labels.push(("cgroup", cg.clone()));
                            }
                            rows.push((labels, i.readings));
                        }
                    }
                }
                Err(_) => errors += 1,
            },
            Source::Fixed { group, .. } => match group.read() {
                Ok(r) => rows.push((Vec::new(), r)),
                Err(_) => errors += 1,
            },
            Source::Cgroups { root, tracked } => {
                let found = root.walk(self.max_targets);
                let r = crate::cgroups::refresh(tracked, found, self.max_targets, |path: &str| {
                    attach_cgroup(&self.backend, &self.events, path)
                });
                state.refused += r.refused;
                state.over_cap = r.refused;
                state.open_errors += r.open_errors;
                state.reopened += r.reopened;
                for label in r.dropped {
                    state.last.remove(&cgroup_labels(&label));
                }
                for (label, c) in tracked.iter() {
                    match c.group.read() {
                        Ok(r) => rows.push((cgroup_labels(label), r)),
                        Err(_) => errors += 1,
                    }
                }
            }
            Source::Processes {
                selector,
                targets,
                seen,
            } => {
                let (refused, dropped, late) = refresh(
                    &self.backend,
                    &self.events,
                    selector,
                    targets,
                    seen,
                    self.max_targets,
                );
                state.refused += refused;
                state.over_cap = refused;
                state.late += late.0;
                state.missed_cpu += late.1;
                // A pid reused by a new process of the same name keeps its labels:
                // its series starts again from the new process's count (Prometheus
                // reads a reset), not held at the old one's by `monotonic`.
                for labels in dropped {
                    state.last.remove(&labels);
                }
                let mut gone = Vec::new();
                for (pid, t) in targets.iter() {
                    match t.group.read() {
                        Ok(r) => rows.push((process_labels(*pid, &t.comm), r)),
                        Err(_) => gone.push(*pid),
                    }
                }
                for pid in gone {
                    targets.remove(&pid);
                }
            }
        }
        state.read_errors += errors;
        state.last_read_secs = started.elapsed().as_secs_f64();
        rows
    }
}

/// Splits `events` into those this machine counts and those it cannot.
fn probe<B: Backend>(
    backend: &B,
    events: &[&str],
    scope: Scoping<'_>,
) -> pmc::Result<(Vec<Event>, Vec<String>)> {
    let system = matches!(scope, Scoping::System(_));
    let mut ok: Vec<Event> = Vec::new();
    let mut unsupported = Vec::new();
    for spec in events {
        let parsed: EventSpec = spec.parse()?;
        let (name, time) = crate::metric_name(spec);
        if ok.iter().any(|e| e.name == name) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Allocate,
                format!("two events are both exported as `{name}` (`{spec}`)"),
            )
            .with_help("give each event once (PmcCollector::this_process/system/processes)"));
        }
        // A cgroup's event is probed without the cgroup first: what this machine cannot
        // count is left out, but a cgroup it cannot count (absent, no cgroup support) is
        // the error it is.
        let plain = match scope {
            Scoping::System(Some(_)) => Scoping::System(None),
            s => s,
        };
        let alloc = scoped(Allocation::counting(parsed.clone()), plain);
        let probed = backend.allocate(&alloc).and_then(|mut p| {
            if !system {
                pmc::Pmc::attach(&mut p, Target::Current)?;
            }
            Ok(())
        });
        if let (Ok(()), Scoping::System(Some(_))) = (&probed, scope) {
            backend.allocate(&scoped(Allocation::counting(parsed), scope))?;
        }
        match probed {
            Ok(()) => ok.push(Event {
                spec: (*spec).to_string(),
                name,
                time,
            }),
            Err(e) if not_counted_here(&e) => unsupported.push((*spec).to_string()),
            Err(e) => return Err(e),
        }
    }
    if ok.is_empty() {
        return Err(Error::new(
            ErrorKind::NotSupported,
            Op::Allocate,
            format!(
                "none of the events can be counted here ({})",
                events.join(", ")
            ),
        )
        .with_help("use software events (task-clock, page-faults, context-switches)"));
    }
    Ok((ok, unsupported))
}

/// What a collector's PMCs count: the calling process or its targets, or every CPU (of one
/// cgroup's tasks, or of all).
#[derive(Clone, Copy)]
enum Scoping<'a> {
    Process,
    System(Option<&'a str>),
}

fn scoped(a: Allocation, scope: Scoping<'_>) -> Allocation {
    match scope {
        Scoping::Process => a,
        Scoping::System(None) => a.system(Cpus::All),
        Scoping::System(Some(cg)) => a.system(Cpus::All).cgroup(cg),
    }
}

fn allocations(events: &[Event], scope: Scoping<'_>) -> pmc::Result<Vec<Allocation>> {
    events
        .iter()
        .map(|e| Ok(scoped(Allocation::counting(e.spec.parse()?), scope)))
        .collect()
}

/// Brings `targets` in line with the processes `selector` names now. Returns the
/// processes refused by the cap at this call, and the labels of the series dropped
/// (processes gone, or pids that now name another process).
/// Also returns the processes attached late (born since the previous scan) and the CPU
/// seconds they had used before.
fn refresh<B: Backend>(
    backend: &B,
    events: &[Event],
    selector: &Selector,
    targets: &mut BTreeMap<u32, Tracked<B::Group>>,
    seen: &mut Option<std::collections::HashSet<(u32, Option<u64>)>>,
    max: usize,
) -> (u64, Vec<Labels>, (u64, f64)) {
    let me = std::process::id();
    let listed = pmc::process::list();
    let previous = seen.take();
    if let Ok(list) = &listed {
        *seen = Some(list.iter().map(|p| (p.pid, p.started)).collect());
    }
    let now: Vec<pmc::process::Process> = match listed {
        Ok(list) => list
            .into_iter()
            .filter(|p| p.pid != me)
            .filter(|p| match selector {
                Selector::Pid(pid) => p.pid == *pid,
                Selector::Comm(f) => f(&p.name),
            })
            .collect(),
        // No process list here: a pid is still found by probing it.
        Err(_) => match selector {
            Selector::Pid(pid) if pmc::process::exists(*pid) => {
                vec![pmc::process::Process::new(*pid, "")]
            }
            _ => Vec::new(),
        },
    };
    let dropped = keep_live(targets, &now);
    let mut refused = 0;
    let mut late = (0, 0.0);
    for p in now {
        if targets.contains_key(&p.pid) {
            continue;
        }
        if targets.len() >= max {
            refused += 1;
            continue;
        }
        if let Some(group) = attach(backend, events, p.pid) {
            // Born since the previous scan: what it ran before now was not counted.
            if previous
                .as_ref()
                .is_some_and(|prev| !prev.contains(&(p.pid, p.started)))
            {
                late.0 += 1;
                late.1 += crate::cgroups::cpu_seconds(p.pid).unwrap_or(0.0);
            }
            targets.insert(
                p.pid,
                Tracked {
                    comm: p.name,
                    started: p.started,
                    group,
                },
            );
        }
    }
    (refused, dropped, late)
}

/// Drops the targets that are not in `now` as the same process: gone, or their
/// pid now names another process (another name, or another start time where
/// both are known).
/// Returns the labels of the series dropped.
fn keep_live<T>(
    targets: &mut BTreeMap<u32, Tracked<T>>,
    now: &[pmc::process::Process],
) -> Vec<Labels> {
    let mut dropped = Vec::new();
    targets.retain(|pid, t| {
        let live = now.iter().any(|p| {
            p.pid == *pid
                && p.name == t.comm
                && (p.started.is_none() || t.started.is_none() || p.started == t.started)
        });
        if !live {
            dropped.push(process_labels(*pid, &t.comm));
        }
        live
    });
    dropped
}

fn process_labels(pid: u32, comm: &str) -> Labels {
    vec![("pid", pid.to_string()), ("comm", comm.to_string())]
}

fn cgroup_labels(label: &str) -> Labels {
    vec![("cgroup", label.to_string())]
}

/// One cgroup's group of events on every CPU, started.
fn attach_cgroup<B: Backend>(backend: &B, events: &[Event], path: &str) -> Option<B::Group> {
    let allocs = allocations(events, Scoping::System(Some(path))).ok()?;
    let mut group = backend.allocate_group(&allocs).ok()?;
    group.start().ok()?;
    Some(group)
}

fn attach<B: Backend>(backend: &B, events: &[Event], pid: u32) -> Option<B::Group> {
    let allocs = allocations(events, Scoping::Process).ok()?;
    let mut group = backend.allocate_group(&allocs).ok()?;
    group.attach(Target::Pid(pid)).ok()?;
    group.start().ok()?;
    Some(group)
}

#[cfg(test)]
mod keep_live_tests {
    use super::*;
    use pmc::process::Process;

    fn tracked(comm: &str, started: Option<u64>) -> Tracked<()> {
        Tracked {
            comm: comm.to_string(),
            started,
            group: (),
        }
    }

    #[test]
    fn a_reused_pid_is_another_process() {
        let mut t = BTreeMap::new();
        t.insert(10, tracked("web", Some(500)));
        t.insert(11, tracked("web", Some(600)));
        t.insert(12, tracked("db", None));
        t.insert(13, tracked("gone", Some(1)));
        let now = [
            // Same pid and name, another start: the kernel reused pid 10.
            Process::new(10, "web").started_at(Some(900)),
            Process::new(11, "web").started_at(Some(600)),
            // A start time unknown on one side: the name decides.
            Process::new(12, "db").started_at(Some(42)),
        ];
        let dropped = keep_live(&mut t, &now);
        assert_eq!(t.keys().copied().collect::<Vec<_>>(), [11, 12]);
        assert_eq!(
            dropped,
            [process_labels(10, "web"), process_labels(13, "gone")]
        );
    }
}
