//! The sampling set: mapping the rings of a PMC's fds, sharing them per CPU or thread, and
//! handing them to the log's drain thread or to the in-process reader.

use super::*;

/// The rings of a PMC and where their records go.
pub(super) struct Rings {
    /// Data pages per ring.
    pub(super) pages: usize,
    /// What the records are.
    pub(super) purpose: RingPurpose,
    /// Who reads them.
    pub(super) delivery: Delivery,
}

/// Who reads a PMC's rings.
pub(super) enum Delivery {
    /// The backend's log (its drain thread).
    Log,
    /// The owner, through [`Pmc::samples`](pmc_core::Pmc::samples); `None` until the first rings are mapped.
    Local(Option<Box<LocalRings>>),
}

impl Rings {
    /// Rings of `pages` data pages for `purpose`, feeding the log.
    pub(super) fn new(pages: usize, purpose: RingPurpose) -> Rings {
        Rings {
            pages,
            purpose,
            delivery: Delivery::Log,
        }
    }
}

impl<S: Sys> Counters<S> {
    /// What this PMC's rings carry (`None`: a counting PMC without rings).
    pub(super) fn purpose(&self) -> Option<RingPurpose> {
        self.rings.as_ref().map(|r| r.purpose)
    }

    /// A counting PMC with log-procexit.
    pub(super) fn exit_reads(&self) -> bool {
        self.purpose() == Some(RingPurpose::ExitReads)
    }

    /// In-process sampling: the owner reads the rings ([`Pmc::samples`](pmc_core::Pmc::samples)).
    pub(super) fn local_wanted(&self) -> bool {
        matches!(
            self.rings,
            Some(Rings {
                delivery: Delivery::Local(_),
                ..
            })
        )
    }
}

impl<S: Sys> Counters<S> {
    pub(super) fn set_local(&mut self) -> Result<()> {
        if !self.is_sampling() {
            return Err(Error::new(
                ErrorKind::InvalidState,
                Op::Start,
                "only sampling PMCs have samples to read",
            ));
        }
        if self.life.state() != State::Allocated && !self.local_wanted() {
            return Err(Error::new(
                ErrorKind::InvalidState,
                Op::Start,
                "this PMC already sends its samples to the log",
            )
            .with_help("call sample_in_process before the first start"));
        }
        if let Some(r) = self.rings.as_mut() {
            if !matches!(r.delivery, Delivery::Local(_)) {
                r.delivery = Delivery::Local(None);
            }
        }
        Ok(())
    }

    /// log-procexit of a counting PMC, once stopped: the hub logs each exited process's
    /// count from the kernel's `PERF_RECORD_READ`s and the PMC's total (the task without a
    /// `READ` gets the rest when every target has exited).
    pub(super) fn finish_exit_reads(&self) {
        let mut r = vec![Reading::default(); self.members.len()];
        if self.read_into(&mut r).is_err() {
            return;
        }
        let totals: Vec<(u32, u64)> = self
            .members
            .iter()
            .zip(&r)
            .zip(&self.base)
            .map(|((m, r), base)| (m.pmc_id, r.value.wrapping_sub(*base)))
            .collect();
        let targets_gone = self.instances.iter().all(|i| match &i.instance {
            Instance::Target(Target::Pid(p) | Target::Exec(p)) => {
                !self._shared.sys.process_alive(*p)
            }
            Instance::Target(Target::Current | Target::CurrentThread) => false,
            Instance::Cpu(_) => true,
        });
        self._shared
            .hub
            .finish_exit_reads(self.token(), &totals, targets_gone);
    }

    /// Maps the rings of `self.instances[range]` and hands them to the log's drain thread (or
    /// keeps them for the in-process reader).
    /// Maps the rings of every instance not mapped yet.
    pub(super) fn map_unmapped(&mut self) -> Result<()> {
        let todo: Vec<usize> = (0..self.instances.len())
            .filter(|i| !self.instances[*i].mapped)
            .collect();
        if todo.is_empty() {
            return Ok(());
        }
        self.map_rings(&todo)?;
        for i in todo {
            self.instances[i].mapped = true;
        }
        Ok(())
    }

    pub(super) fn map_rings(&mut self, which: &[usize]) -> Result<()> {
        let rings = self.build_rings(which)?;
        if let Some(Rings {
            delivery: Delivery::Local(local),
            ..
        }) = self.rings.as_mut()
        {
            local.get_or_insert_with(Box::default).rings.extend(rings);
            return Ok(());
        }
        let mut pids = Vec::new();
        let mut all = false;
        for inst in which.iter().filter_map(|i| self.instances.get(*i)) {
            match inst.instance {
                Instance::Cpu(_) => all = true,
                Instance::Target(Target::Current | Target::CurrentThread) => {
                    pids.push(self._shared.sys.getpid());
                }
                Instance::Target(Target::Pid(p)) => pids.push(p),
                // Its exec came before the start: its mappings are there already.
                Instance::Target(Target::Exec(p)) if inst.exec == ExecState::Missed => pids.push(p),
                // The kernel reports the exec and its mappings (enable_on_exec precedes them).
                Instance::Target(Target::Exec(_)) => {}
            }
        }
        let synth = if all {
            Synth::All
        } else if pids.is_empty() {
            Synth::Nothing
        } else {
            Synth::Pids(pids)
        };
        let descriptors = self.descriptors();
        let kernel = self.members.iter().any(|m| m.attr.exclude_kernel() == 0);
        self._shared.hub.register(descriptors, rings, synth, kernel)
    }

