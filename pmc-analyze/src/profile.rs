//! A symbolized, aggregated profile of a log.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use pmc_log::record::Record;
use pmc_log::Reader;

use crate::error::Result;
use crate::symbolize::PERF_CONTEXT_MAX;
use crate::symbolize::{FuncId, Function, ObjectInfo, SymbolizeOptions, Symbolizer};
use crate::Warning;

/// What a sample counts for in reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Weight {
    /// Each sample counts 1 (pmcstat's sample counts).
    #[default]
    Samples,
    /// Each sample counts its period (events it stands for; perf report's
    /// default). Samples with period 0 count 1.
    Period,
}

/// One distinct stack: the same PMC, command and functions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stack {
    /// The PMC id of the samples.
    pub pmc_id: u32,
    /// Index into [`Profile::comms`].
    pub comm: u32,
    /// Functions, **root (outermost caller) first**, leaf last.
    pub frames: Box<[FuncId]>,
    /// Number of samples.
    pub samples: u64,
    /// Sum of the samples' periods (0-period samples count 1).
    pub period: u64,
}

impl Stack {
    /// This stack's weight.
    pub fn weight(&self, w: Weight) -> u64 {
        match w {
            Weight::Samples => self.samples,
            Weight::Period => self.period,
        }
    }
}

/// A PMC seen in the log.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PmcInfo {
    /// The PMC id.
    pub pmc_id: u32,
    /// Event name (the spec as written, or the canonical name); `pmc<N>`
    /// when the log has no descriptor for it.
    pub name: String,
    /// Samples of this PMC.
    pub samples: u64,
    /// Sum of their periods.
    pub period: u64,
    /// The sampling frequency in Hz, when the PMC sampled by frequency
    /// (perf `-F`, pmcstat `--freq`, `,freq=`).
    pub frequency: Option<u64>,
}

/// Counts about the analysis.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Records read.
    pub records: u64,
    /// Samples aggregated.
    pub samples: u64,
    /// Samples skipped by the filters.
    pub filtered: u64,
    /// Frames resolved.
    pub frames: u64,
    /// Samples reported lost by the log (`Lost` records; hwpmc drops of
    /// unknown size count 0).
    pub lost: u64,
    /// Lost-sample records.
    pub lost_records: u64,
    /// Bytes of damaged log skipped by the reader.
    pub skipped_bytes: u64,
    /// The log ended with its clean-close marker.
    pub closed_cleanly: bool,
    /// Samples whose callchain was cut to [`crate::MAX_STACK_DEPTH`] frames.
    pub cut_stacks: u64,
    /// The deepest callchain cut, in frames.
    pub deepest_cut: u64,
}

impl Stats {
    /// Counts a callchain of `n` frames (after the filter's skip) and says whether it is to be
    /// cut to [`crate::MAX_STACK_DEPTH`].
    pub(crate) fn cut(&mut self, n: usize) -> bool {
        let cut = n > crate::MAX_STACK_DEPTH;
        if cut {
            self.cut_stacks += 1;
            self.deepest_cut = self.deepest_cut.max(n as u64);
        }
        cut
    }

    /// The [`Warning::DeepStacks`] of the cut callchains, if any.
    pub(crate) fn deep_warning(&self) -> Option<Warning> {
        (self.cut_stacks > 0).then_some(Warning::DeepStacks {
            samples: self.cut_stacks,
            deepest: self.deepest_cut,
        })
    }
}

/// `chain`'s first [`crate::MAX_STACK_DEPTH`]` - 1` frames (the innermost) and
/// [`pmc_log::record::TRUNCATED_FRAME`], into `out`.
pub(crate) fn cut_chain(chain: impl Iterator<Item = u64>, out: &mut Vec<u64>) {
    out.clear();
    out.extend(chain.take(crate::MAX_STACK_DEPTH - 1));
    out.push(pmc_log::record::TRUNCATED_FRAME);
}

/// Which samples to take.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Only samples of these PMC ids (empty: all).
    pub pmc_ids: Vec<u32>,
    /// Only samples of these processes (empty: all).
    pub pids: Vec<i32>,
    /// Drop kernel frames (`-k`-less user-only view).
    pub user_only: bool,
}

