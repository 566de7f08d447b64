//! perf's `-e` lists and `{...}` groups: [`EventList`], [`EventItem`],
//! [`EventGroup`].

use std::fmt;
use std::str::FromStr;

use super::modifiers::{write_mods, Modifiers};
use super::parse_error::{ParseError, ParseErrorKind};
use super::parser::Parser;
use super::spec::EventSpec;
use super::MAX_EVENT_SPEC_LEN;

/// perf's `-e` list: events and `{...}` groups separated by commas
/// (`page-faults,{cycles,instructions}:u,duration_time`).
///
/// A string whose commas are one event's own (hwpmc's `instructions,usr`,
/// `event=0xc0,umask=0`) is a list of that one event; terms inside `pmu/.../`
/// keep their commas. `Display` prints a form that parses back to an equal list.
///
/// ```
/// use pmc::event::{EventItem, EventList};
/// let list: EventList = "page-faults,{cycles,instructions}:u".parse().unwrap();
/// assert_eq!(list.items.len(), 2);
/// let EventItem::Group(g) = &list.items[1] else { panic!() };
/// assert!(g.modifiers.user);
/// let members = g.member_specs();
/// assert_eq!(members[1].to_string(), "instructions:u");
/// assert_eq!(list.to_string(), "page-faults,{cycles,instructions}:u");
/// assert_eq!("instructions,usr".parse::<EventList>().unwrap().items.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EventList {
    /// The events and groups, in order.
    pub items: Vec<EventItem>,
}

/// One item of an [`EventList`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EventItem {
    /// An event on its own.
    Event(EventSpec),
    /// perf's `{a,b,...}:mods`: events scheduled together, the first the leader.
    Group(EventGroup),
}

/// perf's event group `{a,b}:mods`: members as written, and the group's
/// modifiers, which apply to every member ([`EventGroup::member_specs`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EventGroup {
    /// The members as written, the leader first.
    pub members: Vec<EventSpec>,
    /// The modifiers after the closing brace.
    pub modifiers: Modifiers,
}

impl EventGroup {
    /// Each member with the group's modifiers added to its own, as perf applies
    /// them.
    pub fn member_specs(&self) -> Vec<EventSpec> {
        self.members
            .iter()
            .map(|m| EventSpec {
                modifiers: m.modifiers.merged(&self.modifiers),
                ..m.clone()
            })
            .collect()
    }
}

impl fmt::Display for EventGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, m) in self.members.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{m}")?;
        }
        f.write_str("}")?;
        write_mods(f, &self.modifiers, true)
    }
}

impl fmt::Display for EventItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventItem::Event(e) => write!(f, "{e}"),
            EventItem::Group(g) => write!(f, "{g}"),
        }
    }
}

impl fmt::Display for EventList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, item) in self.items.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{item}")?;
        }
        Ok(())
    }
}

