//! Validation: every rule of the spec, each shown failing alone and all reported together.

use super::*;
use crate::policy::AdaptivePolicy;
use proptest::prelude::*;

/// A valid policy using every section; each test breaks one thing in it.
pub(crate) const FULL: &str = r#"
apiVersion: plumb-k8s.github.io/v1alpha1
kind: AdaptivePolicy
metadata: {name: llama, namespace: ml}
spec:
  mode: auto
  workload: {name: llama, namespace: ml}
  clusters:
  - name: east
    nodePools: [gpu]
    nodeSelector: {pool: reserved}
    maxReplicas: 10
    region: us-east-1
    costRank: 1
    replicaCapacity: 4
    backend: {name: llama-east, namespace: gw, kind: Service}
    weight: 60
    minWeight: 10
    maxWeight: 90
  - name: west
    maxReplicas: 6
    backend: {name: llama-west}
    weight: 40
  signals:
    demand: sum(rate(requests[1m]))
    pressure: avg(waiting)
    latency: ttft_p95
    latencySLO: 2.5
    errorRate: errors
    errorRateSLO: 0.01
    saturation: queue
    saturationThreshold: "50"
    metrics:
    - {name: kv, query: kv_usage, unit: ratio, meaning: cache use, window: 1m, maxAge: 2m}
  capacity: {replicaCapacity: 5, step: 3}
  escalation: {after: 3m, earlyAfter: 20s, readyTimeout: 15m, cooldown: 90s, calmFor: 20m}
  traffic:
    routes:
    - {cluster: east, namespace: gw, name: llama}
    - {cluster: west, name: llama}
    stepPercent: 5
  placement: StaticFirst
  confidenceThresholdPercent: 80
  experimental:
    adaptive:
      intent: keep latency low
      mode: shadow
      burst: {step: 4, stepPercent: 20}
      chooser: planner
"#;

fn check(text: &str) -> Checked {
    let (policy, checked) = check_document(text);
    assert!(policy.is_some() || !checked.is_valid());
    checked
}

fn lines(checked: &Checked) -> Vec<String> {
    checked.problems.iter().map(ToString::to_string).collect()
}

/// `FULL` with `from` replaced by `to` (which must occur).
fn edited(from: &str, to: &str) -> String {
    assert!(FULL.contains(from), "{from}");
    FULL.replacen(from, to, 1)
}

#[test]
fn the_full_policy_is_valid_with_three_notices() {
    let checked = check(FULL);
    assert_eq!(lines(&checked), Vec::<String>::new());
    let notices: Vec<_> = checked.notices.iter().map(|n| n.path.as_str()).collect();
    assert_eq!(
        notices,
        [
            "spec.signals.metrics",
            "spec.confidenceThresholdPercent",
            "spec.experimental.adaptive"
        ]
    );
    assert!(checked.notices[0].message.contains("ignored by this build"));
}

#[test]
fn an_empty_spec_names_every_required_field() {
    assert_eq!(
        lines(&check("spec: {}")),
        ["spec.workload: required", "spec.clusters: required"]
    );
    let text = "spec:\n  workload: {}\n  clusters:\n  - {}\n  traffic: {}\n";
    assert_eq!(
        lines(&check(text)),
        [
            "spec.workload.name: required",
            "spec.clusters[0].name: required",
            "spec.clusters[0].maxReplicas: required",
            "spec.clusters[0].backend: required when traffic is set",
            "spec.clusters[].weight: Steady weights must sum to 100 when traffic is set (they sum to 0)",
            "spec.traffic.routes: required",
        ]
    );
}

