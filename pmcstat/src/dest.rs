//! Where reports go: standard output or error, buffered as the reader needs,
//! or files created under pmcstat's rules (never over a log of this run,
//! put in place whole or not at all), and what a failed write means.

use crate::error::Failure;
use std::io::{IsTerminal, Write};
use std::path::Path;

/// A writer that keeps the first error it met and fails every later write at once, so
/// printing code can write line after line and the caller checks once, at the end
/// ([`Checked::finish`]). Nothing written after an error is half-written.
pub struct Checked<W: Write> {
    inner: W,
    error: Option<std::io::Error>,
}

impl<W: Write> Checked<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Self {
        Checked { inner, error: None }
    }

    /// Flushes and returns the first error met, if any.
    pub fn finish(&mut self) -> std::io::Result<()> {
        let _ = self.flush();
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The writer, to commit it once [`Checked::finish`] succeeded.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    fn keep<T>(&mut self, r: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &r {
            note_reader_gone(e);
            if self.error.is_none() {
                self.error = Some(std::io::Error::new(e.kind(), e.to_string()));
            }
        }
        r
    }

    fn failed(&self) -> Option<std::io::Error> {
        self.error
            .as_ref()
            .map(|e| std::io::Error::new(e.kind(), e.to_string()))
    }
}

impl<W: Write> Write for Checked<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if let Some(e) = self.failed() {
            return Err(e);
        }
        let r = self.inner.write(b);
        self.keep(r)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        if let Some(e) = self.failed() {
            return Err(e);
        }
        let r = self.inner.flush();
        self.keep(r)
    }
}

/// Whether the reader of the results (standard output or error, `-o /dev/stdout`, a pipe)
/// went away: a write met EPIPE. The run then stops as on a stop signal (SIGPIPE), and
/// pmcstat ends as perf does, killed by SIGPIPE ([`die_if_reader_gone`]).
static READER_GONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records that the reader of the results went away, if `e` says so (EPIPE).
fn note_reader_gone(e: &std::io::Error) {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        READER_GONE.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Whether a write of the results met EPIPE.
pub fn reader_gone() -> bool {
    READER_GONE.load(std::sync::atomic::Ordering::SeqCst)
}

/// At the end of a run whose results' reader went away: ends pmcstat with SIGPIPE's default
/// action (killed by it, as perf and other Unix tools are; the Rust runtime ignores
/// SIGPIPE, so it is restored and raised). Returns only where that is impossible.
pub fn die_if_reader_gone() {
    if reader_gone() {
        let _ = signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGPIPE);
    }
}

/// What a failed write of results means for the exit: `Ok(())` when the reader of a pipe
/// went away (EPIPE: stop quietly, as Unix tools do, and end by SIGPIPE), otherwise a
/// message naming what could not be written (exit 1).
pub fn write_outcome(r: std::io::Result<()>, what: &str) -> Result<(), Failure> {
    match r {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            note_reader_gone(&e);
            Ok(())
        }
        Err(e) => Err(Failure::Output(format!("cannot write {what}: {e}"))),
    }
}

/// The logs this run reads (`-R`) or records (`-O`): no output may replace them.
static INPUTS: std::sync::Mutex<Vec<pmc_analyze::output::FileId>> =
    std::sync::Mutex::new(Vec::new());

/// Marks `path` (if it exists) as a log this run reads or records, which no output may
/// replace (same device and inode, under any name).
pub fn protect(path: &Path) {
    if let Some(id) = pmc_analyze::output::FileId::of_path(path) {
        protect_id(id);
    }
}

/// As [`protect`], for an open file's identity.
pub fn protect_id(id: pmc_analyze::output::FileId) {
    if let Ok(mut v) = INPUTS.lock() {
        v.push(id);
    }
}

/// The rules every file pmcstat creates follows (`pmc_analyze::output`): never a link,
/// never a log of this run, written whole or not at all, and a FIFO with no reader waited
/// for until a stop signal (SIGINT, SIGTERM, SIGHUP) ends the wait.
pub fn output_options() -> pmc_analyze::output::Options {
    pmc_analyze::output::Options {
        inputs: INPUTS.lock().map(|v| v.clone()).unwrap_or_default(),
        keep_waiting: Some(|| crate::run::stop_signal().is_none()),
        private: false,
    }
}

