//! pprof export: a log as a gzipped `profile.proto` for `go tool pprof`,
//! Pyroscope, Parca, Grafana and the cloud profilers.
//!
//! [`export_log`] and [`export_stream`] give a [`PprofExport`]; [`PprofBuilder`] takes records
//! one by one; [`proto`] holds the `profile.proto` messages. Below: what goes where.
//!
//! The message layout is pprof's `proto/profile.proto` (package
//! `perftools.profiles`), written as `prost`-derived structs in [`proto`].
//! What goes where:
//!
//! - **Sample types**: `samples/count` first (pprof's convention for the
//!   count), then one per PMC: its event name and unit (`nanoseconds` for
//!   the clock events `cpu-clock`/`task-clock`, `events` otherwise), whose
//!   value is the samples' period (0-period samples count 1, as
//!   [`crate::Weight::Period`]). A sample of one PMC is 0 in the other PMCs'
//!   columns. With one PMC sampled at a fixed period, `period_type` and
//!   `period` say so. pprof's default view is the last type (the event);
//!   `-sample_index=samples` shows sample counts, as `pmcstat -R --summary`.
//!   Every sample holds a value per type, so at most [`MAX_VALUE_COLUMNS`] PMCs get
//!   a type of their own; the PMCs past them share `other_events`, each of their
//!   samples labelled `event` with its PMC's name (and a comment says so): memory
//!   stays linear in the samples however many PMCs a log declares.
//! - **Locations**: one per distinct (mapping, address, leaf-or-caller), with
//!   the sampled address; [`Symbolizer::source_frames`] gives its `line`
//!   entries, innermost inlined function first and the real function last,
//!   each with its line number. Unresolved addresses get the same stand-ins
//!   as the other reports (`[unknown]`, `[object]`, `[kernel]`).
//! - **Functions**: name (demangled), file and start line; `system_name` is
//!   left empty so pprof keeps the names as they are.
//! - **Mappings**: start, limit, file offset, path and hex build-id, and the
//!   `has_*` flags saying what was resolved (pprof does not re-symbolize
//!   those). Kernel frames resolved through kallsyms share one
//!   `[kernel.kallsyms]` mapping spanning them.
//! - **Labels**: numeric `pid` and `tid`, string `comm` (unknown ones left
//!   out), and string `event` for the PMCs past [`MAX_VALUE_COLUMNS`].
//! - **Comments**: where the log comes from, and every [`Warning`] (lost
//!   samples, damage, unreadable objects), so nothing is dropped silently.
//!
//! The log is read once. Mappings, locations, functions and strings are
//! deduplicated in hash maps, and samples with the same stack, PMC and
//! labels are summed, so memory grows with distinct stacks, not samples.
//!
//! ```no_run
//! use pmc_analyze::pprof::export_log;
//! use pmc_analyze::AnalyzeOptions;
//!
//! let log = std::fs::read("pmc.log")?;
//! let export = export_log(&log, AnalyzeOptions::default())?;
//! for w in &export.warnings {
//!     eprintln!("warning: {w}");
//! }
//! export.write_gzip(std::fs::File::create("out.pb.gz")?)?; // go tool pprof -top out.pb.gz
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use pmc_log::record::{Mode, Record};
use prost::Message;

use crate::error::Result;
use crate::object::{build_id_hex, SourceLocation};
use crate::profile::{AnalyzeOptions, Filter, Stats};
use crate::symbolize::{FuncId, MappedRange, Symbolizer, PERF_CONTEXT_MAX};
use crate::Warning;

