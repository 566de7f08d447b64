//! The log target: where pmcstat's own messages go (standard error), and
//! whether `-q` keeps the informational ones back. Errors and warnings
//! (`diag!`) always print; notes (`note!`) not with `-q`.

/// Writes a diagnostic line to standard error, ignoring errors: a closed or full standard
/// error has nowhere to report to, and `eprintln!` would panic there
/// (`pmcstat ... 2>&1 | head -1`).
///
/// Every line is [`shown`]: whatever names it carries (an event string, a path, a process
/// or cgroup name, from the user, a log or the system), no control character reaches the
/// terminal and no 100 KB argument is echoed whole.
macro_rules! diag {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let line = format!($($arg)*);
        let _ = writeln!(std::io::stderr().lock(), "{}", $crate::diag::shown(&line));
    }};
}

/// The longest run of non-blank characters a message shows whole (a path is at most
/// 4096 bytes, but no one reads 4 KB of one word); longer ones are cut in the middle.
const LONGEST_WORD: usize = 1024;

/// A message as pmcstat prints it: each of its lines with its control characters escaped
/// (pmc-log's escaper: ESC as `\e`, C1 as `\xNN`), and each word longer than
/// [`LONGEST_WORD`] characters cut in the middle, saying how many bytes were left out.
/// Escaping escaped text changes nothing, so a message built from escaped names is shown
/// as it was.
pub fn shown(msg: &str) -> std::borrow::Cow<'_, str> {
    let long = msg
        .split(|c: char| c.is_whitespace())
        .any(|w| w.len() > LONGEST_WORD);
    let controls = msg
        .chars()
        .any(|c| c != '\n' && pmc_log::escape::is_control(c));
    if !long && !controls {
        return std::borrow::Cow::Borrowed(msg);
    }
    let lines: Vec<String> = msg
        .split('\n')
        .map(|l| {
            let l = pmc_log::escape::escape(l);
            if !long {
                return l.into_owned();
            }
            let words: Vec<String> = l.split(' ').map(cut_word).collect();
            words.join(" ")
        })
        .collect();
    std::borrow::Cow::Owned(lines.join("\n"))
}

/// `w` whole, or its first and last characters around `[... N bytes ...]` when it is
/// longer than [`LONGEST_WORD`] characters.
fn cut_word(w: &str) -> String {
    let n = w.chars().count();
    if n <= LONGEST_WORD {
        return w.to_owned();
    }
    let head: String = w.chars().take(LONGEST_WORD / 2).collect();
    let tail: String = w.chars().skip(n - LONGEST_WORD / 4).collect();
    let cut = w.len() - head.len() - tail.len();
    format!("{head}[... {cut} bytes ...]{tail}")
}

/// `-q`: informational lines (`note!`) are not printed.
pub static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether `-q` asked for fewer messages.
pub fn quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

/// An informational line on standard error (what was written where, what a
/// log held, how many symbols were missing): as [`diag!`], but not with
/// `-q`. Errors and warnings use `diag!` and are always printed.
macro_rules! note {
    ($($arg:tt)*) => {{
        if !$crate::diag::quiet() {
            diag!($($arg)*);
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::shown;

    /// Issue 32 item 12: no control character and no endless word reaches the terminal.
    #[test]
    fn messages_are_escaped_and_cut() {
        assert_eq!(
            shown("pmcstat: plain\nsecond line"),
            "pmcstat: plain\nsecond line"
        );
        let m = "pmcstat: `x\u{1b}]0;T\u{7}\u{9b}2J`\n  x\u{1b}";
        assert_eq!(shown(m), "pmcstat: `x\\e]0;T\\x07\\x9b2J`\n  x\\e");
        assert_eq!(shown(&shown(m)), shown(m));
        let big = format!(
            "cannot create /tmp/{}: File name too long",
            "a".repeat(100_000)
        );
        let s = shown(&big);
        assert!(s.len() < 1_000, "{}", s.len());
        assert!(s.starts_with("cannot create /tmp/aaa"), "{s}");
        assert!(s.ends_with("aaa: File name too long"), "{s}");
        assert!(s.contains("bytes ...]"), "{s}");
    }
}
