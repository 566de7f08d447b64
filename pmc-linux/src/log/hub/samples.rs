//! A drained record's way to the log: through the post-processors, converted (samples
//! with their stacks) into the reorder buffer, then written in time order.

use crate::log::convert::{sample_frames, sample_head, to_log};
use crate::log::post::{Flow, PostChain};
use crate::log::reorder::{Emit, Reorder};
use crate::log::source::RingMeta;
use crate::log::unwind::UserStack;
use crate::record::Record;
use crate::sys::Sys;
use pmc_log::record as log;

/// A record drained from a ring (with the ring's metadata): through the post-processors,
/// then, unless one of them took it, converted into the reorder buffer.
pub(super) fn take_drained(
    sys: &dyn Sys,
    post: &mut PostChain,
    reorder: &mut Reorder,
    meta: &RingMeta,
    r: &Record<'_>,
) {
    if post.drained(meta, r, &mut |rec| reorder.push(rec)) == Flow::Consumed {
        return;
    }
    convert(sys, meta, r, reorder);
}

/// Where [`write_ordered`] writes: the log's writer, or any closure over records (a
/// sample then comes as a record).
pub(super) trait Out {
    /// Writes a record.
    fn record(&mut self, r: &log::Record<'_>);
    /// Writes a sample no post-processor changed.
    fn sample(&mut self, s: &log::Sample<'_>) {
        self.record(&log::Record::Sample(s.clone()));
    }
}

impl<F: FnMut(&log::Record<'_>)> Out for F {
    fn record(&mut self, r: &log::Record<'_>) {
        self(r)
    }
}

/// Hands `write`, in time order, the drained records stamped at or before `upto`, each after
/// the post-processors (which may rewrite it, and write records after it).
pub(super) fn write_ordered(
    reorder: &mut Reorder,
    post: &mut PostChain,
    upto: u64,
    write: &mut dyn Out,
) {
    // Samples no processor looks at go straight to the log.
    let plain = !post.orders_samples();
    reorder.flush(upto, &mut Ordered { post, write, plain });
}

/// The reorder buffer's records through the post-processors to an [`Out`].
struct Ordered<'a> {
    post: &'a mut PostChain,
    write: &'a mut dyn Out,
    /// No post-processor looks at samples.
    plain: bool,
}

impl Emit for Ordered<'_> {
    fn record(&mut self, rec: &mut log::Record<'_>, stack: Option<&UserStack<'_>>) {
        let Ordered { post, write, plain } = self;
        if *plain && stack.is_none() && matches!(rec, log::Record::Sample(_)) {
            return write.record(rec);
        }
        post.ordered(rec, stack, &mut |r| write.record(r));
    }
    fn takes_plain_samples(&self) -> bool {
        self.plain
    }
    fn plain_sample(&mut self, s: &log::Sample<'_>) {
        self.write.sample(s);
    }
}

/// Record conversion: `r`, drained from a ring with metadata `meta`, into the reorder buffer
/// as a log record (nothing for records the log does not carry), with its user stack to
/// unwind; with raw capture (`CallGraph::DwarfRaw`), the stack as a `UserStack` record after it.
pub(super) fn convert(sys: &dyn Sys, meta: &RingMeta, r: &Record<'_>, reorder: &mut Reorder) {
    if let Record::Sample(s) = r {
        let fields = crate::record::SampleFields::of(s);
        let stack = crate::log::unwind::UserStack::of(&fields);
        return convert_sample(meta, &fields, s.raw.unwrap_or_default(), stack, reorder);
    }
    if let Some(rec) = to_log(sys, r, meta, |id| meta.pmc_of(id)) {
        reorder.push(rec);
    }
}

/// A sample (its fields, its raw data, its captured user stack) into the reorder buffer
/// (the drain's hot path: its frames and its stack go to the buffer's arenas; nothing is
/// allocated).
pub(super) fn convert_sample(
    meta: &RingMeta,
    s: &crate::record::SampleFields<'_>,
    raw: &[u8],
    stack: Option<crate::log::unwind::UserStack<'_>>,
    reorder: &mut Reorder,
) {
    let frames = reorder.frames();
    let from = frames.len();
    let kernel_frames = sample_frames(s, frames);
    // hwpmc's callchains without PMC_F_USERCALLCHAIN: a sample taken in the kernel has the
    // kernel's frames only (perf's callchain goes on into user space).
    let kernel_only = !meta.user_in_kernel && kernel_frames > 0;
    if kernel_only {
        frames.truncate(from.saturating_add(kernel_frames as usize));
    }
    let head = sample_head(s, meta, &|id| meta.pmc_of(id), kernel_frames);
    // Without user frames for kernel samples: nothing to unwind either.
    let stack = stack.filter(|_| !kernel_only);
    if !raw.is_empty() {
        // Raw data (tracepoints): the sample waits as a whole record.
        let chain = frames.split_off(from);
        let mut sample = head.sample(&[]);
        sample.callchain = log::Callchain::from_vec(chain);
        sample.raw = log::Bytes::borrowed(raw);
        return push_sample_stack(meta, reorder, log::Record::Sample(sample), stack);
    }
    match stack {
        // Raw capture: the stack goes into the log after its sample, not unwound.
        Some(u) if meta.raw_stacks => {
            let user = {
                let frames = reorder.frames();
                u.to_record(&head.sample(frames.get(from..).unwrap_or_default()))
            };
            reorder.push_sample(head, from, None);
            reorder.push(log::Record::UserStack(user));
        }
        stack => reorder.push_sample(head, from, stack),
    }
}

/// A sample with raw data into the reorder buffer, with its user stack (to unwind, or with
/// raw capture as a `UserStack` record after it).
pub(super) fn push_sample_stack(
    meta: &RingMeta,
    reorder: &mut Reorder,
    rec: log::Record<'_>,
    stack: Option<crate::log::unwind::UserStack<'_>>,
) {
    match (stack, &rec) {
        (Some(u), log::Record::Sample(s)) if meta.raw_stacks => {
            let user = u.to_record(s);
            reorder.push(rec);
            reorder.push(log::Record::UserStack(user));
        }
        (stack, _) => reorder.push_with(rec, stack),
    }
}
