//! A log printed as FreeBSD `pmcstat -R file` prints it: [`write_all`] prints a whole log,
//! [`write_record`] one record. The table below is every line.
//!
//! The layout is `pmcstat_print_log`'s (usr.sbin/pmcstat/pmcstat_log.c): one line per
//! record, the record name left-aligned in 9 columns, a space, then the
//! fields (`PMCSTAT_PRINT_ENTRY`). A callchain is followed by one `...`
//! line per PC, leaf first.
//!
//! | record | line |
//! |---|---|
//! | header | `initlog 0x<version> "<cpu>"` |
//! | PMC | `allocate 0x<pmcid> "<event>" 0x<flags>` |
//! | sample | `callchain <pid> 0x<pmcid> <cpu> <npc> <u\|s>`, then `... 0x<pc>` |
//! | map / unmap | `map-in <pid> 0x<start> "<path>"` / `map-out <pid> 0x<start> 0x<end>` |
//! | exec | `exec 0x<pmcid> <pid> 0x<base> "<path>"` |
//! | fork / exit | `fork <oldpid> <newpid>` / `exit <pid>` |
//! | process / thread creation | `create <pid> <flags> "<comm>"` / `thr-create <tid> <pid> <flags> "<name>"` |
//! | thread exit | `thr-exit <tid>` |
//! | attach / detach | `attach 0x<pmcid> <pid> "<path>"` / `detach 0x<pmcid> <pid>` |
//! | context-switch / exit counts | `cswval 0x<pmcid> <pid> <value>` / `exitval 0x<pmcid> <pid> <value>` |
//! | lost samples | `drop` (then the count, when the log knows it) |
//! | user data | `userdata 0x<value>` |
//! | clean close | `closelog` |
//!
//! Records hwpmc has no type for (Linux logs) get names in the same style:
//! `comm <pid> <tid> "<name>"` (`exec-comm` for a command name set by
//! exec) and `interval 0x<pmcid> <pid> <cpu> <value>` (a periodic count).
//! The `initlog` version is hwpmc's `PMC_VERSION` for an imported FreeBSD
//! log and 0 otherwise; its name is the CPU model the log names.

use std::io::{self, Write};

use pmc_log::record::{
    Counter, CounterKind, Exec, Header, Lost, PmcDescriptor, Record, Sample, ThreadCreate, UserData,
};

/// `PMCSTAT_PRINT_ENTRY`: the name in 9 columns and a space.
fn entry<W: Write>(out: &mut W, name: &str) -> io::Result<()> {
    write!(out, "{name:<9} ")
}

/// A string field, quoted as pmcstat does (`\"%s\"`), on one line.
fn q(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    // Control characters (ESC sequences, newlines) escaped: a path in a log cannot drive
    // the terminal or forge a line.
    o.push_str(&pmc_log::escape::escape(&s));
    o.push('"');
    o
}

/// hwpmc's `PMC_VERSION` from an imported log's backend text
/// (`hwpmc version=0x0a010000 ...`), else 0.
fn hwpmc_version(backend: &str) -> u32 {
    backend
        .split_whitespace()
        .find_map(|w| w.strip_prefix("version=0x"))
        .and_then(|v| u32::from_str_radix(v, 16).ok())
        .unwrap_or(0)
}

