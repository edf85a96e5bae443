//! [`Sparse`]: a pointer-wide holder for a record part that is usually empty.

use alloc::{boxed::Box, string::String, vec::Vec};
use core::{
    cmp::Ordering,
    fmt,
    hash::{Hash, Hasher},
    mem::size_of,
    ops::{Deref, DerefMut},
};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A type whose [`Default`] value has a `'static` instance, so an empty [`Sparse`] has
/// something to read as. `*Self::EMPTY` must equal `Self::default()`.
pub trait StaticDefault: Default + PartialEq + 'static {
    /// The default value, shared.
    const EMPTY: &'static Self;
}

impl StaticDefault for String {
    const EMPTY: &'static String = &String::new();
}

impl<T: PartialEq + 'static> StaticDefault for Vec<T> {
    const EMPTY: &'static Vec<T> = &Vec::new();
}

/// A `T` that takes one pointer while it holds the default value.
///
/// A known node's record is kept for every other node, so a part most records leave at its
/// default (metadata, area, gateways, libatapp's `hash_code` and `custom_data`) should not
/// take its full size inline in each of them. A `Sparse<T>` is one pointer: empty — no
/// allocation — while the value is `T`'s default, a `Box<T>` otherwise.
///
/// It reads as a `T` ([`Deref`]; an empty one reads as a shared `'static` default), so
/// `info.metadata.labels` and `info.area.region` read as before. A mutable access
/// ([`DerefMut`]) allocates the box first if it is empty (and keeps it even if the value goes
/// back to the default; [`Sparse::compact`] drops it again). Build one with `.into()`
/// ([`From`]`<T>`, which stores nothing for a default value) or [`Default`].
///
/// Everything observable is `T`'s: equality, ordering, hashing and `Debug` are those of the
/// value (an empty `Sparse` equals one boxing a default), and serde reads and writes it as the
/// `T` itself, so the JSON of a record is byte for byte what it was with the field inline.
///
/// Its own operations are associated functions ([`Sparse::is_allocated`]`(&x)`), so they never
/// hide a method of `T` reached through `Deref`.
pub struct Sparse<T: StaticDefault>(Option<Box<T>>);

impl<T: StaticDefault> Sparse<T> {
    /// An empty one (reads as the default; allocates nothing).
    #[must_use]
    pub const fn new() -> Sparse<T> {
        Sparse(None)
    }

    /// Whether the value is held in a box (it may still equal the default after a mutable
    /// access; see [`compact`](Sparse::compact)).
    #[must_use]
    pub fn is_allocated(this: &Sparse<T>) -> bool {
        this.0.is_some()
    }

    /// Bytes of the box itself (`size_of::<T>()`, or 0 when empty), not counting what the
    /// value holds on the heap (memory accounting).
    #[must_use]
    pub fn boxed_bytes(this: &Sparse<T>) -> usize {
        if this.0.is_some() { size_of::<T>() } else { 0 }
    }

    /// Frees the box if the value it holds is the default.
    pub fn compact(this: &mut Sparse<T>) {
        if this.0.as_deref().is_some_and(|value| value == T::EMPTY) {
            this.0 = None;
        }
    }

    /// Takes the value out, leaving the wrapper empty.
    pub fn take(this: &mut Sparse<T>) -> T {
        this.0.take().map_or_else(T::default, |boxed| *boxed)
    }

    /// The value.
    #[must_use]
    pub fn into_inner(this: Sparse<T>) -> T {
        this.0.map_or_else(T::default, |boxed| *boxed)
    }
}

impl<T: StaticDefault> Default for Sparse<T> {
    fn default() -> Sparse<T> {
        Sparse::new()
    }
}

impl<T: StaticDefault> From<T> for Sparse<T> {
    /// Boxes `value`, unless it is the default (then nothing is allocated).
    fn from(value: T) -> Sparse<T> {
        if value == *T::EMPTY {
            Sparse(None)
        } else {
            Sparse(Some(Box::new(value)))
        }
    }
}

impl From<&str> for Sparse<String> {
    /// Copies `text` into a box, unless it is empty.
    fn from(text: &str) -> Sparse<String> {
        if text.is_empty() {
            Sparse(None)
        } else {
            Sparse(Some(Box::new(String::from(text))))
        }
    }
}

impl<T: PartialEq + 'static> FromIterator<T> for Sparse<Vec<T>> {
    /// Collects into a box, unless there is nothing to collect.
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Sparse<Vec<T>> {
        Sparse::from(items.into_iter().collect::<Vec<T>>())
    }
}

