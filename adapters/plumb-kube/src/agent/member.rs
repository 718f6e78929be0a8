//! The member loop: watches of this member's Deployments, HPAs, Pods, Nodes, Namespaces,
//! Karpenter NodePools, NodeClaims and their Events, and every AdaptivePolicy ([`watch`],
//! [`store`]); once they have listed and then every `--interval`, one pass: `now` read once,
//! and for each policy its signals queried ([`super::prometheus`]), its report computed and
//! `status.report` / `status.conditions` patched with only what changed ([`pass`];
//! docs/plumb/member-loop.md). A report written bumps `reports_changed`, so the hub
//! plans sooner.

pub mod pass;
pub mod store;
pub mod watch;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::{Api, Client};
use plumb_core::member::{Diagnostics, Occupancy};
use plumb_model::policy::{GROUP, KIND, PLURAL, VERSION};
use plumb_model::{AdaptivePolicy, Timestamp};
use serde_json::Value;
use tokio::sync::watch as channel;

use self::pass::{PolicyOutcome, pass_policy, same};
use self::store::{PolicyCopy, Stores, lock};
use super::metrics::PolicyLabel;
use super::prometheus::{Prometheus, signal_queries};
use super::{AgentConfig, AgentMetrics};
use crate::signals::{Answer, SignalAnswers};

/// The field manager of the member's status patches.
pub const FIELD_MANAGER: &str = "plumb-agent";

/// Everything the member loop needs from the agent.
#[derive(Clone)]
pub struct MemberContext {
    /// The agent's configuration (cluster name, interval, Prometheus URL).
    pub config: AgentConfig,
    /// This member's API server.
    pub client: Client,
    /// The shared metrics.
    pub metrics: AgentMetrics,
    /// Bumped whenever a pass writes a report.
    pub reports_changed: channel::Sender<u64>,
    /// Set after the first pass (`/readyz`).
    pub reported: Arc<AtomicBool>,
}

impl std::fmt::Debug for MemberContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemberContext")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PassSummary {
    /// Policy copies seen.
    pub policies: usize,
    /// Status patches written.
    pub patched: usize,
    /// Patches that failed (logged).
    pub failed: usize,
}

/// The member loop's state between passes.
pub struct MemberLoop {
    ctx: MemberContext,
    stores: Stores,
    prometheus: Result<Prometheus, String>,
    policies: ApiResource,
    /// Each policy's `status.intent` at the previous pass.
    intents: BTreeMap<String, Value>,
    /// The generation whose ignored-fields notice was logged.
    noticed: BTreeMap<String, Option<i64>>,
    /// The static diagnostics last logged.
    diagnostics: BTreeMap<String, Diagnostics>,
}

impl std::fmt::Debug for MemberLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemberLoop").finish_non_exhaustive()
    }
}

