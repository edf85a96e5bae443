//! cargo-fuzz targets for switchboard.
//!
//! This crate is an ordinary workspace member so it builds and its corpus-replay tests run on
//! stable (`cargo test -p switchboard-fuzz`); the fuzz binaries themselves are built by
//! `cargo +nightly fuzz run <target>`, which sets `--cfg fuzzing` and links libFuzzer.
//!
//! Each target is a few lines that call into a function of this library, so the same code runs
//! under libFuzzer and in the stable replay test over the committed corpus in
//! `fuzz/corpus/<target>/`.
