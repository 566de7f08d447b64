//! The self-test's judges, one test binary: on backends whose counts the test
//! controls, counts that tell the truth about each workload PASS, and wrong
//! counts make their rows FAIL. `sim`: pmc-freebsd's simulated hwpmc (any
//! OS); `fake`: pmc-linux's fake kernel (Linux).

mod fake;
mod sim;