/// Print one record (its line or lines, with newlines).
pub fn write_record<W: Write>(r: &Record<'_>, out: &mut W) -> io::Result<()> {
    match r {
        Record::Header(h) => write_header(h, out),
        Record::Pmc(p) => write_pmc(p, out),
        Record::Sample(s) => write_sample(s, out),
        Record::Comm(c) => {
            entry(out, if c.exec { "exec-comm" } else { "comm" })?;
            writeln!(out, "{} {} {}", c.pid, c.tid, q(c.comm.as_bytes()))
        }
        Record::Exec(e) => write_exec(e, out),
        Record::Fork(f) => {
            entry(out, "fork")?;
            writeln!(out, "{} {}", f.parent_pid, f.child_pid)
        }
        Record::Exit(e) => {
            entry(out, "exit")?;
            writeln!(out, "{}", e.pid)
        }
        Record::ThreadCreate(t) => write_thread_create(t, out),
        Record::ThreadExit(t) => {
            entry(out, "thr-exit")?;
            writeln!(out, "{}", t.tid)
        }
        Record::ProcessCreate(p) => {
            entry(out, "create")?;
            writeln!(out, "{} {:x} {}", p.pid, p.flags, q(p.comm.as_bytes()))
        }
        Record::Map(m) => {
            entry(out, "map-in")?;
            writeln!(out, "{} {:#x} {}", m.pid, m.start, q(m.path.as_bytes()))
        }
        Record::Unmap(u) => {
            entry(out, "map-out")?;
            writeln!(out, "{} {:#x} {:#x}", u.pid, u.start, u.end)
        }
        Record::Attach(a) => {
            entry(out, "attach")?;
            writeln!(out, "{:#x} {} {}", a.pmc_id, a.pid, q(a.path.as_bytes()))
        }
        Record::Detach(d) => {
            entry(out, "detach")?;
            writeln!(out, "{:#x} {}", d.pmc_id, d.pid)
        }
        Record::Counter(c) => write_counter(c, out),
        Record::Lost(l) => write_lost(l, out),
        Record::UserData(u) => write_user_data(u, out),
        Record::Close(_) => writeln!(out, "closelog"),
        // A record kind newer than this printer: pmc-log's own line.
        other => pmc_log::export::text::write_record(other, out),
    }
}

/// hwpmc's `pm_cputype` from an imported log's backend text
/// (`... cputype=0x98 ...`).
fn hwpmc_cputype(backend: &str) -> Option<u32> {
    backend
        .split_whitespace()
        .find_map(|w| w.strip_prefix("cputype=0x"))
        .and_then(|v| u32::from_str_radix(v, 16).ok())
}

/// A `key=0x..` value of an imported PMC's `native_config`
/// (`event=0x..,flags=0x..,rate=..[,record=allocatedyn]`).
fn native_hex(native: &str, key: &str) -> Option<u32> {
    native
        .split(',')
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix("=0x"))
        .and_then(|v| u32::from_str_radix(v, 16).ok())
}

/// `initlog`: hwpmc's version and, for an imported hwpmc log, the name of
/// its `pl_arch` as `pmc_name_of_cputype()` gives it (`INTEL_SKYLAKE`;
/// `(null)` for a type libpmc does not list); for pmc's own logs the CPU
/// model (else the architecture).
fn write_header<W: Write>(h: &Header<'_>, out: &mut W) -> io::Result<()> {
    entry(out, "initlog")?;
    let cpu = match hwpmc_cputype(&h.backend) {
        Some(t) => pmc_log::hwpmc::cputype_name(t).unwrap_or("(null)"),
        None if h.cpu_model.is_empty() => &h.arch,
        None => &h.cpu_model,
    };
    writeln!(
        out,
        "{:#x} {}",
        hwpmc_version(&h.backend),
        q(cpu.as_bytes())
    )
}

/// `allocate` (or `allocatedyn` for an imported PMCALLOCATEDYN record): the
/// PMC id, its event as the user wrote it (else canonical), its flags. An
/// imported hwpmc PMC prints the record's own `pl_flags` (`PMC_F_*`), as
/// `pmcstat_print_log()` does ("0x%x \"%s\" 0x%x", `pl_pmcid`,
/// `pl_evname`, `pl_flags`); pmc's own logs print pmc-log's `FLAG_*`.
fn write_pmc<W: Write>(p: &PmcDescriptor<'_>, out: &mut W) -> io::Result<()> {
    let native = &*p.native_config;
    let dyn_record = native.split(',').any(|kv| kv == "record=allocatedyn");
    entry(
        out,
        if dyn_record {
            "allocatedyn"
        } else {
            "allocate"
        },
    )?;
    let name = if p.event_spec.is_empty() {
        &p.canonical_name
    } else {
        &p.event_spec
    };
    let flags = match (native_hex(native, "event"), native_hex(native, "flags")) {
        (Some(_), Some(raw)) => raw,
        _ => p.flags,
    };
    writeln!(out, "{:#x} {} {:#x}", p.pmc_id, q(name.as_bytes()), flags)
}

