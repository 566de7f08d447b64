//! pmclog(3): reading a log back, one `struct pmclog_ev` at a time, as
//! FreeBSD's `pmclog_read` fills it, for both formats:
//!
//! - **hwpmc logs** (what FreeBSD's kernel writes), parsed as FreeBSD's
//!   `lib/libpmc/pmclog.c` parses them: its state machine (a record's header
//!   word, then as many bytes as its length says, assembled across reads and
//!   feeds), its record decoding, `PMCLOG_OK`, `PMCLOG_REQUIRE_DATA`,
//!   `PMCLOG_EOF` (CLOSELOG, or the descriptor's end between records) and
//!   `PMCLOG_ERROR` (an error is final: every later read answers it). Stricter
//!   than FreeBSD where FreeBSD reads past what a record holds: a bad magic, a
//!   length of 0, below the 16-byte header, above `sizeof(union
//!   pmclog_entry)` (4128) or not a whole number of 4-byte words, a record
//!   shorter than its type's fields, and a descriptor that ends inside a
//!   record are `PMCLOG_ERROR`, with errno `EINVAL` and the offset and reason
//!   in `pmc_strerror_last()`. `pl_ts.tv_sec` holds the record's timestamp
//!   counter (`pl_tsc`), as FreeBSD's does.
//! - **pmc-log files** (what this library's `pmc_configure_logfile` writes on
//!   Linux), through pmc-log's streaming reader: the same states, each record
//!   kind as its hwpmc counterpart (kinds with none, such as `Comm` or
//!   interval counters, are skipped); a record or block that fails its CRC or
//!   does not fit is `PMCLOG_ERROR`.
//!
//! `pl_offset` is the byte offset in the input just past the event's record
//! (FreeBSD's running total of record lengths), `pl_count` the events
//! returned so far, `pl_data`/`pl_len` the record's bytes (hwpmc logs; valid
//! until the next read). The input's format is told by its first bytes; no
//! record is invented (a log without INITIALIZE starts with its first record).

mod hwpmc;
mod pmc_log_file;

use std::ffi::{c_char, CString};

use pmc_log::hwpmc::pmclog_header_magic_ok;

use crate::abi::*;
use crate::state::CError;
use hwpmc::Hwpmc;
use pmc_log_file::PmcLog;

/// How many bytes a parser reading a descriptor reads at a time.
pub(crate) const READ_CHUNK: usize = 64 << 10;

/// The input's format, once its first bytes told it.
enum Format {
    /// Not known yet: the bytes so far.
    Sniff(Vec<u8>),
    Hwpmc(Box<Hwpmc>),
    PmcLog(Box<PmcLog>),
}

/// The state behind a `pmclog_open` cookie.
pub struct Parser {
    /// The descriptor to read from, or `PMCLOG_FD_NONE`.
    pub fd: i32,
    format: Format,
    /// The error every later read answers (FreeBSD's `PL_STATE_ERROR`).
    error: Option<CError>,
    /// The descriptor reached its end.
    eof: bool,
    /// Events returned.
    count: usize,
    /// Event names `pl_evname` points into (one per distinct name, for the
    /// parser's life).
    names: Vec<CString>,
}

