//! Room: how many more replicas this cluster can take. Static room is what still fits on the
//! registered existing nodes, found by the scheduler model's placement check after the
//! replicas other policies were promised here are placed wherever they would land. Dynamic
//! room is what the registered NodePools may still add under their limits, after the promised
//! replicas that found no node are charged to them; recurring launch failures void it.

use std::collections::{BTreeMap, BTreeSet};

use scheduler_model::objects::{Node, ObjectMeta, Pod};
use scheduler_model::quantity::parse_resource;
use scheduler_model::{ClusterView, Profile, RoomCluster, occupants};
use utc_time::Timestamp;

use super::observation::{MemberObservation, NODEPOOL_LABEL, NodeClaim, NodePool, PodTemplate};

/// Launch failures within this window count as recent.
pub const LAUNCH_FAILURE_WINDOW_SECS: u64 = 600;

/// From this many recent launch failures on, dynamic room counts as 0.
pub const RECURRING_LAUNCH_FAILURES: u32 = 3;

/// The Event reasons Karpenter records on a NodeClaim whose launch failed for want of
/// capacity or quota.
pub const LAUNCH_FAILURE_REASONS: [&str; 1] = ["InsufficientCapacityError"];

/// Which nodes count as this member's static room, and which were left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registered {
    /// Names of the registered nodes.
    pub nodes: BTreeSet<String>,
    /// Nodes left out (the static diagnostics' `filtered` count).
    pub filtered: u32,
}

/// The registered nodes: those of a listed NodePool (by the `karpenter.sh/nodepool` label)
/// that match `nodeSelector` when one is set, and nodes no NodePool manages that match a set
/// `nodeSelector`. Nothing else, however idle.
pub fn registered_nodes(
    nodes: &[Node],
    node_pools: &[String],
    node_selector: Option<&BTreeMap<String, String>>,
) -> Registered {
    let matches = |labels: &BTreeMap<String, String>| {
        node_selector.is_none_or(|s| s.iter().all(|(k, v)| labels.get(k) == Some(v)))
    };
    let mut out = Registered::default();
    for n in nodes {
        let labels = &n.metadata.labels;
        let registered = match labels.get(NODEPOOL_LABEL) {
            Some(pool) => node_pools.contains(pool) && matches(labels),
            None => node_selector.is_some() && matches(labels),
        };
        if registered {
            out.nodes.insert(n.metadata.name.clone());
        } else {
            out.filtered += 1;
        }
    }
    out
}

/// The outcome of the placement check.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StaticRoom {
    /// Replicas of the workload that still fit on the registered nodes (counted up to the
    /// limit asked for).
    pub replicas: u32,
    /// Promised replicas of other policies placed on some node.
    pub promised_placed: u32,
    /// Promised replicas of other policies no node holds: charged to NodePool headroom.
    pub promised_unplaced: Vec<Pod>,
}

/// The cluster converted once for the placement check. Every policy's report over the same
/// observation can share it: each places its promised replicas, counts, and takes them back.
/// The first conversion is compact (bound pods as their nodes' totals, see
/// [`RoomCluster`]); a report that places or counts a pod with pod (anti-)affinity terms or
/// topology spread constraints, which read other pods' labels, uses a full conversion, made
/// on first need and kept too. Both answer alike wherever the compact one answers.
#[derive(Debug, Default)]
pub struct Occupancy {
    compact: Option<Result<RoomCluster, String>>,
    full: Option<Result<RoomCluster, String>>,
    /// Every report uses the full conversion (to compare the two in tests).
    full_only: bool,
}

impl Occupancy {
    /// Not converted yet: the first report that needs it converts the observation.
    pub fn new() -> Occupancy {
        Occupancy::default()
    }

    /// An occupancy whose reports always use the full conversion.
    #[cfg(test)]
    pub(crate) fn full_only() -> Occupancy {
        Occupancy {
            full_only: true,
            ..Occupancy::default()
        }
    }

    /// Whether a full conversion was made (the compact one did not answer for some pod).
    #[cfg(test)]
    pub(crate) fn converted_in_full(&self) -> bool {
        self.full.is_some()
    }

    /// The conversion that answers for every pod of `pods`: the compact one when it does,
    /// else the full one, converting `observation` on first use (the same observation every
    /// time: conversions are kept).
    fn for_pods(
        &mut self,
        observation: &MemberObservation,
        pods: &[&Pod],
    ) -> Result<&mut RoomCluster, String> {
        let profile = Profile::default_scheduler();
        let compact = !self.full_only && {
            match self
                .compact
                .get_or_insert_with(|| convert_compact(observation))
            {
                Err(e) => return Err(e.clone()),
                Ok(c) => pods.iter().all(|p| c.answers(&profile, p)),
            }
        };
        let slot = if compact {
            &mut self.compact
        } else {
            &mut self.full
        };
        slot.get_or_insert_with(|| convert_full(observation))
            .as_mut()
            .map_err(|e| e.clone())
    }
}

