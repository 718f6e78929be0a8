//! The decision loop (docs/design-runtime.md#cadence): leader only, one pass on becoming leader,
//! then every `decisionLoopInterval` and early on early-tick signals. Passes never overlap and are
//! never interrupted; a lost lease ends the term at once (writes are gated per write by the
//! applier) and the loop waits for the next term.

use std::sync::Arc;
use std::time::{Duration, Instant};

use alfred_model::config::RuntimeOptions;
use futures::future::BoxFuture;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::run::apply::applier::{Applier, ApplyReport};
use crate::run::apply::leader::LeaderGate;
use crate::run::decision::pass::{Reads, Simulation, Term};
use crate::run::telemetry::metrics::Metrics;
use crate::run::watch::config::ConfigStore;
use crate::run::watch::observe::{Observer, now};
use alfred_dispatch::{PassOutput, SimulationOutcome, Simulator, Step};

/// The guard's name (policy and binding).
pub const GUARD_NAME: &str = "ome-alfred-migration-writes";

/// Everything the loop needs.
pub struct Decider {
    /// API client (uncached reads: journal, guard).
    pub client: Client,
    /// alfred's namespace.
    pub namespace: String,
    /// `--config-name`.
    pub config_name: String,
    /// Flags.
    pub runtime: RuntimeOptions,
    /// Config store.
    pub config: Arc<ConfigStore>,
    /// `--decision-log`.
    pub decision_log: Option<Arc<crate::run::decision::decision_log::DecisionLog>>,
    /// The observation loop.
    pub observer: Arc<Observer>,
    /// The leader gate.
    pub gate: LeaderGate,
    /// The applier.
    pub applier: Arc<Applier>,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// The simulator of the passes (`--simulation-workers`, or in process in the live tests).
    pub simulation: Simulation,
    /// Where the migration guard is read from (the API, except in the live tests).
    pub guard: Arc<dyn GuardSource>,
}

enum Wake {
    Timer,
    Early,
    Lost,
}

impl Decider {
    /// Runs forever.
    pub async fn run(self, mut early: mpsc::Receiver<()>) {
        let mut leader_rx = self.gate.subscribe();
        loop {
            // Wait for a term.
            while !*leader_rx.borrow_and_update() {
                if leader_rx.changed().await.is_err() {
                    return;
                }
            }
            tracing::info!("became leader; running decision passes");
            // Signals from before the term are covered by the first pass.
            while early.try_recv().is_ok() {}
            // The first pass of a term needs a snapshot: right after start-up the caches are
            // still listing, so wait for the observation loop's first one (woken when it is
            // published, not a whole decision interval) or the end of the term.
            while self.observer.latest().is_none() && *leader_rx.borrow() {
                tokio::select! {
                    _ = self.observer.wait_latest() => {}
                    r = leader_rx.changed() => {
                        if r.is_err() {
                            return;
                        }
                    }
                }
            }
            if !*leader_rx.borrow() {
                continue;
            }
            let mut pass = Term::new(
                self.runtime.clone(),
                &self.namespace,
                &self.config_name,
                self.simulation.clone(),
            );
            let mut last_apply = ApplyReport::default();
            self.one_pass(&mut pass, false, &mut last_apply).await;
            let (cfg, _) = self.config.current();
            let mut deadline = tokio::time::Instant::now() + cfg.decision_loop_interval;
            loop {
                let wake = tokio::select! {
                    biased;
                    r = leader_rx.changed() => {
                        if r.is_err() || !*leader_rx.borrow_and_update() { Wake::Lost } else { continue }
                    }
                    _ = tokio::time::sleep_until(deadline) => Wake::Timer,
                    Some(()) = early.recv() => Wake::Early,
                };
                match wake {
                    Wake::Lost => {
                        tracing::warn!("lost the lease: writes stopped; campaigning again");
                        break;
                    }
                    Wake::Timer => {
                        let fresh = early.try_recv().is_ok();
                        self.one_pass(&mut pass, fresh, &mut last_apply).await;
                        let (cfg, _) = self.config.current();
                        deadline = tokio::time::Instant::now() + cfg.decision_loop_interval;
                    }
                    Wake::Early => {
                        let regular_due = tokio::time::Instant::now() >= deadline;
                        self.one_pass(&mut pass, true, &mut last_apply).await;
                        if regular_due || tokio::time::Instant::now() >= deadline {
                            let (cfg, _) = self.config.current();
                            deadline = tokio::time::Instant::now() + cfg.decision_loop_interval;
                        }
                    }
                }
            }
        }
    }

