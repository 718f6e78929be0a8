//! Each invariant caught on a planted violation (and quiet on the same observation without
//! it).

use std::collections::BTreeMap;
use std::time::Duration;

use plumb_core::hub::{Effect, MemberInput};
use plumb_core::quorum::LeaseRecord;
use plumb_model::spec::Mode;
use plumb_model::{AdaptivePolicySpec, Intent, Report, Timestamp};

use super::{Checker, Served, StepSeen, names};

fn t0() -> Timestamp {
    Timestamp::from_unix_secs(1_790_000_000)
}

fn spec(mode: Mode) -> AdaptivePolicySpec {
    let mut spec: AdaptivePolicySpec = serde_json::from_str(
        r#"{"workload": {"name": "llm"}, "clusters": [
            {"name": "a", "maxReplicas": 4, "weight": 60, "minWeight": 10},
            {"name": "b", "maxReplicas": 6, "weight": 40, "maxWeight": 80}],
            "traffic": {"routes": [{"cluster": "a", "name": "r"}]}}"#,
    )
    .unwrap_or_default();
    spec.mode = Some(mode);
    spec
}

fn caught(c: &Checker) -> Vec<&'static str> {
    c.violations.iter().map(|v| v.invariant).collect()
}

fn lease(holder: &str, renewed: Timestamp) -> LeaseRecord {
    LeaseRecord {
        holder: Some(holder.into()),
        acquire_time: Some(renewed),
        renew_time: Some(renewed),
        lease_duration_seconds: 15,
        transitions: 1,
    }
}

fn intent(hub: &str, replicas: u32, expires: Timestamp) -> Intent {
    Intent {
        replicas,
        expires: Some(expires),
        hub: Some(hub.into()),
        ..Intent::default()
    }
}

#[test]
fn two_holders_of_one_term_or_two_leaders_at_once_are_caught() {
    let mut c = Checker::default();
    c.term_held(3, "a/plumb-0");
    c.term_held(3, "a/plumb-0");
    c.term_held(4, "b/plumb-0");
    c.leaders(&["b/plumb-0".into()]);
    assert!(c.violations.is_empty());
    c.term_held(4, "c/plumb-0");
    c.leaders(&["b/plumb-0".into(), "c/plumb-0".into()]);
    assert_eq!(caught(&c), [names::ONE_HUB, names::ONE_HUB]);
}

#[test]
fn a_step_by_an_agent_that_does_not_lead_is_caught() {
    let mut c = Checker::default();
    let s = spec(Mode::Auto);
    let members = BTreeMap::new();
    let step = StepSeen {
        policy: "ns/p",
        hub: "a/plumb-0",
        leading: false,
        spec: &s,
        members: &members,
        now: t0(),
        effects: &[],
    };
    c.step(&step);
    assert_eq!(caught(&c), [names::ONE_HUB]);
}

fn served<'a>(
    floor: u32,
    intent: Option<&'a Intent>,
    lease: Option<&'a LeaseRecord>,
    now: Timestamp,
) -> Served<'a> {
    Served {
        member: "a",
        policy: "ns/p",
        floor,
        intent,
        lease,
        mode: Mode::Auto,
        max_replicas: Some(4),
        member_now: now,
    }
}

#[test]
fn a_floor_served_from_a_fenced_intent_is_caught() {
    let now = t0();
    let later = now.plus(Duration::from_secs(60));
    let ok_intent = intent("a/plumb-0", 3, later);
    let ok_lease = lease("a/plumb-0", now);
    let mut c = Checker::default();
    c.lease_written("a/plumb-0");
    c.served(&served(3, Some(&ok_intent), Some(&ok_lease), now));
    assert!(c.violations.is_empty(), "{:?}", c.violations);
    // the Lease names another hub
    let other = lease("b/plumb-0", now);
    c.served(&served(3, Some(&ok_intent), Some(&other), now));
    // the intent expired by the member's clock
    c.served(&served(3, Some(&ok_intent), Some(&ok_lease), later));
    // shadow
    let mut s = served(3, Some(&ok_intent), Some(&ok_lease), now);
    s.mode = Mode::Shadow;
    c.served(&s);
    assert_eq!(caught(&c), [names::FENCED; 3]);
}