/// The observation's occupancy ([`occupancy`]) converted compactly when it can be.
fn convert_compact(observation: &MemberObservation) -> Result<RoomCluster, String> {
    RoomCluster::from_occupancy(
        &observation.nodes,
        &observation.namespaces,
        observation.pods.iter().map(|p| &p.pod),
        &observation.bound_pods,
        &Profile::default_scheduler().scheduler_name,
    )
    .map_err(|e| format!("staticRoom: {e}"))
}

/// The observation's occupancy ([`occupancy`]) converted in full.
fn convert_full(observation: &MemberObservation) -> Result<RoomCluster, String> {
    let pods = occupancy(observation);
    let view = ClusterView {
        nodes: &observation.nodes,
        pods: &pods,
        namespaces: &observation.namespaces,
        selector_objects: &[],
        pod_groups: &[],
    };
    RoomCluster::full(
        view,
        &observation.bound_pods,
        &Profile::default_scheduler().scheduler_name,
    )
    .map_err(|e| format!("staticRoom: {e}"))
}

/// Places the workload's own pending pods (replicas already wanted, which will take room
/// when they land), then the replicas other policies were promised here, in policy order,
/// each where the scheduler would put it; then counts the workload's replicas that fit on
/// `registered`, at most `limit`; then takes the placed pods back, leaving `occupancy` as it
/// was. Promised replicas no node holds are returned, to be charged to NodePool headroom.
/// `Err` names why the model cannot answer.
pub fn static_room(
    occupancy: &mut Occupancy,
    observation: &MemberObservation,
    template: &Pod,
    own_pending: &[&Pod],
    registered: &BTreeSet<String>,
    limit: u32,
) -> Result<StaticRoom, String> {
    let own: Vec<Pod> = own_pending
        .iter()
        .map(|p| {
            let mut pod = (*p).clone();
            pod.spec.scheduler_name.clear();
            pod
        })
        .collect();
    let mut promised: Vec<&super::observation::Promised> = observation.promised.iter().collect();
    promised.sort_by(|a, b| a.policy.cmp(&b.policy));
    // Each policy's replicas, copies of its template told apart by name.
    let promised: Vec<Vec<Pod>> = promised
        .iter()
        .map(|p| {
            (0..p.replicas)
                .map(|i| {
                    let name = format!("{}-promised-{i}", p.policy.replace('/', "-"));
                    template_pod(&p.template, &p.namespace, &name)
                })
                .collect()
        })
        .collect();
    let all: Vec<&Pod> = own
        .iter()
        .chain(promised.iter().flatten())
        .chain(std::iter::once(template))
        .collect();
    let cluster = occupancy.for_pods(observation, &all)?;
    let mark = cluster.checkpoint();
    let out = place_and_count(cluster, &own, promised, template, registered, limit);
    cluster.rollback_to(mark);
    out
}

fn place_and_count(
    cluster: &mut RoomCluster,
    own: &[Pod],
    promised: Vec<Vec<Pod>>,
    template: &Pod,
    registered: &BTreeSet<String>,
    limit: u32,
) -> Result<StaticRoom, String> {
    let profile = Profile::default_scheduler();
    let place = |cluster: &mut RoomCluster, pod: &Pod| {
        cluster
            .place(&profile, pod)
            .map_err(|f| format!("staticRoom: {}", f.detail))
    };
    for pod in own {
        place(cluster, pod)?;
    }
    let mut out = StaticRoom::default();
    for copies in promised {
        let Some(first) = copies.first() else {
            continue;
        };
        let count = u32::try_from(copies.len()).unwrap_or(u32::MAX);
        let landed = cluster
            .place_copies(&profile, first, count)
            .map_err(|f| format!("staticRoom: {}", f.detail))?;
        for (pod, node) in copies.into_iter().zip(landed) {
            match node {
                Some(_) => out.promised_placed += 1,
                None => out.promised_unplaced.push(pod),
            }
        }
    }
    out.replicas = cluster
        .count_fitting(&profile, template, registered, limit)
        .map_err(|f| format!("staticRoom: {}", f.detail))?;
    Ok(out)
}

/// The bound, live pods of `pods` on known nodes, each once (with `bound_pods`, the occupancy
/// the placement check starts from). Pending pods are left out: the workload's own are
/// placed first, and the promised replicas stand for other policies' pending demand.
fn occupancy(observation: &MemberObservation) -> Vec<&Pod> {
    occupants(&observation.nodes, observation.pods.iter().map(|p| &p.pod))
}

/// A pod of `template` named `name` in `namespace`, for the default scheduler.
pub fn template_pod(template: &PodTemplate, namespace: &str, name: &str) -> Pod {
    let mut spec = template.spec.clone();
    spec.node_name.clear();
    spec.scheduler_name.clear();
    Pod {
        metadata: ObjectMeta {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            uid: format!("plumb-{namespace}-{name}"),
            labels: template.metadata.labels.clone(),
            ..ObjectMeta::default()
        },
        spec,
        ..Pod::default()
    }
}

