//! pmc-tests' end-to-end suites, one test binary (`cargo test -p pmc-tests --test e2e`): each
//! module is a former test file of its own. They run pmcstat, pmc-workload and launched
//! commands, and count those, or the calling thread alone (`Target::CurrentThread`), never
//! this whole process with a bound a neighbouring test could break. The suites that do keep
//! binaries of their own: `truth_matrix` (this process's counts), `faults_log` (its memory),
//! and `faults_cli` and `faults_memory`, whose children's peak RSS (`wait4`'s `ru_maxrss`)
//! starts at this process's RSS when they fork: in one process with these suites' buffers
//! it was 134 MB for every pmcstat run, over their 120 MB bound. The PMU lab's `hw` is
//! alone too. A new file here is a `mod` line below.

#[path = "../common/mod.rs"]
mod common;

mod cgroup;
mod cli;
mod cli_clock;
mod cli_scope;
mod cli_top;
mod dwarf;
mod facade;
mod foundation;
mod fuzz_targets;
mod perf_export;
mod selftest;
mod unprivileged;
