//! [`Importer`]: an hwpmc log in memory turned into pmc-log records
//! (`Converter` keeps the state across records: PMCs, processes, forks).

use super::consts::*;
use super::flags::{map_flags, text};
use super::parser::{allocated_dyn, Parser, PrefixInfo, MAX_TRACKED_PMCS};
use super::to_record::*;
use super::{Event, HwpmcError, ImportReport, MAX_NOTES};
use crate::record::*;
use std::borrow::Cow;
use std::collections::HashMap;

/// Converts an hwpmc log into pmc-log [`Record`]s, the [`Header`] first.
///
/// ```
/// use pmc_log::hwpmc::{Encoder, Importer};
/// use pmc_log::record::Record;
/// let mut e = Encoder::new(Vec::new());
/// e.initialize(0, 0x0A01_0000, 0x9D, 1_000_000_000, 0, 0, "GenuineIntel-6-9A-4")?;
/// e.map_in(1, 42, 0x400000, b"/bin/sh")?;
/// let log = e.into_inner();
/// let recs: Vec<Record> = Importer::new(&log)?.collect();
/// assert!(matches!(&recs[1], Record::Map(m) if m.path.as_bytes() == b"/bin/sh"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Importer<'a> {
    parser: Parser<'a>,
    pending: Option<Event<'a>>,
    started: bool,
    conv: Converter,
    error: Option<HwpmcError>,
}

impl<'a> Importer<'a> {
    /// Start importing `data`.
    ///
    /// # Errors
    /// [`HwpmcError::NotHwpmcLog`].
    pub fn new(data: &'a [u8]) -> Result<Self, HwpmcError> {
        let parser = Parser::new(data)?;
        let conv = Converter::new(parser.core.prefix.clone());
        Ok(Importer {
            parser,
            pending: None,
            started: false,
            conv,
            error: None,
        })
    }

    /// What was parsed and skipped so far.
    pub fn report(&self) -> ImportReport {
        let mut r = self.parser.core.report.clone();
        r.records_out = self.conv.out;
        self.conv.add_notes(&mut r);
        r
    }

    /// An error that stopped the import early (unsupported version), if any.
    pub fn error(&self) -> Option<&HwpmcError> {
        self.error.as_ref()
    }
}

/// Event-to-record conversion state shared by [`Importer`] and
/// [`StreamImporter`].
#[derive(Debug, Default)]
pub(super) struct Converter {
    pub(super) prefix: Option<PrefixInfo>,
    /// Sampling rate (0: counting) and `PMC_F_*` flags per PMC id (at most
    /// [`MAX_TRACKED_PMCS`]).
    rates: HashMap<u32, (u64, u32)>,
    /// Records produced, the header included.
    pub(super) out: u64,
    /// `pl_version` of INITIALIZE.
    version: Option<u32>,
    /// The PMC id layout the log's allocation records showed, if any did.
    layout: Option<IdLayout>,
    notes: Vec<String>,
    /// The parent of each process a PROCFORK named (at most
    /// [`MAX_TRACKED_FORKS`]), until an exec or exit record for it: to
    /// merge the kernel's duplicate PROCFORKs (see [`Converter::skip`]).
    forks: HashMap<i32, i32>,
}

/// The most forked processes the importer remembers for merging duplicate
/// PROCFORK records; past it the map starts afresh (a duplicate may then
/// pass through as a second, identical fork record).
pub const MAX_TRACKED_FORKS: usize = 65_536;

impl Converter {
    pub(super) fn new(prefix: Option<PrefixInfo>) -> Self {
        Converter {
            prefix,
            ..Converter::default()
        }
    }

    /// Whether `ev` repeats what an earlier record already said, so it
    /// produces no record. hwpmc writes one PROCFORK per `PMC_F_DESCENDANTS`
    /// PMC attached to the parent, not one per owner (`hwpmc_mod.c`
    /// `pmc_process_fork()`: `pmclog_process_procfork(po, ...)` inside the
    /// loop over the parent's PMCs): a fork already seen for the same child
    /// and parent, with no exec or exit of the child since, is merged.
    pub(super) fn skip(&mut self, ev: &Event<'_>) -> bool {
        match *ev {
            Event::ProcFork { oldpid, newpid, .. } => {
                if self.forks.get(&newpid) == Some(&oldpid) {
                    self.note(
                        "duplicate PROCFORK records (hwpmc writes one per PMC_F_DESCENDANTS PMC, \
                         hwpmc_mod.c pmc_process_fork) were merged into one fork each"
                            .to_owned(),
                    );
                    return true;
                }
                if self.forks.len() >= MAX_TRACKED_FORKS {
                    self.forks.clear();
                }
                self.forks.insert(newpid, oldpid);
            }
            Event::ProcExec { pid, .. }
            | Event::ProcExit { pid, .. }
            | Event::SysExit { pid, .. } => {
                self.forks.remove(&pid);
            }
            _ => {}
        }
        false
    }

