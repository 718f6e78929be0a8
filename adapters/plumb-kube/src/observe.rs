//! The recorded member as the member report's input: the objects read (already in the
//! report's own types), the policy's namespace, the replicas other policies were promised
//! here, and the signal answers; then `plumb_core::member::report`.
//!
//! Another policy's promised replicas are the larger of its unexpired floor
//! (`status.intent.replicas`) and its Deployment's desired replicas, less its pods already on a
//! node: those replicas take room before this policy's. A policy that does not list this
//! cluster, or whose Deployment is not in the recording, promises nothing here.

use plumb_core::member::{
    self, Diagnostics, MemberObservation, Occupancy, Promised, QueryResult, RawSample,
    SignalSamples,
};
use plumb_model::{AdaptivePolicy, Condition, Report, Timestamp};
use scheduler_model::Interner;
use scheduler_model::model::selector_matches;

use crate::signals::{Answer, SignalAnswers};

/// What the report function gave for one policy and member.
#[derive(Debug, Clone)]
pub struct Reported {
    /// `status.report` (`None` when the cluster is not a member).
    pub report: Option<Report>,
    /// The `Ready` condition.
    pub ready: Condition,
    /// How static room was found.
    pub diagnostics: Diagnostics,
}

/// The policy's namespace (`metadata.namespace`, empty when absent).
fn namespace_of(policy: &AdaptivePolicy) -> String {
    policy.metadata.namespace.clone().unwrap_or_default()
}

/// The report of `cluster` for `policy` at `now`; `others` are the other policies recorded.
pub fn report(
    observed: &MemberObservation,
    signals: &SignalAnswers,
    policy: &AdaptivePolicy,
    others: &[AdaptivePolicy],
    cluster: &str,
    now: Timestamp,
) -> Reported {
    let mut observation = observed.clone();
    // As the agent's pod store keeps them: the same report (plumb-core's property tests), and
    // the replay fixtures then check the agent's path.
    observation.read_bound_pods(&mut Interner::new());
    report_in(
        &mut Occupancy::new(),
        &mut observation,
        signals,
        policy,
        others,
        cluster,
        now,
    )
}

/// [`report`] for the agent, which reports every policy over one observation: the
/// observation is lent (its `namespace` and `promised` are set for this policy, the cluster's
/// objects are not copied) and the placement check's conversion is kept in `occupancy`, shared
/// by the pass's reports (`member::report_with`).
pub fn report_in(
    occupancy: &mut Occupancy,
    observation: &mut MemberObservation,
    signals: &SignalAnswers,
    policy: &AdaptivePolicy,
    others: &[AdaptivePolicy],
    cluster: &str,
    now: Timestamp,
) -> Reported {
    observation.namespace = namespace_of(policy);
    let promised_here = others
        .iter()
        .filter_map(|other| promised(observation, other, cluster, now))
        .collect();
    observation.promised = promised_here;
    let previous = policy.status.as_ref().and_then(|s| s.report.as_ref());
    let out = member::report_with(
        occupancy,
        observation,
        &policy.spec,
        cluster,
        &signal_samples(signals),
        previous,
        now,
    );
    Reported {
        report: out.report,
        ready: keep_transition_time(out.ready, policy, now),
        diagnostics: out.diagnostics,
    }
}

/// The condition as its writer stores it: `lastTransitionTime` kept from the recorded `Ready`
/// condition while the status stays the same, else `now`; `observedGeneration` the policy's.
fn keep_transition_time(
    mut ready: Condition,
    policy: &AdaptivePolicy,
    now: Timestamp,
) -> Condition {
    let recorded = policy
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == ready.type_));
    ready.last_transition_time = match recorded {
        Some(c) if c.status == ready.status => c.last_transition_time.or(Some(now)),
        _ => Some(now),
    };
    ready.observed_generation = policy.metadata.generation;
    ready
}

/// The replicas `other` was promised in `cluster` and does not have on a node.
fn promised(
    observed: &MemberObservation,
    other: &AdaptivePolicy,
    cluster: &str,
    now: Timestamp,
) -> Option<Promised> {
    other.spec.cluster(cluster)?;
    let workload = other.spec.workload.as_ref()?;
    let name = workload.name.as_deref()?;
    let namespace = workload
        .namespace
        .clone()
        .unwrap_or_else(|| namespace_of(other));
    let deployment = observed
        .deployments
        .iter()
        .find(|d| d.metadata.name == name && d.metadata.namespace == namespace)?;
    let floor = other
        .status
        .as_ref()
        .and_then(|s| s.intent.as_ref())
        .filter(|i| i.expires.is_none_or(|e| e > now))
        .map_or(0, |i| i.replicas);
    let desired = u32::try_from(deployment.spec.replicas.unwrap_or(1).max(0)).unwrap_or(u32::MAX);
    let on_a_node = deployment.spec.selector.as_ref().map_or(0, |selector| {
        let whole = observed
            .pods
            .iter()
            .map(|p| &p.pod)
            .filter(|p| {
                p.metadata.namespace == namespace
                    && !p.spec.node_name.is_empty()
                    && !p.is_terminal()
                    && selector_matches(selector, &p.metadata.labels)
            })
            .count();
        // Bound pods read once are bound and live.
        let read_once = observed
            .bound_pods
            .iter()
            .filter(|p| *p.namespace == *namespace && selector_matches(selector, &p.labels))
            .count();
        whole + read_once
    });
    let on_a_node = u32::try_from(on_a_node).unwrap_or(u32::MAX);
    let replicas = floor.max(desired).saturating_sub(on_a_node);
    (replicas > 0).then(|| Promised {
        policy: other.key(),
        namespace,
        template: deployment.spec.template.clone(),
        replicas,
    })
}

/// The recorded answers in the report's input shape (sample times from Unix milliseconds).
pub fn signal_samples(answers: &SignalAnswers) -> SignalSamples {
    let result = |answer: &Answer| match answer {
        Answer::Error(e) => QueryResult::Error(e.clone()),
        Answer::Samples(samples) => QueryResult::Samples(
            samples
                .iter()
                .map(|s| RawSample {
                    value: s.value,
                    time: Timestamp::from_unix_nanos(s.time_ms.saturating_mul(1_000_000)),
                })
                .collect(),
        ),
    };
    let get = |name: &str| answers.get(name).map(result);
    SignalSamples {
        demand: get("demand"),
        pressure: get("pressure"),
        latency: get("latency"),
        error_rate: get("errorRate"),
        saturation: get("saturation"),
        metrics: answers
            .iter()
            .filter_map(|(name, a)| Some((name.strip_prefix("metrics.")?.to_owned(), result(a))))
            .collect(),
    }
}
