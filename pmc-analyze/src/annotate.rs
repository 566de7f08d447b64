//! Per-sample address listings, streamed in log order: FreeBSD `pmcstat -m`
//! (usr.sbin/pmcstat/pmcpl_annotate.c, the input of pmcannotate(8)) and
//! `pmcstat -a` (pmcpl_annotate_cg.c).
//!
//! - [`Listing::SampledPcs`] (`-m`): one line per sample whose sampled
//!   address falls in a function symbol of a known object:
//!   `<pc> <symbol> 0x<start> 0x<end>`, the raw (mangled) symbol name and
//!   the function's bounds. As pmcannotate matches the PC against the
//!   bounds and disassembles the object at those addresses, the PC is given
//!   in the object's own address space (for a PIE or a shared object, the
//!   address the object's symbols use), where FreeBSD prints the run-time
//!   address (the same for its non-PIE executables and kernel). Samples
//!   without a symbol are skipped, as FreeBSD skips them, and counted.
//! - [`Listing::Callchains`] (`-a`): for every sample, one line per
//!   callchain node, leaf first: `<pc> <function> <file>:<line>` (the
//!   run-time address, the demangled function, the source line of that
//!   address from DWARF; a return address is looked up at `pc - 1`, the
//!   call itself), or `<pc> <unknown> ??:0` when no object symbol covers
//!   it; then a `--` line.

use std::io::Write;

use pmc_log::record::{Record, Sample};

use crate::symbolize::{SymbolizeOptions, Symbolizer, PERF_CONTEXT_MAX};

/// Which listing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listing {
    /// `pmcstat -m`: sampled PCs with their function's bounds.
    SampledPcs,
    /// `pmcstat -a`: every callchain node with function and file:line.
    Callchains,
    /// `perf script`'s default layout: per sample a header line
    /// (`comm pid/tid [cpu] seconds: period event:`), then one line per
    /// frame (`ip symbol+offset (object)`), then a blank line.
    Script,
}

/// Counts of a listing.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ListingStats {
    /// Samples read.
    pub samples: u64,
    /// Lines written (PCs for `-m`, callchain nodes for `-a`).
    pub lines: u64,
    /// Samples (`-m`) or nodes (`-a`) without a symbol.
    pub unresolved: u64,
}

/// Streams a log's records through a symbolizer and writes the listing.
#[derive(Debug)]
pub struct ListingWriter {
    sym: Symbolizer,
    kind: Listing,
    stats: ListingStats,
    /// Thread -> command name, from the log's comm records (for `Script`).
    comms: std::collections::HashMap<i32, String>,
    /// PMC id -> event name, from the log's PMC descriptors (for `Script`).
    events: std::collections::HashMap<u32, String>,
}

impl ListingWriter {
    /// A writer with its own symbolizer.
    pub fn new(kind: Listing, opts: SymbolizeOptions) -> Self {
        ListingWriter {
            sym: Symbolizer::new(opts),
            kind,
            stats: ListingStats::default(),
            comms: std::collections::HashMap::new(),
            events: std::collections::HashMap::new(),
        }
    }

    /// Feed one record; samples produce lines.
    pub fn add<W: Write>(&mut self, r: &Record<'_>, out: &mut W) -> std::io::Result<()> {
        match r {
            Record::Sample(s) => {
                self.stats.samples += 1;
                match self.kind {
                    Listing::SampledPcs => self.sampled_pc(s, out),
                    Listing::Callchains => self.callchain(s, out),
                    Listing::Script => self.script(s, out),
                }
            }
            other => {
                match other {
                    Record::Comm(c) if self.kind == Listing::Script => {
                        // Bounded like the log: one entry per thread named in it.
                        let name = String::from_utf8_lossy(c.comm.as_bytes()).into_owned();
                        self.comms.insert(c.tid, name);
                    }
                    Record::Pmc(p) if self.kind == Listing::Script => {
                        let name = if p.event_spec.is_empty() {
                            p.canonical_name.to_string()
                        } else {
                            p.event_spec.to_string()
                        };
                        self.events.insert(p.pmc_id, name);
                    }
                    _ => {}
                }
                self.sym.observe(other);
                Ok(())
            }
        }
    }

    /// The counts so far.
    pub fn stats(&self) -> &ListingStats {
        &self.stats
    }

