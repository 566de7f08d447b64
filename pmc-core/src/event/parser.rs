//! The parser: `EventSpec::from_str` and its grammar (plain names,
//! `pmu/.../` terms, hwpmc-style qualifiers, modifiers).

use std::str::FromStr;

use super::modifiers::{is_modifier_string, Modifiers};
use super::names::{is_generic_name, is_hwpmc_name, is_known_name, suggest, PortableEvent};
use super::parse_error::{ParseError, ParseErrorKind};
use super::spec::{EventSource, EventSpec, Term};
use super::MAX_EVENT_SPEC_LEN;

impl FromStr for EventSpec {
    type Err = ParseError;

    fn from_str(input: &str) -> Result<EventSpec, ParseError> {
        if input.len() > MAX_EVENT_SPEC_LEN {
            return Err(ParseError::new(
                input,
                0..input.len(),
                ParseErrorKind::TooLong,
            ));
        }
        let lead = input.len() - input.trim_start().len();
        let s = input.trim();
        if s.is_empty() {
            return Err(ParseError::new(
                input,
                0..input.len(),
                ParseErrorKind::Empty,
            ));
        }
        let p = Parser { input, base: lead };
        if let Some(c) = s.chars().find(|c| c.is_whitespace() || c.is_control()) {
            let pos = lead + s.find(c).unwrap_or(0);
            return Err(ParseError::new(
                input,
                pos..pos + c.len_utf8(),
                ParseErrorKind::BadCharacter(c),
            ));
        }
        if s.contains('/') {
            p.pmu(s)
        } else if s.contains(',') || s.contains('=') {
            p.hwpmc(s)
        } else {
            p.plain(s)
        }
    }
}

pub(super) struct Parser<'a> {
    pub(super) input: &'a str,
    /// Offset of the trimmed string within `input`.
    pub(super) base: usize,
}

