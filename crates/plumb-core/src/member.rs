//! The member report: what one cluster needs beyond what it runs, how much room it has, its
//! region and signals, and the pressure it has served safely, computed from what it observed
//! (docs/plumb/report.md says how each field is computed). A pure function: the observation,
//! the policy, the signal samples, the previous report and `now` come in; the report and the
//! `Ready` condition come out.

use std::collections::BTreeMap;

use plumb_model::spec::ClusterSpec;
use plumb_model::status::ready;
use plumb_model::{AdaptivePolicySpec, Condition, Report, Timestamp};
use scheduler_model::model::{pod_info, selector_matches};
use scheduler_model::objects::Pod;

pub mod observation;
pub mod room;
pub mod safe;
pub mod signals;

pub use observation::{
    Autoscaler, Deployment, Event, MemberObservation, NodeClaim, NodePool, ObservedPod,
    PodTemplate, Promised, QueryResult, RawSample, SignalSamples,
};

use observation::REGION_LABEL;
pub use room::Occupancy;
use signals::ReadSignals;

/// What the report function returns: the report (none when the cluster is not a member), the
/// `Ready` condition, and the static diagnostics the agent logs.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberReport {
    /// `status.report`; `None` when this cluster is not in `spec.clusters`.
    pub report: Option<Report>,
    /// `status.conditions[type=Ready]` (its transition time is the writer's to keep).
    pub ready: Condition,
    /// How static room was found.
    pub diagnostics: Diagnostics,
}

/// The static diagnostics: which nodes counted and what the placement check did first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics {
    /// Registered nodes (the listed NodePools' and the `nodeSelector` ones).
    pub registered: u32,
    /// Nodes left out as not registered (`filtered`).
    pub filtered: u32,
    /// Other policies' promised replicas the check placed before counting.
    pub promised_placed: u32,
    /// Promised replicas no node holds, charged to NodePool headroom.
    pub promised_unplaced: u32,
}

/// The workload's replicas as observed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Replicas {
    desired: u32,
    ready: u32,
    /// Unschedulable pods without a nominated node.
    unschedulable: u32,
    nominated: u32,
    scale_down_held: bool,
}

/// The member report of cluster `cluster` for the policy `spec` (see the module doc).
pub fn report(
    observation: &MemberObservation,
    spec: &AdaptivePolicySpec,
    cluster: &str,
    signals: &SignalSamples,
    previous: Option<&Report>,
    now: Timestamp,
) -> MemberReport {
    report_with(
        &mut Occupancy::new(),
        observation,
        spec,
        cluster,
        signals,
        previous,
        now,
    )
}

/// [`report`] with the placement check's conversion of the cluster kept in `occupancy`, so
/// the reports of several policies over one observation convert it once. `occupancy` must
/// have been used with this `observation` only; each report leaves it as it found it.
pub fn report_with(
    occupancy: &mut Occupancy,
    observation: &MemberObservation,
    spec: &AdaptivePolicySpec,
    cluster: &str,
    signals: &SignalSamples,
    previous: Option<&Report>,
    now: Timestamp,
) -> MemberReport {
    let Some(member) = spec.cluster(cluster) else {
        return MemberReport {
            report: None,
            ready: condition(
                "False",
                ready::NOT_A_MEMBER,
                format!("cluster {cluster} is not in spec.clusters"),
            ),
            diagnostics: Diagnostics::default(),
        };
    };
    let checked = spec.check();
    if !checked.is_valid() {
        return invalid_policy(observation, spec, cluster, &checked.problems, now);
    }
    let mut errors = Vec::new();
    let namespace = spec
        .workload
        .as_ref()
        .and_then(|w| w.namespace.clone())
        .unwrap_or_else(|| observation.namespace.clone());
    let name = spec
        .workload
        .as_ref()
        .and_then(|w| w.name.clone())
        .unwrap_or_default();
    let deployment = observation
        .deployments
        .iter()
        .find(|d| d.metadata.name == name && d.metadata.namespace == namespace);
    if deployment.is_none() {
        errors.push(format!("workload: Deployment {namespace}/{name} not found"));
    }
    let (replicas, own_pending) = match deployment {
        Some(d) => workload_replicas(observation, d),
        None => (Replicas::default(), Vec::new()),
    };
    let read = signals::read_signals(spec.signals.as_ref(), signals);
    errors.extend(read.errors.iter().cloned());
    let needed = needed_replicas(spec, cluster, &replicas, &read);
    let (rooms, diagnostics) = rooms(
        occupancy,
        observation,
        member,
        deployment,
        &own_pending,
        &replicas,
        now,
        &mut errors,
    );
    let mut out = Report {
        time: Some(now),
        desired_replicas: replicas.desired,
        ready_replicas: replicas.ready,
        unschedulable_replicas: replicas.unschedulable,
        needed_replicas: needed,
        short_since: short_since(needed, previous, now),
        scale_down_held: replicas.scale_down_held,
        nominated_replicas: replicas.nominated,
        static_room: rooms.static_room,
        dynamic_room: rooms.dynamic_room,
        recent_launch_failures: rooms.recent_launch_failures,
        region: region(member, observation),
        demand: read.demand,
        saturation: read.saturation,
        pressure: read.pressure,
        latency: read.latency,
        error_rate: read.error_rate,
        metrics: read.metrics.clone(),
        spec_hash: plumb_model::hash::member_spec_hash(spec, Some(&observation.namespace), cluster),
        ..Report::default()
    };
    let safe_now = deployment.is_some()
        && needed == 0
        && replicas.ready >= replicas.desired
        && read.errors.is_empty();
    let safe = safe::safe_pressure(read.pressure.map(|s| s.value), safe_now, previous, now);
    out.safe_pressure = safe.pressure;
    out.safe_since = safe.since;
    let ready = if errors.is_empty() {
        condition("True", ready::OBSERVED, String::new())
    } else {
        let message = errors.join("; ");
        out.error = Some(message.clone());
        condition("False", ready::OBSERVATION_FAILED, message)
    };
    MemberReport {
        report: Some(out),
        ready,
        diagnostics,
    }
}

