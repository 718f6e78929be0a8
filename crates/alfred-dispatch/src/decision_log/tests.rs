//! The builders and the tracker on a short scripted sequence.

use std::cell::RefCell;
use std::collections::BTreeMap;

use alfred_model::reason::{AdvisoryReason, RowReason, SchedulingReason};
use alfred_model::record::{Candidate, Policy, Verdict};
use alfred_model::snapshot::{
    ComponentKind, DeploymentMode, Node, PendingPod, Pod, PoolAttribution,
};

use super::*;
use crate::simulation::sim::ProfileIdentity;

const T0: i64 = 1_790_000_000;

fn at(secs: i64) -> Timestamp {
    Timestamp::from_unix_secs(T0 + secs)
}

fn gauge(pool: &str, score: f64) -> PoolGauge {
    PoolGauge {
        pool: pool.into(),
        score,
        observed: vec![(8, score)],
        reclaimable: score / 2.0,
        pending_pressure: 0.25,
    }
}

fn candidate(w: &str, from: &str, executable: bool, advisory: Option<AdvisoryReason>) -> Candidate {
    Candidate {
        policy: Policy::Defragmentation,
        workload: format!("ns/{w}"),
        component: ComponentKind::Engine,
        instance: 0,
        mode: DeploymentMode::OMENative,
        reason: RowReason::Fragmentation,
        from_node: from.into(),
        hint_target_nodes: vec!["n1".into()],
        placement_target_nodes: vec![],
        executable,
        advisory_reason: advisory,
        surge_shaped: true,
        footprint_gpus: 1,
        benefit: 0.5,
        cost: 0.15,
        score: 0.35,
        emergency: false,
        pod_gpus: vec![1],
        scheduling: None,
        plan: None,
    }
}

fn request(w: &str, uuid: &str) -> Effect {
    Effect::RequestMigration {
        namespace: "ns".into(),
        name: w.into(),
        uid: format!("uid-{w}"),
        resource_version: "7".into(),
        annotation: "ome.io/migrate".into(),
        payload: format!("{{\"uuid\":\"{uuid}\"}}"),
        uuid: uuid.into(),
    }
}

fn node(name: &str, pool: &str) -> Node {
    Node {
        name: name.into(),
        pool: Some(pool.into()),
        ..Node::default()
    }
}

fn pending(name: &str, since: i64, pools: &[&str]) -> PendingPod {
    PendingPod {
        namespace: "ns".into(),
        name: name.into(),
        gpus_needed: 8,
        pending_since: at(since),
        pools: if pools.is_empty() {
            PoolAttribution::Any
        } else {
            PoolAttribution::Pools(pools.iter().map(|p| p.to_string()).collect())
        },
        ..PendingPod::default()
    }
}

fn snapshot() -> ClusterSnapshot {
    ClusterSnapshot {
        observed_at: at(0),
        nodes: vec![node("n1", "A100"), node("n2", "A100"), node("n3", "H100")],
        pending_pods: vec![
            pending("big-b", -300, &["A100"]),
            pending("big-a", -300, &[]),
            pending("old", -900, &["A100"]),
            pending("other", -1000, &["H100"]),
        ],
        ..ClusterSnapshot::default()
    }
}

#[test]
fn decision_line_lists_executable_candidates_counts_advice_and_the_dispatch() {
    let explain = vec![
        Explained {
            candidate: candidate("a", "n2", true, None),
            verdict: Some(Verdict {
                admitted: true,
                target: "n1".into(),
                request_uuid: "u-1".into(),
                ..Verdict::default()
            }),
        },
        Explained {
            candidate: candidate("b", "n2", false, Some(AdvisoryReason::NoSurgeHeadroom)),
            verdict: None,
        },
        Explained {
            candidate: candidate("c", "n3", false, Some(AdvisoryReason::NoSurgeHeadroom)),
            verdict: None,
        },
    ];
    let sims = vec![SimulationRecord {
        request_id: "u-1".into(),
        purpose: "execution".into(),
        workload: "ns/a".into(),
        from_node: "n2".into(),
        hint_nodes: vec!["n1".into()],
        scheduler_name: "default-scheduler".into(),
        configuration_id: "cfg-1".into(),
        status: "Feasible".into(),
        placements: vec!["n1".into()],
    }];
    let effects = vec![request("a", "u-1")];
    let snap = snapshot();
    let pools = touched_pools(&snap, &explain, &effects);
    assert_eq!(pools, vec!["A100".to_owned()]);
    let refs = pending_for(&snap, &pools, 2);
    let line = decision_line(
        "000001-u1",
        at(0),
        "execute",
        &[gauge("A100", 0.4), gauge("H100", 0.1)],
        &explain,
        &sims,
        &effects,
        &refs,
        false,
        &[],
    );
    insta::assert_json_snapshot!("decision_line", line);
    assert!(decided_something(&explain, &effects));
    assert!(!decided_something(&[], &[]));
    assert!(should_follow(Mode::Execute, &explain, &effects));
    assert!(!should_follow(Mode::Execute, &explain, &[]));
}

