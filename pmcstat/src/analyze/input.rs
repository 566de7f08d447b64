//! The `-R` log as read: a regular file mapped (an hwpmc log converted in
//! memory) or streamed (a FIFO, socket, device, standard input, or an hwpmc
//! file converted as it is read), and [`Whole`], the log for the outputs
//! that read it more than once.

use std::path::{Path, PathBuf};

use crate::config::Analyze;
use crate::error::Failure;
use crate::logfile::MAX_LOG_SIZE;

use super::filter::ThreadFilter;
use super::{fail, needs_bytes, MAPPED_LOG};

/// A log to report on: mapped from a regular file, or (a FIFO, socket or device) a stream
/// read through the streaming reader with bounded memory.
pub enum Input {
    /// pmc-log bytes (a mapped pmc-log, or a converted hwpmc log).
    Bytes(pmc_analyze::file::Bytes),
    /// A log arriving through a FIFO, socket or device (or an hwpmc log file converted as it
    /// is read): pmc-log bytes as it is read.
    Stream(Stream),
}

/// A streamed log: pmc-log read as it comes, or an hwpmc log converted as it comes
/// ([`pmc_log::hwpmc::ConvertReader`]: bounded memory, whatever its size). `&Stream` reads
/// as `&File` does, so each report reads it through its own `BufReader`.
pub struct Stream {
    inner: std::cell::RefCell<StreamKind>,
    /// A regular file streamed (an hwpmc log): it can be read again from its start, so each
    /// output that reads the log gets a pass of its own, converted as it is read.
    reopen: Option<PathBuf>,
    /// The conversion's line was printed (by this stream's reader or a pass's).
    import_told: std::cell::Cell<bool>,
}

pub(super) enum StreamKind {
    /// pmc-log: the bytes read to tell the format, then the rest.
    PmcLog(std::io::Chain<std::io::Cursor<Vec<u8>>, std::fs::File>),
    /// hwpmc, converted as it is read.
    Hwpmc(
        Box<pmc_log::hwpmc::ConvertReader<std::io::Chain<std::io::Cursor<Vec<u8>>, std::fs::File>>>,
    ),
}

impl std::io::Read for &Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut *self.inner.borrow_mut() {
            StreamKind::PmcLog(r) => r.read(buf),
            StreamKind::Hwpmc(r) => r.read(buf),
        }
    }
}

impl Stream {
    /// Reads the first bytes of `f` to tell its format (without them the stream is empty, and
    /// read as an empty pmc-log).
    fn new(mut f: std::fs::File, shown: &std::path::Display<'_>) -> Result<Stream, Failure> {
        use std::io::Read;
        let mut head = Vec::with_capacity(4);
        (&mut f)
            .take(4)
            .read_to_end(&mut head)
            .map_err(|e| fail(format!("cannot read {shown}: {e}")))?;
        let hwpmc = pmc_log::detect(&head) == Some(pmc_log::LogFormat::Hwpmc);
        let r = std::io::Read::chain(std::io::Cursor::new(head), f);
        let kind = if hwpmc {
            StreamKind::Hwpmc(Box::new(pmc_log::hwpmc::ConvertReader::new(r)))
        } else {
            StreamKind::PmcLog(r)
        };
        Ok(Stream {
            inner: std::cell::RefCell::new(kind),
            reopen: None,
            import_told: std::cell::Cell::new(false),
        })
    }

    /// The same regular file again, from its start (`None` for a FIFO, socket or standard
    /// input, which can be read once only).
    fn reopen(&self) -> Option<Result<Stream, Failure>> {
        let path = self.reopen.as_deref()?;
        Some(open_file_stream(path))
    }

    /// For a converted hwpmc log, its conversion's line, once it has been read (a warning
    /// when it was damaged, even with -q, as for a converted file).
    pub fn report_import(&self, path: &Path) {
        self.report_import_of(self, path);
    }