/// The messages of pprof's `profile.proto` (package `perftools.profiles`)
/// that this export writes, with the upstream field numbers. Every `i64`
/// named like a string (`name`, `filename`, `key`, ...) is an index into
/// [`proto::Profile::string_table`].
pub mod proto {
    /// A profile: samples, their locations, and the tables they index.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        /// What each [`Sample::value`] entry measures.
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        /// The samples.
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        /// Mapped objects.
        #[prost(message, repeated, tag = "3")]
        pub mapping: Vec<Mapping>,
        /// Program locations.
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        /// Functions referenced by locations.
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        /// All strings; entry 0 is `""`.
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        /// Regexp (string index) of frames to drop.
        #[prost(int64, tag = "7")]
        pub drop_frames: i64,
        /// Regexp (string index) of frames to keep.
        #[prost(int64, tag = "8")]
        pub keep_frames: i64,
        /// Start of the collection, nanoseconds since the Unix epoch.
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        /// Duration of the collection in nanoseconds.
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        /// What [`Profile::period`] counts.
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        /// Events between samples.
        #[prost(int64, tag = "12")]
        pub period: i64,
        /// Free-form comments (string indexes).
        #[prost(int64, repeated, tag = "13")]
        pub comment: Vec<i64>,
        /// The preferred sample type (string index); 0: the last one.
        #[prost(int64, tag = "14")]
        pub default_sample_type: i64,
    }

    /// A measured quantity and its unit.
    #[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
    pub struct ValueType {
        /// Type name (string index).
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        /// Unit (string index).
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    /// One stack with its values and labels.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        /// Location ids, leaf first.
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        /// One value per [`Profile::sample_type`].
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
        /// Labels.
        #[prost(message, repeated, tag = "3")]
        pub label: Vec<Label>,
    }

    /// A key with a string or numeric value.
    #[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
    pub struct Label {
        /// Key (string index).
        #[prost(int64, tag = "1")]
        pub key: i64,
        /// String value (string index), or 0.
        #[prost(int64, tag = "2")]
        pub str: i64,
        /// Numeric value.
        #[prost(int64, tag = "3")]
        pub num: i64,
        /// Unit of `num` (string index), or 0.
        #[prost(int64, tag = "4")]
        pub num_unit: i64,
    }

    /// An object mapped into memory.
    #[derive(Clone, PartialEq, Eq, prost::Message)]
    pub struct Mapping {
        /// Unique non-zero id.
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// First address.
        #[prost(uint64, tag = "2")]
        pub memory_start: u64,
        /// End address (exclusive).
        #[prost(uint64, tag = "3")]
        pub memory_limit: u64,
        /// File offset of `memory_start`.
        #[prost(uint64, tag = "4")]
        pub file_offset: u64,
        /// Path (string index).
        #[prost(int64, tag = "5")]
        pub filename: i64,
        /// Build-id, hex (string index).
        #[prost(int64, tag = "6")]
        pub build_id: i64,
        /// Locations in it carry function names.
        #[prost(bool, tag = "7")]
        pub has_functions: bool,
        /// ... file names.
        #[prost(bool, tag = "8")]
        pub has_filenames: bool,
        /// ... line numbers.
        #[prost(bool, tag = "9")]
        pub has_line_numbers: bool,
        /// ... inlined frames.
        #[prost(bool, tag = "10")]
        pub has_inline_frames: bool,
    }

    /// An address, with its functions and lines.
    #[derive(Clone, PartialEq, Eq, prost::Message)]
    pub struct Location {
        /// Unique non-zero id.
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// Its [`Mapping::id`], or 0 when unmapped.
        #[prost(uint64, tag = "2")]
        pub mapping_id: u64,
        /// The instruction address.
        #[prost(uint64, tag = "3")]
        pub address: u64,
        /// Innermost inlined function first, the real function last.
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
        /// Several symbols share this address.
        #[prost(bool, tag = "5")]
        pub is_folded: bool,
    }

    /// A function and a line in it.
    #[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
    pub struct Line {
        /// The [`Function::id`].
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        /// Line number (0: unknown).
        #[prost(int64, tag = "2")]
        pub line: i64,
    }

    /// A function.
    #[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
    pub struct Function {
        /// Unique non-zero id.
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// Human-readable name (string index).
        #[prost(int64, tag = "2")]
        pub name: i64,
        /// Name as the system knows it, e.g. mangled (string index).
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        /// Source file (string index).
        #[prost(int64, tag = "4")]
        pub filename: i64,
        /// First line of the function.
        #[prost(int64, tag = "5")]
        pub start_line: i64,
    }
}

/// A finished export: the profile message, and what the analysis counted
/// and met on the way.
#[derive(Clone, Debug)]
pub struct PprofExport {
    /// The profile.
    pub profile: proto::Profile,
    /// Counts (records, samples, filtered, lost, skipped bytes).
    pub stats: Stats,
    /// What could not be done as asked; also in the profile's comments.
    pub warnings: Vec<Warning>,
}

impl PprofExport {
    /// The profile, serialized (not compressed).
    pub fn encode(&self) -> Vec<u8> {
        self.profile.encode_to_vec()
    }

