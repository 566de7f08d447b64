//! Samples aggregated while they are logged: [`LiveProfile::start`] gives the pipe the
//! backend logs into, [`LiveProfile::snapshot`] and [`LiveProfile::finish`] the profile.
//!
//! Without `-O`, and for `-T`,
//! the backend's log goes into a pipe that a thread reads with pmc-log's
//! streaming reader and feeds to pmc-analyze's [`ProfileBuilder`]: memory
//! is bounded by the distinct stacks seen, not by the run's length (a log
//! kept in memory would grow by ~180 bytes a sample for as long as the run
//! lasts).

use crate::exits::ExitCounts;
use pmc_analyze::{AnalyzeOptions, Profile, ProfileBuilder};
use std::fs::File;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// The aggregating reader of a live log.
pub struct LiveProfile {
    builder: Arc<Mutex<ProfileBuilder>>,
    reader: JoinHandle<Result<ExitCounts, String>>,
}

impl LiveProfile {
    /// Starts the reader thread; the returned pipe end is the log sink to
    /// give to `Backend::configure_log`. The reader stops at the end of the
    /// log, when the backend closes the sink.
    pub fn start(exits: bool) -> std::io::Result<(LiveProfile, File)> {
        let (rx, tx) = crate::sys::pipe()?;
        let builder = Arc::new(Mutex::new(ProfileBuilder::new(AnalyzeOptions::default())));
        let shared = Arc::clone(&builder);
        let reader = std::thread::Builder::new()
            .name("pmcstat-live".into())
            .spawn(move || feed(rx, &shared, exits))?;
        Ok((LiveProfile { builder, reader }, tx))
    }

    fn lock(&self) -> MutexGuard<'_, ProfileBuilder> {
        // A panic in the reader cannot leave the builder half-updated in a
        // way that matters for a report: use it as it is.
        self.builder.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The profile so far.
    pub fn snapshot(&self) -> Profile {
        self.lock().snapshot()
    }

    /// Waits for the end of the log (the sink must have been closed) and
    /// returns the whole profile and, when started for `-E`, the process-exit
    /// counts; or why the log could not be read.
    pub fn finish(self) -> Result<(Profile, ExitCounts), String> {
        let read = self
            .reader
            .join()
            .unwrap_or_else(|_| Err("the log reader thread panicked".into()));
        let builder = Arc::try_unwrap(self.builder)
            .map_err(|_| "the log reader is still running".to_owned())?
            .into_inner()
            .unwrap_or_else(|p| p.into_inner());
        read.map(|exits| (builder.finish(), exits))
    }
}

/// Feeds the log to the builder; with `exits`, also gathers the process-exit counts (`-E`).
fn feed(rx: File, builder: &Mutex<ProfileBuilder>, exits: bool) -> Result<ExitCounts, String> {
    let mut reader = pmc_log::StreamReader::new(rx)
        .map_err(|e| e.to_string())?
        .to_end();
    let mut counts = ExitCounts::default();
    loop {
        match reader.next_record() {
            Ok(Some(r)) => {
                if exits {
                    counts.add(&r);
                }
                builder.lock().unwrap_or_else(|p| p.into_inner()).add(&r)
            }
            Ok(None) => break,
            Err(e) => return Err(e.to_string()),
        }
    }
    let report = reader.finish();
    builder
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .set_read_report(&report);
    Ok(counts)
}