    /// One ring per CPU (events on one CPU share it through `PERF_EVENT_IOC_SET_OUTPUT`) or,
    /// for per-task events, one per thread (shared by the group's members).
    pub(super) fn build_rings(&self, which: &[usize]) -> Result<Vec<RingSource>> {
        let leader = &self.members[0];
        let cfg = ParseConfig::new(leader.attr.sample_type, leader.attr.read_format, true)
            .with_regs_user(leader.attr.sample_regs_user);
        let token = self.token();
        let purpose = self.purpose();
        let pages = self.rings.as_ref().map_or(0, |r| r.pages);
        let mut rings: Vec<RingSource> = Vec::new();
        // (cpu, ring index, owner fd)
        let mut by_cpu: Vec<(i32, usize, i32)> = Vec::new();
        for inst in which.iter().filter_map(|i| self.instances.get(*i)) {
            for (set, &cpu) in inst.threads.iter().zip(&inst.cpus) {
                let Some(first) = set.first() else { continue };
                let shared = (cpu >= 0)
                    .then(|| by_cpu.iter().find(|(c, _, _)| *c == cpu))
                    .flatten()
                    .map(|(_, i, fd)| (*i, *fd));
                let (ri, owner) = match shared {
                    Some(x) => x,
                    None => {
                        let ring_cpu = u32::try_from(cpu).ok();
                        let mut ring = RingSource::map(
                            &self._shared.sys,
                            first.as_fd(),
                            pages,
                            cfg,
                            token,
                            ring_cpu,
                        )?;
                        if let Some(p) = purpose {
                            ring.purpose = p;
                        }
                        ring.user_in_kernel =
                            leader.alloc.flags.contains(pmc_core::Flags::USERCALLCHAIN);
                        ring.cfg_inherit = leader.attr.inherit() == 1
                            && leader.alloc.flags.contains(pmc_core::Flags::DESCENDANTS);
                        ring.raw_stacks = matches!(
                            leader.alloc.call_graph,
                            pmc_core::CallGraph::DwarfRaw { .. }
                        );
                        rings.push(ring);
                        let x = (rings.len() - 1, first.as_raw_fd());
                        if cpu >= 0 {
                            by_cpu.push((cpu, x.0, x.1));
                        }
                        x
                    }
                };
                for (m, fd) in self.members.iter().zip(set) {
                    if fd.as_raw_fd() != owner {
                        self._shared.sys.ioctl(fd.as_fd(), Ioctl::SetOutput(owner)).map_err(|e| {
                            errno_map::op_error(Op::Mmap, e).with_help(
                                "the kernel refused to share a ring buffer (PERF_EVENT_IOC_SET_OUTPUT)",
                            )
                        })?;
                    }
                    let id = self._shared.sys.event_id(fd.as_fd());
                    if let (Ok(id), Some(ring)) = (id, rings.get_mut(ri)) {
                        ring.add_id(id, m.pmc_id);
                        ring.add_fixed_period(id, m.fixed_period.clone());
                    }
                }
            }
        }
        Ok(rings)
    }

    /// The log descriptors of the members.
    pub(super) fn descriptors(&self) -> Vec<pmc_log::record::PmcDescriptor<'static>> {
        use pmc_log::record as log;
        let time = crate::log::now(&self._shared.sys);
        // A switch group's leader is internal: its samples become the owner's counter records.
        self.members
            .iter()
            .skip(usize::from(
                self.purpose() == Some(RingPurpose::SwitchCounts),
            ))
            .map(|m| {
                let cpu = match &m.alloc.scope {
                    Scope::System {
                        cpu: pmc_core::Cpus::One(c),
                    } => Some(*c),
                    _ => None,
                };
                let mode = match m.alloc.mode {
                    Mode::Counting => log::Mode::Counting,
                    Mode::Sampling(Rate::Period(p)) => log::Mode::SamplingPeriod(p),
                    Mode::Sampling(Rate::Frequency(f)) => log::Mode::SamplingFrequency(f),
                };
                let native = crate::describe::attr_fields(&m.opened)
                    .into_iter()
                    .map(|f| format!("{}={}", f.name, f.value))
                    .collect::<Vec<_>>()
                    .join(",");
                log::PmcDescriptor {
                    time,
                    pmc_id: m.pmc_id,
                    event_spec: m.event.clone().into(),
                    canonical_name: m.event.clone().into(),
                    scope: if m.alloc.scope.is_system() {
                        log::Scope::System
                    } else {
                        log::Scope::Process
                    },
                    cpu,
                    mode,
                    flags: m.alloc.flags.bits()
                        | if crate::log::unwind::wants_stack(&m.alloc) {
                            log::FLAG_DWARF_CALLCHAIN
                        } else {
                            0
                        },
                    native_config: native.into(),
                }
            })
            .collect()
    }
}
