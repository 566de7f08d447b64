//! Event specifications and their parser.
//!
//! An [`EventSpec`] (`"task-clock:u".parse()`) holds an [`EventSource`] ([`PortableEvent`],
//! raw, PMU [`Term`]s, tracepoint, hwpmc names) and [`Modifiers`]; a bad string is a
//! [`ParseError`] ([`ParseErrorKind`]). Below: the accepted syntax, the portable names.
//!
//! An [`EventSpec`] is what the user asked to count, as written: the parser is
//! pure (no I/O, no knowledge of the machine). Resolving a spec against a
//! machine (sysfs PMUs, tracepoint ids, hwpmc event tables) is the backend's
//! job.
//!
//! The files: `spec.rs` ([`EventSpec`], [`EventSource`], `Display`),
//! `parser.rs` (the grammar), `modifiers.rs` ([`Modifiers`]), `names.rs`
//! (the name tables and lookups, typo suggestions), `list.rs` ([`EventList`]
//! and groups), `parse_error.rs` ([`ParseError`]), `tests.rs`.
//!
//! # Accepted syntax
//!
//! | form | examples | parsed as |
//! |---|---|---|
//! | portable name | `cycles`, `page-faults`, `task-clock` | [`EventSource::Portable`] |
//! | perf generic name | `minor-faults`, `L1-dcache-load-misses`, `ref-cycles` | [`EventSource::Generic`] |
//! | perf modifiers | `task-clock:u`, `instructions:k`, `cycles:uk`, `cycles:pp`, `cycles:P`, `cycles:D`, `cycles:e`, `cycles:I`, `cycles:G`, `cycles:H`, `cycles:S`, `cycles:W` | [`Modifiers`] |
//! | perf's `name=` term | `cpu/event=0x3c,name=busy/`, `page-faults/name=pf/` | [`EventSpec::name`] |
//! | perf stat's tool event | `duration_time` | [`EventSource::Generic`] ([`EventSpec::is_duration_time`]) |
//! | perf's `-e` lists and `{...}` groups | `page-faults,{cycles,instructions}:u` | [`EventList`] of [`EventItem`]s ([`EventGroup`]) |
//! | raw | `r01c2`, `r1a2b:u` | [`EventSource::Raw`] |
//! | PMU terms | `cpu/event=0x3c,umask=0x0/`, `cpu/mem-loads/u` | [`EventSource::Pmu`] |
//! | tracepoint | `sched:sched_switch`, `syscalls:sys_enter_read:k` | [`EventSource::Tracepoint`] |
//! | hwpmc style | `instructions,usr`, `unhalted-cycles,os`, `event=0xc0,umask=0x0,usr,cmask=1` | portable, [`EventSource::Hwpmc`] or [`EventSource::Raw`]-like terms with [`Modifiers`] |
//! | hwpmc SOFT / class names | `SOFT-CLOCK.HARD`, `clock.hard`, `PAGE_FAULT.ALL`, `k8-bu-cpu-clk-unhalted`, `tsc`, `tsc-tsc` | [`EventSource::Hwpmc`] |
//! | CPU event names (the `pmc-events` crate's table, any case) and libpmc aliases | `inst_retired.any`, `ls_not_halted_cyc:u`, `INST_RETIRED,usr`, `iap-inst_retired.any`, `dc-misses`, `LLC_REFERENCE`, `inst_retired.any,cmask=1,inv` | [`EventSource::Hwpmc`] (resolved per CPU by the backend) |
//!
//! `cycles` is always core cycles (the portable event), on both systems;
//! libpmc's `cycles` (the TSC) is spelled `tsc` here.
//!
//! # The portable names
//!
//! These mean the same thing on Linux and FreeBSD (see [`PortableEvent`]):
//! `cycles`, `instructions`, `branches`, `branch-misses`, `cache-references`,
//! `cache-misses`, `cpu-clock`, `task-clock`, `page-faults`,
//! `context-switches`, `cpu-migrations`.
//!
//! # Examples
//!
//! ```
//! use pmc::{EventSpec, EventSource, PortableEvent};
//!
//! let spec: EventSpec = "task-clock:u".parse().unwrap();
//! assert_eq!(spec.source, EventSource::Portable(PortableEvent::TaskClock));
//! assert!(spec.modifiers.user && !spec.modifiers.kernel);
//! assert_eq!(spec.to_string(), "task-clock:u");
//!
//! let err = "page-fualts".parse::<EventSpec>().unwrap_err();
//! assert_eq!(err.span(), 0..11);
//! assert!(err.to_string().contains("did you mean `page-faults`"));
//! ```

mod list;
mod modifiers;
mod names;
mod parse_error;
mod parser;
mod spec;
#[cfg(test)]
mod tests;

pub use list::{EventGroup, EventItem, EventList};
pub use modifiers::Modifiers;
pub use names::{
    PortableEvent, HWPMC_CLASS_PREFIXES, LINUX_CACHE_NAMES, LINUX_CACHE_OPS, LINUX_GENERIC_NAMES,
};
pub use parse_error::{ParseError, ParseErrorKind};
pub use spec::{EventSource, EventSpec, SoftClock, Term};

/// Longest event string the parser accepts, in bytes.
pub const MAX_EVENT_SPEC_LEN: usize = 4096;
