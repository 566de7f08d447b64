//! `-T`: the top(1)-like view of pmcstat(8), live for `-P`/`-S` runs and
//! replayed for `-R`.
//!
//! [`TopView`] (over a [`Screen`]) draws a [`State`] ([`Mode`], [`Display`]) with [`render`]
//! and takes keys ([`State::key`]); [`replay`] runs it over a log ([`ReplayInput`]).
//! Below: the keys and the header.
//!
//! It redraws every `-w` seconds (default 1) on the
//! terminal's alternate screen and takes pmcstat(8)'s keys
//! (`pmcstat_keypress_log` in FreeBSD's usr.sbin/pmcstat/pmcstat_log.c):
//!
//! | key | action |
//! |---|---|
//! | `q` | quit (a launched command is sent SIGTERM and waited for) |
//! | Space | pause or resume the display |
//! | `p` | show the next PMC |
//! | `m` | merge all PMCs into one view, or not |
//! | `n` | next display: functions, then objects |
//! | `c` `d` / `c` `a` | delta mode (each refresh shows the samples since the last one; the default, as pmcstat's) or accumulation mode |
//!
//! The header is pmcstat's: `PMC: <name> Samples: <n> (<share>%)`, plus
//! the samples lost so far.

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::{cursor, queue, style, terminal};
use pmc_analyze::top::{TopOptions, TopReport};
use pmc_analyze::Profile;
use std::io::{IsTerminal, Write};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

/// The default refresh interval (`-w`).
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(1);

/// Samples since the last refresh, or since the start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Delta,
    Accumulate,
}

/// What the table lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Display {
    Functions,
    Objects,
}

/// The view's state, apart from the terminal: what the keys change.
#[derive(Debug)]
pub struct State {
    pub mode: Mode,
    pub display: Display,
    /// Index into the profile's PMCs; `None` merges them all.
    pub pmc: Option<usize>,
    pub paused: bool,
    /// A `c` waits for `d` or `a`.
    pending_c: bool,
    /// The last line of feedback (`switching to PMC ...`).
    pub message: String,
}

impl Default for State {
    fn default() -> Self {
        State {
            mode: Mode::Delta,
            display: Display::Functions,
            pmc: Some(0),
            paused: false,
            pending_c: false,
            message: String::new(),
        }
    }
}

impl State {
    /// Applies one key; `Break` quits. `npmcs` is how many PMCs there are.
    pub fn key(&mut self, code: KeyCode, npmcs: usize) -> ControlFlow<()> {
        let KeyCode::Char(c) = code else {
            return ControlFlow::Continue(());
        };
        if std::mem::take(&mut self.pending_c) {
            self.mode = if c == 'd' {
                Mode::Delta
            } else {
                Mode::Accumulate
            };
            self.message = match self.mode {
                Mode::Delta => "switching to delta mode".into(),
                Mode::Accumulate => "switching to accumulation mode".into(),
            };
            return ControlFlow::Continue(());
        }
        match c {
            'q' => {
                self.message = "exiting...".into();
                return ControlFlow::Break(());
            }
            ' ' => {
                self.paused = !self.paused;
                self.message = if self.paused {
                    "pause => press space again to continue".into()
                } else {
                    String::new()
                };
            }
            'c' => {
                self.pending_c = true;
                self.message = "enter mode 'd' or 'a' =>".into();
            }
            'm' => {
                self.pmc = match self.pmc {
                    None => Some(0),
                    Some(_) => None,
                };
                self.message = format!(
                    "merge PMC {}",
                    if self.pmc.is_none() { "on" } else { "off" }
                );
            }
            'p' => {
                let next = self.pmc.map_or(0, |i| i + 1);
                self.pmc = Some(if next >= npmcs.max(1) { 0 } else { next });
                self.message = "switching to the next PMC".into();
            }
            'n' => {
                self.display = match self.display {
                    Display::Functions => Display::Objects,
                    Display::Objects => Display::Functions,
                };
                self.message = match self.display {
                    Display::Functions => "switching to functions".into(),
                    Display::Objects => "switching to objects".into(),
                };
            }
            _ => self.message = format!("unknown key '{c}' (q p m n c space)"),
        }
        ControlFlow::Continue(())
    }
}

