//! Scoped measurement: count events on the calling process around a piece
//! of work, with every thread it starts meanwhile.

use crate::{Allocation, Backend, Error, EventSpec, Native, Pmc, Reading, Result, Target};

/// One event's count from a [`Region`] or [`measure`].
#[derive(Debug, Clone, PartialEq)]
pub struct Count {
    /// The event as counted ([`Pmc::counted_event`]: `context-switches:u`
    /// when the system allowed user mode only).
    pub event: EventSpec,
    /// The reading; [`Reading::scaled`] for the multiplexing-corrected
    /// value.
    pub reading: Reading,
}

/// Counters running on the calling process, its existing threads and the
/// threads and processes they start while the region is open
/// ([`Flags::DESCENDANTS`](crate::Flags::DESCENDANTS): a region whose work
/// runs in a thread spawned inside it does not read 0). Dropping the region
/// stops and releases the counters; [`Region::stop`] also returns the
/// counts.
///
/// ```
/// let region = pmc::Region::start(&["task-clock", "page-faults"])?;
/// let v: Vec<u64> = (0..1_000_000).collect();
/// let counts = region.stop()?;
/// for c in &counts {
///     println!("{:>12} {}", c.reading.scaled().unwrap_or(0), c.event);
/// }
/// # assert_eq!(v.len(), 1_000_000);
/// # Ok::<(), pmc::Error>(())
/// ```
pub struct Region {
    pmcs: Vec<<Native as Backend>::Pmc>,
}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("events", &self.pmcs.len())
            .finish()
    }
}

impl Region {
    /// Allocates one counting PMC per event string (perf, hwpmc or portable
    /// syntax), attaches them to the calling process with descendants, and
    /// starts them.
    ///
    /// # Errors
    /// [`ErrorKind::Parse`](crate::ErrorKind::Parse) for a string that does
    /// not parse, an unknown event name included (its message suggests the
    /// closest known name), before anything is opened; or the first
    /// allocation or start that fails, with its remedy (for example
    /// [`ErrorKind::NoSuchEvent`](crate::ErrorKind::NoSuchEvent) for a PMU or
    /// tracepoint this machine lacks, [`ErrorKind::NoPmu`](crate::ErrorKind::NoPmu)
    /// for `cycles` in a VM without a PMU: [`Backend::list_events`] tells
    /// what is there).
    pub fn start(events: &[&str]) -> Result<Region> {
        let specs = events
            .iter()
            .map(|e| e.parse::<EventSpec>().map_err(Error::from))
            .collect::<Result<Vec<_>>>()?;
        Region::start_specs(&specs)
    }

    /// [`Region::start`] with parsed events.
    ///
    /// # Errors
    /// As [`Region::start`].
    pub fn start_specs(events: &[EventSpec]) -> Result<Region> {
        let backend = Native::open()?;
        let mut pmcs = Vec::with_capacity(events.len());
        for spec in events {
            let mut p = backend.allocate(&Allocation::counting(spec.clone()).descendants())?;
            p.attach(Target::Current)?;
            pmcs.push(p);
        }
        for p in &mut pmcs {
            p.start()?;
        }
        Ok(Region { pmcs })
    }

    /// The counts so far, without stopping.
    ///
    /// # Errors
    /// The first read that fails.
    pub fn read(&self) -> Result<Vec<Count>> {
        self.pmcs
            .iter()
            .map(|p| {
                Ok(Count {
                    event: p.counted_event(),
                    reading: p.read()?,
                })
            })
            .collect()
    }

    /// Stops the counters and returns their counts, in the order given.
    ///
    /// # Errors
    /// The first stop or read that fails.
    pub fn stop(mut self) -> Result<Vec<Count>> {
        for p in &mut self.pmcs {
            p.stop()?;
        }
        self.read()
    }
}

/// Counts `events` on the calling process (and the threads and processes
/// it starts meanwhile) while `work` runs; returns what `work` returned and
/// the counts, in the order given.
///
/// ```
/// let (sum, counts) = pmc::measure(&["task-clock"], || (0..10_000_000u64).sum::<u64>())?;
/// let ns = counts[0].reading.scaled().unwrap_or(0);
/// println!("sum {sum} took {:.3} ms of CPU", ns as f64 / 1e6);
/// # Ok::<(), pmc::Error>(())
/// ```
///
/// # Errors
/// As [`Region::start`] and [`Region::stop`].
pub fn measure<T>(events: &[&str], work: impl FnOnce() -> T) -> Result<(T, Vec<Count>)> {
    let region = Region::start(events)?;
    let out = work();
    Ok((out, region.stop()?))
}
