//! perf.data export, readable by `perf report` and `perf script`.
//!
//! [`write_all`] exports a whole log; [`PerfDataWriter`] is the same record by record.
//! Chains longer than [`MAX_CHAIN_ENTRIES`] keep their leaf end. Below: what is exported,
//! callchains, the kernel map, and what perf.data cannot carry.
//!
//! Writes the `PERFILE2` format (tools/perf/Documentation/perf.data-file-format.txt):
//! the 104-byte file header, one `perf_event_attr` (112 bytes, `PERF_ATTR_SIZE_VER5`)
//! per PMC descriptor with its id, the data section, and the
//! `HEADER_EVENT_DESC` feature so perf shows our event names.
//!
//! Exported: samples (`PERF_RECORD_SAMPLE` with `IDENTIFIER | IP | TID | TIME
//! | CPU | PERIOD | CALLCHAIN`), maps (`MMAP`), comm and
//! exec (`COMM`, exec flagged with `PERF_RECORD_MISC_COMM_EXEC`), fork and
//! exit (`FORK`, `EXIT`), and lost samples (`LOST` and `LOST_SAMPLES`, so `perf report`
//! shows the log's "Total Lost Samples"). Every non-sample record
//! carries the `sample_id_all` trailer, so perf orders them by time.
//!
//! # Callchains
//!
//! A sample's chain is written leaf first, as the kernel writes it: `PERF_CONTEXT_KERNEL`
//! before the first `kernel_frames` frames, `PERF_CONTEXT_USER` before the rest (a kernel
//! sample that went on into user space, hwpmc's `USERCALLCHAIN`, gets both). perf reads
//! every entry at or above `PERF_CONTEXT_MAX` (-4095) as a context marker and drops a
//! whole chain holding one it does not know, so such entries are left out; among them the
//! log's truncation marker ([`TRUNCATED_FRAME`](crate::record::TRUNCATED_FRAME), the last
//! entry of a chain whose unwind stopped before the root): perf.data cannot say a chain is
//! cut, and perf shows it as a shorter chain. A chain is written with at most
//! [`MAX_CHAIN_ENTRIES`] entries, its leaf end kept, so that the record fits perf's 16-bit
//! record size; perf reads longer chains than its default `--max-stack`
//! (`kernel.perf_event_max_stack`, 127) and shows their leaf end, as for its own files.
//!
//! # The kernel
//!
//! The log's kernel map (pid -1, `[kernel.kallsyms]`, from `_stext` up with `_stext`'s
//! address as `pgoff`, as pmc-linux writes it) is written as `perf record` writes the
//! kernel's: an `MMAP` of pid -1 named `[kernel.kallsyms]_stext`, `pgoff` the address of
//! the symbol the name ends with (perf relocates kallsyms' addresses by it when the kernel
//! was loaded elsewhere; with `pgoff` 0 no symbol is named and addresses are taken as they
//! are), covering every address up to the top. A Linux log that has kernel frames but no
//! kernel map gets one over the upper half of the address space before its first kernel
//! sample. The file carries no build-id, so perf names kernel frames from the running
//! kernel's `/proc/kallsyms` (names are right for a log of the running kernel, as
//! pmc-analyze's are; it checks the release, perf cannot). Module maps are not written:
//! the log has none, and perf then leaves module frames unnamed.
//!
//! Not exported (perf.data has no direct equivalent, or perf does not need
//! it to symbolise): counters, unmaps, attach/detach, thread create/exit,
//! user data, and the build-id / host feature sections (perf then finds
//! binaries by path, which works for local files). Timestamps in ticks
//! (hwpmc TSC) are converted to nanoseconds when the header gives the rate.
//!
//! ```
//! use pmc_log::record::*;
//! use pmc_log::export::perf_data::PerfDataWriter;
//! let mut p = PerfDataWriter::new(&Header::default());
//! let frames = [0x401000u64];
//! p.add(&Record::Sample(Sample { time: 1, pmc_id: 0, pid: 1, tid: 1, cpu: Some(0), period: 1,
//!     callchain: Callchain::from_frames(&frames), kernel_frames: 0, raw: Default::default() }));
//! let mut out = Vec::new();
//! p.finish(&mut out)?;
//! assert_eq!(&out[..8], b"PERFILE2");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::io::{self, Write};

