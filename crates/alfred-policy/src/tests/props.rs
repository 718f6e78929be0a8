//! Properties of both policies over random clusters.

use alfred_model::snapshot::{ClusterSnapshot, HealthState, SpotOverride};
use proptest::prelude::*;

use crate::settings::{Aggressiveness, PolicySettings, Window};
use crate::testkit::ClusterBuilder;
use crate::{Proposal, propose_with};
use alfred_testkit::random::shuffled;

#[derive(Debug, Clone)]
struct NodeSpec {
    pool: u8,
    total: u32,
    cordoned: bool,
    scale_down: bool,
    health: u8,
    maintenance: bool,
    preemptible: bool,
}

#[derive(Debug, Clone)]
struct WorkloadSpec {
    mode: u8,
    ns: u8,
    instances: Vec<Vec<(usize, u32)>>,
    movable: bool,
    spot: u8,
    cooling: bool,
}

#[derive(Debug, Clone)]
pub(super) struct Case {
    nodes: Vec<NodeSpec>,
    workloads: Vec<WorkloadSpec>,
    occupants: Vec<(usize, u32)>,
    pending: Vec<(u8, u32, i64)>,
    executor: bool,
    avoid_spot: bool,
    aggressiveness: u8,
    window: bool,
}

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (
        0u8..2,
        prop::sample::select(vec![4u32, 8]),
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.1),
        prop::sample::select(vec![0u8, 0, 0, 0, 1, 2, 3]),
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(pool, total, cordoned, scale_down, health, maintenance, preemptible)| NodeSpec {
                pool,
                total,
                cordoned,
                scale_down,
                health,
                maintenance,
                preemptible,
            },
        )
}

fn workload_spec() -> impl Strategy<Value = WorkloadSpec> {
    (
        prop::sample::select(vec![0u8, 0, 0, 1, 2]),
        0u8..3,
        prop::collection::vec(prop::collection::vec((0usize..8, 0u32..5), 1..3), 1..3),
        prop::bool::weighted(0.9),
        0u8..4,
        prop::bool::weighted(0.15),
    )
        .prop_map(
            |(mode, ns, instances, movable, spot, cooling)| WorkloadSpec {
                mode,
                ns,
                instances,
                movable,
                spot,
                cooling,
            },
        )
}

pub(super) fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(node_spec(), 1..8),
        prop::collection::vec(workload_spec(), 0..6),
        prop::collection::vec((0usize..8, 1u32..8), 0..4),
        prop::collection::vec((0u8..3, 1u32..17, 0i64..60), 0..3),
        prop::bool::weighted(0.8),
        any::<bool>(),
        0u8..3,
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(
                nodes,
                workloads,
                occupants,
                pending,
                executor,
                avoid_spot,
                aggressiveness,
                window,
            )| {
                Case {
                    nodes,
                    workloads,
                    occupants,
                    pending,
                    executor,
                    avoid_spot,
                    aggressiveness,
                    window,
                }
            },
        )
}

pub(super) fn build(c: &Case) -> (ClusterSnapshot, PolicySettings) {
    let pools = ["H100", "A100"];
    let nn = c.nodes.len();
    let name = |i: usize| format!("n{}", i % nn);
    let mut b = ClusterBuilder::new().executor(c.executor);
    for (i, n) in c.nodes.iter().enumerate() {
        let nm = format!("n{i}");
        b = b.node(&nm, pools[usize::from(n.pool)], n.total);
        if n.maintenance {
            b = b.maintenance(&nm, "patch");
        }
        if n.preemptible {
            b = b.preemptible(&nm);
        }
        let (cordoned, scale_down, health) = (n.cordoned, n.scale_down, n.health);
        b = b.with_node(&nm, move |x| {
            x.cordoned = cordoned;
            x.scale_down_marked = scale_down;
            x.health.state = match health {
                1 => HealthState::Suspect,
                2 => HealthState::Unknown,
                3 => HealthState::Unhealthy,
                _ => HealthState::Clear,
            };
        });
    }
    for (i, w) in c.workloads.iter().enumerate() {
        let ns = format!("ns{}", w.ns);
        let wn = format!("w{i}");
        let named: Vec<Vec<(String, u32)>> = w
            .instances
            .iter()
            .map(|pods| pods.iter().map(|(n, g)| (name(*n), *g)).collect())
            .collect();
        let refs: Vec<Vec<(&str, u32)>> = named
            .iter()
            .map(|pods| pods.iter().map(|(n, g)| (n.as_str(), *g)).collect())
            .collect();
        let slices: Vec<&[(&str, u32)]> = refs.iter().map(|v| v.as_slice()).collect();
        b = match w.mode {
            1 => b.raw(&ns, &wn, &refs.concat()),
            2 => b.multinode(&ns, &wn, &refs.concat()),
            _ => b.omenative(&ns, &wn, &slices),
        };
        let (movable, spot, cooling) = (w.movable, w.spot, w.cooling);
        let now = b.now();
        b = b.workload(&format!("{ns}/{wn}"), move |x| {
            x.settings.movable = movable;
            x.settings.spot_policy = match spot {
                1 => SpotOverride::Avoid,
                2 => SpotOverride::Migrate,
                3 => SpotOverride::Ignore,
                _ => SpotOverride::Default,
            };
            if cooling {
                x.migration.last_migration = Some(now.plus_minutes(-5));
            }
        });
    }
    for (i, (n, g)) in c.occupants.iter().enumerate() {
        b = b.occupant("batch", &format!("job{i}"), &name(*n), *g);
    }
    for (i, (ns, g, m)) in c.pending.iter().enumerate() {
        b = b.pending(&format!("ns{ns}"), &format!("p{i}"), *g, *m);
    }
    let s = PolicySettings {
        avoid_spot_as_target: c.avoid_spot,
        aggressiveness: match c.aggressiveness {
            0 => Aggressiveness::Conservative,
            1 => Aggressiveness::Balanced,
            _ => Aggressiveness::Aggressive,
        },
        maintenance_windows: if c.window {
            vec![Window {
                days: vec![0],
                start_minute: 60,
                end_minute: 120,
            }]
        } else {
            Vec::new()
        },
        ..PolicySettings::default()
    };
    (b.build(), s)
}

