//! Typed errors that say what to do next.

use std::fmt;
use std::sync::Arc;

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The operation that failed (hwpmc's verbs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Op {
    /// Opening the backend (finding the driver, version handshake).
    Open,
    /// `allocate`.
    Allocate,
    /// `attach`.
    Attach,
    /// `detach`.
    Detach,
    /// `start`.
    Start,
    /// `stop`.
    Stop,
    /// `read`.
    Read,
    /// `write`.
    Write,
    /// `set_count`.
    SetCount,
    /// `release`.
    Release,
    /// Configuring, flushing or closing the sample log.
    Log,
    /// Mapping a sample buffer.
    Mmap,
    /// Launching a command.
    Launch,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Open => "open",
            Op::Allocate => "allocate",
            Op::Attach => "attach",
            Op::Detach => "detach",
            Op::Start => "start",
            Op::Stop => "stop",
            Op::Read => "read",
            Op::Write => "write",
            Op::SetCount => "set_count",
            Op::Release => "release",
            Op::Log => "configure the log",
            Op::Mmap => "map the sample buffer",
            Op::Launch => "launch",
        })
    }
}

/// Why permission was refused, with the facts needed to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PermissionReason {
    /// Linux: `kernel.perf_event_paranoid` is above what this needs, and the
    /// process lacks CAP_PERFMON (CAP_SYS_ADMIN before Linux 5.8).
    PerfEventParanoid {
        /// The current value read from `/proc/sys/kernel/perf_event_paranoid`,
        /// if it could be read.
        level: Option<i32>,
        /// The highest level at which this is allowed without the capability.
        needed: i32,
    },
    /// Linux: the target process may not be traced by this one (ptrace
    /// access mode check).
    Ptrace {
        /// The pid that could not be attached.
        pid: u32,
    },
    /// FreeBSD: unprivileged use is disabled by a sysctl.
    Sysctl {
        /// The sysctl, e.g. `security.bsd.unprivileged_syspmcs`.
        name: String,
    },
    /// FreeBSD: the process runs in a jail, where hwpmc refuses system PMCs.
    Jail,
    /// Anything else, described.
    Other(String),
}

/// The category of an [`Error`], for matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Permission denied (EACCES/EPERM).
    Permission,
    /// The machine has no hardware PMU, so hardware events cannot be counted.
    NoPmu,
    /// The event string parsed but names nothing on this machine: a PMU,
    /// a PMU term or alias, or a tracepoint it does not have. A name the
    /// parser does not know at all is [`ErrorKind::Parse`].
    NoSuchEvent,
    /// The event or option exists but this machine/kernel cannot do it.
    NotSupported,
    /// The target process does not exist (ESRCH).
    NoSuchProcess,
    /// The PMC is running and the operation needs it stopped (EBUSY).
    Busy,
    /// The operation is not valid in the PMC's current state.
    InvalidState,
    /// The PMC is already attached to that target (EEXIST).
    AlreadyAttached,
    /// The PMC is not attached to that target (EINVAL on detach).
    NotAttached,
    /// A sampling PMC needs a log configured first (EDOOFUS).
    LogRequired,
    /// The process ran out of file descriptors (EMFILE/ENFILE).
    TooManyOpenFiles,
    /// Locking the sample buffer exceeded the mlock limit (mmap EPERM).
    MlockLimit,
    /// A requested CPU is absent or offline (ENXIO/ENODEV).
    NoSuchCpu,
    /// The control group of [`Allocation::cgroup`](crate::Allocation::cgroup) does not
    /// exist (ENOENT).
    NoSuchCgroup,
    /// The kernel driver is not loaded (FreeBSD: hwpmc).
    DriverNotLoaded,
    /// The kernel driver speaks an ABI version this library does not.
    VersionMismatch,
    /// An argument the kernel rejected (EINVAL with a known cause).
    InvalidArgument,
    /// An event string did not parse, an unknown event name included
    /// (`page-fualts`: the message suggests `page-faults`); see
    /// [`ParseError`](crate::ParseError).
    Parse,
    /// This platform has no backend.
    Unsupported,
    /// Any other OS error.
    Os,
}

