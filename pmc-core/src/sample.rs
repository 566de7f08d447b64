//! A sample delivered to the process that owns a sampling PMC
//! ([`Pmc::samples`](crate::Pmc::samples)).

/// One sample, decoded: what the PMC's overflow (or its clock) caught.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Sample {
    /// `CLOCK_MONOTONIC` nanoseconds.
    pub time: u64,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The CPU it ran on, if known.
    pub cpu: Option<u32>,
    /// The sampled instruction address.
    pub ip: u64,
    /// Events since the previous sample (the period; varies with a frequency).
    pub period: u64,
    /// Whether `ip` is in the kernel.
    pub kernel: bool,
    /// The callchain, leaf first, context markers removed (empty without callchains).
    pub callchain: Vec<u64>,
    /// How many leading frames of `callchain` are kernel addresses.
    pub kernel_frames: u32,
}

impl Sample {
    /// The user-space frames of the callchain (after the kernel's).
    ///
    /// ```
    /// let s = pmc::Sample {
    ///     time: 1, pid: 2, tid: 2, cpu: None, ip: 0xffff_0001, period: 1, kernel: true,
    ///     callchain: vec![0xffff_0001, 0x40_1000, 0x40_2000], kernel_frames: 1,
    /// };
    /// assert_eq!(s.user_frames(), &[0x40_1000, 0x40_2000]);
    /// ```
    pub fn user_frames(&self) -> &[u64] {
        let k = usize::try_from(self.kernel_frames).unwrap_or(usize::MAX);
        self.callchain.get(k..).unwrap_or(&[])
    }
}
