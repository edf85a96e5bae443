//! Fuzz target: a stranger's bytes against a node and a registry holding a cluster key.
#![cfg_attr(fuzzing, no_main)]

#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzz::handshake(data));

/// Off-fuzz builds (stable `cargo build`/`clippy`) get a no-op entry point.
#[cfg(not(fuzzing))]
fn main() {}
