//! What counting (`count`) and sampling (`sample`) share: the CPU lists of
//! `-c`, `-v`'s scope text, `-W`'s rules and the probe for child processes
//! the requested counters leave out.

use crate::error::Failure;
use crate::sys::launch::Session;
use pmc::{Allocation, Backend, Cpus, EventSpec, Pmc, Scope};

/// How `-v` describes a PMC's scope: the CPUs of a system-mode PMC (its
/// `-c`), whether a process-mode PMC counts child processes (its `-d`).
pub fn scope_text(scope: &Scope, descendants: bool) -> String {
    match scope {
        Scope::System { cpu } => {
            let list = match cpu {
                Cpus::All => "every CPU".to_owned(),
                Cpus::One(c) => format!("CPU {c}"),
                Cpus::List(l) => {
                    let l: Vec<String> = l.iter().map(u32::to_string).collect();
                    format!("CPUs {}", l.join(","))
                }
            };
            format!("system, {list}")
        }
        _ if descendants => "process and its child processes".to_owned(),
        _ => "process alone (its threads, not its child processes)".to_owned(),
    }
}

/// The CPUs of a `-c` (every CPU without one).
pub fn cpu_list(spec: Option<&str>) -> Result<Cpus, Failure> {
    match spec {
        Some(c) => Cpus::parse_list(c).map_err(|e| Failure::Usage(format!("-c {c}: {e}"))),
        None => Ok(Cpus::All),
    }
}

/// What `-W`'s rules look at.
pub struct LogCsw<'a> {
    /// `-W`.
    pub log_csw: bool,
    /// `-O FILE`.
    pub log: Option<&'a std::path::Path>,
    /// `-r N`.
    pub repeat: Option<u32>,
}

/// `-W`'s rules, for counting and sampling mode: it logs, so it needs `-O`, and it is
/// about the target's threads, so it needs a process-mode PMC.
pub fn check_log_csw(args: &LogCsw<'_>, has_process: bool) -> Result<(), Failure> {
    if !args.log_csw {
        return Ok(());
    }
    if args.log.is_none() {
        return Err(Failure::Usage(
            "-W logs the counts at every context switch of the target's threads: it needs a \
             log, -O FILE (then read it with -R FILE)"
                .into(),
        ));
    }
    if !has_process {
        return Err(Failure::Usage(
            "-W is for process-mode PMCs (-p, -e or -P): system-mode PMCs (-s, -S) have no \
             target threads to follow"
                .into(),
        ));
    }
    if args.repeat.is_some_and(|n| n > 1) {
        return Err(Failure::Usage(
            "-W with -r N: one -O log cannot hold several runs; run once".into(),
        ));
    }
    Ok(())
}

/// A task-clock pair, one on the target alone and one on it and its
/// descendants, to notice child processes the requested counters left out.
pub(crate) struct ChildProbe {
    alone: <pmc::Native as Backend>::Pmc,
    tree: <pmc::Native as Backend>::Pmc,
}

impl ChildProbe {
    /// CPU time below this in child processes is not reported (the two
    /// clocks are stopped a few microseconds apart).
    const THRESHOLD_NS: u64 = 100_000;

    pub(crate) fn new(backend: &pmc::Native, session: &Session) -> Option<ChildProbe> {
        let clock = || Allocation::counting(EventSpec::portable(pmc::PortableEvent::TaskClock));
        let mut alone = backend.allocate(&clock()).ok()?;
        let mut tree = backend.allocate(&clock().descendants()).ok()?;
        session.attach(&mut alone).ok()?;
        session.attach(&mut tree).ok()?;
        Some(ChildProbe { alone, tree })
    }

    pub(crate) fn start(&mut self) {
        let _ = self.alone.start();
        let _ = self.tree.start();
    }

    /// Stops both clocks; the CPU time of child processes, if any ran.
    pub(crate) fn finish(mut self) -> Option<u64> {
        let _ = self.tree.stop();
        let _ = self.alone.stop();
        let tree = self.tree.read().ok()?.scaled()?;
        let alone = self.alone.read().ok()?.scaled()?;
        Some(tree.saturating_sub(alone)).filter(|ns| *ns >= Self::THRESHOLD_NS)
    }
}
