//! What symbolizing and unwinding read: objects under `-r DIR`, kernel
//! symbols from `-k`, the user stacks of a `--call-graph dwarf-raw` log.

use std::path::Path;

use pmc_analyze::{AnalyzeOptions, KernelSymbols};

use crate::config::Analyze;
use crate::error::Failure;

use super::fail;

/// The analysis options of `-R`: object paths under `-r DIR` when given,
/// kernel symbols from `-k KERNELDIR` when given.
pub fn analyze_options(args: &Analyze) -> AnalyzeOptions {
    let mut o = AnalyzeOptions::default();
    o.symbolize.root.clone_from(&args.fsroot);
    if let Some(dir) = &args.kernel_dir {
        o.symbolize.kernel = kernel_symbols(dir).0;
    }
    o
}

/// `-k KERNELDIR`: `DIR/kallsyms`, else `DIR/vmlinux`, or the file given.
/// A directory with neither: kernel symbols off, and the warning to print.
pub(super) fn kernel_symbols(dir: &Path) -> (KernelSymbols, Option<String>) {
    if !dir.is_dir() {
        // A kallsyms copy or a vmlinux; if it cannot be read, the symbolizer says so.
        return (KernelSymbols::File(dir.to_path_buf()), None);
    }
    let candidates = ["kallsyms", "vmlinux"].map(|n| dir.join(n));
    if let Some(p) = candidates.iter().find(|p| p.is_file()) {
        return (KernelSymbols::File(p.clone()), None);
    }
    // There but not a regular file (a device, a FIFO, a directory): say what it is.
    if let Some((p, m)) = candidates
        .iter()
        .find_map(|p| std::fs::metadata(p).ok().map(|m| (p, m)))
    {
        return (
            KernelSymbols::Disabled,
            Some(format!(
                "-k {}: {} is {}, not a regular file: kernel frames are left unresolved (copy \
                 the symbols into a file there, e.g. cp /proc/kallsyms {})",
                dir.display(),
                p.display(),
                pmc_analyze::file::file_kind(&m),
                dir.display()
            )),
        );
    }
    let looked: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
    (
        KernelSymbols::Disabled,
        Some(format!(
            "-k {}: no kernel symbols there (looked for {}): kernel frames are left unresolved",
            dir.display(),
            looked.join(" and ")
        )),
    )
}

/// `-k`'s warning, once per run, when its directory has no kernel symbols.
pub fn warn_kernel_dir(args: &Analyze) {
    if let Some((_, Some(w))) = args.kernel_dir.as_deref().map(kernel_symbols) {
        diag!(
            "pmcstat: warning: {}",
            pmc_log::escape::escape(&w.to_string())
        );
    }
}

/// A log recorded with `--call-graph dwarf-raw` keeps each sample's user stack in a
/// `UserStack` record: unwind them now (objects under `-r DIR` when given), with the code
/// the recorder uses for `--call-graph dwarf`, and give the log with callchains only.
/// `None` when the log has no stacks.
pub fn unwind_stacks(log: &[u8], args: &Analyze) -> Result<Option<Vec<u8>>, Failure> {
    let Ok(reader) = pmc_log::Reader::new(log) else {
        return Ok(None);
    };
    if !reader
        .records()
        .any(|r| matches!(r, pmc_log::record::Record::UserStack(_)))
    {
        return Ok(None);
    }
    let unwinder = pmc_unwind::Unwinder::new().with_root(args.fsroot.clone());
    let (out, report) = pmc_unwind::log::unwind_log(log, unwinder)
        .map_err(|e| fail(format!("cannot unwind the log's stacks: {e}")))?;
    note!(
        "pmcstat: {} samples unwound from the log's stacks, {} stopped before the stack's root \
         (shown as [truncated]){}",
        report.unwound,
        report.truncated,
        if report.skipped > 0 {
            format!(
                ", {} stacks of another architecture or without their sample left as recorded",
                report.skipped
            )
        } else {
            String::new()
        }
    );
    for r in &report.refused {
        diag!(
            "pmcstat: warning: no unwinding through {}",
            pmc_log::escape::escape(&r.to_string())
        );
    }
    // The rewrite is a clean log whatever the input was: the input's damage is told here,
    // even with -q, as a damaged hwpmc log's conversion is (FORMAT.md: every skipped region
    // is reported).
    if !report.read.is_clean() {
        diag!("pmcstat: warning: the log: {}", report.read);
    }
    Ok(Some(out))
}