    fn sampled_pc<W: Write>(&mut self, s: &Sample<'_>, out: &mut W) -> std::io::Result<()> {
        let kframes = usize::try_from(s.kernel_frames).unwrap_or(usize::MAX);
        let Some((i, ip)) = s
            .callchain
            .iter()
            .enumerate()
            .find(|(_, ip)| *ip < PERF_CONTEXT_MAX)
        else {
            self.stats.unresolved += 1;
            return Ok(());
        };
        let r = self.sym.resolve_pc(s.pid, ip, i < kframes, false);
        let hit = match (r.object, r.svma) {
            (Some(o), Some(a)) => self.sym.raw_symbol(o, a).map(|h| (a, h)),
            _ => None,
        };
        let Some((svma, (name, start, end))) = hit else {
            self.stats.unresolved += 1;
            return Ok(());
        };
        self.stats.lines += 1;
        writeln!(out, "{svma:#x} {name} {start:#x} {end:#x}")
    }

    fn script<W: Write>(&mut self, s: &Sample<'_>, out: &mut W) -> std::io::Result<()> {
        let comm = self
            .comms
            .get(&s.tid)
            .or_else(|| self.comms.get(&s.pid))
            .map_or(":-1", String::as_str);
        // Names and paths from the log: control characters escaped.
        let comm = pmc_log::escape::escape(comm);
        let event = pmc_log::escape::escape(
            self.events
                .get(&s.pmc_id)
                .map_or("[unknown]", String::as_str),
        );
        let cpu = s
            .cpu
            .map_or_else(|| "[-01]".to_owned(), |c| format!("[{c:03}]"));
        writeln!(
            out,
            "{comm:>16} {}/{} {cpu} {}.{:06}: {:>10} {event}:",
            s.pid,
            s.tid,
            s.time / 1_000_000_000,
            (s.time % 1_000_000_000) / 1000,
            s.period
        )?;
        let kframes = usize::try_from(s.kernel_frames).unwrap_or(usize::MAX);
        for (i, ip) in s.callchain.iter().enumerate() {
            if ip >= PERF_CONTEXT_MAX {
                continue;
            }
            let kernel = i < kframes;
            let caller = if kernel { i > 0 } else { i > kframes };
            let a = self.sym.lookup_address(s.pid, ip, kernel, caller);
            self.stats.lines += 1;
            let f = self.sym.functions().get(a.function as usize);
            let object =
                pmc_log::escape::escape(f.and_then(|f| f.object.as_deref()).unwrap_or("unknown"));
            match (f, a.offset) {
                (Some(f), Some(off)) if f.address.is_some() => {
                    let name = pmc_log::escape::escape(&f.name);
                    writeln!(out, "\t{ip:>16x} {name}+{off:#x} ({object})")?;
                }
                _ => {
                    self.stats.unresolved += 1;
                    writeln!(out, "\t{ip:>16x} [unknown] ({object})")?;
                }
            }
        }
        writeln!(out)
    }

    fn callchain<W: Write>(&mut self, s: &Sample<'_>, out: &mut W) -> std::io::Result<()> {
        let kframes = usize::try_from(s.kernel_frames).unwrap_or(usize::MAX);
        for (i, ip) in s.callchain.iter().enumerate() {
            if ip >= PERF_CONTEXT_MAX {
                continue;
            }
            let kernel = i < kframes;
            // The first frame of each half (kernel, user) is a PC, the
            // others are return addresses.
            let caller = if kernel { i > 0 } else { i > kframes };
            let a = self.sym.lookup_address(s.pid, ip, kernel, caller);
            let f = self.sym.functions().get(a.function as usize);
            self.stats.lines += 1;
            match f {
                Some(f) if f.address.is_some() => {
                    let (file, line) = a
                        .source
                        .as_ref()
                        .map_or(("??", 0), |l| (l.file.as_str(), l.line));
                    writeln!(out, "{ip:#x} {} {file}:{line}", f.name)?;
                }
                _ => {
                    self.stats.unresolved += 1;
                    writeln!(out, "{ip:#x} <unknown> ??:0")?;
                }
            }
        }
        writeln!(out, "--")
    }
}

/// Write the listing of a whole log held in memory.
pub fn write_listing<W: Write>(
    log: &[u8],
    kind: Listing,
    opts: SymbolizeOptions,
    out: &mut W,
) -> crate::Result<ListingStats> {
    let reader = pmc_log::Reader::new(log)?;
    let mut w = ListingWriter::new(kind, opts);
    for r in reader.records() {
        w.add(&r, out)?;
    }
    Ok(w.stats)
}
