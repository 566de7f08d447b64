//! [`ParseError`]: why an event string did not parse, where, and what to
//! write instead.

use std::fmt;
use std::ops::Range;

use super::MAX_EVENT_SPEC_LEN;

/// Why an event string did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// The string was empty.
    Empty,
    /// The string was longer than [`MAX_EVENT_SPEC_LEN`].
    TooLong,
    /// A name that is not a known event; perhaps a typo.
    UnknownEvent {
        /// The closest known name, if one is close.
        suggestion: Option<&'static str>,
    },
    /// A modifier letter that is not one of perf's `u k h p P G H I D e S W`.
    BadModifier(char),
    /// More than three `p` modifiers.
    TooPrecise,
    /// A `:` with nothing after it (`page-faults:`, `page-faults:k:`): rejected because its
    /// meaning is ambiguous (`a:b:` could be the tracepoint `a:b` or the event `a` with
    /// modifiers `b`) and it could not be printed back as written.
    EmptyModifiers,
    /// A hwpmc qualifier that is not `usr`, `os`, `edge`, `inv`, `anythread`
    /// or a `key=value` term.
    BadQualifier,
    /// A number that did not parse (or did not fit in 64 bits).
    BadNumber,
    /// A raw event `r...` whose digits are not hexadecimal.
    BadRaw,
    /// A `pmu/.../` form with a missing closing slash or an empty PMU name.
    BadPmu,
    /// A malformed term inside `pmu/.../` or a hwpmc qualifier list.
    BadTerm,
    /// A malformed tracepoint `subsystem:name`.
    BadTracepoint,
    /// A character that cannot appear in an event name.
    BadCharacter(char),
    /// A malformed `{...}` group of an event list: unbalanced or nested braces, no
    /// members, or something but `:modifiers` after the closing brace.
    BadGroup,
}

/// An event string that did not parse, with the byte span of the offending
/// part.
///
/// `Display` prints the input with a caret line under the span:
///
/// ```text
/// unknown event `page-fualts`; did you mean `page-faults`?
///   page-fualts
///   ^^^^^^^^^^^
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    input: String,
    span: Range<usize>,
    kind: ParseErrorKind,
}

impl ParseError {
    pub(super) fn new(input: &str, span: Range<usize>, kind: ParseErrorKind) -> ParseError {
        let end = span.end.min(input.len());
        let start = span.start.min(end);
        ParseError {
            input: input.to_owned(),
            span: start..end,
            kind,
        }
    }
    /// The byte range of the offending part of the input.
    pub fn span(&self) -> Range<usize> {
        self.span.clone()
    }
    /// The (0-based) byte position where the offending part starts.
    pub fn position(&self) -> usize {
        self.span.start
    }
    /// What was wrong.
    pub fn kind(&self) -> &ParseErrorKind {
        &self.kind
    }
    /// The whole input.
    pub fn input(&self) -> &str {
        &self.input
    }

    /// This error of a piece of `whole` that starts at byte `at`: the same kind,
    /// its span moved into `whole`.
    pub(super) fn shifted(self, whole: &str, at: usize) -> ParseError {
        ParseError::new(whole, self.span.start + at..self.span.end + at, self.kind)
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let part = self.input.get(self.span.clone()).unwrap_or("");
        match &self.kind {
            ParseErrorKind::Empty => f.write_str("empty event specification")?,
            ParseErrorKind::TooLong => write!(
                f,
                "event specification longer than {MAX_EVENT_SPEC_LEN} bytes"
            )?,
            ParseErrorKind::UnknownEvent { suggestion } => {
                write!(f, "unknown event `{part}`")?;
                match suggestion {
                    Some(s) => write!(f, "; did you mean `{s}`?")?,
                    None => f.write_str("; `Backend::list_events` lists the events")?,
                }
            }
            ParseErrorKind::BadModifier(c) => write!(
                f,
                "unknown modifier `{c}` (expected perf's u, k, h, p, P, G, H, I, D, e, S or W)"
            )?,
            ParseErrorKind::TooPrecise => {
                f.write_str("at most three `p` modifiers (precise_ip 0-3)")?
            }
            ParseErrorKind::EmptyModifiers => f.write_str(
                "nothing after the last `:` (remove it, or give modifiers such as u, k, h or p)",
            )?,
            ParseErrorKind::BadQualifier => write!(
                f,
                "unknown qualifier `{part}` (expected usr, os, edge, inv, anythread, or key=value)"
            )?,
            ParseErrorKind::BadNumber => {
                write!(f, "bad number `{part}` (decimal or 0x-hex, 64 bits)")?
            }
            ParseErrorKind::BadRaw => write!(
                f,
                "bad raw event `{part}`: expected r followed by hex digits"
            )?,
            ParseErrorKind::BadPmu => write!(f, "bad PMU event `{part}`: expected pmu/term,term/")?,
            ParseErrorKind::BadTerm => write!(f, "bad term `{part}`: expected name or name=value")?,
            ParseErrorKind::BadTracepoint => {
                write!(f, "bad tracepoint `{part}`: expected subsystem:name")?
            }
            ParseErrorKind::BadCharacter(c) => write!(f, "unexpected character `{c}`")?,
            ParseErrorKind::BadGroup => write!(
                f,
                "bad event group `{part}`: expected {{event,event,...}} or {{...}}:modifiers, \
                 not nested"
            )?,
        }
        write!(f, " at position {}", self.span.start)?;
        // The caret display, only for inputs short enough to read.
        if self.input.len() <= 200 && !self.input.contains('\n') {
            let pad: usize = self
                .input
                .get(..self.span.start)
                .map_or(0, |s| s.chars().count());
            let width = part.chars().count().max(1);
            write!(
                f,
                "\n  {}\n  {}{}",
                self.input,
                " ".repeat(pad),
                "^".repeat(width)
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseError {}
