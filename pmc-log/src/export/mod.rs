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

use std::io::{self, Write};

use crate::record::Record;

/// Writes every record of `records` with `write_record` (an export's record writer, as
/// [`text::write_record`]); returns how many. The `write_all` of the exports that write a
/// record at a time.
///
/// # Errors
/// The first error of `write_record`; the records before it are written.
pub fn write_each<'a, W: Write>(
    records: impl IntoIterator<Item = Record<'a>>,
    out: &mut W,
    mut write_record: impl FnMut(&Record<'a>, &mut W) -> io::Result<()>,
) -> io::Result<u64> {
    let mut n = 0;
    for r in records {
        write_record(&r, out)?;
        n += 1;
    }
    Ok(n)
}
