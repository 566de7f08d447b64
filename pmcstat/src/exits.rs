//! `-E`: each process's counts at its exit, from the log's process-exit
//! counter records (pmcstat(8) -E, hwpmc's LOG_PROCEXIT): [`ExitCounts`], read from a log
//! by [`of_file`].
//!
//! For process-mode *sampling* PMCs (-P) the count at a process's exit is the
//! sum of its sample periods, exact but for the last, incomplete period
//! (pmc-linux's sampler). For a process-mode *counting* PMC (-p, -e) it is
//! the kernel's own count: pmc-linux opens the PMC as `perf record -s` does
//! (`inherit_stat`), and the kernel writes each inherited task's count at its
//! exit (`PERF_RECORD_READ`; the one task that exits with the original
//! context gets the PMC's total less the others).

use pmc_log::record::{CounterKind, Record};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;

/// Why `-E` takes one process-mode counting PMC.
///
/// With `inherit_stat` the kernel keeps each task's counts apart by swapping
/// the counts of a parent's and a child's events when it swaps their
/// contexts at a context switch (`perf_event_sync_stat`). It pairs the two
/// contexts' events by list position, and the inherited context lists them in
/// another order than the original, so with two events on the target, counts
/// move between them. Seen on Linux 6.18 with `-E -d -p page-faults -p
/// task-clock`: a process that took 567 page faults was given 509,372 (a
/// task-clock's nanoseconds). The events of one PMC (one per CPU) are all
/// the same event, so swapping among them keeps every task's count.
pub const COUNTING_ONE_PMC: &str =
    "-E with counting PMCs takes one process-mode PMC (one -p or -e event, without -W): \
     the kernel keeps per-process counts (inherit_stat) by swapping the counts of a parent's \
     and a child's events as it switches between them, pairing them by position, which mixes \
     the counts of different events; count one event per run, or sample several with -P \
     (e.g. pmcstat -E -d -P task-clock -P page-faults -n 1000 -- COMMAND)";

/// The process-exit counts of a log, gathered record by record.
#[derive(Debug, Default)]
pub struct ExitCounts {
    /// pmc id -> the event as given.
    events: BTreeMap<u32, String>,
    /// pid -> its latest command name.
    comms: HashMap<i32, String>,
    /// pid -> (pmc id -> count), in the order the processes exited.
    exits: Vec<(i32, BTreeMap<u32, u64>)>,
    /// The counts are counting PMCs' (not sums of sample periods).
    counting: bool,
}

impl ExitCounts {
    /// Takes what `-E` needs from one record.
    pub fn add(&mut self, r: &Record<'_>) {
        match r {
            Record::Pmc(d) => {
                self.events.insert(d.pmc_id, d.event_spec.to_string());
                if d.mode == pmc_log::record::Mode::Counting {
                    self.counting = true;
                }
            }
            Record::Comm(c) => {
                self.comms.insert(
                    c.pid,
                    String::from_utf8_lossy(c.comm.as_bytes()).into_owned(),
                );
            }
            // A forked child has its parent's command until it execs.
            Record::Fork(f) => {
                if let Some(c) = self.comms.get(&f.parent_pid).cloned() {
                    self.comms.insert(f.child_pid, c);
                }
            }
            Record::Counter(c) if c.kind == CounterKind::ProcessExit => {
                // One record per PMC for each process: joined to the latest exit of that pid
                // that lacks this PMC (counting PMCs log theirs PMC after PMC, at stop).
                match self
                    .exits
                    .iter_mut()
                    .rev()
                    .find(|(pid, counts)| *pid == c.pid && !counts.contains_key(&c.pmc_id))
                {
                    Some((_, counts)) => {
                        counts.insert(c.pmc_id, c.value);
                    }
                    None => self
                        .exits
                        .push((c.pid, BTreeMap::from([(c.pmc_id, c.value)]))),
                }
            }
            _ => {}
        }
    }

    /// One line per process that exited: its pid, command and the count of
    /// each process-mode PMC, in the order they exited.
    pub fn write(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let pmcs: Vec<u32> = {
            let mut v: Vec<u32> = self
                .exits
                .iter()
                .flat_map(|(_, c)| c.keys().copied())
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        // Names from the log (a live process's command, an event): control characters
        // escaped before they reach the terminal.
        let name = |id: &u32| {
            self.events.get(id).map_or_else(
                || format!("pmc {id:#x}"),
                |e| pmc_log::escape::escape(e).into_owned(),
            )
        };
        writeln!(
            out,
            "# -E: counts at process exit ({} processes; {})",
            self.exits.len(),
            if self.counting {
                "the kernel's count of each process, its threads summed"
            } else {
                "the sum of each process's sample periods"
            }
        )?;
        let mut head = format!("# {:>8}  {:<16}", "pid", "command");
        for id in &pmcs {
            head.push_str(&format!(" {:>18}", name(id)));
        }
        writeln!(out, "{}", head.trim_end())?;
        for (pid, counts) in &self.exits {
            let comm = pmc_log::escape::escape(self.comms.get(pid).map_or("?", String::as_str));
            let mut line = format!("  {pid:>8}  {comm:<16}");
            for id in &pmcs {
                match counts.get(id) {
                    Some(v) => line.push_str(&format!(" {v:>18}")),
                    None => line.push_str(&format!(" {:>18}", "-")),
                }
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

impl ExitCounts {
    /// `--json`: one object per process that exited, `{"type": "exit", "pid", "command",
    /// "counts": {event: count}}`, in the order they exited.
    pub fn json_lines(&self) -> Vec<String> {
        self.exits
            .iter()
            .map(|(pid, counts)| {
                let counts: serde_json::Map<String, serde_json::Value> = counts
                    .iter()
                    .map(|(id, v)| {
                        let name = self
                            .events
                            .get(id)
                            .cloned()
                            .unwrap_or_else(|| format!("pmc {id:#x}"));
                        (name, serde_json::Value::from(*v))
                    })
                    .collect();
                let line = serde_json::json!({
                    "type": "exit",
                    "pid": pid,
                    "command": self.comms.get(pid),
                    "counts": counts,
                })
                .to_string();
                // DEL and C1 in a command name escaped as well (serde_json escapes C0).
                pmc_log::escape::json_controls(line)
            })
            .collect()
    }
}

/// The process-exit counts of a log file.
pub fn of_file(path: &std::path::Path) -> Result<ExitCounts, String> {
    let bytes = pmc_analyze::file::map_regular(path, crate::logfile::MAX_LOG_SIZE)
        .map_err(|e| e.to_string())?;
    let reader = pmc_log::Reader::new(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut counts = ExitCounts::default();
    for r in reader.records() {
        counts.add(&r);
    }
    Ok(counts)
}
