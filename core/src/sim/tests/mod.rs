//! Tests of the simulator itself, on scripted [`Puppet`](super::puppet::Puppet) nodes: the
//! link and clock machinery, then the ledger, jitter, partitions, registry spread and the
//! seeded chaos runs; the hooks tests use to look between steps; and the registry network on
//! its own.
//!
//! The test files name the module's items as `super::…`; the glob below hands them through.

use super::*;

mod call_ledger_checks;
mod chaos;
mod ledger_checks;
mod machinery;
mod path_faults;
mod registry_net;
mod test_hooks;