    /// Write the profile gzipped, as pprof reads it from a file.
    pub fn write_gzip<W: Write>(&self, out: W) -> Result<()> {
        let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
        gz.write_all(&self.encode())?;
        gz.finish()?.flush()?;
        Ok(())
    }
}

/// Read, symbolize and export a whole log held in memory.
///
/// Damage in the log is skipped (and reported in the warnings); only an
/// unreadable preamble is an error.
pub fn export_log(log: &[u8], opts: AnalyzeOptions) -> Result<PprofExport> {
    let mut b = PprofBuilder::new(opts);
    let report = crate::profile::feed_log(log, |r| b.add(r))?;
    b.set_read_report(&report);
    Ok(b.finish())
}

/// Read, symbolize and export a log from any reader (a pipe, a file still
/// being written) through [`pmc_log::StreamReader`].
pub fn export_stream<R: std::io::Read>(input: R, opts: AnalyzeOptions) -> Result<PprofExport> {
    let mut b = PprofBuilder::new(opts);
    let report = crate::profile::feed_stream(input, |r| b.add(r))?;
    b.set_read_report(&report);
    Ok(b.finish())
}

/// A PMC's sample-type column.
#[derive(Debug, Default)]
struct Column {
    name: String,
    nanoseconds: bool,
    fixed_period: Option<u64>,
}

/// Strings, deduplicated; index 0 is `""`.
#[derive(Debug)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Self {
        Strings {
            table: vec![String::new()],
            index: HashMap::from([(String::new(), 0)]),
        }
    }

    fn get(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = i64::try_from(self.table.len()).unwrap_or(i64::MAX);
        self.table.push(s.to_owned());
        self.index.insert(s.to_owned(), i);
        i
    }
}

/// Location dedup key: mapping id (0: none), kernel, address, caller.
type LocKey = (u64, bool, u64, bool);

/// Builds a pprof profile from records fed one at a time;
/// [`export_log`] and [`export_stream`] drive it over a whole log.
#[derive(Debug)]
pub struct PprofBuilder {
    sym: Symbolizer,
    filter: Filter,
    strings: Strings,
    mappings: Vec<proto::Mapping>,
    mapping_ids: HashMap<MappedRange, u64>,
    kernel_mapping: Option<u64>,
    locations: Vec<proto::Location>,
    location_ids: HashMap<LocKey, u64>,
    functions: Vec<proto::Function>,
    function_ids: HashMap<FuncId, u64>,
    /// Key: `[pmc_id, pid, tid, comm string, location ids (leaf first)...]`;
    /// value: samples and summed period.
    samples: HashMap<Vec<u64>, (u64, u64)>,
    columns: BTreeMap<u32, Column>,
    origin: String,
    time_nanos: i64,
    start_time: u64,
    ticks_per_second: u64,
    last_time: u64,
    stats: Stats,
    scratch: Vec<u64>,
    /// The sample's callchain, cut to [`crate::MAX_STACK_DEPTH`].
    cut: Vec<u64>,
}

impl PprofBuilder {
    /// An empty builder; the options are those of [`crate::Profile`]
    /// (symbolization and sample filters).
    pub fn new(opts: AnalyzeOptions) -> Self {
        PprofBuilder {
            sym: Symbolizer::new(opts.symbolize),
            filter: opts.filter,
            strings: Strings::new(),
            mappings: Vec::new(),
            mapping_ids: HashMap::new(),
            kernel_mapping: None,
            locations: Vec::new(),
            location_ids: HashMap::new(),
            functions: Vec::new(),
            function_ids: HashMap::new(),
            samples: HashMap::new(),
            columns: BTreeMap::new(),
            origin: String::new(),
            time_nanos: 0,
            start_time: 0,
            ticks_per_second: 0,
            last_time: 0,
            stats: Stats::default(),
            scratch: Vec::new(),
            cut: Vec::new(),
        }
    }

    /// The symbolizer (for example to install a [`crate::Kallsyms`]).
    pub fn symbolizer_mut(&mut self) -> &mut Symbolizer {
        &mut self.sym
    }