fn u32_at(r: &[u8], off: usize) -> u32 {
    r.get(off..off + 4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

fn u64_at(r: &[u8], off: usize) -> u64 {
    r.get(off..off + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

fn i32_at(r: &[u8], off: usize) -> i32 {
    u32_at(r, off) as i32
}

/// strlcpy: the bytes up to the first NUL (or `src`'s end), cut to fit with
/// their NUL.
fn copy_str(dst: &mut [c_char], src: &[u8]) {
    let src = src.split(|&b| b == 0).next().unwrap_or_default();
    let n = src.len().min(dst.len().saturating_sub(1));
    for (d, s) in dst.iter_mut().zip(&src[..n]) {
        *d = *s as c_char;
    }
    if let Some(d) = dst.get_mut(n) {
        *d = 0;
    }
}

fn ts(ns: u64) -> timespec {
    timespec {
        tv_sec: i64::try_from(ns / 1_000_000_000).unwrap_or(i64::MAX),
        tv_nsec: i64::try_from(ns % 1_000_000_000).unwrap_or(0),
    }
}

/// A `pmclog_ev`, everything zero.
pub fn empty_event() -> pmclog_ev {
    pmclog_ev {
        pl_state: PMCLOG_OK,
        pl_offset: 0,
        pl_count: 0,
        pl_ts: timespec::default(),
        pl_type: 0,
        pl_data: std::ptr::null_mut(),
        pl_len: 0,
        pl_u: pmclog_ev_u {
            pl_u: pmclog_ev_userdata { pl_userdata: 0 },
        },
    }
}

/// What one step of a parser found.
enum Step {
    /// An event is in `ev`.
    Event,
    /// CLOSELOG: `PMCLOG_EOF`.
    Closed,
    /// The input holds no complete record.
    NeedMore,
}

fn malformed(offset: u64, why: String) -> CError {
    CError::new(
        libc::EINVAL,
        format!("pmclog_read: the log is damaged at byte {offset}: {why}"),
    )
}

/// Keeps `name` for the parser's life; the pointer `pl_evname` takes.
fn keep_name(names: &mut Vec<CString>, name: &[u8]) -> *const c_char {
    let name: Vec<u8> = name.iter().copied().filter(|&b| b != 0).collect();
    let name = CString::new(name).unwrap_or_default();
    if let Some(n) = names.iter().find(|n| **n == name) {
        return n.as_ptr();
    }
    names.push(name);
    names.last().map_or(std::ptr::null(), |n| n.as_ptr())
}

impl Parser {
    /// A parser over `fd`, or over fed data for `PMCLOG_FD_NONE`.
    pub fn new(fd: i32) -> Parser {
        Parser {
            fd,
            format: Format::Sniff(Vec::new()),
            error: None,
            eof: false,
            count: 0,
            names: Vec::new(),
        }
    }

    /// A `pmclog_ev` to fill.
    pub fn empty_event() -> pmclog_ev {
        empty_event()
    }

    /// `pmclog_feed`: more input. pmclog_feed(3) and FreeBSD's parser
    /// refuse data while what was fed before is not consumed (a read has not
    /// asked for more).
    ///
    /// # Errors
    /// `EINVAL` for a parser reading a descriptor, or data not consumed.
    pub(crate) fn feed(&mut self, data: &[u8]) -> Result<(), CError> {
        if self.fd != PMCLOG_FD_NONE {
            return Err(CError::new(
                libc::EINVAL,
                "this parser reads a descriptor: pmclog_feed is for pmclog_open(PMCLOG_FD_NONE)",
            ));
        }
        if let Format::Hwpmc(h) = &self.format {
            if !h.consumed() {
                return Err(CError::new(
                    libc::EINVAL,
                    "pmclog_feed: the data fed before is not consumed yet: pmclog_read until it \
                     answers PMCLOG_REQUIRE_DATA",
                ));
            }
        }
        self.give(data);
        Ok(())
    }

    /// Input for the format's parser (telling the format first).
    fn give(&mut self, data: &[u8]) {
        match &mut self.format {
            Format::Sniff(head) => {
                head.extend_from_slice(data);
                self.decide(false);
            }
            Format::Hwpmc(h) => h.push(data),
            Format::PmcLog(p) => p.queue.push(data),
        }
    }

    /// Tells the format by the first bytes: an hwpmc record's header word
    /// has the magic 0xEE in its top byte, a pmc-log file starts with
    /// "\x89PMCLOG\n". `end`: no more input will come.
    fn decide(&mut self, end: bool) {
        let Format::Sniff(head) = &mut self.format else {
            return;
        };
        let magic = pmc_log::format::MAGIC;
        let hwpmc = head.len() >= 4 && pmclog_header_magic_ok(u32_at(head, 0));
        let pmclog = head.len() >= magic.len() && head.starts_with(&magic);
        let maybe_pmclog = head.len() < magic.len() && magic.starts_with(head);
        if hwpmc {
            let first = std::mem::take(head);
            self.format = Format::Hwpmc(Box::new(Hwpmc::new(first)));
        } else if pmclog {
            self.format = Format::PmcLog(Box::new(PmcLog::new(head)));
        } else if head.len() >= 4 && !maybe_pmclog || (end && !head.is_empty()) {
            let first: Vec<String> = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
            self.error = Some(CError::new(
                libc::EINVAL,
                format!(
                    "pmclog_read: not a log: it starts with {} (an hwpmc log's first word has \
                     0xEE in its top byte; a pmc-log file starts with \"\\x89PMCLOG\\n\")",
                    first.join(" ")
                ),
            ));
        }
    }

    fn step(&mut self, ev: &mut pmclog_ev) -> Result<Step, CError> {
        let names = &mut self.names;
        match &mut self.format {
            Format::Sniff(_) => Ok(Step::NeedMore),
            Format::Hwpmc(h) => h.step(ev, names),
            Format::PmcLog(p) => p.step(ev, names),
        }
    }

    /// The input's end (a descriptor's): what it reveals.
    fn end_of_input(&mut self) -> Result<(), CError> {
        self.eof = true;
        self.decide(true);
        match &mut self.format {
            Format::PmcLog(p) => p.end(),
            Format::Hwpmc(h) => {
                if let Some(e) = h.cut_record() {
                    return Err(e);
                }
            }
            Format::Sniff(_) => {}
        }
        Ok(())
    }

    /// `pmclog_read`: fills `ev`; true for an event (`PMCLOG_OK`), false for
    /// `PMCLOG_EOF` or `PMCLOG_REQUIRE_DATA` (in `ev.pl_state`). `read_more`
    /// reads the descriptor (`Ok(0)` at its end, `EAGAIN` for "nothing now");
    /// it is not called for a parser fed by `pmclog_feed`.
    ///
    /// # Errors
    /// `PMCLOG_ERROR` (set in `ev.pl_state`): a damaged log or not a log
    /// (`EINVAL`), or `read_more`'s error; every later call answers the same.
    pub(crate) fn next(
        &mut self,
        ev: &mut pmclog_ev,
        read_more: &mut dyn FnMut(&mut [u8]) -> Result<usize, CError>,
    ) -> Result<bool, CError> {
        let feeding = self.fd == PMCLOG_FD_NONE;
        let mut chunk = Vec::new();
        loop {
            if let Some(e) = &self.error {
                ev.pl_state = PMCLOG_ERROR;
                return Err(e.clone());
            }
            match self.step(ev) {
                Err(e) => {
                    self.error = Some(e);
                    continue;
                }
                Ok(Step::Event) => {
                    self.count += 1;
                    ev.pl_count = self.count;
                    ev.pl_state = PMCLOG_OK;
                    if let Format::Hwpmc(h) = &mut self.format {
                        ev.pl_data = h.saved.as_mut_ptr().cast();
                    }
                    return Ok(true);
                }
                Ok(Step::Closed) => {
                    ev.pl_state = PMCLOG_EOF;
                    return Ok(false);
                }
                Ok(Step::NeedMore) if feeding => {
                    ev.pl_state = PMCLOG_REQUIRE_DATA;
                    return Ok(false);
                }
                Ok(Step::NeedMore) if self.eof => {
                    ev.pl_state = PMCLOG_EOF;
                    return Ok(false);
                }
                Ok(Step::NeedMore) => {
                    chunk.resize(READ_CHUNK, 0);
                    match read_more(&mut chunk) {
                        Ok(0) => {
                            if let Err(e) = self.end_of_input() {
                                self.error = Some(e);
                            }
                        }
                        Ok(n) => self.give(chunk.get(..n).unwrap_or_default()),
                        Err(e) if e.errno == libc::EAGAIN => {
                            ev.pl_state = PMCLOG_REQUIRE_DATA;
                            return Ok(false);
                        }
                        Err(e) => {
                            self.error = Some(e);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmc_log::record::{Header, Record, UserData};

    const N: u32 = 20_000;

    /// A pmc-log of `N` userdata records, closed.
    fn pmc_log_file() -> Vec<u8> {
        let mut w = pmc_log::Writer::new(Vec::new(), &Header::default()).expect("writer");
        for i in 0..N {
            let data = i.to_le_bytes();
            w.write(&Record::UserData(UserData {
                time: u64::from(i),
                pid: 1,
                data: data[..].into(),
            }))
            .expect("write");
        }
        w.finish().expect("finish")
    }

    /// An hwpmc log of `N` userdata records, closed.
    fn hwpmc_file() -> Vec<u8> {
        let mut e = pmc_log::hwpmc::Encoder::new(Vec::new());
        e.initialize(0, 0x0A01_0000, 0, 1_000_000_000, 0, 0, "")
            .expect("encode");
        for i in 0..N {
            e.userdata(u64::from(i) * 1_000_000_000, i).expect("encode");
        }
        e.closelog(u64::from(N) + 1).expect("encode");
        e.into_inner()
    }

    fn no_read(_: &mut [u8]) -> Result<usize, CError> {
        Err(CError::new(libc::EBADF, "no descriptor"))
    }

    /// Reads every event: the USERDATA times (seconds for hwpmc's counter in
    /// `tv_sec`, nanoseconds for pmc-log's) and the final state. Between
    /// reads, `more` is asked for input while the parser wants it.
    fn read_all(
        p: &mut Parser,
        more: &mut dyn FnMut(&mut Parser) -> bool,
        read: &mut dyn FnMut(&mut [u8]) -> Result<usize, CError>,
    ) -> (Vec<u32>, u32) {
        let mut ev = empty_event();
        let mut values = Vec::new();
        loop {
            match p.next(&mut ev, read) {
                Ok(true) => {
                    if ev.pl_type == PMCLOG_TYPE_USERDATA {
                        let t = if ev.pl_ts.tv_nsec != 0 || ev.pl_ts.tv_sec == 0 {
                            ev.pl_ts.tv_nsec
                        } else {
                            ev.pl_ts.tv_sec / 1_000_000_000
                        };
                        values.push(u32::try_from(t).unwrap_or(u32::MAX));
                    }
                }
                Ok(false) if ev.pl_state == PMCLOG_REQUIRE_DATA && more(p) => {}
                Ok(false) | Err(_) => return (values, ev.pl_state),
            }
        }
    }

    #[test]
    fn fed_by_few_bytes_reads_what_a_descriptor_reads_for_both_formats() {
        let want: Vec<u32> = (0..N).collect();
        for file in [pmc_log_file(), hwpmc_file()] {
            // From a "descriptor", 4 KiB at a time.
            let mut p = Parser::new(3);
            let mut at = 0;
            let mut read = |buf: &mut [u8]| -> Result<usize, CError> {
                let n = buf.len().min(4096).min(file.len() - at);
                buf[..n].copy_from_slice(&file[at..at + n]);
                at += n;
                Ok(n)
            };
            let (got, state) = read_all(&mut p, &mut |_| false, &mut read);
            assert_eq!(state, PMCLOG_EOF);
            assert_eq!(got, want);
            // Fed 7 bytes at a time.
            let mut p = Parser::new(PMCLOG_FD_NONE);
            let mut fed = 0;
            let mut more = |p: &mut Parser| {
                if fed == file.len() {
                    return false;
                }
                let n = 7.min(file.len() - fed);
                p.feed(&file[fed..fed + n]).expect("feed");
                fed += n;
                true
            };
            let (got, state) = read_all(&mut p, &mut more, &mut no_read);
            assert_eq!(state, PMCLOG_EOF, "a fed log ends at its CLOSELOG");
            assert_eq!(got, want);
        }
    }

    #[test]
    fn a_descriptor_is_read_only_as_far_as_the_next_event_needs() {
        // A log still being written (a pipe from a live pmcstat) gives its
        // first events before its end: the parser does not read to the end.
        for file in [pmc_log_file(), hwpmc_file()] {
            let mut p = Parser::new(3);
            let mut ev = empty_event();
            let mut reads = 0;
            let mut at = 0;
            let mut read = |buf: &mut [u8]| -> Result<usize, CError> {
                reads += 1;
                let n = buf.len().min(file.len() - at);
                buf[..n].copy_from_slice(&file[at..at + n]);
                at += n;
                Ok(n)
            };
            for _ in 0..10 {
                assert_eq!(p.next(&mut ev, &mut read), Ok(true));
            }
            assert!(file.len() > 2 * READ_CHUNK, "the log spans several reads");
            assert_eq!(reads, 1, "10 events need one chunk of {} bytes", file.len());
        }
    }

    #[test]
    fn neither_format_is_an_error_not_a_wait() {
        let mut p = Parser::new(PMCLOG_FD_NONE);
        let mut ev = empty_event();
        p.feed(b"GIF89a....").expect("feed");
        assert!(p.next(&mut ev, &mut no_read).is_err());
        assert_eq!(ev.pl_state, PMCLOG_ERROR);
        // Final: every later read answers it.
        assert!(p.next(&mut ev, &mut no_read).is_err());
    }
}