/// Analysis options.
#[derive(Clone, Debug, Default)]
pub struct AnalyzeOptions {
    /// Symbolization.
    pub symbolize: SymbolizeOptions,
    /// Sample selection.
    pub filter: Filter,
    /// Also keep every distinct sampled address ([`Profile::pcs`]), for
    /// per-address reports (gmon histograms, `pmcstat -m`). Off by default.
    pub keep_pcs: bool,
}

/// A distinct sampled address (the leaf of samples) and how often it was
/// sampled; kept with [`AnalyzeOptions::keep_pcs`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SampledPc {
    /// The PMC id of the samples.
    pub pmc_id: u32,
    /// Index into [`Profile::objects`], when a mapping covers the address.
    pub object: Option<u32>,
    /// The address in its object (SVMA), when translated; otherwise the
    /// sampled address itself is in [`SampledPc::ip`].
    pub svma: Option<u64>,
    /// The sampled (run-time) address of the first sample seen here.
    pub ip: u64,
    /// The function.
    pub function: FuncId,
    /// `[start, end)` SVMA of the function symbol, when known.
    pub bounds: Option<(u64, u64)>,
    /// True for a kernel address.
    pub kernel: bool,
    /// Number of samples.
    pub samples: u64,
}

/// Builds a [`Profile`] from records fed one at a time (for
/// [`pmc_log::StreamReader`] and live logs); [`Profile::from_log`] does it
/// for a log in memory.
#[derive(Debug)]
pub struct ProfileBuilder {
    sym: Symbolizer,
    filter: Filter,
    comms: Vec<Arc<str>>,
    comm_ids: HashMap<Arc<str>, u32>,
    /// Key: `[pmc_id, comm, frames...]`.
    stacks: HashMap<Vec<u32>, (u64, u64)>,
    pmcs: BTreeMap<u32, PmcInfo>,
    stats: Stats,
    scratch: Vec<u32>,
    /// A callchain cut to [`crate::MAX_STACK_DEPTH`].
    cut: Vec<u64>,
    keep_pcs: bool,
    /// Key: `(pmc_id, object or u32::MAX, svma or ip)`.
    pcs: HashMap<(u32, u32, u64), SampledPc>,
}

impl ProfileBuilder {
    /// An empty builder.
    pub fn new(opts: AnalyzeOptions) -> Self {
        ProfileBuilder {
            sym: Symbolizer::new(opts.symbolize),
            filter: opts.filter,
            comms: Vec::new(),
            comm_ids: HashMap::new(),
            stacks: HashMap::new(),
            pmcs: BTreeMap::new(),
            stats: Stats::default(),
            scratch: Vec::new(),
            cut: Vec::new(),
            keep_pcs: opts.keep_pcs,
            pcs: HashMap::new(),
        }
    }

    /// The symbolizer (for example to install a [`crate::Kallsyms`]).
    pub fn symbolizer_mut(&mut self) -> &mut Symbolizer {
        &mut self.sym
    }

    fn comm_id(&mut self, pid: i32) -> u32 {
        let name: Arc<str> = match self.sym.comm(pid) {
            Some(c) => Arc::from(c),
            None if pid == -1 => Arc::from("[kernel]"),
            None => Arc::from(format!("pid:{pid}").as_str()),
        };
        if let Some(&id) = self.comm_ids.get(&name) {
            return id;
        }
        let id = u32::try_from(self.comms.len()).unwrap_or(u32::MAX);
        self.comms.push(name.clone());
        self.comm_ids.insert(name, id);
        id
    }