    /// Feed one record.
    pub fn add(&mut self, r: &Record<'_>) {
        self.stats.records += 1;
        match r {
            Record::Header(h) => {
                self.origin = format!(
                    "pmc-log from {} {} {} ({})",
                    h.os, h.kernel_release, h.arch, h.backend
                );
                self.time_nanos = h.start_wall_ns;
                self.start_time = h.start_time;
                self.ticks_per_second = h.ticks_per_second;
                self.sym.observe(r);
            }
            Record::Pmc(p) => {
                let name = if p.event_spec.is_empty() {
                    p.canonical_name.to_string()
                } else {
                    p.event_spec.to_string()
                };
                let c = self.columns.entry(p.pmc_id).or_default();
                c.nanoseconds = is_clock(&name, &p.canonical_name, &p.native_config);
                c.name = name;
                c.fixed_period = match p.mode {
                    Mode::SamplingPeriod(n) => Some(n),
                    _ => None,
                };
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
                let comm = match self.sym.comm(s.pid) {
                    Some(c) => self.strings.get(c),
                    None => 0,
                };
                let mut key = std::mem::take(&mut self.scratch);
                key.clear();
                key.extend([u64::from(s.pmc_id), s.pid as u64, s.tid as u64, comm as u64]);
                let kernel_frames = usize::try_from(s.kernel_frames).unwrap_or(usize::MAX);
                let (skip, kernel_frames) = if self.filter.user_only {
                    (kernel_frames, 0)
                } else {
                    (0, kernel_frames)
                };
                let chain = s.callchain.iter().skip(skip);
                let n = chain.len();
                let mut cut = std::mem::take(&mut self.cut);
                if self.stats.cut(n) {
                    // Deeper than any kernel writes: the innermost frames (the root's
                    // TRUNCATED_FRAME is no location and is left out below).
                    crate::profile::cut_chain(chain, &mut cut);
                } else {
                    cut.clear();
                    cut.extend(chain);
                }
                for (i, ip) in cut.iter().copied().enumerate() {
                    self.stats.frames += 1;
                    if ip >= PERF_CONTEXT_MAX {
                        continue;
                    }
                    let kernel = i < kernel_frames;
                    // As Symbolizer::resolve_callchain: the first frame of
                    // each half is a PC, the others return addresses.
                    let caller = if kernel { i > 0 } else { i > kernel_frames };
                    let loc = self.location(s.pid, ip, kernel, caller);
                    key.push(loc);
                }
                self.cut = cut;
                let period = s.period.max(1);
                crate::profile::count_sample(&mut self.samples, &key, period);
                self.scratch = key;
                self.stats.samples += 1;
                self.last_time = self.last_time.max(s.time);
                self.columns.entry(s.pmc_id).or_default();
            }
            _ => self.sym.observe(r),
        }
    }

    /// The location id of one callchain frame, made on first sight.
    fn location(&mut self, pid: i32, ip: u64, kernel: bool, caller: bool) -> u64 {
        let range = self.sym.mapping_at(pid, ip, kernel, caller);
        let is_kernel = kernel || ip >= 0xffff_8000_0000_0000;
        let mapping_id = match range {
            Some(r) => self.mapping_id(&r),
            None if is_kernel && self.sym.has_kallsyms() => self.kernel_mapping_id(ip),
            None => 0,
        };
        let key = (mapping_id, is_kernel, ip, caller);
        if let Some(&id) = self.location_ids.get(&key) {
            return id;
        }
        let line = self
            .sym
            .source_frames(pid, ip, kernel, caller)
            .into_iter()
            .map(|f| proto::Line {
                function_id: self.function_id(f.function, f.source.as_ref()),
                line: f.source.map_or(0, |s| i64::from(s.line)),
            })
            .collect();
        let id = self.locations.len() as u64 + 1;
        self.locations.push(proto::Location {
            id,
            mapping_id,
            address: ip,
            line,
            is_folded: false,
        });
        self.location_ids.insert(key, id);
        id
    }

    fn mapping_id(&mut self, r: &MappedRange) -> u64 {
        if let Some(&id) = self.mapping_ids.get(r) {
            return id;
        }
        let d = self.sym.mapping_details(r);
        let id = self.mappings.len() as u64 + 1;
        let build_id = if d.build_id.is_empty() {
            0
        } else {
            self.strings.get(&build_id_hex(&d.build_id))
        };
        self.mappings.push(proto::Mapping {
            id,
            memory_start: r.start,
            memory_limit: r.end,
            file_offset: d.file_offset,
            filename: self.strings.get(&d.path),
            build_id,
            has_functions: d.symbols,
            has_filenames: d.debug_info,
            has_line_numbers: d.debug_info,
            has_inline_frames: d.debug_info,
        });
        self.mapping_ids.insert(*r, id);
        id
    }

