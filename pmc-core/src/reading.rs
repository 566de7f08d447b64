//! Counter readings and their multiplexing state.

/// Whether a reading holds a usable count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum Status {
    /// The counter ran for at least part of the time it was enabled; the
    /// value (scaled if it was multiplexed) is meaningful.
    Ok,
    /// The counter was enabled but never scheduled onto the hardware
    /// (`time_running == 0`): there is no count. perf prints `<not counted>`.
    NotCounted,
    /// The event cannot be counted on this machine. perf prints
    /// `<not supported>`.
    NotSupported,
}

/// One reading of a PMC: the raw count, how long the counter was enabled
/// and running, and from those the scaled estimate.
///
/// Times are in nanoseconds. When a counter is multiplexed, the kernel
/// schedules it only part of the time (`time_running < time_enabled`) and
/// the full-time estimate is `raw * time_enabled / time_running`.
///
/// Odd kernel times never panic: `time_running > time_enabled` (seen on
/// some kernels; perf-event crate issue #65) is treated as "ran the whole
/// time", and the arithmetic is done in 128 bits and saturates.
///
/// ```
/// use pmc::{Reading, Status};
/// let r = Reading::new(1000, 200, 100);
/// assert_eq!(r.scaled(), Some(2000));
/// assert!(r.is_multiplexed());
/// assert_eq!(r.running_ratio(), Some(0.5));
///
/// assert_eq!(Reading::new(5, 100, 0).status(), Status::NotCounted);
/// assert_eq!(Reading::new(5, 100, 0).scaled(), None);
/// assert_eq!(Reading::new(7, 10, 20).scaled(), Some(7)); // running > enabled
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Reading {
    /// The raw count, as the hardware/kernel accumulated it.
    pub value: u64,
    /// Nanoseconds the counter was enabled.
    pub time_enabled: u64,
    /// Nanoseconds the counter was actually counting.
    pub time_running: u64,
    unsupported: bool,
}

impl Reading {
    /// A reading from a raw value and its times.
    pub const fn new(value: u64, time_enabled: u64, time_running: u64) -> Reading {
        Reading {
            value,
            time_enabled,
            time_running,
            unsupported: false,
        }
    }

    /// The reading of an event that cannot be counted here.
    pub const fn not_supported() -> Reading {
        Reading {
            value: 0,
            time_enabled: 0,
            time_running: 0,
            unsupported: true,
        }
    }

    /// The state of this reading.
    pub fn status(&self) -> Status {
        if self.unsupported {
            Status::NotSupported
        } else if self.time_running == 0 {
            Status::NotCounted
        } else {
            Status::Ok
        }
    }

    /// Whether the counter ran for only part of the time it was enabled.
    pub fn is_multiplexed(&self) -> bool {
        self.status() == Status::Ok && self.time_running < self.time_enabled
    }

    /// `time_running / time_enabled`, in `0.0..=1.0`, or `None` if not counted.
    pub fn running_ratio(&self) -> Option<f64> {
        if self.status() != Status::Ok {
            return None;
        }
        if self.time_enabled == 0 || self.time_running >= self.time_enabled {
            return Some(1.0);
        }
        Some(self.time_running as f64 / self.time_enabled as f64)
    }

    /// The count scaled to the whole enabled time, or `None` if the counter
    /// never ran (or is unsupported).
    pub fn scaled(&self) -> Option<u64> {
        if self.status() != Status::Ok {
            return None;
        }
        if self.time_running >= self.time_enabled {
            return Some(self.value);
        }
        let v =
            u128::from(self.value) * u128::from(self.time_enabled) / u128::from(self.time_running);
        Some(u64::try_from(v).unwrap_or(u64::MAX))
    }

    /// Adds another reading of the same event (another CPU or target).
    /// Values and times add (saturating); "not supported" is sticky.
    pub fn accumulate(&mut self, other: &Reading) {
        self.value = self.value.saturating_add(other.value);
        self.time_enabled = self.time_enabled.saturating_add(other.time_enabled);
        self.time_running = self.time_running.saturating_add(other.time_running);
        self.unsupported |= other.unsupported;
    }

    /// The difference `self - earlier` (for interval printing), saturating
    /// at zero.
    pub fn delta(&self, earlier: &Reading) -> Reading {
        Reading {
            value: self.value.saturating_sub(earlier.value),
            time_enabled: self.time_enabled.saturating_sub(earlier.time_enabled),
            time_running: self.time_running.saturating_sub(earlier.time_running),
            unsupported: self.unsupported,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn states_are_distinct() {
        assert_eq!(Reading::new(1, 1, 1).status(), Status::Ok);
        assert_eq!(Reading::new(0, 10, 0).status(), Status::NotCounted);
        assert_eq!(Reading::not_supported().status(), Status::NotSupported);
        assert_eq!(Reading::not_supported().scaled(), None);
    }

    #[test]
    fn saturates() {
        assert_eq!(Reading::new(u64::MAX, u64::MAX, 1).scaled(), Some(u64::MAX));
        let mut a = Reading::new(u64::MAX, 1, 1);
        a.accumulate(&Reading::new(5, 1, 1));
        assert_eq!(a.value, u64::MAX);
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: if cfg!(miri) { 16 } else { 256 },
            failure_persistence: None,
            ..ProptestConfig::default()
        })]
        #[test]
        fn never_panics(v: u64, e: u64, r: u64) {
            let x = Reading::new(v, e, r);
            let _ = x.scaled();
            let _ = x.running_ratio();
            if let Some(s) = x.scaled() { prop_assert!(s >= v); }
            if let Some(q) = x.running_ratio() { prop_assert!((0.0..=1.0).contains(&q)); }
        }
    }
}
