//! [`Labels`]: a node's free-form `key → value` labels, as a sorted vector.
//!
//! Every known node's record carries its labels (metadata and topology), and a node keeps
//! one record per known node: at 10,000 nodes that is 10,000 label sets. A
//! `BTreeMap<String, String>` allocates a whole leaf (about 540 bytes) for even one label; a
//! sorted vector of pairs allocates what the pairs need (48 bytes per label, plus the
//! strings). Labels are few per node and read far more often than written, so a binary search
//! over the sorted pairs costs no more than the tree's walk.
//!
//! The API is the subset of `BTreeMap`'s that labels use, with the same meaning: keys are
//! unique, iteration is in key order, a later `insert` of a key replaces its value, and
//! equality, ordering, hashing, `Debug` and the JSON form (an object) are those of the map.

use alloc::{collections::BTreeMap, string::String, vec::Vec};
use core::fmt;

use serde::{
    Deserialize, Deserializer, Serialize, Serializer,
    de::{MapAccess, Visitor},
    ser::SerializeMap,
};

/// Labels: unique keys, each with a value, kept in key order (see the [module docs](self)).
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Labels(Vec<(String, String)>);

/// Iterator over `(key, value)` references, in key order.
pub type Iter<'a> = core::iter::Map<
    core::slice::Iter<'a, (String, String)>,
    fn(&(String, String)) -> (&String, &String),
>;

fn pair_refs(pair: &(String, String)) -> (&String, &String) {
    (&pair.0, &pair.1)
}

impl Labels {
    /// No labels.
    #[must_use]
    pub const fn new() -> Labels {
        Labels(Vec::new())
    }

    /// How many labels.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    /// The value of `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&String> {
        self.find(key).ok().map(|i| &self.0[i].1)
    }

    /// Whether `key` is present.
    #[must_use]
    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Sets `key` to `value`; returns the value it replaced.
    pub fn insert(&mut self, key: String, value: String) -> Option<String> {
        match self.find(&key) {
            Ok(i) => Some(core::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                self.0.insert(i, (key, value));
                None
            }
        }
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        self.find(key).ok().map(|i| self.0.remove(i).1)
    }

    /// Keeps only the labels `keep` says yes to.
    pub fn retain(&mut self, mut keep: impl FnMut(&String, &mut String) -> bool) {
        self.0.retain_mut(|(k, v)| keep(k, v));
    }

    /// `(key, value)` pairs in key order.
    pub fn iter(&self) -> Iter<'_> {
        self.0
            .iter()
            .map(pair_refs as fn(&(String, String)) -> (&String, &String))
    }

    /// Heap bytes the labels hold: the pairs' room and the strings' capacities (memory
    /// accounting).
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        self.0.capacity() * core::mem::size_of::<(String, String)>()
            + self
                .iter()
                .map(|(k, v)| k.capacity() + v.capacity())
                .sum::<usize>()
    }

    /// Keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator + Clone {
        self.0.iter().map(|(k, _)| k)
    }

    /// Values in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator + Clone {
        self.0.iter().map(|(_, v)| v)
    }

    /// Builds from pairs in any order; of a repeated key the last value wins (as inserting
    /// them one by one into a map).
    fn from_pairs(mut pairs: Vec<(String, String)>) -> Labels {
        // Reversed, a stable sort puts the last of a repeated key first in its run, and
        // `dedup_by` keeps the first of each run: all in place.
        pairs.reverse();
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        pairs.dedup_by(|later, first| later.0 == first.0);
        pairs.shrink_to_fit();
        Labels(pairs)
    }
}

impl fmt::Debug for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Labels {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Labels {
        Labels::from_pairs(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

impl<K: Into<String>, V: Into<String>, const N: usize> From<[(K, V); N]> for Labels {
    fn from(pairs: [(K, V); N]) -> Labels {
        pairs.into_iter().collect()
    }
}

impl From<BTreeMap<String, String>> for Labels {
    fn from(map: BTreeMap<String, String>) -> Labels {
        // Already sorted and unique.
        Labels(map.into_iter().collect())
    }
}

impl From<Labels> for BTreeMap<String, String> {
    fn from(labels: Labels) -> BTreeMap<String, String> {
        labels.0.into_iter().collect()
    }
}

impl<K: Into<String>, V: Into<String>> Extend<(K, V)> for Labels {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k.into(), v.into());
        }
    }
}