/// A policy that breaks a rule of its spec reports no needs and no room: only its time, hash
/// and the problems, each naming its field, in `error` and the `Ready` message.
fn invalid_policy(
    observation: &MemberObservation,
    spec: &AdaptivePolicySpec,
    cluster: &str,
    problems: &[plumb_model::Problem],
    now: Timestamp,
) -> MemberReport {
    let message = problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    MemberReport {
        report: Some(Report {
            time: Some(now),
            spec_hash: plumb_model::hash::member_spec_hash(
                spec,
                Some(&observation.namespace),
                cluster,
            ),
            error: Some(message.clone()),
            ..Report::default()
        }),
        ready: condition("False", ready::OBSERVATION_FAILED, message),
        diagnostics: Diagnostics::default(),
    }
}

fn condition(status: &str, reason: &str, message: String) -> Condition {
    Condition {
        type_: ready::TYPE.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message,
        ..Condition::default()
    }
}

/// Desired, ready, unschedulable and nominated replicas of the Deployment, whether its
/// autoscaler holds a scale-down, and its pending pods.
fn workload_replicas<'a>(
    observation: &'a MemberObservation,
    d: &Deployment,
) -> (Replicas, Vec<&'a Pod>) {
    let ns = &d.metadata.namespace;
    let mut r = Replicas {
        desired: clamp_u32(d.spec.replicas.unwrap_or(1)),
        ready: clamp_u32(d.status.ready_replicas.unwrap_or(0)),
        ..Replicas::default()
    };
    let mut pending = Vec::new();
    if let Some(selector) = &d.spec.selector {
        for p in &observation.pods {
            let pod = &p.pod;
            if &pod.metadata.namespace != ns
                || pod.is_terminal()
                || pod.metadata.deletion_timestamp.is_some()
                || !pod.spec.node_name.is_empty()
                || !selector_matches(selector, &pod.metadata.labels)
            {
                continue;
            }
            pending.push(pod);
            if !pod.status.nominated_node_name.is_empty() {
                r.nominated += 1;
            } else if p.unschedulable {
                r.unschedulable += 1;
            }
        }
    }
    r.scale_down_held = observation.autoscalers.iter().any(|a| {
        &a.metadata.namespace == ns
            && a.spec.scale_target_ref.kind == "Deployment"
            && a.spec.scale_target_ref.name == d.metadata.name
            && a.status.conditions.iter().any(|c| {
                c.type_ == "AbleToScale" && c.status == "True" && c.reason == "ScaleDownStabilized"
            })
    });
    (r, pending)
}

fn clamp_u32(v: i64) -> u32 {
    u32::try_from(v.max(0)).unwrap_or(u32::MAX)
}

/// `U + max(0, ceil(demand / replicaCapacity) − desired)`, raised to `step` while saturated or
/// over `latencySLO`; `U` is 0 while the autoscaler holds a scale-down.
fn needed_replicas(
    spec: &AdaptivePolicySpec,
    cluster: &str,
    replicas: &Replicas,
    read: &ReadSignals,
) -> u32 {
    let unschedulable = if replicas.scale_down_held {
        0
    } else {
        replicas.unschedulable
    };
    let mut needed = u64::from(unschedulable);
    if let (Some(demand), Some(capacity)) = (read.demand, spec.replica_capacity(cluster))
        && capacity > 0.0
        && capacity.is_finite()
    {
        let wanted = (demand.value / capacity).ceil();
        let wanted = if wanted.is_nan() || wanted <= 0.0 {
            0
        } else if wanted >= f64::from(u32::MAX) {
            u64::from(u32::MAX)
        } else {
            // In range and whole: the cast is exact.
            wanted as u64
        };
        needed += wanted.saturating_sub(u64::from(replicas.desired));
    }
    let s = spec.signals.as_ref();
    let saturated = match (
        read.saturation,
        s.and_then(|s| s.saturation_threshold.as_ref()),
    ) {
        (Some(v), Some(t)) => t.value().is_ok_and(|t| v.value > t.to_f64()),
        _ => false,
    };
    let over_latency = match (read.latency, s.and_then(|s| s.latency_slo)) {
        (Some(v), Some(slo)) => v.value > slo,
        _ => false,
    };
    if saturated || over_latency {
        needed = needed.max(u64::try_from(spec.step()).unwrap_or(0));
    }
    u32::try_from(needed).unwrap_or(u32::MAX)
}