use crate::record::{
    Exec, Exit, Fork, Header, Lost, Map, Mode, PmcDescriptor, Record, Sample, FLAG_DESCENDANTS,
};

const PERF_MAGIC: &[u8; 8] = b"PERFILE2";
const FILE_HEADER_SIZE: u64 = 104;
const ATTR_SIZE: usize = 112; // PERF_ATTR_SIZE_VER5
const HEADER_EVENT_DESC: usize = 12;

const PERF_RECORD_MMAP: u32 = 1;
const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_COMM: u32 = 3;
const PERF_RECORD_EXIT: u32 = 4;
const PERF_RECORD_FORK: u32 = 7;
const PERF_RECORD_SAMPLE: u32 = 9;
const PERF_RECORD_LOST_SAMPLES: u32 = 13;

const PERF_RECORD_MISC_KERNEL: u16 = 1;
const PERF_RECORD_MISC_USER: u16 = 2;
const PERF_RECORD_MISC_COMM_EXEC: u16 = 1 << 13;

const PERF_SAMPLE_IP: u64 = 1 << 0;
const PERF_SAMPLE_TID: u64 = 1 << 1;
const PERF_SAMPLE_TIME: u64 = 1 << 2;
const PERF_SAMPLE_CALLCHAIN: u64 = 1 << 5;
const PERF_SAMPLE_CPU: u64 = 1 << 7;
const PERF_SAMPLE_PERIOD: u64 = 1 << 8;
const PERF_SAMPLE_IDENTIFIER: u64 = 1 << 16;
const SAMPLE_TYPE: u64 = PERF_SAMPLE_IDENTIFIER
    | PERF_SAMPLE_IP
    | PERF_SAMPLE_TID
    | PERF_SAMPLE_TIME
    | PERF_SAMPLE_CPU
    | PERF_SAMPLE_PERIOD
    | PERF_SAMPLE_CALLCHAIN;

const PERF_CONTEXT_KERNEL: u64 = (-128i64) as u64;
const PERF_CONTEXT_USER: u64 = (-512i64) as u64;
/// Every callchain entry `>=` this is a context marker to perf, not an address.
const PERF_CONTEXT_MAX: u64 = (-4095i64) as u64;

/// The most callchain entries (addresses and context markers) a sample record carries: perf
/// records have a 16-bit size, and a sample's fixed part (header, id, ip, pid/tid, time,
/// cpu, period, the entry count) takes 64 bytes. Longer chains lose their root end.
pub const MAX_CHAIN_ENTRIES: usize = (u16::MAX as usize - 64) / 8;

const PERF_TYPE_SOFTWARE: u32 = 1;

/// The log's name for the kernel's mapping (pid -1), and perf's.
const KERNEL_MAP_NAME: &[u8] = b"[kernel.kallsyms]";
/// The symbol at the start of pmc-linux's kernel map (its `pgoff` holds the address).
const KERNEL_REF_SYMBOL: &[u8] = b"_stext";
/// Where a kernel map made up for a Linux log without one starts: the upper half of the
/// address space, which holds the kernel on x86-64 and AArch64.
const KERNEL_HALF: u64 = 1 << 63;

/// The sample id of records that name no PMC (the first attribute's).
const DEFAULT_ID: u64 = 1;

struct Attr {
    ty: u32,
    config: u64,
    period: u64,
    freq: bool,
    inherit: bool,
    name: String,
    id: u64,
}

/// Reserved before each record: more than the largest (perf's 16-bit record size).
const RECORD_ROOM: usize = 1 << 17;