    /// [`report_import`](Stream::report_import) of `pass`, a pass of this stream's file
    /// read to its end: once per log, whichever read it first.
    fn report_import_of(&self, pass: &Stream, path: &Path) {
        if self.import_told.get() {
            return;
        }
        if let StreamKind::Hwpmc(r) = &*pass.inner.borrow() {
            if let Some(report) = r.report() {
                import_line(path, report);
                self.import_told.set(true);
            }
        }
    }
}

/// Opens `path` for `-R`: a regular file is mapped (a hwpmc log converted); anything else is
/// opened without blocking on the open, then read as a stream: a pmc-log, or an hwpmc log
/// converted as it is read. Never an unbounded read into memory.
pub fn load(path: &Path) -> Result<Input, Failure> {
    load_with(path, false)
}

/// [`load`]; with `stream_hwpmc`, an hwpmc log in a regular file is streamed (converted as
/// it is read, in bounded memory) rather than converted whole in memory: for the reports
/// that read the log once.
pub fn load_with(path: &Path, stream_hwpmc: bool) -> Result<Input, Failure> {
    use pmc_analyze::file::{map_regular, open_regular};
    if path == Path::new("-") {
        return load_stdin();
    }
    let shown = path.display();
    // A FIFO (or socket, device) is opened once, by open_stream, never tried as a regular
    // file first: a reader that opens a FIFO and closes it again releases a writer blocked
    // in its open (`cat log > fifo &`), whose next write then fails with EPIPE, and the
    // log is lost; the second open then waits for a writer that is gone. The type is
    // checked again on the descriptor (open_regular, open_stream).
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return open_stream(path);
    }
    let file = match open_regular(path, MAX_LOG_SIZE) {
        Ok((f, _)) => f,
        Err(pmc_analyze::Error::Refused { .. }) => return open_stream(path),
        Err(e) => return Err(fail(format!("cannot read {e}"))),
    };
    let data = map_regular(path, MAX_LOG_SIZE).map_err(|e| fail(format!("cannot read {e}")))?;
    if stream_hwpmc && pmc_log::detect(&data) == Some(pmc_log::LogFormat::Hwpmc) {
        // Read through the mapping's file, converted as it is read.
        drop(data);
        let mut s = Stream::new(file, &shown)?;
        s.reopen = Some(path.to_path_buf());
        return Ok(Input::Stream(s));
    }
    if let Ok(mut m) = MAPPED_LOG.lock() {
        *m = Some(data.clone());
    }
    // The format by its magic (pmc_log::open_any): pmc-log stays mapped, hwpmc's is converted.
    let (out, report) = match pmc_log::open_any(&data) {
        Ok(pmc_log::AnyLog {
            bytes: std::borrow::Cow::Owned(out),
            import: Some(report),
            ..
        }) => (out, report),
        Ok(_) => return Ok(Input::Bytes(data)),
        Err(pmc_log::OpenError::Hwpmc(e)) => {
            return Err(fail(format!("{shown}: not a readable hwpmc log: {e}")))
        }
        Err(_) => {
            return Err(fail(format!(
                "{shown}: not a pmc log (neither pmc-log's magic nor a hwpmc log header)"
            )))
        }
    };
    import_line(path, &report);
    Ok(Input::Bytes(out.into()))
}

/// A regular file read as a stream from its start (an hwpmc log, converted as it is read).
pub(super) fn open_file_stream(path: &Path) -> Result<Stream, Failure> {
    let (file, _) = pmc_analyze::file::open_regular(path, MAX_LOG_SIZE)
        .map_err(|e| fail(format!("cannot read {e}")))?;
    let mut s = Stream::new(file, &path.display())?;
    s.reopen = Some(path.to_path_buf());
    Ok(s)
}

