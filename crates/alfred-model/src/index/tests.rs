//! The index against the string lookups it replaces: every table equals what a scan over the
//! snapshot answers, on normalized and raw snapshots, with duplicates and carried over.

use std::collections::BTreeMap;

use super::*;
use crate::snapshot::{
    Component, ComponentKind, DeploymentMode, Instance, InstanceStatus, Node, ReplicaState,
    Workload,
};

fn node(name: &str, pool: Option<&str>, gpus: u32) -> Node {
    Node {
        name: name.into(),
        pool: pool.map(str::to_owned),
        total_gpus: gpus,
        ..Node::default()
    }
}

/// `ClusterSnapshot::pools` is the same set before the index is built (gathered from the
/// nodes), once it is (copied from the index), and after the lists were replaced (the
/// stale index is not read): the pools of nodes with GPUs and a pool, an empty pool key
/// included.
#[test]
fn pools_are_the_same_with_and_without_an_index() {
    let mut s = ClusterSnapshot {
        nodes: vec![
            node("a", Some("H100"), 8),
            node("b", Some("A100"), 4),
            node("c", None, 8),
            node("d", Some("T4"), 0),
            node("e", Some(""), 2),
            node("f", Some("H100"), 8),
        ],
        ..ClusterSnapshot::default()
    };
    let want: Vec<String> = ["", "A100", "H100"].map(str::to_owned).to_vec();
    assert!(!s.index_cache.is_built());
    assert_eq!(s.pools(), want);
    let _ = s.index();
    assert!(s.cached_index().is_some());
    assert_eq!(s.pools(), want);
    s.nodes = vec![node("g", Some("T4"), 1)];
    assert!(s.cached_index().is_none());
    assert_eq!(s.pools(), vec!["T4".to_owned()]);
}

/// Lookups by key, from any hit to any other, on sorted and on unsorted pods.
#[test]
fn pod_finder_positions_sorted_and_unsorted() {
    let mut pods: Vec<Pod> = (0..200)
        .map(|i| pod(&format!("ns{}", i % 3), &format!("p{i:04}"), ""))
        .collect();
    pods.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    let keys: Vec<String> = pods.iter().map(Pod::key).collect();
    let mut f = PodFinder::new(&pods);
    for (i, k) in keys.iter().enumerate().rev() {
        assert_eq!(f.position(k), Some(i));
    }
    for (i, k) in keys.iter().enumerate().step_by(7) {
        assert_eq!(f.position(k), Some(i));
    }
    assert_eq!(f.position("ns9/x"), None);
    assert_eq!(f.position("nokey"), None);
    pods.reverse();
    let mut f = PodFinder::new(&pods);
    for k in &keys {
        let i = f.position(k).expect("found");
        assert_eq!(&pods[i].key(), k);
    }
    assert_eq!(f.position("ns0/zzz"), None);
}

fn pod(ns: &str, name: &str, node: &str) -> Pod {
    Pod {
        namespace: ns.into(),
        name: name.into(),
        node: node.into(),
        gpus: 1,
        ready: true,
        ..Pod::default()
    }
}

fn instance(pods: &[&str], nodes: &[&str], phase: &str, revision: &str) -> Instance {
    Instance {
        pods: pods.iter().map(|p| (*p).to_owned()).collect(),
        nodes: nodes
            .iter()
            .map(|n| ((*n).to_owned(), 1))
            .collect::<BTreeMap<_, _>>(),
        status: Some(InstanceStatus {
            phase: phase.into(),
            running_revision: revision.into(),
            ..InstanceStatus::default()
        }),
        // One GPU a pod: the index copies it.
        total_gpus: u32::try_from(pods.len()).unwrap_or(u32::MAX),
        ..Instance::default()
    }
}

