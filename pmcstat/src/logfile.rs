//! The `-O` log target: a file, `-` (standard output) or `host:port` (TCP),
//! handed to the backend; its errors with pmcstat's remedies; and the
//! largest log `-R` and `-E` read.

use crate::error::Failure;
use pmc::{Backend, Error, ErrorKind};

/// The largest log `-R` reads: 64 GiB. Regular files are mapped, so this bounds address
/// space, not memory.
pub const MAX_LOG_SIZE: u64 = 64 << 30;

const LOG_HELP: &str = "free space where the log goes, or give another file with -O, and run again";

/// pmcstat's remedy when the log's reader went away (EPIPE on `-O -`, a pipe or a socket).
const LOG_READER_HELP: &str = "the reader of the log (the other end of the pipe or socket -O \
    writes to) closed it before the run ended: keep it reading until pmcstat exits, or give a \
    file with -O";

/// pmcstat's remedy when the log's reader stopped reading (its close gave up on it).
const LOG_STALLED_HELP: &str = "the reader of the log (the other end of the FIFO, pipe or \
    socket -O writes to) stopped reading: keep it reading until pmcstat exits, or give a file \
    with -O";

/// pmcstat's remedy for log error `e`: a closed reader is not a full disk.
pub fn log_help(e: &Error) -> &'static str {
    if crate::sys::is_epipe(e.errno()) || e.message().contains("Broken pipe") {
        LOG_READER_HELP
    } else if e.message().contains("took nothing") {
        LOG_STALLED_HELP
    } else {
        LOG_HELP
    }
}

/// A log error with pmcstat's remedy instead of the library's.
pub fn log_err(e: Error) -> Failure {
    match e.op() {
        pmc::Op::Log => {
            let help = log_help(&e);
            Failure::Setup(e.with_help(help))
        }
        _ => Failure::Setup(e),
    }
}

pub fn io_failure(what: &str, e: &std::io::Error) -> Failure {
    Failure::Setup(Error::new(
        ErrorKind::Os,
        pmc::Op::Log,
        format!("cannot {what}: {e}"),
    ))
}

/// Gives the backend the `-O` log: a file, `-` (pmcstat(8): the standard output) or
/// `host:port` (a TCP connection). Returns the file's path when it created one, for
/// [`RemoveUnlessStarted`].
pub fn configure_log(
    backend: &pmc::Native,
    path: &std::path::Path,
) -> Result<Option<std::path::PathBuf>, Failure> {
    if path.as_os_str() == "-" {
        backend
            .configure_log(Box::new(std::io::BufWriter::new(std::io::stdout())))
            .map_err(log_err)?;
        return Ok(None);
    }
    if let Some(addr) = remote_log(path) {
        let stream = std::net::TcpStream::connect(addr.as_str())
            .map_err(|e| io_failure(&format!("connect to {addr} for the log"), &e))?;
        backend
            .configure_log(Box::new(std::io::BufWriter::new(stream)))
            .map_err(log_err)?;
        return Ok(None);
    }
    // Locked against a second recorder, and only then truncated; a FIFO without a reader
    // is waited for until a stop signal.
    let f = pmc_analyze::output::create_log(path, &crate::dest::output_options())
        .map_err(|e| io_failure(&format!("create the log {}", path.display()), &e))?;
    if let Some(id) = f.id() {
        // No -o report may replace the log being recorded.
        crate::dest::protect_id(id);
    }
    // Removed again if the backend refuses it (a regular file only).
    let created = RemoveUnlessStarted(f.is_regular().then(|| path.to_path_buf()));
    if f.is_regular() {
        // Nobody reads a regular file as it grows (a FIFO's reader does).
        crate::sys::defer_log_decoding(backend);
    }
    backend
        .configure_log(Box::new(std::io::BufWriter::new(f)))
        .map_err(log_err)?;
    Ok(created.keep())
}

/// The `-O` file while the run has not started: a start that fails (command not found,
/// permission denied, a PMC refused) removes it rather than leave a partial, unclosed log.
pub struct RemoveUnlessStarted(pub Option<std::path::PathBuf>);

impl RemoveUnlessStarted {
    /// The path, no longer removed.
    pub fn keep(mut self) -> Option<std::path::PathBuf> {
        self.0.take()
    }
}

impl Drop for RemoveUnlessStarted {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// `-O host:port`: pmcstat(8)'s rule (pmcstat_log.c, pmcstat_open_log): a
/// path for writing that does not start with '/' or '.' and contains a ':'
/// is a host and a port, split at the last ':', and the log goes to a TCP
/// connection there. Anything else is a file (`./a:b` for a file with a colon).
pub fn remote_log(path: &std::path::Path) -> Option<String> {
    let s = path.to_str()?;
    if s.starts_with('/') || s.starts_with('.') {
        return None;
    }
    let (host, port) = s.rsplit_once(':')?;
    if host.is_empty() {
        return None;
    }
    // An IPv6 literal as [::1]:port, or a host name / IPv4 address.
    Some(format!("{host}:{port}"))
}
