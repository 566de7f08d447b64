//! Text dump, one line per record, in the manner of `pmcstat -R`: the
//! record type, `key=value` fields, and the timestamp last as a 20-digit
//! field. Strings are quoted with Rust escapes, so every line is one line.
//!
//! ```text
//! sample     pmc=0x20700 pid=42 tid=100042 cpu=1 period=65536 kframes=0 frames=2 [0x401000 0x401234] t=00000000000000001002
//! ```

use std::io::{self, Write};

use crate::record::*;

fn q(b: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(b))
}
fn opt(v: Option<u32>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}
fn hex(b: &[u8]) -> String {
    if b.is_empty() {
        return "-".into();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Write one record as one line (with the newline).
///
/// ```
/// use pmc_log::record::{Record, Exit};
/// let mut out = Vec::new();
/// pmc_log::export::text::write_record(&Record::Exit(Exit { time: 7, pid: 2, tid: -1 }), &mut out)?;
/// assert_eq!(String::from_utf8(out)?, "exit       pid=2 tid=-1 t=00000000000000000007\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_record<W: Write>(r: &Record<'_>, out: &mut W) -> io::Result<()> {
    match r {
        Record::Header(h) => write!(
            out,
            "header     os={:?} release={:?} arch={:?} cpu_model={:?} cpuid={:?} ncpu={} page_size={} clock={:?} ticks_per_second={} start_wall_ns={} backend={:?}",
            h.os, h.kernel_release, h.arch, h.cpu_model, h.cpuid, h.cpu_count, h.page_size,
            h.clock, h.ticks_per_second, h.start_wall_ns, h.backend
        )?,
        Record::Pmc(p) => {
            let mode = match p.mode {
                Mode::Counting => "counting".to_string(),
                Mode::SamplingPeriod(n) => format!("period:{n}"),
                Mode::SamplingFrequency(n) => format!("freq:{n}"),
            };
            write!(
                out,
                "allocate   pmc={:#x} event={:?} name={:?} scope={:?} cpu={} mode={} flags={:#x} config={:?}",
                p.pmc_id, p.event_spec, p.canonical_name, p.scope, opt(p.cpu), mode, p.flags, p.native_config
            )?
        }
        Record::Sample(s) => {
            write!(
                out,
                "sample     pmc={:#x} pid={} tid={} cpu={} period={} kframes={} frames={} [",
                s.pmc_id, s.pid, s.tid, opt(s.cpu), s.period, s.kernel_frames, s.callchain.len()
            )?;
            for (i, pc) in s.callchain.iter().enumerate() {
                if i > 0 {
                    out.write_all(b" ")?;
                }
                write!(out, "{pc:#x}")?;
            }
            out.write_all(b"]")?;
            if !s.raw.is_empty() {
                write!(out, " raw={}", hex(s.raw.as_bytes()))?;
            }
        }
        Record::Comm(c) => write!(out, "comm       pid={} tid={} exec={} comm={}", c.pid, c.tid, c.exec, q(c.comm.as_bytes()))?,
        Record::Exec(e) => write!(
            out,
            "exec       pid={} pmc={} base={:#x} dyn={:#x} flags={:#x} path={}",
            e.pid, e.pmc_id.map_or("-".into(), |p| format!("{p:#x}")), e.base, e.dyn_base, e.flags, q(e.path.as_bytes())
        )?,
        Record::Fork(f) => write!(out, "fork       ppid={} ptid={} pid={} tid={}", f.parent_pid, f.parent_tid, f.child_pid, f.child_tid)?,
        Record::Exit(e) => write!(out, "exit       pid={} tid={}", e.pid, e.tid)?,
        Record::ThreadCreate(t) => write!(out, "thr-create pid={} tid={} flags={:#x} name={}", t.pid, t.tid, t.flags, q(t.name.as_bytes()))?,
        Record::ThreadExit(t) => write!(out, "thr-exit   pid={} tid={}", t.pid, t.tid)?,
        Record::ProcessCreate(p) => write!(out, "proc-create pid={} flags={:#x} comm={}", p.pid, p.flags, q(p.comm.as_bytes()))?,
        Record::Map(m) => write!(
            out,
            "map-in     pid={} start={:#x} len={:#x} pgoff={:#x} build_id={} path={}",
            m.pid, m.start, m.len, m.pgoff, hex(m.build_id.as_bytes()), q(m.path.as_bytes())
        )?,
        Record::Unmap(u) => write!(out, "map-out    pid={} start={:#x} end={:#x}", u.pid, u.start, u.end)?,
        Record::Attach(a) => write!(out, "attach     pmc={:#x} pid={} path={}", a.pmc_id, a.pid, q(a.path.as_bytes()))?,
        Record::Detach(d) => write!(out, "detach     pmc={:#x} pid={}", d.pmc_id, d.pid)?,
        Record::Counter(c) => {
            let kind = match c.kind {
                CounterKind::Interval => "interval",
                CounterKind::ProcessExit => "procexit",
                CounterKind::ContextSwitch => "csw",
            };
            write!(
                out,
                "counter    kind={} pmc={:#x} pid={} tid={} cpu={} value={} enabled={} running={}",
                kind, c.pmc_id, c.pid, c.tid, opt(c.cpu), c.value, c.time_enabled, c.time_running
            )?
        }
        Record::Lost(l) => write!(
            out,
            "drop       pmc={} cpu={} count={}",
            l.pmc_id.map_or("-".into(), |p| format!("{p:#x}")), opt(l.cpu), l.count
        )?,
        // hwpmc's USERDATA (PMC_OP_WRITELOG) is one 32-bit word, stored
        // little-endian: printed as the value, as pmcstat -R does
        // ("userdata 0x%x"); other payloads as hex bytes.
        Record::UserData(u) => match <[u8; 4]>::try_from(u.data.as_bytes()) {
            Ok(w) => write!(out, "userdata   pid={} data={:#x}", u.pid, u32::from_le_bytes(w))?,
            Err(_) => write!(out, "userdata   pid={} data={}", u.pid, hex(u.data.as_bytes()))?,
        },
        Record::Close(c) => write!(out, "close      records={}", c.records)?,
        Record::UserStack(u) => write!(
            out,
            "ustack     pmc={:#x} pid={} tid={} arch={} pc={:#x} sp={:#x} fp={:#x} lr={:#x} bytes={}",
            u.pmc_id, u.pid, u.tid, u.arch, u.pc, u.sp, u.fp, u.lr, u.stack.len()
        )?,
    }
    writeln!(out, " t={:020}", r.time())
}

/// Write every record, one line each. Returns the number written.
pub fn write_all<'a, W: Write>(
    records: impl IntoIterator<Item = Record<'a>>,
    out: &mut W,
) -> io::Result<u64> {
    super::write_each(records, out, write_record)
}