impl ErrorKind {
    /// The kind of an error a background writer met on its sink (a file, a
    /// pipe, a socket): refused access is [`ErrorKind::Permission`],
    /// anything else (a full disk, a closed pipe) [`ErrorKind::Os`]. Both
    /// backends' log writers use it, so `Backend::log_error` answers alike.
    ///
    /// ```
    /// use pmc::ErrorKind;
    /// assert_eq!(ErrorKind::of_io(std::io::ErrorKind::PermissionDenied), ErrorKind::Permission);
    /// assert_eq!(ErrorKind::of_io(std::io::ErrorKind::StorageFull), ErrorKind::Os);
    /// ```
    pub fn of_io(kind: std::io::ErrorKind) -> ErrorKind {
        match kind {
            std::io::ErrorKind::PermissionDenied => ErrorKind::Permission,
            _ => ErrorKind::Os,
        }
    }
}

/// An error from a backend, with the facts and the remedy.
///
/// The `Display` form is a one-line fact followed, where there is one, by a
/// `help:` line with a command that fixes it.
///
/// ```
/// use pmc::{Error, ErrorKind, Op, PermissionReason};
/// let e = Error::permission(Op::Allocate, "count system-wide",
///     PermissionReason::PerfEventParanoid { level: Some(2), needed: 0 });
/// assert_eq!(e.kind(), ErrorKind::Permission);
/// let msg = e.to_string();
/// assert!(msg.contains("perf_event_paranoid = 2"));
/// assert!(msg.contains("CAP_PERFMON"));
/// ```
///
/// It is `Clone` (its source is shared), so an error met by a background
/// thread (a log writer) can be kept and handed to every caller that asks,
/// kind, errno and source intact.
///
/// # Returned from `main`
///
/// `fn main() -> pmc::Result<()>` prints an error with `Debug`, and
/// `Debug` is written for that reader, as anyhow's is: the `Display` text
/// (the fact, the errno, the `help:` line), the chain of sources under
/// `Caused by:`, and the kind and operation last. `{:#?}` gives the fields
/// one by one instead.
///
/// ```text
/// Error: permission denied to count system-wide: kernel.perf_event_paranoid = 2, which must be <= 0 for a process without CAP_PERFMON (or CAP_SYS_ADMIN before Linux 5.8)
/// help: run as root, grant the capability (setcap cap_perfmon+ep <binary>), or lower the level: sysctl -w kernel.perf_event_paranoid=0
/// (ErrorKind::Permission, Op::Allocate)
/// ```
///
/// ```
/// use pmc::{Error, ErrorKind, Op};
/// let e = Error::new(ErrorKind::Busy, Op::Start, "the counter is in use").with_help("stop it first");
/// assert_eq!(
///     format!("{e:?}"),
///     "the counter is in use\nhelp: stop it first\n(ErrorKind::Busy, Op::Start)"
/// );
/// assert!(format!("{e:#?}").starts_with("Error {\n    kind: Busy,"));
/// ```
#[derive(Clone)]
pub struct Error {
    kind: ErrorKind,
    op: Op,
    errno: Option<i32>,
    errno_text: Option<String>,
    message: String,
    help: Option<String>,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}{}",
            self.message,
            errno_suffix(&self.errno, &self.errno_text),
            help_suffix(&self.help)
        )
    }
}