/// Renders the view as lines of at most `width` characters, at most
/// `height` lines.
pub fn render(
    profile: &Profile,
    state: &State,
    title: &str,
    width: usize,
    height: usize,
) -> Vec<String> {
    let pmc = state.pmc.and_then(|i| profile.pmcs.get(i));
    let opts = TopOptions {
        limit: height.saturating_sub(5).max(1),
        pmc: pmc.map(|p| p.pmc_id),
        ..TopOptions::default()
    };
    let report = TopReport::build(profile, &opts);
    let all = TopReport::build(
        profile,
        &TopOptions {
            limit: 1,
            ..TopOptions::default()
        },
    );
    let share = if all.total > 0 {
        100.0 * report.total as f64 / all.total as f64
    } else {
        0.0
    };
    let name = match (state.pmc, pmc) {
        (None, _) => "(merged)".to_owned(),
        (Some(i), Some(p)) => format!("{}.{i}", p.name),
        (Some(_), None) => "-".to_owned(),
    };
    let mut lines = vec![
        format!(
            "{title}  [{}{}]  {}",
            match state.mode {
                Mode::Delta => "delta",
                Mode::Accumulate => "accumulate",
            },
            if state.paused { ", paused" } else { "" },
            state.message
        ),
        format!(
            "PMC: {name} Samples: {} ({share:.1}%) , {} lost",
            report.total, profile.stats.lost
        ),
        String::new(),
    ];
    match state.display {
        Display::Functions => {
            lines.push(format!(
                "{:>6} {:>9}  {:<40} {}",
                "%SAMP", "SAMPLES", "FUNCTION", "OBJECT"
            ));
            for f in &report.functions {
                let obj = f
                    .object
                    .as_deref()
                    .map_or("", |o| o.rsplit('/').next().unwrap_or(o));
                lines.push(format!(
                    "{:>6.1} {:>9}  {:<40} {obj}",
                    f.self_percent, f.self_weight, f.function
                ));
            }
        }
        Display::Objects => {
            lines.push(format!("{:>6} {:>9}  {}", "%SAMP", "SAMPLES", "OBJECT"));
            for o in &report.objects {
                lines.push(format!(
                    "{:>6.1} {:>9}  {}",
                    o.self_percent, o.self_weight, o.object
                ));
            }
        }
    }
    lines.truncate(height.max(1));
    for l in &mut lines {
        // Function names and paths come from the log and its objects: no control
        // character reaches the terminal.
        if let std::borrow::Cow::Owned(e) = pmc_log::escape::escape(l) {
            *l = e;
        }
        if l.chars().count() > width {
            *l = l.chars().take(width).collect();
        }
    }
    lines
}

/// The terminal, in the view's modes while this lives.
pub struct Screen {
    out: std::io::Stdout,
}

impl Screen {
    /// Takes over the terminal (alternate screen, raw mode, no cursor).
    /// Fails when standard output is not a terminal.
    pub fn open() -> std::io::Result<Screen> {
        let mut out = std::io::stdout();
        if !out.is_terminal() {
            return Err(std::io::Error::other(
                "-T draws on a terminal, and standard output is not one",
            ));
        }
        terminal::enable_raw_mode()?;
        queue!(out, terminal::EnterAlternateScreen, cursor::Hide)?;
        out.flush()?;
        Ok(Screen { out })
    }

    fn draw(&mut self, lines: &[String]) -> std::io::Result<()> {
        queue!(self.out, terminal::Clear(terminal::ClearType::All))?;
        for (i, l) in lines.iter().enumerate() {
            let row = u16::try_from(i).unwrap_or(u16::MAX);
            queue!(self.out, cursor::MoveTo(0, row), style::Print(l))?;
        }
        self.out.flush()
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = queue!(self.out, cursor::Show, terminal::LeaveAlternateScreen);
        let _ = self.out.flush();
        let _ = terminal::disable_raw_mode();
    }
}

/// The live or replayed view: a screen, the state, and when to redraw.
pub struct TopView {
    screen: Screen,
    pub state: State,
    refresh: Duration,
    next: Instant,
    title: String,
    npmcs: usize,
    /// The snapshot taken last, for delta mode.
    previous: Option<Profile>,
    /// What is on the screen (kept while paused).
    shown: Option<Profile>,
}