/// Accumulates records and writes a perf.data file.
///
/// The data section is buffered in memory (perf.data needs its size in the
/// header, before the data).
pub struct PerfDataWriter {
    attrs: Vec<Attr>,
    by_pmc: HashMap<u32, usize>,
    data: Vec<u8>,
    /// The data section could not grow (out of memory): nothing more is kept, and
    /// [`finish`](PerfDataWriter::finish) returns the error.
    oom: Option<std::collections::TryReserveError>,
    tps: u64,
    start: u64,
    samples: u64,
    /// Process names, to name threads perf has not seen a COMM for.
    names: HashMap<i32, Vec<u8>>,
    named_tids: std::collections::HashSet<i32>,
    /// A kernel map (pid -1) was written.
    kernel_mapped: bool,
    /// The log is from Linux, whose kernel frames perf names from `/proc/kallsyms`.
    linux: bool,
}

fn parse_kv(cfg: &str, key: &str) -> Option<u64> {
    cfg.split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        if k.trim() != key {
            return None;
        }
        let v = v.trim();
        match v.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).ok(),
            None => v.parse().ok(),
        }
    })
}

impl PerfDataWriter {
    /// Start a perf.data file for a log with this header.
    pub fn new(header: &Header<'_>) -> Self {
        PerfDataWriter {
            attrs: Vec::new(),
            by_pmc: HashMap::new(),
            data: Vec::new(),
            oom: None,
            tps: header.ticks_per_second,
            start: header.start_time,
            samples: 0,
            names: HashMap::new(),
            named_tids: std::collections::HashSet::new(),
            kernel_mapped: false,
            linux: header.os == "Linux",
        }
    }

