//! A move as a worker request, and a worker's answer as an outcome
//! (docs/design-simulation.md#request-and-result, docs/design-pass.md#prediction-stage,
//! docs/design-pass.md#pre-submit-re-check step 7, docs/design-runtime.md#simulation-workers).
//! Pure: the adapter spawns the worker process and hands its stdout here.
//!
//! The request is built from the same conversion [`crate::ModelSimulator`] runs in-process
//! (see `model_sim`'s module docs), so a worker loaded with the same scheduler
//! configuration answers what the in-process model answers:
//!
//! * `clusterObjects`: the namespaces, nodes, bound non-terminal pods on known nodes,
//!   pending pods and PodGroups of the snapshot;
//! * `replacementPods`: from the runner templates (or copies of the source pods), unbound,
//!   named `<ir>-<instance>-alfred-replacement-<k>`, UID `<requestID>-replacement-<k>`;
//! * `sourcePods`: the Instance's bound pods, exactly as they appear in `clusterObjects`;
//! * predictions exclude every source node (`excludedNodes`, sorted); execution names
//!   `from_node` as `migrationFromNode`, its only excluded node, and every replacement pod
//!   carries the migration API's required `kubernetes.io/hostname NotIn [from_node]`;
//! * `requireGang`, `snapshotID` (`capture-<observedAt>`), `snapshotTime` (`observedAt`),
//!   `requestID` (the move's).
//!
//! The request is checked against the worker's closure rules (`validate_closure`) before it
//! leaves: whatever the worker would refuse is `Unsupported/InputUnsupported` here.

use alfred_model::Timestamp;
use alfred_model::reason::SchedulingReason;
use alfred_model::record::{Placement, PodName};
use alfred_sim::wire::{SCHEMA_VERSION, validate_closure};
use alfred_sim::{Decision, Identity, SimulationRequest, SimulationResult};

use crate::simulation::model_sim::{convert, effective_scheduler, reason_of, snapshot_id, stamped};
use crate::simulation::sim::{MoveSimulation, SimulationOutcome};

/// The worker request (docs/design-simulation.md#request-and-result) for `r`, for the worker
/// whose identity is `identity`.
///
/// Errors (the reason to record): the move cannot be converted, has no bound source pod,
/// its replacement pods name another scheduler than `identity.schedulerName`, or the
/// request would fail the worker's closure checks → `InputUnsupported`; more than 128
/// replacement pods → `RecommendationTooLarge`. Choosing the worker (exact identity, gang
/// capability) is the caller's.
pub fn wire_request(
    r: &MoveSimulation<'_>,
    identity: &Identity,
) -> Result<SimulationRequest, SchedulingReason> {
    let input = SchedulingReason::InputUnsupported;
    let scheduler = identity.scheduler_name.as_str();
    let m = convert(r, scheduler)?;
    if m.source_pods.is_empty()
        || m.replacements
            .iter()
            .any(|p| effective_scheduler(&p.spec.scheduler_name) != scheduler)
    {
        return Err(input);
    }
    let request = SimulationRequest {
        schema_version: SCHEMA_VERSION.to_owned(),
        request_id: r.request_id.clone(),
        snapshot_id: snapshot_id(r.snapshot),
        snapshot_time: r.snapshot.observed_at.to_rfc3339(),
        profile: identity.clone(),
        replacement_pods: m.replacements,
        source_pods: m.source_pods,
        cluster_objects: alfred_sim::cluster_objects(&m.cluster),
        require_gang: r.require_gang,
        excluded_nodes: m.excluded_nodes,
        migration_from_node: m.migration_from_node,
    };
    if request.request_id.is_empty() || request.request_id.trim() != request.request_id {
        return Err(input);
    }
    validate_closure(&request, &m.cluster).map_err(|_| input)?;
    Ok(request)
}

