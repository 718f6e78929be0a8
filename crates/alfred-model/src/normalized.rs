//! Whether a snapshot is normalized: every list in [`ClusterSnapshot::normalize`]'s order,
//! and the lists whose keys name one object (nodes, bound pods, workloads, a workload's
//! components and a component's Instances) free of duplicates.
//!
//! Why here and cached: the policies read a normalized snapshot as it is and copy any other
//! one to normalize it, so every pass asks. On a large cluster the answer is a few hundred
//! thousand string comparisons, each a pointer away, over every pod and workload: a sizeable
//! share of a pass that otherwise reads the flat index. A producer that edits its snapshot
//! between passes and carries the index over ([`SnapshotIndex::carry_over`]) carries the
//! answer with it, checking only what it changed.
//!
//! [`SnapshotIndex::carry_over`]: crate::index::SnapshotIndex::carry_over

use std::cmp::Ordering;
use std::sync::OnceLock;

use crate::index::NONE;
use crate::snapshot::{ClusterSnapshot, Pod, Workload};

impl ClusterSnapshot {
    /// Whether the snapshot is normalized (the module documentation): what a copy of it
    /// normalized, with those duplicates dropped, would equal, but for `observed_at`.
    ///
    /// The answer for the nodes, bound pods and workloads is kept with the snapshot's cached
    /// index and carried over with it; the pending pods, PodGroups and problems (short
    /// lists) are checked on every call.
    pub fn is_normalized(&self) -> bool {
        let indexed = match self.cached_index() {
            Some(index) => *index
                .normalized
                .0
                .get_or_init(|| self.indexed_lists_normalized()),
            None => self.indexed_lists_normalized(),
        };
        indexed && self.unindexed_lists_normalized()
    }

    /// [`ClusterSnapshot::is_normalized`]'s answer when the cached index already knows its
    /// part, else `None` (nothing is computed for the index's part).
    pub fn known_normalized(&self) -> Option<bool> {
        let indexed = *self.cached_index()?.normalized.0.get()?;
        Some(indexed && self.unindexed_lists_normalized())
    }

    /// [`ClusterSnapshot::is_normalized`] but for what the workloads hold, never cached:
    /// for a caller that shares the workloads' half of the check between threads
    /// ([`Workload::is_normalized`]).
    pub fn lists_normalized(&self) -> bool {
        self.top_lists_normalized() && self.unindexed_lists_normalized()
    }

    /// The part of the check the index carries: nodes, bound pods and workloads, and what
    /// each workload holds.
    pub(crate) fn indexed_lists_normalized(&self) -> bool {
        self.top_lists_normalized() && self.workloads.iter().all(Workload::is_normalized)
    }

    /// The node, bound pod and workload lists themselves.
    fn top_lists_normalized(&self) -> bool {
        ordered(&self.nodes, |a, b| a.name.cmp(&b.name), true)
            && ordered(&self.pods, |a, b| key_order(pod_key(a), pod_key(b)), true)
            && ordered(
                &self.workloads,
                |a, b| key_order(workload_key(a), workload_key(b)),
                true,
            )
    }

    /// The pending pods, PodGroups and problems (duplicates allowed).
    fn unindexed_lists_normalized(&self) -> bool {
        ordered(
            &self.pending_pods,
            |a, b| key_order((&a.namespace, &a.name), (&b.namespace, &b.name)),
            false,
        ) && ordered(
            &self.pod_groups,
            |a, b| key_order((&a.namespace, &a.name), (&b.namespace, &b.name)),
            false,
        ) && self.problems.is_sorted()
    }
}