    /// Samples written so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    fn ns(&self, t: u64) -> u64 {
        if self.tps == 0 || self.tps == 1_000_000_000 {
            t
        } else {
            let d = u128::from(t.saturating_sub(self.start)) * 1_000_000_000 / u128::from(self.tps);
            u64::try_from(d).unwrap_or(u64::MAX)
        }
    }

    /// The attr index for a PMC id, creating a generic one if the log had no
    /// descriptor for it.
    fn attr_for(&mut self, pmc: u32) -> u64 {
        if let Some(&i) = self.by_pmc.get(&pmc) {
            return self.attrs[i].id;
        }
        let id = self.attrs.len() as u64 + 1;
        self.attrs.push(Attr {
            ty: PERF_TYPE_SOFTWARE,
            config: 0,
            period: 1,
            freq: false,
            inherit: false,
            name: format!("pmc{pmc:#x}"),
            id,
        });
        self.by_pmc.insert(pmc, self.attrs.len() - 1);
        id
    }

    fn begin(&mut self, ty: u32, misc: u16) -> usize {
        // Room for the whole record first (chains and strings are capped so that a record
        // fits perf's 16-bit size): its writes below then never reallocate, and running out
        // of memory is an error finish() returns, not an abort. After that, one record at a
        // time is kept, and dropped.
        if self.oom.is_some() {
            self.data.clear();
        } else if let Err(e) = self.data.try_reserve(RECORD_ROOM) {
            self.data = Vec::new();
            self.oom = Some(e);
        }
        let at = self.data.len();
        self.data.extend_from_slice(&ty.to_le_bytes());
        self.data.extend_from_slice(&misc.to_le_bytes());
        self.data.extend_from_slice(&0u16.to_le_bytes());
        at
    }
    fn u32(&mut self, v: u32) {
        self.data.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.data.extend_from_slice(&v.to_le_bytes());
    }
    /// NUL-terminated string padded to 8 bytes.
    fn string(&mut self, s: &[u8]) {
        let s = &s[..s.len().min(4000)];
        self.data.extend_from_slice(s);
        self.data.push(0);
        while self.data.len() % 8 != 0 {
            self.data.push(0);
        }
    }
    /// `sample_id_all` trailer: TID, TIME, CPU, IDENTIFIER.
    fn trailer(&mut self, pid: i32, tid: i32, time: u64, id: u64) {
        self.u32(pid as u32);
        self.u32(tid as u32);
        let t = self.ns(time);
        self.u64(t);
        self.u32(0);
        self.u32(0);
        self.u64(id);
    }
    /// Patch the record size; records over 64 KiB are dropped.
    fn end(&mut self, at: usize) {
        let size = self.data.len() - at;
        match u16::try_from(size) {
            Ok(s) => self.data[at + 6..at + 8].copy_from_slice(&s.to_le_bytes()),
            Err(_) => self.data.truncate(at),
        }
    }

    fn comm(&mut self, pid: i32, tid: i32, exec: bool, name: &[u8], time: u64) {
        self.named_tids.insert(tid);
        let at = self.begin(
            PERF_RECORD_COMM,
            if exec { PERF_RECORD_MISC_COMM_EXEC } else { 0 },
        );
        self.u32(pid as u32);
        self.u32(tid as u32);
        self.string(name);
        self.trailer(pid, tid, time, 1);
        self.end(at);
    }

    /// Feed one record.
    pub fn add(&mut self, r: &Record<'_>) {
        match r {
            Record::Pmc(p) => self.add_pmc(p),
            Record::Sample(s) => self.add_sample(s),
            Record::Map(m) => self.add_map(m),
            Record::Comm(c) => {
                if c.pid == c.tid {
                    self.names.insert(c.pid, c.comm.as_bytes().to_vec());
                }
                self.comm(c.pid, c.tid, c.exec, c.comm.as_bytes(), c.time);
            }
            Record::Exec(e) => self.add_exec(e),
            Record::ProcessCreate(p) => {
                self.names.insert(p.pid, p.comm.as_bytes().to_vec());
                self.comm(p.pid, p.pid, false, p.comm.as_bytes(), p.time);
            }
            Record::Fork(f) => self.add_fork(f),
            Record::Exit(e) => self.add_exit(e),
            Record::Lost(l) => self.add_lost(l),
            _ => {}
        }
    }

    /// A PMC's attribute, replacing (under its first id) an earlier one of
    /// the same PMC.
    fn add_pmc(&mut self, p: &PmcDescriptor<'_>) {
        let (period, freq) = match p.mode {
            Mode::Counting => (0, false),
            Mode::SamplingPeriod(n) => (n, false),
            Mode::SamplingFrequency(n) => (n, true),
        };
        let attr = Attr {
            ty: parse_kv(&p.native_config, "type").map_or(PERF_TYPE_SOFTWARE, |t| t as u32),
            config: parse_kv(&p.native_config, "config").unwrap_or(0),
            period,
            freq,
            inherit: p.flags & FLAG_DESCENDANTS != 0,
            name: if p.event_spec.is_empty() {
                p.canonical_name.to_string()
            } else {
                p.event_spec.to_string()
            },
            id: self.attrs.len() as u64 + 1,
        };
        match self.by_pmc.get(&p.pmc_id) {
            Some(&i) => {
                let id = self.attrs[i].id;
                self.attrs[i] = Attr { id, ..attr };
            }
            None => {
                self.attrs.push(attr);
                self.by_pmc.insert(p.pmc_id, self.attrs.len() - 1);
            }
        }
    }

    fn add_sample(&mut self, s: &Sample<'_>) {
        // perf names threads by tid; hwpmc logs name processes only.
        if !self.named_tids.contains(&s.tid) {
            if let Some(name) = self.names.get(&s.pid).cloned() {
                self.comm(s.pid, s.tid, false, &name, s.time);
            }
        }
        let id = self.attr_for(s.pmc_id);
        let kernel = s.kernel_frames > 0;
        if kernel && !self.kernel_mapped && self.linux {
            // A log without the kernel's map: perf needs one to name kernel frames at all.
            self.kernel_mapped = true;
            self.kernel_mmap(KERNEL_HALF, 0, 0);
        }
        let at = self.begin(
            PERF_RECORD_SAMPLE,
            if kernel {
                PERF_RECORD_MISC_KERNEL
            } else {
                PERF_RECORD_MISC_USER
            },
        );
        self.u64(id);
        let ip = s.callchain.iter().find(|&pc| pc < PERF_CONTEXT_MAX);
        self.u64(ip.unwrap_or(0));
        self.u32(s.pid as u32);
        self.u32(s.tid as u32);
        let t = self.ns(s.time);
        self.u64(t);
        self.u32(s.cpu.unwrap_or(0));
        self.u32(0);
        self.u64(s.period);
        self.callchain(s);
        self.end(at);
        self.samples += 1;
    }

    /// A sample's callchain with perf's context markers: `PERF_CONTEXT_KERNEL`
    /// before the kernel frames, `PERF_CONTEXT_USER` before the user ones.
    ///
    /// Entries perf would read as context markers (`>= PERF_CONTEXT_MAX`), such as the log's
    /// [`TRUNCATED_FRAME`](crate::record::TRUNCATED_FRAME), are left out: perf drops a whole chain holding a marker it does
    /// not know. At most [`MAX_CHAIN_ENTRIES`] entries (markers included) are written, the
    /// leaf end kept, so the record fits perf's 16-bit record size.
    fn callchain(&mut self, s: &Sample<'_>) {
        let k = (s.kernel_frames as usize).min(s.callchain.len());
        let frames = s
            .callchain
            .iter()
            .enumerate()
            .filter(|&(_, pc)| pc < PERF_CONTEXT_MAX);
        let nr_at = self.data.len();
        self.u64(0);
        let mut nr = 0;
        let mut context = None;
        for (i, pc) in frames {
            let want = if i < k {
                PERF_CONTEXT_KERNEL
            } else {
                PERF_CONTEXT_USER
            };
            let marker = context != Some(want);
            if nr + usize::from(marker) + 1 > MAX_CHAIN_ENTRIES {
                break;
            }
            if marker {
                self.u64(want);
                context = Some(want);
                nr += 1;
            }
            self.u64(pc);
            nr += 1;
        }
        self.data[nr_at..nr_at + 8].copy_from_slice(&(nr as u64).to_le_bytes());
    }

    fn add_map(&mut self, m: &Map<'_>) {
        if m.pid == -1 {
            self.kernel_mapped = true;
            if m.path.as_bytes() == KERNEL_MAP_NAME {
                return self.kernel_mmap(m.start, m.pgoff, m.time);
            }
        }
        let kernel = m.pid == -1;
        let at = self.begin(
            PERF_RECORD_MMAP,
            if kernel {
                PERF_RECORD_MISC_KERNEL
            } else {
                PERF_RECORD_MISC_USER
            },
        );
        self.u32(m.pid as u32);
        self.u32(m.pid as u32);
        self.u64(m.start);
        self.u64(if m.len == 0 { 1 << 30 } else { m.len });
        self.u64(m.pgoff);
        self.string(m.path.as_bytes());
        self.trailer(m.pid, m.pid, m.time, DEFAULT_ID);
        self.end(at);
    }

    /// The kernel's MMAP as `perf record` writes it: pid -1, `[kernel.kallsyms]` followed by
    /// the name of the symbol whose address `pgoff` holds (perf's "ref reloc symbol", with
    /// which it relocates kallsyms' addresses when the kernel was loaded elsewhere), covering
    /// every address from `start` up. pmc-linux's kernel map starts at `_stext`, with that
    /// address as its `pgoff`; a `pgoff` of 0 (addresses hidden at record time) names no
    /// symbol, and perf then takes kallsyms' addresses as they are. Without a build-id perf
    /// names the frames from the running kernel's `/proc/kallsyms`, as for its own files.
    fn kernel_mmap(&mut self, start: u64, pgoff: u64, time: u64) {
        let at = self.begin(PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL);
        self.u32(u32::MAX);
        self.u32(0);
        self.u64(start);
        self.u64(u64::MAX - start);
        self.u64(pgoff);
        let mut name = KERNEL_MAP_NAME.to_vec();
        if pgoff != 0 {
            name.extend_from_slice(KERNEL_REF_SYMBOL);
        }
        self.string(&name);
        self.trailer(-1, 0, time, DEFAULT_ID);
        self.end(at);
    }

    fn add_exec(&mut self, e: &Exec<'_>) {
        let name = e
            .path
            .as_bytes()
            .rsplit(|&b| b == b'/')
            .next()
            .unwrap_or_default()
            .to_vec();
        self.names.insert(e.pid, name.clone());
        // A new image renames every thread of the process.
        self.named_tids.clear();
        self.comm(e.pid, e.pid, true, &name, e.time);
    }

    fn add_fork(&mut self, f: &Fork) {
        let at = self.begin(PERF_RECORD_FORK, 0);
        self.u32(f.child_pid as u32);
        self.u32(f.parent_pid as u32);
        self.u32(if f.child_tid == -1 {
            f.child_pid
        } else {
            f.child_tid
        } as u32);
        self.u32(if f.parent_tid == -1 {
            f.parent_pid
        } else {
            f.parent_tid
        } as u32);
        let t = self.ns(f.time);
        self.u64(t);
        self.trailer(f.child_pid, f.child_pid, f.time, DEFAULT_ID);
        self.end(at);
    }

    fn add_exit(&mut self, e: &Exit) {
        let tid = if e.tid == -1 { e.pid } else { e.tid };
        let at = self.begin(PERF_RECORD_EXIT, 0);
        self.u32(e.pid as u32);
        self.u32(e.pid as u32);
        self.u32(tid as u32);
        self.u32(tid as u32);
        let t = self.ns(e.time);
        self.u64(t);
        self.trailer(e.pid, tid, e.time, DEFAULT_ID);
        self.end(at);
    }

    /// A loss is written twice, as perf record writes its own: `LOST` (`{id, lost}`: records
    /// the kernel could not put in a ring, which `perf report --stats` counts as LOST events
    /// and perf warns of as lost chunks) and `LOST_SAMPLES` (`{lost}`, the event's id in the
    /// trailer: what `perf report` adds up as "Total Lost Samples", from perf record's
    /// `PERF_FORMAT_LOST` reads at its end). A log's loss counts samples either way (the ring's
    /// `PERF_RECORD_LOST`, the kernel's `PERF_FORMAT_LOST` count, the spool's drops, hwpmc's
    /// `DROPNOTIFY`), so both carry its count (at least 1: hwpmc's unknown count is 0).
    fn add_lost(&mut self, l: &Lost) {
        let id = l.pmc_id.map_or(DEFAULT_ID, |p| self.attr_for(p));
        let lost = l.count.max(1);
        let at = self.begin(PERF_RECORD_LOST, 0);
        self.u64(id);
        self.u64(lost);
        self.trailer(-1, -1, l.time, id);
        self.end(at);
        let at = self.begin(PERF_RECORD_LOST_SAMPLES, 0);
        self.u64(lost);
        self.trailer(-1, -1, l.time, id);
        self.end(at);
    }

    fn attr_bytes(&self, a: &Attr) -> [u8; ATTR_SIZE] {
        let mut b = [0u8; ATTR_SIZE];
        b[0..4].copy_from_slice(&a.ty.to_le_bytes());
        b[4..8].copy_from_slice(&(ATTR_SIZE as u32).to_le_bytes());
        b[8..16].copy_from_slice(&a.config.to_le_bytes());
        b[16..24].copy_from_slice(&a.period.to_le_bytes());
        b[24..32].copy_from_slice(&SAMPLE_TYPE.to_le_bytes());
        // flags: disabled(0) inherit(1) mmap(8) comm(9) freq(10) task(13) sample_id_all(18)
        let mut flags: u64 = 1 | 1 << 8 | 1 << 9 | 1 << 13 | 1 << 18;
        if a.inherit {
            flags |= 1 << 1;
        }
        if a.freq {
            flags |= 1 << 10;
        }
        b[40..48].copy_from_slice(&flags.to_le_bytes());
        b
    }

    /// Write the perf.data file.
    ///
    /// # Errors
    ///
    /// `out`'s errors; [`io::ErrorKind::OutOfMemory`] when the data section could not be
    /// held in memory (the records were dropped, nothing is written).
    pub fn finish<W: Write>(mut self, out: &mut W) -> io::Result<()> {
        if let Some(e) = &self.oom {
            return Err(crate::tryvec::out_of_memory(
                self.data.capacity(),
                RECORD_ROOM,
                &format!(
                    "the perf.data data section, after {} samples: {e}",
                    self.samples
                ),
            ));
        }
        if self.attrs.is_empty() {
            self.attr_for(0);
        }
        let n = self.attrs.len() as u64;
        // Layout: header | ids (n x u64) | attrs (n x (attr + section)) | data | feature index | features
        let ids_off = FILE_HEADER_SIZE;
        let attr_entry = ATTR_SIZE as u64 + 16;
        let attrs_off = ids_off + 8 * n;
        let data_off = attrs_off + attr_entry * n;
        let data_size = self.data.len() as u64;
        let feat_index_off = data_off + data_size;
        // HEADER_EVENT_DESC: u32 nr, u32 attr_size, then per event: attr,
        // u32 nr_ids, string (u32 len + NUL-padded to 8), ids.
        let mut desc = Vec::new();
        desc.extend_from_slice(&(n as u32).to_le_bytes());
        desc.extend_from_slice(&(ATTR_SIZE as u32).to_le_bytes());
        for a in &self.attrs {
            desc.extend_from_slice(&self.attr_bytes(a));
            desc.extend_from_slice(&1u32.to_le_bytes());
            let mut name = a.name.as_bytes().to_vec();
            name.push(0);
            while name.len() % 8 != 0 {
                name.push(0);
            }
            desc.extend_from_slice(&(name.len() as u32).to_le_bytes());
            desc.extend_from_slice(&name);
            desc.extend_from_slice(&a.id.to_le_bytes());
        }
        let feat_data_off = feat_index_off + 16;

        let mut h = Vec::with_capacity(FILE_HEADER_SIZE as usize);
        h.extend_from_slice(PERF_MAGIC);
        h.extend_from_slice(&FILE_HEADER_SIZE.to_le_bytes());
        h.extend_from_slice(&attr_entry.to_le_bytes());
        h.extend_from_slice(&attrs_off.to_le_bytes());
        h.extend_from_slice(&(attr_entry * n).to_le_bytes());
        h.extend_from_slice(&data_off.to_le_bytes());
        h.extend_from_slice(&data_size.to_le_bytes());
        h.extend_from_slice(&[0u8; 16]); // event_types
        let mut features = [0u64; 4];
        features[HEADER_EVENT_DESC / 64] |= 1 << (HEADER_EVENT_DESC % 64);
        for f in features {
            h.extend_from_slice(&f.to_le_bytes());
        }
        out.write_all(&h)?;
        for a in &self.attrs {
            out.write_all(&a.id.to_le_bytes())?;
        }
        for (i, a) in self.attrs.iter().enumerate() {
            out.write_all(&self.attr_bytes(a))?;
            out.write_all(&(ids_off + 8 * i as u64).to_le_bytes())?;
            out.write_all(&8u64.to_le_bytes())?;
        }
        out.write_all(&self.data)?;
        out.write_all(&feat_data_off.to_le_bytes())?;
        out.write_all(&(desc.len() as u64).to_le_bytes())?;
        out.write_all(&desc)?;
        Ok(())
    }
}