fn snapshot() -> ClusterSnapshot {
    let mut pods: Vec<Pod> = (0..300)
        .map(|i| {
            pod(
                &format!("ns{}", i % 4),
                &format!("p{i:03}"),
                &format!("n{}", i % 7),
            )
        })
        .collect();
    pods.push(pod("a-b", "x", ""));
    pods.push(pod("a", "x", "ghost"));
    ClusterSnapshot {
        nodes: (0..7)
            .map(|i| node(&format!("n{i}"), (i != 3).then_some(["B", "A"][i % 2]), 8))
            .collect(),
        pods,
        workloads: vec![Workload {
            namespace: "ns0".into(),
            name: "w".into(),
            components: vec![Component {
                // Not the kind a component past the last reads as, and Instance
                // indices not their positions: the index copies both.
                kind: ComponentKind::Router,
                mode: DeploymentMode::OMENative,
                replica: Some(ReplicaState {
                    current_revision: "r1".into(),
                    update_revision: "r1".into(),
                    ..ReplicaState::default()
                }),
                observation_invalid: None,
                instances: vec![
                    Instance {
                        index: 2,
                        ..instance(&["ns0/p000", "ns0/p004"], &["n0", "n4"], "Ready", "r1")
                    },
                    Instance {
                        index: 5,
                        ..instance(
                            &["ns1/p001", "nope/x", "bad"],
                            &["n1", "zz"],
                            "Migrating",
                            "r0",
                        )
                    },
                    Instance {
                        index: 9,
                        ..instance(&["a-b/x", "a/x"], &[], "Ready", "r1")
                    },
                ],
                pods: Vec::new(),
                scheduler_name: String::new(),
                topology_key: String::new(),
            }],
            ..Workload::default()
        }],
        ..ClusterSnapshot::default()
    }
}

/// The index answers exactly what the string lookups answer.
fn check(s: &ClusterSnapshot) {
    let idx = s.index();
    assert_eq!(idx.pools, s.pools_of_nodes());
    assert_eq!(idx.workload_keys.len(), s.workloads.len());
    for (i, w) in s.workloads.iter().enumerate() {
        assert_eq!(idx.workload_keys.get(i), Some(w.key().as_str()));
    }
    assert_eq!(idx.workload_keys.get(s.workloads.len()), None);
    assert_eq!(idx.node_names.len(), s.nodes.len());
    for (i, n) in s.nodes.iter().enumerate() {
        assert_eq!(idx.node_names.get(i), Some(n.name.as_str()));
    }
    for (i, n) in s.nodes.iter().enumerate() {
        let want = n
            .has_gpus()
            .then(|| {
                s.pools_of_nodes()
                    .iter()
                    .position(|p| Some(p) == n.pool.as_ref())
            })
            .flatten()
            .map_or(NONE, |p| p as u32);
        assert_eq!(idx.node_pool[i], want, "{}", n.name);
    }
    let names: Vec<&str> = idx
        .nodes_by_name
        .iter()
        .map(|i| s.nodes[*i as usize].name.as_str())
        .collect();
    assert!(names.windows(2).all(|w| w[0] <= w[1]));
    let node_of = |name: &str| {
        s.nodes
            .iter()
            .position(|n| n.name == name && !name.is_empty())
            .map_or(NONE, |i| i as u32)
    };
    for (p, f) in s.pods.iter().zip(&idx.pods) {
        assert_eq!(f.node, node_of(&p.node), "{}", p.key());
        assert_eq!(f.gpus, p.gpus);
    }
    let mut k = 0;
    let mut kc = 0;
    for w in &s.workloads {
        for c in &w.components {
            assert_eq!(
                idx.component(kc),
                ComponentFacts {
                    flags: component_facts(c),
                    kind: c.kind,
                    instances: c.instances.len(),
                }
            );
            kc += 1;
            let current = c
                .replica
                .as_ref()
                .map_or("", |r| r.current_revision.as_str());
            for inst in &c.instances {
                let f = &idx.instances[k];
                k += 1;
                assert_eq!(
                    f.flags & !INSTANCE_PODS_CONSISTENT,
                    instance_facts(inst, current)
                );
                assert_eq!(f.total_gpus, inst.total_gpus);
                assert_eq!(f.index, inst.index);
                let pods: Vec<u32> = inst
                    .pods
                    .iter()
                    .map(|key| {
                        s.pods
                            .iter()
                            .position(|p| p.key() == *key)
                            .map_or(NONE, |i| i as u32)
                    })
                    .collect();
                assert_eq!(idx.pods_of(f), pods.as_slice());
                let nodes: Vec<u32> = inst.nodes.keys().map(|n| node_of(n)).collect();
                assert_eq!(idx.nodes_of(f), nodes.as_slice());
            }
        }
    }
    assert_eq!(k, idx.instances.len());
    let past = idx.component(kc);
    assert_eq!(
        (past.flags, past.instances),
        (0, 0),
        "past the last component"
    );
}

