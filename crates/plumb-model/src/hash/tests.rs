//! The spec hash: one meaning one hash, hub-only fields outside, every hashed field inside.

use super::*;
use crate::policy::AdaptivePolicy;
use crate::quantity::Quantity;
use crate::spec::{BackendRef, Burst, Mode, Placement};
use proptest::prelude::*;

const BASE: &str = r#"
metadata: {namespace: ml}
spec:
  workload: {name: llama}
  clusters:
  - name: east
    nodePools: [gpu, gpu2]
    nodeSelector: {pool: reserved, zone: a}
    maxReplicas: 10
    region: us-east-1
    backend: {name: llama-east}
    weight: 60
  - {name: west, maxReplicas: 6, backend: {name: llama-west}, weight: 40}
  signals:
    demand: sum(rate(requests[1m]))
    saturation: queue
    saturationThreshold: "0.9"
    metrics: [{name: kv, query: kv_usage, window: 1m}]
  capacity: {replicaCapacity: 5}
  escalation: {after: 3m}
  traffic:
    routes: [{cluster: east, name: llama}]
"#;

fn base() -> AdaptivePolicySpec {
    AdaptivePolicy::from_yaml(BASE).unwrap().spec
}

fn hash(spec: &AdaptivePolicySpec, cluster: &str) -> String {
    member_spec_hash(spec, Some("ml"), cluster)
}

#[test]
fn the_hash_is_sha256_of_the_canonical_text() {
    let spec = base();
    let h = hash(&spec, "east");
    assert!(h.starts_with("sha256:") && h.len() == 7 + 64, "{h}");
    assert!(
        h[7..]
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    );
    insta::assert_snapshot!(canonical_text(&hashed_fields(&spec, Some("ml"), "east")));
    assert_ne!(
        hash(&spec, "east"),
        hash(&spec, "west"),
        "each member hashes its own entry"
    );
}

#[test]
fn spellings_of_one_meaning_hash_alike() {
    let plain = hash(&base(), "east");
    let same = [
        BASE.replace(
            "{name: kv, query: kv_usage, window: 1m}",
            "{name: kv, query: kv_usage, window: 60s, maxAge: 2m}",
        ),
        BASE.replace("window: 1m}", "window: 1m, maxAge: 120s}"),
        BASE.replace("\"0.9\"", "900m"),
        BASE.replace("{pool: reserved, zone: a}", "{zone: a, pool: reserved}"),
        BASE.replace("{name: llama}", "{name: llama, namespace: ml}"),
        BASE.replace("{replicaCapacity: 5}", "{replicaCapacity: 5, step: 2}"),
        BASE.replace(
            "    region: us-east-1\n",
            "    region: us-east-1\n    costRank: 0\n    replicaCapacity: 5\n",
        ),
        BASE.replace("workload: {name: llama}", "workload:\n    name: llama"),
        BASE.replace("{name: llama-east}", "{name: llama-east, kind: Service}"),
    ];
    for text in same {
        let spec = AdaptivePolicy::from_yaml(&text).unwrap().spec;
        assert_eq!(hash(&spec, "east"), plain, "{text}");
    }
}

/// Changes only the hub reads, or another member's entry.
fn hub_only_change(spec: &mut AdaptivePolicySpec, which: u8, n: i64) {
    let clusters = spec.clusters.as_mut().unwrap();
    match which % 9 {
        0 => spec.mode = Some(if n % 2 == 0 { Mode::Auto } else { Mode::Shadow }),
        1 => {
            spec.escalation.get_or_insert_default().cooldown =
                Some(GoDuration::new(format!("{n}s")))
        }
        2 => spec.placement = Some(Placement::StaticFirst),
        3 => spec.traffic.get_or_insert_default().step_percent = Some(n),
        4 => clusters[0].weight = Some(n),
        5 => clusters[0].min_weight = Some(n),
        6 => clusters[0].max_weight = Some(n),
        7 => {
            let adaptive = spec
                .experimental
                .get_or_insert_default()
                .adaptive
                .get_or_insert_default();
            adaptive.intent = Some(format!("intent {n}"));
            adaptive.burst = Some(Burst {
                step: Some(n),
                step_percent: None,
            });
        }
        _ => spec.confidence_threshold_percent = Some(n),
    }
}

