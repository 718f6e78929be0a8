//! Validation of an `AdaptivePolicy` spec: every problem at once, each naming the field path
//! and the rule (`spec.clusters[1].maxReplicas: required`), plus the notices that say which
//! accepted fields this build ignores (the experimental ones: the rules decide every step).
//!
//! Problems come in the order of the spec's fields (docs/plumb/configuration.md), so the same
//! policy always reports the same lines.

use std::collections::BTreeMap;
use std::fmt;

use crate::duration::GoDuration;
use crate::policy::AdaptivePolicy;
use crate::spec::{AdaptivePolicySpec, ClusterSpec, MetricSignal, Signals, Traffic, limits};

/// A rule the spec breaks.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Problem {
    /// The field path, `spec.clusters[1].maxReplicas`.
    pub path: String,
    /// The rule, `required`.
    pub rule: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.rule)
    }
}

/// An accepted field this build does not act on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Notice {
    /// The field path, `spec.experimental.adaptive`.
    pub path: String,
    /// What it means for this build.
    pub message: String,
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// The result of checking a policy: problems (the policy is refused while there is one) and
/// notices (informational).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Checked {
    /// Every rule broken, in field order.
    pub problems: Vec<Problem>,
    /// The experimental fields set, which this build ignores.
    pub notices: Vec<Notice>,
}

impl Checked {
    /// Whether the spec has no problem.
    pub fn is_valid(&self) -> bool {
        self.problems.is_empty()
    }

    fn problem(&mut self, path: impl Into<String>, rule: impl Into<String>) {
        self.problems.push(Problem {
            path: path.into(),
            rule: rule.into(),
        });
    }
}

/// What this build says of an experimental field it accepts.
const IGNORED: &str =
    "accepted and ignored by this build: no model or planner runs, the rules decide every step";

/// Reads and checks a policy document (YAML or JSON): a document that cannot be read is one
/// problem (with the path of the unknown or mistyped field); otherwise every rule is checked.
pub fn check_document(text: &str) -> (Option<AdaptivePolicy>, Checked) {
    match AdaptivePolicy::from_yaml(text) {
        Ok(policy) => {
            let checked = policy.spec.check();
            (Some(policy), checked)
        }
        Err(e) => {
            let mut checked = Checked::default();
            let path = if e.path.is_empty() {
                "document".to_owned()
            } else {
                e.path
            };
            checked.problem(path, e.message);
            (None, checked)
        }
    }
}

impl AdaptivePolicySpec {
    /// Checks every rule of the spec (see the module doc).
    pub fn check(&self) -> Checked {
        let mut out = Checked::default();
        match &self.workload {
            None => out.problem("spec.workload", "required"),
            Some(w) => required_text(&mut out, "spec.workload.name", w.name.as_deref()),
        }
        check_clusters(&mut out, self);
        if let Some(signals) = &self.signals {
            check_signals(&mut out, signals);
        }
        if let Some(capacity) = &self.capacity {
            positive_number(
                &mut out,
                "spec.capacity.replicaCapacity",
                capacity.replica_capacity,
            );
            at_least_one(&mut out, "spec.capacity.step", capacity.step);
        }
        if let Some(e) = &self.escalation {
            for (name, value) in [
                ("after", &e.after),
                ("earlyAfter", &e.early_after),
                ("readyTimeout", &e.ready_timeout),
                ("cooldown", &e.cooldown),
                ("calmFor", &e.calm_for),
            ] {
                duration(&mut out, &format!("spec.escalation.{name}"), value.as_ref());
            }
        }
        if let Some(traffic) = &self.traffic {
            check_traffic(&mut out, self, traffic);
        }
        if let Some(p) = self.confidence_threshold_percent {
            if !(0..=100).contains(&p) {
                out.problem(
                    "spec.confidenceThresholdPercent",
                    format!("must be 0 to 100 (is {p})"),
                );
            }
            out.notices.push(notice("spec.confidenceThresholdPercent"));
        }
        check_experimental(&mut out, self);
        out
    }
}

fn notice(path: &str) -> Notice {
    Notice {
        path: path.to_owned(),
        message: IGNORED.to_owned(),
    }
}

fn required_text(out: &mut Checked, path: &str, value: Option<&str>) {
    match value {
        None => out.problem(path, "required"),
        Some("") => out.problem(path, "must not be empty"),
        Some(_) => {}
    }
}

fn positive_number(out: &mut Checked, path: &str, value: Option<f64>) {
    if let Some(v) = value
        && !(v.is_finite() && v > 0.0)
    {
        out.problem(path, format!("must be a number above 0 (is {v})"));
    }
}

