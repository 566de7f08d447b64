//! What pmcstat prints whole rather than as count rows: `-L`'s event list,
//! `--diagnose`'s checks, `--selftest`'s report and `-R --summary`'s top
//! functions, each a [`Document`]; and `-R`'s record-by-record listings, a
//! [`RecordWriter`]. [`write()`] and [`record_writer`] are the one place their
//! format is chosen, as `output::writer` is for counts. A new document is a type
//! implementing [`Document`]; a new format is an arm in each of the two.

use crate::config::Format;
use std::borrow::Cow;
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
    // DEL and C1 in names escaped as well (serde_json escapes C0 only).
    let mut w = pmc_log::escape::JsonControls::new(&mut *o);
    serde_json::to_writer(&mut w, value).map_err(io::Error::other)?;
    w.into_inner()?.write_all(b"\n")
}

/// One CSV row: the cells joined by `sep`, each made safe by [`csv_cell`], so that a row
/// stays one row of the same number of cells whatever the names in it.
pub fn csv_row(o: &mut dyn Write, sep: &str, cells: &[&str]) -> io::Result<()> {
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            o.write_all(sep.as_bytes())?;
        }
        o.write_all(csv_cell(c, sep).as_bytes())?;
    }
    o.write_all(b"\n")
}

/// A cell of a `-x SEP` row, the one rule of every CSV pmcstat writes: control characters
/// escaped by pmc-log's escaper (a line break becomes `\n`, ESC `\e`), then `sep` inside
/// the cell replaced by a space and a double quote by a single one (a CSV reader takes a
/// `"` at a cell's start as quoting). `sep` itself is never empty or a line break (`-x`
/// refuses those).
pub fn csv_cell<'a>(c: &'a str, sep: &str) -> Cow<'a, str> {
    let escaped = pmc_log::escape::escape(c);
    let has_sep = !sep.is_empty() && escaped.contains(sep);
    if !has_sep && !escaped.contains('"') {
        return escaped;
    }
    let mut out = escaped.into_owned();
    if has_sep {
        out = out.replace(sep, " ");
    }
    Cow::Owned(out.replace('"', "'"))
}

/// Why `sep` cannot separate CSV cells, if it cannot: empty (the cells would run together)
/// or holding a line break (one row would be several lines).
pub fn csv_separator_refused(sep: &str) -> Option<&'static str> {
    if sep.is_empty() {
        return Some("an empty separator runs the cells together");
    }
    let breaks = [
        '\n', '\r', '\u{b}', '\u{c}', '\u{85}', '\u{2028}', '\u{2029}',
    ];
    if sep.contains(breaks) {
        return Some("a line break in the separator splits each row over several lines");
    }
    None
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
        // The separator inside a cell becomes a space, a line break `\n`.
        assert_eq!(out(Format::Csv(";".into())), "a 1;b\\nc\n");
        assert_eq!(out(Format::Csv(",".into())), "a;1,b\\nc\n");
    }

    /// Issue 32 item 10: every cell keeps its row's shape: the separator, quotes and
    /// control characters of a name (a cgroup `au3"x,y;z`) cannot add a cell or a line.
    #[test]
    fn cells_never_add_cells_or_lines() {
        for sep in [",", ";", "\t", "::", "e", "\\"] {
            for name in [
                "au3\"x,y;z",
                "\"q",
                "a\u{1b}]0;T\u{7}\nb\u{9b}",
                "x::y\\z\te",
            ] {
                let mut v = Vec::new();
                csv_row(&mut v, sep, &["1", name, "2"]).unwrap();
                let row = String::from_utf8(v).unwrap();
                let row = row.strip_suffix('\n').unwrap();
                assert_eq!(row.split(sep).count(), 3, "{sep:?} {name:?}: {row:?}");
                assert!(
                    !row.contains(['\n', '\r', '"', '\u{1b}', '\u{9b}']),
                    "{row:?}"
                );
            }
        }
        assert!(csv_separator_refused("").is_some());
        assert!(csv_separator_refused("\n").is_some());
        assert!(csv_separator_refused(";\r").is_some());
        assert!(csv_separator_refused("\t").is_none());
    }
}
