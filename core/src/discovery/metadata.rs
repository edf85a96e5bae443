//! Service metadata a node publishes, and the filters that select nodes by it.
//!
//! Field names follow libatapp's `atapp_metadata` message so the JSON is shared with C++ nodes.
//! A [`Filter`] is a metadata pattern: an empty field is a wildcard, a non-empty field must match
//! exactly, and every filter label with a non-empty value must be present with the same value.

use alloc::string::String;

use serde::{Deserialize, Serialize};

use super::{
    Labels, StaticDefault,
    json::{is_default, or_default},
};

/// Kubernetes-style metadata of a node (libatapp `metadata` field of `atapp_discovery`).
///
/// JSON follows the protobuf conventions of the rest of the record: `null` or a missing field
/// is the default, the lowerCamelCase names of proto3 JSON are accepted as aliases, and empty
/// fields are omitted when writing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(default)]
pub struct Metadata {
    /// API version of the service.
    #[serde(
        alias = "apiVersion",
        deserialize_with = "or_default",
        skip_serializing_if = "is_default"
    )]
    pub api_version: String,
    /// Kind of service.
    #[serde(deserialize_with = "or_default", skip_serializing_if = "is_default")]
    pub kind: String,
    /// Group of the service.
    #[serde(deserialize_with = "or_default", skip_serializing_if = "is_default")]
    pub group: String,
    /// Service name (not the node name).
    #[serde(deserialize_with = "or_default", skip_serializing_if = "is_default")]
    pub name: String,
    /// Namespace.
    #[serde(
        alias = "namespaceName",
        deserialize_with = "or_default",
        skip_serializing_if = "is_default"
    )]
    pub namespace_name: String,
    /// Unique id.
    #[serde(deserialize_with = "or_default", skip_serializing_if = "is_default")]
    pub uid: String,
    /// Subset (canary, blue/green, ...).
    #[serde(
        alias = "serviceSubset",
        deserialize_with = "or_default",
        skip_serializing_if = "is_default"
    )]
    pub service_subset: String,
    /// Free-form labels; ordered so encoding and hashing are deterministic.
    #[serde(deserialize_with = "or_default", skip_serializing_if = "is_default")]
    pub labels: Labels,
}

impl StaticDefault for Metadata {
    const EMPTY: &'static Metadata = &Metadata {
        api_version: String::new(),
        kind: String::new(),
        group: String::new(),
        name: String::new(),
        namespace_name: String::new(),
        uid: String::new(),
        service_subset: String::new(),
        labels: Labels::new(),
    };
}

impl Metadata {
    /// Heap bytes the metadata holds: its strings' capacities and its labels (memory
    /// accounting).
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        [
            &self.api_version,
            &self.kind,
            &self.group,
            &self.name,
            &self.namespace_name,
            &self.uid,
            &self.service_subset,
        ]
        .iter()
        .map(|s| s.capacity())
        .sum::<usize>()
            + self.labels.heap_bytes()
    }
}

/// A metadata pattern selecting nodes; see the module docs for the matching rule.
///
/// Filters are compared and hashed by every field, label keys *and* values (libatapp hashes only
/// the values, so two different filters can collide there).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Filter(pub Metadata);

impl Filter {
    /// The filter that matches every node.
    #[must_use]
    pub fn any() -> Filter {
        Filter(Metadata::default())
    }

    /// The filter selecting the nodes labelled `key` = `value`
    /// (`Filter::label("role", "x")`); chain [`and_label`](Self::and_label) for more. An
    /// empty `value` matches every node (see the module docs).
    #[must_use]
    pub fn label(key: impl Into<String>, value: impl Into<String>) -> Filter {
        Filter::any().and_label(key, value)
    }

    /// This filter, also requiring the label `key` = `value` (replacing an earlier value of
    /// `key`).
    #[must_use]
    pub fn and_label(mut self, key: impl Into<String>, value: impl Into<String>) -> Filter {
        self.0.labels.insert(key.into(), value.into());
        self
    }

    /// Whether this filter matches every node (all fields empty, no label with a value).
    #[must_use]
    pub fn is_wildcard(&self) -> bool {
        let m = &self.0;
        m.api_version.is_empty()
            && m.kind.is_empty()
            && m.group.is_empty()
            && m.name.is_empty()
            && m.namespace_name.is_empty()
            && m.uid.is_empty()
            && m.service_subset.is_empty()
            && m.labels.values().all(String::is_empty)
    }

    /// Whether a node publishing `metadata` is selected by this filter.
    #[must_use]
    pub fn matches(&self, metadata: &Metadata) -> bool {
        let rule = &self.0;
        let field = |want: &str, have: &str| want.is_empty() || want == have;
        field(&rule.api_version, &metadata.api_version)
            && field(&rule.kind, &metadata.kind)
            && field(&rule.group, &metadata.group)
            && field(&rule.name, &metadata.name)
            && field(&rule.namespace_name, &metadata.namespace_name)
            && field(&rule.uid, &metadata.uid)
            && field(&rule.service_subset, &metadata.service_subset)
            && rule
                .labels
                .iter()
                .filter(|(_, want)| !want.is_empty())
                .all(|(k, want)| metadata.labels.get(k) == Some(want))
    }
}

#[cfg(test)]
mod tests {
    use alloc::string::ToString;

    use super::*;

    fn meta(kind: &str, labels: &[(&str, &str)]) -> Metadata {
        Metadata {
            kind: kind.to_string(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Metadata::default()
        }
    }

    #[test]
    fn the_label_builder_selects_by_every_label_given() {
        let role = Filter::label("role", "x");
        assert_eq!(role, Filter(meta("", &[("role", "x")])));
        assert!(role.matches(&meta("game", &[("role", "x"), ("zone", "1")])));
        assert!(!role.matches(&meta("game", &[("role", "y")])));
        let both = Filter::label("role", "x").and_label("zone", "1");
        assert!(both.matches(&meta("", &[("role", "x"), ("zone", "1")])));
        assert!(!both.matches(&meta("", &[("role", "x"), ("zone", "2")])));
        assert!(Filter::label("role", "").is_wildcard());
    }

    #[test]
    fn empty_filter_is_a_wildcard() {
        let f = Filter::any();
        assert!(f.is_wildcard());
        assert!(f.matches(&meta("game", &[("zone", "1")])));
        assert!(f.matches(&Metadata::default()));
        // A label with an empty value is a wildcard too.
        assert!(Filter(meta("", &[("zone", "")])).is_wildcard());
    }

    #[test]
    fn fields_match_exactly_and_labels_must_be_present_and_equal() {
        let f = Filter(meta("game", &[("zone", "1"), ("any", "")]));
        assert!(!f.is_wildcard());
        assert!(f.matches(&meta("game", &[("zone", "1"), ("extra", "x")])));
        assert!(!f.matches(&meta("gate", &[("zone", "1")])));
        assert!(!f.matches(&meta("game", &[("zone", "2")])));
        assert!(!f.matches(&meta("game", &[])));
        assert!(!f.matches(&meta("gamex", &[("zone", "1")])));
    }

    #[test]
    fn filters_differing_only_in_label_keys_are_different() {
        let a = Filter(meta("", &[("a", "1")]));
        let b = Filter(meta("", &[("b", "1")]));
        assert_ne!(a, b);
    }
}
