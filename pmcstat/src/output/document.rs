//! What pmcstat prints whole rather than as count rows: `-L`'s event list,
//! `--diagnose`'s checks, `--selftest`'s report and `-R --summary`'s top
//! functions, each a [`Document`]; and `-R`'s record-by-record listings, a
//! [`RecordWriter`]. [`write()`] and [`record_writer`] are the one place their
//! format is chosen, as `output::writer` is for counts. A new document is a type
//! implementing [`Document`]; a new format is an arm in each of the two.

use crate::config::Format;
use std::io::{self, Write};

/// A document printed whole, in text, `--json` or `-x SEP`.
pub trait Document {
    /// The text pmcstat prints without a format option.
    fn text(&self, o: &mut dyn Write) -> io::Result<()>;
    /// `--json`: one JSON document, on one line.
    fn json(&self, o: &mut dyn Write) -> io::Result<()>;
    /// `-x SEP`: one row per item, `sep` between cells (and replaced by a space
    /// inside them).
    fn csv(&self, o: &mut dyn Write, sep: &str) -> io::Result<()>;
}

/// Writes `doc` in `format`: `--json-report` is `--json` here (its own document is
/// counting's), `--columns` the text.
pub fn write(format: &Format, doc: &dyn Document, o: &mut dyn Write) -> io::Result<()> {
    match format {
        Format::Json | Format::JsonReport => doc.json(o),
        Format::Csv(sep) => doc.csv(o, sep),
        Format::Table | Format::Columns => doc.text(o),
    }
}

/// `value` as one JSON line.
pub fn json_line(o: &mut dyn Write, value: &impl serde::Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *o, value).map_err(io::Error::other)?;
    o.write_all(b"\n")
}

/// One CSV row: the cells joined by `sep`, each with `sep` (and line breaks)
/// replaced by a space so that a row stays one row.
pub fn csv_row(o: &mut dyn Write, sep: &str, cells: &[&str]) -> io::Result<()> {
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            o.write_all(sep.as_bytes())?;
        }
        let clean = if sep.is_empty() {
            c.replace(['\n', '\r'], " ")
        } else {
            c.replace(sep, " ").replace(['\n', '\r'], " ")
        };
        o.write_all(clean.as_bytes())?;
    }
    o.write_all(b"\n")
}

/// How `-R` prints each record of a log.
pub type RecordWriter = fn(&pmc_log::Record<'_>, &mut dyn Write) -> io::Result<()>;

/// `--json`: one JSON object per line; `--dump`: pmc-log's own text, every field;
/// otherwise pmcstat(8)'s `-R` listing (printlog).
pub fn record_writer(format: &Format, dump: bool) -> RecordWriter {
    match (format, dump) {
        (Format::Json, _) => |r, mut o| pmc_log::export::json::write_record(r, &mut o),
        (_, true) => |r, mut o| pmc_log::export::text::write_record(r, &mut o),
        (_, false) => |r, mut o| pmc_analyze::printlog::write_record(r, &mut o),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Two;
    impl Document for Two {
        fn text(&self, o: &mut dyn Write) -> io::Result<()> {
            writeln!(o, "two items")
        }
        fn json(&self, o: &mut dyn Write) -> io::Result<()> {
            json_line(o, &["a", "b"])
        }
        fn csv(&self, o: &mut dyn Write, sep: &str) -> io::Result<()> {
            csv_row(o, sep, &["a;1", "b\nc"])
        }
    }

    fn out(format: Format) -> String {
        let mut v = Vec::new();
        write(&format, &Two, &mut v).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn each_format_prints_its_form() {
        assert_eq!(out(Format::Table), "two items\n");
        assert_eq!(out(Format::Columns), "two items\n");
        assert_eq!(out(Format::Json), "[\"a\",\"b\"]\n");
        assert_eq!(out(Format::JsonReport), out(Format::Json));
        // The separator inside a cell, and a line break, become spaces.
        assert_eq!(out(Format::Csv(";".into())), "a 1;b c\n");
        assert_eq!(out(Format::Csv(",".into())), "a;1,b c\n");
    }
}
