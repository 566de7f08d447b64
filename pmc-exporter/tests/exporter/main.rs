//! pmc-exporter's integration tests, one test binary (`cargo test -p pmc-exporter --test
//! exporter`): the Prometheus judges (`prometheus`: promtool, a real Prometheus,
//! node_exporter, perf) and the exporter over the hwpmc simulator (`hwpmc_sim`). A new file
//! here is a `mod` line below.

mod hwpmc_sim;
mod prometheus;
