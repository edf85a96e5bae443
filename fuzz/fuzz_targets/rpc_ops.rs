//! Fuzz target: arbitrary operation sequences with calls, serves, broadcasts and cancels on
//! a small simulated cluster; the message and call ledgers' invariants checked.
#![cfg_attr(fuzzing, no_main)]

#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzz::rpc_ops(data));

/// Off-fuzz builds (stable `cargo build`/`clippy`) get a no-op entry point.
#[cfg(not(fuzzing))]
fn main() {}