fn non_negative_number(out: &mut Checked, path: &str, value: Option<f64>) {
    if let Some(v) = value
        && !(v.is_finite() && v >= 0.0)
    {
        out.problem(path, format!("must be a number of at least 0 (is {v})"));
    }
}

fn at_least_one(out: &mut Checked, path: &str, value: Option<i64>) {
    if let Some(v) = value
        && v < 1
    {
        out.problem(path, format!("must be at least 1 (is {v})"));
    }
}

fn percent_step(out: &mut Checked, path: &str, value: Option<i64>) {
    if let Some(v) = value
        && !(1..=100).contains(&v)
    {
        out.problem(path, format!("must be 1 to 100 (is {v})"));
    }
}

fn duration(out: &mut Checked, path: &str, value: Option<&GoDuration>) {
    if let Some(d) = value
        && let Err(e) = d.nanos()
    {
        out.problem(
            path,
            format!(
                "{e}: {:?} (Go duration, e.g. 30s, 2m, 1h30m)",
                crate::duration::clipped(d.text(), 40)
            ),
        );
    }
}

fn check_clusters(out: &mut Checked, spec: &AdaptivePolicySpec) {
    let Some(clusters) = &spec.clusters else {
        out.problem("spec.clusters", "required");
        return;
    };
    if clusters.is_empty() || clusters.len() > limits::MAX_CLUSTERS {
        out.problem(
            "spec.clusters",
            format!(
                "must list 1 to {} clusters (lists {})",
                limits::MAX_CLUSTERS,
                clusters.len()
            ),
        );
    }
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, cluster) in clusters.iter().enumerate() {
        let at = format!("spec.clusters[{i}]");
        required_text(out, &format!("{at}.name"), cluster.name.as_deref());
        if let Some(name) = cluster.name.as_deref().filter(|n| !n.is_empty())
            && let Some(first) = seen.insert(name, i)
        {
            seen.insert(name, first);
            out.problem(
                format!("{at}.name"),
                format!("duplicate cluster name {name:?} (also spec.clusters[{first}])"),
            );
        }
        check_cluster(out, &at, cluster);
    }
}

fn check_cluster(out: &mut Checked, at: &str, cluster: &ClusterSpec) {
    for (i, pool) in cluster.node_pools().iter().enumerate() {
        if pool.is_empty() {
            out.problem(format!("{at}.nodePools[{i}]"), "must not be empty");
        }
    }
    match cluster.max_replicas {
        None => out.problem(format!("{at}.maxReplicas"), "required"),
        Some(m) if m < 0 => out.problem(
            format!("{at}.maxReplicas"),
            format!("must be at least 0 (is {m})"),
        ),
        Some(_) => {}
    }
    if cluster.region.as_deref() == Some("") {
        out.problem(format!("{at}.region"), "must not be empty");
    }
    positive_number(
        out,
        &format!("{at}.replicaCapacity"),
        cluster.replica_capacity,
    );
    if let Some(backend) = &cluster.backend {
        required_text(out, &format!("{at}.backend.name"), backend.name.as_deref());
    }
    let mut in_range = true;
    for (name, value) in [
        ("weight", cluster.weight),
        ("minWeight", cluster.min_weight),
        ("maxWeight", cluster.max_weight),
    ] {
        if let Some(v) = value.filter(|v| !(0..=100).contains(v)) {
            out.problem(format!("{at}.{name}"), format!("must be 0 to 100 (is {v})"));
            in_range = false;
        }
    }
    if !in_range {
        return;
    }
    let (min, weight, max) = (cluster.min_weight(), cluster.weight(), cluster.max_weight());
    if min > max {
        out.problem(
            format!("{at}.minWeight"),
            format!("must not exceed maxWeight ({min} > {max})"),
        );
    } else if weight < min {
        out.problem(
            format!("{at}.weight"),
            format!("must be at least minWeight ({weight} < {min})"),
        );
    } else if weight > max {
        out.problem(
            format!("{at}.weight"),
            format!("must not exceed maxWeight ({weight} > {max})"),
        );
    }
}

fn check_signals(out: &mut Checked, signals: &Signals) {
    for (name, query) in [
        ("demand", &signals.demand),
        ("pressure", &signals.pressure),
        ("latency", &signals.latency),
        ("errorRate", &signals.error_rate),
        ("saturation", &signals.saturation),
    ] {
        if query.as_deref() == Some("") {
            out.problem(format!("spec.signals.{name}"), "must not be empty");
        }
    }
    non_negative_number(out, "spec.signals.latencySLO", signals.latency_slo);
    non_negative_number(out, "spec.signals.errorRateSLO", signals.error_rate_slo);
    if let Some(q) = &signals.saturation_threshold
        && let Err(why) = q.value()
    {
        out.problem(
            "spec.signals.saturationThreshold",
            format!("{why}: {:?} (a quantity, e.g. \"50\" or \"0.9\")", q.text()),
        );
    }
    if let Some(metrics) = &signals.metrics {
        check_metrics(out, metrics);
    }
}

