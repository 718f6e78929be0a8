//! The agent's Prometheus metrics: exactly the seed's table (docs/plumb/metrics-and-events.md), plus the process
//! metrics the metrics-endpoint crate renders beside them. One [`AgentMetrics`] per process,
//! shared (cheaply cloned) by the member and hub loops; `/metrics` renders [`AgentMetrics::render`].
//!
//! Every series starts at a value a fresh process can honestly show: `plumb_hub_leading` 0,
//! `plumb_fleet_members` 1 (itself), the policy-labelled families empty until a policy is seen.

use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// `policy` (`<namespace>/<name>`).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PolicyLabel {
    /// `<namespace>/<name>`.
    pub policy: String,
}

/// `plumb_hub_decisions_total`'s labels.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DecisionLabels {
    /// `<namespace>/<name>`.
    pub policy: String,
    /// The decision's action (`AddCapacity`, `ShiftTraffic`, …, or a combination).
    pub action: String,
    /// What decided (`rule`).
    pub source: String,
    /// `"true"` or `"false"`.
    pub applied: String,
}

/// A request duration's `result` (`ok` or `error`).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabel {
    /// `ok` or `error`.
    pub result: String,
}

/// Request durations: 0.05 s to about 60 s, roughly doubling (docs/plumb/metrics-and-events.md).
const REQUEST_BUCKETS: [f64; 11] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 60.0];
/// Time to ready: 15 s to 1 h, roughly doubling.
const READY_BUCKETS: [f64; 9] = [15.0, 30.0, 60.0, 120.0, 240.0, 480.0, 900.0, 1800.0, 3600.0];

fn ready_histogram() -> Histogram {
    Histogram::new(READY_BUCKETS)
}

fn request_histogram() -> Histogram {
    Histogram::new(REQUEST_BUCKETS)
}

/// Every metric of the agent.
#[derive(Clone)]
pub struct AgentMetrics {
    registry: Arc<Registry>,
    /// `plumb_hub_leading`: 1 while this agent is the fleet's hub.
    pub hub_leading: Gauge,
    /// `plumb_fleet_members`: the voters this agent counts, itself included.
    pub fleet_members: Gauge,
    /// `plumb_fleet_escalated{policy}` (hub only).
    pub fleet_escalated: Family<PolicyLabel, Gauge>,
    /// `plumb_fleet_members_out_of_sync{policy}` (hub only).
    pub members_out_of_sync: Family<PolicyLabel, Gauge>,
    /// `plumb_hub_decisions_total{policy,action,source,applied}`.
    pub decisions: Family<DecisionLabels, Counter>,
    /// `plumb_hub_step_errors_total{policy}`: steps that failed to read or write a member or
    /// a route.
    pub step_errors: Family<PolicyLabel, Counter>,
    /// `plumb_model_request_duration_seconds{result}` (empty in this build: no model runs).
    pub model_requests: Family<ResultLabel, Histogram>,
    /// `plumb_planner_request_duration_seconds{result}` (empty in this build: D.6).
    pub planner_requests: Family<ResultLabel, Histogram>,
    /// `plumb_decision_time_to_ready_seconds{policy}`.
    pub time_to_ready: Family<PolicyLabel, Histogram>,
    /// `plumb_member_needed_replicas{policy}`.
    pub needed_replicas: Family<PolicyLabel, Gauge>,
    /// `plumb_member_static_room_replicas{policy}`.
    pub static_room_replicas: Family<PolicyLabel, Gauge>,
}

impl std::fmt::Debug for AgentMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentMetrics").finish_non_exhaustive()
    }
}

impl Default for AgentMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl AgentMetrics {
    /// A fresh registry holding the seed's metrics (names and help as docs/plumb/metrics-and-events.md).
    pub fn new() -> AgentMetrics {
        let mut registry = Registry::default();
        let hub_leading = Gauge::default();
        let fleet_members = Gauge::default();
        fleet_members.set(1);
        let fleet_escalated = Family::<PolicyLabel, Gauge>::default();
        let members_out_of_sync = Family::<PolicyLabel, Gauge>::default();
        let decisions = Family::<DecisionLabels, Counter>::default();
        let step_errors = Family::<PolicyLabel, Counter>::default();
        let model_requests =
            Family::<ResultLabel, Histogram>::new_with_constructor(request_histogram as fn() -> _);
        let planner_requests =
            Family::<ResultLabel, Histogram>::new_with_constructor(request_histogram as fn() -> _);
        let time_to_ready =
            Family::<PolicyLabel, Histogram>::new_with_constructor(ready_histogram as fn() -> _);
        let needed_replicas = Family::<PolicyLabel, Gauge>::default();
        let static_room_replicas = Family::<PolicyLabel, Gauge>::default();
        registry.register(
            "plumb_hub_leading",
            "1 while this agent is the fleet's hub",
            hub_leading.clone(),
        );
        registry.register(
            "plumb_fleet_members",
            "Members this agent counts in the hub election, itself included",
            fleet_members.clone(),
        );
        registry.register(
            "plumb_fleet_escalated",
            "1 while the policy's fleet is Escalated (hub only)",
            fleet_escalated.clone(),
        );
        registry.register(
            "plumb_fleet_members_out_of_sync",
            "Members whose copy of the policy differs in a hashed field (hub only)",
            members_out_of_sync.clone(),
        );
        registry.register(
            "plumb_hub_decisions",
            "Hub decisions that changed something",
            decisions.clone(),
        );
        registry.register(
            "plumb_hub_step_errors",
            "Hub steps that failed to read or write a member or a route",
            step_errors.clone(),
        );
        registry.register(
            "plumb_model_request_duration_seconds",
            "Ranking model requests (none in this build)",
            model_requests.clone(),
        );
        registry.register(
            "plumb_planner_request_duration_seconds",
            "Planner requests (none in this build)",
            planner_requests.clone(),
        );
        registry.register(
            "plumb_decision_time_to_ready_seconds",
            "From a decision raising a floor to that many ready replicas",
            time_to_ready.clone(),
        );
        registry.register(
            "plumb_member_needed_replicas",
            "Replicas this member needs for the policy (its report)",
            needed_replicas.clone(),
        );
        registry.register(
            "plumb_member_static_room_replicas",
            "Replicas that fit on this member's existing nodes (its report)",
            static_room_replicas.clone(),
        );
        AgentMetrics {
            registry: Arc::new(registry),
            hub_leading,
            fleet_members,
            fleet_escalated,
            members_out_of_sync,
            decisions,
            step_errors,
            model_requests,
            planner_requests,
            time_to_ready,
            needed_replicas,
            static_room_replicas,
        }
    }

