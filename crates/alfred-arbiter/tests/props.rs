//! Property tests over random clusters, ledgers and candidate streams: caps never
//! exceeded, no move to an excluded node, at most one admission per workload and per
//! target node, capacity respected, determinism.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use alfred_arbiter::*;
use alfred_model::ClusterSnapshot;
use alfred_model::reason::RowReason;
use alfred_model::record::Candidate;
use alfred_model::snapshot::{ComponentKind, HealthState, SpotOverride};
use common::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct NodeSpec {
    free: u32,
    cordoned: bool,
    preemptible: bool,
    unhealthy: bool,
    maintenance: bool,
    not_ready: bool,
}

#[derive(Debug, Clone)]
struct WorkloadSpec {
    pods: Vec<(usize, u32, i64)>, // node index, gpus, started minutes ago
    movable: bool,
    active: bool,
    last_migration: Option<i64>,
    cooldown: Option<u32>,
    avoid_spot: bool,
    started_rows: Vec<i64>,
    requests: Vec<Option<i64>>,
}

#[derive(Debug, Clone)]
struct CandSpec {
    workload: usize,
    instance: i64,
    reason: u8,
    from: usize,
    targets: Vec<usize>,
    pod_gpus: Vec<u32>,
    executable: bool,
    surge: bool,
    score: u8,
}

#[derive(Debug, Clone)]
struct RecordSpec {
    workload: usize,
    from: usize,
    claims: Vec<(usize, u32)>,
    created: i64,
    absorbed: Option<i64>,
}

#[derive(Debug, Clone)]
struct World {
    nodes: Vec<NodeSpec>,
    workloads: Vec<WorkloadSpec>,
    cands: Vec<CandSpec>,
    records: Vec<RecordSpec>,
    settings: ArbiterSettings,
    breaker_open: bool,
}

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (0u32..=8, 0u8..30, 0u8..30, 0u8..30, 0u8..30, 0u8..30).prop_map(|(free, a, b, c, d, e)| {
        NodeSpec {
            free,
            cordoned: a < 2,
            preemptible: b < 3,
            unhealthy: c < 2,
            maintenance: d < 2,
            not_ready: e < 2,
        }
    })
}

fn workload_spec() -> impl Strategy<Value = WorkloadSpec> {
    (
        prop::collection::vec((0usize..8, 0u32..=4, 0i64..200), 1..=3),
        0u8..10,
        0u8..10,
        prop::option::weighted(0.3, 0i64..90),
        prop::option::weighted(0.3, 0u32..40),
        any::<bool>(),
        prop::collection::vec(-5i64..180, 0..3),
        prop::collection::vec(prop::option::weighted(0.8, -5i64..180), 0..2),
    )
        .prop_map(
            |(pods, mv, act, last_migration, cooldown, avoid_spot, started_rows, requests)| {
                WorkloadSpec {
                    pods,
                    movable: mv > 0,
                    active: act == 0,
                    last_migration,
                    cooldown,
                    avoid_spot,
                    started_rows,
                    requests,
                }
            },
        )
}

fn cand_spec() -> impl Strategy<Value = CandSpec> {
    (
        0usize..7,
        prop::sample::select(vec![0i64, 0, 0, 0, 0, 0, 0, 1, -1]),
        0u8..3,
        0usize..8,
        prop::collection::vec(0usize..9, 0..5),
        prop::collection::vec(0u32..=5, 0..3),
        0u8..10,
        0u8..10,
        0u8..6,
    )
        .prop_map(
            |(workload, instance, reason, from, targets, pod_gpus, ex, su, score)| CandSpec {
                workload,
                instance,
                reason,
                from,
                targets,
                pod_gpus,
                executable: ex > 0,
                surge: su > 0,
                score,
            },
        )
}

fn record_spec() -> impl Strategy<Value = RecordSpec> {
    (
        0usize..7,
        0usize..8,
        prop::collection::vec((0usize..8, 0u32..=4), 0..3),
        0i64..120,
        prop::option::of(0i64..60),
    )
        .prop_map(|(workload, from, claims, created, absorbed)| RecordSpec {
            workload,
            from,
            claims,
            created,
            absorbed,
        })
}

