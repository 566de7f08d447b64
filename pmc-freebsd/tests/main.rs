//! pmc-freebsd's integration tests: the backend through the public
//! pmc-core API, driven by the simulated hwpmc driver (runs on every OS).

mod atf_cases;
mod backend_sim;
mod common;
mod hostile;
mod lifecycle_sim;
mod log_error_kind;
mod log_pump_error;
mod log_stream;
mod named_events_sim;
mod real_hwpmc;
mod sim_session;