/// Changes a field member `east` hashes.
fn hashed_change(spec: &mut AdaptivePolicySpec, which: u8, n: i64) {
    let east = &mut spec.clusters.as_mut().unwrap()[0];
    match which % 12 {
        0 => east.max_replicas = Some(11 + n),
        1 => east
            .node_pools
            .get_or_insert_default()
            .push(format!("pool{n}")),
        2 => east.region = Some(format!("region-{n}")),
        3 => east.cost_rank = Some(1 + n),
        4 => east.replica_capacity = Some(6.0 + n as f64),
        5 => {
            east.backend = Some(BackendRef {
                name: Some(format!("b{n}")),
                ..BackendRef::default()
            })
        }
        6 => {
            east.node_selector
                .get_or_insert_default()
                .insert(format!("k{n}"), "v".into());
        }
        7 => spec.workload.get_or_insert_default().name = Some(format!("model-{n}")),
        8 => spec.capacity.get_or_insert_default().step = Some(3 + n),
        9 => spec.signals.get_or_insert_default().pressure = Some(format!("avg(waiting{n})")),
        10 => {
            spec.signals.get_or_insert_default().saturation_threshold =
                Some(Quantity::new(format!("{}", 1 + n)))
        }
        _ => {
            spec.signals
                .get_or_insert_default()
                .metrics
                .get_or_insert_default()[0]
                .window = Some(GoDuration::new(format!("{}s", 61 + n)))
        }
    }
}

proptest! {
    #[test]
    fn any_spelling_of_a_duration_hashes_alike(nanos in 1u64..=1_000_000 * 3_600_000_000_000) {
        let spelled = |text: String| {
            let mut spec = base();
            spec.signals.as_mut().unwrap().metrics.as_mut().unwrap()[0].window = Some(GoDuration::new(text));
            hash(&spec, "east")
        };
        let canonical = spelled(crate::duration::format_go_duration(nanos));
        prop_assert_eq!(&spelled(format!("{nanos}ns")), &canonical);
        if nanos % 1_000_000_000 == 0 {
            prop_assert_eq!(&spelled(format!("{}s", nanos / 1_000_000_000)), &canonical);
        }
        prop_assert_ne!(&spelled(format!("{}ns", nanos + 1)), &canonical);
    }

    #[test]
    fn a_default_written_out_hashes_as_left_out(step in prop::bool::ANY, age in prop::bool::ANY, rank in prop::bool::ANY) {
        let mut spec = base();
        if step {
            spec.capacity.as_mut().unwrap().step = Some(2);
        }
        if age {
            spec.signals.as_mut().unwrap().metrics.as_mut().unwrap()[0].max_age = Some(GoDuration::new("120s"));
        }
        if rank {
            spec.clusters.as_mut().unwrap()[0].cost_rank = Some(0);
        }
        prop_assert_eq!(hash(&spec, "east"), hash(&base(), "east"));
    }

    #[test]
    fn hub_only_changes_leave_every_members_hash_unchanged(which in any::<u8>(), n in 0i64..100) {
        let before = base();
        let mut after = before.clone();
        hub_only_change(&mut after, which, n);
        for member in ["east", "west"] {
            prop_assert_eq!(hash(&before, member), hash(&after, member));
        }
    }

    #[test]
    fn another_members_entry_does_not_count(max in 0i64..100, region in "[a-z]{1,8}") {
        let before = base();
        let mut after = before.clone();
        let west = &mut after.clusters.as_mut().unwrap()[1];
        west.max_replicas = Some(max);
        west.region = Some(region);
        prop_assert_eq!(hash(&before, "east"), hash(&after, "east"));
    }

    #[test]
    fn any_hashed_change_changes_the_hash(which in any::<u8>(), n in 0i64..100) {
        let before = base();
        let mut after = before.clone();
        hashed_change(&mut after, which, n);
        prop_assert_ne!(hash(&before, "east"), hash(&after, "east"));
    }

    #[test]
    fn the_canonical_text_is_compact_json_with_sorted_keys(which in any::<u8>(), n in 0i64..100) {
        let mut spec = base();
        hashed_change(&mut spec, which, n);
        let text = canonical_text(&hashed_fields(&spec, Some("ml"), "east"));
        let value: Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(canonical_text(&value), text.clone());
        prop_assert!(!text.contains(": ") && !text.contains("null"));
    }
}
