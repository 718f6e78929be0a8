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
use crate::snapshot::{ClusterSnapshot, PendingPod, Pod, Workload};

impl ClusterSnapshot {
    /// Whether the snapshot is normalized (the module documentation): what a copy of it
    /// normalized, with those duplicates dropped, would equal, but for `observed_at`.
    ///
    /// The answer for the nodes, bound pods and workloads is kept with the snapshot's cached
    /// index and carried over with it, and the pending pods' is read with the index (which
    /// orders them); the PodGroups and problems (short lists) are checked on every call.
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

    /// The pending pods, PodGroups and problems (duplicates allowed); the pending pods' part
    /// from the cached index when there is one (it orders them, so it is built from them).
    fn unindexed_lists_normalized(&self) -> bool {
        let pending = match self.cached_index() {
            Some(index) => index.pending_normalized,
            None => self.pending_normalized(),
        };
        pending
            && ordered(
                &self.pod_groups,
                |a, b| key_order((&a.namespace, &a.name), (&b.namespace, &b.name)),
                false,
            )
            && self.problems.is_sorted()
    }
}

impl ClusterSnapshot {
    /// Whether the pending pods are in key order (duplicates allowed).
    pub(crate) fn pending_normalized(&self) -> bool {
        ordered(
            &self.pending_pods,
            |a, b| key_order((&a.namespace, &a.name), (&b.namespace, &b.name)),
            false,
        )
    }
}

/// Lookups by key that give a scan's answer (the first match in list order) in any
/// snapshot, by binary search where the snapshot's cached index vouches for the order.
/// Why: the drain-plan review looks up each active plan's pod several times a pass; a scan
/// read every pod's name from its own allocation.
impl ClusterSnapshot {
    /// The first bound pod named by the `namespace/name` key that is on a node.
    pub fn bound_pod_by_key(&self, key: &str) -> Option<&Pod> {
        let (ns, name) = key.split_once('/')?;
        let on_node = |p: &&Pod| !p.node.is_empty();
        // Known normalized: the bound pods are in key order, without duplicates.
        if self
            .cached_index()
            .is_some_and(|i| i.normalized.0.get() == Some(&true))
        {
            return self.pod(ns, name).filter(on_node);
        }
        self.pods
            .iter()
            .find(|p| p.namespace == ns && p.name == name && on_node(p))
    }

    /// The first pending pod (in list order) named by the `namespace/name` key.
    pub fn pending_pod_by_key(&self, key: &str) -> Option<&PendingPod> {
        let (ns, name) = key.split_once('/')?;
        let order = match self.cached_index() {
            Some(index) if index.pending_order.len() == self.pending_pods.len() => {
                &index.pending_order
            }
            _ => {
                return self
                    .pending_pods
                    .iter()
                    .find(|p| p.namespace == ns && p.name == name);
            }
        };
        // The index orders the pending pods by key (ties otherwise): the pods of this key
        // are one run of that order, the first in list order the least position in it.
        let key_of = |i: &u32| {
            self.pending_pods
                .get(*i as usize)
                .map(|p| (p.namespace.as_str(), p.name.as_str()))
        };
        let start = order.partition_point(|i| key_of(i) < Some((ns, name)));
        let first = order[start..]
            .iter()
            .take_while(|i| key_of(i) == Some((ns, name)))
            .min()?;
        self.pending_pods.get(*first as usize)
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

    /// The lookups by key give a scan's answer (first match in list order) whether the
    /// snapshot is normalized or not, indexed or not, with duplicates and unbound pods.
    #[test]
    fn lookups_by_key_answer_as_a_scan() {
        let bound = |name: &str, node: &str, uid: &str| Pod {
            node: node.into(),
            uid: uid.into(),
            ..pod(name)
        };
        let pending = |ns: &str, name: &str, uid: &str, since: i64| PendingPod {
            namespace: ns.into(),
            name: name.into(),
            uid: uid.into(),
            pending_since: crate::Timestamp::from_unix_secs(since),
            ..PendingPod::default()
        };
        let mut normalized = ClusterSnapshot {
            pods: vec![
                bound("a", "n1", "1"),
                bound("b", "", "2"),
                bound("c", "n2", "3"),
            ],
            pending_pods: vec![
                pending("a-b", "x", "p1", 5),
                pending("ns", "q", "p2", 9),
                pending("ns", "q", "p3", 1),
                pending("ns", "r", "p4", 3),
            ],
            ..ClusterSnapshot::default()
        };
        normalized.normalize();
        // Out of order, with a duplicate bound pod (the unbound one first).
        let mut raw = normalized.clone();
        raw.pods.reverse();
        raw.pods.push(bound("b", "n3", "5"));
        raw.pending_pods.reverse();
        raw.invalidate_index();
        let keys = [
            "ns/a", "ns/b", "ns/c", "ns/zz", "a-b/x", "ns/q", "ns/r", "nokey",
        ];
        for s in [&normalized, &raw] {
            let scan_bound = |k: &str| {
                let (ns, name) = k.split_once('/')?;
                s.pods
                    .iter()
                    .find(|p| p.namespace == ns && p.name == name && !p.node.is_empty())
            };
            let scan_pending = |k: &str| {
                let (ns, name) = k.split_once('/')?;
                s.pending_pods
                    .iter()
                    .find(|p| p.namespace == ns && p.name == name)
            };
            for indexed in [false, true] {
                if indexed {
                    assert!(s.index().pods.len() == s.pods.len());
                    let _ = s.is_normalized();
                }
                for k in keys {
                    let uid = |p: Option<&Pod>| p.map(|p| p.uid.clone());
                    assert_eq!(uid(s.bound_pod_by_key(k)), uid(scan_bound(k)), "{k}");
                    let uid = |p: Option<&PendingPod>| p.map(|p| p.uid.clone());
                    assert_eq!(uid(s.pending_pod_by_key(k)), uid(scan_pending(k)), "{k}");
                }
            }
        }
        assert_eq!(
            raw.bound_pod_by_key("ns/b").map(|p| p.uid.as_str()),
            Some("5")
        );
        assert_eq!(normalized.bound_pod_by_key("ns/b"), None, "not on a node");
        // The first of the duplicates in list order, not the first pending.
        assert_eq!(
            normalized
                .pending_pod_by_key("ns/q")
                .map(|p| p.uid.as_str()),
            Some("p2")
        );
        assert_eq!(
            raw.pending_pod_by_key("ns/q").map(|p| p.uid.as_str()),
            Some("p3")
        );
    }
}
