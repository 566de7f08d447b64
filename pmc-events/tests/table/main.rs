//! pmc-events' integration tests, one test binary (`cargo test -p pmc-events --test table`):
//! the generated table against the kernel's JSON (`table`) and against Intel's own event lists
//! (`intel_crosscheck`). A new file here is a `mod` line below.

mod intel_crosscheck;
mod table;