/// When `neededReplicas` last turned positive: kept from the previous report while short.
fn short_since(needed: u32, previous: Option<&Report>, now: Timestamp) -> Option<Timestamp> {
    if needed == 0 {
        return None;
    }
    previous
        .filter(|p| p.needed_replicas > 0)
        .and_then(|p| p.short_since)
        .or(Some(now))
}

/// The spec's region, else the most common `topology.kubernetes.io/region` of the cluster's
/// nodes; a tie goes to the name that sorts first.
fn region(member: &ClusterSpec, observation: &MemberObservation) -> Option<String> {
    if let Some(r) = member.region.as_ref().filter(|r| !r.is_empty()) {
        return Some(r.clone());
    }
    let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
    for n in &observation.nodes {
        if let Some(r) = n
            .metadata
            .labels
            .get(REGION_LABEL)
            .filter(|r| !r.is_empty())
        {
            *counts.entry(r.as_str()).or_insert(0) += 1;
        }
    }
    // max_by_key keeps the last maximum; iterate in reverse so the first name wins a tie.
    counts
        .into_iter()
        .rev()
        .max_by_key(|(_, c)| *c)
        .map(|(r, _)| r.to_owned())
}

/// Static room, dynamic room and recent launch failures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Rooms {
    static_room: u32,
    dynamic_room: u32,
    recent_launch_failures: u32,
}

/// Both rooms and the launch failures; a failure to compute one is an error, that room 0.
#[allow(clippy::too_many_arguments)] // the report's inputs, passed through once
fn rooms(
    occupancy: &mut Occupancy,
    observation: &MemberObservation,
    member: &ClusterSpec,
    deployment: Option<&Deployment>,
    own_pending: &[&Pod],
    replicas: &Replicas,
    now: Timestamp,
    errors: &mut Vec<String>,
) -> (Rooms, Diagnostics) {
    let pools = member.node_pools();
    let registered =
        room::registered_nodes(&observation.nodes, pools, member.node_selector.as_ref());
    let mut diagnostics = Diagnostics {
        registered: u32::try_from(registered.nodes.len()).unwrap_or(u32::MAX),
        filtered: registered.filtered,
        ..Diagnostics::default()
    };
    let max_replicas = clamp_u32(member.max_replicas.unwrap_or(0));
    let recent_launch_failures = room::recent_launch_failures(observation, pools, now);
    let mut out = Rooms {
        recent_launch_failures,
        ..Rooms::default()
    };
    let Some(d) = deployment else {
        return (out, diagnostics);
    };
    let template = room::template_pod(
        &d.spec.template,
        &d.metadata.namespace,
        &format!("{}-replica", d.metadata.name),
    );
    let ns_labels: BTreeMap<String, BTreeMap<String, String>> = observation
        .namespaces
        .iter()
        .map(|n| (n.metadata.name.clone(), n.metadata.labels.clone()))
        .collect();
    let requests = |p: &Pod| pod_info(p, &ns_labels, true).map(|i| i.requests);
    let unplaced = match room::static_room(
        occupancy,
        observation,
        &template,
        own_pending,
        &registered.nodes,
        max_replicas,
    ) {
        Ok(s) => {
            out.static_room = s.replicas;
            diagnostics.promised_placed = s.promised_placed;
            diagnostics.promised_unplaced =
                u32::try_from(s.promised_unplaced.len()).unwrap_or(u32::MAX);
            s.promised_unplaced
                .iter()
                .filter_map(|p| requests(p).ok())
                .collect()
        }
        Err(e) => {
            errors.push(e);
            Vec::new()
        }
    };
    if pools.is_empty() || recent_launch_failures >= room::RECURRING_LAUNCH_FAILURES {
        return (out, diagnostics);
    }
    let Ok(replica) = requests(&template) else {
        return (out, diagnostics);
    };
    let headroom = max_replicas.saturating_sub(replicas.desired);
    match room::pool_headroom(&observation.node_pools, pools, &replica, &unplaced) {
        Ok(Some(n)) => out.dynamic_room = u32::try_from(n).unwrap_or(u32::MAX).min(headroom),
        Ok(None) => out.dynamic_room = headroom,
        Err(e) => errors.push(format!("dynamicRoom: {e}")),
    }
    (out, diagnostics)
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
