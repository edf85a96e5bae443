//! Unit tests of the hash rings: single rings against the naive reference, the ring set's
//! incremental maintenance with exact counters, and property tests of both against the naive
//! model.
//!
//! The test files name the module's items as `super::…`; the glob below hands them through.

use super::*;

mod prop_ring;
mod prop_set;
mod ring;
mod set;