impl<T: StaticDefault> Deref for Sparse<T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.0.as_deref().unwrap_or(T::EMPTY)
    }
}

impl<T: StaticDefault> DerefMut for Sparse<T> {
    /// Allocates the box (holding the default) first if it is empty.
    fn deref_mut(&mut self) -> &mut T {
        self.0.get_or_insert_with(Box::default)
    }
}

impl<T: StaticDefault + Clone> Clone for Sparse<T> {
    fn clone(&self) -> Sparse<T> {
        Sparse(self.0.clone())
    }
}

impl<T: StaticDefault + fmt::Debug> fmt::Debug for Sparse<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: StaticDefault> PartialEq for Sparse<T> {
    fn eq(&self, other: &Sparse<T>) -> bool {
        **self == **other
    }
}

impl<T: StaticDefault + Eq> Eq for Sparse<T> {}

impl<T: StaticDefault + PartialOrd> PartialOrd for Sparse<T> {
    fn partial_cmp(&self, other: &Sparse<T>) -> Option<Ordering> {
        (**self).partial_cmp(&**other)
    }
}

impl<T: StaticDefault + Ord> Ord for Sparse<T> {
    fn cmp(&self, other: &Sparse<T>) -> Ordering {
        (**self).cmp(&**other)
    }
}

impl<T: StaticDefault + Hash> Hash for Sparse<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (**self).hash(state);
    }
}

impl<T: StaticDefault + Serialize> Serialize for Sparse<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de, T: StaticDefault + Deserialize<'de>> Deserialize<'de> for Sparse<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Sparse<T>, D::Error> {
        T::deserialize(deserializer).map(Sparse::from)
    }
}

#[cfg(test)]
mod tests {
    use alloc::{
        collections::BTreeSet,
        format,
        string::{String, ToString},
        vec,
        vec::Vec,
    };
    use core::hash::BuildHasher;

    use super::*;
    use crate::discovery::{Area, Metadata};

    fn hash_of<T: Hash + ?Sized>(value: &T) -> u64 {
        // One hasher state for the whole test run: equal values hash alike.
        static STATE: fnv::State = fnv::State;
        STATE.hash_one(value)
    }

    mod fnv {
        /// A deterministic `BuildHasher` (FNV-1a) for comparing hashes.
        pub(super) struct State;

        pub(super) struct Fnv(u64);

        impl core::hash::Hasher for Fnv {
            fn finish(&self) -> u64 {
                self.0
            }

            fn write(&mut self, bytes: &[u8]) {
                for &b in bytes {
                    self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
                }
            }
        }

        impl core::hash::BuildHasher for State {
            type Hasher = Fnv;

            fn build_hasher(&self) -> Fnv {
                Fnv(0xcbf2_9ce4_8422_2325)
            }
        }
    }

    fn labelled() -> Metadata {
        let mut metadata = Metadata {
            kind: "game".to_string(),
            ..Metadata::default()
        };
        metadata.labels.insert("zone".to_string(), "a".to_string());
        metadata
    }

    /// Every value `values` may hold as a `Sparse`: empty, boxed from `From` and boxed by a
    /// mutable access (which also boxes a default).
    fn forms<T: StaticDefault + Clone>(value: &T) -> Vec<Sparse<T>> {
        let mut mutated = Sparse::<T>::new();
        *mutated = value.clone();
        vec![Sparse::from(value.clone()), mutated]
    }

    #[test]
    fn it_is_one_pointer_and_its_empty_values_are_the_defaults() {
        assert_eq!(size_of::<Sparse<Metadata>>(), size_of::<usize>());
        assert_eq!(size_of::<Sparse<String>>(), size_of::<usize>());
        assert!(*String::EMPTY == String::default());
        assert!(*Vec::<u8>::EMPTY == Vec::<u8>::default());
        assert!(*Metadata::EMPTY == Metadata::default());
        assert!(*Area::EMPTY == Area::default());
        assert!(
            *crate::discovery::TopologyData::EMPTY == crate::discovery::TopologyData::default()
        );
    }

