//! Node health (docs/design-policies.md#node-health) and `propose`.

use alfred_model::config::Config;
use alfred_model::reason::{AdvisoryReason as A, RowReason};
use alfred_model::record::Policy;
use alfred_model::snapshot::{HealthState, ModelInfo, NodeCondition, Pod, PodPhase};

use super::defrag::example1;
use crate::nodehealth::{NodeHealthOutput, evaluate, evaluate_with};
use crate::settings::{PolicySettings, Window};
use crate::testkit::ClusterBuilder;
use crate::{propose, propose_with};

fn run(b: ClusterBuilder, s: &PolicySettings) -> NodeHealthOutput {
    let now = b.now();
    evaluate_with(&b.build(), s, now)
}

/// docs/design-policies.md#worked-examples: g1 Unhealthy, g2 due for maintenance (`os-patching`).
pub(crate) fn worked_example() -> ClusterBuilder {
    let g1_only = ModelInfo {
        backend: "PerNode".into(),
        allowed_nodes: Some(["g1".to_string()].into_iter().collect()),
        ..ModelInfo::default()
    };
    ClusterBuilder::new()
        .node("g1", "H100", 16)
        .node("g2", "H100", 8)
        .node("t1", "H100", 8)
        .unhealthy("g1")
        .maintenance("g2", "os-patching")
        .omenative("prod", "a", &[&[("g1", 8)]])
        .workload("prod/a", |w| w.settings.priority = 0.9)
        .omenative("prod", "b", &[&[("g1", 2)]])
        .model("prod/b", "only-on-g1", g1_only)
        .omenative("prod", "c", &[&[("g2", 4)]])
        .workload("prod/c", |w| w.settings.priority = 0.7)
        .raw("prod", "d", &[("g2", 2)])
}