fn world() -> impl Strategy<Value = World> {
    (
        prop::collection::vec(node_spec(), 1..=8),
        prop::collection::vec(workload_spec(), 1..=6),
        prop::collection::vec(cand_spec(), 0..=14),
        prop::collection::vec(record_spec(), 0..=3),
        (
            0u32..=5,
            0u32..=14,
            0u32..=40,
            0u32..=15,
            0u32..=15,
            0u32..=8,
            any::<bool>(),
            any::<bool>(),
        ),
        0u8..20,
    )
        .prop_map(|(nodes, workloads, cands, records, s, br)| World {
            nodes,
            workloads,
            cands,
            records,
            settings: ArbiterSettings {
                max_in_flight_migrations: s.0,
                max_migrations_per_hour: s.1,
                per_workload_cooldown_minutes: s.2,
                recent_placement_cooldown_minutes: s.3,
                per_node_cooldown_minutes: s.4,
                health_cooldown_floor_minutes: s.5,
                avoid_preemptible_targets: s.6,
                decision_loop_interval: std::time::Duration::from_secs(300),
                overlap_plan_steps: s.7,
            },
            breaker_open: br == 0,
        })
}

fn node_name(nodes: usize, i: usize) -> String {
    if i < nodes {
        format!("n{i}")
    } else {
        "ghost".into()
    }
}

fn wl_name(i: usize) -> String {
    format!("ns/w{i}")
}

