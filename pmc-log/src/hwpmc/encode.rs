//! [`Encoder`]: writes genuine hwpmc kernel log records.

use std::io::{self, Write};

use super::consts::*;

/// Writes the binary stream FreeBSD's hwpmc kernel module writes to the log
/// fd given to `PMC_OP_CONFIGURELOG`, byte for byte (amd64 layout).
///
/// It follows the kernel's emit rules (`sys/dev/hwpmc/hwpmc_logging.c`):
/// each record starts with the 16-byte header `(0xEE << 24) | (type << 16)
/// | length`, `pl_spare = 0`, then the 64-bit TSC; fields are then appended
/// in struct order at the offsets of `abi-amd64.json` (64-bit fields as two
/// little-endian words, so they may sit at offsets ≡ 4 mod 8); strings are
/// NUL-terminated and the record length is rounded up to a multiple of 4,
/// with zero padding. Fixed-size character arrays (`pl_cpuid[64]`,
/// `pl_tdname[20]`, `pl_pcomm[20]`, `pl_evname[64]`) are zero-filled.
///
/// Use it to build fixtures and to simulate the kernel (pmc-freebsd's
/// simulated driver does). The importer ([`super::Importer`]) reads it back.
///
/// ```
/// use pmc_log::hwpmc::{Encoder, Importer};
/// let mut e = Encoder::new(Vec::new());
/// e.initialize(1000, 0x0A01_0000, 0x9D, 2_000_000_000, 1_700_000_000, 0, "GenuineIntel-6-9A-4")?;
/// e.pmc_allocate(1001, 0x0002_0700, 0x1000, 0x80, 65536)?;
/// e.callchain(1002, 42, 100042, 0x0002_0700, 1, true, &[0x401000, 0x401234])?;
/// e.closelog(1003)?;
/// let log = e.into_inner();
/// assert_eq!(log[3], 0xEE); // magic in the top byte of the LE header word
/// let mut imp = Importer::new(&log)?;
/// assert_eq!(imp.by_ref().count(), 4); // header, pmc, sample, close
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Encoder<W: Write> {
    out: W,
    buf: Vec<u8>,
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

impl<W: Write> Encoder<W> {
    /// Write to `out`.
    pub fn new(out: W) -> Self {
        Encoder {
            out,
            buf: Vec::with_capacity(PMCLOG_MAX_RECORD),
        }
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// Borrow the underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// `PMCLOG_RESERVE`: start a record with its header.
    fn reserve(&mut self, ty: u32, tsc: u64) {
        self.buf.clear();
        // The length is patched in when the record is complete.
        self.emit32(pmclog_header_word(ty, 0));
        self.emit32(0); // pl_spare
        self.emit64(tsc);
    }
    /// `PMCLOG_EMIT32`.
    fn emit32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// `PMCLOG_EMIT64`: two 32-bit words, low first (LE).
    fn emit64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// `PMCLOG_EMITSTRING` into a fixed-size array: zero-filled, at most
    /// `size - 1` bytes of text so a NUL always follows.
    fn emit_fixed(&mut self, s: &[u8], size: usize) {
        let n = s.len().min(size - 1);
        self.buf.extend_from_slice(&s[..n]);
        self.buf.extend(std::iter::repeat_n(0u8, size - n));
    }
    /// `PMCLOG_EMITSTRING` of a variable-length path: NUL-terminated.
    fn emit_path(&mut self, s: &[u8]) -> io::Result<()> {
        if s.len() >= FBSD_PATH_MAX {
            return Err(invalid(format!(
                "path of {} bytes exceeds FreeBSD's PATH_MAX ({FBSD_PATH_MAX}) including the NUL",
                s.len()
            )));
        }
        if s.contains(&0) {
            return Err(invalid("path contains a NUL byte".into()));
        }
        self.buf.extend_from_slice(s);
        self.buf.push(0);
        Ok(())
    }
    /// `PMCLOG_DESPATCH`: round the length up to 4, patch it in, write.
    fn despatch(&mut self) -> io::Result<()> {
        while self.buf.len() % 4 != 0 {
            self.buf.push(0);
        }
        let len = self.buf.len();
        if len > 0xFFFF {
            return Err(invalid(format!(
                "record of {len} bytes does not fit the 16-bit length"
            )));
        }
        let word =
            u32::from_le_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]) | len as u32;
        self.buf[..4].copy_from_slice(&word.to_le_bytes());
        self.out.write_all(&self.buf)
    }

    /// The `pmc record` file prefix (`usr.sbin/pmc/headers.hh`): the
    /// `"PMCL"` header with `arch` (1 amd64, 2 arm64, 3 ppc64, 4 riscv64,
    /// 5 arm), an optional SYSINFO chunk, and the DONE chunk. Write it
    /// before the first kernel record.
    pub fn pmc_record_prefix(
        &mut self,
        arch: u16,
        sysinfo: Option<(&str, &str, &str)>,
    ) -> io::Result<()> {
        self.buf.clear();
        self.emit32(PMCL_MAGIC);
        self.buf.extend_from_slice(&0u16.to_le_bytes());
        self.buf.extend_from_slice(&arch.to_le_bytes());
        if let Some((cpumodel, osrelease, buildid)) = sysinfo {
            self.buf.extend_from_slice(&[PMCL_INFO_SYSINFO, 0]);
            self.buf.extend_from_slice(&192u16.to_le_bytes());
            self.emit32(0);
            self.emit_fixed(cpumodel.as_bytes(), 64);
            self.emit_fixed(osrelease.as_bytes(), 64);
            self.emit_fixed(buildid.as_bytes(), 64);
        }
        self.buf
            .extend_from_slice(&[PMCL_INFO_DONE, 0, 0, 0, 0, 0, 0, 0]);
        self.out.write_all(&self.buf)
    }

    /// INITIALIZE (type 3, 112 bytes): `pl_version`, `pl_cpu` (cputype),
    /// `pl_tsc_freq`, `pl_ts` (wall clock), `pl_cpuid[64]`.
    #[allow(clippy::too_many_arguments)]
    pub fn initialize(
        &mut self,
        tsc: u64,
        version: u32,
        cputype: u32,
        tsc_freq: u64,
        ts_sec: i64,
        ts_nsec: i64,
        cpuid: &str,
    ) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_INITIALIZE, tsc);
        self.emit32(version);
        self.emit32(cputype);
        self.emit64(tsc_freq);
        self.emit64(ts_sec as u64);
        self.emit64(ts_nsec as u64);
        self.emit_fixed(cpuid.as_bytes(), 64);
        self.despatch()
    }

    /// CLOSELOG (type 1, 16 bytes).
    pub fn closelog(&mut self, tsc: u64) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_CLOSELOG, tsc);
        self.despatch()
    }

    /// DROPNOTIFY (type 2, 16 bytes).
    pub fn dropnotify(&mut self, tsc: u64) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_DROPNOTIFY, tsc);
        self.despatch()
    }

    /// PMCALLOCATE (type 5, 40 bytes). `flags` are hwpmc `PMC_F_*` bits.
    pub fn pmc_allocate(
        &mut self,
        tsc: u64,
        pmcid: u32,
        event: u32,
        flags: u32,
        rate: u64,
    ) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_PMCALLOCATE, tsc);
        self.emit32(pmcid);
        self.emit32(event);
        self.emit32(flags);
        self.emit32(0);
        self.emit64(rate);
        self.despatch()
    }

    /// PMCALLOCATEDYN (type 17, 96 bytes) as the kernel actually writes it:
    /// the 8-byte reload count at offset 32 and the name from offset 40
    /// (truncated to 55 bytes so the record stays within its 96-byte
    /// reservation), as `hwpmc_logging.c:pmclog_process_pmcallocate` does; no
    /// kernel writes the struct's own layout (name at 32).
    pub fn pmc_allocate_dyn(
        &mut self,
        tsc: u64,
        pmcid: u32,
        event: u32,
        flags: u32,
        rate: u64,
        evname: &str,
    ) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_PMCALLOCATEDYN, tsc);
        self.emit32(pmcid);
        self.emit32(event);
        self.emit32(flags);
        self.emit32(0);
        self.emit64(rate);
        self.emit_fixed(evname.as_bytes(), 56);
        self.despatch()
    }

    /// PMCATTACH (type 6): `pl_pmcid`, `pl_pid`, `pl_pathname`.
    pub fn pmc_attach(&mut self, tsc: u64, pmcid: u32, pid: i32, path: &[u8]) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_PMCATTACH, tsc);
        self.emit32(pmcid);
        self.emit32(pid as u32);
        self.emit_path(path)?;
        self.despatch()
    }

    /// PMCDETACH (type 7, 24 bytes).
    pub fn pmc_detach(&mut self, tsc: u64, pmcid: u32, pid: i32) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_PMCDETACH, tsc);
        self.emit32(pmcid);
        self.emit32(pid as u32);
        self.despatch()
    }

    /// PROCCSW (type 8, 40 bytes): the count delta of one time slice.
    pub fn proccsw(
        &mut self,
        tsc: u64,
        pmcid: u32,
        pid: i32,
        tid: i32,
        value: u64,
    ) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_PROCCSW, tsc);
        self.emit64(value);
        self.emit32(pmcid);
        self.emit32(pid as u32);
        self.emit32(tid as u32);
        self.emit32(0);
        self.despatch()
    }

    /// PROCEXEC (type 9), current layout: `pl_pid`, `pl_pmcid`, `pl_base`
    /// (AT_BASE), `pl_dyn` (PIE base), `pl_pathname` at 40.
    pub fn procexec(
        &mut self,
        tsc: u64,
        pid: i32,
        pmcid: u32,
        base: u64,
        dyn_base: u64,
        path: &[u8],
    ) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_PROCEXEC, tsc);
        self.emit32(pid as u32);
        self.emit32(pmcid);
        self.emit64(base);
        self.emit64(dyn_base);
        self.emit_path(path)?;
        self.despatch()
    }

    /// PROCEXEC (type 9), legacy layout (before PIE support): `pl_start`
    /// (entry address) at 24, `pl_pathname` at 32.
    pub fn procexec_legacy(
        &mut self,
        tsc: u64,
        pid: i32,
        pmcid: u32,
        start: u64,
        path: &[u8],
    ) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_PROCEXEC, tsc);
        self.emit32(pid as u32);
        self.emit32(pmcid);
        self.emit64(start);
        self.emit_path(path)?;
        self.despatch()
    }

    /// PROCEXIT (type 10, 32 bytes): count at process exit (log-procexit).
    pub fn procexit(&mut self, tsc: u64, pmcid: u32, pid: i32, value: u64) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_PROCEXIT, tsc);
        self.emit32(pmcid);
        self.emit32(pid as u32);
        self.emit64(value);
        self.despatch()
    }

    /// PROCFORK (type 11, 24 bytes).
    pub fn procfork(&mut self, tsc: u64, oldpid: i32, newpid: i32) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_PROCFORK, tsc);
        self.emit32(oldpid as u32);
        self.emit32(newpid as u32);
        self.despatch()
    }

    /// SYSEXIT (type 12, 24 bytes).
    pub fn sysexit(&mut self, tsc: u64, pid: i32) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_SYSEXIT, tsc);
        self.emit32(pid as u32);
        self.emit32(0);
        self.despatch()
    }

    /// USERDATA (type 13, 24 bytes), from `PMC_OP_WRITELOG`.
    pub fn userdata(&mut self, tsc: u64, value: u32) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_USERDATA, tsc);
        self.emit32(value);
        self.emit32(0);
        self.despatch()
    }

    /// MAP_IN (type 14): `pl_pid` (-1 for the kernel), `pl_start`, path at 32.
    pub fn map_in(&mut self, tsc: u64, pid: i32, start: u64, path: &[u8]) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_MAP_IN, tsc);
        self.emit32(pid as u32);
        self.emit32(0);
        self.emit64(start);
        self.emit_path(path)?;
        self.despatch()
    }

    /// MAP_OUT (type 15, 40 bytes).
    pub fn map_out(&mut self, tsc: u64, pid: i32, start: u64, end: u64) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_MAP_OUT, tsc);
        self.emit32(pid as u32);
        self.emit32(0);
        self.emit64(start);
        self.emit64(end);
        self.despatch()
    }

    /// CALLCHAIN (type 16): `pl_cpuflags = cpu << 16 | flags` with
    /// `PMC_CC_F_USERSPACE` when `user`; `pcs` leaf first, at most 512.
    #[allow(clippy::too_many_arguments)]
    pub fn callchain(
        &mut self,
        tsc: u64,
        pid: i32,
        tid: i32,
        pmcid: u32,
        cpu: u16,
        user: bool,
        pcs: &[u64],
    ) -> io::Result<()> {
        if pcs.len() > PMC_CALLCHAIN_DEPTH_MAX {
            return Err(invalid(format!(
                "callchain of {} frames exceeds PMC_CALLCHAIN_DEPTH_MAX ({PMC_CALLCHAIN_DEPTH_MAX})",
                pcs.len()
            )));
        }
        self.reserve(PMCLOG_TYPE_CALLCHAIN, tsc);
        self.emit32(pid as u32);
        self.emit32(tid as u32);
        self.emit32(pmcid);
        let flags = if user { PMC_CC_F_USERSPACE } else { 0 };
        self.emit32(u32::from(cpu) << 16 | flags);
        for &pc in pcs {
            self.emit64(pc);
        }
        self.despatch()
    }

    /// Multipart CALLCHAIN (AMD IBS): sets `PMC_CC_F_MULTIPART`, writes the
    /// 8-byte header of up to 4 `{u8 type; u8 len-in-words}` pairs, then the
    /// parts in order (IBS register dumps first, then the
    /// `PMC_CC_MULTIPART_CALLCHAIN` part, by convention).
    #[allow(clippy::too_many_arguments)]
    pub fn callchain_multipart(
        &mut self,
        tsc: u64,
        pid: i32,
        tid: i32,
        pmcid: u32,
        cpu: u16,
        user: bool,
        parts: &[(u8, &[u64])],
    ) -> io::Result<()> {
        if parts.len() > PMC_MULTIPART_HEADER_ENTRIES {
            return Err(invalid(format!(
                "{} parts; at most {PMC_MULTIPART_HEADER_ENTRIES}",
                parts.len()
            )));
        }
        let words: usize = 1 + parts.iter().map(|p| p.1.len()).sum::<usize>();
        if words > PMC_CALLCHAIN_DEPTH_MAX || parts.iter().any(|p| p.1.len() > 255) {
            return Err(invalid("multipart callchain too long".into()));
        }
        self.reserve(PMCLOG_TYPE_CALLCHAIN, tsc);
        self.emit32(pid as u32);
        self.emit32(tid as u32);
        self.emit32(pmcid);
        let flags = PMC_CC_F_MULTIPART | if user { PMC_CC_F_USERSPACE } else { 0 };
        self.emit32(u32::from(cpu) << 16 | flags);
        let mut hdr = [0u8; 8];
        for (i, (ty, data)) in parts.iter().enumerate() {
            hdr[2 * i] = *ty;
            hdr[2 * i + 1] = data.len() as u8;
        }
        self.buf.extend_from_slice(&hdr);
        for (_, data) in parts {
            for &w in *data {
                self.emit64(w);
            }
        }
        self.despatch()
    }

    /// THR_CREATE (type 18, 52 bytes): `pl_tid`, `pl_pid`, `pl_flags`, `pl_tdname[20]`.
    pub fn thr_create(
        &mut self,
        tsc: u64,
        tid: i32,
        pid: i32,
        flags: u32,
        name: &[u8],
    ) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_THR_CREATE, tsc);
        self.emit32(tid as u32);
        self.emit32(pid as u32);
        self.emit32(flags);
        self.emit32(0);
        self.emit_fixed(name, 20);
        self.despatch()
    }

    /// THR_EXIT (type 19, 24 bytes).
    pub fn thr_exit(&mut self, tsc: u64, tid: i32) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_THR_EXIT, tsc);
        self.emit32(tid as u32);
        self.emit32(0);
        self.despatch()
    }

    /// PROC_CREATE (type 20, 44 bytes): `pl_pid`, `pl_flags`, `pl_pcomm[20]`.
    pub fn proc_create(&mut self, tsc: u64, pid: i32, flags: u32, comm: &[u8]) -> io::Result<()> {
        self.reserve(PMCLOG_TYPE_PROC_CREATE, tsc);
        self.emit32(pid as u32);
        self.emit32(flags);
        self.emit_fixed(comm, 20);
        self.despatch()
    }

    /// Write raw bytes (for tests that need damaged or foreign records).
    pub fn raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)
    }
}
