//! Fuzz target: the registry server driven by authenticated and unauthenticated sessions —
//! registrations and updates around the size limits, raw bytes, announced frames, closes
//! and time, interleaved; the perimeter's invariants checked after every operation.
#![cfg_attr(fuzzing, no_main)]

#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzz::registry_server(data));

/// Off-fuzz builds (stable `cargo build`/`clippy`) get a no-op entry point.
#[cfg(not(fuzzing))]
fn main() {}