/// The line saying an hwpmc log was converted: a warning (even with -q) when it was damaged.
pub(super) fn import_line(path: &Path, report: &pmc_log::hwpmc::ImportReport) {
    let line = format!(
        "pmcstat: {}: FreeBSD hwpmc log converted ({})",
        path.display(),
        import_summary(report)
    );
    // A damaged log is worth a line even with -q.
    let damaged = report.unknown_types > 0
        || !report.skipped.is_empty()
        || report.skipped_unlisted > 0
        || !report.closed_cleanly;
    if damaged {
        diag!("{line}");
    } else {
        note!("{line}");
    }
}

/// `-R -`: the log on standard input, as `-O -` writes it. A regular file (`< log`) is
/// mapped as any `-R FILE`; a pipe, socket or terminal is streamed.
pub(super) fn load_stdin() -> Result<Input, Failure> {
    let f =
        crate::sys::stdin_file().map_err(|e| fail(format!("cannot read standard input: {e}")))?;
    if let Ok(id) = pmc_analyze::output::FileId::of(&f) {
        crate::dest::protect_id(id);
    }
    match f.metadata() {
        Ok(m) if m.is_file() => load(Path::new("/proc/self/fd/0")),
        _ => Ok(Input::Stream(Stream::new(
            f,
            &Path::new("standard input").display(),
        )?)),
    }
}

/// A FIFO, socket or character device: opened without blocking (a FIFO with no writer yet
/// cannot hang the open), then switched to blocking reads and streamed. A directory or a
/// file over [`MAX_LOG_SIZE`] is refused.
pub(super) fn open_stream(path: &Path) -> Result<Input, Failure> {
    use crate::sys::Readable;
    let shown = path.display();
    let f = crate::sys::open_nonblocking(path)
        .map_err(|e| fail(format!("cannot read {shown}: {e}")))?;
    let meta = f
        .metadata()
        .map_err(|e| fail(format!("cannot read {shown}: {e}")))?;
    let t = meta.file_type();
    if !crate::sys::is_stream(&t) {
        return Err(fail(format!(
            "{shown}: {} is not a log; -R reads a regular file, FIFO, socket or character device",
            pmc_analyze::file::file_kind(&meta)
        )));
    }
    if crate::sys::is_fifo(&t) {
        // A FIFO opened for reading before any writer reads as end-of-file. Wait, as `cat`
        // does, until a writer has come: poll reports POLLIN when data is there, and POLLHUP
        // only once a writer has come and gone (pipe_poll compares the writer count with the
        // one at open), never before the first writer. Then read it blocking, on the same
        // descriptor: reopening the path would block for a writer that may already have
        // written everything and closed (the data stays in the pipe only while it is open).
        loop {
            match crate::sys::wait_readable(&f) {
                Ok(Readable::Ready) => break,
                Ok(Readable::Interrupted) if crate::run::stop_signal().is_some() => {
                    return Err(fail(format!(
                        "{shown}: interrupted while waiting for a writer"
                    )))
                }
                Ok(Readable::NotYet | Readable::Interrupted) => continue,
                Err(e) => return Err(fail(format!("cannot read {shown}: {e}"))),
            }
        }
    }
    // Reads block from here on: the stream ends when its writer closes it.
    crate::sys::set_blocking(&f).map_err(|e| fail(format!("{shown}: {e}")))?;
    Ok(Input::Stream(Stream::new(f, &shown)?))
}

/// The hwpmc importer's report, one readable line.
pub(super) fn import_summary(r: &pmc_log::hwpmc::ImportReport) -> String {
    let mut s = format!(
        "{} kernel records read, {} pmc-log records written",
        r.records_in, r.records_out
    );
    if r.unknown_types > 0 {
        s.push_str(&format!(", {} of unknown type skipped", r.unknown_types));
    }
    let regions = r.skipped.len() as u64 + r.skipped_unlisted;
    if regions > 0 {
        s.push_str(&format!(
            ", {} bytes skipped in {regions} damaged regions",
            r.skipped_bytes()
        ));
        for k in &r.skipped {
            s.push_str(&format!(
                "; {} bytes at offset {}: {}",
                k.len, k.offset, k.reason
            ));
        }
    }
    if !r.closed_cleanly {
        s.push_str(", no CLOSELOG record (the log was cut or is still being written)");
    }
    s
}

