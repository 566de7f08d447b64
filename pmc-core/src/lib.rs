//! # pmc-core: one API for performance-monitoring counters
//!
//! The backend-neutral API: a [`Backend`] allocates [`Pmc`]s and [`Group`]s from an
//! [`Allocation`] of an [`EventSpec`]; they give [`Reading`]s or typed [`Error`]s. Also
//! [`lifecycle`] (hwpmc's rules), [`metrics`] (perf's ratios), [`event`] (the spec parser),
//! [`info`] (listings) and `testing` (the conformance suite). Overview table below.
//!
//! # Details
//!
//! `pmc-core` is the backend-neutral half of the `pmc` project. It defines the
//! vocabulary shared by the Linux (`perf_event_open(2)`) and FreeBSD (`hwpmc(4)`)
//! backends, modelled on hwpmc's verbs: you *allocate* a PMC (an event, a
//! scope and a mode), *attach* it to or *detach* it from target processes,
//! *start* and *stop* it, *read*, *write* and *set_count* it, and *release* it
//! by dropping it.
//!
//! You probably want the `pmc` facade crate, which re-exports this crate and
//! picks the native backend (`pmc::Native`).
//!
//! The examples on the items' pages are written as a user of that facade
//! writes them (`use pmc::{Allocation, Backend}`), because `pmc` shows them
//! on its own pages, and are compiled against it. With `pmc-core` alone,
//! read `pmc::` as `pmc_core::`: every item here is at the same path in both.
//!
//! # Brief overview
//!
//! | type | what it is |
//! |---|---|
//! | [`EventSpec`] | a parsed event string: `page-faults`, `task-clock:u`, `r01c2`, `cpu/event=0x3c/`, `sched:sched_switch`, `instructions,usr`, `SOFT-CLOCK.HARD` |
//! | [`Allocation`] | what to allocate: event + [`Scope`] + [`Mode`] + [`Flags`] |
//! | [`Backend`] | allocates [`Pmc`]s and [`Group`]s; configures the sample log |
//! | [`Pmc`] | one allocated counter: attach, detach, start, stop, read, write, set_count |
//! | [`Group`] | several counters scheduled together, so their ratios mean something |
//! | [`Reading`] | raw value, time enabled/running, the scaled value and a [`Status`] |
//! | [`Error`] | typed errors that say what to do next |
//!
//! # Example
//!
//! Counting with a backend (here any `B: Backend`; `pmc::Native` in practice):
//!
//! ```
//! use pmc_core::{Allocation, Backend, Pmc, Result};
//!
//! fn count_page_faults<B: Backend>(backend: &B, work: impl FnOnce()) -> Result<u64> {
//!     let spec = "page-faults".parse()?;
//!     let mut pmc = backend.allocate(&Allocation::counting(spec))?;
//!     pmc.start()?; // an unattached process PMC attaches to the caller
//!     work();
//!     pmc.stop()?;
//!     Ok(pmc.read()?.scaled().unwrap_or(0))
//! }
//! ```
//!
//! # If you know hwpmc or perf already
//!
//! | hwpmc(3)/(4) | perf_event | pmc-core |
//! |---|---|---|
//! | `pmc_allocate`, `PMC_OP_PMCALLOCATE` | `perf_event_open` (deferred until a target is known) | [`Backend::allocate`] |
//! | `pmc_attach` / `pmc_detach` | one fd per target, opened / closed | [`Pmc::attach`] / [`Pmc::detach`] |
//! | `pmc_start` / `pmc_stop` | `PERF_EVENT_IOC_ENABLE` / `DISABLE` | [`Pmc::start`] / [`Pmc::stop`] |
//! | `pmc_read` | `read(2)` with `TOTAL_TIME_ENABLED/RUNNING` | [`Pmc::read`] |
//! | `pmc_rw` with `PMC_F_NEWVALUE` | reset + kept offset (emulated) | [`Pmc::write`] |
//! | `pmc_set` | offset (counting) or `PERF_EVENT_IOC_PERIOD` (sampling) | [`Pmc::set_count`] |
//! | `pmc_release` | `close(2)` | `Drop` / [`Pmc::release`] |
//! | `PMC_F_DESCENDANTS` | `attr.inherit` | [`Flags::DESCENDANTS`] |
//! | `PMC_F_CALLCHAIN` | `PERF_SAMPLE_CALLCHAIN` | [`Flags::CALLCHAIN`] |
//!
//! # Platform behaviour
//!
//! Where Linux has to emulate hwpmc semantics, the backend documents it; the
//! semantics themselves (errors included) are the same on both systems and
//! are checked by the conformance suite in `testing` (feature `testing`).
#![warn(unreachable_pub, unnameable_types)]
#![deny(unsafe_code)]
#![deny(missing_docs)]

mod alloc;
mod backend;
mod error;
pub mod event;
pub mod info;
pub mod lifecycle;
mod members;
pub mod metrics;
mod reading;
mod sample;
mod summary;
#[cfg(feature = "testing")]
pub mod testing;

pub use alloc::{Allocation, CallGraph, Cpus, Flags, Mode, Rate, Scope, Target};
pub use backend::{
    Backend, Group, GroupInstanceReading, Instance, InstanceReading, LogSink, NativeField, Pmc,
    State,
};
pub use error::{Error, ErrorKind, Op, PermissionReason, Result};
pub use event::{
    EventGroup, EventItem, EventList, EventSource, EventSpec, Modifiers, ParseError, PortableEvent,
    SoftClock,
};
pub use members::{GroupReading, GroupSpec, Member};
pub use reading::{Reading, Status};
pub use sample::Sample;
pub use summary::{CpuSampling, SamplingSummary};
