//! The seeded experiments of `select-report` (issue 26): each section adds its figures to the
//! one JSON object the binary prints.
//!
//! - [`modes`]: Maglev against the ring (build, lookup, keys moved by one removal), bounded
//!   loads and the plain ring under Zipf keys, two random choices and round robin with one
//!   slow node;
//! - [`ejection`]: outlier ejection of a node that fails every call;
//! - [`retry`]: the retry budget with every server failing, hedging with one slow node.

pub mod ejection;
pub mod modes;
pub mod retry;

/// The figures one section measured, by name.
pub type Figures = serde_json::Map<String, serde_json::Value>;
