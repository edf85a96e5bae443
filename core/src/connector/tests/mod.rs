//! Unit tests of the connector: the routing decision and the reactions, then the
//! ready/unready/removal cascade through proxies.
//!
//! The test files name the module's items as `super::…`; the glob below hands them through.

use super::*;

mod cascade;
mod news;
mod routing;
