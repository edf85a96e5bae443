//! The concern table: which node types are pushed the changes of which others.

use alloc::{
    collections::{BTreeMap, BTreeSet},
    string::String,
};

/// Node type (a discovery record's `type_name`) → the types whose changes it is pushed.
///
/// A type the table does not list follows **every** type (the default, and what an empty
/// table means for all). A listed type follows exactly its set — an empty set follows
/// nothing. A node is always pushed its own record, whatever the table says. The table is
/// fixed for the lifetime of a server (as in Nexus, changing it needs a restart).
///
/// ```
/// use switchboard_core::registry::server::ConcernTable;
///
/// let mut table = ConcernTable::all();
/// table.set("gate", ["lobby", "scene"]);
/// assert!(table.concerns("gate", "lobby"));
/// assert!(!table.concerns("gate", "battle"));
/// assert!(table.concerns("battle", "gate")); // unlisted: follows everything
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConcernTable {
    follows: BTreeMap<String, BTreeSet<String>>,
}

impl ConcernTable {
    /// The default table: every type follows every type.
    #[must_use]
    pub fn all() -> ConcernTable {
        ConcernTable::default()
    }

    /// A table from `type_name → followed type_names` pairs (e.g. a parsed config file);
    /// unlisted types follow everything.
    #[must_use]
    pub fn from_map(follows: BTreeMap<String, BTreeSet<String>>) -> ConcernTable {
        ConcernTable { follows }
    }

    /// Makes `follower` follow exactly `followed` (replacing what it followed before).
    pub fn set<I, S>(&mut self, follower: &str, followed: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.follows.insert(
            String::from(follower),
            followed.into_iter().map(Into::into).collect(),
        );
    }

    /// Whether a node of type `follower` is pushed changes of nodes of type `changed`.
    #[must_use]
    pub fn concerns(&self, follower: &str, changed: &str) -> bool {
        self.follows
            .get(follower)
            .is_none_or(|set| set.contains(changed))
    }
}
