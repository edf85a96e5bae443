//! Unit tests of the etcd backend's pure parts: keys, the registration txn, the JSON
//! mapping and snapshot diffs; the lease and watch machines at exact instants; and a property
//! test of the watcher against a model etcd.
//!
//! The test files name the module's items as `super::…`; the glob below hands them through.

use super::*;

mod lease;
mod prop_watch;
mod records;
mod watch;