#[test]
fn worked_example_d6() {
    let out = run(worked_example(), &PolicySettings::default());
    let names: Vec<&str> = out.node_markers.iter().map(|m| m.node.as_str()).collect();
    assert_eq!(names, vec!["g1", "g2"]);
    let rows = &out.candidates;
    let summary: Vec<(&str, RowReason, bool, Option<A>, f64)> = rows
        .iter()
        .map(|r| {
            (
                r.workload.as_str(),
                r.reason,
                r.executable,
                r.advisory_reason,
                r.score,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("prod/a", RowReason::NodeUnhealthy, true, None, 0.9),
            (
                "prod/b",
                RowReason::NodeUnhealthy,
                false,
                Some(A::NoSurgeHeadroom),
                0.5
            ),
            ("prod/c", RowReason::NodeMaintenance, true, None, 0.7),
            (
                "prod/d",
                RowReason::NodeMaintenance,
                false,
                Some(A::RawDeploymentMigrationUnsupported),
                0.5
            ),
        ]
    );
    let a = &rows[0];
    assert_eq!(a.policy, Policy::NodeHealth);
    assert_eq!(a.from_node, "g1");
    assert_eq!(a.hint_target_nodes, vec!["t1"]);
    assert!(a.surge_shaped && a.footprint_gpus == 8 && a.pod_gpus == vec![8]);
    assert!(rows[1].surge_shaped && rows[1].footprint_gpus == 2);
    assert_eq!(rows[2].hint_target_nodes, vec!["t1"]);
    assert_eq!(rows[3].footprint_gpus, 2);
    // Markers carry what node records need.
    let g1 = &out.node_markers[0];
    assert_eq!(g1.uid, "uid-g1");
    assert_eq!(g1.health.state, HealthState::Unhealthy);
    assert_eq!(g1.evacuation, Some(RowReason::NodeUnhealthy));
    assert_eq!(g1.workloads, vec!["prod/a", "prod/b"]);
    assert!(g1.ome_gpu_occupants_present);
    let g2 = &out.node_markers[1];
    assert!(g2.maintenance.requested);
    assert_eq!(g2.maintenance.triggers, vec!["os-patching"]);
    assert_eq!(g2.evacuation, Some(RowReason::NodeMaintenance));
    assert_eq!(g2.workloads, vec!["prod/c", "prod/d"]);
}

#[test]
fn evaluate_reads_the_loaded_config() {
    let b = worked_example();
    let now = b.now();
    let mut config = Config::builtin();
    config.policies.node_health.signal_only = true;
    let out = evaluate(&b.build(), &config, now);
    assert!(out.candidates.is_empty());
    assert_eq!(out.node_markers.len(), 2);
}

#[test]
fn signal_only_reports_nodes_and_moves_nothing() {
    let s = PolicySettings {
        signal_only: true,
        ..PolicySettings::default()
    };
    let out = run(worked_example(), &s);
    assert!(out.candidates.is_empty());
    assert_eq!(out.node_markers.len(), 2);
}

#[test]
fn disabled_node_health_reports_nothing() {
    let s = PolicySettings {
        node_health_enabled: false,
        ..PolicySettings::default()
    };
    assert_eq!(run(worked_example(), &s), NodeHealthOutput::default());
}

#[test]
fn unknown_and_suspect_nodes_are_reported_not_evacuated_and_never_targets() {
    let b = ClusterBuilder::new()
        .node("u", "H100", 8)
        .node("s", "H100", 8)
        .node("g", "H100", 8)
        .node("t", "H100", 8)
        .with_node("u", |n| n.health.state = HealthState::Unknown)
        .with_node("s", |n| n.health.state = HealthState::Suspect)
        .unhealthy("g")
        .omenative("prod", "a", &[&[("u", 2)]])
        .omenative("prod", "b", &[&[("s", 2)]])
        .omenative("prod", "c", &[&[("g", 2)]]);
    let out = run(b, &PolicySettings::default());
    let marks: Vec<(&str, Option<RowReason>)> = out
        .node_markers
        .iter()
        .map(|m| (m.node.as_str(), m.evacuation))
        .collect();
    assert_eq!(
        marks,
        vec![
            ("g", Some(RowReason::NodeUnhealthy)),
            ("s", None),
            ("u", None)
        ]
    );
    assert_eq!(out.candidates.len(), 1);
    let c = &out.candidates[0];
    assert_eq!(c.workload, "prod/c");
    assert_eq!(c.hint_target_nodes, vec!["t"]);
    assert_eq!(c.placement_target_nodes, vec!["t"]);
}

#[test]
fn unhealthy_beats_maintenance_and_default_priority_is_one_half() {
    // One node both Unhealthy and under maintenance; an Instance spanning two nodes.
    let b = ClusterBuilder::new()
        .node("m", "H100", 8)
        .node("x", "H100", 8)
        .node("both", "H100", 8)
        .node("t", "H100", 8)
        .maintenance("m", "os-patching")
        .maintenance("both", "hardware-swap")
        .unhealthy("both")
        .omenative("prod", "a", &[&[("m", 2), ("x", 2)]])
        .omenative("prod", "b", &[&[("both", 1), ("m", 1)]]);
    let out = run(b, &PolicySettings::default());
    let a = out
        .candidates
        .iter()
        .find(|r| r.workload == "prod/a")
        .unwrap();
    assert_eq!(
        (a.reason, a.from_node.as_str()),
        (RowReason::NodeMaintenance, "m")
    );
    assert_eq!(a.score, 0.5);
    let b = out
        .candidates
        .iter()
        .find(|r| r.workload == "prod/b")
        .unwrap();
    assert_eq!(
        (b.reason, b.from_node.as_str()),
        (RowReason::NodeUnhealthy, "both")
    );
    assert_eq!(out.candidates[0].workload, "prod/b");
    let both = out.node_markers.iter().find(|m| m.node == "both").unwrap();
    assert_eq!(both.evacuation, Some(RowReason::NodeUnhealthy));
}

#[test]
fn node_health_skips_windows_cooldown_threshold_and_cost() {
    let s = PolicySettings {
        maintenance_windows: vec![Window {
            days: vec![0],
            start_minute: 0,
            end_minute: 1,
        }],
        ..PolicySettings::default()
    };
    let now = crate::testkit::t0();
    let b = worked_example().workload("prod/a", |w| {
        w.migration.last_migration = Some(now.plus_minutes(-1))
    });
    let out = run(b, &s);
    let a = &out.candidates[0];
    assert_eq!(a.workload, "prod/a");
    assert!(a.executable);
    assert_eq!((a.benefit, a.cost, a.emergency), (0.0, 0.0, false));
}

#[test]
fn unjoined_gpu_pods_give_one_component_wide_row() {
    let stray = Pod {
        namespace: "prod".into(),
        name: "a-stray".into(),
        node: "g1".into(),
        gpus: 2,
        phase: PodPhase::Running,
        ready: true,
        ome: true,
        ..Pod::default()
    };
    let b = worked_example().bound_pod(stray).workload("prod/a", |w| {
        w.components[0].pods.push("prod/a-stray".into())
    });
    let out = run(b, &PolicySettings::default());
    let rows: Vec<_> = out
        .candidates
        .iter()
        .filter(|r| r.workload == "prod/a")
        .collect();
    assert_eq!(rows.len(), 2, "{rows:#?}");
    let wide = rows.iter().find(|r| r.instance == -1).unwrap();
    assert_eq!(wide.advisory_reason, Some(A::OMENativeObservationInvalid));
    assert_eq!(
        (
            wide.reason,
            wide.from_node.as_str(),
            wide.footprint_gpus,
            wide.score
        ),
        (RowReason::NodeUnhealthy, "g1", 0, 0.9)
    );
}

#[test]
fn markers_count_ome_pods_whose_workload_is_unknown() {
    let orphan = Pod {
        namespace: "prod".into(),
        name: "orphan".into(),
        node: "m".into(),
        gpus: 1,
        phase: PodPhase::Running,
        ome: true,
        ..Pod::default()
    };
    let b = ClusterBuilder::new()
        .node("m", "H100", 8)
        .node("j", "H100", 8)
        .maintenance("m", "os-patching")
        .maintenance("j", "os-patching")
        .bound_pod(orphan)
        .occupant("batch", "job", "j", 4);
    let out = run(b, &PolicySettings::default());
    let m = out.node_markers.iter().find(|m| m.node == "m").unwrap();
    assert!(m.workloads.is_empty() && m.ome_gpu_occupants_present);
    let j = out.node_markers.iter().find(|m| m.node == "j").unwrap();
    assert!(!j.ome_gpu_occupants_present);
    assert!(out.candidates.is_empty());
}

/// docs/design-policies.md#node-health: a GPU pod whose identity names an InferenceService the
/// snapshot does not hold (its `ome.io/inferenceservice` label, its InferenceReplica owner) still
/// names a workload, `namespace/name` from its label: the marker lists it, sorted and once, beside
/// the workloads the snapshot holds.
#[test]
fn markers_list_the_workload_a_pods_labels_name_when_the_snapshot_lacks_it() {
    let labelled = |name: &str, gpus: u32| {
        let mut p = ClusterBuilder::pod("prod", name, "m", gpus, Some("gone"));
        p.controller = Some(alfred_model::snapshot::OwnerRef {
            api_version: "ome.io/v1beta1".into(),
            kind: "InferenceReplica".into(),
            name: "gone-engine-0".into(),
            uid: "uid-ir".into(),
        });
        p
    };
    let b = ClusterBuilder::new()
        .node("m", "H100", 8)
        .maintenance("m", "os-patching")
        .omenative("prod", "zz", &[&[("m", 1)]])
        .omenative("prod", "aa", &[&[("m", 1)]])
        .bound_pod(labelled("gone-0", 2))
        .bound_pod(labelled("gone-1", 1))
        // A pod of it without GPUs names nothing.
        .bound_pod(ClusterBuilder::pod(
            "prod",
            "cpu-0",
            "m",
            0,
            Some("cpu-only"),
        ));
    let out = run(b, &PolicySettings::default());
    let m = out.node_markers.iter().find(|m| m.node == "m").unwrap();
    assert_eq!(m.workloads, vec!["prod/aa", "prod/gone", "prod/zz"]);
    assert!(m.ome_gpu_occupants_present);
}

/// docs/design-policies.md#node-health: a marker lists the OME workloads with *GPU* pods on its
/// node (a workload whose only pod there requests no GPU is not one), and carries the observation
/// time `T`, not the later time of the pass deciding on it (normalized snapshot or not).
#[test]
fn markers_list_gpu_workloads_only_and_carry_the_observation_time() {
    let observed = crate::testkit::t0();
    let b = ClusterBuilder::new()
        .node("g", "H100", 8)
        .node("t", "H100", 8)
        .unhealthy("g")
        .omenative("prod", "a", &[&[("g", 2)]])
        .omenative("prod", "cpu", &[&[("g", 0)]])
        .omenative("prod", "z", &[&[("g", 1)]]);
    let raw = b.build();
    let mut normalized = raw.clone();
    normalized.normalize();
    let later = observed.plus_minutes(5);
    for snap in [&raw, &normalized] {
        let out = evaluate_with(snap, &PolicySettings::default(), later);
        let g = out.node_markers.iter().find(|m| m.node == "g").unwrap();
        assert_eq!(g.workloads, vec!["prod/a".to_owned(), "prod/z".to_owned()]);
        assert!(g.ome_gpu_occupants_present);
        assert_eq!(g.observed_at, observed);
    }
}

#[test]
fn node_health_advice_reasons() {
    // Executor unavailable → OMENativeUnavailable; surface off → MigrationSurfaceDisabled;
    // model per Instance; LWS per Instance unless disabled; zero-GPU Instances ignored.
    let base = || {
        ClusterBuilder::new()
            .node("g", "H100", 8)
            .node("t", "H100", 8)
            .unhealthy("g")
            .omenative("prod", "a", &[&[("g", 2)]])
            .multinode("prod", "l", &[("g", 2), ("t", 2)])
            .omenative("prod", "cpu", &[&[("g", 0)]])
    };
    let reason_of = |out: &NodeHealthOutput, w: &str| {
        out.candidates
            .iter()
            .find(|r| r.workload == w)
            .map(|r| (r.instance, r.advisory_reason))
    };
    let out = run(base().executor(false), &PolicySettings::default());
    assert_eq!(
        reason_of(&out, "prod/a"),
        Some((0, Some(A::OMENativeUnavailable)))
    );
    assert_eq!(
        reason_of(&out, "prod/l"),
        Some((0, Some(A::LWSMigrationUnsupported)))
    );
    assert_eq!(reason_of(&out, "prod/cpu"), None);
    let off = PolicySettings {
        omenative_migration_enabled: false,
        lws_recommendations_enabled: false,
        ..PolicySettings::default()
    };
    let out = run(base(), &off);
    assert_eq!(
        reason_of(&out, "prod/a"),
        Some((0, Some(A::MigrationSurfaceDisabled)))
    );
    assert_eq!(reason_of(&out, "prod/l"), None);
    let pinned = ModelInfo {
        volume_pinned: true,
        ..ModelInfo::default()
    };
    let out = run(
        base().model("prod/a", "m", pinned),
        &PolicySettings::default(),
    );
    assert_eq!(reason_of(&out, "prod/a"), Some((0, Some(A::VolumePinned))));
    let out = run(
        base().missing_model("prod/a", "m"),
        &PolicySettings::default(),
    );
    assert_eq!(
        reason_of(&out, "prod/a"),
        Some((0, Some(A::ModelUnresolved)))
    );
    let out = run(
        base().workload("prod/a", |w| w.settings.movable = false),
        &PolicySettings::default(),
    );
    assert_eq!(
        reason_of(&out, "prod/a"),
        Some((0, Some(A::OMENativeStateIneligible)))
    );
    let out = run(
        base().workload("prod/a", |w| w.components[0].replica = None),
        &PolicySettings::default(),
    );
    assert_eq!(
        reason_of(&out, "prod/a"),
        Some((0, Some(A::OMENativeObservationInvalid)))
    );
}

#[test]
fn propose_puts_node_health_first() {
    let b =
        example1()
            .node("g", "H100", 8)
            .unhealthy("g")
            .omenative("prod", "sick", &[&[("g", 1)]]);
    let now = b.now();
    let snap = b.build();
    let p = propose_with(&snap, &PolicySettings::default(), now);
    assert_eq!(p.candidates[0].policy, Policy::NodeHealth);
    assert_eq!(p.candidates[0].workload, "prod/sick");
    assert!(
        p.candidates[1..]
            .iter()
            .all(|c| c.policy == Policy::Defragmentation)
    );
    assert!(p.candidates.len() > 2);
    assert_eq!(p.node_markers.len(), 1);
    assert_eq!(propose(&snap, &Config::builtin(), now), p);
}

#[test]
fn health_markers_keep_conditions_and_suspect_until() {
    let until = crate::testkit::t0().plus_minutes(10);
    let b = ClusterBuilder::new()
        .node("s", "H100", 8)
        .with_node("s", |n| {
            n.health.state = HealthState::Suspect;
            n.health.suspect_until = Some(until);
            n.health.conditions = vec![NodeCondition {
                kind: "GpuUnhealthy".into(),
                status: "False".into(),
                last_transition_time: Some(until.plus_minutes(-30)),
            }];
        });
    let out = run(b, &PolicySettings::default());
    assert_eq!(out.node_markers[0].health.suspect_until, Some(until));
    assert_eq!(out.node_markers[0].health.conditions.len(), 1);
    assert_eq!(out.node_markers[0].observed_at, crate::testkit::t0());
}

#[test]
fn multi_pod_plans_place_every_pod_and_hints_stay_the_three_fullest() {
    // docs/design-policies.md#surge-plans: the 4-GPU pod can only use t4, the fourth-fullest node;
    // hints stay t1..t3.
    let b = ClusterBuilder::new()
        .node("g", "H100", 8)
        .unhealthy("g")
        .omenative("prod", "a", &[&[("g", 4), ("g", 2)]])
        .node("t1", "H100", 8)
        .occupant("x", "o1", "t1", 6)
        .node("t2", "H100", 8)
        .occupant("x", "o2", "t2", 5)
        .node("t3", "H100", 8)
        .occupant("x", "o3", "t3", 5)
        .node("t4", "H100", 8)
        .occupant("x", "o4", "t4", 4);
    let out = run(b.clone(), &PolicySettings::default());
    let a = &out.candidates[0];
    assert!(a.executable, "{a:#?}");
    assert_eq!(a.pod_gpus, vec![4, 2]);
    assert_eq!(a.footprint_gpus, 6);
    assert_eq!(a.hint_target_nodes, vec!["t1", "t2", "t3"]);
    assert_eq!(a.placement_target_nodes, vec!["t1", "t2", "t3", "t4"]);
    // Without t4 the 4-GPU pod fits nowhere: NoSurgeHeadroom, even though 7 GPUs are free.
    let b = b.with_node("t4", |n| n.cordoned = true);
    let out = run(b, &PolicySettings::default());
    assert_eq!(out.candidates[0].advisory_reason, Some(A::NoSurgeHeadroom));
    assert!(out.candidates[0].hint_target_nodes.is_empty());
}