impl Parser<'_> {
    fn err(&self, start: usize, len: usize, kind: ParseErrorKind) -> ParseError {
        let s = self.base + start;
        ParseError::new(self.input, s..s + len, kind)
    }

    /// `pmu/terms/mods`
    fn pmu(&self, s: &str) -> Result<EventSpec, ParseError> {
        let Some(first) = s.find('/') else {
            return Err(self.err(0, s.len(), ParseErrorKind::BadPmu));
        };
        let pmu = &s[..first];
        if pmu.is_empty()
            || !pmu
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        {
            return Err(self.err(0, first.max(1), ParseErrorKind::BadPmu));
        }
        let rest = &s[first + 1..];
        let Some(close) = rest.find('/') else {
            return Err(self.err(0, s.len(), ParseErrorKind::BadPmu));
        };
        let body = &rest[..close];
        let body_off = first + 1;
        let mods_off = body_off + close + 1;
        let mods_str = &s[mods_off..];
        let mut name = None;
        let terms = self.terms(body, body_off, Some(&mut name))?;
        let modifiers = self.modifiers(mods_str, mods_off)?;
        // perf's `page-faults/name=pf/`: a named event with terms, of which this
        // parser takes `name=` alone.
        if PortableEvent::from_name(pmu).is_some() || is_generic_name(pmu) {
            if let Some(t) = terms.first() {
                let at = body_off + body.find(t.key.as_str()).unwrap_or(0);
                return Err(self.err(at, t.key.len(), ParseErrorKind::BadTerm));
            }
            let mut spec = self.name(pmu, 0, modifiers)?;
            spec.name = name;
            return Ok(spec);
        }
        if terms.is_empty() {
            return Err(self.err(0, s.len(), ParseErrorKind::BadPmu));
        }
        Ok(EventSpec {
            source: EventSource::Pmu {
                pmu: pmu.to_owned(),
                terms,
            },
            modifiers,
            name,
        })
    }

    /// The terms of `body` (at `off` in the input). `name`: where perf's `name=NAME`
    /// goes (`pmu/.../` terms); hwpmc's qualifier lists have none (`None`), and no
    /// empty terms either.
    fn terms(
        &self,
        body: &str,
        off: usize,
        mut name: Option<&mut Option<String>>,
    ) -> Result<Vec<Term>, ParseError> {
        let hwpmc = name.is_none();
        let mut terms = Vec::new();
        let mut pos = off;
        for part in body.split(',') {
            let here = pos;
            pos += part.len() + 1;
            if part.is_empty() {
                if hwpmc {
                    return Err(self.err(here, 1, ParseErrorKind::BadTerm));
                }
                continue;
            }
            let (key, value) = match part.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (part, None),
            };
            if let (Some(slot), "name", Some(v)) = (name.as_deref_mut(), key, value) {
                let ok = !v.is_empty()
                    && v.len() <= 256
                    && v.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_-.:+@".contains(c));
                if !ok || slot.is_some() {
                    return Err(self.err(here, part.len(), ParseErrorKind::BadTerm));
                }
                *slot = Some(v.to_owned());
                continue;
            }
            if key.is_empty()
                || !key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            {
                return Err(self.err(here, part.len(), ParseErrorKind::BadTerm));
            }
            let value = match value {
                None => None,
                Some(v) => Some(parse_number(v).ok_or_else(|| {
                    self.err(
                        here + key.len() + 1,
                        v.len().max(1),
                        ParseErrorKind::BadNumber,
                    )
                })?),
            };
            terms.push(Term {
                key: key.to_owned(),
                value,
            });
        }
        Ok(terms)
    }

    /// `name,qual,...` (hwpmc style) or `event=..,umask=..,usr`.
    fn hwpmc(&self, s: &str) -> Result<EventSpec, ParseError> {
        let mut modifiers = Modifiers::default();
        let (head, quals, quals_off) = match s.find(',') {
            Some(i) if !s[..i].contains('=') => (&s[..i], &s[i + 1..], i + 1),
            _ => ("", s, 0),
        };
        let mut terms = Vec::new();
        let mut pos = quals_off;
        for q in quals.split(',') {
            let here = pos;
            pos += q.len() + 1;
            let lower = q.to_ascii_lowercase();
            match lower.as_str() {
                "usr" => modifiers.user = true,
                "os" => modifiers.kernel = true,
                "" => return Err(self.err(here, 1, ParseErrorKind::BadQualifier)),
                _ => {
                    let t = self.terms(q, here, None)?;
                    let known = t.iter().all(|t| {
                        let k = t.key.to_ascii_lowercase();
                        matches!(
                            (k.as_str(), t.value.is_some()),
                            (
                                "event"
                                    | "umask"
                                    | "cmask"
                                    | "threshold"
                                    | "config"
                                    | "mask"
                                    | "ldlat",
                                true
                            ) | ("edge" | "inv" | "anythread" | "precise" | "count", _)
                        )
                    });
                    if !known {
                        return Err(self.err(here, q.len(), ParseErrorKind::BadQualifier));
                    }
                    terms.extend(t);
                }
            }
        }
        if head.is_empty() {
            if !terms.iter().any(|t| t.key.eq_ignore_ascii_case("event")) {
                return Err(self.err(0, s.len(), ParseErrorKind::BadTerm));
            }
            return Ok(EventSpec {
                source: EventSource::HwpmcTerms(terms),
                modifiers,
                name: None,
            });
        }
        if !terms.is_empty() {
            // `name,cmask=1`: a named event with extra qualifiers.
            let mut named = vec![Term {
                key: head.to_owned(),
                value: None,
            }];
            named.extend(terms);
            return Ok(EventSpec {
                source: EventSource::HwpmcTerms(named),
                modifiers,
                name: None,
            });
        }
        let mut spec = self.plain(head)?;
        if spec.modifiers.is_restricted() {
            return Err(self.err(0, head.len(), ParseErrorKind::BadQualifier));
        }
        spec.modifiers.user |= modifiers.user;
        spec.modifiers.kernel |= modifiers.kernel;
        Ok(spec)
    }

    /// A name with optional `:mods`, a raw `rNNN`, or a tracepoint.
    fn plain(&self, s: &str) -> Result<EventSpec, ParseError> {
        if s.ends_with(':') {
            return Err(self.err(s.len() - 1, 1, ParseErrorKind::EmptyModifiers));
        }
        let parts: Vec<&str> = s.split(':').collect();
        match parts.as_slice() {
            [name] => self.name(name, 0, Modifiers::default()),
            [name, mods]
                if !name.is_empty() && (is_modifier_string(mods) || is_known_name(name)) =>
            {
                let m = self.modifiers(mods, name.len() + 1)?;
                self.name(name, 0, m)
            }
            [sub, name] => self.tracepoint(sub, name, Modifiers::default()),
            [sub, name, mods] => {
                let m = self.modifiers(mods, sub.len() + name.len() + 2)?;
                self.tracepoint(sub, name, m)
            }
            _ => Err(self.err(0, s.len(), ParseErrorKind::BadTracepoint)),
        }
    }

    fn tracepoint(
        &self,
        sub: &str,
        name: &str,
        modifiers: Modifiers,
    ) -> Result<EventSpec, ParseError> {
        let ok = |x: &str| {
            !x.is_empty()
                && x.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        if !ok(sub) {
            return Err(self.err(0, sub.len().max(1), ParseErrorKind::BadTracepoint));
        }
        if !ok(name) {
            return Err(self.err(
                sub.len() + 1,
                name.len().max(1),
                ParseErrorKind::BadTracepoint,
            ));
        }
        Ok(EventSpec {
            source: EventSource::Tracepoint {
                subsystem: sub.to_owned(),
                name: name.to_owned(),
            },
            modifiers,
            name: None,
        })
    }

    fn name(&self, name: &str, off: usize, modifiers: Modifiers) -> Result<EventSpec, ParseError> {
        let source = if let Some(p) = PortableEvent::from_name(name) {
            EventSource::Portable(p)
        } else if is_generic_name(name) {
            EventSource::Generic(name.to_owned())
        } else if let Some(hex) = name
            .strip_prefix('r')
            .filter(|h| !h.is_empty() && h.len() <= 16 && h.chars().all(|c| c.is_ascii_hexdigit()))
        {
            EventSource::Raw(
                u64::from_str_radix(hex, 16)
                    .map_err(|_| self.err(off, name.len(), ParseErrorKind::BadRaw))?,
            )
        } else if is_hwpmc_name(name) {
            EventSource::Hwpmc(name.to_owned())
        } else {
            if let Some(c) = name
                .chars()
                .find(|c| !(c.is_ascii_alphanumeric() || "-_.".contains(*c)))
            {
                let pos = off + name.find(c).unwrap_or(0);
                return Err(self.err(pos, c.len_utf8(), ParseErrorKind::BadCharacter(c)));
            }
            if name.len() > 1
                && name.starts_with('r')
                && name.len() <= 17
                && name[1..].chars().all(|c| c.is_ascii_alphanumeric())
                && name[1..].chars().any(|c| c.is_ascii_digit())
            {
                return Err(self.err(off, name.len(), ParseErrorKind::BadRaw));
            }
            return Err(self.err(
                off,
                name.len(),
                ParseErrorKind::UnknownEvent {
                    suggestion: suggest(name),
                },
            ));
        };
        Ok(EventSpec {
            source,
            modifiers,
            name: None,
        })
    }

    pub(super) fn modifiers(&self, mods: &str, off: usize) -> Result<Modifiers, ParseError> {
        let mut m = Modifiers::default();
        for (i, c) in mods.char_indices() {
            match c {
                'u' => m.user = true,
                'k' => m.kernel = true,
                'h' => m.hv = true,
                'P' => m.max_precise = true,
                'G' => m.guest = true,
                'H' => m.host = true,
                'I' => m.exclude_idle = true,
                'D' => m.pinned = true,
                'e' => m.exclusive = true,
                'S' => m.sample_read = true,
                'W' => m.weak_group = true,
                'p' => {
                    if m.precise == 3 {
                        return Err(self.err(off + i, 1, ParseErrorKind::TooPrecise));
                    }
                    m.precise += 1;
                }
                _ => return Err(self.err(off + i, c.len_utf8(), ParseErrorKind::BadModifier(c))),
            }
        }
        Ok(m)
    }
}

fn parse_number(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}