/// The `Display` text, the sources under `Caused by:` and the kind and
/// operation, as anyhow prints an error returned from `main`; `{:#?}` is
/// the struct, field by field.
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            return f
                .debug_struct("Error")
                .field("kind", &self.kind)
                .field("op", &self.op)
                .field("errno", &self.errno)
                .field("errno_text", &self.errno_text)
                .field("message", &self.message)
                .field("help", &self.help)
                .field("source", &self.source)
                .finish();
        }
        write!(f, "{self}")?;
        let first = std::error::Error::source(self);
        if let Some(first) = first {
            f.write_str("\n\nCaused by:")?;
            // One cause unnumbered, several numbered from 0, as anyhow does.
            let several = first.source().is_some();
            let mut cause = Some(first);
            let mut n = 0usize;
            while let Some(c) = cause {
                if several {
                    write!(f, "\n    {n}: {c}")?;
                } else {
                    write!(f, "\n    {c}")?;
                }
                n += 1;
                cause = c.source();
            }
            f.write_str("\n")?;
        }
        write!(f, "\n(ErrorKind::{:?}, Op::{:?})", self.kind, self.op)
    }
}

impl std::error::Error for Error {
    /// The underlying error itself (an `std::io::Error` downcasts as one),
    /// not the `Arc` it is shared through.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

impl Error {
    /// A new error of a kind, for an operation, with a message (the fact).
    pub fn new(kind: ErrorKind, op: Op, message: impl Into<String>) -> Error {
        Error {
            kind,
            op,
            errno: None,
            errno_text: None,
            message: message.into(),
            help: None,
            source: None,
        }
    }

    /// Adds the raw OS errno.
    pub fn with_errno(mut self, errno: i32) -> Error {
        self.errno = Some(errno);
        self
    }

    /// Describes the errno in the target system's words (`EDOOFUS: Programming
    /// error`), for errnos that come from another OS than the host's (a
    /// simulated driver, a log from another machine). Without it, the host's
    /// `strerror` is printed.
    pub fn with_errno_text(mut self, text: impl Into<String>) -> Error {
        self.errno_text = Some(text.into());
        self
    }

    /// Adds the remedy, printed after `help:`.
    pub fn with_help(mut self, help: impl Into<String>) -> Error {
        self.help = Some(help.into());
        self
    }

    /// Adds an underlying error.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Error {
        self.source = Some(Arc::new(source));
        self
    }

    /// A permission error, with its reason rendered into a message and a
    /// remedy.
    pub fn permission(op: Op, action: &str, reason: PermissionReason) -> Error {
        let (fact, help) = match &reason {
            PermissionReason::PerfEventParanoid { level, needed } => {
                let lvl = level.map_or_else(|| "unknown".to_owned(), |l| l.to_string());
                (
                    format!(
                        "permission denied to {action}: kernel.perf_event_paranoid = {lvl}, \
                         which must be <= {needed} for a process without CAP_PERFMON \
                         (or CAP_SYS_ADMIN before Linux 5.8)"
                    ),
                    format!(
                        "run as root, grant the capability (setcap cap_perfmon+ep <binary>), \
                         or lower the level: sysctl -w kernel.perf_event_paranoid={needed}"
                    ),
                )
            }
            PermissionReason::Ptrace { pid } => (
                format!("permission denied to {action}: this process may not trace pid {pid}"),
                "run as the process's owner or with CAP_PERFMON/CAP_SYS_PTRACE; check kernel.yama.ptrace_scope"
                    .to_owned(),
            ),
            PermissionReason::Sysctl { name } => (
                format!("permission denied to {action}: sysctl {name} forbids it for unprivileged users"),
                format!("run as root, or allow it: sysctl {name}=1"),
            ),
            PermissionReason::Jail => (
                format!("permission denied to {action}: hwpmc refuses this inside a jail"),
                "run it on the host, outside the jail".to_owned(),
            ),
            PermissionReason::Other(s) => (format!("permission denied to {action}: {s}"), String::new()),
        };
        let mut e = Error::new(ErrorKind::Permission, op, fact);
        if !help.is_empty() {
            e.help = Some(help);
        }
        e
    }

    /// The category.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// The operation that failed.
    pub fn op(&self) -> Op {
        self.op
    }
    /// The raw OS errno, when the error came from a system call.
    pub fn errno(&self) -> Option<i32> {
        self.errno
    }
    /// The fact, without the remedy.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// The remedy, if there is one.
    pub fn help(&self) -> Option<&str> {
        self.help.as_deref()
    }
}