    /// The one mapping of kallsyms-resolved kernel addresses, grown to
    /// cover each address seen.
    fn kernel_mapping_id(&mut self, ip: u64) -> u64 {
        let id = match self.kernel_mapping {
            Some(id) => id,
            None => {
                let id = self.mappings.len() as u64 + 1;
                let filename = self.strings.get("[kernel.kallsyms]");
                self.mappings.push(proto::Mapping {
                    id,
                    memory_start: ip,
                    memory_limit: ip.saturating_add(1),
                    filename,
                    has_functions: true,
                    ..Default::default()
                });
                self.kernel_mapping = Some(id);
                id
            }
        };
        if let Some(m) = self.mappings.get_mut((id - 1) as usize) {
            m.memory_start = m.memory_start.min(ip);
            m.memory_limit = m.memory_limit.max(ip.saturating_add(1));
        }
        id
    }

    fn function_id(&mut self, f: FuncId, source: Option<&SourceLocation>) -> u64 {
        if let Some(&id) = self.function_ids.get(&f) {
            return id;
        }
        let (name, file, start_line) = match self.sym.functions().get(f as usize) {
            Some(func) => {
                // An inlined function has no entry location of its own:
                // its file is the one of the first line seen in it.
                let src = if func.inlined {
                    source
                } else {
                    func.source.as_ref()
                };
                (
                    func.name.clone(),
                    src.map(|s| s.file.clone()),
                    if func.inlined {
                        0
                    } else {
                        src.map_or(0, |s| i64::from(s.line))
                    },
                )
            }
            None => ("[unknown]".to_owned(), None, 0),
        };
        let id = self.functions.len() as u64 + 1;
        let name = self.strings.get(&name);
        let filename = file.map_or(0, |f| self.strings.get(&f));
        self.functions.push(proto::Function {
            id,
            name,
            system_name: 0,
            filename,
            start_line,
        });
        self.function_ids.insert(f, id);
        id
    }

    /// Record what the reader skipped (damage) and whether the log closed.
    pub fn set_read_report(&mut self, report: &pmc_log::ReadReport) {
        self.stats.skipped_bytes = report.skipped_bytes();
        self.stats.closed_cleanly = report.closed_cleanly;
    }

    /// Finish: the profile, with samples in a stable order.
    pub fn finish(mut self) -> PprofExport {
        let warnings = self.take_warnings();
        let (sample_type, column_of) = self.sample_types();
        let (period_type, period) = match (self.columns.values().next(), sample_type.get(1)) {
            (
                Some(Column {
                    fixed_period: Some(p),
                    ..
                }),
                Some(t),
            ) if self.columns.len() == 1 => (Some(*t), i64::try_from(*p).unwrap_or(i64::MAX)),
            _ => (None, 0),
        };

        let st = &mut self.strings;
        let label_keys = [
            st.get("pid"),
            st.get("tid"),
            st.get("comm"),
            st.get("event"),
        ];
        let shared = self.shared_column_names();
        let sample = proto_samples(
            std::mem::take(&mut self.samples),
            sample_type.len(),
            &column_of,
            label_keys,
            &shared,
        );
        self.order_mappings();

        let st = &mut self.strings;
        let mut comment = Vec::new();
        if !self.origin.is_empty() {
            comment.push(st.get(&self.origin));
        }
        for w in &warnings {
            comment.push(st.get(&format!("warning: {w}")));
        }
        if self.columns.len() > MAX_VALUE_COLUMNS {
            comment.push(st.get(&format!(
                "{} PMCs beyond the first {MAX_VALUE_COLUMNS} share the value `{OTHER_EVENTS}`; \
                 the label `event` names each",
                self.columns.len() - MAX_VALUE_COLUMNS
            )));
        }
        let duration_nanos = self.duration_nanos();
        PprofExport {
            profile: proto::Profile {
                sample_type,
                sample,
                mapping: self.mappings,
                location: self.locations,
                function: self.functions,
                string_table: std::mem::take(&mut self.strings.table),
                time_nanos: self.time_nanos,
                duration_nanos,
                period_type,
                period,
                comment,
                ..Default::default()
            },
            stats: self.stats,
            warnings,
        }
    }

