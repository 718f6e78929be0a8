//! [`Shared`]: a value that many snapshot records hold at once, stored once.
//!
//! Most pods of a cluster share their scheduling block (the same requests, the same two
//! tolerations the API server adds to every pod, no affinity): at 25,000 pods a separate copy
//! per pod was the largest part of the snapshot (BENCH-LIVE.md). A `Shared` is an `Arc` that
//! behaves as the value everywhere it shows: it serializes, deserializes, prints and compares
//! exactly as the value, so no serialized form, equality or debug output changes; only the
//! memory does. Writing through it ([`std::ops::DerefMut`]) copies the value first when other
//! records share it, so a change never leaks into another record.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A value held behind an `Arc`, indistinguishable from the value itself in serialized form,
/// equality and `Debug` output.
#[derive(Default)]
pub struct Shared<T>(Arc<T>);

impl<T> Clone for Shared<T> {
    /// Another holder of the same value (no copy).
    fn clone(&self) -> Shared<T> {
        Shared(Arc::clone(&self.0))
    }
}

impl<T> Shared<T> {
    /// A new, not (yet) shared value.
    pub fn new(value: T) -> Shared<T> {
        Shared(Arc::new(value))
    }

    /// Whether both hold the very same allocation (then they are equal without comparing).
    pub fn ptr_eq(a: &Shared<T>, b: &Shared<T>) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl<T> From<T> for Shared<T> {
    fn from(value: T) -> Shared<T> {
        Shared::new(value)
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Clone> DerefMut for Shared<T> {
    /// Copy-on-write: the records sharing the value keep the old one.
    fn deref_mut(&mut self) -> &mut T {
        Arc::make_mut(&mut self.0)
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Shared<T>) -> bool {
        Shared::ptr_eq(self, other) || *self.0 == *other.0
    }
}

impl<T: Eq> Eq for Shared<T> {}

impl<T: fmt::Debug> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<T: Serialize> Serialize for Shared<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Shared<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Shared<T>, D::Error> {
        T::deserialize(d).map(Shared::new)
    }
}

/// Makes equal values share one allocation: each value offered is compared with the distinct
/// values seen so far (most recently matched first) and replaced by the stored one when equal.
///
/// The set is bounded ([`Interner::with_capacity`]): a cluster whose pods are all different
/// costs a bounded number of comparisons per value, and only loses the sharing. The result
/// never depends on the order or the bound: a value is replaced only by an equal one.
#[derive(Debug)]
pub struct Interner<T> {
    distinct: Vec<Shared<T>>,
    capacity: usize,
}

impl<T: PartialEq> Interner<T> {
    /// An interner remembering up to `capacity` distinct values.
    pub fn with_capacity(capacity: usize) -> Interner<T> {
        Interner {
            distinct: Vec::with_capacity(capacity.min(64)),
            capacity,
        }
    }

    /// `value`, or an equal value already seen, shared.
    pub fn intern(&mut self, value: T) -> Shared<T> {
        if let Some(i) = self.distinct.iter().position(|s| **s == value) {
            let found = self.distinct[i].clone();
            // Move to the front: the values of one workload tend to come together.
            self.distinct[..=i].rotate_right(1);
            return found;
        }
        let shared = Shared::new(value);
        if self.capacity > 0 {
            if self.distinct.len() == self.capacity {
                self.distinct.pop();
            }
            self.distinct.insert(0, shared.clone());
        }
        shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_compares_and_prints_as_the_value() {
        let s: Shared<Vec<u32>> = vec![1, 2].into();
        assert_eq!(serde_json::to_string(&s).unwrap(), "[1,2]");
        let back: Shared<Vec<u32>> = serde_json::from_str("[1,2]").unwrap();
        assert_eq!(back, s);
        assert_eq!(format!("{s:?}"), format!("{:?}", vec![1, 2]));
        assert_eq!(format!("{s:#?}"), format!("{:#?}", vec![1, 2]));
    }

    #[test]
    fn writing_copies_a_shared_value() {
        let a: Shared<Vec<u32>> = vec![1].into();
        let mut b = a.clone();
        assert!(Shared::ptr_eq(&a, &b));
        b.push(2);
        assert_eq!(*a, vec![1]);
        assert_eq!(*b, vec![1, 2]);
    }

    #[test]
    fn equal_values_share_one_allocation() {
        let mut i = Interner::with_capacity(2);
        let a = i.intern(vec![1]);
        let b = i.intern(vec![2]);
        let a2 = i.intern(vec![1]);
        assert!(Shared::ptr_eq(&a, &a2));
        assert!(!Shared::ptr_eq(&a, &b));
        // [1] is the most recent; [3] evicts [2], which is then stored anew.
        let _c = i.intern(vec![3]);
        let b2 = i.intern(vec![2]);
        assert_eq!(b, b2);
        assert!(!Shared::ptr_eq(&b, &b2));
        // Capacity 0 shares nothing but still returns the value.
        let mut none = Interner::with_capacity(0);
        assert_eq!(*none.intern(5u8), 5);
    }
}