fn check(snap: &ClusterSnapshot, s: &PolicySettings, p: &Proposal) -> Result<(), TestCaseError> {
    for c in &p.candidates {
        prop_assert!(c.hint_target_nodes.len() <= 3, "{c:?}");
        prop_assert!(
            c.placement_target_nodes.starts_with(&c.hint_target_nodes),
            "{c:?}"
        );
        let (ns, name) = c.workload.split_once('/').unwrap_or_default();
        let w = snap.workload(ns, name);
        prop_assert!(w.is_some());
        let w = w.unwrap_or_else(|| unreachable!());
        let avoid = s.avoid_spot_as_target || w.settings.spot_policy == SpotOverride::Avoid;
        let inst = w.component(c.component).and_then(|k| {
            k.instances
                .iter()
                .find(|i| i64::from(i.index) == c.instance)
        });
        for t in c.hint_target_nodes.iter().chain(&c.placement_target_nodes) {
            let n = snap.node(t);
            prop_assert!(n.is_some(), "unknown target {t}");
            let n = n.unwrap_or_else(|| unreachable!());
            prop_assert!(!n.cordoned && !n.scale_down_marked, "{t}: {c:?}");
            prop_assert!(n.health.state == HealthState::Clear, "{t}: {c:?}");
            prop_assert!(!n.maintenance.requested, "{t}: {c:?}");
            prop_assert!(!(avoid && n.preemptible), "{t}: {c:?}");
            prop_assert!(!n.unavailable());
            if let Some(i) = inst {
                prop_assert!(!i.nodes.contains_key(t), "target is a source: {c:?}");
            }
        }
        if c.instance >= 0 {
            let i = inst;
            prop_assert!(i.is_some(), "{c:?}");
            prop_assert!(
                i.is_some_and(|i| i.total_gpus > 0),
                "move for a GPU-less Instance"
            );
        }
        if c.executable {
            prop_assert!(c.advisory_reason.is_none() && c.instance >= 0 && c.surge_shaped);
            prop_assert!(!c.hint_target_nodes.is_empty());
            prop_assert!(c.score.is_finite());
        } else {
            prop_assert!(c.advisory_reason.is_some());
            prop_assert!(c.hint_target_nodes.is_empty());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn targets_are_always_safe_and_output_is_order_independent(c in case(), order in any::<u64>()) {
        let (snap, s) = build(&c);
        let now = snap.observed_at;
        let p = propose_with(&snap, &s, now);
        check(&snap, &s, &p)?;
        let q = propose_with(&shuffled(&snap, order), &s, now);
        prop_assert_eq!(&p, &q);
        // The defaults never target a preemptible node.
        let d = PolicySettings::default();
        let p = propose_with(&snap, &d, now);
        check(&snap, &d, &p)?;
        for c in &p.candidates {
            for t in &c.hint_target_nodes {
                prop_assert!(snap.node(t).is_some_and(|n| !n.preemptible));
            }
        }
    }

    #[test]
    fn odd_settings_never_panic(
        c in case(),
        ladder in prop::collection::vec(0u32..20, 0..5),
        lambda in prop::num::f64::ANY,
        threshold in prop::num::f64::ANY,
        tau in 0u32..3,
    ) {
        let (snap, mut s) = build(&c);
        s.size_ladder = ladder;
        s.demand_blend_lambda = lambda;
        s.fragmentation_threshold = threshold;
        s.pending_urgency_tau_minutes = tau;
        s.size_prior.insert(3, f64::NAN);
        let p = propose_with(&snap, &s, snap.observed_at);
        check(&snap, &s, &p)?;
    }
}