impl Workload {
    /// Whether what the workload holds is normalized: components by kind and Instances by
    /// index (each without duplicates), pod keys sorted, migration requests, records and
    /// active migrations in [`ClusterSnapshot::normalize`]'s order.
    pub fn is_normalized(&self) -> bool {
        ordered(&self.components, |a, b| a.kind.cmp(&b.kind), true)
            && self.components.iter().all(|c| {
                ordered(&c.instances, |a, b| a.index.cmp(&b.index), true)
                    && c.pods.is_sorted()
                    && c.instances.iter().all(|i| i.pods.is_sorted())
            })
            && ordered(&self.migration.requests, |a, b| a.uuid.cmp(&b.uuid), false)
            && self.migration.malformed_requests.is_sorted()
            && ordered(
                &self.migration.records,
                |a, b| key_order((&a.uuid, &a.component), (&b.uuid, &b.component)),
                false,
            )
            && ordered(&self.migration.active, |a, b| a.uuid.cmp(&b.uuid), false)
    }
}

fn pod_key(p: &Pod) -> (&String, &String) {
    (&p.namespace, &p.name)
}

fn workload_key(w: &Workload) -> (&String, &String) {
    (&w.namespace, &w.name)
}

/// Every neighbour pair in order (`Less`; or `Equal` too when not `strict`).
fn ordered<T>(v: &[T], cmp: impl Fn(&T, &T) -> Ordering, strict: bool) -> bool {
    v.windows(2).all(|w| match cmp(&w[0], &w[1]) {
        Ordering::Less => true,
        Ordering::Equal => !strict,
        Ordering::Greater => false,
    })
}

fn key_order(a: (&String, &String), b: (&String, &String)) -> Ordering {
    a.cmp(&b)
}

/// The index's cached answer for the lists it covers
/// ([`ClusterSnapshot::is_normalized`]): a cache, so every two compare equal.
#[derive(Debug, Default, Clone)]
pub(crate) struct NormalizedCache(pub(crate) OnceLock<bool>);

impl PartialEq for NormalizedCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for NormalizedCache {}

impl NormalizedCache {
    /// The answer for `s`, a later version of the snapshot whose answer is `prev`, with
    /// `pods_from` and `workloads_from` as [`SnapshotIndex::carry_over`] takes them (and
    /// what its caller vouches for: nodes unchanged, carried pods and workloads unchanged):
    /// a neighbour pair of carried entries in their earlier order was in order before, so
    /// only the pairs with a new entry are compared, and only new workloads are read.
    /// Unknown when `prev` was not known to be normalized.
    ///
    /// [`SnapshotIndex::carry_over`]: crate::index::SnapshotIndex::carry_over
    pub(crate) fn carried(
        prev: &NormalizedCache,
        s: &ClusterSnapshot,
        pods_from: &[u32],
        workloads_from: &[u32],
    ) -> NormalizedCache {
        if prev.0.get() != Some(&true) {
            return NormalizedCache::default();
        }
        let answer = ordered_carrying(&s.pods, pods_from, |a, b| key_order(pod_key(a), pod_key(b)))
            && ordered_carrying(&s.workloads, workloads_from, |a, b| {
                key_order(workload_key(a), workload_key(b))
            })
            && s.workloads
                .iter()
                .enumerate()
                .all(|(i, w)| carried_from(workloads_from, i).is_some() || w.is_normalized());
        NormalizedCache(OnceLock::from(answer))
    }
}

/// The earlier position of entry `i`, when it was carried.
fn carried_from(from: &[u32], i: usize) -> Option<u32> {
    from.get(i).copied().filter(|&f| f != NONE)
}

/// [`ordered`] (strict) of a list whose carried entries were strictly ordered before.
fn ordered_carrying<T>(v: &[T], from: &[u32], cmp: impl Fn(&T, &T) -> Ordering) -> bool {
    (1..v.len()).all(
        |i| match (carried_from(from, i - 1), carried_from(from, i)) {
            (Some(a), Some(b)) if a < b => true,
            _ => cmp(&v[i - 1], &v[i]) == Ordering::Less,
        },
    )
}

#[cfg(test)]
mod tests {
    use crate::snapshot::{
        ClusterSnapshot, Component, ComponentKind, DeploymentMode, Instance, Node, ObjectProblem,
        PendingPod, Pod, Workload,
    };

    fn problems(names: &[&str]) -> Vec<ObjectProblem> {
        names
            .iter()
            .map(|n| ObjectProblem {
                kind: "Pod".into(),
                name: (*n).into(),
                ..ObjectProblem::default()
            })
            .collect()
    }