#[test]
fn index_matches_string_lookups_in_any_order() {
    let mut s = snapshot();
    check(&s);
    s.normalize();
    check(&s);
    let mut r = s.clone();
    r.pods.reverse();
    r.nodes.reverse();
    check(&r);
    let idx = s.index();
    let f = &idx.instances;
    let strings = INSTANCE_PHASE_READY | INSTANCE_REVISION_CURRENT;
    assert_eq!(f[0].flags & strings, strings);
    assert_eq!(f[1].flags & strings, 0);
    assert_eq!(
        idx.component_flags,
        vec![COMPONENT_REVISIONS_SETTLED | COMPONENT_NOT_HELD | COMPONENT_OMENATIVE]
    );
    assert_eq!(idx.component_instances, vec![3]);
    // `a-b/x` sorts before `a/x` as a key, after it as (namespace, name).
    let ab = idx.pods_of(&f[2]);
    assert_eq!(s.pods[ab[0] as usize].key(), "a-b/x");
    assert_eq!(s.pods[ab[1] as usize].key(), "a/x");
    assert_eq!(idx.pods[ab[0] as usize].node, NONE);
    assert_eq!(idx.pods[ab[1] as usize].node, NONE);
}

#[test]
fn pods_consistent_is_set_only_when_every_check_holds() {
    let mut s = snapshot();
    s.pods.push(pod("ns0", "unbound", ""));
    s.pods.push(Pod {
        gpus: 0,
        ..pod("ns0", "cpu", "n2")
    });
    // ns0's pods on n0: p000, p028; on n4: p004.
    let with = |pods: &[&str], nodes: &[(&str, u32)], gpus: u32| Instance {
        pods: pods.iter().map(|p| (*p).to_owned()).collect(),
        nodes: nodes.iter().map(|(n, c)| ((*n).to_owned(), *c)).collect(),
        total_gpus: gpus,
        ..Instance::default()
    };
    let cases = [
        (with(&["ns0/p000", "ns0/p028"], &[("n0", 2)], 2), true),
        (
            with(&["ns0/p004", "ns0/p000"], &[("n0", 1), ("n4", 1)], 2),
            true,
        ),
        (
            with(&["ns0/p000", "ns0/cpu"], &[("n0", 1), ("n2", 1)], 1),
            true,
        ),
        (with(&["ns1/p001"], &[("n1", 1)], 1), false),
        (
            with(&["ns0/p000", "ns0/p004"], &[("n0", 1), ("n4", 2)], 2),
            false,
        ),
        (with(&["ns0/p000", "ns0/p004"], &[("n0", 2)], 2), false),
        (with(&["ns0/p000"], &[("n0", 1)], 2), false),
        (with(&["ns0/p000", "ns0/nope"], &[("n0", 1)], 1), false),
        (with(&["ns0/unbound"], &[], 1), false),
        (with(&["ns0/cpu"], &[("n2", 1)], 0), false),
        (with(&[], &[], 0), false),
    ];
    s.workloads[0].components[0].instances = cases.iter().map(|(i, _)| i.clone()).collect();
    for s in [s.clone(), {
        let mut n = s;
        n.normalize();
        n
    }] {
        let idx = s.index();
        for (k, (_, want)) in cases.iter().enumerate() {
            let set = idx.instances[k].flags & INSTANCE_PODS_CONSISTENT != 0;
            assert_eq!(set, *want, "case {k}");
        }
    }
}

#[test]
fn cache_is_not_part_of_the_value() {
    let mut s = snapshot();
    s.normalize();
    assert!(!s.index_cache.is_built());
    drop(s.index());
    assert!(s.index_cache.is_built());
    let c = s.clone();
    assert!(!c.index_cache.is_built());
    assert_eq!(c, s);
    let text = serde_json::to_string(&s).expect("serializes");
    assert!(!text.contains("indexCache"));
    let back: ClusterSnapshot = serde_json::from_str(&text).expect("parses");
    assert_eq!(back, s);
    s.normalize();
    assert!(!s.index_cache.is_built());
}

