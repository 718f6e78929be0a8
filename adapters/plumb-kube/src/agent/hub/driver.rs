//! The hub step's driver (docs/plumb/design.md#the-hubs-writes): while this agent leads, each
//! pass steps every AdaptivePolicy found on this member's own copy. Per policy it reads every
//! member's copy (a member it cannot read keeps its last read, so its report goes stale), the
//! weights from the first HTTPRoute in `spec.traffic`, and, at a new term, adopts the most
//! recent `status.fleet` once it read a majority of the copies; it steps plumb-core's
//! [`Hub`], then carries the output out in this order:
//!
//! 1. the outcome lines, to the decision log (at least once: a discarded step writes them
//!    again);
//! 2. `status.fleet` on this member's copy and every copy it reaches; unless this copy and a
//!    majority took it, the step is discarded and the next one adopts again;
//! 3. the intents (`status.intent` of each member's copy), then the route weights, each write
//!    preceded by a read of the target cluster's `plumb-hub` Lease, which must name this hub
//!    (`does not hold the hub lease` otherwise); the first failed write stops them and goes to
//!    [`Hub::write_failed`], and `status.fleet` is stored again;
//! 4. the decision line (after the writes, so its `applied` and `error` say what happened);
//! 5. the Events on this member's copy (Warning when applying failed) and the metrics.
//!
//! A step that failed to read or write a member or a route counts once in
//! `plumb_hub_step_errors_total`.

mod inputs;
mod kube_io;
pub mod patches;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::ObjectReference;
use kube_event_recorder::EventRecorder;
use plumb_core::hub::{Effect, EventType, Hub, StepInput, StepOutput};
use plumb_model::spec::BackendRef;
use plumb_model::{AdaptivePolicy, AdaptivePolicySpec, FleetStatus, PolicyStatus};
use serde_json::Value;
use utc_time::Timestamp;

use crate::agent::decision_log::DecisionLog;
use crate::agent::hub::MemberClients;
use crate::agent::{AgentConfig, AgentMetrics};
pub use inputs::CopyRead;

/// The Events' `source.component`.
pub const EVENT_COMPONENT: &str = "plumb-agent";

/// What one pass did, for the hub loop's log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepSummary {
    /// Policies stepped.
    pub stepped: usize,
    /// Policies of a new term still waiting to read a majority of their copies.
    pub waiting: usize,
    /// Decision lines written.
    pub decisions: usize,
    /// Outcome lines written.
    pub outcomes: usize,
    /// Writes that landed (status patches and route patches).
    pub writes: usize,
    /// What failed, `<policy>: <cluster>: <error>` (or `<cluster>: <error>` for a pass that
    /// could not list this member's policies).
    pub errors: Vec<String>,
}

/// One policy's hub over this term, and the `status.fleet` it last stored.
struct Term {
    hub: Hub,
    stored: Option<FleetStatus>,
}

/// The policy being stepped.
struct Target<'a> {
    key: &'a str,
    namespace: &'a str,
    name: &'a str,
}

/// Drives plumb-core's hub step over real API servers while this agent leads.
pub struct HubDriver {
    identity: String,
    /// How long the floors it writes hold (`--test-intent-expiry`, else the seed's 5 min).
    intent_ttl: std::time::Duration,
    cluster: String,
    namespace: String,
    metrics: AgentMetrics,
    log: DecisionLog,
    terms: BTreeMap<String, Term>,
    last_reads: BTreeMap<String, BTreeMap<String, PolicyStatus>>,
    events: Option<EventRecorder>,
}