impl IntoIterator for Labels {
    type Item = (String, String);
    type IntoIter = alloc::vec::IntoIter<(String, String)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a Labels {
    type Item = (&'a String, &'a String);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl Serialize for Labels {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (k, v) in self {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Labels {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Labels, D::Error> {
        struct LabelsVisitor;

        impl<'de> Visitor<'de> for LabelsVisitor {
            type Value = Labels;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of string labels")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Labels, A::Error> {
                // The hint is the sender's claim: bound what it may reserve. (JSON gives none:
                // the first pair allocates room for four, trimmed to fit at the end.)
                let mut pairs = Vec::with_capacity(access.size_hint().unwrap_or(0).min(64));
                while let Some(pair) = access.next_entry::<String, String>()? {
                    pairs.push(pair);
                }
                Ok(Labels::from_pairs(pairs))
            }
        }

        deserializer.deserialize_map(LabelsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use alloc::{borrow::ToOwned, format, string::ToString};

    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|&(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    #[test]
    fn insert_get_remove_follow_the_map() {
        let mut labels = Labels::new();
        assert_eq!(labels.insert("zone".into(), "b".into()), None);
        assert_eq!(labels.insert("app".into(), "x".into()), None);
        assert_eq!(
            labels.insert("zone".into(), "a".into()),
            Some("b".to_owned())
        );
        assert_eq!(labels.get("zone"), Some(&"a".to_owned()));
        assert_eq!(labels.get("missing"), None);
        assert!(labels.contains_key("app"));
        assert_eq!(labels.keys().collect::<Vec<_>>(), ["app", "zone"]);
        assert_eq!(labels.values().collect::<Vec<_>>(), ["x", "a"]);
        assert_eq!(labels.remove("app"), Some("x".to_owned()));
        assert_eq!(labels.remove("app"), None);
        assert_eq!(labels.len(), 1);
        assert_eq!(BTreeMap::from(labels), map(&[("zone", "a")]));
    }

    #[test]
    fn collecting_sorts_and_keeps_the_last_of_a_repeated_key() {
        let labels: Labels = [("b", "1"), ("a", "2"), ("b", "3"), ("c", "4"), ("a", "5")].into();
        assert_eq!(
            BTreeMap::from(labels),
            map(&[("a", "5"), ("b", "3"), ("c", "4")])
        );
    }

    #[test]
    fn order_hash_and_debug_are_the_maps() {
        use core::hash::{BuildHasher, Hash, Hasher};
        let pairs = [("k", "v"), ("a", "b")];
        let labels: Labels = pairs.into();
        let tree = map(&pairs);
        assert_eq!(format!("{labels:?}"), format!("{tree:?}"));
        let state = hashbrown::DefaultHashBuilder::default();
        let hash = |h: &dyn Fn(&mut dyn Hasher)| {
            let mut s = state.build_hasher();
            h(&mut s);
            s.finish()
        };
        assert_eq!(
            hash(&|s| labels.hash(&mut HasherRef(s))),
            hash(&|s| tree.hash(&mut HasherRef(s)))
        );
        let other: Labels = [("a", "c")].into();
        assert_eq!(labels.cmp(&other), tree.cmp(&map(&[("a", "c")])));
    }

    /// A sized wrapper so `Hash::hash` can take a `dyn Hasher`.
    struct HasherRef<'a>(&'a mut dyn core::hash::Hasher);

    impl core::hash::Hasher for HasherRef<'_> {
        fn finish(&self) -> u64 {
            self.0.finish()
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.write(bytes);
        }
    }

    #[test]
    fn json_is_an_object_and_bad_values_are_refused() {
        let labels: Labels = serde_json::from_str(r#"{"z":"1","a":"2","z":"3"}"#).unwrap();
        assert_eq!(
            BTreeMap::from(labels.clone()),
            map(&[("a", "2"), ("z", "3")])
        );
        assert_eq!(
            serde_json::to_string(&labels).unwrap(),
            r#"{"a":"2","z":"3"}"#
        );
        let err = serde_json::from_str::<Labels>(r#"{"a":1}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("invalid type: integer `1`, expected a string"),
            "{err}"
        );
        let err = serde_json::from_str::<Labels>("[]")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("invalid type: sequence, expected an object of string labels"),
            "{err}"
        );
    }
}
