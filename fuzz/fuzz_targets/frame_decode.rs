//! Fuzz target: a link's byte stream, cut into arbitrary chunks, through the frame decoder.
#![cfg_attr(fuzzing, no_main)]

#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzz::frame_decode(data));

/// Off-fuzz builds (stable `cargo build`/`clippy`) get a no-op entry point.
#[cfg(not(fuzzing))]
fn main() {}