#[test]
fn a_replaced_or_grown_list_is_not_served_from_the_cache() {
    let mut s = snapshot();
    s.normalize();
    drop(s.index());
    s.pods.push(pod("zz", "new", "n1"));
    let idx = s.index();
    assert!(matches!(idx, IndexRef::Fresh(_)));
    assert_eq!(idx.pods.len(), s.pods.len());
    drop(idx);
    s.invalidate_index();
    assert!(matches!(s.index(), IndexRef::Cached(_)));
}

/// One version of a cluster for the carry-over tests: per workload (named by `id`),
/// its Instances' pods as `(node, ready)`, and whether one of its Instances also names
/// a pod that does not exist.
type Version = Vec<(u32, Vec<Vec<(u32, bool)>>, bool)>;

/// The snapshot of a [`Version`] (lists sorted, as `normalize` leaves them): workload
/// `ns/w<id>` with pods `ns/w<id>-i<k>-p<m>`, nodes `n0`..`n7` plus an unknown one.
fn version_snapshot(v: &Version) -> ClusterSnapshot {
    let node_name = |n: u32| {
        if n < 8 {
            format!("n{n}")
        } else {
            "ghost".into()
        }
    };
    let mut pods = Vec::new();
    let mut workloads = Vec::new();
    for (id, instances, dangling) in v {
        let name = format!("w{id:04}");
        let mut insts = Vec::new();
        for (k, ps) in instances.iter().enumerate() {
            let mut keys = Vec::new();
            let mut nodes = BTreeMap::new();
            for (m, &(n, ready)) in ps.iter().enumerate() {
                let pname = format!("{name}-i{k}-p{m}");
                keys.push(format!("ns/{pname}"));
                nodes.insert(node_name(n), 1);
                pods.push(Pod {
                    ready,
                    ..pod("ns", &pname, &node_name(n))
                });
            }
            if *dangling && k == 0 {
                keys.push(format!("ns/{name}-missing"));
            }
            insts.push(Instance {
                index: k as u32,
                total_gpus: 2 * ps.len() as u32 + k as u32,
                pods: keys,
                nodes,
                status: Some(InstanceStatus {
                    phase: if ps.len() % 2 == 0 {
                        "Ready"
                    } else {
                        "Migrating"
                    }
                    .into(),
                    running_revision: "r1".into(),
                    ..InstanceStatus::default()
                }),
                ..Instance::default()
            });
        }
        workloads.push(Workload {
            namespace: "ns".into(),
            name,
            components: vec![Component {
                kind: [
                    ComponentKind::Decoder,
                    ComponentKind::Engine,
                    ComponentKind::Router,
                ][*id as usize % 3],
                mode: DeploymentMode::OMENative,
                replica: Some(ReplicaState {
                    current_revision: "r1".into(),
                    update_revision: if id % 3 == 0 { "r2" } else { "r1" }.into(),
                    ..ReplicaState::default()
                }),
                observation_invalid: None,
                instances: insts,
                pods: Vec::new(),
                scheduler_name: String::new(),
                topology_key: String::new(),
            }],
            ..Workload::default()
        });
    }
    pods.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    ClusterSnapshot {
        nodes: (0..8)
            .map(|i| node(&format!("n{i}"), (i != 5).then_some(["A", "B"][i % 2]), 8))
            .collect(),
        pods,
        workloads,
        ..ClusterSnapshot::default()
    }
}

fn instances_strategy() -> impl proptest::strategy::Strategy<Value = Vec<Vec<(u32, bool)>>> {
    use proptest::prelude::*;
    proptest::collection::vec(
        proptest::collection::vec((0u32..9, any::<bool>()), 0..3),
        0..3,
    )
}