/// `callchain`, then one `...` line per PC, leaf first.
fn write_sample<W: Write>(s: &Sample<'_>, out: &mut W) -> io::Result<()> {
    entry(out, "callchain")?;
    let cpu = s.cpu.map_or(-1, i64::from);
    let mode = if s.kernel_frames > 0 { 's' } else { 'u' };
    writeln!(
        out,
        "{} {:#x} {} {} {}",
        s.pid,
        s.pmc_id,
        cpu,
        s.callchain.len(),
        mode
    )?;
    for pc in s.callchain.iter() {
        entry(out, "...")?;
        writeln!(out, "{pc:#x}")?;
    }
    Ok(())
}

/// `exec`: the PMC, pid, base address and path.
fn write_exec<W: Write>(e: &Exec<'_>, out: &mut W) -> io::Result<()> {
    entry(out, "exec")?;
    writeln!(
        out,
        "{:#x} {} {:#x} {}",
        e.pmc_id.unwrap_or(0),
        e.pid,
        e.base,
        q(e.path.as_bytes())
    )
}

/// `thr-create`: tid, pid, flags (hex without `0x`) and name.
fn write_thread_create<W: Write>(t: &ThreadCreate<'_>, out: &mut W) -> io::Result<()> {
    entry(out, "thr-create")?;
    writeln!(
        out,
        "{} {} {:x} {}",
        t.tid,
        t.pid,
        t.flags,
        q(t.name.as_bytes())
    )
}

/// `cswval`, `exitval` or `interval`: the PMC, pid, CPU (interval only) and value.
fn write_counter<W: Write>(c: &Counter, out: &mut W) -> io::Result<()> {
    match c.kind {
        CounterKind::ContextSwitch => {
            entry(out, "cswval")?;
            writeln!(out, "{:#x} {} {}", c.pmc_id, c.pid, c.value)
        }
        CounterKind::ProcessExit => {
            entry(out, "exitval")?;
            writeln!(out, "{:#x} {} {}", c.pmc_id, c.pid, c.value)
        }
        CounterKind::Interval => {
            entry(out, "interval")?;
            let cpu = c.cpu.map_or(-1, i64::from);
            writeln!(out, "{:#x} {} {} {}", c.pmc_id, c.pid, cpu, c.value)
        }
    }
}

/// `drop`, then the count when the log knows it.
fn write_lost<W: Write>(l: &Lost, out: &mut W) -> io::Result<()> {
    if l.count == 0 {
        writeln!(out, "drop")
    } else {
        entry(out, "drop")?;
        writeln!(out, "{}", l.count)
    }
}

/// `userdata`: the first four bytes of the data, little-endian.
fn write_user_data<W: Write>(u: &UserData<'_>, out: &mut W) -> io::Result<()> {
    entry(out, "userdata")?;
    let b = u.data.as_bytes();
    let mut w = [0u8; 4];
    for (d, s) in w.iter_mut().zip(b) {
        *d = *s;
    }
    writeln!(out, "{:#x}", u32::from_le_bytes(w))
}