    /// Feed one record.
    pub fn add(&mut self, r: &Record<'_>) {
        self.stats.records += 1;
        match r {
            Record::Pmc(p) => {
                let name = if p.event_spec.is_empty() {
                    p.canonical_name.to_string()
                } else {
                    p.event_spec.to_string()
                };
                let e = self.pmcs.entry(p.pmc_id).or_default();
                e.pmc_id = p.pmc_id;
                e.name = name;
                if let pmc_log::record::Mode::SamplingFrequency(hz) = p.mode {
                    e.frequency = Some(hz);
                }
            }
            Record::Lost(l) => {
                self.stats.lost = self.stats.lost.saturating_add(l.count);
                self.stats.lost_records += 1;
            }
            Record::Sample(s) => {
                if (!self.filter.pmc_ids.is_empty() && !self.filter.pmc_ids.contains(&s.pmc_id))
                    || (!self.filter.pids.is_empty() && !self.filter.pids.contains(&s.pid))
                {
                    self.stats.filtered += 1;
                    return;
                }
                let comm = self.comm_id(s.pid);
                let mut key = std::mem::take(&mut self.scratch);
                key.clear();
                key.push(s.pmc_id);
                key.push(comm);
                let (skip, kernel_frames) = if self.filter.user_only {
                    let k = usize::try_from(s.kernel_frames).unwrap_or(usize::MAX);
                    (k, 0)
                } else {
                    (0, s.kernel_frames)
                };
                let chain = s.callchain.iter().skip(skip);
                let n = chain.len();
                self.stats.frames += n as u64;
                if self.stats.cut(n) {
                    // Deeper than any kernel writes: the innermost frames under [truncated].
                    cut_chain(chain, &mut self.cut);
                    let cut = self.cut.iter().copied();
                    self.sym
                        .resolve_callchain(s.pid, cut, kernel_frames, &mut key);
                } else {
                    self.sym
                        .resolve_callchain(s.pid, chain, kernel_frames, &mut key);
                }
                if self.keep_pcs {
                    self.add_pc(s);
                }
                let period = s.period.max(1);
                count_sample(&mut self.stacks, &key, period);
                self.scratch = key;
                self.stats.samples += 1;
                let p = self.pmcs.entry(s.pmc_id).or_insert_with(|| PmcInfo {
                    pmc_id: s.pmc_id,
                    name: String::new(),
                    ..PmcInfo::default()
                });
                p.samples += 1;
                p.period = p.period.saturating_add(period);
            }
            _ => self.sym.observe(r),
        }
    }

    fn add_pc(&mut self, s: &pmc_log::record::Sample<'_>) {
        let kframes = usize::try_from(s.kernel_frames).unwrap_or(usize::MAX);
        let skip = if self.filter.user_only { kframes } else { 0 };
        let Some((i, ip)) = s
            .callchain
            .iter()
            .enumerate()
            .skip(skip)
            .find(|(_, ip)| *ip < PERF_CONTEXT_MAX)
        else {
            return;
        };
        let kernel = i < kframes;
        let r = self.sym.resolve_pc(s.pid, ip, kernel, false);
        let key = (s.pmc_id, r.object.unwrap_or(u32::MAX), r.svma.unwrap_or(ip));
        if let Some(pc) = self.pcs.get_mut(&key) {
            pc.samples = pc.samples.saturating_add(1);
            return;
        }
        let bounds = match (r.object, r.svma) {
            (Some(o), Some(a)) => self.sym.symbol_bounds(o, a),
            _ => None,
        };
        self.pcs.insert(
            key,
            SampledPc {
                pmc_id: s.pmc_id,
                object: r.object,
                svma: r.svma,
                ip,
                function: r.function,
                bounds,
                kernel: kernel || ip >= crate::symbolize::KERNEL_START,
                samples: 1,
            },
        );
    }

    /// Record what the reader skipped (damage) and whether the log closed.
    pub fn set_read_report(&mut self, report: &pmc_log::ReadReport) {
        self.stats.skipped_bytes = report.skipped_bytes();
        self.stats.closed_cleanly = report.closed_cleanly;
    }

    /// Finish: sort stacks (heaviest first) and collect warnings.
    pub fn finish(mut self) -> Profile {
        let warnings = self.sym.take_warnings();
        self.assemble(warnings)
    }

    /// The profile of everything fed so far, leaving the builder as it is
    /// (a live view refreshing while samples arrive). Symbolization warnings
    /// are kept for [`ProfileBuilder::finish`].
    pub fn snapshot(&self) -> Profile {
        self.assemble(Vec::new())
    }