    async fn one_pass(&self, pass: &mut Term, fresh: bool, last_apply: &mut ApplyReport) {
        let started = Instant::now();
        let (config, generation) = self.config.current();
        let snapshot = if fresh {
            match self.observer.observe_once().await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "snapshot refresh failed; skipping decision pass");
                    return;
                }
            }
        } else {
            match self.observer.latest() {
                Some(s) => s,
                None => {
                    tracing::debug!("no snapshot yet; skipping decision pass");
                    return;
                }
            }
        };
        // No pass on a snapshot the observation loop stopped refreshing (failing watches).
        let max_age = config.observation_loop_interval * 2 + Duration::from_secs(10);
        let age = now().since(snapshot.observed_at);
        if age > max_age {
            tracing::warn!(
                age_secs = age.as_secs(),
                "latest snapshot is stale; skipping decision pass"
            );
            return;
        }
        // A new leader reads the journal before it writes anything (every pass does).
        let journal = if self.runtime.executor_available() {
            match self.applier.read_journal().await {
                Ok(j) => Ok(j),
                Err(o) => {
                    tracing::warn!(outcome = o.label(), "cannot read the dispatch journal");
                    Err(format!(
                        "read {}: {}",
                        crate::run::apply::applier::JOURNAL_CONFIG_MAP,
                        o.label()
                    ))
                }
            }
        } else {
            Ok(None)
        };
        let (guard_policy, guard_binding) = if self.runtime.executor_available() {
            self.guard.read().await
        } else {
            (None, None)
        };
        let stored_records = if config.recommendations_config_map_enabled {
            self.applier
                .read_node_records(&config.recommendations_config_map_name)
                .await
        } else {
            Default::default()
        };
        let reads = Reads {
            snapshot,
            live: self.runtime.executor_available() && config.is_execute(),
            config_changed: self.config.generation() != generation,
            config,
            journal,
            stored_records,
            guard_policy,
            guard_binding,
            now: now(),
        };
        let pass_started = Instant::now();
        let Some(output) = self.drive(pass, &reads).await else {
            return;
        };
        let pass_ms = pass_started.elapsed().as_millis();
        if !self.gate.is_leader() {
            tracing::warn!("lease lost during the pass; its effects are dropped");
            return;
        }
        if let Some(e) = &output.journal_error {
            tracing::warn!(error = %e, "dispatch journal unavailable");
        }
        *last_apply = self
            .applier
            .apply_pass(&output.effects, output.if_final_save_fails.as_ref())
            .await;
        // One outcome per write effect, in order (the contingency's after the saved prefix).
        let written = output.effects.iter().filter(|e| e.is_write());
        for (e, (_, outcome)) in written.zip(&last_apply.writes) {
            pass.write_done(e, *outcome == crate::run::apply::applier::Outcome::Applied);
        }
        if let Some(log) = &self.decision_log {
            log.after_pass(&reads, &output);
        }
        self.metrics
            .decision_duration
            .observe(started.elapsed().as_secs_f64());
        tracing::info!(
            rows = output.record.recommendations.as_ref().map_or(0, Vec::len),
            effects = output.effects.len(),
            writes = last_apply.writes.len(),
            pass_ms,
            total_ms = started.elapsed().as_millis(),
            "decision pass"
        );
    }
}

impl Decider {
    /// Drives one pass to its end. The pass never waits: each step (the pass's own work,
    /// and a simulation it asks for, which may run a worker process) runs on the blocking
    /// pool, and the re-check's fresh looks are awaited here. `None`: the runtime is
    /// shutting down.
    async fn drive(&self, term: &mut Term, reads: &Reads) -> Option<PassOutput> {
        let (mut run, mut answers) = term.begin(reads);
        loop {
            let stepped = tokio::task::spawn_blocking(move || {
                let asked = match run.poll() {
                    Step::Done => Asked::Nothing,
                    Step::Look => Asked::Look,
                    Step::Simulate(request) => Asked::Answered(answers.simulate(&request)),
                };
                (run, answers, asked)
            })
            .await;
            let asked;
            (run, answers, asked) = match stepped {
                Ok(stepped) => stepped,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(_) => return None,
            };
            match asked {
                Asked::Nothing => return term.finish(run).ok(),
                Asked::Look => run.handle_look(self.fresh_look().await),
                Asked::Answered(outcome) => run.handle_simulation(outcome),
            }
        }
    }

    /// The re-check's fresh look (docs/design-pass.md#pre-submit-re-check steps 1 and 12): a
    /// new snapshot from uncached reads each time the pass asks. A pass with no move to
    /// dispatch never asks, so no pass lists the whole cluster for nothing.
    async fn fresh_look(&self) -> Option<Arc<alfred_model::ClusterSnapshot>> {
        match self.observer.observe_fresh().await {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!(error = %e, "fresh observation for the re-check failed");
                None
            }
        }
    }
}

/// What one step of a pass asked of the decider.
enum Asked {
    /// Nothing: the pass is over.
    Nothing,
    /// A fresh look.
    Look,
    /// A simulation, answered on the blocking pool.
    Answered(SimulationOutcome),
}

/// Where a pass's view of the migration guard comes from (docs/design-pass.md#migration-guard): the
/// ValidatingAdmissionPolicy `ome-alfred-migration-writes` and its binding as read, `None`
/// when missing or unreadable. `alfred run` always reads them from the API ([`ApiGuard`]);
/// only [`crate::run::Harness`] accepts another source (the 1.20 test API server has no
/// ValidatingAdmissionPolicy API).
pub trait GuardSource: Send + Sync {
    /// Reads the policy and its binding.
    fn read(&self) -> BoxFuture<'_, (Option<Value>, Option<Value>)>;
}

/// The real guard read: uncached GETs through the API.
pub struct ApiGuard(pub Client);

impl GuardSource for ApiGuard {
    fn read(&self) -> BoxFuture<'_, (Option<Value>, Option<Value>)> {
        Box::pin(read_guard(&self.0))
    }
}

/// Reads the migration guard's two admission objects uncached (`None`: missing or unreadable).
pub async fn read_guard(client: &Client) -> (Option<Value>, Option<Value>) {
    let read = |kind: &str, plural: &str| {
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind),
            plural,
        );
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        async move {
            match tokio::time::timeout(Duration::from_secs(10), api.get(GUARD_NAME)).await {
                Ok(Ok(o)) => serde_json::to_value(o).ok(),
                _ => None,
            }
        }
    };
    let policy = read("ValidatingAdmissionPolicy", "validatingadmissionpolicies").await;
    let binding = read(
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
    )
    .await;
    (policy, binding)
}
