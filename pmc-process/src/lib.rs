//! # pmc-process: the processes a measurement is about
//!
//! The OS-specific half of choosing what to measure, kept out of the
//! OS-free `pmc-core`:
//!
//! - [`launch`] (every Unix, feature `launch`): a command launched paused before
//!   `exec` (`Command`, `PausedChild`), so counters attach before its
//!   first instruction, and the `Session` a measuring tool runs around it
//!   or around running processes (attach, resume, wait, forward a signal);
//!   on a Unix without a backend (macOS) the same API, whose launch answers
//!   `ErrorKind::Unsupported`;
//! - [`process`]: the running processes by name (`list`) and whether a pid
//!   exists (`exists`).
//!
//! You probably want the `pmc` facade, which re-exports both modules at the
//! same paths (`pmc::launch`, `pmc::process`); the examples are written as
//! its user writes them.
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![warn(unreachable_pub)]

pub mod process;
mod sys;
// Empty on systems without `launch` (not Unix), or without the feature `launch`.
#[allow(unused_imports, unreachable_pub)]
pub use sys::exported::*;