    /// The symbolizer's warnings, then lost samples, damage and an unclosed
    /// log.
    fn take_warnings(&mut self) -> Vec<Warning> {
        let mut warnings = self.sym.take_warnings();
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
        warnings
    }

    /// The string-table index of the name of each PMC past the first
    /// [`MAX_VALUE_COLUMNS`] (whose values share one column): the `event` label of
    /// their samples.
    fn shared_column_names(&mut self) -> HashMap<u32, i64> {
        let names: Vec<(u32, String)> = self
            .columns
            .iter()
            .skip(MAX_VALUE_COLUMNS)
            .map(|(&id, c)| {
                let name = if c.name.is_empty() {
                    format!("pmc{id}")
                } else {
                    c.name.clone()
                };
                (id, name)
            })
            .collect();
        names
            .into_iter()
            .map(|(id, n)| (id, self.strings.get(&n)))
            .collect()
    }

    /// The sample types: `samples/count`, then one per PMC column with a
    /// distinct name (at most [`MAX_VALUE_COLUMNS`]; the PMCs past them share
    /// `other_events`); and each PMC's index in a sample's values.
    fn sample_types(&mut self) -> (Vec<proto::ValueType>, HashMap<u32, usize>) {
        let st = &mut self.strings;
        let mut sample_type = vec![proto::ValueType {
            r#type: st.get("samples"),
            unit: st.get("count"),
        }];
        let mut column_of = HashMap::new();
        let mut seen_names = HashMap::new();
        for (i, (&pmc_id, c)) in self.columns.iter().enumerate() {
            if i == MAX_VALUE_COLUMNS {
                // Every sample holds a value per column: past this many PMCs, one column
                // for the rest keeps memory linear in the samples (named by a label).
                sample_type.push(proto::ValueType {
                    r#type: st.get(OTHER_EVENTS),
                    unit: st.get("events"),
                });
            }
            if i >= MAX_VALUE_COLUMNS {
                column_of.insert(pmc_id, MAX_VALUE_COLUMNS + 1);
                continue;
            }
            let mut name = if c.name.is_empty() {
                format!("pmc{pmc_id}")
            } else {
                c.name.clone()
            };
            // Types are chosen by name (-sample_index): keep names distinct.
            if *seen_names
                .entry(name.clone())
                .and_modify(|n| *n += 1)
                .or_insert(1)
                > 1
                || name == "samples"
            {
                name = format!("{name}#{pmc_id}");
            }
            let unit = if c.nanoseconds {
                "nanoseconds"
            } else {
                "events"
            };
            sample_type.push(proto::ValueType {
                r#type: st.get(&name),
                unit: st.get(unit),
            });
            column_of.insert(pmc_id, i + 1);
        }
        (sample_type, column_of)
    }

    /// pprof takes mapping[0] for the main binary: put executables
    /// first, then shared objects, then pseudo-objects and the kernel, and
    /// renumber the mappings (and the locations' references) in that order.
    fn order_mappings(&mut self) {
        let st = &self.strings;
        let rank = |m: &proto::Mapping| {
            let f = usize::try_from(m.filename)
                .ok()
                .and_then(|i| st.table.get(i))
                .map_or("", String::as_str);
            if f.is_empty() || f.starts_with('[') {
                2
            } else if crate::symbolize::basename(f).contains(".so") {
                1
            } else {
                0
            }
        };
        self.mappings.sort_by_key(|m| (rank(m), m.id));
        let mut new_id = vec![0u64; self.mappings.len() + 1];
        for (i, m) in self.mappings.iter_mut().enumerate() {
            if let Some(n) = new_id.get_mut(m.id as usize) {
                *n = i as u64 + 1;
            }
            m.id = i as u64 + 1;
        }
        for l in &mut self.locations {
            l.mapping_id = new_id.get(l.mapping_id as usize).copied().unwrap_or(0);
        }
    }

    /// The time from the first to the last record, in nanoseconds (0 without
    /// a tick rate).
    fn duration_nanos(&self) -> i64 {
        match self.ticks_per_second {
            0 => 0,
            tps => {
                let ticks = self.last_time.saturating_sub(self.start_time);
                i64::try_from(u128::from(ticks) * 1_000_000_000 / u128::from(tps))
                    .unwrap_or(i64::MAX)
            }
        }
    }
}