    fn assemble(&self, mut warnings: Vec<Warning>) -> Profile {
        let mut stacks: Vec<Stack> = self
            .stacks
            .iter()
            .filter_map(|(k, &(samples, period))| {
                let (head, frames) = k.split_at_checked(2)?;
                Some(Stack {
                    pmc_id: *head.first()?,
                    comm: *head.get(1)?,
                    frames: frames.into(),
                    samples,
                    period,
                })
            })
            .collect();
        stacks.sort_by(|a, b| {
            b.samples
                .cmp(&a.samples)
                .then_with(|| a.pmc_id.cmp(&b.pmc_id))
                .then_with(|| a.frames.cmp(&b.frames))
                .then_with(|| a.comm.cmp(&b.comm))
        });
        let mut pmcs: Vec<PmcInfo> = self.pmcs.values().cloned().collect();
        for p in &mut pmcs {
            if p.name.is_empty() {
                p.name = format!("pmc{}", p.pmc_id);
            }
        }
        if self.stats.lost_records > 0 {
            warnings.push(Warning::LostSamples {
                records: self.stats.lost_records,
                count: self.stats.lost,
            });
        }
        if self.stats.skipped_bytes > 0 {
            warnings.push(Warning::DamagedLog {
                skipped_bytes: self.stats.skipped_bytes,
            });
        }
        if self.stats.records > 0 && !self.stats.closed_cleanly {
            warnings.push(Warning::NotClosed);
        }
        warnings.extend(self.stats.deep_warning());
        let mut pcs: Vec<SampledPc> = self.pcs.values().cloned().collect();
        pcs.sort_by(|a, b| {
            (a.pmc_id, a.object, a.svma, a.ip).cmp(&(b.pmc_id, b.object, b.svma, b.ip))
        });
        let objects = (0..self.sym.object_count())
            .filter_map(|o| self.sym.object_info(u32::try_from(o).ok()?))
            .collect();
        Profile {
            pcs,
            objects,
            functions: self.sym.functions().to_vec(),
            comms: self.comms.iter().map(|c| c.to_string()).collect(),
            stacks,
            pmcs,
            stats: self.stats.clone(),
            warnings,
        }
    }
}

/// A symbolized profile: distinct stacks with their counts, the functions
/// they name, and the PMCs. All reports are computed from this.
#[derive(Clone, Debug)]
pub struct Profile {
    /// Functions; a [`FuncId`] indexes this.
    pub functions: Vec<Function>,
    /// Command names; [`Stack::comm`] indexes this.
    pub comms: Vec<String>,
    /// Distinct stacks, heaviest first.
    pub stacks: Vec<Stack>,
    /// PMCs, by id.
    pub pmcs: Vec<PmcInfo>,
    /// Counts.
    pub stats: Stats,
    /// What could not be done as asked (missing objects, build-id
    /// mismatches, lost samples, damage).
    pub warnings: Vec<Warning>,
    /// Distinct sampled addresses, by PMC, object and address (empty
    /// unless [`AnalyzeOptions::keep_pcs`]).
    pub pcs: Vec<SampledPc>,
    /// The objects the log named; [`SampledPc::object`] indexes this.
    pub objects: Vec<ObjectInfo>,
}

impl Profile {
    /// Read, symbolize and aggregate a whole log held in memory.
    ///
    /// Damage in the log is skipped (and reported in [`Profile::stats`] and
    /// [`Profile::warnings`]); only an unreadable preamble is an error.
    pub fn from_log(log: &[u8], opts: AnalyzeOptions) -> Result<Profile> {
        let mut b = ProfileBuilder::new(opts);
        let report = feed_log(log, |r| b.add(r))?;
        b.set_read_report(&report);
        Ok(b.finish())
    }

    /// Read, symbolize and aggregate a log from any reader (a pipe, a file
    /// still being written), through [`pmc_log::StreamReader`], until the
    /// end of its input.
    pub fn from_stream<R: std::io::Read>(input: R, opts: AnalyzeOptions) -> Result<Profile> {
        let mut b = ProfileBuilder::new(opts);
        let report = feed_stream(input, |r| b.add(r))?;
        b.set_read_report(&report);
        Ok(b.finish())
    }