/// A log that holds no readable record and damaged bytes is not a log that happens to be
/// empty: an error (exit 1), before any report is written. One record is enough to go on
/// (the reader stops at the first).
pub(super) fn nothing_but_damage(b: &[u8], path: &Path) -> Result<(), Failure> {
    let Ok(reader) = pmc_log::Reader::new(b) else {
        return Ok(()); // Not a pmc-log: the outputs say what it is.
    };
    let mut it = reader.records();
    if it.next().is_some() {
        return Ok(());
    }
    damage_only(&it.into_report(), path)
}

/// The error of a read that found damage and no record.
pub(super) fn damage_only(report: &pmc_log::ReadReport, path: &Path) -> Result<(), Failure> {
    if report.records > 0 || report.skipped_bytes() == 0 {
        return Ok(());
    }
    Err(fail(format!(
        "{}: no readable record in the log, only damage ({report})",
        path.display()
    )))
}

/// The log for an output that reads it through (`-m`, `-a`, `--pprof`, `--perf-data`,
/// `--script`): mapped bytes, or a regular file streamed (an hwpmc log), which each such
/// output reads again from its start; `None` when none of them is asked for.
pub(super) enum Whole<'a> {
    /// pmc-log bytes (a mapped log, its thread filter applied already).
    Bytes(&'a [u8]),
    /// A regular file read as a stream: each pass opens it again, with its own `-i` filter.
    Passes(&'a Stream, Option<u32>, &'a Path),
}

pub(super) fn whole_log<'a>(
    input: &'a Input,
    path: &'a Path,
    args: &Analyze,
) -> Result<Option<Whole<'a>>, Failure> {
    match input {
        Input::Bytes(b) => Ok(Some(Whole::Bytes(b))),
        Input::Stream(s) if needs_bytes(args) && s.reopen.is_some() => {
            Ok(Some(Whole::Passes(s, args.thread, path)))
        }
        Input::Stream(_) if needs_bytes(args) => Err(Failure::Usage(format!(
            "{}: -m, -a, --pprof, --perf-data and --script read a regular file, not a stream",
            path.display()
        ))),
        Input::Stream(_) => Ok(None),
    }
}

impl Whole<'_> {
    /// Hands `f` every record of the log (of the `-i` thread), from its start; returns the
    /// reader's report.
    pub(super) fn each_record(
        &self,
        f: &mut dyn FnMut(&pmc_log::record::Record<'_>) -> std::io::Result<()>,
    ) -> std::io::Result<pmc_log::ReadReport> {
        let bad = |e: pmc_log::ReadError| std::io::Error::other(e.to_string());
        match self {
            Whole::Bytes(b) => {
                let reader = pmc_log::Reader::new(b).map_err(bad)?;
                let mut it = reader.records();
                for r in it.by_ref() {
                    f(&r)?;
                }
                Ok(it.into_report())
            }
            Whole::Passes(s, tid, path) => {
                let pass = match s.reopen() {
                    Some(Ok(p)) => p,
                    _ => return Err(std::io::Error::other("the log cannot be read again")),
                };
                let mut filter = tid.map(ThreadFilter::new);
                let mut reader = pmc_log::StreamReader::new(std::io::BufReader::new(&pass))
                    .map_err(bad)?
                    .to_end();
                while let Some(r) = reader.next_record().map_err(bad)? {
                    if filter.as_mut().is_some_and(|t| !t.keep(&r)) {
                        continue;
                    }
                    f(&r)?;
                }
                let report = reader.finish();
                // The conversion's line (a warning when the log was damaged), once per log.
                s.report_import_of(&pass, path);
                Ok(report)
            }
        }
    }
}