fn build(w: &World) -> (ClusterSnapshot, Vec<Candidate>, Ledger, Breaker) {
    let nn = w.nodes.len();
    let mut k = cluster();
    for (i, n) in w.nodes.iter().enumerate() {
        k = k.free_node(&node_name(nn, i), n.free);
        let node = k.node_mut(&node_name(nn, i));
        node.cordoned = n.cordoned;
        node.preemptible = n.preemptible;
        node.maintenance.requested = n.maintenance;
        node.ready = !n.not_ready;
        if n.unhealthy {
            node.health.state = HealthState::Unhealthy;
        }
    }
    for (i, ws) in w.workloads.iter().enumerate() {
        let pods: Vec<(String, u32)> = ws
            .pods
            .iter()
            .map(|(n, g, _)| (node_name(nn, n % nn), *g))
            .collect();
        let refs: Vec<(&str, u32)> = pods.iter().map(|(n, g)| (n.as_str(), *g)).collect();
        let key = wl_name(i);
        k = k.serving(&key, &refs);
        for (j, (_, _, started)) in ws.pods.iter().enumerate() {
            let name = key.replace("ns/", "");
            k.pod_mut(&format!("ns/{name}-engine-0-{j}")).started_at = Some(at(-started));
        }
        let wl = k.workload_mut(&key);
        wl.settings.movable = ws.movable;
        wl.settings.cooldown_minutes = ws.cooldown;
        if ws.avoid_spot {
            wl.settings.spot_policy = SpotOverride::Avoid;
        }
        if ws.active {
            wl.migration.active.push(active(&format!("act-{i}")));
        }
        wl.migration.last_migration = ws.last_migration.map(|m| at(-m));
        for (j, s) in ws.started_rows.iter().enumerate() {
            wl.migration
                .records
                .push(row(&format!("row-{i}-{j}"), "Completed", Some(at(-s))));
        }
        for (j, r) in ws.requests.iter().enumerate() {
            wl.migration
                .requests
                .push(request(&format!("req-{i}-{j}"), r.map(|m| at(-m))));
        }
    }
    let snap = k.build();
    let cands = w
        .cands
        .iter()
        .map(|c| {
            let reason = [
                RowReason::Fragmentation,
                RowReason::NodeMaintenance,
                RowReason::NodeUnhealthy,
            ][usize::from(c.reason % 3)];
            let targets: Vec<String> = c.targets.iter().map(|t| node_name(nn, *t)).collect();
            let trefs: Vec<&str> = targets.iter().map(String::as_str).collect();
            // Index 6 is a workload that does not exist; the others wrap onto real ones.
            let workload = if c.workload == 6 {
                99
            } else {
                c.workload % w.workloads.len()
            };
            let mut cd = cand(
                &wl_name(workload),
                reason,
                &node_name(nn, c.from % (nn + 1)),
                &trefs,
                &c.pod_gpus,
            );
            cd.instance = c.instance;
            cd.executable = c.executable;
            cd.surge_shaped = c.surge;
            cd.score = [0.1, 0.5, 0.5, 0.9, f64::NAN, -1.0][usize::from(c.score % 6)];
            cd
        })
        .collect();
    let mut ledger = Ledger::new();
    for (i, r) in w.records.iter().enumerate() {
        ledger.record(DispatchRecord {
            uuid: format!("led-{i}"),
            workload: wl_name(r.workload),
            workload_uid: format!("uid-w{}", r.workload),
            component: ComponentKind::Engine,
            instance: 0,
            reason: RowReason::Fragmentation,
            from_node: node_name(nn, r.from % nn),
            targets: vec![],
            claims: r
                .claims
                .iter()
                .map(|(n, g)| NodeClaim {
                    node: node_name(nn, n % nn),
                    gpus: *g,
                })
                .collect(),
            created_at: at(-r.created),
            absorbed_at: r.absorbed.map(|m| at(-m)),
        });
    }
    let mut breaker = Breaker::new();
    if w.breaker_open {
        for _ in 0..4 {
            breaker.record_outcome(false, at(-1));
        }
    }
    (snap, cands, ledger, breaker)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, .. ProptestConfig::default() })]

    #[test]
    fn arbitration_respects_every_bound(w in world()) {
        let (snap, cands, ledger, breaker) = build(&w);
        let s = &w.settings;
        let a = arbitrate(&cands, &snap, s, &ledger, &breaker, NOW);

        // Shape: a verdict exactly for the executable candidates; order is a permutation.
        prop_assert_eq!(a.verdicts.len(), cands.len());
        for (i, c) in cands.iter().enumerate() {
            prop_assert_eq!(a.verdicts[i].is_some(), c.executable);
        }
        let mut sorted = a.order.clone();
        sorted.sort_unstable();
        let exec: Vec<usize> = (0..cands.len()).filter(|&i| cands[i].executable).collect();
        prop_assert_eq!(sorted, exec);
        // Ordering is by class, then score (NaN last), then footprint.
        for pair in a.order.windows(2) {
            let (x, y) = (&cands[pair[0]], &cands[pair[1]]);
            prop_assert!(x.class() >= y.class());
        }

        let admitted = a.admitted();
        // Caps, counted over everyone's migrations.
        let in_flight = migrations_in_flight(&snap, &ledger.live_identities(&snap));
        let hourly = migrations_started_within(&snap, &ledger.created_at(), NOW, HOURLY_WINDOW);
        prop_assert!(admitted.len() <= (s.max_in_flight_migrations as usize).saturating_sub(in_flight));
        prop_assert!(admitted.len() <= (s.max_migrations_per_hour as usize).saturating_sub(hourly));
        if breaker.is_open(NOW) {
            prop_assert!(admitted.is_empty());
        }

        let evacuating = evacuating_nodes(&cands);
        let mut workloads = BTreeSet::new();
        let mut landed: BTreeSet<String> = BTreeSet::new();
        let mut used: BTreeMap<String, u32> = ledger.claims(&snap);
        for (i, v) in a.verdicts.iter().enumerate() {
            let Some(v) = v else { continue };
            if !v.admitted {
                prop_assert!(v.reject_reason.is_some());
                prop_assert!(v.placement.is_empty() && v.target.is_empty() && !v.cooldown_overridden);
                continue;
            }
            prop_assert!(v.reject_reason.is_none());
            let c = &cands[i];
            // One admission per workload.
            prop_assert!(workloads.insert(c.workload.clone()), "two moves for {}", c.workload);
            let wl = snap.workloads.iter().find(|x| x.key() == c.workload).expect("admitted workload exists");
            prop_assert!(wl.settings.movable && wl.migration.active.is_empty());
            if let Some(first) = v.placement.first() {
                prop_assert_eq!(&v.target, &first.0);
            }
            // Surge moves claim every GPU pod.
            if c.surge_shaped {
                let mut want: u32 = c.pod_gpus.iter().sum();
                if want == 0 { want = c.footprint_gpus; }
                prop_assert_eq!(v.placement.iter().map(|(_, g)| *g).sum::<u32>(), want);
            }
            let avoid = s.avoid_preemptible_targets || wl.settings.spot_policy == SpotOverride::Avoid;
            for (node, gpus) in &v.placement {
                let n = snap.nodes.iter().find(|n| &n.name == node).expect("placement on a known node");
                prop_assert!(!n.unavailable() && n.ready, "excluded node {}", node);
                prop_assert!(!(n.preemptible && avoid), "avoided preemptible node {}", node);
                prop_assert!(!evacuating.contains(node), "evacuating node {}", node);
                prop_assert!(node != &c.from_node);
                prop_assert!(!ledger.node_cooling(node, NOW, s.per_node_cooldown()));
                // One landing per node per pass.
                prop_assert!(landed.insert(node.clone()), "two landings on {}", node);
                let e = used.entry(node.clone()).or_insert(0);
                *e += gpus;
                // What the arbiter adds never takes a node past its free GPUs. (A landing of
                // no GPUs adds nothing: the ledger's own claims may already exceed a node's
                // free GPUs once the snapshot counts the GPUs they reserved.)
                prop_assert!(*gpus == 0 || *e <= n.free_gpus, "over-claimed {}", node);
            }
            // Cooldowns.
            let health = c.reason == RowReason::NodeUnhealthy;
            if let Some(last) = wl.migration.last_migration {
                let age = NOW.since(last);
                if health {
                    prop_assert!(age >= s.health_cooldown_floor());
                } else {
                    let window = std::time::Duration::from_secs(60 * u64::from(wl.settings.cooldown_minutes.unwrap_or(s.per_workload_cooldown_minutes)));
                    prop_assert!(age >= window);
                    prop_assert!(!v.cooldown_overridden);
                }
            }
            // The source's cooldown (docs/design.md#drain-plans-and-the-budget: a plan step honours
            // only landings on a new plan's
            // node, nothing on a started plan's own node).
            match c.plan.as_ref().filter(|p| p.node == c.from_node) {
                _ if health => {}
                None => prop_assert!(!ledger.node_cooling(&c.from_node, NOW, s.per_node_cooldown())),
                Some(p) if p.starts_plan => {
                    prop_assert!(!ledger.node_received(&c.from_node, NOW, s.per_node_cooldown()));
                }
                Some(_) => {}
            }
        }

        // Determinism.
        let again = arbitrate(&cands.clone(), &snap.clone(), s, &ledger.clone(), &breaker.clone(), NOW);
        prop_assert_eq!(&a, &again);

        // arbitrate_one agrees with a pass of one.
        for (i, c) in cands.iter().enumerate().filter(|(_, c)| c.executable).take(2) {
            let single = arbitrate(std::slice::from_ref(c), &snap, s, &ledger, &breaker, NOW);
            let one = arbitrate_one(c, &evacuating_nodes(std::slice::from_ref(c)), &snap, s, &ledger, &breaker, NOW);
            prop_assert_eq!(single.verdicts[0].as_ref(), Some(&one), "candidate {}", i);
        }
    }

    #[test]
    fn the_ledger_round_trips_through_json(w in world()) {
        let (_, _, ledger, _) = build(&w);
        let text = serde_json::to_string(&ledger).unwrap();
        let back: Ledger = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(back, ledger);
    }

    #[test]
    fn the_breaker_never_opens_below_four_outcomes_and_always_above_half(outcomes in prop::collection::vec(any::<bool>(), 0..30)) {
        let mut b = Breaker::new();
        let mut window: Vec<bool> = Vec::new();
        for (i, ok) in outcomes.iter().enumerate() {
            let now = at(i as i64);
            let was_open_until = b.open_until();
            b.record_outcome(*ok, now);
            window.push(*ok);
            if window.len() > BREAKER_WINDOW { window.remove(0); }
            let failures = window.iter().filter(|x| !**x).count();
            let trips = window.len() >= BREAKER_MIN_OUTCOMES && failures * 2 > window.len();
            if trips {
                prop_assert_eq!(b.open_until(), Some(now.plus(BREAKER_OPEN_FOR)));
                prop_assert!(b.is_open(now));
                window.clear();
            } else {
                prop_assert_eq!(b.open_until(), was_open_until);
            }
            prop_assert_eq!(b.outcomes(), window.clone());
        }
    }
}