/// `s` split at its top-level commas (outside `{...}` and `/.../`): each piece
/// with its byte offset in `s`; for unbalanced or nested braces, the offset of
/// the offending one.
fn split_top(s: &str) -> Result<Vec<(usize, &str)>, usize> {
    let mut pieces = Vec::new();
    let (mut depth, mut start, mut in_pmu) = (0usize, 0usize, false);
    for (i, ch) in s.char_indices() {
        match ch {
            '/' => in_pmu = !in_pmu,
            '{' if !in_pmu => {
                if depth > 0 {
                    return Err(i); // groups do not nest
                }
                depth += 1;
            }
            '}' if !in_pmu => {
                if depth == 0 {
                    return Err(i);
                }
                depth -= 1;
            }
            ',' if depth == 0 && !in_pmu => {
                pieces.push((start, &s[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth > 0 {
        return Err(s.rfind('{').unwrap_or(0));
    }
    pieces.push((start, &s[start..]));
    Ok(pieces)
}

impl FromStr for EventList {
    type Err = ParseError;

    fn from_str(input: &str) -> Result<EventList, ParseError> {
        if input.len() > MAX_EVENT_SPEC_LEN {
            return Err(ParseError::new(
                input,
                0..input.len(),
                ParseErrorKind::TooLong,
            ));
        }
        let pieces = split_top(input)
            .map_err(|at| ParseError::new(input, at..at + 1, ParseErrorKind::BadGroup))?;
        let grouped = pieces.iter().any(|(_, p)| p.trim_start().starts_with('{'));
        if pieces.len() == 1 && !grouped {
            return Ok(EventList {
                items: vec![EventItem::Event(input.parse()?)],
            });
        }
        // One event with commas of its own (hwpmc qualifiers), unless it has groups.
        if !grouped {
            let all: Result<Vec<EventSpec>, ParseError> = pieces
                .iter()
                .map(|(at, p)| p.parse::<EventSpec>().map_err(|e| e.shifted(input, *at)))
                .collect();
            return match all {
                Ok(events) if events.len() > 1 => Ok(EventList {
                    items: events.into_iter().map(EventItem::Event).collect(),
                }),
                _ => Ok(EventList {
                    items: vec![EventItem::Event(input.parse()?)],
                }),
            };
        }
        let mut items = Vec::with_capacity(pieces.len());
        for (at, piece) in pieces {
            let lead = piece.len() - piece.trim_start().len();
            let body = piece.trim();
            if !body.starts_with('{') {
                items.push(EventItem::Event(
                    piece
                        .parse()
                        .map_err(|e: ParseError| e.shifted(input, at))?,
                ));
                continue;
            }
            items.push(EventItem::Group(parse_group(input, at + lead, body)?));
        }
        Ok(EventList { items })
    }
}

impl EventList {
    /// Parses `input` as [`EventList::from_str`] does, each item with its text as typed
    /// (trimmed): a tool labels counts as the user wrote them (`cs`, not
    /// `context-switches`). A group's text is `{...}:mods`; [`EventGroup::typed_members`]
    /// gives its members'.
    ///
    /// ```
    /// use pmc::event::EventList;
    /// let items = EventList::parse_typed("cs, {faults,cs:k}:u").unwrap();
    /// let typed: Vec<&str> = items.iter().map(|(_, t)| *t).collect();
    /// assert_eq!(typed, ["cs", "{faults,cs:k}:u"]);
    /// assert_eq!(EventList::parse_typed("instructions,usr").unwrap()[0].1, "instructions,usr");
    /// ```
    ///
    /// # Errors
    /// As [`EventList::from_str`].
    pub fn parse_typed(input: &str) -> Result<Vec<(EventItem, &str)>, ParseError> {
        let list: EventList = input.parse()?;
        if list.items.len() == 1 {
            let item = list.items.into_iter().next().into_iter();
            return Ok(item.map(|i| (i, input.trim())).collect());
        }
        let pieces = split_top(input)
            .map_err(|at| ParseError::new(input, at..at + 1, ParseErrorKind::BadGroup))?;
        Ok(list
            .items
            .into_iter()
            .zip(pieces)
            .map(|(i, (_, t))| (i, t.trim()))
            .collect())
    }
}

impl EventGroup {
    /// The members' texts as typed, from the group's typed text (`{a,b:k}:u` gives `a`
    /// and `b:k`), as [`EventList::parse_typed`] gives it.
    pub fn typed_members(typed: &str) -> Vec<&str> {
        let inner = typed
            .trim()
            .strip_prefix('{')
            .and_then(|t| t.rfind('}').map(|end| &t[..end]))
            .unwrap_or("");
        match split_top(inner) {
            Ok(pieces) => pieces.into_iter().map(|(_, t)| t.trim()).collect(),
            Err(_) => Vec::new(),
        }
    }
}

/// `{a,b,...}` or `{a,b,...}:mods` at byte `at` of `input`.
fn parse_group(input: &str, at: usize, body: &str) -> Result<EventGroup, ParseError> {
    let bad = |from: usize, len: usize| {
        ParseError::new(
            input,
            at + from..at + from + len.max(1),
            ParseErrorKind::BadGroup,
        )
    };
    let close = body.rfind('}').ok_or_else(|| bad(0, body.len()))?;
    let inner = &body[1..close];
    let after = &body[close + 1..];
    let modifiers = match after.strip_prefix(':') {
        None if after.is_empty() => Modifiers::default(),
        Some("") => {
            return Err(ParseError::new(
                input,
                at + close + 1..at + close + 2,
                ParseErrorKind::EmptyModifiers,
            ))
        }
        Some(m) => {
            let p = Parser {
                input,
                base: at + close + 2,
            };
            p.modifiers(m, 0)?
        }
        None => return Err(bad(close + 1, after.len())),
    };
    if inner.trim().is_empty() {
        return Err(bad(0, body.len()));
    }
    let pieces = split_top(inner).map_err(|i| bad(1 + i, 1))?;
    let mut members = Vec::with_capacity(pieces.len());
    for (off, piece) in pieces {
        let member: EventSpec = piece
            .parse()
            .map_err(|e: ParseError| e.shifted(input, at + 1 + off))?;
        members.push(member);
    }
    Ok(EventGroup { members, modifiers })
}
