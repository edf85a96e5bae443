//! Unit tests of the frame codec: exact bytes of every link-level and registry frame,
//! malformed input, stream reassembly, and round-trip / garbage property tests.
//!
//! The test files name the module's items as `super::…`; the glob below hands them through.

use super::*;

mod link_frames;
mod prop_frames;
mod record_cache;
mod registry_frames;