impl MemberLoop {
    /// A loop over `stores` (fed by [`watch::spawn`]).
    pub fn new(ctx: MemberContext, stores: Stores) -> MemberLoop {
        let prometheus = match ctx.config.prometheus_url.as_deref() {
            Some(url) if !url.trim().is_empty() => Prometheus::new(url),
            _ => Err("no --prometheus-url is set".to_owned()),
        };
        let policies =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, KIND), PLURAL);
        MemberLoop {
            ctx,
            stores,
            prometheus,
            policies,
            intents: BTreeMap::new(),
            noticed: BTreeMap::new(),
            diagnostics: BTreeMap::new(),
        }
    }

    /// The same loop with another Prometheus client (tests shorten its timeout).
    pub fn with_prometheus(mut self, prometheus: Prometheus) -> MemberLoop {
        self.prometheus = Ok(prometheus);
        self
    }

    /// One pass at the current time.
    pub async fn pass(&mut self) -> PassSummary {
        let nanos = i64::try_from(jiff::Timestamp::now().as_nanosecond()).unwrap_or(i64::MAX);
        self.pass_at(Timestamp::from_unix_nanos(nanos)).await
    }

    /// One pass at `now`: every policy copy reported and patched.
    pub async fn pass_at(&mut self, now: Timestamp) -> PassSummary {
        let copies = self.stores.policies();
        let mut observation = self.stores.lend();
        let mut occupancy = Occupancy::new();
        let readable: Vec<AdaptivePolicy> = copies
            .iter()
            .filter_map(|c| c.parsed.as_ref().ok().cloned())
            .collect();
        let mut summary = PassSummary {
            policies: copies.len(),
            ..PassSummary::default()
        };
        let mut report_written = false;
        for copy in &copies {
            self.notice_ignored_fields(copy);
            let answers = self.answers(copy, now).await;
            let others: Vec<AdaptivePolicy> = readable
                .iter()
                .filter(|p| p.key() != copy.key)
                .cloned()
                .collect();
            let intent = copy.status.get("intent").cloned().unwrap_or(Value::Null);
            let intent_changed = self
                .intents
                .insert(copy.key.clone(), intent.clone())
                .is_some_and(|previous| !same(&previous, &intent));
            let outcome = pass_policy(
                copy,
                &others,
                &mut occupancy,
                &mut observation,
                &answers,
                &self.ctx.config.cluster_name,
                now,
                intent_changed,
            );
            self.record(&outcome);
            if let Some(patch) = &outcome.patch {
                match self.write(copy, patch).await {
                    Ok(()) => {
                        summary.patched += 1;
                        report_written |= outcome.writes_report;
                    }
                    Err(e) => {
                        summary.failed += 1;
                        tracing::warn!(policy = %copy.key, error = %e, patch = %patch, "status patch failed; retried next pass");
                    }
                }
            }
        }
        self.stores.give_back(observation);
        self.forget_deleted(&copies);
        if report_written {
            self.ctx
                .reports_changed
                .send_modify(|n| *n = n.wrapping_add(1));
        }
        self.ctx.reported.store(true, Ordering::SeqCst);
        summary
    }

    /// The policy's signal answers at `now` (each configured signal fails alike without a
    /// usable Prometheus URL).
    async fn answers(&self, copy: &PolicyCopy, now: Timestamp) -> SignalAnswers {
        let Ok(policy) = &copy.parsed else {
            return SignalAnswers::new();
        };
        match &self.prometheus {
            Ok(prometheus) => prometheus.query_signals(&policy.spec, now).await,
            Err(why) => signal_queries(&policy.spec)
                .into_iter()
                .map(|(name, _)| (name, Answer::Error(why.clone())))
                .collect(),
        }
    }

    /// Patches the copy's status subresource; the answer goes into the store at once, so the
    /// next pass compares with what was written even before the watch delivers it.
    async fn write(&self, copy: &PolicyCopy, patch: &Value) -> Result<(), kube::Error> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.ctx.client.clone(), &copy.namespace, &self.policies);
        let params = PatchParams::apply(FIELD_MANAGER);
        let written = api
            .patch_status(&copy.name, &params, &Patch::Merge(patch))
            .await?;
        if let Ok(object) = serde_json::to_value(written) {
            let _ = lock(&self.stores.policies).apply(kube::runtime::watcher::Event::Apply(object));
        }
        Ok(())
    }

    /// Metrics and the static diagnostics log of one outcome.
    fn record(&mut self, outcome: &PolicyOutcome) {
        let label = PolicyLabel {
            policy: outcome.key.clone(),
        };
        let metrics = &self.ctx.metrics;
        match outcome.gauges {
            Some((needed, room)) => {
                metrics
                    .needed_replicas
                    .get_or_create(&label)
                    .set(i64::from(needed));
                metrics
                    .static_room_replicas
                    .get_or_create(&label)
                    .set(i64::from(room));
            }
            None => {
                metrics.needed_replicas.remove(&label);
                metrics.static_room_replicas.remove(&label);
            }
        }
        if outcome.ready.status != "True" {
            tracing::debug!(policy = %outcome.key, reason = %outcome.ready.reason, message = %outcome.ready.message, "not Ready");
        }
        if let Some(d) = &outcome.diagnostics
            && self.diagnostics.get(&outcome.key) != Some(d)
        {
            tracing::info!(policy = %outcome.key, registered = d.registered, filtered = d.filtered, promised_placed = d.promised_placed, promised_unplaced = d.promised_unplaced, "static diagnostics");
            self.diagnostics.insert(outcome.key.clone(), d.clone());
        }
    }

    /// Once per policy generation: the accepted fields this build ignores (D.6).
    fn notice_ignored_fields(&mut self, copy: &PolicyCopy) {
        let Ok(policy) = &copy.parsed else { return };
        if self.noticed.get(&copy.key) == Some(&copy.generation) {
            return;
        }
        self.noticed.insert(copy.key.clone(), copy.generation);
        for notice in policy.spec.check().notices {
            tracing::info!(policy = %copy.key, generation = ?copy.generation, notice = %notice, "policy field ignored by this build");
        }
    }

    /// Drops the state and series of policies no longer present.
    fn forget_deleted(&mut self, copies: &[PolicyCopy]) {
        let present: BTreeSet<&str> = copies.iter().map(|c| c.key.as_str()).collect();
        let gone: Vec<String> = self
            .intents
            .keys()
            .filter(|k| !present.contains(k.as_str()))
            .cloned()
            .collect();
        for key in gone {
            self.intents.remove(&key);
            self.noticed.remove(&key);
            self.diagnostics.remove(&key);
            let label = PolicyLabel { policy: key };
            self.ctx.metrics.needed_replicas.remove(&label);
            self.ctx.metrics.static_room_replicas.remove(&label);
        }
    }
}

/// Runs the member loop until `stop` turns true: starts the watches, waits until they have
/// listed, then passes at once and every `--interval`.
pub async fn run(ctx: MemberContext, mut stop: channel::Receiver<bool>) -> anyhow::Result<()> {
    let stores = Stores::default();
    let watches = watch::spawn(&ctx.client, &stores);
    let interval = ctx.config.interval;
    let mut member = MemberLoop::new(ctx, stores.clone());
    if let Err(why) = &member.prometheus {
        tracing::warn!(reason = %why, "signals cannot be read: every configured signal fails");
    }
    let listed = async {
        while !stores.listed() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let stopped_early = tokio::select! {
        () = listed => false,
        () = stopped(&mut stop) => true,
    };
    if !stopped_early {
        tracing::info!("member watches listed; reporting");
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    let summary = member.pass().await;
                    tracing::debug!(policies = summary.policies, patched = summary.patched, failed = summary.failed, "report pass");
                }
                () = stopped(&mut stop) => break,
            }
        }
    }
    for w in watches {
        w.abort();
    }
    Ok(())
}

/// Until `stop` turns true (or its sender is gone).
async fn stopped(stop: &mut channel::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await.map(|_| ());
}
