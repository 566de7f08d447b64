//! libpmc's integration tests, one test binary (`cargo test -p pmc-capi --test c_api`): the C
//! programs of `tests/c` against `libpmc.so`/`libpmc.a` (`c_api`; the PMU lab runs its tests
//! as `c_api::NAME`), the generated header (`header`; `PMC_BLESS_HEADER=1 cargo test -p
//! pmc-capi --test c_api header::` regenerates `pmc.h`) and bad input at every entry point
//! (`robust`). A new file here is a `mod` line below.

mod c_api;
mod header;
mod robust;