    /// The samples of `self` that `earlier`, a previous
    /// [`ProfileBuilder::snapshot`] of the same builder, did not have: what
    /// a live view shows in delta mode (pmcstat(8) `-T`, keys `c` `d`).
    /// Function and command ids are the builder's, so they agree.
    pub fn since(&self, earlier: &Profile) -> Profile {
        let before: HashMap<(u32, u32, &[FuncId]), (u64, u64)> = earlier
            .stacks
            .iter()
            .map(|s| ((s.pmc_id, s.comm, &*s.frames), (s.samples, s.period)))
            .collect();
        let mut out = self.clone();
        out.stacks.retain_mut(|s| {
            if let Some(&(n, p)) = before.get(&(s.pmc_id, s.comm, &*s.frames)) {
                s.samples = s.samples.saturating_sub(n);
                s.period = s.period.saturating_sub(p);
            }
            s.samples > 0
        });
        out.stacks.sort_by_key(|s| std::cmp::Reverse(s.samples));
        let earlier_pmcs: HashMap<u32, &PmcInfo> =
            earlier.pmcs.iter().map(|e| (e.pmc_id, e)).collect();
        for p in &mut out.pmcs {
            if let Some(e) = earlier_pmcs.get(&p.pmc_id) {
                p.samples = p.samples.saturating_sub(e.samples);
                p.period = p.period.saturating_sub(e.period);
            }
        }
        out.stats.samples = out.stats.samples.saturating_sub(earlier.stats.samples);
        out.stats.frames = out.stats.frames.saturating_sub(earlier.stats.frames);
        out.stats.lost = out.stats.lost.saturating_sub(earlier.stats.lost);
        out
    }

    /// The function `id`.
    pub fn function(&self, id: FuncId) -> Option<&Function> {
        self.functions.get(id as usize)
    }

    /// The name of function `id` (`"[unknown]"` for a bad id).
    pub fn function_name(&self, id: FuncId) -> &str {
        self.function(id).map_or("[unknown]", |f| f.name.as_str())
    }

    /// The command name at index `id`.
    pub fn comm(&self, id: u32) -> &str {
        self.comms.get(id as usize).map_or("?", String::as_str)
    }

    /// The stacks of one PMC (`None`: all).
    pub fn stacks_of(&self, pmc: Option<u32>) -> impl Iterator<Item = &Stack> + '_ {
        self.stacks
            .iter()
            .filter(move |s| pmc.is_none_or(|p| s.pmc_id == p))
    }

    /// Every PMC's stacks, in one pass (heaviest first within each): what a report per PMC
    /// iterates, so that it is linear in the stacks however many PMCs the log declares
    /// (calling [`Profile::stacks_of`] once per PMC goes over every stack each time).
    pub fn stacks_by_pmc(&self) -> HashMap<u32, Vec<&Stack>> {
        let mut by: HashMap<u32, Vec<&Stack>> = HashMap::new();
        for s in &self.stacks {
            by.entry(s.pmc_id).or_default().push(s);
        }
        by
    }

    /// Total weight of one PMC's samples (`None`: all).
    pub fn total(&self, pmc: Option<u32>, w: Weight) -> u64 {
        self.stacks_of(pmc).map(|s| s.weight(w)).sum()
    }
}

/// Hands every record of a log held in memory to `add`; returns the
/// reader's report (damage skipped, whether it closed cleanly).
pub(crate) fn feed_log(
    log: &[u8],
    mut add: impl FnMut(&Record<'_>),
) -> Result<pmc_log::ReadReport> {
    let reader = Reader::new(log)?;
    let mut it = reader.records();
    for r in it.by_ref() {
        add(&r);
    }
    Ok(it.into_report())
}

/// [`feed_log`] for a log read through [`pmc_log::StreamReader`] until the
/// end of its input.
pub(crate) fn feed_stream<R: std::io::Read>(
    input: R,
    mut add: impl FnMut(&Record<'_>),
) -> Result<pmc_log::ReadReport> {
    let mut reader = pmc_log::StreamReader::new(input)?.to_end();
    while let Some(r) = reader.next_record()? {
        add(&r);
    }
    Ok(reader.finish())
}

/// Adds one sample of `period` to the (samples, period) count of `key`,
/// allocating the key only the first time it is seen.
pub(crate) fn count_sample<K: Clone + Eq + std::hash::Hash>(
    map: &mut HashMap<Vec<K>, (u64, u64)>,
    key: &[K],
    period: u64,
) {
    match map.get_mut(key) {
        Some(c) => {
            c.0 += 1;
            c.1 = c.1.saturating_add(period);
        }
        None => {
            map.insert(key.to_vec(), (1, period));
        }
    }
}