/// Print every record of `records` (see [`write_record`]); returns how many.
pub fn write_all<'a, W: Write>(
    records: impl IntoIterator<Item = Record<'a>>,
    out: &mut W,
) -> io::Result<u64> {
    pmc_log::export::write_each(records, out, write_record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmc_log::record::{Callchain, Exit, Sample};

    fn line(r: &Record<'_>) -> String {
        let mut v = Vec::new();
        write_record(r, &mut v).expect("write");
        String::from_utf8(v).expect("utf8")
    }

    #[test]
    fn lines_as_pmcstat_print_log() {
        assert_eq!(
            line(&Record::Exit(Exit {
                time: 1,
                pid: 42,
                tid: -1
            })),
            "exit      42\n"
        );
        let frames = [0x401000u64, 0x401234];
        let s = Record::Sample(Sample {
            time: 1,
            pmc_id: 0x20700,
            pid: 42,
            tid: 42,
            cpu: Some(1),
            period: 65536,
            callchain: Callchain::from_frames(&frames),
            kernel_frames: 0,
            raw: Default::default(),
        });
        assert_eq!(
            line(&s),
            "callchain 42 0x20700 1 2 u\n...       0x401000\n...       0x401234\n"
        );
        let c = Record::Comm(pmc_log::record::Comm {
            time: 1,
            pid: 7,
            tid: 8,
            exec: false,
            comm: pmc_log::record::Bytes(b"worker".as_slice().into()),
        });
        assert_eq!(line(&c), "comm      7 8 \"worker\"\n");
        let i = Record::Counter(pmc_log::record::Counter {
            time: 1,
            pmc_id: 3,
            pid: 7,
            tid: 7,
            cpu: None,
            kind: CounterKind::Interval,
            value: 99,
            time_enabled: 0,
            time_running: 0,
        });
        assert_eq!(line(&i), "interval  0x3 7 -1 99\n");
        let l = |count| {
            line(&Record::Lost(pmc_log::record::Lost {
                time: 1,
                pmc_id: None,
                cpu: None,
                count,
            }))
        };
        assert_eq!(l(0), "drop\n");
        assert_eq!(l(12), "drop      12\n");
        assert_eq!(
            hwpmc_version("hwpmc version=0x0a010000 cputype=0x1 (imported)"),
            0x0a01_0000
        );
        assert_eq!(hwpmc_version("perf_event"), 0);
        assert_eq!(q(b"a\nb"), "\"a\\nb\"");
    }

    /// Issue 23 item 12: an imported hwpmc log prints as FreeBSD's
    /// `pmcstat_print_log()` (usr.sbin/pmcstat/pmcstat_log.c) does:
    /// `PMCSTAT_PRINT_ENTRY("initlog","0x%x \"%s\"", pl_version,
    /// pmc_name_of_cputype(pl_arch))`, `PMCSTAT_PRINT_ENTRY("allocate","0x%x
    /// \"%s\" 0x%x", pl_pmcid, pl_evname, pl_flags)` and
    /// `PMCSTAT_PRINT_ENTRY("allocatedyn", <same>)` with the PMCALLOCATEDYN
    /// record's fields; `PMCSTAT_PRINT_ENTRY(T, ...)` is `"%-9s"` and a
    /// space. Before: `initlog` named the CPU model or architecture,
    /// PMCALLOCATEDYN printed as `allocate`, and flags were pmc-log's
    /// FLAG_* bits, not the record's PMC_F_*.
    #[test]
    fn imported_hwpmc_lines_as_pmcstat_print_log() {
        let mut e = pmc_log::hwpmc::Encoder::new(Vec::new());
        e.initialize(
            1,
            0x0A00_0000,
            0x98,
            1_000_000_000,
            0,
            0,
            "GenuineIntel-6-5E-3",
        )
        .unwrap();
        // PMC_F_EV_PMU | PMC_F_DESCENDANTS on an IAP TC PMC (new layout).
        e.pmc_allocate(2, 0xFFF3_0700, 0x1000, 0x202, 0).unwrap();
        // SOFT CLOCK.HARD, sampling (TS), PMC_F_CALLCHAIN.
        e.pmc_allocate_dyn(3, 0xFFF2_0F00, 0x1000_0000 + 1, 0x80, 5000, "CLOCK.HARD")
            .unwrap();
        e.closelog(4).unwrap();
        let bytes = e.into_inner();
        let lines: Vec<String> = pmc_log::hwpmc::Importer::new(&bytes)
            .unwrap()
            .map(|r| line(&r))
            .collect();
        // The fields pmcstat prints, formatted with its format strings.
        let initlog = format!(
            "{:<9} {:#x} \"{}\"\n",
            "initlog", 0x0A00_0000u32, "INTEL_SKYLAKE"
        );
        assert_eq!(lines[0], initlog);
        let alloc = lines.iter().find(|l| l.starts_with("allocate ")).unwrap();
        assert!(alloc.ends_with(" 0x202\n"), "{alloc}");
        let dynl = lines.iter().find(|l| l.starts_with("allocatedyn")).unwrap();
        assert_eq!(
            dynl,
            &format!(
                "{:<9} {:#x} \"{}\" {:#x}\n",
                "allocatedyn", 0xFFF2_0F00u32, "CLOCK.HARD", 0x80
            )
        );
        assert_eq!(pmc_log::hwpmc::cputype_name(0x1234), None);
        assert_eq!(
            hwpmc_cputype("hwpmc version=0x0a000000 cputype=0x1 (imported)"),
            Some(1)
        );
    }
}
