//! `pmc-bench`: the whole benchmark suite, one table of ratios.
//!
//! ```text
//! cargo build --release -p pmcstat -p pmc-bench && cargo run --release -p pmc-bench --bin pmc-bench
//! ```
//!
//! Every figure is measured against its baseline in the same run,
//! interleaved round by round, and reported as the median over rounds (ratios
//! are medians of per-round ratios). `--quick` shortens every section;
//! `--pmcstat PATH` names the pmcstat binary (default: next to this one).
//! See BENCHMARKS.md.
//!
//! On Linux the suite measures pmc-linux (`linux/`); on FreeBSD it measures
//! pmc-freebsd's read and control paths against the bare hwpmc system call
//! (`freebsd.rs`); elsewhere there is nothing to measure.

#[cfg(target_os = "freebsd")]
mod freebsd;
#[cfg(target_os = "linux")]
mod linux;

fn main() {
    #[cfg(target_os = "linux")]
    linux::main();
    #[cfg(target_os = "freebsd")]
    freebsd::main();
    #[cfg(not(any(target_os = "linux", target_os = "freebsd")))]
    {
        eprintln!("pmc-bench: pmc has no backend on this OS: nothing to measure");
        std::process::exit(2);
    }
}