#[test]
fn pending_for_takes_the_oldest_of_the_touched_pools() {
    let snap = snapshot();
    let names = |pools: &[&str], limit| {
        let pools: Vec<String> = pools.iter().map(|p| p.to_string()).collect();
        pending_for(&snap, &pools, limit)
            .into_iter()
            .map(|p| p.pod)
            .collect::<Vec<_>>()
    };
    // Unattributed pods count in every pool; ties by name.
    assert_eq!(names(&["A100"], 10), ["ns/old", "ns/big-a", "ns/big-b"]);
    assert_eq!(names(&["A100"], 2), ["ns/old", "ns/big-a"]);
    assert_eq!(names(&["H100"], 10), ["ns/other", "ns/big-a"]);
    assert!(names(&[], 10).is_empty());
}

#[test]
fn recommend_only_planned_moves_are_followed_and_touch_their_pools() {
    let explain = vec![
        Explained {
            candidate: candidate(
                "a",
                "n3",
                false,
                Some(AdvisoryReason::SimulationRecommendOnly),
            ),
            verdict: None,
        },
        Explained {
            candidate: candidate("b", "n1", false, Some(AdvisoryReason::VolumePinned)),
            verdict: None,
        },
    ];
    assert!(should_follow(Mode::RecommendOnly, &explain, &[]));
    assert!(!should_follow(Mode::RecommendOnly, &explain[1..], &[]));
    assert_eq!(
        touched_pools(&snapshot(), &explain, &[]),
        vec!["H100".to_owned()]
    );
}

struct Inner {
    requests: BTreeMap<String, RequestFact>,
    pods: BTreeMap<String, PodFact>,
    score: f64,
    pools_asked: usize,
}

/// Facts scripted between observations.
struct Scripted(RefCell<Inner>);

impl Scripted {
    fn new() -> Scripted {
        Scripted(RefCell::new(Inner {
            requests: BTreeMap::new(),
            pods: BTreeMap::new(),
            score: 0.5,
            pools_asked: 0,
        }))
    }
    fn request(&self, uuid: &str, phase: &str, completed_at: Option<Timestamp>) {
        self.0.borrow_mut().requests.insert(
            uuid.into(),
            RequestFact {
                phase: phase.into(),
                completed: phase == "completed",
                completed_at,
                target: (phase == "completed").then(|| "n1".to_owned()),
            },
        );
    }
    fn pod(&self, pod: &str, node: Option<&str>) {
        let mut i = self.0.borrow_mut();
        match node {
            Some(n) => i.pods.insert(
                pod.into(),
                PodFact {
                    placed: true,
                    node: Some(n.into()),
                    placed_at: None,
                },
            ),
            None => i.pods.remove(pod),
        };
    }
}

impl OutcomeFacts for Scripted {
    fn request(&self, uuid: &str, _workload: &str) -> Option<RequestFact> {
        self.0.borrow().requests.get(uuid).cloned()
    }
    fn pending_pod(&self, pod: &str) -> Option<PodFact> {
        Some(self.0.borrow().pods.get(pod).cloned().unwrap_or(PodFact {
            placed: false,
            node: None,
            placed_at: None,
        }))
    }
    fn pools(&self) -> Vec<PoolGauge> {
        let mut i = self.0.borrow_mut();
        i.pools_asked += 1;
        vec![gauge("A100", i.score)]
    }
}

fn tracked(
    id: &str,
    secs: i64,
    requests: &[(&str, &str)],
    pool: &str,
    pending: &[&str],
) -> TrackedDecision {
    TrackedDecision {
        decision_id: id.into(),
        time: at(secs),
        applied: !requests.is_empty(),
        requests: requests
            .iter()
            .map(|(u, w)| (u.to_string(), w.to_string()))
            .collect(),
        pools: vec![pool.into()],
        pending: pending.iter().map(|p| p.to_string()).collect(),
    }
}

