//! JSON Lines export: one record per line, as serde serializes [`Record`]
//! (an object with a `"type"` tag). Read it back with
//! `serde_json::from_str::<Record>`.

use std::io::{self, Write};

use crate::record::Record;

/// Write one record as one JSON line.
///
/// ```
/// use pmc_log::record::{Record, Exit};
/// let mut out = Vec::new();
/// pmc_log::export::json::write_record(&Record::Exit(Exit { time: 1, pid: 2, tid: 3 }), &mut out)?;
/// assert_eq!(String::from_utf8(out)?, "{\"type\":\"exit\",\"time\":1,\"pid\":2,\"tid\":3}\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_record<W: Write>(r: &Record<'_>, out: &mut W) -> io::Result<()> {
    // DEL and C1 in a log's strings escaped as well (serde_json escapes C0 only).
    let mut w = crate::escape::JsonControls::new(&mut *out);
    serde_json::to_writer(&mut w, r).map_err(io::Error::other)?;
    w.into_inner()?.write_all(b"\n")
}

/// Write every record, one per line. Returns the number written.
pub fn write_all<'a, W: Write>(
    records: impl IntoIterator<Item = Record<'a>>,
    out: &mut W,
) -> io::Result<u64> {
    let mut n = 0;
    for r in records {
        write_record(&r, out)?;
        n += 1;
    }
    Ok(n)
}