/// Convert every record to a perf.data file. Returns the sample count.
pub fn write_all<'a, W: Write>(
    header: &Header<'_>,
    records: impl IntoIterator<Item = Record<'a>>,
    out: &mut W,
) -> io::Result<u64> {
    let mut p = PerfDataWriter::new(header);
    for r in records {
        p.add(&r);
    }
    let n = p.samples();
    p.finish(out)?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 21 item 7: a data section that cannot grow is an error from `finish`, and the
    /// records after it are dropped one at a time (memory stays at one record), not an abort.
    /// The allocator's failure is stood in for by the state `begin` records when
    /// `try_reserve` fails (pmc-tests' faults_cli row `perf_data_out_of_memory` reaches it
    /// through a real address-space limit).
    #[test]
    fn a_data_section_out_of_memory_is_an_error() {
        let mut p = PerfDataWriter::new(&Header::default());
        // usize::MAX overflows the capacity before any allocation (so Miri, whose
        // allocator aborts on exhaustion, sees the same error).
        p.oom = Vec::<u8>::new().try_reserve(usize::MAX).err();
        assert!(p.oom.is_some());
        for pid in 0..100 {
            p.comm(pid, pid, false, b"x", 1);
        }
        assert!(p.data.len() < RECORD_ROOM, "one record at a time");
        let mut out = Vec::new();
        let e = p.finish(&mut out).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::OutOfMemory, "{e}");
        assert!(out.is_empty());
    }
}