/// Failed launches in the registered pools within the window before `now`: NodeClaims with a
/// launch-failure Event (attributed by the NodeClaim's pool label, or, once Karpenter has
/// deleted the NodeClaim, by the longest registered pool name its name starts with, as
/// Karpenter names NodeClaims `<pool>-<suffix>`) or a `Launched=False` condition, each
/// NodeClaim once.
pub fn recent_launch_failures(
    observation: &MemberObservation,
    node_pools: &[String],
    now: Timestamp,
) -> u32 {
    let recent = |t: Option<Timestamp>| {
        t.is_some_and(|t| t <= now && now.since(t).as_secs() <= LAUNCH_FAILURE_WINDOW_SECS)
    };
    let claims: BTreeMap<&str, &NodeClaim> = observation
        .node_claims
        .iter()
        .map(|c| (c.metadata.name.as_str(), c))
        .collect();
    let pool_of = |claim: &str| -> Option<String> {
        if let Some(c) = claims.get(claim) {
            return c.metadata.labels.get(NODEPOOL_LABEL).cloned();
        }
        node_pools
            .iter()
            .filter(|p| claim.starts_with(&format!("{p}-")))
            .max_by_key(|p| p.len())
            .cloned()
    };
    let mut failed: BTreeSet<&str> = BTreeSet::new();
    for e in &observation.events {
        let when = e.last_timestamp.or(e.event_time).or_else(|| {
            e.metadata
                .creation_timestamp
                .as_deref()
                .and_then(|t| t.parse().ok())
        });
        if e.involved_object.kind == "NodeClaim"
            && LAUNCH_FAILURE_REASONS.contains(&e.reason.as_str())
            && recent(when)
            && pool_of(&e.involved_object.name).is_some_and(|p| node_pools.contains(&p))
        {
            failed.insert(e.involved_object.name.as_str());
        }
    }
    for c in &observation.node_claims {
        let launch_failed = c.status.conditions.iter().any(|k| {
            k.type_ == "Launched" && k.status == "False" && recent(k.last_transition_time)
        });
        if launch_failed && pool_of(&c.metadata.name).is_some_and(|p| node_pools.contains(&p)) {
            failed.insert(c.metadata.name.as_str());
        }
    }
    u32::try_from(failed.len()).unwrap_or(u32::MAX)
}

/// The replicas the registered pools may still add under their limits: per pool, the fewest
/// replicas any limited resource the replica asks for still holds, after the unplaced
/// promised pods are charged to the first pool (by name) with headroom for them; a pool
/// without limits, or whose limits name nothing the replica asks for, is unbounded (`None`).
/// A registered pool that was not observed adds nothing. `Err` names a bad quantity.
pub fn pool_headroom(
    pools: &[NodePool],
    registered: &[String],
    replica: &BTreeMap<String, i64>,
    unplaced: &[BTreeMap<String, i64>],
) -> Result<Option<u64>, String> {
    let mut listed: Vec<&NodePool> = pools
        .iter()
        .filter(|p| registered.contains(&p.metadata.name))
        .collect();
    listed.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut headroom: Vec<Option<BTreeMap<String, i64>>> = Vec::new();
    for p in &listed {
        headroom.push(limits_left(p)?);
    }
    for pod in unplaced {
        let fits = |h: &BTreeMap<String, i64>| {
            h.iter()
                .all(|(r, left)| pod.get(r).is_none_or(|need| need <= left))
        };
        if let Some(Some(h)) = headroom.iter_mut().find(|h| h.as_ref().is_none_or(fits)) {
            for (r, left) in h.iter_mut() {
                *left -= pod.get(r).copied().unwrap_or(0);
            }
        }
    }
    let mut total: u64 = 0;
    for h in headroom {
        let Some(h) = h else { return Ok(None) };
        let per_pool = h
            .iter()
            .filter_map(|(r, left)| {
                let need = replica.get(r).copied().filter(|n| *n > 0)?;
                Some(u64::try_from(left / need).unwrap_or(0))
            })
            .min();
        match per_pool {
            None => return Ok(None),
            Some(n) => total = total.saturating_add(n),
        }
    }
    Ok(Some(total))
}

/// A pool's limit minus what it holds, per limited resource; `None` when it has no limits.
fn limits_left(pool: &NodePool) -> Result<Option<BTreeMap<String, i64>>, String> {
    if pool.spec.limits.is_empty() {
        return Ok(None);
    }
    let name = &pool.metadata.name;
    let mut left = BTreeMap::new();
    for (r, q) in &pool.spec.limits {
        let limit = parse_resource(r, q, &format!("nodePool {name} spec.limits[{r}]"))
            .map_err(|e| e.to_string())?;
        let used = match pool.status.resources.get(r) {
            None => 0,
            Some(u) => parse_resource(r, u, &format!("nodePool {name} status.resources[{r}]"))
                .map_err(|e| e.to_string())?,
        };
        left.insert(r.clone(), (limit - used).max(0));
    }
    Ok(Some(left))
}

#[cfg(test)]
#[path = "room_proptests.rs"]
mod proptests;