#[test]
fn a_floor_served_long_after_its_hub_last_wrote_a_lease_is_caught() {
    let now = t0();
    let i = intent("a/plumb-0", 2, now.plus(Duration::from_secs(300)));
    // the member's clock and Lease say valid, but the hub wrote its last Lease 20 s ago
    let l = lease("a/plumb-0", now);
    let mut c = Checker::default();
    c.lease_written("a/plumb-0");
    c.set_time(20_000);
    c.served(&served(2, Some(&i), Some(&l), now));
    assert_eq!(caught(&c), [names::FENCED]);
}

#[test]
fn a_floor_above_max_replicas_is_caught_served_or_written() {
    let now = t0();
    let i = intent("a/plumb-0", 9, now.plus(Duration::from_secs(300)));
    let l = lease("a/plumb-0", now);
    let mut c = Checker::default();
    c.lease_written("a/plumb-0");
    c.served(&served(4, Some(&i), Some(&l), now));
    assert!(c.violations.is_empty(), "{:?}", c.violations);
    c.served(&served(5, Some(&i), Some(&l), now));
    let s = spec(Mode::Auto);
    let members = BTreeMap::new();
    let effects = [Effect::WriteIntent {
        cluster: "b".into(),
        intent: Some(intent("a/plumb-0", 7, now)),
        renewal: false,
    }];
    c.step(&StepSeen {
        policy: "ns/p",
        hub: "a/plumb-0",
        leading: true,
        spec: &s,
        members: &members,
        now,
        effects: &effects,
    });
    assert_eq!(caught(&c), [names::MAX_REPLICAS, names::MAX_REPLICAS]);
}

fn weights_step(c: &mut Checker, weights: &[(&str, u32)]) {
    let s = spec(Mode::Auto);
    let members = BTreeMap::new();
    let effects = [Effect::WriteWeights {
        weights: weights
            .iter()
            .map(|(k, v)| ((*k).to_string(), *v))
            .collect(),
    }];
    c.step(&StepSeen {
        policy: "ns/p",
        hub: "a/plumb-0",
        leading: true,
        spec: &s,
        members: &members,
        now: t0(),
        effects: &effects,
    });
}

#[test]
fn weights_not_summing_to_100_or_out_of_bounds_are_caught() {
    let mut c = Checker::default();
    weights_step(&mut c, &[("a", 30), ("b", 70)]);
    assert!(c.violations.is_empty(), "{:?}", c.violations);
    weights_step(&mut c, &[("a", 30), ("b", 60)]);
    weights_step(&mut c, &[("a", 5), ("b", 95)]);
    weights_step(&mut c, &[("a", 100)]);
    assert_eq!(caught(&c), [names::WEIGHTS; 3]);
}

#[test]
fn an_intent_or_weight_write_in_shadow_is_caught() {
    let mut c = Checker::default();
    let s = spec(Mode::Shadow);
    let members = BTreeMap::new();
    let effects = [
        Effect::WriteIntent {
            cluster: "a".into(),
            intent: None,
            renewal: false,
        },
        Effect::WriteWeights {
            weights: BTreeMap::from([("a".into(), 60), ("b".into(), 40)]),
        },
    ];
    c.step(&StepSeen {
        policy: "ns/p",
        hub: "a/plumb-0",
        leading: true,
        spec: &s,
        members: &members,
        now: t0(),
        effects: &effects,
    });
    c.store_write("ns/p", "intent", Mode::Auto);
    c.store_write("ns/p", "weights", Mode::Shadow);
    assert_eq!(caught(&c), [names::SHADOW; 3]);
}