proptest::proptest! {
    /// Carrying an index over to a later version (workloads dropped, rebuilt with other
    /// pods, added) gives exactly the index a full build gives.
    #[test]
    fn carry_over_equals_a_full_build(
        before in proptest::collection::vec(
            (instances_strategy(), proptest::prelude::any::<bool>(), 0u8..4),
            0..12,
        ),
        added in proptest::collection::vec(
            (0u32..40, instances_strategy(), proptest::prelude::any::<bool>()),
            0..5,
        ),
        disorder in 0u8..4,
    ) {
        // Workload ids 2, 4, 6, ... before; fate 0 keeps, 1 drops, 2 rebuilds, 3 keeps.
        let old: Version = before
            .iter()
            .enumerate()
            .map(|(i, (insts, dangling, _))| (2 * i as u32 + 2, insts.clone(), *dangling))
            .collect();
        let mut new: Version = Vec::new();
        for ((id, insts, dangling), (_, _, fate)) in old.iter().zip(&before) {
            match fate {
                1 => {}
                2 => new.push((*id, insts.iter().rev().cloned().collect(), !dangling)),
                _ => new.push((*id, insts.clone(), *dangling)),
            }
        }
        for (id, insts, dangling) in &added {
            // Odd ids: new workloads between the old ones.
            let id = 2 * id + 1;
            if new.iter().all(|(w, _, _)| *w != id) {
                new.push((id, insts.clone(), *dangling));
            }
        }
        new.sort_by_key(|(id, _, _)| *id);
        let kept: Vec<u32> = old
            .iter()
            .zip(&before)
            .filter(|(_, (_, _, fate))| *fate == 0 || *fate == 3)
            .map(|((id, _, _), _)| *id)
            .collect();
        let s0 = version_snapshot(&old);
        let mut s1 = version_snapshot(&new);
        // The normalization answer is carried too: out of order where the later version
        // has two bound pods (1) or two workloads (2) swapped, or a new workload's pod
        // keys unsorted (3).
        match disorder {
            1 if s1.pods.len() >= 2 => s1.pods.swap(0, 1),
            2 if s1.workloads.len() >= 2 => s1.workloads.swap(0, 1),
            3 => {
                let fresh = s1.workloads.iter_mut().find(|w| {
                    let id: u32 = w.name[1..].parse().unwrap_or(u32::MAX);
                    !kept.contains(&id)
                });
                if let Some(i) = fresh
                    .and_then(|w| w.components[0].instances.iter_mut().find(|i| i.pods.len() >= 2))
                {
                    i.pods.reverse();
                }
            }
            _ => {}
        }
        let prev = SnapshotIndex::build(&s0);
        proptest::prop_assert!(prev.normalized.0.set(s0.indexed_lists_normalized()).is_ok());
        let owner = |p: &Pod| p.name[1..5].parse::<u32>().unwrap_or(u32::MAX);
        let pods_from: Vec<u32> = s1
            .pods
            .iter()
            .map(|p| {
                if kept.contains(&owner(p)) {
                    s0.pods
                        .iter()
                        .position(|q| q.name == p.name)
                        .map_or(NONE, |i| i as u32)
                } else {
                    NONE
                }
            })
            .collect();
        let workloads_from: Vec<u32> = s1
            .workloads
            .iter()
            .map(|w| {
                let id: u32 = w.name[1..].parse().unwrap_or(u32::MAX);
                if kept.contains(&id) {
                    s0.workloads
                        .iter()
                        .position(|x| x.name == w.name)
                        .map_or(NONE, |i| i as u32)
                } else {
                    NONE
                }
            })
            .collect();
        let carried = SnapshotIndex::carry_over(&prev, &s1, &pods_from, &workloads_from);
        proptest::prop_assert_eq!(&carried, &SnapshotIndex::build(&s1));
        if s0.indexed_lists_normalized() {
            proptest::prop_assert_eq!(
                carried.normalized.0.get(),
                Some(&s1.indexed_lists_normalized())
            );
        } else {
            proptest::prop_assert_eq!(carried.normalized.0.get(), None);
        }
        s1.install_index(carried);
        proptest::prop_assert_eq!(s1.known_normalized(), Some(s1.is_normalized()));
        proptest::prop_assert!(matches!(s1.index(), IndexRef::Cached(_)));
        proptest::prop_assert!(s1.take_index().is_some());
        proptest::prop_assert!(!s1.index_cache.is_built());
    }
}

#[test]
fn a_taken_index_is_one_that_matches() {
    let mut s = snapshot();
    s.normalize();
    assert!(s.take_index().is_none());
    drop(s.index());
    s.pods.push(pod("zz", "new", "n1"));
    assert!(s.take_index().is_none(), "built for a shorter pod list");
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "edited in place")]
fn an_in_place_edit_without_invalidation_is_caught_in_debug_builds() {
    let mut s = snapshot();
    s.normalize();
    drop(s.index());
    s.pods[0].node = "n6".into();
    drop(s.index());
}