    #[test]
    fn from_a_default_allocates_nothing_and_from_a_value_boxes_it() {
        assert!(!Sparse::is_allocated(&Sparse::from(Metadata::default())));
        assert!(!Sparse::is_allocated(&Sparse::<Metadata>::default()));
        assert_eq!(Sparse::boxed_bytes(&Sparse::<Metadata>::default()), 0);
        let boxed = Sparse::from(labelled());
        assert!(Sparse::is_allocated(&boxed));
        assert_eq!(Sparse::boxed_bytes(&boxed), size_of::<Metadata>());
        assert_eq!(*boxed, labelled());
        assert_eq!(Sparse::into_inner(boxed), labelled());
        assert_eq!(
            Sparse::into_inner(Sparse::<Metadata>::new()),
            Metadata::default()
        );
    }

    #[test]
    fn a_mutable_access_allocates_and_compact_frees_a_default() {
        let mut sparse = Sparse::<Metadata>::new();
        assert_eq!(sparse.labels.len(), 0);
        assert!(!Sparse::is_allocated(&sparse));
        sparse.labels.insert("k".to_string(), "v".to_string());
        assert!(Sparse::is_allocated(&sparse));
        assert_eq!(sparse.labels.get("k").map(String::as_str), Some("v"));
        Sparse::compact(&mut sparse);
        assert!(Sparse::is_allocated(&sparse), "not the default: kept");
        sparse.labels.remove("k");
        assert!(Sparse::is_allocated(&sparse));
        Sparse::compact(&mut sparse);
        assert!(!Sparse::is_allocated(&sparse));
        let mut text = Sparse::from("x".to_string());
        assert_eq!(Sparse::take(&mut text), "x");
        assert!(!Sparse::is_allocated(&text));
        assert_eq!(Sparse::take(&mut text), "");
    }

    #[test]
    fn equality_order_hash_and_debug_are_the_values() {
        let values = [
            Metadata::default(),
            labelled(),
            Metadata {
                api_version: "v1".to_string(),
                ..Metadata::default()
            },
        ];
        for a in &values {
            let mut a_forms = forms(a);
            a_forms.push(Sparse::from(a.clone()).clone());
            if *a == Metadata::default() {
                a_forms.push(Sparse::new());
            }
            for sa in &a_forms {
                assert_eq!(format!("{sa:?}"), format!("{a:?}"));
                assert_eq!(format!("{sa:#?}"), format!("{a:#?}"));
                assert_eq!(hash_of(sa), hash_of(a));
                for b in &values {
                    for sb in forms(b) {
                        assert_eq!(*sa == sb, a == b);
                        assert_eq!(*sa != sb, a != b);
                        assert_eq!(sa.partial_cmp(&sb), a.partial_cmp(b));
                        assert_eq!(sa.cmp(&sb), a.cmp(b));
                    }
                }
            }
        }
        // An empty one and a boxed default are equal, hash alike, and are one set element.
        let mut boxed_default = Sparse::<Metadata>::new();
        let _ = &mut *boxed_default;
        assert!(Sparse::is_allocated(&boxed_default));
        assert_eq!(boxed_default, Sparse::new());
        assert_eq!(hash_of(&boxed_default), hash_of(&Sparse::<Metadata>::new()));
        let set: BTreeSet<Sparse<Metadata>> = [boxed_default, Sparse::new()].into_iter().collect();
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn serde_reads_and_writes_the_value_itself() {
        for value in [Metadata::default(), labelled()] {
            let sparse = Sparse::from(value.clone());
            let json = serde_json::to_string(&sparse).expect("encodes");
            assert_eq!(json, serde_json::to_string(&value).expect("encodes"));
            let back: Sparse<Metadata> = serde_json::from_str(&json).expect("decodes");
            assert_eq!(back, sparse);
            assert_eq!(Sparse::is_allocated(&back), value != Metadata::default());
        }
        let mut boxed_default = Sparse::<Area>::new();
        let _ = &mut *boxed_default;
        assert_eq!(
            serde_json::to_string(&boxed_default).expect("encodes"),
            "{}"
        );
        let text: Sparse<String> = serde_json::from_str(r#""abc""#).expect("decodes");
        assert_eq!(*text, "abc");
        assert_eq!(serde_json::to_string(&text).expect("encodes"), r#""abc""#);
        assert!(serde_json::from_str::<Sparse<String>>("5").is_err());
    }

    #[test]
    fn clone_keeps_the_value() {
        let sparse = Sparse::from(labelled());
        let copy = sparse.clone();
        assert_eq!(*copy, labelled());
        assert!(!Sparse::is_allocated(&Sparse::<Metadata>::new().clone()));
    }
}
