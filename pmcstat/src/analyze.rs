//! `-R file`: reading a log (ours or FreeBSD hwpmc's) and reporting on it:
//! the record listing (pmcstat(8)'s lines, or `--dump`/`--json`), `-G` call
//! graph, `-g` gmon files, `-F` callgrind file, `-m`/`-a` listings,
//! `--folded`, `--flamegraph`, `--pprof`, and a top-N summary (text,
//! `--json` or `-x` CSV).

use crate::cli::CallgraphOrder;
use crate::config::Analyze;
use crate::dest::{write_outcome, Checked, Dest};
use crate::error::Failure;
use crate::logfile::MAX_LOG_SIZE;
use crate::output::document;
use pmc::{Error, ErrorKind, Op};
use pmc_analyze::annotate::{Listing, ListingWriter};
use pmc_analyze::callgraph::{write_callgraph, CallGraphOptions, Order};
use pmc_analyze::callgrind::{write_callgrind, CallgrindOptions};
use pmc_analyze::flame::{write_flamegraph, write_folded, FlameGraphOptions, FoldedOptions};
use pmc_analyze::gmon::{write_gmon, GmonOptions};
use pmc_analyze::top::{TopOptions, TopReport};
use pmc_analyze::{AnalyzeOptions, KernelSymbols, Profile};
use std::io::Write;
use std::path::{Path, PathBuf};

fn fail(what: String) -> Failure {
    Failure::Setup(Error::new(ErrorKind::Os, Op::Log, what))
}

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

