//! Unit tests of the registry client: its rules (register on connect, backoff, refusal,
//! updates, bad input) and registry restarts while a cluster runs.
//!
//! The test files name the module's items as `super::…`; the glob below hands them through.

use super::*;

mod restart;
mod rules;
