//! Unit tests of the registry server: one rule per scenario with exact instants and frames,
//! then bad input from clients.
//!
//! The test files name the module's items as `super::…`; the glob below hands them through.

use super::*;

mod bad_input;
mod rules;