    /// Applies one of the hub step's metric effects for `policy`.
    pub fn apply(&self, policy: &str, metric: &plumb_core::hub::Metric) {
        use plumb_core::hub::Metric;
        let label = PolicyLabel {
            policy: policy.to_owned(),
        };
        match metric {
            Metric::FleetEscalated { value } => {
                self.fleet_escalated
                    .get_or_create(&label)
                    .set(i64::from(*value));
            }
            Metric::MembersOutOfSync { value } => {
                self.members_out_of_sync
                    .get_or_create(&label)
                    .set(i64::from(*value));
            }
            #[allow(clippy::cast_precision_loss)]
            Metric::TimeToReady { seconds } => {
                self.time_to_ready
                    .get_or_create(&label)
                    .observe(*seconds as f64);
            }
            Metric::Decision {
                action,
                source,
                applied,
            } => {
                self.decisions
                    .get_or_create(&DecisionLabels {
                        policy: policy.to_owned(),
                        action: action.clone(),
                        source: source.clone(),
                        applied: applied.to_string(),
                    })
                    .inc();
            }
        }
    }

    /// Forgets every series of `policy` (deleted, or no longer led by this agent).
    pub fn forget_policy(&self, policy: &str) {
        let label = PolicyLabel {
            policy: policy.to_owned(),
        };
        self.fleet_escalated.remove(&label);
        self.members_out_of_sync.remove(&label);
    }

    /// The exposition (OpenMetrics text) of the seed's metrics followed by the process's.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        let process = metrics_endpoint::process_metrics();
        match out.strip_suffix("# EOF\n") {
            Some(body) => format!("{body}{process}# EOF\n"),
            None => format!("{out}{process}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_core::hub::Metric;

    #[test]
    fn a_fresh_agent_shows_no_hub_and_a_fleet_of_one() {
        let text = AgentMetrics::new().render();
        assert!(text.contains("plumb_hub_leading 0\n"), "{text}");
        assert!(text.contains("plumb_fleet_members 1\n"), "{text}");
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn every_seed_metric_is_registered_with_its_type() {
        // prometheus-client writes a labelled family only once it has a series.
        let m = AgentMetrics::new();
        let p = PolicyLabel {
            policy: "ns/p".into(),
        };
        let ok = ResultLabel {
            result: "ok".into(),
        };
        m.fleet_escalated.get_or_create(&p).set(0);
        m.members_out_of_sync.get_or_create(&p).set(0);
        drop(m.step_errors.get_or_create(&p));
        drop(m.model_requests.get_or_create(&ok));
        drop(m.planner_requests.get_or_create(&ok));
        drop(m.time_to_ready.get_or_create(&p));
        drop(m.needed_replicas.get_or_create(&p));
        drop(m.static_room_replicas.get_or_create(&p));
        m.apply(
            "ns/p",
            &Metric::Decision {
                action: "ShiftTraffic".into(),
                source: "rule".into(),
                applied: true,
            },
        );
        let text = m.render();
        for (name, kind) in [
            ("plumb_hub_leading", "gauge"),
            ("plumb_fleet_members", "gauge"),
            ("plumb_fleet_escalated", "gauge"),
            ("plumb_fleet_members_out_of_sync", "gauge"),
            ("plumb_hub_decisions", "counter"),
            ("plumb_hub_step_errors", "counter"),
            ("plumb_model_request_duration_seconds", "histogram"),
            ("plumb_planner_request_duration_seconds", "histogram"),
            ("plumb_decision_time_to_ready_seconds", "histogram"),
            ("plumb_member_needed_replicas", "gauge"),
            ("plumb_member_static_room_replicas", "gauge"),
        ] {
            assert!(
                text.contains(&format!("# TYPE {name} {kind}\n")),
                "{name} {kind} missing:\n{text}"
            );
        }
    }

    #[test]
    fn decision_effects_count_with_the_seeds_labels() {
        let m = AgentMetrics::new();
        m.apply(
            "ns/p",
            &Metric::Decision {
                action: "AddCapacity".into(),
                source: "rule".into(),
                applied: false,
            },
        );
        m.apply("ns/p", &Metric::TimeToReady { seconds: 40 });
        let text = m.render();
        assert!(
            text.contains(
                "plumb_hub_decisions_total{policy=\"ns/p\",action=\"AddCapacity\",source=\"rule\",applied=\"false\"} 1\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("plumb_decision_time_to_ready_seconds_count{policy=\"ns/p\"} 1\n"),
            "{text}"
        );
    }
}
