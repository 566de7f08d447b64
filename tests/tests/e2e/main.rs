//! pmc-tests' end-to-end suites, one test binary (`cargo test -p pmc-tests --test e2e`): each
//! module is a former test file of its own. They run pmcstat, pmc-workload and launched
//! commands, and count those, or the calling thread alone (`Target::CurrentThread`), never
//! this whole process with a bound a neighbouring test could break: the suites that do
//! (`truth_matrix`, `faults_log`'s memory bounds) and the PMU lab's `hw` keep binaries of
//! their own. A new file here is a `mod` line below.

mod common;

mod cgroup;
mod cli;
mod cli_clock;
mod cli_scope;
mod cli_top;
mod dwarf;
mod facade;
mod faults_cli;
mod faults_memory;
mod foundation;
mod fuzz_targets;
mod perf_export;
mod selftest;
mod unprivileged;