fn release_step(c: &mut Checker, report_age: Option<u64>, hash: &str) {
    let now = t0();
    let s = spec(Mode::Auto);
    let report = report_age.map(|age| Report {
        time: Some(now.minus(Duration::from_secs(age))),
        spec_hash: hash.into(),
        ..Report::default()
    });
    let members = BTreeMap::from([(
        "b".to_string(),
        MemberInput {
            report,
            intent: Some(intent("a/plumb-0", 4, now)),
            expected_hash: "sha256:x".into(),
        },
    )]);
    let effects = [Effect::WriteIntent {
        cluster: "b".into(),
        intent: Some(intent("a/plumb-0", 2, now)),
        renewal: false,
    }];
    c.step(&StepSeen {
        policy: "ns/p",
        hub: "a/plumb-0",
        leading: true,
        spec: &s,
        members: &members,
        now,
        effects: &effects,
    });
}

#[test]
fn a_release_without_a_fresh_report_is_caught() {
    let mut c = Checker::default();
    release_step(&mut c, Some(30), "sha256:x");
    assert!(c.violations.is_empty(), "{:?}", c.violations);
    release_step(&mut c, Some(121), "sha256:x");
    release_step(&mut c, None, "sha256:x");
    release_step(&mut c, Some(30), "sha256:other");
    assert_eq!(caught(&c), [names::RELEASE; 3]);
}

fn decision_line(id: &str, changed: bool) -> plumb_core::hub::DecisionLine {
    use plumb_core::hub::ClusterState;
    let state = |floor| ClusterState {
        floor,
        static_: false,
        weight: None,
    };
    plumb_core::hub::DecisionLine {
        kind: "decision",
        decision_id: id.into(),
        time: t0(),
        policy: "ns/p".into(),
        hub: "a/plumb-0".into(),
        mode: Mode::Auto,
        reports: BTreeMap::new(),
        before: BTreeMap::from([("b".into(), state(0))]),
        after: BTreeMap::from([("b".into(), state(u32::from(changed) * 2))]),
        phase: plumb_model::Phase::Escalated,
        action: "AddCapacity".into(),
        source: "rule",
        message: String::new(),
        held: Vec::new(),
        out_of_sync: Vec::new(),
        applied: true,
        error: None,
    }
}

fn outcome_line(id: &str, final_: bool) -> plumb_core::hub::OutcomeLine {
    plumb_core::hub::OutcomeLine {
        kind: "outcome",
        decision_id: id.into(),
        time: t0(),
        policy: "ns/p".into(),
        after_seconds: 900,
        final_,
        applied: true,
        clusters: BTreeMap::new(),
        ready_after_seconds: BTreeMap::new(),
        followed_by: Vec::new(),
    }
}

#[test]
fn a_decision_without_its_final_outcome_line_is_caught_unless_its_policy_went() {
    let mut c = Checker::default();
    c.decision(&decision_line("1-aaaaaaaa", true));
    c.decision(&decision_line("2-bbbbbbbb", true));
    c.decision(&decision_line("3-cccccccc", false)); // a phase change: not followed
    c.outcome(&outcome_line("1-aaaaaaaa", true));
    c.outcome(&outcome_line("2-bbbbbbbb", false));
    c.finish(0);
    assert_eq!(caught(&c), [names::LOST]);
    assert!(c.violations[0].detail.contains("2-bbbbbbbb"));
    assert!(!c.violations[0].detail.contains("3-cccccccc"));
    let mut c = Checker::default();
    c.decision(&decision_line("2-bbbbbbbb", true));
    c.policy_deleted("ns/p");
    c.finish(0);
    assert!(c.violations.is_empty());
    // decided after the cut-off: not judged yet
    let mut c = Checker::default();
    c.set_time(10_000);
    c.decision(&decision_line("2-bbbbbbbb", true));
    c.finish(5_000);
    assert!(c.violations.is_empty());
}
