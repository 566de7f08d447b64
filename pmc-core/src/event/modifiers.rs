//! [`Modifiers`]: perf's `:ukhpPGHIDeSW` letters and hwpmc's `,usr`/`,os`.

use std::fmt;

/// Event modifiers, perf's (`:u`, `:k`, `:h`, `:p`, `:P`, `:G`, `:H`, `:I`, `:D`, `:e`, `:S`,
/// `:W`) or hwpmc's `,usr` / `,os`.
///
/// When neither `user` nor `kernel` nor `hv` is requested, every level is
/// counted (subject to the backend's permission rules), and all three flags
/// are `false`: use [`Modifiers::counts_user`] and friends to ask what is
/// counted. Each letter is perf's (tools/perf/Documentation/perf-list.txt); the
/// `perf_event_attr` bit it sets on Linux is named with it. FreeBSD's hwpmc has
/// none but `u`/`k` and refuses the others with `ErrorKind::NotSupported`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Modifiers {
    /// Count user mode (`:u`, `,usr`).
    pub user: bool,
    /// Count kernel mode (`:k`, `,os`).
    pub kernel: bool,
    /// Count hypervisor mode (`:h`).
    pub hv: bool,
    /// Requested skid precision, 0-3 (`:p`, `:pp`, `:ppp`): `precise_ip`.
    pub precise: u8,
    /// `:P`: the highest precision the PMU takes for the event, found when it is
    /// opened (perf's "maximum detected precise level"; 0 for software events).
    #[cfg_attr(feature = "serde", serde(default))]
    pub max_precise: bool,
    /// `:G`: count while a KVM guest runs only (`exclude_host`).
    #[cfg_attr(feature = "serde", serde(default))]
    pub guest: bool,
    /// `:H`: count on the host only, not in KVM guests (`exclude_guest`).
    #[cfg_attr(feature = "serde", serde(default))]
    pub host: bool,
    /// `:I`: do not count while the CPU is idle (`exclude_idle`).
    #[cfg_attr(feature = "serde", serde(default))]
    pub exclude_idle: bool,
    /// `:D`: pinned, always on the PMU, never multiplexed out (`pinned`; of a
    /// group, its leader).
    #[cfg_attr(feature = "serde", serde(default))]
    pub pinned: bool,
    /// `:e`: exclusive, alone on the PMU while it counts (`exclusive`; of a group,
    /// its leader).
    #[cfg_attr(feature = "serde", serde(default))]
    pub exclusive: bool,
    /// `:S`: each sample reads the counts (`PERF_SAMPLE_READ`); nothing for a
    /// counting event, as in perf stat.
    #[cfg_attr(feature = "serde", serde(default))]
    pub sample_read: bool,
    /// `:W`: a weak group, opened member by member when the kernel refuses it
    /// whole (perf stat's fallback; nothing in the kernel's attributes).
    #[cfg_attr(feature = "serde", serde(default))]
    pub weak_group: bool,
}

impl Modifiers {
    /// Whether an explicit privilege level was requested.
    pub fn is_restricted(&self) -> bool {
        self.user || self.kernel || self.hv
    }
    /// Whether user mode is counted.
    pub fn counts_user(&self) -> bool {
        !self.is_restricted() || self.user
    }
    /// Whether kernel mode is counted.
    pub fn counts_kernel(&self) -> bool {
        !self.is_restricted() || self.kernel
    }
    /// Whether hypervisor mode is counted.
    pub fn counts_hv(&self) -> bool {
        !self.is_restricted() || self.hv
    }
    fn is_empty(&self) -> bool {
        *self == Modifiers::default()
    }

    /// Whether any of perf's modifiers beyond `u`, `k`, `h` and `p` is set (what
    /// a backend without them refuses).
    pub fn has_perf_extras(&self) -> bool {
        self.max_precise
            || self.guest
            || self.host
            || self.exclude_idle
            || self.pinned
            || self.exclusive
            || self.sample_read
            || self.weak_group
    }

    /// These modifiers with `other`'s added (a group's modifiers on one of its
    /// members, as perf applies `{a,b}:u`): every flag of either, the higher
    /// precision.
    pub fn merged(&self, other: &Modifiers) -> Modifiers {
        Modifiers {
            user: self.user || other.user,
            kernel: self.kernel || other.kernel,
            hv: self.hv || other.hv,
            precise: self.precise.max(other.precise),
            max_precise: self.max_precise || other.max_precise,
            guest: self.guest || other.guest,
            host: self.host || other.host,
            exclude_idle: self.exclude_idle || other.exclude_idle,
            pinned: self.pinned || other.pinned,
            exclusive: self.exclusive || other.exclusive,
            sample_read: self.sample_read || other.sample_read,
            weak_group: self.weak_group || other.weak_group,
        }
    }
}

impl fmt::Display for Modifiers {
    /// The letters, in one order: `u k h G H I D e S W P`, then the `p`s.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let letters = [
            (self.user, 'u'),
            (self.kernel, 'k'),
            (self.hv, 'h'),
            (self.guest, 'G'),
            (self.host, 'H'),
            (self.exclude_idle, 'I'),
            (self.pinned, 'D'),
            (self.exclusive, 'e'),
            (self.sample_read, 'S'),
            (self.weak_group, 'W'),
            (self.max_precise, 'P'),
        ];
        for (on, c) in letters {
            if on {
                write!(f, "{c}")?;
            }
        }
        for _ in 0..self.precise {
            f.write_str("p")?;
        }
        Ok(())
    }
}

pub(super) fn write_mods(f: &mut fmt::Formatter<'_>, m: &Modifiers, colon: bool) -> fmt::Result {
    if m.is_empty() {
        return Ok(());
    }
    if colon {
        f.write_str(":")?;
    }
    write!(f, "{m}")
}

pub(super) fn is_modifier_string(s: &str) -> bool {
    !s.is_empty() && s.len() <= 16 && s.chars().all(|c| MODIFIER_LETTERS.contains(c))
}

/// perf's modifier letters this parser takes.
const MODIFIER_LETTERS: &str = "ukhpPGHIDeSW";