fn check_metrics(out: &mut Checked, metrics: &[MetricSignal]) {
    if metrics.len() > limits::MAX_METRICS {
        out.problem(
            "spec.signals.metrics",
            format!(
                "must list at most {} metrics (lists {})",
                limits::MAX_METRICS,
                metrics.len()
            ),
        );
    }
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, metric) in metrics.iter().enumerate() {
        let at = format!("spec.signals.metrics[{i}]");
        required_text(out, &format!("{at}.name"), metric.name.as_deref());
        if let Some(name) = metric.name.as_deref().filter(|n| !n.is_empty()) {
            if let Some(&first) = seen.get(name) {
                out.problem(
                    format!("{at}.name"),
                    format!("duplicate metric name {name:?} (also spec.signals.metrics[{first}])"),
                );
            } else {
                seen.insert(name, i);
            }
        }
        required_text(out, &format!("{at}.query"), metric.query.as_deref());
        duration(out, &format!("{at}.window"), metric.window.as_ref());
        duration(out, &format!("{at}.maxAge"), metric.max_age.as_ref());
    }
    out.notices.push(notice("spec.signals.metrics"));
}

fn check_traffic(out: &mut Checked, spec: &AdaptivePolicySpec, traffic: &Traffic) {
    let clusters = spec.clusters.as_deref().unwrap_or_default();
    for (i, cluster) in clusters.iter().enumerate() {
        if cluster.backend.is_none() {
            out.problem(
                format!("spec.clusters[{i}].backend"),
                "required when traffic is set",
            );
        }
    }
    // Saturating: weights are any integers until checked, and their sum must not overflow.
    let total = clusters
        .iter()
        .map(ClusterSpec::weight)
        .fold(0i64, i64::saturating_add);
    if !clusters.is_empty() && total != 100 {
        out.problem(
            "spec.clusters[].weight",
            format!("Steady weights must sum to 100 when traffic is set (they sum to {total})"),
        );
    }
    match &traffic.routes {
        None => out.problem("spec.traffic.routes", "required"),
        Some(routes) => {
            if routes.is_empty() || routes.len() > limits::MAX_ROUTES {
                out.problem(
                    "spec.traffic.routes",
                    format!(
                        "must list 1 to {} routes (lists {})",
                        limits::MAX_ROUTES,
                        routes.len()
                    ),
                );
            }
            for (i, route) in routes.iter().enumerate() {
                let at = format!("spec.traffic.routes[{i}]");
                required_text(out, &format!("{at}.cluster"), route.cluster.as_deref());
                if let Some(c) = route.cluster.as_deref().filter(|c| !c.is_empty())
                    && spec.cluster(c).is_none()
                {
                    out.problem(
                        format!("{at}.cluster"),
                        format!("{c:?} is not one of spec.clusters"),
                    );
                }
                if route.namespace.as_deref() == Some("") {
                    out.problem(format!("{at}.namespace"), "must not be empty");
                }
                required_text(out, &format!("{at}.name"), route.name.as_deref());
            }
        }
    }
    percent_step(out, "spec.traffic.stepPercent", traffic.step_percent);
}

fn check_experimental(out: &mut Checked, spec: &AdaptivePolicySpec) {
    let Some(adaptive) = spec.experimental.as_ref().and_then(|e| e.adaptive.as_ref()) else {
        return;
    };
    let at = "spec.experimental.adaptive";
    match adaptive.intent.as_deref() {
        None => out.problem(format!("{at}.intent"), "required"),
        Some("") => out.problem(format!("{at}.intent"), "must not be empty"),
        Some(intent) => {
            let chars = intent.chars().count();
            if chars > limits::MAX_INTENT_CHARS {
                out.problem(
                    format!("{at}.intent"),
                    format!(
                        "must be at most {} characters (has {chars})",
                        limits::MAX_INTENT_CHARS
                    ),
                );
            }
        }
    }
    if let Some(burst) = &adaptive.burst {
        at_least_one(out, &format!("{at}.burst.step"), burst.step);
        percent_step(out, &format!("{at}.burst.stepPercent"), burst.step_percent);
    }
    out.notices.push(notice(at));
}

#[cfg(test)]
mod tests;