#[test]
fn each_rule_is_named_with_its_path() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "- name: west\n",
            "- name: east\n",
            "spec.clusters[1].name: duplicate cluster name \"east\" (also spec.clusters[0])",
        ),
        (
            "maxReplicas: 6",
            "maxReplicas: -1",
            "spec.clusters[1].maxReplicas: must be at least 0 (is -1)",
        ),
        (
            "    backend: {name: llama-west}\n",
            "",
            "spec.clusters[1].backend: required when traffic is set",
        ),
        (
            "{name: llama-west}",
            "{kind: Service}",
            "spec.clusters[1].backend.name: required",
        ),
        (
            "- {cluster: west, name: llama}",
            "- {cluster: north, name: llama}",
            "spec.traffic.routes[1].cluster: \"north\" is not one of spec.clusters",
        ),
        (
            "- {cluster: west, name: llama}",
            "- {name: llama}",
            "spec.traffic.routes[1].cluster: required",
        ),
        (
            "weight: 60",
            "weight: 101",
            "spec.clusters[0].weight: must be 0 to 100 (is 101)",
        ),
        (
            "minWeight: 10",
            "minWeight: -5",
            "spec.clusters[0].minWeight: must be 0 to 100 (is -5)",
        ),
        (
            "minWeight: 10",
            "minWeight: 95",
            "spec.clusters[0].minWeight: must not exceed maxWeight (95 > 90)",
        ),
        (
            "maxWeight: 90",
            "maxWeight: 50",
            "spec.clusters[0].weight: must not exceed maxWeight (60 > 50)",
        ),
        (
            "weight: 40",
            "weight: 30",
            "spec.clusters[].weight: Steady weights must sum to 100 when traffic is set (they sum to 90)",
        ),
        (
            "step: 3",
            "step: 0",
            "spec.capacity.step: must be at least 1 (is 0)",
        ),
        (
            "stepPercent: 5",
            "stepPercent: 101",
            "spec.traffic.stepPercent: must be 1 to 100 (is 101)",
        ),
        (
            "stepPercent: 5",
            "stepPercent: 0",
            "spec.traffic.stepPercent: must be 1 to 100 (is 0)",
        ),
        (
            "after: 3m",
            "after: -3m",
            "spec.escalation.after: negative duration: \"-3m\" (Go duration, e.g. 30s, 2m, 1h30m)",
        ),
        (
            "calmFor: 20m",
            "calmFor: \"20\"",
            "spec.escalation.calmFor: missing unit (ns, us, ms, s, m or h): \"20\" (Go duration, e.g. 30s, 2m, 1h30m)",
        ),
        (
            "window: 1m",
            "window: 1d",
            "spec.signals.metrics[0].window: unknown unit \"d\" (ns, us, ms, s, m or h): \"1d\" (Go duration, e.g. 30s, 2m, 1h30m)",
        ),
        (
            "saturationThreshold: \"50\"",
            "saturationThreshold: fifty",
            "spec.signals.saturationThreshold: expected a number: \"fifty\" (a quantity, e.g. \"50\" or \"0.9\")",
        ),
        (
            "latencySLO: 2.5",
            "latencySLO: -1",
            "spec.signals.latencySLO: must be a number of at least 0 (is -1)",
        ),
        (
            "replicaCapacity: 4",
            "replicaCapacity: 0",
            "spec.clusters[0].replicaCapacity: must be a number above 0 (is 0)",
        ),
        (
            "{replicaCapacity: 5,",
            "{replicaCapacity: -5,",
            "spec.capacity.replicaCapacity: must be a number above 0 (is -5)",
        ),
        (
            "demand: sum(rate(requests[1m]))",
            "demand: \"\"",
            "spec.signals.demand: must not be empty",
        ),
        (
            "      intent: keep latency low\n",
            "",
            "spec.experimental.adaptive.intent: required",
        ),
        (
            "burst: {step: 4,",
            "burst: {step: 0,",
            "spec.experimental.adaptive.burst.step: must be at least 1 (is 0)",
        ),
        (
            "stepPercent: 20}",
            "stepPercent: 200}",
            "spec.experimental.adaptive.burst.stepPercent: must be 1 to 100 (is 200)",
        ),
        (
            "confidenceThresholdPercent: 80",
            "confidenceThresholdPercent: 101",
            "spec.confidenceThresholdPercent: must be 0 to 100 (is 101)",
        ),
        (
            "{name: kv, query: kv_usage,",
            "{name: kv,",
            "spec.signals.metrics[0].query: required",
        ),
        (
            "nodePools: [gpu]",
            "nodePools: [\"\"]",
            "spec.clusters[0].nodePools[0]: must not be empty",
        ),
    ];
    for (from, to, expected) in cases {
        let text = edited(from, to);
        let got = lines(&check(&text));
        assert!(
            got.iter().any(|l| l == expected),
            "{from} -> {to}: expected {expected:?}, got {got:?}"
        );
    }
}

#[test]
fn unknown_fields_and_wrong_types_are_problems_with_their_path() {
    let checked = check(&edited("costRank: 1", "costRnak: 1"));
    assert_eq!(checked.problems.len(), 1);
    assert_eq!(checked.problems[0].path, "spec.clusters[0].costRnak");
    assert!(
        checked.problems[0]
            .rule
            .contains("unknown field `costRnak`")
    );
    let checked = check(&edited("placement: StaticFirst", "placement: Nearest"));
    assert_eq!(checked.problems[0].path, "spec.placement");
    let checked = check("spec: [");
    assert_eq!(checked.problems[0].path, "document");
}

#[test]
fn counts_are_bounded() {
    let clusters: String = (0..256)
        .map(|i| format!("  - {{name: c{i}, maxReplicas: 1}}\n"))
        .collect();
    let text = format!("spec:\n  workload: {{name: w}}\n  clusters:\n{clusters}");
    assert_eq!(
        lines(&check(&text)),
        ["spec.clusters: must list 1 to 255 clusters (lists 256)"]
    );
    let text = "spec:\n  workload: {name: w}\n  clusters: []\n";
    assert_eq!(
        lines(&check(text)),
        ["spec.clusters: must list 1 to 255 clusters (lists 0)"]
    );
    let routes: String = (0..17)
        .map(|_| "    - {cluster: east, name: r}\n".to_owned())
        .collect();
    let text = edited(
        "    - {cluster: east, namespace: gw, name: llama}\n    - {cluster: west, name: llama}\n",
        &routes,
    );
    assert_eq!(
        lines(&check(&text)),
        ["spec.traffic.routes: must list 1 to 16 routes (lists 17)"]
    );
    let metrics: String = (0..17)
        .map(|i| format!("    - {{name: m{i}, query: q}}\n"))
        .collect();
    let text = edited(
        "    - {name: kv, query: kv_usage, unit: ratio, meaning: cache use, window: 1m, maxAge: 2m}\n",
        &metrics,
    );
    assert_eq!(
        lines(&check(&text)),
        ["spec.signals.metrics: must list at most 16 metrics (lists 17)"]
    );
    let text = edited(
        "intent: keep latency low",
        &format!("intent: {}", "x".repeat(1001)),
    );
    assert_eq!(
        lines(&check(&text)),
        ["spec.experimental.adaptive.intent: must be at most 1000 characters (has 1001)"]
    );
    let text = edited(
        "intent: keep latency low",
        &format!("intent: {}", "é".repeat(1000)),
    );
    assert_eq!(lines(&check(&text)), Vec::<String>::new());
}

