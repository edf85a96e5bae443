//! Builds the C++ libatapp reference (`cpp/libatapp_ring.cpp`) into an executable with the
//! compiler the `cc` crate finds (`g++` on Linux; `scripts/test` installs it when missing),
//! optimised as a CMake Release build of upstream (`-O3 -DNDEBUG`). Its path reaches the
//! crate as `LIBATAPP_RING_CPP`; `ring-report` and the `libatapp_cpp` test run it.
//!
//! Also generates the tonic echo service `rpc-report` measures against (`proto/echo.proto`,
//! with protoc: `scripts/test` installs it when missing).

use std::{env, path::PathBuf, process::Command};

fn main() {
    println!("cargo:rerun-if-changed=proto/echo.proto");
    // `bytes` fields as `Bytes`: tonic hands payloads on without a copy, as ours does.
    tonic_prost_build::configure()
        .bytes(".")
        .compile_protos(&["proto/echo.proto"], &["proto"])
        .unwrap_or_else(|e| {
            panic!("generating the tonic echo service (is protoc installed?): {e}")
        });
    let src = "cpp/libatapp_ring.cpp";
    println!("cargo:rerun-if-changed={src}");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("libatapp_ring");
    let compiler = cc::Build::new()
        .cpp(true)
        .opt_level(3)
        .debug(false)
        .cargo_metadata(false)
        .cargo_warnings(false)
        .try_get_compiler()
        .unwrap_or_else(|e| panic!("no C++ compiler for {src} (install g++): {e}"));
    let mut cmd: Command = compiler.to_command();
    cmd.args(["-std=c++17", "-DNDEBUG", "-Wall", "-Wextra", "-o"])
        .arg(&out)
        .arg(src);
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("running the C++ compiler for {src}: {e}"));
    assert!(status.success(), "compiling {src} failed: {status}");
    println!("cargo:rustc-env=LIBATAPP_RING_CPP={}", out.display());
}