    fn track(&mut self, pmcid: u32, rate: u64, flags: u32) {
        if self.rates.len() < MAX_TRACKED_PMCS || self.rates.contains_key(&pmcid) {
            self.rates.insert(pmcid, (rate, flags));
        }
    }

    fn note(&mut self, n: String) {
        if self.notes.len() < MAX_NOTES && !self.notes.contains(&n) {
            self.notes.push(n);
        }
    }

    pub(super) fn add_notes(&self, r: &mut ImportReport) {
        for n in &self.notes {
            if r.notes.len() < MAX_NOTES && !r.notes.contains(n) {
                r.notes.push(n.clone());
            }
        }
    }

    /// Whether `id` read in `layout` is a PMC hwpmc can have allocated:
    /// mode at most TC, a class some tree defines, and the CPU field
    /// PMC_CPU_ANY exactly for process (virtual) modes
    /// (`hwpmc_mod.c` PMC_OP_PMCALLOCATE: "Virtual PMCs should only ask for
    /// a default CPU. System mode PMCs need to specify a non-default CPU"),
    /// with a reload count for sampling modes at least the kernel's floor
    /// of 1 (`MAX(1000, pm_count)` in the 2020 tree, `MAX(1, pmc_mincount)`
    /// later).
    fn consistent(layout: IdLayout, id: u32, rate: u64) -> Option<PmcIdFields> {
        let f = layout.split(id);
        let virtual_mode = f.mode == PMC_MODE_TS || f.mode == PMC_MODE_TC;
        let sampling = f.mode == PMC_MODE_SS || f.mode == PMC_MODE_TS;
        (f.mode <= PMC_MODE_TC
            && f.class <= PMC_CLASS_LAST_KNOWN
            && virtual_mode == (f.cpu == PMC_ID_CPU_ANY)
            && (!sampling || rate >= 1))
            .then_some(f)
    }

    /// The fields of an allocated PMC's id, decoded from the evidence in the
    /// log: the layouts under which the id is consistent (see
    /// [`Converter::consistent`]), the layout earlier records showed, and
    /// the version (0x0A: new; 0x09: FreeBSD's own trees use the old one,
    /// CheriBSD's the new). `None` when no layout fits. Every decision not
    /// forced by the id itself is noted in the report.
    fn decode_id(&mut self, id: u32, rate: u64) -> Option<PmcIdFields> {
        let old = Self::consistent(IdLayout::Old, id, rate);
        let new = Self::consistent(IdLayout::New, id, rate);
        let by_version = match self.version.map(|v| v >> 24) {
            Some(0x09) => Some(IdLayout::Old),
            Some(v) if v >= 0x0A => Some(IdLayout::New),
            _ => None,
        };
        let (layout, fields) = match (old, new) {
            (Some(o), Some(n)) if o == n => return Some(o),
            (Some(o), None) => (IdLayout::Old, o),
            (None, Some(n)) => (IdLayout::New, n),
            (Some(o), Some(n)) => {
                let pick = self.layout.or(by_version).unwrap_or(IdLayout::New);
                self.note(format!(
                    "PMC id {id:#010x} reads as a valid PMC in both id layouts; read in the \
                     {pick:?} layout ({})",
                    if self.layout.is_some() {
                        "as earlier allocations showed"
                    } else {
                        "by the log version; ambiguous"
                    }
                ));
                return Some(if pick == IdLayout::Old { o } else { n });
            }
            (None, None) => {
                self.note(format!(
                    "PMC id {id:#010x} is valid in neither id layout: its scope and mode are \
                     unknown (taken from its sampling rate)"
                ));
                return None;
            }
        };
        match self.layout {
            None => {
                self.layout = Some(layout);
                if by_version.is_some_and(|v| v != layout) {
                    self.note(format!(
                        "PMC ids use the {layout:?} id layout although the log version {:#010x} \
                         usually has the other (as CheriBSD's 0x09 kernels do)",
                        self.version.unwrap_or(0)
                    ));
                }
            }
            Some(l) if l != layout => self.note(format!(
                "PMC id {id:#010x} fits only the {layout:?} id layout, earlier ones only the \
                 {l:?} layout: the log is inconsistent"
            )),
            Some(_) => {}
        }
        Some(fields)
    }

