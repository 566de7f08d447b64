//! Folded stacks for flame graphs: one line per distinct stack,
//! `process;root;...;leaf count`, the format of Brendan Gregg's
//! `stackcollapse-*` scripts, read by `flamegraph.pl` and inferno.
//!
//! [`FoldedStacks`] takes records ([`FoldedStacks::add`]) and writes the lines. Below: how
//! frames and processes are named, an example.
//!
//! Frames are not symbolised (pmc-log has no symbol tables): a frame inside
//! a known mapping is `basename+0xoffset` (the file offset, ready for
//! `addr2line -e`), anything else the bare address. Kernel frames get the
//! `_[k]` suffix flame graph tools colour as kernel. The process is named by
//! the latest `Comm`, `Exec` or `ProcessCreate` seen for its pid.
//!
//! ```
//! use pmc_log::export::folded::FoldedStacks;
//! use pmc_log::record::*;
//! let mut f = FoldedStacks::new();
//! f.add(&Record::Comm(Comm { time: 0, pid: 1, tid: 1, exec: true, comm: "app".into() }));
//! f.add(&Record::Map(Map { time: 0, pid: 1, start: 0x1000, len: 0x1000, pgoff: 0,
//!     build_id: Default::default(), path: "/bin/app".into() }));
//! let frames = [0x1010u64, 0x1020];
//! for _ in 0..3 {
//!     f.add(&Record::Sample(Sample { time: 1, pmc_id: 0, pid: 1, tid: 1, cpu: None, period: 1,
//!         callchain: Callchain::from_frames(&frames), kernel_frames: 0, raw: Default::default() }));
//! }
//! let mut out = Vec::new();
//! f.write(&mut out)?;
//! assert_eq!(String::from_utf8(out)?, "app;app+0x20;app+0x10 3\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use crate::record::Record;

#[derive(Debug)]
struct Mapping {
    /// Exclusive end; `u64::MAX` when the length is unknown (hwpmc MAP_IN).
    end: u64,
    pgoff: u64,
    name: String,
}

/// Accumulates samples into folded stacks.
#[derive(Debug, Default)]
pub struct FoldedStacks {
    names: HashMap<i32, String>,
    maps: HashMap<i32, BTreeMap<u64, Mapping>>,
    stacks: HashMap<String, u64>,
    /// Weight each sample by its period instead of counting 1.
    pub weight_by_period: bool,
    line: String,
}

fn basename(p: &[u8]) -> String {
    let s = String::from_utf8_lossy(p);
    s.rsplit('/').next().unwrap_or("").replace([';', ' '], "_")
}

impl FoldedStacks {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    fn frame(&self, pid: i32, pc: u64, kernel: bool, out: &mut String) {
        use std::fmt::Write as _;
        let lookup = |pid: i32| {
            self.maps
                .get(&pid)
                .and_then(|m| m.range(..=pc).next_back())
                .filter(|(_, m)| pc < m.end)
                .map(|(start, m)| (m.name.as_str(), (pc - start).wrapping_add(m.pgoff)))
        };
        // Kernel frames resolve against kernel (pid -1) mappings only, user
        // frames against the process's own.
        let hit = if kernel { lookup(-1) } else { lookup(pid) };
        let _ = match hit {
            Some((name, off)) => write!(out, "{name}+{off:#x}"),
            None => write!(out, "{pc:#x}"),
        };
        if kernel {
            out.push_str("_[k]");
        }
    }

    /// Feed one record; non-sample records update process names and maps.
    pub fn add(&mut self, r: &Record<'_>) {
        match r {
            Record::Comm(c) => {
                self.names.insert(c.pid, basename(c.comm.as_bytes()));
            }
            Record::Exec(e) => {
                self.names.insert(e.pid, basename(e.path.as_bytes()));
                self.maps.remove(&e.pid);
            }
            Record::ProcessCreate(p) => {
                self.names.insert(p.pid, basename(p.comm.as_bytes()));
            }
            Record::Map(m) => {
                let end = if m.len == 0 {
                    u64::MAX
                } else {
                    m.start.saturating_add(m.len)
                };
                self.maps.entry(m.pid).or_default().insert(
                    m.start,
                    Mapping {
                        end,
                        pgoff: m.pgoff,
                        name: basename(m.path.as_bytes()),
                    },
                );
            }
            Record::Unmap(u) => {
                if let Some(m) = self.maps.get_mut(&u.pid) {
                    m.remove(&u.start);
                }
            }
            Record::Sample(s) => {
                let mut line = std::mem::take(&mut self.line);
                line.clear();
                match self.names.get(&s.pid) {
                    Some(n) => line.push_str(n),
                    None => line.push_str(&format!("pid:{}", s.pid)),
                }
                let n = s.callchain.len();
                // Root first: iterate leaf-first frames in reverse.
                for i in (0..n).rev() {
                    if let Some(pc) = s.callchain.get(i) {
                        line.push(';');
                        self.frame(
                            s.pid,
                            pc,
                            (i as u64) < u64::from(s.kernel_frames),
                            &mut line,
                        );
                    }
                }
                let w = if self.weight_by_period {
                    s.period.max(1)
                } else {
                    1
                };
                match self.stacks.get_mut(line.as_str()) {
                    Some(c) => *c = c.saturating_add(w),
                    None => {
                        self.stacks.insert(line.clone(), w);
                    }
                }
                self.line = line;
            }
            _ => {}
        }
    }

    /// Number of distinct stacks.
    pub fn len(&self) -> usize {
        self.stacks.len()
    }

    /// True when no sample was added.
    pub fn is_empty(&self) -> bool {
        self.stacks.is_empty()
    }

    /// Write the stacks, sorted, one per line.
    pub fn write<W: Write>(&self, out: &mut W) -> io::Result<()> {
        let mut v: Vec<(&String, &u64)> = self.stacks.iter().collect();
        v.sort();
        for (stack, count) in v {
            writeln!(out, "{stack} {count}")?;
        }
        Ok(())
    }
}
