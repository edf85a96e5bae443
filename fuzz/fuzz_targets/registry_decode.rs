//! Fuzz target: registry-protocol frame bodies and their embedded discovery/topology JSON.
#![cfg_attr(fuzzing, no_main)]

#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzz::registry_decode(data));

/// Off-fuzz builds (stable `cargo build`/`clippy`) get a no-op entry point.
#[cfg(not(fuzzing))]
fn main() {}
