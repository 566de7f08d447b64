//! pmc-analyze's integration tests, one test binary (`cargo test -p pmc-analyze --test
//! analyze`): symbolization and reports (`analyze`), perf as the oracle (`perf_record`), and
//! `go tool pprof` as the oracle (`pprof`). A new file here is a `mod` line below.

mod common;

mod analyze;
mod perf_record;
mod pprof;