/// [`output_options`] for profiles (`-R`'s reports and exports, the sampling summary):
/// created 0600, as perf.data, since they show what a program does.
pub fn private_options() -> pmc_analyze::output::Options {
    pmc_analyze::output::Options {
        private: true,
        ..output_options()
    }
}

/// [`create_file`] for a profile: created 0600 ([`private_options`]).
pub fn create_private_file(path: &Path) -> std::io::Result<Dest> {
    pmc_analyze::output::Output::create(path, &private_options()).map(Dest::File)
}

/// Creates output file `path` under [`output_options`]: a regular file goes to a temporary
/// file renamed into place by [`Dest::commit`], a FIFO or device is written in place.
pub fn create_file(path: &Path) -> std::io::Result<Dest> {
    pmc_analyze::output::Output::create(path, &output_options()).map(Dest::File)
}

/// The bytes a text stream is buffered in: a report into a file or a pipe goes out in
/// writes of this size.
const STREAM_BUFFER: usize = 64 * 1024;

/// Standard output for a report: on a terminal line by line, as a person reads it;
/// into a file or a pipe through a [`STREAM_BUFFER`], so that a report of a
/// million lines is a few hundred write(2) calls rather than a million (Rust's
/// `Stdout` is line-buffered wherever it goes). Written out when the report is
/// finished ([`Checked::finish`], [`Dest::commit`]) and wherever a person watches
/// (each `-w`/`-I` interval, `--columns` row).
pub fn stdout_stream() -> Box<dyn Write> {
    let out = std::io::stdout();
    if out.is_terminal() {
        Box::new(out)
    } else {
        Box::new(std::io::BufWriter::with_capacity(STREAM_BUFFER, out))
    }
}

/// Standard error for counts and summaries, as [`stdout_stream`]: on a terminal a line
/// at a time (`Stderr` itself writes every piece of a line apart), else buffered.
pub fn stderr_stream() -> Box<dyn Write> {
    let err = std::io::stderr();
    if err.is_terminal() {
        Box::new(std::io::LineWriter::new(err))
    } else {
        Box::new(std::io::BufWriter::with_capacity(STREAM_BUFFER, err))
    }
}

/// Where a report goes: standard output or error, or a file created by [`create_file`].
pub enum Dest {
    /// Standard output or error (or a socket): written as it goes.
    Stream(Box<dyn Write>),
    /// A file, in place only once committed.
    File(pmc_analyze::output::Output),
}

impl Dest {
    /// Puts a file in place (flushed, synced, renamed over its name); a stream is flushed.
    /// Called once every write succeeded: an output never committed leaves no file.
    pub fn commit(&mut self) -> std::io::Result<()> {
        match std::mem::replace(self, Dest::Stream(Box::new(std::io::sink()))) {
            Dest::Stream(mut w) => w.flush(),
            Dest::File(f) => f.commit(),
        }
    }
}

/// Whether a stop signal ends the writing of files (`-R`, `-L`): set by `main`. While
/// measuring, the first signal stops the run and its results are still written.
pub static REPORTS_STOP_ON_SIGNAL: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// A stop signal (SIGINT, SIGTERM, SIGHUP) ends a report: its writes fail, so a file
/// is not put in place and its temporary file is removed.
fn interrupted() -> std::io::Result<()> {
    if !REPORTS_STOP_ON_SIGNAL.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(());
    }
    match crate::run::stop_signal() {
        // Not ErrorKind::Interrupted, which write_all retries forever.
        Some(sig) => Err(std::io::Error::other(format!(
            "interrupted by signal {sig}; no file is put in place"
        ))),
        None => Ok(()),
    }
}

impl Write for Dest {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        interrupted()?;
        match self {
            Dest::Stream(w) => w.write(b),
            Dest::File(f) => f.write(b),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Dest::Stream(w) => w.flush(),
            Dest::File(f) => f.flush(),
        }
    }
}