/// The outcome of a worker's result for `r`. The result must already have passed
/// [`alfred_sim::validate_result`] against the request (see [`outcome_of_stdout`]).
pub fn outcome_of(r: &MoveSimulation<'_>, result: &SimulationResult) -> SimulationOutcome {
    let reason = reason_of(result.decision);
    let placements = match (&result.placements, result.decision) {
        (Some(pl), Decision::Feasible) => pl
            .iter()
            .map(|p| Placement {
                pod: PodName {
                    namespace: p.pod.namespace.clone(),
                    name: p.pod.name.clone(),
                    uid: p.pod.uid.clone(),
                },
                node_name: p.node_name.clone(),
            })
            .collect(),
        _ => Vec::new(),
    };
    SimulationOutcome {
        status: reason.status(),
        reason,
        snapshot_id: result.snapshot_id.clone(),
        snapshot_time: Some(
            Timestamp::parse_rfc3339(&result.snapshot_time).unwrap_or(r.snapshot.observed_at),
        ),
        placements,
        answered_at: None,
    }
}

/// The outcome of a worker that exited 0 with `stdout` for `request`: a result that does
/// not decode strictly or fails re-validation → `Unavailable/InvalidResponse`; otherwise
/// [`outcome_of`].
pub fn outcome_of_stdout(
    r: &MoveSimulation<'_>,
    request: &SimulationRequest,
    stdout: &[u8],
) -> SimulationOutcome {
    let Ok(result) = alfred_sim::decode_result(stdout) else {
        return unavailable(r, SchedulingReason::InvalidResponse);
    };
    if alfred_sim::validate_result(request, &result).is_err() {
        return unavailable(r, SchedulingReason::InvalidResponse);
    }
    outcome_of(r, &result)
}

