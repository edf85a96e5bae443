//! Unit tests of the discovery module: the JSON codec of discovery and topology records,
//! revision gating in the discovery set, the rings kept in step with it, and property tests
//! of the set against a naive model.
//!
//! The test files name the module's items as `super::…`; the glob below hands them through.

use super::*;

mod info;
mod prop_set;
mod rings;
mod set;