/// The aggregated samples (key: PMC, pid, tid, comm, then locations; value:
/// count and period) as pprof samples in the keys' order, with `pid`/`tid`/
/// `comm` labels (`label_keys`, in that order) where known.
fn proto_samples(
    samples: HashMap<Vec<u64>, (u64, u64)>,
    width: usize,
    column_of: &HashMap<u32, usize>,
    label_keys: [i64; 4],
    shared: &HashMap<u32, i64>,
) -> Vec<proto::Sample> {
    let [key_pid, key_tid, key_comm, key_event] = label_keys;
    let mut keys: Vec<(Vec<u64>, (u64, u64))> = samples.into_iter().collect();
    keys.sort_unstable();
    keys.into_iter()
        .filter_map(|(k, (n, p))| {
            let (head, locs) = k.split_at_checked(4)?;
            let &[pmc, pid, tid, comm] = head else {
                return None;
            };
            let mut value = vec![0i64; width];
            if let Some(v) = value.get_mut(0) {
                *v = i64::try_from(n).unwrap_or(i64::MAX);
            }
            let col = u32::try_from(pmc).ok().and_then(|p| column_of.get(&p));
            if let Some(v) = col.and_then(|&c| value.get_mut(c)) {
                *v = i64::try_from(p).unwrap_or(i64::MAX);
            }
            let mut label = Vec::with_capacity(3);
            for (key, v) in [(key_pid, pid as i32), (key_tid, tid as i32)] {
                if v >= 0 {
                    label.push(proto::Label {
                        key,
                        num: i64::from(v),
                        ..Default::default()
                    });
                }
            }
            if comm != 0 {
                label.push(proto::Label {
                    key: key_comm,
                    str: comm as i64,
                    ..Default::default()
                });
            }
            if let Some(&name) = u32::try_from(pmc).ok().and_then(|p| shared.get(&p)) {
                label.push(proto::Label {
                    key: key_event,
                    str: name,
                    ..Default::default()
                });
            }
            Some(proto::Sample {
                location_id: locs.to_vec(),
                value,
                label,
            })
        })
        .collect()
}

/// The most PMCs that get a value column of their own: every sample holds one value per
/// column, so a log declaring 80,000 PMCs would make the profile 80,000 times its samples.
/// The PMCs past them share [`OTHER_EVENTS`], their samples labelled `event`.
///
/// ```
/// assert_eq!(pmc_analyze::pprof::MAX_VALUE_COLUMNS, 64);
/// ```
pub const MAX_VALUE_COLUMNS: usize = 64;

/// The value column the PMCs past [`MAX_VALUE_COLUMNS`] share.
pub const OTHER_EVENTS: &str = "other_events";

/// Whether a PMC counts nanoseconds: perf's software `cpu-clock` (type 1,
/// config 0) and `task-clock` (type 1, config 1), by the native
/// configuration or else by name. hwpmc's `SOFT-CLOCK` counts ticks.
fn is_clock(spec: &str, canonical: &str, native: &str) -> bool {
    let field = |k: &str| {
        native
            .split(',')
            .find_map(|f| f.strip_prefix(k)?.strip_prefix('='))
    };
    if let Some(t) = field("type") {
        let config = field("config").unwrap_or("0");
        return t == "1" && matches!(config, "0" | "0x0" | "1" | "0x1");
    }
    [spec, canonical].iter().any(|n| {
        let base = n.split([':', ',', '/']).next().unwrap_or("");
        base.eq_ignore_ascii_case("cpu-clock") || base.eq_ignore_ascii_case("task-clock")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_events_count_nanoseconds() {
        assert!(is_clock(
            "cpu-clock",
            "cpu-clock",
            "type=1,size=136,sample_freq=4000"
        ));
        assert!(is_clock(
            "task-clock:u",
            "task-clock",
            "type=1,size=136,config=0x1"
        ));
        assert!(!is_clock(
            "page-faults",
            "page-faults",
            "type=1,size=136,config=0x2"
        ));
        assert!(!is_clock("cycles", "cycles", "type=0,size=136"));
        assert!(is_clock("cpu-clock", "cpu-clock", ""));
        assert!(!is_clock(
            "SOFT-CLOCK.HARD",
            "SOFT-CLOCK.HARD",
            "event=0x1000,flags=0x80,rate=1000"
        ));
    }
}