fn errno_suffix(errno: &Option<i32>, text: &Option<String>) -> String {
    match (errno, text) {
        (Some(e), Some(t)) => format!(" (errno {e}: {t})"),
        (Some(e), None) => format!(" (errno {e}: {})", std::io::Error::from_raw_os_error(*e)),
        (None, _) => String::new(),
    }
}

fn help_suffix(help: &Option<String>) -> String {
    help.as_ref()
        .map_or_else(String::new, |h| format!("\nhelp: {h}"))
}

impl From<crate::event::ParseError> for Error {
    fn from(e: crate::event::ParseError) -> Error {
        Error::new(ErrorKind::Parse, Op::Allocate, e.to_string())
            .with_help("`Backend::list_events` lists the events this machine has")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clone keeps the kind, errno, help and the source itself (an io::Error still
    /// downcasts as one), so an error kept by a background thread reads as the original.
    #[test]
    fn a_clone_keeps_kind_errno_help_and_source() {
        let e = Error::new(ErrorKind::Os, Op::Log, "cannot write the log")
            .with_errno(28)
            .with_help("make room")
            .with_source(std::io::Error::from_raw_os_error(28));
        let c = e.clone();
        drop(e);
        assert_eq!(
            (c.kind(), c.op(), c.errno()),
            (ErrorKind::Os, Op::Log, Some(28))
        );
        assert_eq!(c.help(), Some("make room"));
        let io = std::error::Error::source(&c)
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .expect("the io::Error is the source");
        assert_eq!(io.raw_os_error(), Some(28));
        assert!(
            c.to_string()
                .starts_with("cannot write the log (errno 28: "),
            "{c}"
        );
        assert!(c.to_string().ends_with("\nhelp: make room"), "{c}");
    }

    /// `Debug`, what `fn main() -> pmc::Result<()>` prints: the message, the help and
    /// the causes, as anyhow does, then the kind and operation; not a struct.
    #[test]
    fn debug_is_the_message_help_and_causes() {
        let e = Error::permission(
            Op::Allocate,
            "count system-wide",
            PermissionReason::PerfEventParanoid {
                level: Some(2),
                needed: 0,
            },
        );
        let d = format!("{e:?}");
        assert_eq!(
            d,
            "permission denied to count system-wide: kernel.perf_event_paranoid = 2, which must \
             be <= 0 for a process without CAP_PERFMON (or CAP_SYS_ADMIN before Linux 5.8)\n\
             help: run as root, grant the capability (setcap cap_perfmon+ep <binary>), or lower \
             the level: sysctl -w kernel.perf_event_paranoid=0\n\
             (ErrorKind::Permission, Op::Allocate)"
        );
        assert!(!d.contains("Error {"), "{d}");

        // One cause: unnumbered.
        let io = std::io::Error::other("disk full");
        let e = Error::new(ErrorKind::Os, Op::Log, "cannot write the log").with_source(io);
        assert_eq!(
            format!("{e:?}"),
            "cannot write the log\n\nCaused by:\n    disk full\n\n(ErrorKind::Os, Op::Log)"
        );

        // Two: numbered from 0, each on its line.
        let inner = Error::new(ErrorKind::Os, Op::Log, "short write");
        let outer = Error::new(ErrorKind::Os, Op::Release, "cannot close the log")
            .with_help("free some space")
            .with_source(inner.clone().with_source(std::io::Error::other("ENOSPC")));
        assert_eq!(
            format!("{outer:?}"),
            "cannot close the log\nhelp: free some space\n\nCaused by:\n    0: short write\n    \
             1: ENOSPC\n\n(ErrorKind::Os, Op::Release)"
        );

        // {:#?} keeps every field.
        let alt = format!("{e:#?}");
        assert!(
            alt.starts_with("Error {\n    kind: Os,\n    op: Log,"),
            "{alt}"
        );
        assert!(alt.contains("message: \"cannot write the log\""), "{alt}");
    }
}
