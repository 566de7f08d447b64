//! pmc-linux's integration tests that share a process, one test binary (`cargo test -p
//! pmc-linux --test linux`): the ring reader and record parser on hand-made bytes (`ring`,
//! `record`: the Miri lane runs these two), and against the kernel and perf (`ring_real`,
//! `perf_oracle`, `info`, `whole_process`, whose process-wide cases run in a fresh process of
//! their own). `counting` and `sampling` count this process and keep binaries of their own.
//! A new file here is a `mod` line below.

mod info;
mod perf_oracle;
mod record;
mod ring;
mod ring_real;
mod whole_process;
