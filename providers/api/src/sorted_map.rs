//! [`SortedMap`]: the map every resource's attributes and dependencies are
//! held in.
//!
//! A resource has a handful of attributes (2 to 8) and of dependencies (0 to
//! 3), and a large state holds 50,000 resources, each in up to four copies
//! at once during a plan (state, observation, desired, the plan's before).
//! A `BTreeMap` allocates a whole node for its first entry (11 slots: ~0.6
//! KB of attributes, ~0.5 KB of dependencies), so most of a large plan's
//! memory was empty slots, and most of its time the kernel zeroing the
//! pages they took. A sorted vector (litemap's) holds what it holds, with
//! the same ordered iteration and lookup by key.
//!
//! It reads and writes JSON exactly as a `BTreeMap<String, V>` does (an
//! object, keys sorted; the last of repeated keys wins), so state, plan
//! and journal files are unchanged.

use litemap::LiteMap;

/// A key: text kept inline up to 24 bytes (every attribute name and
/// dependency role is), so a key costs no allocation of its own.
pub type Key = compact_str::CompactString;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

/// A map from text keys to `V`, sorted by key, stored as one vector. Reads
/// like a `BTreeMap` through [`Deref`] to [`LiteMap`] (`get`, `insert`,
/// `remove`, `iter`, `keys`, `values`, `entry`, `retain`…).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SortedMap<V>(LiteMap<Key, V>);

impl<V> SortedMap<V> {
    pub const fn new() -> SortedMap<V> {
        SortedMap(LiteMap::new_vec())
    }

    /// Inherent (not only through `Deref`) so that `skip_serializing_if =
    /// "Deps::is_empty"` can name it.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    // Lookups by `&str`, so that a `&String` key coerces (litemap's own
    // take `&Q` where the key borrows as `Q`, and a CompactString does not
    // borrow as a String).
    pub fn get(&self, key: &str) -> Option<&V> {
        self.0.get(key)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        self.0.get_mut(key)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    pub fn remove(&mut self, key: &str) -> Option<V> {
        self.0.remove(key)
    }

    /// The values, mutably, in key order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.0.iter_mut().map(|(_, v)| v)
    }
}

impl<V> Default for SortedMap<V> {
    fn default() -> Self {
        SortedMap::new()
    }
}

impl<V> Deref for SortedMap<V> {
    type Target = LiteMap<Key, V>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl<V> DerefMut for SortedMap<V> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

/// `map["key"]`, as on a `BTreeMap`: panics when the key is absent.
impl<V> std::ops::Index<&str> for SortedMap<V> {
    type Output = V;
    fn index(&self, key: &str) -> &V {
        match self.0.get(key) {
            Some(v) => v,
            None => panic!("no entry for key {key:?}"),
        }
    }
}

impl<V: fmt::Debug> fmt::Debug for SortedMap<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.iter()).finish()
    }
}

impl<K: Into<Key>, V> FromIterator<(K, V)> for SortedMap<V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        SortedMap(iter.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

impl<K: Into<Key>, V, const N: usize> From<[(K, V); N]> for SortedMap<V> {
    fn from(entries: [(K, V); N]) -> Self {
        entries.into_iter().collect()
    }
}

impl<K: Into<Key>, V> Extend<(K, V)> for SortedMap<V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        self.0.extend(iter.into_iter().map(|(k, v)| (k.into(), v)))
    }
}

impl<V> IntoIterator for SortedMap<V> {
    type Item = (Key, V);
    type IntoIter = std::vec::IntoIter<(Key, V)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_tuple_vec().into_iter()
    }
}

impl<'a, V> IntoIterator for &'a SortedMap<V> {
    type Item = (&'a Key, &'a V);
    type IntoIter = <&'a LiteMap<Key, V> as IntoIterator>::IntoIter;
    fn into_iter(self) -> Self::IntoIter {
        (&self.0).into_iter()
    }
}

impl<V: Serialize> Serialize for SortedMap<V> {
    // Always an object, as a BTreeMap's: litemap writes an empty map as `[]`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for SortedMap<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Entries<V> {
            type Value = SortedMap<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut access: M) -> Result<Self::Value, M::Error> {
                let mut map = LiteMap::with_capacity(access.size_hint().unwrap_or(0));
                while let Some((k, v)) = access.next_entry::<Key, V>()? {
                    // Files gpuform writes are sorted: appending is the rule.
                    if let Some((k, v)) = map.try_append(k, v) {
                        map.insert(k, v);
                    }
                }
                Ok(SortedMap(map))
            }
        }
        deserializer.deserialize_map(Entries(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn json_is_a_btreemaps() {
        let text = r#"{"zone":"a","cidr":"10.0.0.0/16","tags":{"b":1,"a":2},"zone":"b"}"#;
        let ours: SortedMap<serde_json::Value> = serde_json::from_str(text).unwrap();
        let theirs: BTreeMap<String, serde_json::Value> = serde_json::from_str(text).unwrap();
        assert_eq!(
            serde_json::to_string(&ours).unwrap(),
            serde_json::to_string(&theirs).unwrap()
        );
        assert_eq!(ours.get("zone"), Some(&serde_json::json!("b")));
        let empty: SortedMap<String> = SortedMap::new();
        assert_eq!(serde_json::to_string(&empty).unwrap(), "{}");
        let back: SortedMap<String> = serde_json::from_str("{}").unwrap();
        assert!(back.is_empty());
    }

    #[test]
    fn ordered_like_a_btreemap() {
        let mut m: SortedMap<u32> = [("b", 2), ("a", 1)].into();
        m.insert("c".into(), 3);
        m.extend([("a", 10)]);
        let keys: Vec<&str> = m.keys().map(Key::as_str).collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert_eq!(m.get("a"), Some(&10));
        for v in m.values_mut() {
            *v += 1;
        }
        let owned: Vec<(Key, u32)> = m.into_iter().collect();
        assert_eq!(owned[0], ("a".into(), 11));
    }
}