impl TopView {
    /// Opens the view; it first draws after `refresh`.
    pub fn open(title: String, refresh: Duration) -> std::io::Result<TopView> {
        Ok(TopView {
            screen: Screen::open()?,
            state: State::default(),
            refresh,
            next: Instant::now() + refresh,
            title,
            npmcs: 0,
            previous: None,
            shown: None,
        })
    }

    /// Handles the keys pressed so far, waiting at most `wait` for one.
    /// `Break` when the user quit. A key makes a redraw due at once ([`TopView::due`]).
    pub fn keys(&mut self, wait: Duration) -> std::io::Result<ControlFlow<()>> {
        let mut wait = wait;
        while event::poll(wait)? {
            wait = Duration::ZERO;
            if let Event::Key(KeyEvent {
                code,
                kind: KeyEventKind::Press,
                modifiers,
                ..
            }) = event::read()?
            {
                if modifiers.contains(KeyModifiers::CONTROL) && code == KeyCode::Char('c') {
                    return Ok(ControlFlow::Break(()));
                }
                if self.state.key(code, self.npmcs).is_break() {
                    return Ok(ControlFlow::Break(()));
                }
                self.next = Instant::now();
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Whether a redraw is due.
    pub fn due(&self) -> bool {
        Instant::now() >= self.next
    }

    /// Redraws from `snapshot`, everything seen so far (unless paused: then
    /// the shown numbers stay, as pmcstat's do), and schedules the next
    /// redraw. In delta mode it shows what came since the previous redraw.
    pub fn draw(&mut self, snapshot: Profile) -> std::io::Result<()> {
        self.next = Instant::now() + self.refresh;
        self.npmcs = snapshot.pmcs.len();
        if !self.state.paused || self.shown.is_none() {
            let shown = match (&self.state.mode, &self.previous) {
                (Mode::Delta, Some(prev)) => snapshot.since(prev),
                _ => snapshot.clone(),
            };
            self.previous = Some(snapshot);
            self.shown = Some(shown);
        }
        // Paused: the numbers shown stay; the header still follows the keys.
        let Some(shown) = self.shown.as_ref() else {
            return Ok(());
        };
        let (w, h) = terminal::size().unwrap_or((80, 24));
        let lines = render(shown, &self.state, &self.title, w.into(), h.into());
        self.screen.draw(&lines)
    }

    /// The refresh interval.
    pub fn refresh(&self) -> Duration {
        self.refresh
    }
}

/// What `-R FILE -T` replays.
pub enum ReplayInput<'a> {
    /// A log in memory (a mapped pmc-log, or one rewritten by unwinding or `-i`).
    Bytes(&'a [u8]),
    /// pmc-log bytes as they are read: an hwpmc log converted as it is read, or a
    /// FIFO, socket or standard input. Memory stays that of the view, whatever the
    /// log's size.
    Stream(Box<dyn std::io::Read + 'a>),
}

/// The replay's records, from memory or from a stream.
enum Records<'a> {
    Mem(pmc_log::RecordIter<'a>),
    Stream(Box<pmc_log::StreamReader<Box<dyn std::io::Read + 'a>>>),
}

impl Records<'_> {
    /// `f` of the next record; `None` at the end (or at a read error, which is
    /// returned as such).
    fn with_next<T>(
        &mut self,
        f: impl FnOnce(&pmc_log::record::Record<'_>) -> T,
    ) -> std::io::Result<Option<T>> {
        match self {
            Records::Mem(it) => Ok(it.next().map(|r| f(&r))),
            Records::Stream(s) => match s.next_record() {
                Ok(r) => Ok(r.map(|r| f(&r))),
                Err(e) => Err(std::io::Error::other(e)),
            },
        }
    }

    fn report(&self) -> &pmc_log::ReadReport {
        match self {
            Records::Mem(it) => it.report(),
            Records::Stream(s) => s.report(),
        }
    }
}

/// `-R FILE -T`: replays the log in its own time, one refresh interval of
/// log time per refresh interval of wall time, then keeps the final
/// (accumulated) view until `q`. Logs without a known clock rate are
/// replayed 2,000 samples per refresh. `keep` says which records the view
/// takes (`-i TID` on a streamed log).
pub fn replay(
    log: ReplayInput<'_>,
    refresh: Duration,
    opts: pmc_analyze::AnalyzeOptions,
    keep: &mut dyn FnMut(&pmc_log::record::Record<'_>) -> bool,
) -> std::io::Result<()> {
    let mut records = match log {
        ReplayInput::Bytes(b) => Records::Mem(
            pmc_log::Reader::new(b)
                .map_err(std::io::Error::other)?
                .records(),
        ),
        ReplayInput::Stream(r) => Records::Stream(Box::new(
            pmc_log::StreamReader::new(r)
                .map_err(std::io::Error::other)?
                .to_end(),
        )),
    };
    // The clock rate comes with the header, the first record.
    let mut window_ticks = 0u64;
    let mut builder = pmc_analyze::ProfileBuilder::new(opts);
    let mut view = TopView::open("pmcstat -R -T (replay)".into(), refresh)?;
    let mut window_end: Option<u64> = None;
    let mut in_window = 0u64;
    let mut ended = false;
    loop {
        // Feed one window of the log.
        let mut more = false;
        let mut failed = None;
        loop {
            let full = records.with_next(|r| {
                if let pmc_log::record::Record::Header(h) = r {
                    window_ticks = (h.ticks_per_second as f64 * refresh.as_secs_f64()) as u64;
                }
                if !keep(r) {
                    return false;
                }
                builder.add(r);
                if !matches!(r, pmc_log::record::Record::Sample(_)) {
                    return false;
                }
                in_window += 1;
                let t = r.time();
                let end = *window_end.get_or_insert(t.saturating_add(window_ticks));
                let full = if window_ticks > 0 {
                    t >= end
                } else {
                    in_window >= 2000
                };
                if full {
                    window_end = Some(t.saturating_add(window_ticks));
                    in_window = 0;
                }
                full
            });
            match full {
                Ok(Some(false)) => {}
                Ok(Some(true)) => {
                    more = true;
                    break;
                }
                Ok(None) => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if !more && !ended {
            builder.set_read_report(records.report());
            view.state.mode = Mode::Accumulate;
            view.state.message = match failed {
                Some(e) => format!("the log could not be read on: {e}; q quits"),
                None => "end of log: q quits".into(),
            };
            ended = true;
        }
        // Show it for one refresh interval (until `q` after the end).
        loop {
            view.draw(builder.snapshot())?;
            let until = Instant::now() + view.refresh();
            loop {
                let left = until.saturating_duration_since(Instant::now());
                if view.keys(left.min(Duration::from_millis(100)))?.is_break() {
                    return Ok(());
                }
                if left.is_zero() || view.due() {
                    break;
                }
            }
            if more && !view.state.paused {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmc_analyze::profile::{Profile, Stack};

    /// A function that only called the sampled one (self 0) is no row of the
    /// view: pmcstat(8)'s top lists the sampled functions, and a `0.0  0
    /// [unknown]` row says nothing.
    #[test]
    fn rows_of_zero_samples_are_not_shown() {
        let function = |name: &str, object: Option<&str>| pmc_analyze::symbolize::Function {
            name: name.into(),
            object: object.map(Into::into),
            source: None,
            kernel: false,
            address: None,
            inlined: false,
        };
        let profile = Profile {
            functions: vec![
                function("[unknown]", None),
                function("leaf", Some("/bin/prog")),
            ],
            comms: vec!["prog".into()],
            stacks: vec![Stack {
                pmc_id: 0,
                comm: 0,
                frames: vec![0, 1].into_boxed_slice(),
                samples: 10,
                period: 10,
            }],
            pmcs: Vec::new(),
            stats: Default::default(),
            warnings: Vec::new(),
            pcs: Vec::new(),
            objects: Vec::new(),
        };
        let mut state = State::default();
        for display in [Display::Functions, Display::Objects] {
            state.display = display;
            let lines = render(&profile, &state, "test", 100, 30);
            let rows: Vec<&String> = lines.iter().skip(4).collect();
            assert!(!rows.is_empty(), "{lines:#?}");
            for row in rows {
                let samples = row.split_whitespace().nth(1);
                assert_ne!(samples, Some("0"), "a row of 0 samples: {lines:#?}");
            }
        }
    }
}