#[test]
fn huge_weights_are_reported_not_overflowed() {
    let text = format!(
        "spec:\n  workload: {{name: w}}\n  clusters:\n  - {{name: a, maxReplicas: 1, weight: {max}, backend: {{name: a}}}}\n  - {{name: b, maxReplicas: 1, weight: {max}, backend: {{name: b}}}}\n  traffic: {{routes: [{{cluster: a, name: r}}]}}\n",
        max = i64::MAX
    );
    let got = lines(&check(&text));
    assert!(got.contains(&format!("spec.clusters[].weight: Steady weights must sum to 100 when traffic is set (they sum to {})", i64::MAX)), "{got:?}");
}

#[test]
fn every_problem_is_reported_at_once() {
    let text = edited("maxReplicas: 6", "maxReplicas: -1")
        .replacen("after: 3m", "after: soon", 1)
        .replacen("step: 3", "step: 0", 1);
    let got = lines(&check(&text));
    assert_eq!(got.len(), 3, "{got:?}");
}

#[test]
fn without_traffic_weights_and_backends_are_free() {
    let text =
        "spec:\n  workload: {name: w}\n  clusters:\n  - {name: a, maxReplicas: 2, weight: 30}\n";
    assert!(check(text).is_valid());
    assert!(check(text).notices.is_empty());
}

#[test]
fn the_problems_of_a_broken_policy_read_as_one_line_each() {
    let text = "spec:\n  mode: auto\n  workload: {}\n  clusters:\n  - {name: a}\n  - {name: a, maxReplicas: 3, weight: 120}\n  capacity: {step: 0}\n  escalation: {cooldown: 1x}\n";
    let report = lines(&check(text)).join("\n");
    insta::assert_snapshot!(report);
}

fn arbitrary_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "[a-z0-9.]{0,6}".prop_map(serde_json::Value::from),
        prop_oneof![Just("2m"), Just("-1s"), Just("1.5h"), Just("0"), Just("50")]
            .prop_map(serde_json::Value::from),
    ];
    let keys = prop_oneof![
        Just("spec"),
        Just("workload"),
        Just("name"),
        Just("clusters"),
        Just("maxReplicas"),
        Just("weight"),
        Just("minWeight"),
        Just("maxWeight"),
        Just("traffic"),
        Just("routes"),
        Just("cluster"),
        Just("backend"),
        Just("escalation"),
        Just("after"),
        Just("capacity"),
        Just("step"),
        Just("signals"),
        Just("metrics"),
        Just("saturationThreshold"),
        Just("experimental"),
        Just("adaptive"),
        Just("intent"),
        Just("stepPercent"),
        Just("x"),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map(keys.clone().prop_map(str::to_owned), inner, 0..5)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn checking_never_panics_on_random_documents(value in arbitrary_json()) {
        let text = serde_json::to_string(&value).unwrap();
        let (policy, checked) = check_document(&text);
        for p in &checked.problems {
            prop_assert!(!p.to_string().contains('\n'));
        }
        if let Some(policy) = policy {
            let _ = policy.spec.effective(Some("ns"));
            let _ = crate::hash::member_spec_hash(&policy.spec, None, "a");
        }
    }

    #[test]
    fn checking_never_panics_on_random_yaml(value in arbitrary_json()) {
        let text = serde_saphyr::to_string(&value).unwrap();
        let (_, checked) = check_document(&text);
        for p in &checked.problems {
            prop_assert!(!p.to_string().contains('\n'));
        }
    }

    #[test]
    fn checking_never_panics_on_random_text(text in "\\PC{0,64}") {
        let _ = check_document(&text);
    }

    #[test]
    fn a_spec_reads_back_as_written(weight in 0i64..=100, step in 1i64..50) {
        let text = format!("spec:\n  workload: {{name: w}}\n  clusters:\n  - {{name: a, maxReplicas: 2, weight: {weight}}}\n  capacity: {{step: {step}}}\n  escalation: {{after: 120s}}\n");
        let policy = AdaptivePolicy::from_yaml(&text).unwrap();
        let json = serde_json::to_string(&policy).unwrap();
        let again = AdaptivePolicy::from_json(&json).unwrap();
        prop_assert_eq!(&again, &policy);
        prop_assert!(json.contains("\"120s\""));
    }
}
