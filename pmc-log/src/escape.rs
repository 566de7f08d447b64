//! Escaping the strings a log carries before they reach a terminal or a text report.
//!
//! Paths, command names and symbol names in a log are whatever its writer (or whoever
//! named a file it mapped) chose: `\e]0;PWNED\a\e[2J` retitles and clears a terminal, and an
//! embedded newline prints a line that looks like the tool's own
//! (`pmcstat: log clean, 0 samples lost`). [`escape`] makes every control character
//! visible: C0 (U+0000-U+001F), DEL (U+007F) and C1 (U+0080-U+009F). ESC is `\e`, the usual
//! whitespace controls are `\n`, `\r`, `\t`, the others `\xNN` with their code point.
//! Everything else, non-ASCII text included, is kept as it is.

use std::borrow::Cow;

/// Whether `c` is a control character [`escape`] rewrites.
pub fn is_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// `s` with every control character escaped (see the module documentation); borrowed
/// when it has none.
///
/// ```
/// use pmc_log::escape::escape;
/// assert_eq!(escape("/usr/lib/libc.so.6"), "/usr/lib/libc.so.6");
/// assert_eq!(escape("a\u{1b}]0;PWNED\u{7}\nb\u{9b}"), "a\\e]0;PWNED\\x07\\nb\\x9b");
/// ```
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_control) {
        return Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\u{1b}' => o.push_str("\\e"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if is_control(c) => o.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => o.push(c),
        }
    }
    Cow::Owned(o)
}

/// [`escape`] of bytes that may not be UTF-8 (invalid sequences become U+FFFD).
///
/// ```
/// assert_eq!(pmc_log::escape::escape_bytes(b"x\x1b[2J\xff"), "x\\e[2J\u{fffd}");
/// ```
pub fn escape_bytes(b: &[u8]) -> String {
    escape(&String::from_utf8_lossy(b)).into_owned()
}

/// A writer of JSON text that escapes the controls JSON allows raw: DEL (U+007F) and C1
/// (U+0080-U+009F) become `\u007f`, `\u0080`...`\u009f` (JSON encoders escape C0, which
/// JSON forbids raw, but pass these through, and a C1 CSI, U+009B, drives a terminal as
/// ESC `[` does). The text means the same to every JSON reader. Outside strings JSON text
/// is ASCII structure, so only string contents change.
///
/// ```
/// use std::io::Write;
/// let mut w = pmc_log::escape::JsonControls::new(Vec::new());
/// w.write_all("[\"a\u{9b}2J\u{7f}é\"]".as_bytes())?;
/// assert_eq!(w.into_inner()?, r#"["a\u009b2J\u007fé"]"#.as_bytes());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct JsonControls<W: std::io::Write> {
    inner: W,
    /// The last write ended with the lead byte 0xC2 of a two-byte character.
    lead: bool,
}

impl<W: std::io::Write> JsonControls<W> {
    /// Escapes what is written into `inner`.
    pub fn new(inner: W) -> Self {
        JsonControls { inner, lead: false }
    }

    /// The writer, after the bytes held back (a lead byte whose character never came).
    pub fn into_inner(mut self) -> std::io::Result<W> {
        if std::mem::take(&mut self.lead) {
            self.inner.write_all(&[0xc2])?;
        }
        Ok(self.inner)
    }

    fn escape_into(&mut self, mut buf: &[u8]) -> std::io::Result<()> {
        let c1 = |b: u8| (0x80..=0x9f).contains(&b);
        if self.lead {
            let Some(&b) = buf.first() else {
                return Ok(());
            };
            self.lead = false;
            if c1(b) {
                write!(self.inner, "\\u{:04x}", b)?;
                buf = &buf[1..];
            } else {
                self.inner.write_all(&[0xc2])?;
            }
        }
        while let Some(i) = buf.iter().position(|&b| b == 0x7f || b == 0xc2) {
            self.inner.write_all(&buf[..i])?;
            if buf[i] == 0x7f {
                self.inner.write_all(b"\\u007f")?;
                buf = &buf[i + 1..];
                continue;
            }
            match buf.get(i + 1) {
                None => {
                    self.lead = true;
                    return Ok(());
                }
                Some(&b) if c1(b) => {
                    write!(self.inner, "\\u{:04x}", b)?;
                    buf = &buf[i + 2..];
                }
                Some(_) => {
                    self.inner.write_all(&[0xc2])?;
                    buf = &buf[i + 1..];
                }
            }
        }
        self.inner.write_all(buf)
    }
}

impl<W: std::io::Write> std::io::Write for JsonControls<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.escape_into(buf)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// [`JsonControls`] over a JSON text held whole.
///
/// ```
/// assert_eq!(pmc_log::escape::json_controls("\"\u{85}\"".into()), r#""\u0085""#);
/// ```
pub fn json_controls(json: String) -> String {
    if !json.contains(|c: char| ('\u{7f}'..='\u{9f}').contains(&c)) {
        return json;
    }
    let mut w = JsonControls::new(Vec::with_capacity(json.len() + 16));
    // Writing into a Vec cannot fail; the text stays UTF-8 (each escape is ASCII).
    let _ = std::io::Write::write_all(&mut w, json.as_bytes());
    w.into_inner()
        .ok()
        .and_then(|v| String::from_utf8(v).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 32 item 12: every DEL and C1 character of a JSON text is escaped, however
    /// the writes split it, and the text reads back to the same value.
    #[test]
    fn json_controls_escapes_c1_across_any_split() {
        let text = "[\"\u{9b}a\u{80}\u{7f}\u{c2}\u{a0}\u{9f}é\u{85}\"]";
        let want = "[\"\\u009ba\\u0080\\u007f\u{c2}\u{a0}\\u009fé\\u0085\"]";
        for cut in 0..=text.len() {
            let mut w = JsonControls::new(Vec::new());
            std::io::Write::write_all(&mut w, &text.as_bytes()[..cut]).unwrap();
            std::io::Write::write_all(&mut w, &text.as_bytes()[cut..]).unwrap();
            let out = String::from_utf8(w.into_inner().unwrap()).unwrap();
            assert_eq!(out, want, "cut at {cut}");
            assert!(!out.chars().any(|c| ('\u{7f}'..='\u{9f}').contains(&c)));
        }
        assert_eq!(json_controls(text.into()), want);
    }

    #[test]
    fn every_control_is_escaped_and_nothing_else() {
        // Every code point natively. Under Miri (1.1M allocations would take hours; even
        // filtering the whole range there took minutes) every one below U+0100, where all
        // the controls (C0, DEL, C1) and their neighbours are, the UTF-8 length
        // boundaries, and every 65521st above, generated rather than filtered.
        let points: Box<dyn Iterator<Item = u32>> = if cfg!(miri) {
            Box::new(
                (0..0x100)
                    .chain([0x7ff, 0x800, 0xffff, 0x10000, 0x10ffff])
                    .chain((0x100..0x110000).step_by(65521)),
            )
        } else {
            Box::new(0..0x110000)
        };
        for c in points.filter_map(char::from_u32) {
            let s = c.to_string();
            let e = escape(&s);
            if is_control(c) {
                assert!(e.starts_with('\\'), "{c:?} -> {e:?}");
                assert!(!e.chars().any(is_control), "{c:?} -> {e:?}");
            } else {
                assert_eq!(e, s);
            }
        }
    }
}
