//! `-E`: each process's counts at its exit, from the log's process-exit
//! counter records (pmcstat(8) -E, hwpmc's LOG_PROCEXIT).
//!
//! On Linux these exist for process-mode *sampling* PMCs only: the count at a
//! process's exit is the sum of its sample periods, exact but for the last,
//! incomplete period (pmc-linux's sampler). perf_event has no per-process
//! count at exit for a counting PMC that this pmcstat can read: an inherited
//! counter's children fold their counts into it silently, and the kernel's
//! `inherit_stat` `PERF_RECORD_READ` at a child's exit is not written by
//! current kernels.

use pmc_log::record::{CounterKind, Record};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;

/// Why `-E` is refused for counting PMCs, and what to use instead.
pub const COUNTING_REFUSED: &str =
    "-E (per-process counts at exit) needs process sampling PMCs (-P) on Linux: perf_event \
     gives a counting PMC (-p, -e) no count per process at its exit (an inherited counter \
     folds its child processes' counts in without a record, and current kernels do not write \
     inherit_stat's PERF_RECORD_READ); with -P, -E prints each process's count at its exit, \
     the sum of its sample periods (exact but for the last, incomplete period), e.g. \
     pmcstat -E -d -P task-clock -n 100000 -- COMMAND";

/// The process-exit counts of a log, gathered record by record.
#[derive(Debug, Default)]
pub struct ExitCounts {
    /// pmc id -> the event as given.
    events: BTreeMap<u32, String>,
    /// pid -> its latest command name.
    comms: HashMap<i32, String>,
    /// pid -> (pmc id -> count), in the order the processes exited.
    exits: Vec<(i32, BTreeMap<u32, u64>)>,
}

impl ExitCounts {
    /// Takes what `-E` needs from one record.
    pub fn add(&mut self, r: &Record<'_>) {
        match r {
            Record::Pmc(d) => {
                self.events.insert(d.pmc_id, d.event_spec.to_string());
            }
            Record::Comm(c) => {
                self.comms.insert(
                    c.pid,
                    String::from_utf8_lossy(c.comm.as_bytes()).into_owned(),
                );
            }
            Record::Counter(c) if c.kind == CounterKind::ProcessExit => {
                // The PMCs of one process exit together, one record each.
                match self.exits.last_mut() {
                    Some((pid, counts)) if *pid == c.pid && !counts.contains_key(&c.pmc_id) => {
                        counts.insert(c.pmc_id, c.value);
                    }
                    _ => self
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
        let name = |id: &u32| {
            self.events
                .get(id)
                .cloned()
                .unwrap_or_else(|| format!("pmc {id:#x}"))
        };
        writeln!(
            out,
            "# -E: counts at process exit ({} processes; the sum of each process's sample \
             periods)",
            self.exits.len()
        )?;
        let mut head = format!("# {:>8}  {:<16}", "pid", "command");
        for id in &pmcs {
            head.push_str(&format!(" {:>18}", name(id)));
        }
        writeln!(out, "{}", head.trim_end())?;
        for (pid, counts) in &self.exits {
            let comm = self.comms.get(pid).map_or("?", String::as_str);
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

/// The process-exit counts of a log file.
pub fn of_file(path: &std::path::Path) -> Result<ExitCounts, String> {
    let bytes = pmc_analyze::file::map_regular(path, crate::analyze::MAX_LOG_SIZE)
        .map_err(|e| e.to_string())?;
    let reader = pmc_log::Reader::new(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut counts = ExitCounts::default();
    for r in reader.records() {
        counts.add(&r);
    }
    Ok(counts)
}
