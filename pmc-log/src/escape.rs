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

#[cfg(test)]
mod tests {
    use super::*;

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