/// An answer with only `reason` (a worker error → `WorkerFailed`, a worker call past the
/// pass deadline → `SimulationBudgetExceeded`, a request that cannot be built → its
/// reason), stamped with the snapshot's identity.
pub fn unavailable(r: &MoveSimulation<'_>, reason: SchedulingReason) -> SimulationOutcome {
    stamped(r, reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulation::model_sim::tests::{cluster, filler, node, request};
    use crate::simulation::sim::{SimulationPurpose, Simulator};
    use crate::{ModelProfiles, ModelSimulator};
    use alfred_model::ClusterSnapshot;
    use alfred_model::reason::SchedulingStatus;
    use alfred_model::snapshot::{
        Component, ComponentKind, DeploymentMode, Instance, PodGroup, ReplicaState, Runner,
        Workload,
    };
    use alfred_sim::Profile;
    use serde_json::json;

    fn identity(scheduler: &str) -> Identity {
        Identity {
            scheduler_name: scheduler.into(),
            backend: "test-v135".into(),
            scheduler_version: alfred_sim::SCHEDULER_VERSION.into(),
            configuration_id: "sha256:test".into(),
        }
    }

    /// What a worker loaded with the built-in configuration of `r`'s scheduler answers,
    /// through the wire (request encoded, evaluated, result encoded and re-validated).
    fn over_the_wire(r: &MoveSimulation<'_>) -> (SimulationRequest, SimulationOutcome) {
        let scheduler = effective_scheduler(&r.profile.scheduler_name);
        let mut profile = if scheduler == crate::simulation::model_sim::OME_SCHEDULER_NAME {
            Profile::ome_scheduler_chart_default()
        } else {
            Profile::default_scheduler()
        };
        profile.scheduler_name = scheduler.to_owned();
        let id = identity(scheduler);
        let req = wire_request(r, &id).expect("request builds");
        // The worker decodes exactly what Alfred encodes.
        let decoded = alfred_sim::decode_request(&alfred_sim::encode_request(&req)).unwrap();
        assert_eq!(decoded, req);
        let eval = alfred_sim::evaluate(&profile, &id, &decoded, &mut || false)
            .expect("the worker accepts the request");
        let stdout = alfred_sim::encode_result(&eval.result);
        (req.clone(), outcome_of_stdout(r, &req, stdout.as_bytes()))
    }

    fn in_process(r: &MoveSimulation<'_>) -> SimulationOutcome {
        ModelSimulator::new(ModelProfiles::builtin()).simulate(r)
    }

    fn prediction<'a>(s: &'a ClusterSnapshot, sources: &[&str], gang: bool) -> MoveSimulation<'a> {
        let mut r = request(s, &[], gang);
        r.purpose = SimulationPurpose::Prediction;
        r.request_id = "recommendation-1-0".into();
        r.excluded_nodes = sources.iter().map(|n| n.to_string()).collect();
        r
    }

    #[test]
    fn a_single_pod_move_answers_the_same_over_the_wire() {
        for templates in [true, false] {
            let s = cluster(8, 8, templates);
            for r in [
                request(&s, &[], false),
                request(&s, &["c"], false),
                prediction(&s, &["a"], false),
            ] {
                let (req, wire) = over_the_wire(&r);
                assert_eq!(wire.status, SchedulingStatus::Feasible, "{wire:?}");
                assert_eq!(wire, in_process(&r));
                assert_eq!(req.source_pods.len(), 1);
                assert_eq!(req.source_pods[0].spec.node_name, "a");
            }
            let (_, hinted) = over_the_wire(&request(&s, &["c"], false));
            assert_eq!(hinted.placements[0].node_name, "c");
            assert_eq!(hinted.placements[0].pod.uid, "preflight-replacement-0");
        }
    }

    /// A pending 8-GPU pod nominated to `node` (it fits nowhere yet): the model holds its GPUs
    /// there against the move's replacement (same priority), in-process and over the wire,
    /// and the request carries the nomination and the pod's uid.
    #[test]
    fn a_nominated_pending_pod_holds_its_node_over_the_wire() {
        let with_pending = |node: &str| {
            let mut s = cluster(4, 4, true);
            s.pending_pods.push(alfred_model::snapshot::PendingPod {
                namespace: "prod".into(),
                name: "big-0".into(),
                gpus_needed: 8,
                uid: "uid-big-0".into(),
                nominated_node: node.into(),
                ..Default::default()
            });
            s.normalize();
            s
        };
        for (nominated, lands) in [("b", "c"), ("c", "b")] {
            let s = with_pending(nominated);
            let r = request(&s, &[], false);
            let (req, wire) = over_the_wire(&r);
            assert_eq!(wire.status, SchedulingStatus::Feasible, "{wire:?}");
            assert_eq!(wire, in_process(&r));
            assert_eq!(wire.placements[0].node_name, lands);
            let pending = req
                .cluster_objects
                .iter()
                .find(|o| o["metadata"]["name"] == "big-0")
                .expect("the pending pod is sent");
            assert_eq!(pending["status"]["nominatedNodeName"], nominated);
            assert_eq!(pending["metadata"]["uid"], "uid-big-0");
        }
    }

    #[test]
    fn execution_requests_name_the_migration_node_and_predictions_exclude_sources() {
        let s = cluster(8, 8, true);
        let (req, _) = over_the_wire(&request(&s, &["a", "c"], false));
        assert_eq!(req.migration_from_node.as_deref(), Some("a"));
        assert_eq!(req.excluded_nodes, ["a"]);
        let terms = &req.replacement_pods[0]
            .spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|n| {
                n.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .expect("hostname exclusion")
            .node_selector_terms;
        assert_eq!(terms.len(), 1);
        assert_eq!(terms[0].match_expressions[0].operator, "NotIn");
        assert_eq!(terms[0].match_expressions[0].values, ["a"]);
        // The excluded hint is dropped; the other one is a weight-50 preference.
        let preferred = &req.replacement_pods[0]
            .spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .unwrap()
            .preferred_during_scheduling_ignored_during_execution;
        assert_eq!(
            preferred[0].weight,
            crate::simulation::model_sim::HINT_WEIGHT
        );
        assert_eq!(preferred[0].preference.match_expressions[0].values, ["c"]);

        let (req, _) = over_the_wire(&prediction(&s, &[], false));
        assert_eq!(req.migration_from_node, None);
        assert_eq!(req.excluded_nodes, ["a"], "every source node is excluded");
        assert_eq!(req.snapshot_id, format!("capture-{}", s.observed_at));
        assert_eq!(req.snapshot_time, s.observed_at.to_rfc3339());
        assert!(!req.require_gang);
    }

    #[test]
    fn an_infeasible_move_answers_the_same_over_the_wire() {
        let s = cluster(2, 3, true);
        for r in [request(&s, &["b"], false), prediction(&s, &["a"], false)] {
            let (_, wire) = over_the_wire(&r);
            assert_eq!(
                wire.reason,
                SchedulingReason::NoFeasiblePlacement,
                "{wire:?}"
            );
            assert!(wire.placements.is_empty());
            assert_eq!(wire, in_process(&r));
        }
    }

    /// A 2-member gang of 8-GPU pods under ome-scheduler (PodGroup `w2-g`, minMember 2,
    /// domains by `rack`): its source pods on a and b (rack r1), r2 = c, d, e with
    /// `free_r2` free GPUs on d.
    fn gang_cluster(free_d: u32) -> ClusterSnapshot {
        let mut nodes = Vec::new();
        for (n, rack) in [
            ("a", "r1"),
            ("b", "r1"),
            ("c", "r2"),
            ("d", "r2"),
            ("e", "r3"),
        ] {
            let mut node = node(n, 8, 0);
            node.labels.insert("rack".into(), rack.into());
            nodes.push(node);
        }
        let mut pods = vec![filler("w2-0", "a", 8), filler("w2-1", "b", 8)];
        for p in &mut pods {
            p.namespace = "ns".into();
        }
        nodes[0].allocated_gpus = 8;
        nodes[1].allocated_gpus = 8;
        if free_d < 8 {
            pods.push(filler("fill-d", "d", 8 - free_d));
            nodes[3].allocated_gpus = 8 - free_d;
        }
        for n in &mut nodes {
            n.free_gpus = n.total_gpus - n.allocated_gpus;
        }
        let template = json!({"metadata": {"labels": {"app": "w2", "scheduling.x-k8s.io/pod-group": "w2-g"}},
            "spec": {"schedulerName": "ome-scheduler", "containers": [
                {"name": "engine", "image": "x", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}});
        let mut s = ClusterSnapshot {
            observed_at: alfred_model::Timestamp::from_unix_secs(1_790_000_000),
            nodes,
            pods,
            pod_groups: vec![PodGroup {
                namespace: "ns".into(),
                name: "w2-g".into(),
                min_member: 2,
                topology_key: "rack".into(),
                phase: String::new(),
            }],
            workloads: vec![Workload {
                namespace: "ns".into(),
                name: "w2".into(),
                uid: "isvc-w2".into(),
                components: vec![Component {
                    kind: ComponentKind::Engine,
                    mode: DeploymentMode::OMENative,
                    replica: Some(ReplicaState {
                        name: "w2-engine".into(),
                        runners: vec![
                            Runner {
                                name: "leader".into(),
                                size: 1,
                                template: template.clone(),
                            },
                            Runner {
                                name: "worker".into(),
                                size: 1,
                                template,
                            },
                        ],
                        ..ReplicaState::default()
                    }),
                    observation_invalid: None,
                    instances: vec![Instance {
                        index: 0,
                        pods: vec!["ns/w2-0".into(), "ns/w2-1".into()],
                        total_gpus: 16,
                        ..Instance::default()
                    }],
                    pods: vec!["ns/w2-0".into(), "ns/w2-1".into()],
                    scheduler_name: "ome-scheduler".into(),
                    topology_key: "rack".into(),
                }],
                ..Workload::default()
            }],
            ..ClusterSnapshot::default()
        };
        s.normalize();
        s
    }

    fn gang_prediction(s: &ClusterSnapshot) -> MoveSimulation<'_> {
        let mut r = prediction(s, &["a", "b"], true);
        r.workload = "ns/w2".into();
        r.from_node = "a".into();
        r.profile.scheduler_name = "ome-scheduler".into();
        r
    }

    #[test]
    fn a_gang_move_answers_the_same_over_the_wire() {
        // r2 has room for both members; r3 has room for one only.
        let s = gang_cluster(8);
        let r = gang_prediction(&s);
        let (req, wire) = over_the_wire(&r);
        assert!(req.require_gang);
        assert_eq!(req.source_pods.len(), 2);
        assert_eq!(req.excluded_nodes, ["a", "b"]);
        assert_eq!(wire.status, SchedulingStatus::Feasible, "{wire:?}");
        let nodes: Vec<&str> = wire
            .placements
            .iter()
            .map(|p| p.node_name.as_str())
            .collect();
        assert_eq!(nodes, ["c", "d"]);
        assert_eq!(wire, in_process(&r));

        // d full: no domain has room for two 8-GPU members.
        let s = gang_cluster(0);
        let r = gang_prediction(&s);
        let (_, wire) = over_the_wire(&r);
        assert_eq!(
            wire.reason,
            SchedulingReason::NoFeasiblePlacement,
            "{wire:?}"
        );
        assert_eq!(wire, in_process(&r));
    }

    #[test]
    fn a_gang_whose_templates_name_no_pod_group_gets_its_own() {
        let mut s = gang_cluster(8);
        let ir = s.workloads[0].components[0].replica.as_mut().unwrap();
        for runner in &mut ir.runners {
            runner.template["metadata"]["labels"]
                .as_object_mut()
                .unwrap()
                .remove("scheduling.x-k8s.io/pod-group");
        }
        let r = gang_prediction(&s);
        let (req, wire) = over_the_wire(&r);
        assert_eq!(wire.status, SchedulingStatus::Feasible, "{wire:?}");
        let nodes: Vec<&str> = wire
            .placements
            .iter()
            .map(|p| p.node_name.as_str())
            .collect();
        assert_eq!(nodes, ["c", "d"]);
        assert_eq!(wire, in_process(&r));
        let group = "w2-engine-0-alfred-replacement";
        assert!(req.replacement_pods.iter().all(|p| {
            p.metadata
                .labels
                .get("scheduling.x-k8s.io/pod-group")
                .map(String::as_str)
                == Some(group)
        }));
        let pg = req
            .cluster_objects
            .iter()
            .find(|o| o["kind"] == "PodGroup" && o["metadata"]["name"] == group)
            .expect("the replacement PodGroup");
        assert_eq!(pg["spec"]["minMember"], 2);
        assert_eq!(pg["metadata"]["annotations"]["ome.io/topology-key"], "rack");
    }

    /// `s` with its gang's templates naming no PodGroup (each move brings its own).
    fn without_template_group(mut s: ClusterSnapshot) -> ClusterSnapshot {
        let ir = s.workloads[0].components[0].replica.as_mut().unwrap();
        for runner in &mut ir.runners {
            runner.template["metadata"]["labels"]
                .as_object_mut()
                .unwrap()
                .remove("scheduling.x-k8s.io/pod-group");
        }
        s
    }

    #[test]
    fn a_reused_simulator_answers_like_a_fresh_one() {
        let mut sim = ModelSimulator::new(ModelProfiles::builtin());
        let gang = without_template_group(gang_cluster(8));
        let named = gang_cluster(8);
        let single = cluster(8, 8, true);
        // Moves of several snapshots, each snapshot several times, in both profiles,
        // predictions and execution re-checks: every answer is the fresh simulator's (the
        // wire request's conversion, with the replacement PodGroup in the cluster).
        let mut moves = Vec::new();
        for _ in 0..2 {
            moves.push(gang_prediction(&gang));
            moves.push(gang_prediction(&gang));
            let mut exec = gang_prediction(&gang);
            exec.purpose = SimulationPurpose::Execution;
            exec.request_id = "preflight".into();
            moves.push(exec);
            moves.push(gang_prediction(&named));
            moves.push(request(&single, &["c"], false));
            moves.push(request(&single, &[], false));
            moves.push(prediction(&single, &["a"], false));
        }
        for r in &moves {
            let reused = sim.simulate(r);
            assert_eq!(reused, in_process(r), "{}", r.workload);
            let (_, wire) = over_the_wire(r);
            assert_eq!(reused, wire, "{}", r.workload);
        }
        assert_eq!(sim.simulate(&moves[0]).status, SchedulingStatus::Feasible);
    }

    #[test]
    fn another_snapshot_never_reuses_the_cluster_of_the_last_one() {
        let mut sim = ModelSimulator::new(ModelProfiles::builtin());
        let mut s = without_template_group(gang_cluster(8));
        let out = sim.simulate(&gang_prediction(&s));
        assert_eq!(out.status, SchedulingStatus::Feasible, "{out:?}");
        // A later capture (its own observedAt) in the same place, with the same sizes: r2
        // (c, d) cordoned, only r3 (one node) is left, which cannot take both members.
        s.nodes[2].cordoned = true;
        s.nodes[3].cordoned = true;
        s.observed_at = alfred_model::Timestamp::from_unix_secs(1_790_000_030);
        let out = sim.simulate(&gang_prediction(&s));
        assert_eq!(out.reason, SchedulingReason::NoFeasiblePlacement, "{out:?}");
        assert_eq!(out, in_process(&gang_prediction(&s)));
        // The same observedAt elsewhere in memory, other content.
        let mut other = s.clone();
        other.nodes[2].cordoned = false;
        other.nodes[3].cordoned = false;
        let out = sim.simulate(&gang_prediction(&other));
        assert_eq!(out.status, SchedulingStatus::Feasible, "{out:?}");
        assert_eq!(out, in_process(&gang_prediction(&other)));
        // Back to the first: still answered from its own content.
        assert_eq!(
            sim.simulate(&gang_prediction(&s)),
            in_process(&gang_prediction(&s))
        );
        // A snapshot whose base cluster cannot be converted, then one that can.
        let mut bad = s.clone();
        bad.pods[0].scheduling.affinity = json!("not an affinity");
        let out = sim.simulate(&gang_prediction(&bad));
        assert_eq!(out.reason, SchedulingReason::InputUnsupported);
        let s = gang_cluster(8);
        let out = sim.simulate(&gang_prediction(&s));
        assert_eq!(out.status, SchedulingStatus::Feasible, "{out:?}");
    }

    /// Debug builds check the `SnapshotKey` contract: a snapshot changed in place without a
    /// new observedAt is refused loudly, never answered from the stale cluster.
    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "use a new simulator")]
    fn a_snapshot_changed_in_place_is_a_contract_violation() {
        let mut sim = ModelSimulator::new(ModelProfiles::builtin());
        let mut s = without_template_group(gang_cluster(8));
        sim.simulate(&gang_prediction(&s));
        s.nodes[2].cordoned = true;
        sim.simulate(&gang_prediction(&s));
    }

    #[test]
    fn requests_that_cannot_be_built_are_input_unsupported() {
        let mut s = cluster(8, 8, true);
        // The replacement pods name default-scheduler (their component's); a worker of
        // another scheduler cannot take them.
        s.workloads[0].components[0].scheduler_name = "default-scheduler".into();
        let r = request(&s, &[], false);
        assert_eq!(
            wire_request(&r, &identity("ome-scheduler")).unwrap_err(),
            SchedulingReason::InputUnsupported
        );
        let mut r = request(&s, &[], false);
        r.instance = 7;
        assert_eq!(
            wire_request(&r, &identity("default-scheduler")).unwrap_err(),
            SchedulingReason::InputUnsupported
        );
        // No bound source pod left.
        let mut unbound = s.clone();
        unbound.pods.retain(|p| p.name != "w1-0");
        let r = request(&unbound, &[], false);
        assert_eq!(
            wire_request(&r, &identity("default-scheduler")).unwrap_err(),
            SchedulingReason::InputUnsupported
        );
        // More than 128 replacement pods.
        let mut big = s.clone();
        big.workloads[0].components[0]
            .replica
            .as_mut()
            .unwrap()
            .runners[0]
            .size = 129;
        let r = request(&big, &[], false);
        assert_eq!(
            wire_request(&r, &identity("default-scheduler")).unwrap_err(),
            SchedulingReason::RecommendationTooLarge
        );
    }

    #[test]
    fn invalid_worker_answers_are_invalid_responses() {
        let s = cluster(8, 8, true);
        let r = request(&s, &[], false);
        let (req, _) = over_the_wire(&r);
        let invalid = |stdout: &str| outcome_of_stdout(&r, &req, stdout.as_bytes()).reason;
        assert_eq!(invalid(""), SchedulingReason::InvalidResponse);
        assert_eq!(
            invalid("{\"schemaVersion\":\"v1\"}"),
            SchedulingReason::InvalidResponse
        );
        let mut res = alfred_sim::evaluate(
            &Profile::default_scheduler(),
            &identity("default-scheduler"),
            &req,
            &mut || false,
        )
        .unwrap()
        .result;
        res.request_id = "other".into();
        assert_eq!(
            invalid(&alfred_sim::encode_result(&res)),
            SchedulingReason::InvalidResponse
        );
        res.request_id = req.request_id.clone();
        // A placement on the excluded node.
        res.placements.as_mut().unwrap()[0].node_name = "a".into();
        assert_eq!(
            invalid(&alfred_sim::encode_result(&res)),
            SchedulingReason::InvalidResponse
        );
        let failed = unavailable(&r, SchedulingReason::WorkerFailed);
        assert_eq!(failed.status, SchedulingStatus::Unavailable);
        assert!(failed.placements.is_empty());
    }
}
