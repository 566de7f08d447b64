//! Exports to other formats.
//!
//! - [`text`]: one line per record, in the manner of `pmcstat -R`.
//! - [`folded`]: folded stacks (`a;b;c count`) for flame graphs
//!   (`flamegraph.pl`, inferno).
//! - `json` (with the `serde` feature): JSON Lines, one serde-serialized
//!   [`crate::Record`] per line.
//! - [`perf_data`]: perf.data for `perf report` / `perf script`.

pub mod folded;
#[cfg(feature = "serde")]
pub mod json;
pub mod perf_data;
pub mod text;