#[test]
fn tracker_writes_outcomes_at_1_5_15_minutes_with_what_followed() {
    let facts = Scripted::new();
    let mut t = OutcomeTracker::new();
    let mut log: Vec<Value> = Vec::new();
    // 0 s: decision 1 moves ns/a in A100 for the waiting ns/big.
    t.record(tracked(
        "000001",
        0,
        &[("u-1", "ns/a")],
        "A100",
        &["ns/big"],
    ));
    facts.request("u-1", "submitted", None);
    assert_eq!(t.next_due(), Some(at(60)));
    // 30 s: nothing due; the pools are not even asked.
    assert!(t.observe(at(30), &facts).is_empty());
    assert_eq!(facts.0.borrow().pools_asked, 0);
    // 60 s: acknowledged.
    facts.request("u-1", "acknowledged", None);
    log.extend(t.observe(at(60), &facts));
    // 150 s: completed (ready at 140 s), the waiting pod gets n2 (seen now).
    facts.request("u-1", "completed", Some(at(140)));
    facts.pod("ns/big", Some("n2"));
    facts.0.borrow_mut().score = 0.2;
    assert!(t.observe(at(150), &facts).is_empty());
    // 180 s: decision 2 (same pool), 200 s: decision 3 (recommend-only style, other pool).
    t.record(tracked("000002", 180, &[("u-2", "ns/b")], "A100", &[]));
    t.record(tracked("000003", 200, &[], "H100", &["ns/other"]));
    // 320 s: decision 1 at 300 s; decisions 2 and 3 at 60 s.
    log.extend(t.observe(at(320), &facts));
    // The pod leaves the pending list and the snapshot (finished): still placed.
    facts.pod("ns/big", None);
    // Observations stop until 700 s: decisions 2 and 3 at 300 s, written late (their `time`
    // says when).
    log.extend(t.observe(at(700), &facts));
    assert_eq!(t.open(), 3);
    // 1,200 s: every final line; decision 1 was followed by decision 2 (same pool), not 3.
    log.extend(t.observe(at(1200), &facts));
    assert_eq!(t.open(), 0);
    assert_eq!(t.next_due(), None);
    insta::assert_json_snapshot!("tracker_sequence", log);
    let finals = log.iter().filter(|l| l["final"] == true).count();
    assert_eq!(finals, 3);
}

#[test]
fn snapshot_facts_read_pods_and_reconcile_the_journal_copy() {
    let mut snap = snapshot();
    snap.pods.push(Pod {
        namespace: "ns".into(),
        name: "placed".into(),
        node: "n1".into(),
        started_at: Some(at(42)),
        ..Pod::default()
    });
    let config = Config::default();
    let facts = SnapshotFacts::new(&snap, None, &config, Duration::from_secs(120));
    assert_eq!(
        facts.pending_pod("ns/big-a"),
        Some(PodFact {
            placed: false,
            node: None,
            placed_at: None
        })
    );
    assert_eq!(
        facts.pending_pod("ns/placed"),
        Some(PodFact {
            placed: true,
            node: Some("n1".into()),
            placed_at: Some(at(42))
        })
    );
    assert_eq!(facts.pending_pod("ns/gone"), None);
    assert_eq!(facts.pending_pod("no-slash"), None);
    // No journal: nothing known of requests.
    assert_eq!(facts.request("u-1", "ns/a"), None);
    let journal = Journal::empty();
    let facts = SnapshotFacts::new(&snap, Some(&journal), &config, Duration::from_secs(120));
    assert_eq!(facts.request("u-1", "ns/a"), None);
}

#[test]
fn the_recording_simulator_forwards_and_records() {
    struct Never;
    impl Simulator for Never {
        fn simulate(&mut self, _: &MoveSimulation<'_>) -> SimulationOutcome {
            SimulationOutcome::of(SchedulingReason::NoFeasiblePlacement)
        }
    }
    let snap = snapshot();
    let mut inner = Never;
    let mut rec = RecordingSimulator::new(&mut inner);
    let out = rec.simulate(&MoveSimulation {
        request_id: "recommendation-x-0".into(),
        purpose: SimulationPurpose::Prediction,
        snapshot: &snap,
        workload: "ns/a".into(),
        component: ComponentKind::Engine,
        instance: 0,
        from_node: "n2".into(),
        excluded_nodes: vec!["n2".into()],
        hint_nodes: vec![],
        profile: ProfileIdentity {
            scheduler_name: "default-scheduler".into(),
            configuration_id: "cfg".into(),
            ..ProfileIdentity::default()
        },
        require_gang: false,
    });
    assert_eq!(out.reason, SchedulingReason::NoFeasiblePlacement);
    assert_eq!(rec.records.len(), 1);
    let r = &rec.records[0];
    assert_eq!(
        (
            r.purpose.as_str(),
            r.status.as_str(),
            r.configuration_id.as_str()
        ),
        ("prediction", "Infeasible", "cfg")
    );
}