impl std::fmt::Debug for HubDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubDriver")
            .field("identity", &self.identity)
            .field("policies", &self.terms.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl HubDriver {
    /// A driver for this agent (its identity, Plumb's namespace for the Leases, the decision
    /// log) sharing `metrics`.
    pub fn new(config: &AgentConfig, metrics: AgentMetrics) -> HubDriver {
        HubDriver {
            identity: config.identity(),
            intent_ttl: config.timing.intent_ttl,
            cluster: config.cluster_name.clone(),
            namespace: config.namespace.clone(),
            metrics,
            log: DecisionLog::new(config.decision_log.clone()),
            terms: BTreeMap::new(),
            last_reads: BTreeMap::new(),
            events: None,
        }
    }

    /// Ends this agent's term: every policy's hub state goes (the next term adopts again),
    /// and so do the hub-only gauges.
    pub fn end_term(&mut self) {
        for key in self.terms.keys() {
            self.metrics.forget_policy(key);
        }
        self.terms.clear();
        self.last_reads.clear();
    }

    /// One pass: steps every AdaptivePolicy on this member's own copy at `now`.
    /// `members` holds one client per member, this one included under its own name.
    pub async fn step_all(&mut self, members: &MemberClients, now: Timestamp) -> StepSummary {
        let mut summary = StepSummary::default();
        let listings = list_members(members).await;
        let own = match listings.get(&self.cluster) {
            Some(Ok(own)) => own.clone(),
            Some(Err(e)) => {
                summary.errors.push(format!("{}: {e}", self.cluster));
                return summary;
            }
            None => {
                summary
                    .errors
                    .push(format!("{}: no client for this member", self.cluster));
                return summary;
            }
        };
        let gone: Vec<String> = self
            .terms
            .keys()
            .filter(|k| !own.contains_key(*k))
            .cloned()
            .collect();
        for key in gone {
            self.terms.remove(&key);
            self.metrics.forget_policy(&key);
        }
        self.last_reads.retain(|k, _| own.contains_key(k));
        if let Some(client) = members.get(&self.cluster) {
            self.events
                .get_or_insert_with(|| EventRecorder::new(client.clone(), EVENT_COMPONENT));
        }
        for (key, copy) in &own {
            let mut errors = Vec::new();
            self.step_policy(
                key,
                copy,
                &listings,
                members,
                now,
                &mut summary,
                &mut errors,
            )
            .await;
            if !errors.is_empty() {
                self.metrics
                    .step_errors
                    .get_or_create(&crate::agent::metrics::PolicyLabel {
                        policy: key.clone(),
                    })
                    .inc();
                summary
                    .errors
                    .extend(errors.into_iter().map(|e| format!("{key}: {e}")));
            }
        }
        summary
    }

    /// Reads, adopts, steps and carries out one policy; failures go to `errors`.
    #[allow(clippy::too_many_arguments)]
    async fn step_policy(
        &mut self,
        key: &str,
        copy: &Value,
        listings: &Listings,
        members: &MemberClients,
        now: Timestamp,
        summary: &mut StepSummary,
        errors: &mut Vec<String>,
    ) {
        let policy = match AdaptivePolicy::from_value(copy.clone()) {
            Ok(p) => p,
            Err(e) => {
                errors.push(format!("{}: {e}", self.cluster));
                return;
            }
        };
        let namespace = policy.metadata.namespace.clone().unwrap_or_default();
        let name = policy.metadata.name.clone().unwrap_or_default();
        let target = Target {
            key,
            namespace: &namespace,
            name: &name,
        };
        let spec = &policy.spec;
        let holders = inputs::fleet_holders(spec, &self.cluster, |c| members.contains_key(c));
        let mut reads: BTreeMap<String, CopyRead> = BTreeMap::new();
        for c in plumb_core::hub::HubConfig::from_spec(spec)
            .clusters
            .iter()
            .map(|c| &c.name)
            .chain(&holders)
        {
            reads.insert(c.clone(), inputs::copy_read(key, listings.get(c)));
        }
        let last = self.last_reads.entry(key.to_owned()).or_default();
        inputs::remember(&reads, last, errors);
        let member_inputs = inputs::member_inputs(spec, Some(&namespace), last);
        let effective = spec.effective(Some(&namespace));
        let weights = match read_weights(&effective, members).await {
            Ok(w) => w,
            Err(e) => {
                errors.push(e);
                None
            }
        };
        let mut term = match self.terms.remove(key) {
            Some(term) => term,
            None => match inputs::adoption(&reads, &holders) {
                Some(adopted) => Term {
                    hub: Hub::new(key, self.identity.clone(), adopted)
                        .with_intent_ttl(self.intent_ttl),
                    stored: None,
                },
                None => {
                    summary.waiting += 1;
                    return;
                }
            },
        };
        let suffix = random_suffix(now);
        let mut out = term.hub.step(&StepInput {
            spec,
            members: &member_inputs,
            weights: weights.as_ref(),
            now,
            id_suffix: &suffix,
        });
        summary.stepped += 1;
        for line in &out.outcomes {
            self.write_line(line, summary);
            summary.outcomes += 1;
        }
        let fresh: BTreeSet<String> = reads
            .iter()
            .filter(|(_, r)| matches!(r, CopyRead::Read(_)))
            .map(|(c, _)| c.clone())
            .collect();
        if !self
            .store_fleet(
                &target,
                &holders,
                &fresh,
                &mut term.stored,
                &out.fleet,
                members,
                summary,
                errors,
            )
            .await
        {
            errors.push("status.fleet not stored on a majority of copies: step discarded".into());
            return;
        }
        if let Err(e) = self
            .write_effects(&target, &effective, &out.effects, members, summary)
            .await
        {
            term.hub.write_failed(&mut out, &e);
            errors.push(e);
            let fleet = out.fleet.clone();
            self.store_fleet(
                &target,
                &holders,
                &fresh,
                &mut term.stored,
                &fleet,
                members,
                summary,
                &mut Vec::new(),
            )
            .await;
        }
        if let Some(decision) = &out.decision {
            self.write_line(decision, summary);
            summary.decisions += 1;
        }
        self.record_events(copy, &out, now, summary).await;
        self.terms.insert(key.to_owned(), term);
    }

    /// Writes one decision-log line; a failure is reported, the step goes on.
    fn write_line<T: serde::Serialize>(&mut self, line: &T, summary: &mut StepSummary) {
        if let Err(e) = self.log.write(line) {
            tracing::error!(error = %e, "decision log");
            summary.errors.push(e);
        }
    }

    /// Checks that `cluster`'s `plumb-hub` Lease names this hub.
    async fn fence(&self, members: &MemberClients, cluster: &str) -> Result<(), String> {
        let client = members
            .get(cluster)
            .ok_or_else(|| format!("{cluster}: not reachable (no client)"))?;
        let holder = kube_io::lease_holder(client, &self.namespace)
            .await
            .map_err(|e| format!("{cluster}: {e}"))?;
        fenced(cluster, &self.identity, holder.as_deref())
    }

    /// Stores `fleet` (unless it is what was stored last) on every holder's copy read this
    /// step; true once this member's copy and a majority of holders have it.
    #[allow(clippy::too_many_arguments)]
    async fn store_fleet(
        &mut self,
        target: &Target<'_>,
        holders: &[String],
        fresh: &BTreeSet<String>,
        stored: &mut Option<FleetStatus>,
        fleet: &FleetStatus,
        members: &MemberClients,
        summary: &mut StepSummary,
        errors: &mut Vec<String>,
    ) -> bool {
        if stored.as_ref() == Some(fleet) {
            return true;
        }
        let mut acknowledged = 0;
        let mut own = false;
        for cluster in holders.iter().filter(|c| fresh.contains(*c)) {
            let read = self
                .last_reads
                .get(target.key)
                .and_then(|l| l.get(cluster))
                .and_then(|s| s.fleet.as_ref());
            let result = match patches::status_patch("fleet", read, Some(fleet)) {
                None => Ok(false),
                Some(body) => self
                    .patch_status(members, cluster, target, "fleet", &body)
                    .await
                    .map(|()| true),
            };
            match result {
                Ok(wrote) => {
                    summary.writes += usize::from(wrote);
                    acknowledged += 1;
                    own |= *cluster == self.cluster;
                    if let Some(s) = self
                        .last_reads
                        .get_mut(target.key)
                        .and_then(|l| l.get_mut(cluster))
                    {
                        s.fleet = Some(fleet.clone());
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        let ok = own && acknowledged >= plumb_core::quorum::majority(holders.len());
        if ok {
            *stored = Some(fleet.clone());
        }
        ok
    }

    /// A fenced merge patch of `cluster`'s copy's status.
    async fn patch_status(
        &self,
        members: &MemberClients,
        cluster: &str,
        target: &Target<'_>,
        field: &str,
        body: &Value,
    ) -> Result<(), String> {
        self.fence(members, cluster).await?;
        let client = members
            .get(cluster)
            .ok_or_else(|| format!("{cluster}: not reachable (no client)"))?;
        kube_io::patch_status(client, target.namespace, target.name, body)
            .await
            .map_err(|e| format!("{cluster}: status.{field}: {e}"))
    }

    /// The intents, then the weights, in the step's order; stops at the first failure.
    async fn write_effects(
        &mut self,
        target: &Target<'_>,
        effective: &AdaptivePolicySpec,
        effects: &[Effect],
        members: &MemberClients,
        summary: &mut StepSummary,
    ) -> Result<(), String> {
        for effect in effects {
            match effect {
                Effect::WriteIntent {
                    cluster, intent, ..
                } => {
                    let read = self
                        .last_reads
                        .get(target.key)
                        .and_then(|l| l.get(cluster))
                        .and_then(|s| s.intent.as_ref());
                    let Some(body) = patches::status_patch("intent", read, intent.as_ref()) else {
                        continue;
                    };
                    self.patch_status(members, cluster, target, "intent", &body)
                        .await?;
                    summary.writes += 1;
                    let last = self.last_reads.entry(target.key.to_owned()).or_default();
                    last.entry(cluster.clone())
                        .or_default()
                        .intent
                        .clone_from(intent);
                }
                Effect::WriteWeights { weights } => {
                    summary.writes += self.write_weights(effective, weights, members).await?;
                }
                Effect::Event(_) | Effect::Metric(_) => {}
            }
        }
        Ok(())
    }

    /// Sets the shares on every route of `spec.traffic`, each fenced by its cluster's Lease.
    async fn write_weights(
        &self,
        effective: &AdaptivePolicySpec,
        weights: &BTreeMap<String, u32>,
        members: &MemberClients,
    ) -> Result<usize, String> {
        let backends = backends(effective);
        let mut writes = 0;
        for route in effective
            .traffic
            .iter()
            .flat_map(|t| t.routes.iter().flatten())
        {
            let cluster = route.cluster.as_deref().unwrap_or_default();
            let namespace = route.namespace.as_deref().unwrap_or_default();
            let name = route.name.as_deref().unwrap_or_default();
            self.fence(members, cluster).await?;
            let client = members
                .get(cluster)
                .ok_or_else(|| format!("{cluster}: not reachable (no client)"))?;
            let read = kube_io::get_route(client, namespace, name)
                .await
                .map_err(|e| format!("{cluster}: {e}"))?;
            let ops = patches::route_weights_patch(&read, namespace, &backends, weights);
            if ops.is_empty() {
                continue;
            }
            kube_io::patch_route(client, namespace, name, ops)
                .await
                .map_err(|e| format!("{cluster}: {e}"))?;
            writes += 1;
        }
        Ok(writes)
    }

    /// The step's Events on this member's copy, and its metric updates.
    async fn record_events(
        &self,
        copy: &Value,
        out: &StepOutput,
        now: Timestamp,
        summary: &mut StepSummary,
    ) {
        let involved = involved(copy);
        let policy = format!(
            "{}/{}",
            involved.namespace.as_deref().unwrap_or_default(),
            involved.name.as_deref().unwrap_or_default()
        );
        // An Event's name is its object's name and the time in nanoseconds: each Event of one
        // step gets its own nanosecond, or the second would collide with the first.
        let mut nanos = i128::from(now.unix_nanos());
        for effect in &out.effects {
            match effect {
                Effect::Event(event) => {
                    let Some(recorder) = &self.events else {
                        continue;
                    };
                    let type_ = match event.type_ {
                        EventType::Normal => "Normal",
                        EventType::Warning => "Warning",
                    };
                    let at = jiff::Timestamp::from_nanosecond(nanos)
                        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
                    nanos += 1;
                    if let Err(e) = recorder
                        .record(&involved, type_, &event.reason, &event.message, at)
                        .await
                    {
                        let e = crate::one_line(&format!("{policy}: event {}: {e}", event.reason));
                        tracing::warn!(error = %e, "hub event");
                        summary.errors.push(e);
                    }
                }
                Effect::Metric(metric) => self.metrics.apply(&policy, metric),
                Effect::WriteIntent { .. } | Effect::WriteWeights { .. } => {}
            }
        }
    }
}

/// Each member's listing of its policies, by cluster name.
type Listings = BTreeMap<String, Result<BTreeMap<String, Value>, String>>;

/// Lists every member's policies at once.
async fn list_members(members: &MemberClients) -> Listings {
    let lists =
        futures::future::join_all(members.iter().map(|(name, client)| async move {
            (name.clone(), kube_io::list_copies(client).await)
        }))
        .await;
    lists.into_iter().collect()
}

/// The current shares from the first route of `spec.traffic` (none without traffic, or when
/// the route reaches no backend).
async fn read_weights(
    effective: &AdaptivePolicySpec,
    members: &MemberClients,
) -> Result<Option<BTreeMap<String, u32>>, String> {
    let Some(route) = effective
        .traffic
        .as_ref()
        .and_then(|t| t.routes.as_ref())
        .and_then(|r| r.first())
    else {
        return Ok(None);
    };
    let cluster = route.cluster.as_deref().unwrap_or_default();
    let namespace = route.namespace.as_deref().unwrap_or_default();
    let name = route.name.as_deref().unwrap_or_default();
    let client = members
        .get(cluster)
        .ok_or_else(|| format!("{cluster}: not reachable (no client)"))?;
    let read = kube_io::get_route(client, namespace, name)
        .await
        .map_err(|e| format!("{cluster}: {e}"))?;
    let weights = patches::route_weights(&read, namespace, &backends(effective));
    Ok((!weights.is_empty()).then_some(weights))
}

/// Each cluster's backendRef in the routes.
fn backends(spec: &AdaptivePolicySpec) -> BTreeMap<String, BackendRef> {
    spec.clusters
        .iter()
        .flatten()
        .filter_map(|c| Some((c.name.clone()?, c.backend.clone()?)))
        .collect()
}

/// `Ok` when `holder` is this hub's identity; else the seed's `does not hold the hub lease`.
pub fn fenced(cluster: &str, identity: &str, holder: Option<&str>) -> Result<(), String> {
    if holder == Some(identity) {
        return Ok(());
    }
    Err(format!(
        "{cluster}: does not hold the hub lease (plumb-hub names {})",
        holder.map_or_else(|| "no holder".to_owned(), |h| format!("{h:?}"))
    ))
}

/// The Events' object: this member's copy of the policy.
fn involved(copy: &Value) -> ObjectReference {
    let text = |path: &str| {
        copy.pointer(path)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    ObjectReference {
        api_version: Some(plumb_model::policy::API_VERSION.to_owned()),
        kind: Some(plumb_model::policy::KIND.to_owned()),
        namespace: text("/metadata/namespace"),
        name: text("/metadata/name"),
        uid: text("/metadata/uid"),
        resource_version: text("/metadata/resourceVersion"),
        ..ObjectReference::default()
    }
}

/// Eight hex digits for a decision id, from the operating system's generator (the clock's
/// nanoseconds if that fails: the id must exist, its randomness only avoids collisions).
fn random_suffix(now: Timestamp) -> String {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let value = getrandom::u32().unwrap_or(now.unix_nanos() as u32);
    format!("{value:08x}")
}
