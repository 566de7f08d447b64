//! pmc's integration tests, one test binary (`cargo test -p pmc --test facade`): `region`
//! (`pmc::measure` and `pmc::Region` against the thread CPU clock: lower bounds, which a
//! neighbouring test cannot break) and the self-test on the fake kernel and the hwpmc
//! simulator (`selftest_fake`, `selftest_sim`). A new file here is a `mod` line below.

mod region;
mod selftest_fake;
mod selftest_sim;
