//! Discovery: what each node publishes so others can reach it, and the set of known nodes.
//!
//! TODO(helper): DiscoveryInfo, TopologyInfo, JSON codec, DiscoverySet.

mod metadata;

pub use metadata::{Filter, Metadata};