    /// The log's header from the first event, and that event back when it
    /// is not INITIALIZE (it is then the first ordinary record).
    pub(super) fn first<'a>(
        &mut self,
        ev: Option<Event<'a>>,
    ) -> Result<(Header<'a>, Option<Event<'a>>), HwpmcError> {
        let r = match ev {
            Some(ev @ Event::Initialize { .. }) => {
                if let Event::Initialize { version, .. } = ev {
                    let major = version >> 24;
                    if major != 0x09 && major != 0x0A {
                        return Err(HwpmcError::UnsupportedVersion { version });
                    }
                    self.version = Some(version);
                }
                (self.header(Some(&ev)), None)
            }
            other => (self.header(None), other),
        };
        self.out += 1;
        Ok(r)
    }

    fn header<'a>(&self, init: Option<&Event<'a>>) -> Header<'a> {
        let (arch, cpu_model, release): (&str, Cow<'a, str>, Cow<'a, str>) = match &self.prefix {
            Some(p) => (
                match p.arch {
                    1 => "amd64",
                    2 => "arm64",
                    3 => "powerpc64",
                    4 => "riscv64",
                    5 => "arm",
                    _ => "",
                },
                text(&p.cpumodel).into_owned().into(),
                text(&p.osrelease).into_owned().into(),
            ),
            None => ("", Cow::Borrowed(""), Cow::Borrowed("")),
        };
        let mut h = Header {
            os: "FreeBSD".into(),
            kernel_release: release,
            arch: arch.into(),
            cpu_model,
            clock: Clock::Tsc,
            backend: "hwpmc (imported)".into(),
            ..Header::default()
        };
        if let Some(Event::Initialize {
            tsc,
            version,
            cputype,
            tsc_freq,
            ts_sec,
            ts_nsec,
            cpuid,
        }) = init
        {
            h.cpuid = text(cpuid);
            h.ticks_per_second = *tsc_freq;
            h.start_wall_ns = ts_sec
                .saturating_mul(1_000_000_000)
                .saturating_add(*ts_nsec);
            h.start_time = *tsc;
            h.backend =
                format!("hwpmc version={version:#010x} cputype={cputype:#x} (imported)").into();
        }
        h
    }

    /// The pmc-log record of one event: one conversion per event type.
    pub(super) fn convert<'a>(&mut self, ev: Event<'a>) -> Record<'a> {
        match ev {
            Event::Initialize { version, .. } => self.initialize(version, &ev),
            Event::CloseLog { tsc } => close(tsc, self.out),
            Event::DropNotify { tsc } => lost(tsc),
            Event::PmcAllocate {
                tsc,
                pmcid,
                event,
                flags,
                rate,
            } => self.pmc_allocate(tsc, pmcid, fixed_event_name(event), event, flags, rate),
            Event::PmcAllocateDyn {
                tsc,
                pmcid,
                event,
                flags,
                rate,
                evname,
            } => allocated_dyn(self.pmc_allocate(tsc, pmcid, text(evname), event, flags, rate)),
            Event::PmcAttach {
                tsc,
                pmcid,
                pid,
                path,
            } => attach(tsc, pmcid, pid, path),
            Event::PmcDetach { tsc, pmcid, pid } => detach(tsc, pmcid, pid),
            Event::ProcCsw {
                tsc,
                value,
                pmcid,
                pid,
                tid,
            } => counter(tsc, pmcid, pid, tid, CounterKind::ContextSwitch, value),
            Event::ProcExec {
                tsc,
                pid,
                pmcid,
                base,
                dyn_base,
                path,
                legacy,
            } => proc_exec(tsc, pid, pmcid, base, dyn_base, path, legacy),
            Event::ProcExit {
                tsc,
                pmcid,
                pid,
                value,
            } => counter(tsc, pmcid, pid, -1, CounterKind::ProcessExit, value),
            Event::ProcFork {
                tsc,
                oldpid,
                newpid,
            } => fork(tsc, oldpid, newpid),
            Event::SysExit { tsc, pid } => exit(tsc, pid),
            Event::UserData { tsc, userdata } => user_data(tsc, userdata),
            Event::MapIn {
                tsc,
                pid,
                start,
                path,
            } => map_in(tsc, pid, start, path),
            Event::MapOut {
                tsc,
                pid,
                start,
                end,
            } => map_out(tsc, pid, start, end),
            Event::Callchain {
                tsc,
                pid,
                tid,
                pmcid,
                cpuflags,
                pcs,
                extra,
            } => self.sample(tsc, pmcid, pid, tid, cpuflags, pcs, extra),
            Event::ThrCreate {
                tsc,
                tid,
                pid,
                flags,
                tdname,
            } => thr_create(tsc, pid, tid, flags, tdname),
            Event::ThrExit { tsc, tid } => thr_exit(tsc, tid),
            Event::ProcCreate {
                tsc,
                pid,
                flags,
                pcomm,
            } => proc_create(tsc, pid, flags, pcomm),
        }
    }

    /// INITIALIZE: the log's header, its version kept (the PROCEXEC layout depends on it).
    fn initialize<'a>(&mut self, version: u32, ev: &Event<'a>) -> Record<'a> {
        self.version = Some(version);
        Record::Header(self.header(Some(ev)))
    }

    /// A PMC allocation: its rate and flags remembered for its samples.
    fn pmc_allocate<'a>(
        &mut self,
        tsc: u64,
        pmcid: u32,
        name: Cow<'a, str>,
        event: u32,
        flags: u32,
        rate: u64,
    ) -> Record<'a> {
        self.track(pmcid, rate, flags);
        self.pmc(tsc, pmcid, name, event, flags, rate)
    }

    /// A CALLCHAIN: the period is the PMC's rate; see [`kernel_frames`].
    #[allow(clippy::too_many_arguments)] // The record's fields.
    fn sample<'a>(
        &self,
        tsc: u64,
        pmcid: u32,
        pid: i32,
        tid: i32,
        cpuflags: u32,
        pcs: Callchain<'a>,
        extra: &'a [u8],
    ) -> Record<'a> {
        let (period, pmc_flags) = self.rates.get(&pmcid).copied().unwrap_or((0, 0));
        Record::Sample(Sample {
            time: tsc,
            pmc_id: pmcid,
            pid,
            tid,
            cpu: Some(cpuflags >> 16),
            period,
            kernel_frames: kernel_frames(&pcs, cpuflags, pmc_flags),
            callchain: pcs,
            raw: extra.into(),
        })
    }

    fn pmc<'a>(
        &mut self,
        tsc: u64,
        pmcid: u32,
        name: Cow<'a, str>,
        event: u32,
        flags: u32,
        rate: u64,
    ) -> Record<'a> {
        let cpu_bits = pmcid >> 20;
        let (sampling, scope) = match self.decode_id(pmcid, rate) {
            Some(f) => (
                f.mode == PMC_MODE_SS || f.mode == PMC_MODE_TS,
                if f.mode == PMC_MODE_SS || f.mode == PMC_MODE_SC {
                    Scope::System
                } else {
                    Scope::Process
                },
            ),
            // The CPU field is in the same place in both layouts.
            None => (
                rate > 0,
                if cpu_bits == PMC_ID_CPU_ANY {
                    Scope::Process
                } else {
                    Scope::System
                },
            ),
        };
        Record::Pmc(PmcDescriptor {
            time: tsc,
            pmc_id: pmcid,
            event_spec: name.clone(),
            canonical_name: name,
            scope,
            cpu: (scope == Scope::System && cpu_bits != 0xFFF).then_some(cpu_bits),
            mode: if sampling {
                Mode::SamplingPeriod(rate)
            } else {
                Mode::Counting
            },
            flags: map_flags(flags),
            native_config: format!("event={event:#x},flags={flags:#x},rate={rate}").into(),
        })
    }
}

impl<'a> Iterator for Importer<'a> {
    type Item = Record<'a>;
    fn next(&mut self) -> Option<Record<'a>> {
        if self.error.is_some() {
            return None;
        }
        if !self.started {
            self.started = true;
            let first = self.parser.next();
            match self.conv.first(first) {
                Ok((h, rest)) => {
                    self.pending = rest;
                    return Some(Record::Header(h));
                }
                Err(e) => {
                    self.error = Some(e);
                    return None;
                }
            }
        }
        let ev = loop {
            let ev = match self.pending.take() {
                Some(ev) => ev,
                None => self.parser.next()?,
            };
            if !self.conv.skip(&ev) {
                break ev;
            }
        };
        let rec = self.conv.convert(ev);
        self.conv.out += 1;
        Some(rec)
    }
}