enum StreamKind {
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
fn open_file_stream(path: &Path) -> Result<Stream, Failure> {
    let (file, _) = pmc_analyze::file::open_regular(path, MAX_LOG_SIZE)
        .map_err(|e| fail(format!("cannot read {e}")))?;
    let mut s = Stream::new(file, &path.display())?;
    s.reopen = Some(path.to_path_buf());
    Ok(s)
}

/// The line saying an hwpmc log was converted: a warning (even with -q) when it was damaged.
fn import_line(path: &Path, report: &pmc_log::hwpmc::ImportReport) {
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
fn load_stdin() -> Result<Input, Failure> {
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

/// `-i TID`: what the thread filter kept.
#[derive(Debug, Default)]
pub struct ThreadFilter {
    /// The thread.
    pub tid: i32,
    /// Samples in the log.
    pub samples: u64,
    /// Samples of the thread.
    pub kept: u64,
    /// The threads with the most samples: (tid, samples).
    others: std::collections::HashMap<i32, u64>,
}

impl ThreadFilter {
    pub fn new(tid: u32) -> ThreadFilter {
        ThreadFilter {
            tid: i32::try_from(tid).unwrap_or(i32::MAX),
            ..Default::default()
        }
    }

    /// Whether `-i` keeps the record: every record but the samples and the per-thread
    /// (context-switch) counts of other threads.
    pub fn keep(&mut self, r: &pmc_log::record::Record<'_>) -> bool {
        use pmc_log::record::{CounterKind, Record};
        match r {
            Record::Sample(s) => {
                self.samples += 1;
                if s.tid == self.tid {
                    self.kept += 1;
                    true
                } else {
                    if self.others.len() < 100_000 {
                        *self.others.entry(s.tid).or_default() += 1;
                    }
                    false
                }
            }
            Record::Counter(c) if c.kind == CounterKind::ContextSwitch => c.tid == self.tid,
            _ => true,
        }
    }

    /// Says how many samples were kept: a note, or, when none were, a warning naming the
    /// threads that have samples.
    pub fn report(&self) {
        let tid = self.tid;
        if self.kept > 0 || self.samples == 0 {
            note!(
                "pmcstat: -i {tid}: {} of {} samples are from thread {tid}",
                self.kept,
                self.samples
            );
            return;
        }
        let mut top: Vec<(i32, u64)> = self.others.iter().map(|(t, n)| (*t, *n)).collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let shown: Vec<String> = top
            .iter()
            .take(8)
            .map(|(t, n)| format!("{t} ({n})"))
            .collect();
        diag!(
            "pmcstat: warning: -i {tid}: none of the {} samples is from thread {tid}; the \
             threads with samples are {}",
            self.samples,
            shown.join(", ")
        );
    }
}

/// `-i TID` on a log in memory: the log rewritten without the other threads' samples.
pub fn filter_thread(log: &[u8], filter: &mut ThreadFilter) -> Result<Vec<u8>, Failure> {
    use pmc_log::record::Record;
    let reader = pmc_log::Reader::new(log).map_err(|e| fail(format!("-i: {e}")))?;
    let header = reader.header().unwrap_or_default();
    let write = |e: pmc_log::WriteError| fail(format!("-i: cannot filter the log: {e}"));
    // Out of memory for the rewrite is an error with a message, not an abort.
    let mut w = pmc_log::Writer::new(pmc_log::TryVec::new(), &header).map_err(write)?;
    let mut it = reader.records();
    let mut closed = None;
    for r in it.by_ref() {
        match &r {
            Record::Header(_) => {}
            Record::Close(c) => closed = Some(c.time),
            _ if filter.keep(&r) => w.write(&r).map_err(write)?,
            _ => {}
        }
    }
    let report = it.into_report();
    if !report.is_clean() {
        diag!("pmcstat: warning: the log: {report}");
    }
    match closed {
        Some(t) => w.finish_at(t),
        None => w.into_inner_unclosed(),
    }
    .map(pmc_log::TryVec::into_inner)
    .map_err(write)
}

/// A FIFO, socket or character device: opened without blocking (a FIFO with no writer yet
/// cannot hang the open), then switched to blocking reads and streamed. A directory or a
/// file over [`MAX_LOG_SIZE`] is refused.
fn open_stream(path: &Path) -> Result<Input, Failure> {
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
fn import_summary(r: &pmc_log::hwpmc::ImportReport) -> String {
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

fn create(path: &Path) -> Result<Dest, Failure> {
    if path == Path::new("-") {
        return Ok(Dest::Stream(crate::dest::stdout_stream()));
    }
    crate::dest::create_private_file(path)
        .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))
}

/// `-` or a path, for messages.
fn named(path: &Path) -> String {
    if path == Path::new("-") {
        "standard output".into()
    } else {
        path.display().to_string()
    }
}

/// Writes one report to `path` (`-`: standard output) and checks every write and the final
/// flush: a failure is an error naming the file (exit 1); a closed pipe ends quietly.
fn report_to(
    path: &Path,
    what: &str,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), Failure> {
    let mut out = Checked::new(create(path)?);
    let r = write(&mut out);
    let end = out.finish();
    // The writer's own error (ENOSPC, EPIPE) first: a report writer may wrap it. Only a
    // whole report is put in place (renamed over the file's name).
    let done = end.and(r).and_then(|()| out.get_mut().commit());
    write_outcome(done, &format!("{what} to {}", named(path)))
}

/// The analysis crate's error as an I/O error (its `Write` variant unwrapped).
fn io_error(e: impl Into<pmc_analyze::Error>) -> std::io::Error {
    match e.into() {
        pmc_analyze::Error::Write(io) => io,
        e => std::io::Error::other(e),
    }
}

/// The analysis options of `-R`: object paths under `-r DIR` when given,
/// kernel symbols from `-k KERNELDIR` when given.
pub fn analyze_options(args: &Analyze) -> AnalyzeOptions {
    let mut o = AnalyzeOptions::default();
    o.symbolize.root.clone_from(&args.fsroot);
    if let Some(dir) = &args.kernel_dir {
        o.symbolize.kernel = kernel_symbols(dir).0;
    }
    o
}

/// `-k KERNELDIR`: `DIR/kallsyms`, else `DIR/vmlinux`, or the file given.
/// A directory with neither: kernel symbols off, and the warning to print.
fn kernel_symbols(dir: &Path) -> (KernelSymbols, Option<String>) {
    if !dir.is_dir() {
        // A kallsyms copy or a vmlinux; if it cannot be read, the symbolizer says so.
        return (KernelSymbols::File(dir.to_path_buf()), None);
    }
    let candidates = ["kallsyms", "vmlinux"].map(|n| dir.join(n));
    if let Some(p) = candidates.iter().find(|p| p.is_file()) {
        return (KernelSymbols::File(p.clone()), None);
    }
    // There but not a regular file (a device, a FIFO, a directory): say what it is.
    if let Some((p, m)) = candidates
        .iter()
        .find_map(|p| std::fs::metadata(p).ok().map(|m| (p, m)))
    {
        return (
            KernelSymbols::Disabled,
            Some(format!(
                "-k {}: {} is {}, not a regular file: kernel frames are left unresolved (copy \
                 the symbols into a file there, e.g. cp /proc/kallsyms {})",
                dir.display(),
                p.display(),
                pmc_analyze::file::file_kind(&m),
                dir.display()
            )),
        );
    }
    let looked: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
    (
        KernelSymbols::Disabled,
        Some(format!(
            "-k {}: no kernel symbols there (looked for {}): kernel frames are left unresolved",
            dir.display(),
            looked.join(" and ")
        )),
    )
}

/// `-k`'s warning, once per run, when its directory has no kernel symbols.
pub fn warn_kernel_dir(args: &Analyze) {
    if let Some((_, Some(w))) = args.kernel_dir.as_deref().map(kernel_symbols) {
        diag!(
            "pmcstat: warning: {}",
            pmc_log::escape::escape(&w.to_string())
        );
    }
}

/// A log recorded with `--call-graph dwarf-raw` keeps each sample's user stack in a
/// `UserStack` record: unwind them now (objects under `-r DIR` when given), with the code
/// the recorder uses for `--call-graph dwarf`, and give the log with callchains only.
/// `None` when the log has no stacks.
pub fn unwind_stacks(log: &[u8], args: &Analyze) -> Result<Option<Vec<u8>>, Failure> {
    let Ok(reader) = pmc_log::Reader::new(log) else {
        return Ok(None);
    };
    if !reader
        .records()
        .any(|r| matches!(r, pmc_log::record::Record::UserStack(_)))
    {
        return Ok(None);
    }
    let unwinder = pmc_unwind::Unwinder::new().with_root(args.fsroot.clone());
    let (out, report) = pmc_unwind::log::unwind_log(log, unwinder)
        .map_err(|e| fail(format!("cannot unwind the log's stacks: {e}")))?;
    note!(
        "pmcstat: {} samples unwound from the log's stacks, {} stopped before the stack's root \
         (shown as [truncated]){}",
        report.unwound,
        report.truncated,
        if report.skipped > 0 {
            format!(
                ", {} stacks of another architecture or without their sample left as recorded",
                report.skipped
            )
        } else {
            String::new()
        }
    );
    for r in &report.refused {
        diag!(
            "pmcstat: warning: no unwinding through {}",
            pmc_log::escape::escape(&r.to_string())
        );
    }
    // The rewrite is a clean log whatever the input was: the input's damage is told here,
    // even with -q, as a damaged hwpmc log's conversion is (FORMAT.md: every skipped region
    // is reported).
    if !report.read.is_clean() {
        diag!("pmcstat: warning: the log: {}", report.read);
    }
    Ok(Some(out))
}

/// Runs `-R`.
pub fn run(args: &Analyze) -> Result<u8, Failure> {
    let r = run_reports(args);
    // A log truncated while mapped reads as zeros past the cut (pmc_analyze::file::Bytes):
    // the reports above end there, and say why.
    let cut = MAPPED_LOG
        .lock()
        .ok()
        .and_then(|m| m.as_ref().and_then(|b| b.cut()));
    if let (Some(cut), Some(path)) = (cut, args.read_log.as_deref()) {
        diag!(
            "pmcstat: warning: {}: the log was truncated while being read: from byte {cut} on \
             it read as zeros, so its records after that offset are missing from the reports",
            path.display()
        );
    }
    r
}

/// The mapped `-R` log, kept to ask it at the end whether it was truncated while read.
static MAPPED_LOG: std::sync::Mutex<Option<pmc_analyze::file::Bytes>> = std::sync::Mutex::new(None);

fn run_reports(args: &Analyze) -> Result<u8, Failure> {
    let Some(path) = args.read_log.as_deref() else {
        return Err(Failure::Usage("-R needs a file".into()));
    };
    // No output may replace the log being read (same device and inode, any name).
    crate::dest::protect(path);
    let (input, mut thread) = read_input(path, args)?;
    if let Input::Bytes(b) = &input {
        nothing_but_damage(b, path)?;
    }
    let r = run_input(&input, path, args, &mut thread);
    if let Input::Stream(s) = &input {
        s.report_import(path);
    }
    r
}

/// A log that holds no readable record and damaged bytes is not a log that happens to be
/// empty: an error (exit 1), before any report is written. One record is enough to go on
/// (the reader stops at the first).
fn nothing_but_damage(b: &[u8], path: &Path) -> Result<(), Failure> {
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
fn damage_only(report: &pmc_log::ReadReport, path: &Path) -> Result<(), Failure> {
    if report.records > 0 || report.skipped_bytes() == 0 {
        return Ok(());
    }
    Err(fail(format!(
        "{}: no readable record in the log, only damage ({report})",
        path.display()
    )))
}

/// Runs `-R`'s reports over the log.
fn run_input(
    input: &Input,
    path: &Path,
    args: &Analyze,
    thread: &mut Option<ThreadFilter>,
) -> Result<u8, Failure> {
    let stdout = PathBuf::from("-");
    let out_path = args.output.as_deref().unwrap_or(&stdout);
    let log = whole_log(input, path, args)?;
    write_listings(args, &log, out_path)?;
    if !wants_reports(args) {
        // As pmcstat -R alone: one line per record.
        dump_records(input, path, args, thread.as_mut(), out_path)?;
        return Ok(0);
    }
    if let (Some(to), Some(log)) = (&args.perf_data, &log) {
        write_perf_data(log, path, to)?;
    }
    if (args.perf_data.is_some() || args.script) && no_listing_nor_profile(args) {
        return Ok(0);
    }
    if let (Some(p), Some(log)) = (&args.pprof, &log) {
        let only = args.callgraph.is_none()
            && args.folded.is_none()
            && args.flamegraph.is_none()
            && args.calltree.is_none()
            && !args.gprof
            && !args.summary;
        write_pprof(log, path, p, only, analyze_options(args))?;
        if only {
            return Ok(0);
        }
    }
    let profile = build_profile(input, path, args, thread.as_mut())?;
    write_profile_reports(&profile, args, out_path)?;
    Ok(0)
}

/// The `-R` log, its stacks unwound (`--call-graph dwarf-raw` logs) and, with `-i TID`,
/// its other threads' samples left out (a stream is filtered as it is read: the filter is
/// returned).
fn read_input(path: &Path, args: &Analyze) -> Result<(Input, Option<ThreadFilter>), Failure> {
    // An hwpmc log file is streamed through its conversion, in bounded memory: each output
    // that reads the log has a pass of its own over the file (issue 21, item 12).
    let mut input = load_with(path, true)?;
    if let Input::Bytes(b) = &input {
        if let Some(unwound) = unwind_stacks(b, args)? {
            input = Input::Bytes(unwound.into());
        }
    }
    warn_kernel_dir(args);
    let mut thread = args.thread.map(ThreadFilter::new);
    if let (Some(f), Input::Bytes(b)) = (thread.as_mut(), &input) {
        input = Input::Bytes(filter_thread(b, f)?.into());
        f.report();
    }
    Ok((input, thread))
}

/// Whether an output reads the log more than once (`-m`, `-a`, `--pprof`, `--perf-data`,
/// `--script`): it is then needed whole.
fn needs_bytes(args: &Analyze) -> bool {
    args.annotate_pcs.is_some()
        || args.annotate_callchains.is_some()
        || args.pprof.is_some()
        || args.perf_data.is_some()
        || args.script
}

/// The log for an output that reads it through (`-m`, `-a`, `--pprof`, `--perf-data`,
/// `--script`): mapped bytes, or a regular file streamed (an hwpmc log), which each such
/// output reads again from its start; `None` when none of them is asked for.
enum Whole<'a> {
    /// pmc-log bytes (a mapped log, its thread filter applied already).
    Bytes(&'a [u8]),
    /// A regular file read as a stream: each pass opens it again, with its own `-i` filter.
    Passes(&'a Stream, Option<u32>, &'a Path),
}

fn whole_log<'a>(
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
    fn each_record(
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

/// `-m`, `-a` and `--script`: the listings of the log, each with a note on what had no
/// symbol.
fn write_listings(args: &Analyze, log: &Option<Whole<'_>>, out_path: &Path) -> Result<(), Failure> {
    let script = args.script.then(|| out_path.to_path_buf());
    let listings = [
        (&args.annotate_pcs, Listing::SampledPcs, "-m"),
        (&args.annotate_callchains, Listing::Callchains, "-a"),
        (&script, Listing::Script, "--script"),
    ];
    for (file, kind, flag) in listings {
        let (Some(file), Some(log)) = (file, log.as_ref()) else {
            continue;
        };
        let mut stats = None;
        report_to(file, &format!("the {flag} listing"), |out| {
            let mut w = ListingWriter::new(kind, analyze_options(args).symbolize);
            log.each_record(&mut |r| w.add(r, &mut &mut *out))?;
            stats = Some(w.stats().clone());
            Ok(())
        })?;
        if let Some(stats) = stats.filter(|s| s.unresolved > 0) {
            let what = match kind {
                Listing::SampledPcs => "samples have no symbol and are not listed",
                Listing::Callchains => "callchain nodes have no symbol (listed as <unknown>)",
                Listing::Script => "frames have no symbol (printed as [unknown])",
            };
            let of = if kind == Listing::SampledPcs {
                stats.samples
            } else {
                stats.lines
            };
            note!("pmcstat: {flag}: {} of {of} {what}", stats.unresolved);
        }
    }
    Ok(())
}

/// Whether any output other than the record dump was asked for.
fn wants_reports(args: &Analyze) -> bool {
    args.callgraph.is_some()
        || args.script
        || args.annotate_pcs.is_some()
        || args.annotate_callchains.is_some()
        || args.gprof
        || args.calltree.is_some()
        || args.folded.is_some()
        || args.flamegraph.is_some()
        || args.pprof.is_some()
        || args.perf_data.is_some()
        || args.summary
}

/// pmcstat -R alone: one line per record (or JSON), and what was wrong with the log.
fn dump_records(
    input: &Input,
    path: &Path,
    args: &Analyze,
    mut thread: Option<&mut ThreadFilter>,
    out_path: &Path,
) -> Result<(), Failure> {
    let mut report = None;
    report_to(out_path, "the record dump", |out| {
        report = Some(dump(input, path, args, thread.as_deref_mut(), out)?);
        Ok(())
    })?;
    if let (Input::Stream(_), Some(f)) = (input, &thread) {
        f.report();
    }
    if let Some(report) = report.filter(|r| !r.is_clean()) {
        // A stream is known to be nothing but damage once read through.
        damage_only(&report, path)?;
        diag!("pmcstat: {}: {report}", path.display());
    }
    Ok(())
}

/// Whether no profile is asked for: no listing (`-m`, `-a`) and no report built from
/// the profile (the conversions `--perf-data` and `--script` are then all there is).
fn no_listing_nor_profile(args: &Analyze) -> bool {
    let others = args.pprof.is_some()
        || args.callgraph.is_some()
        || args.folded.is_some()
        || args.flamegraph.is_some()
        || args.calltree.is_some()
        || args.gprof
        || args.summary;
    let no_listings = args.annotate_pcs.is_none() && args.annotate_callchains.is_none();
    no_listings && !others
}

/// Prints the analysis' warnings, each on a line (escaped). With `-q`,
/// the warnings about single objects (unreadable, another build, cut, outside the root: a
/// log may name 100,000 of them) are one counted line; the log's own (lost samples,
/// damage) are printed each.
fn print_warnings(warnings: &[pmc_analyze::Warning]) {
    use pmc_analyze::Warning as W;
    let per_object = |w: &&W| {
        matches!(
            w,
            W::ObjectUnreadable { .. }
                | W::BuildIdMismatch { .. }
                | W::BuildIdUnverified { .. }
                | W::TruncatedObject { .. }
                | W::OutsideRoot { .. }
                | W::DebugSectionSkipped { .. }
        )
    };
    let objects = warnings.iter().filter(per_object).count();
    let collapse = crate::diag::quiet() && objects > 1;
    // A warning is one line: its names' line breaks escaped too.
    let line = |w: &W| pmc_log::escape::escape(&w.to_string()).into_owned();
    for w in warnings.iter().filter(|w| !collapse || !per_object(w)) {
        diag!("pmcstat: warning: {}", line(w));
    }
    if let Some(first) = warnings.iter().find(per_object).filter(|_| collapse) {
        let first = line(first);
        diag!(
            "pmcstat: warning: {objects} objects the log names were not used as asked (the \
             first: {first}); without -q each is listed"
        );
    }
}

/// The symbolized profile of the log (of the `-i` thread), its warnings printed.
fn build_profile(
    input: &Input,
    path: &Path,
    args: &Analyze,
    thread: Option<&mut ThreadFilter>,
) -> Result<Profile, Failure> {
    let opts = AnalyzeOptions {
        keep_pcs: args.gprof,
        ..analyze_options(args)
    };
    let profile = match (input, thread) {
        (Input::Bytes(b), _) => Profile::from_log(b, opts),
        (Input::Stream(f), None) => Profile::from_stream(std::io::BufReader::new(f), opts),
        (Input::Stream(f), Some(filter)) => {
            let p = profile_of_thread(f, opts, filter);
            filter.report();
            p
        }
    }
    .map_err(|e| fail(format!("{}: {e}", path.display())))?;
    print_warnings(&profile.warnings);
    Ok(profile)
}

/// The reports built from the profile, in this order: `-G`, `-g`, `-F`, folded stacks,
/// the flame graph, the summary.
fn write_profile_reports(
    profile: &Profile,
    args: &Analyze,
    out_path: &Path,
) -> Result<(), Failure> {
    if let Some(g) = &args.callgraph {
        let opts = CallGraphOptions {
            max_depth: args.depth.unwrap_or(16),
            order: match args.callgraph_order {
                CallgraphOrder::Callee => Order::Callees,
                CallgraphOrder::Caller => Order::Callers,
            },
            ..Default::default()
        };
        report_to(g, "the call graph", |out| {
            write_callgraph(profile, &opts, &mut &mut *out).map_err(io_error)
        })?;
    }
    if args.gprof {
        write_gprof(profile, args)?;
    }
    if let Some(c) = &args.calltree {
        let opts = CallgrindOptions {
            command: (!profile.comms.is_empty()).then(|| profile.comms.join(" ")),
            ..Default::default()
        };
        report_to(c, "the callgrind file", |out| {
            write_callgrind(profile, &opts, &mut &mut *out)
        })?;
    }
    if let Some(f) = &args.folded {
        report_to(f, "folded stacks", |out| {
            write_folded(profile, &FoldedOptions::default(), &mut &mut *out).map_err(io_error)
        })?;
    }
    if let Some(svg) = &args.flamegraph {
        report_to(svg, "the flame graph", |out| {
            write_flamegraph(profile, &FlameGraphOptions::default(), &mut &mut *out)
                .map_err(io_error)
        })?;
    }
    if args.summary {
        write_summary(profile, args, out_path)?;
    }
    Ok(())
}

/// `-g`: the gmon files, one per PMC and object, and what went into none.
fn write_gprof(profile: &Profile, args: &Analyze) -> Result<(), Failure> {
    let opts = GmonOptions {
        dir: args
            .samples_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(".")),
        max_depth: args.depth.unwrap_or(16),
        output: crate::dest::private_options(),
    };
    let report = write_gmon(profile, &opts)
        .map_err(|e| Failure::Output(format!("writing the gmon files: {e}")))?;
    for f in &report.files {
        note!(
            "pmcstat: {}: {} samples of {} in {}{}",
            pmc_log::escape::escape(&f.path.display().to_string()),
            f.samples,
            f.pmc,
            pmc_log::escape::escape(&f.object),
            if f.overflowed {
                " (some counters saturated at 65535)"
            } else {
                ""
            }
        );
    }
    if report.files.is_empty() {
        diag!("pmcstat: -g: no samples in any object file; no gmon file written");
    }
    if report.unattributed > 0 {
        note!(
            "pmcstat: -g: {} samples outside any object file (kernel through kallsyms, [vdso], \
             unmapped) are in no gmon file",
            report.unattributed
        );
    }
    for (object, why) in &report.skipped {
        diag!(
            "pmcstat: -g: {}: {}",
            pmc_log::escape::escape(object),
            pmc_log::escape::escape(why)
        );
    }
    Ok(())
}

/// `--summary`: the top functions and objects, as text, `--json` or `--csv`.
fn write_summary(profile: &Profile, args: &Analyze, out_path: &Path) -> Result<(), Failure> {
    let top = TopReport::build(
        profile,
        &TopOptions {
            limit: args.top,
            ..Default::default()
        },
    );
    report_to(out_path, "the summary", |out| {
        document::write(&args.format, &Summary(&top), out)
    })
}

/// `--summary`'s document: the top tables.
struct Summary<'a>(&'a TopReport);

impl document::Document for Summary<'_> {
    fn text(&self, mut o: &mut dyn Write) -> std::io::Result<()> {
        self.0.write_text(&mut o)
    }
    fn json(&self, mut o: &mut dyn Write) -> std::io::Result<()> {
        self.0.write_json(&mut o).map_err(io_error)
    }
    /// RFC 4180 rows with commas (pmc-analyze's `TopReport::write_csv`), whatever `-x` says.
    fn csv(&self, mut o: &mut dyn Write, _sep: &str) -> std::io::Result<()> {
        self.0.write_csv(&mut o)
    }
}

/// `-i TID` on a streamed log: the profile of the thread's samples, with bounded memory.
fn profile_of_thread(
    f: &Stream,
    opts: AnalyzeOptions,
    filter: &mut ThreadFilter,
) -> pmc_analyze::Result<Profile> {
    let mut b = pmc_analyze::ProfileBuilder::new(opts);
    let mut reader = pmc_log::StreamReader::new(std::io::BufReader::new(f))?.to_end();
    while let Some(r) = reader.next_record()? {
        if filter.keep(&r) {
            b.add(&r);
        }
    }
    b.set_read_report(&reader.finish());
    Ok(b.finish())
}

/// `--perf-data FILE`: the log as a perf.data file (pmc-log's exporter), with
/// the number of samples written and anything the reader skipped.
fn write_perf_data(log: &Whole<'_>, path: &Path, to: &Path) -> Result<(), Failure> {
    use pmc_log::export::perf_data::PerfDataWriter;
    use pmc_log::record::{Header, Record};
    let mut samples = 0;
    let mut report = None;
    report_to(to, "the perf.data file", |out| {
        // The log's header comes first; a log without one gets perf's defaults.
        let mut p: Option<PerfDataWriter> = None;
        let read = log.each_record(&mut |r| {
            let w = p.get_or_insert_with(|| match r {
                Record::Header(h) => PerfDataWriter::new(h),
                _ => PerfDataWriter::new(&Header::default()),
            });
            w.add(r);
            Ok(())
        });
        let read = read.map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))?;
        let p = p.unwrap_or_else(|| PerfDataWriter::new(&Header::default()));
        samples = p.samples();
        p.finish(&mut &mut *out)?;
        report = Some(read);
        Ok(())
    })?;
    let report = report.unwrap_or_default();
    note!(
        "pmcstat: {}: {samples} samples written as perf.data{}",
        to.display(),
        if report.is_clean() {
            String::new()
        } else {
            format!(" ({report})")
        }
    );
    Ok(())
}