    fn pod(name: &str) -> Pod {
        Pod {
            namespace: "ns".into(),
            name: name.into(),
            ..Pod::default()
        }
    }

    fn workload(name: &str, instance_pods: &[&str]) -> Workload {
        Workload {
            namespace: "ns".into(),
            name: name.into(),
            components: vec![Component {
                kind: ComponentKind::Engine,
                mode: DeploymentMode::OMENative,
                replica: None,
                observation_invalid: None,
                instances: vec![Instance {
                    pods: instance_pods.iter().map(|p| format!("ns/{p}")).collect(),
                    ..Instance::default()
                }],
                pods: Vec::new(),
                scheduler_name: String::new(),
                topology_key: String::new(),
            }],
            ..Workload::default()
        }
    }

    fn normalized() -> ClusterSnapshot {
        ClusterSnapshot {
            nodes: vec![
                Node {
                    name: "n1".into(),
                    ..Node::default()
                },
                Node {
                    name: "n2".into(),
                    ..Node::default()
                },
            ],
            pods: vec![pod("a-0"), pod("b-0"), pod("b-1")],
            pending_pods: vec![PendingPod {
                namespace: "ns".into(),
                name: "c-0".into(),
                ..PendingPod::default()
            }],
            workloads: vec![workload("a", &["a-0"]), workload("b", &["b-0", "b-1"])],
            ..ClusterSnapshot::default()
        }
    }

    /// An edit of the normalized snapshot, named.
    type Edit = (&'static str, fn(&mut ClusterSnapshot));

    /// One edit per list the answer covers, each making the snapshot not normalized.
    fn edits() -> Vec<Edit> {
        vec![
            ("nodes out of order", |s| s.nodes.swap(0, 1)),
            ("a duplicate node", |s| s.nodes[1].name = "n1".into()),
            ("pods out of order", |s| s.pods.swap(1, 2)),
            ("a duplicate workload", |s| {
                let a = s.workloads[0].clone();
                s.workloads.insert(0, a);
            }),
            ("an Instance's pod keys unsorted", |s| {
                s.workloads[1].components[0].instances[0].pods.reverse();
            }),
            ("pending pods out of order", |s| {
                let mut p = s.pending_pods[0].clone();
                p.name = "a-9".into();
                s.pending_pods.push(p);
            }),
            ("problems unsorted", |s| {
                s.problems = problems(&["z", "a"]);
            }),
        ]
    }

    /// The answer is the same before an index is built, once the index keeps it, and for
    /// an edited snapshot whose index (stamped with the old lists) is not read.
    #[test]
    fn the_answer_is_the_same_with_and_without_an_index() {
        let s = normalized();
        assert!(s.is_normalized());
        assert_eq!(s.known_normalized(), None, "no index yet");
        drop(s.index());
        assert_eq!(
            s.known_normalized(),
            None,
            "the index has not been asked yet"
        );
        assert!(s.is_normalized());
        assert_eq!(s.known_normalized(), Some(true), "kept with the index");
        for (what, edit) in edits() {
            let mut fresh = normalized();
            edit(&mut fresh);
            assert!(!fresh.is_normalized(), "{what}, no index");
            drop(fresh.index());
            assert!(!fresh.is_normalized(), "{what}, asked of the index");
            assert!(!fresh.is_normalized(), "{what}, kept with the index");
            assert!(
                !fresh.lists_normalized() || what.contains("Instance"),
                "{what}"
            );
        }
    }

    /// The lists the index does not cover are read on every call: an edit to them after
    /// the index kept its answer changes the answer.
    #[test]
    fn the_short_lists_are_read_on_every_call() {
        let mut s = normalized();
        drop(s.index());
        assert!(s.is_normalized());
        s.problems = problems(&["z", "a"]);
        s.pod_groups.clear();
        assert!(
            s.cached_index().is_some(),
            "problems are not part of the stamp"
        );
        assert!(!s.is_normalized());
        assert_eq!(s.known_normalized(), Some(false));
    }
}
