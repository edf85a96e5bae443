//! [`Labels`]: a node's free-form `key → value` labels, as a shared sorted slice.
//!
//! Every known node's record carries its labels (metadata and topology), and a node keeps
//! one record per known node: at 10,000 nodes that is 10,000 label sets. A
//! `BTreeMap<String, String>` allocates a whole leaf (about 540 bytes) for even one label; a
//! sorted slice of pairs allocates what the pairs need (48 bytes per label, plus the
//! strings). Labels are few per node and read far more often than written, so a binary search
//! over the sorted pairs costs no more than the tree's walk.
//!
//! The slice is shared (`Arc`): a copy of a record — the topology registry's copy of a
//! peer's policy labels, a record handed from the registry clients' shared cache to each
//! node of a process — costs a reference count, not the pairs and their strings again. No
//! labels is no allocation at all. A change (`insert`, `remove`, `retain`, `extend`) builds a
//! new slice: labels are set when a record is made, and then only read.
//!
//! The API is the subset of `BTreeMap`'s that labels use, with the same meaning: keys are
//! unique, iteration is in key order, a later `insert` of a key replaces its value, and
//! equality, ordering, hashing, `Debug` and the JSON form (an object) are those of the map.

use alloc::{collections::BTreeMap, string::String, sync::Arc, vec::Vec};
use core::{
    cmp::Ordering,
    fmt,
    hash::{Hash, Hasher},
};

use serde::{
    Deserialize, Deserializer, Serialize, Serializer,
    de::{MapAccess, Visitor},
    ser::SerializeMap,
};

/// Labels: unique keys, each with a value, kept in key order (see the [module docs](self)).
/// Never an empty slice: no labels is `None`.
#[derive(Clone, Default)]
pub struct Labels(Option<Arc<[(String, String)]>>);

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
        Labels(None)
    }

    /// The pairs in key order.
    fn pairs(&self) -> &[(String, String)] {
        self.0.as_deref().unwrap_or(&[])
    }

    /// Sorted, unique pairs as labels (none for an empty list).
    fn from_sorted(pairs: Vec<(String, String)>) -> Labels {
        Labels((!pairs.is_empty()).then(|| Arc::from(pairs)))
    }

    /// Applies `change` to a copy of the pairs and keeps the result.
    fn change<R>(&mut self, change: impl FnOnce(&mut Vec<(String, String)>) -> R) -> R {
        let mut pairs = self.pairs().to_vec();
        let result = change(&mut pairs);
        *self = Labels::from_sorted(pairs);
        result
    }

    /// How many labels.
    #[must_use]
    pub fn len(&self) -> usize {
        self.pairs().len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.pairs().binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    /// The value of `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&String> {
        self.find(key).ok().map(|i| &self.pairs()[i].1)
    }

    /// Whether `key` is present.
    #[must_use]
    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Sets `key` to `value`; returns the value it replaced.
    pub fn insert(&mut self, key: String, value: String) -> Option<String> {
        let at = self.find(&key);
        self.change(|pairs| match at {
            Ok(i) => Some(core::mem::replace(&mut pairs[i].1, value)),
            Err(i) => {
                pairs.insert(i, (key, value));
                None
            }
        })
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let i = self.find(key).ok()?;
        self.change(|pairs| Some(pairs.remove(i).1))
    }

    /// Keeps only the labels `keep` says yes to.
    pub fn retain(&mut self, mut keep: impl FnMut(&String, &mut String) -> bool) {
        if !self.is_empty() {
            self.change(|pairs| pairs.retain_mut(|(k, v)| keep(k, v)));
        }
    }

    /// `(key, value)` pairs in key order.
    pub fn iter(&self) -> Iter<'_> {
        self.pairs()
            .iter()
            .map(pair_refs as fn(&(String, String)) -> (&String, &String))
    }

    /// Heap bytes the labels hold: the shared slice (its two counts and the pairs) and the
    /// strings' capacities (memory accounting; a slice shared by several records is counted
    /// in each).
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        match &self.0 {
            None => 0,
            Some(pairs) => {
                2 * core::mem::size_of::<usize>()
                    + pairs.len() * core::mem::size_of::<(String, String)>()
                    + self
                        .iter()
                        .map(|(k, v)| k.capacity() + v.capacity())
                        .sum::<usize>()
            }
        }
    }

    /// Keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator + Clone {
        self.pairs().iter().map(|(k, _)| k)
    }

    /// Values in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator + Clone {
        self.pairs().iter().map(|(_, v)| v)
    }

    /// Builds from pairs in any order; of a repeated key the last value wins (as inserting
    /// them one by one into a map).
    fn from_pairs(mut pairs: Vec<(String, String)>) -> Labels {
        // Reversed, a stable sort puts the last of a repeated key first in its run, and
        // `dedup_by` keeps the first of each run: all in place.
        pairs.reverse();
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        pairs.dedup_by(|later, first| later.0 == first.0);
        Labels::from_sorted(pairs)
    }
}