/// `--pprof FILE`: the log as a gzipped pprof profile. Its warnings are
/// printed when no other report (which prints the same ones) is asked for.
fn write_pprof(
    log: &Whole<'_>,
    path: &Path,
    to: &Path,
    warn: bool,
    opts: AnalyzeOptions,
) -> Result<(), Failure> {
    let mut b = pmc_analyze::pprof::PprofBuilder::new(opts);
    let report = log
        .each_record(&mut |r| {
            b.add(r);
            Ok(())
        })
        .map_err(|e| fail(format!("{}: {e}", path.display())))?;
    b.set_read_report(&report);
    let export = b.finish();
    if warn {
        print_warnings(&export.warnings);
    }
    report_to(to, "the pprof profile", |out| {
        export.write_gzip(&mut &mut *out).map_err(io_error)
    })
}

/// The record dump (text or JSON Lines) of a mapped or streamed log; returns the reader's
/// report.
fn dump(
    input: &Input,
    path: &Path,
    args: &Analyze,
    mut thread: Option<&mut ThreadFilter>,
    out: &mut dyn Write,
) -> std::io::Result<pmc_log::ReadReport> {
    let bad = |e: pmc_log::ReadError| std::io::Error::other(format!("{}: {e}", path.display()));
    let write = document::record_writer(&args.format, args.dump);
    match input {
        Input::Bytes(b) => {
            let reader = pmc_log::Reader::new(b).map_err(bad)?;
            let mut it = reader.records();
            for r in &mut it {
                write(&r, &mut *out)?;
            }
            Ok(it.into_report())
        }
        Input::Stream(f) => {
            let mut reader = pmc_log::StreamReader::new(std::io::BufReader::new(f))
                .map_err(bad)?
                .to_end();
            while let Some(r) = reader.next_record().map_err(bad)? {
                if thread.as_mut().is_some_and(|f| !f.keep(&r)) {
                    continue;
                }
                write(&r, &mut *out)?;
            }
            Ok(reader.finish())
        }
    }
}