fn plan_record(id: &str, phase: alfred_model::plan::PlanPhase) -> PlanRecord {
    PlanRecord {
        benefit_milli_gpus: 0,
        cost_milli_gpus: 0,
        id: id.into(),
        pool: "H100".into(),
        node: "g-07".into(),
        node_uid: "uid-g-07".into(),
        pod: "prod/big-0".into(),
        pod_uid: "uid-big-0".into(),
        gpus: 8,
        protection: alfred_model::plan::DrainProtectionWire::Nominate,
        steps: vec![alfred_model::plan::PlanStepRecord {
            workload: "chat/a".into(),
            component: ComponentKind::Engine,
            instance: 0,
            gpus: 1,
            request_uuid: "u-1".into(),
        }],
        phase,
        reason: None,
        started_at: at(0),
        deadline: at(3600),
        ended_at: None,
        pending_since: at(-47 * 60),
    }
}

#[test]
fn a_plan_gets_a_line_when_it_starts_and_an_outcome_line_when_it_ends() {
    use alfred_model::plan::PlanPhase;
    let started = plan_record("dp-1", PlanPhase::Protecting);
    let view = PlanView {
        id: "dp-1".into(),
        pool: "H100".into(),
        node: "g-07".into(),
        pod: "prod/big-0".into(),
        pod_gpus: 8,
        pending_minutes: 47,
        phase: "protecting".into(),
        reason: None,
        moves: vec![],
        benefit_gpus: 5.2,
        cost_gpus: 1.2,
        summary: "moving chat/a (1 GPU) g-07 → g-02 frees g-07 for prod/big-0".into(),
        protection_left: None,
    };
    let lines = plan_lines(at(0), &[], std::slice::from_ref(&started), &[view]);
    assert_eq!(lines.len(), 1);
    let l = &lines[0];
    assert_eq!(l["kind"], "plan");
    assert_eq!(l["planId"], "dp-1");
    assert_eq!(l["pendingMinutes"], 47);
    assert_eq!(l["benefitGpus"], 5.2);
    assert_eq!(l["stepsRequested"], 1);
    assert!(l["summary"].as_str().unwrap().starts_with("moving chat/a"));
    // Going on: no line.
    let going = plan_record("dp-1", PlanPhase::Draining);
    assert!(
        plan_lines(
            at(300),
            std::slice::from_ref(&started),
            std::slice::from_ref(&going),
            &[]
        )
        .is_empty()
    );
    // Ended: the pod bound to the plan's node 12 minutes after the start.
    let mut done = plan_record("dp-1", PlanPhase::Completed);
    done.reason = Some(PlanEndReason::PodBound);
    done.ended_at = Some(at(720));
    let lines = plan_lines(
        at(720),
        std::slice::from_ref(&going),
        std::slice::from_ref(&done),
        &[],
    );
    assert_eq!(lines.len(), 1);
    let o = &lines[0];
    assert_eq!(o["kind"], "planOutcome");
    assert_eq!(o["outcome"], "completed");
    assert_eq!(o["reason"], "PodBound");
    assert_eq!(o["podBound"], true);
    assert_eq!(o["boundOn"], "planNode");
    assert_eq!(o["minutesSinceStart"], 12);
    assert_eq!(o["podWaitedMinutes"], 59);
    // Ended already: no second outcome line.
    assert!(plan_lines(at(1020), &[done.clone()], &[done], &[]).is_empty());
    // Abandoned because the pod bound elsewhere; and abandoned with the pod still waiting.
    for (why, bound, on) in [
        (
            PlanEndReason::PodBoundElsewhere,
            true,
            Value::from("elsewhere"),
        ),
        (PlanEndReason::DeadlineExceeded, false, Value::Null),
    ] {
        let mut gone = plan_record("dp-1", PlanPhase::Abandoned);
        gone.reason = Some(why);
        let o = &plan_lines(at(900), std::slice::from_ref(&going), &[gone], &[])[0];
        assert_eq!(o["outcome"], "abandoned");
        assert_eq!(o["podBound"], bound);
        assert_eq!(o["boundOn"], on);
    }
    // A plan id reused after its earlier plan ended starts anew.
    let mut ended = plan_record("dp-1", PlanPhase::Abandoned);
    ended.reason = Some(PlanEndReason::PodGone);
    let again = plan_lines(at(1200), &[ended], std::slice::from_ref(&started), &[]);
    assert_eq!(again[0]["kind"], "plan");
    assert_eq!(again[0]["summary"], Value::Null);
}