impl PartialEq for Labels {
    fn eq(&self, other: &Labels) -> bool {
        self.pairs() == other.pairs()
    }
}

impl Eq for Labels {}

impl PartialOrd for Labels {
    fn partial_cmp(&self, other: &Labels) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Labels {
    fn cmp(&self, other: &Labels) -> Ordering {
        self.pairs().cmp(other.pairs())
    }
}

impl Hash for Labels {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // A slice hashes as its length then its elements: as the map does.
        self.pairs().hash(state);
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
        Labels::from_sorted(map.into_iter().collect())
    }
}

impl From<Labels> for BTreeMap<String, String> {
    fn from(labels: Labels) -> BTreeMap<String, String> {
        labels.into_iter().collect()
    }
}

impl<K: Into<String>, V: Into<String>> Extend<(K, V)> for Labels {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        // The current pairs first, then the new ones: of a repeated key the last wins.
        let mut pairs = self.pairs().to_vec();
        pairs.extend(iter.into_iter().map(|(k, v)| (k.into(), v.into())));
        *self = Labels::from_pairs(pairs);
    }
}

impl IntoIterator for Labels {
    type Item = (String, String);
    type IntoIter = alloc::vec::IntoIter<(String, String)>;

    /// The pairs in key order (copied when the slice is shared).
    fn into_iter(self) -> Self::IntoIter {
        self.pairs().to_vec().into_iter()
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

    #[test]
    fn a_copy_shares_the_pairs_and_a_change_copies_them() {
        let original: Labels = [("zone", "a"), ("app", "x")].into();
        let mut copy = original.clone();
        assert_eq!(copy.pairs().as_ptr(), original.pairs().as_ptr());
        assert_eq!(copy.insert("zone".into(), "b".into()), Some("a".to_owned()));
        assert_ne!(copy.pairs().as_ptr(), original.pairs().as_ptr());
        assert_eq!(
            BTreeMap::from(original.clone()),
            map(&[("app", "x"), ("zone", "a")])
        );
        assert_eq!(
            BTreeMap::from(copy.clone()),
            map(&[("app", "x"), ("zone", "b")])
        );
        copy.extend([("app", "y"), ("new", "1"), ("app", "z")]);
        assert_eq!(
            BTreeMap::from(copy.clone()),
            map(&[("app", "z"), ("new", "1"), ("zone", "b")])
        );
        // No labels holds nothing, however it was reached, and equals every other empty set.
        copy.retain(|_, _| false);
        assert!(copy.0.is_none() && copy.is_empty() && copy.heap_bytes() == 0);
        assert_eq!(copy, Labels::new());
        let mut one: Labels = [("k", "v")].into();
        assert_eq!(one.remove("k"), Some("v".to_owned()));
        assert!(one.0.is_none());
        assert!(Labels::from(BTreeMap::new()).0.is_none());
        assert!(
            Labels::from_iter(Vec::<(String, String)>::new())
                .0
                .is_none()
        );
        assert_eq!(Labels::default(), Labels::new());
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