/// `-R FILE -T`: the top view, replayed from the log.
pub fn run_top(args: &Analyze) -> Result<u8, Failure> {
    let path = args
        .read_log
        .as_deref()
        .unwrap_or(std::path::Path::new("-"));
    // An hwpmc file is converted as it is read, as a FIFO or standard input is read:
    // the replay reads the log once, front to back.
    let log = load_with(path, true)?;
    let refresh = args.interval.map_or(
        crate::top::DEFAULT_REFRESH,
        std::time::Duration::from_secs_f64,
    );
    warn_kernel_dir(args);
    let failed = |e: std::io::Error| {
        Failure::Setup(pmc::Error::new(
            pmc::ErrorKind::Os,
            pmc::Op::Log,
            format!("-T: {e}"),
        ))
    };
    let mut filter = args.thread.map(ThreadFilter::new);
    match log {
        Input::Bytes(mut log) => {
            if let Some(unwound) = unwind_stacks(&log, args)? {
                log = unwound.into();
            }
            if let Some(filter) = &mut filter {
                log = filter_thread(&log, filter)?.into();
                filter.report();
            }
            crate::top::replay(
                crate::top::ReplayInput::Bytes(&log),
                refresh,
                analyze_options(args),
                &mut |_| true,
            )
            .map_err(failed)?;
        }
        Input::Stream(s) => {
            // A streamed log is not unwound: its raw user stacks, if any, stay unread,
            // as in the other reports of a stream.
            let input = crate::top::ReplayInput::Stream(Box::new(std::io::BufReader::new(&s)));
            let r = match &mut filter {
                Some(f) => {
                    crate::top::replay(input, refresh, analyze_options(args), &mut |r| f.keep(r))
                }
                None => crate::top::replay(input, refresh, analyze_options(args), &mut |_| true),
            };
            r.map_err(failed)?;
            if let Some(f) = &filter {
                f.report();
            }
            s.report_import(path);
        }
    }
    Ok(0)
}
