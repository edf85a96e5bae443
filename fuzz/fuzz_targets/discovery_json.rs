//! Fuzz target: discovery and topology JSON as registries deliver it.
#![cfg_attr(fuzzing, no_main)]

#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzz::discovery_json(data));

/// Off-fuzz builds (stable `cargo build`/`clippy`) get a no-op entry point.
#[cfg(not(fuzzing))]
fn main() {}
