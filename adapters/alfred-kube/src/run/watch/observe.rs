//! The observation loop (docs/design-runtime.md#observation-loop): every replica, every
//! `observationLoopInterval`, builds the snapshot from the caches with the pure
//! `alfred_observe::observe`, publishes it as "latest" and republishes the cluster gauges.
//! A refresh (early passes) is the same pass, serialized with the periodic one. Until the
//! first snapshot exists the loop waits on the caches' first lists (woken by the last one to
//! finish), and the decision loop waits on the first snapshot ([`Observer::wait_latest`]).

use std::sync::{Arc, RwLock};
use std::time::Instant;

use alfred_model::config::{Config, RuntimeOptions};
use alfred_model::effect::Effect;
use alfred_model::metric::MetricId;
use alfred_model::{ClusterSnapshot, Timestamp};
use alfred_observe::ObserveSettings;
use tokio::sync::{Mutex, Notify};

use crate::run::decode::first_list::FirstList;
use crate::run::telemetry::metrics::Metrics;
use crate::run::watch::caches::Caches;
use crate::run::watch::config::ConfigStore;

/// How long a cold start waits for every kind but Pods before it gives up building the first
/// snapshot while the Pods list ([`Observer::run`]); the other kinds are small and list in a
/// fraction of a second, so a longer wait means one is failing.
const FIRST_STREAMED_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long the first snapshot waits, after its Pods' list completed, for the Pod store to
/// report it listed (normally the same instant).
const FIRST_STORE_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Now, as alfred's timestamp.
pub fn now() -> Timestamp {
    let nanos = jiff::Timestamp::now().as_nanosecond();
    Timestamp::from_unix_nanos(i64::try_from(nanos).unwrap_or(i64::MAX))
}

/// The cluster gauges of docs/metrics-and-events.md#metrics from a snapshot: the pool scores of the
/// same stage the decision pass uses, published by the core's reporter (the adapter computes
/// nothing itself).
pub fn cluster_gauges(snap: &ClusterSnapshot, config: &Config) -> Vec<Effect> {
    use alfred_dispatch::Stages;
    let pools = alfred_dispatch::CoreStages.score(snap, config);
    alfred_dispatch::report::cluster_gauges(snap, &pools)
}

/// The observation loop's state.
pub struct Observer {
    /// For the uncached reads of [`Observer::observe_fresh`].
    client: kube::Client,
    caches: Arc<Caches>,
    config: Arc<ConfigStore>,
    runtime: RuntimeOptions,
    metrics: Arc<Metrics>,
    latest: RwLock<Option<Arc<ClusterSnapshot>>>,
    /// Woken whenever a snapshot is published.
    published: Notify,
    serial: Mutex<()>,
    /// Optional path the latest snapshot is written to (JSON) after every observation.
    dump: Option<std::path::PathBuf>,
}

impl Observer {
    /// A new observer.
    pub fn new(
        client: kube::Client,
        caches: Arc<Caches>,
        config: Arc<ConfigStore>,
        runtime: RuntimeOptions,
        metrics: Arc<Metrics>,
        dump: Option<std::path::PathBuf>,
    ) -> Observer {
        Observer {
            client,
            caches,
            config,
            runtime,
            metrics,
            latest: RwLock::new(None),
            published: Notify::new(),
            serial: Mutex::new(()),
            dump,
        }
    }

    /// The latest snapshot.
    pub fn latest(&self) -> Option<Arc<ClusterSnapshot>> {
        self.latest
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The latest snapshot, waiting for the first one if there is none yet.
    pub async fn wait_latest(&self) -> Arc<ClusterSnapshot> {
        loop {
            // Created before the check: `notify_waiters` reaches a `Notified` from its creation.
            let published = self.published.notified();
            if let Some(s) = self.latest() {
                return s;
            }
            published.await;
        }
    }

    /// A snapshot from uncached reads (docs/design-pass.md#pre-submit-re-check steps 1 and 12: the
    /// execute-mode re-check must not decide on what a lagging watch last saw), dated when
    /// the reads completed: the pass's deadline and staleness test read that time. Not
    /// published as the latest snapshot and no gauges: the observation loop keeps that role.
    pub async fn observe_fresh(&self) -> Result<Arc<ClusterSnapshot>, String> {
        let (config, _) = self.config.current();
        let executor = self.runtime.executor_available();
        let objects = crate::run::watch::caches::read_uncached(&self.client).await?;
        let at = now();
        tokio::task::spawn_blocking(move || {
            let settings = ObserveSettings::from_config(&config, executor);
            Arc::new(objects.observe(&settings, at).snapshot)
        })
        .await
        .map_err(|e| format!("build fresh snapshot: {e}"))
    }

    /// One observation pass (periodic or refresh).
    pub async fn observe_once(&self) -> Result<Arc<ClusterSnapshot>, String> {
        let _serial = self.serial.lock().await;
        let started = Instant::now();
        let (config, _) = self.config.current();
        let executor = self.runtime.executor_available();
        self.metrics.set(
            MetricId::OmenativeUnavailable,
            &[],
            if executor { 0.0 } else { 1.0 },
        );
        let objects = self
            .caches
            .objects()
            .map_err(|e| format!("build snapshot: {e}"))?;
        let cfg = config.clone();
        let snapshot = tokio::task::spawn_blocking(move || {
            let settings = ObserveSettings::from_config(&cfg, executor);
            let snapshot = objects.observe(&settings, now()).snapshot;
            drop(objects);
            Arc::new(snapshot)
        })
        .await
        .map_err(|e| format!("build snapshot: {e}"))?;
        self.publish(snapshot, started, config).await
    }

    /// The first snapshot, built while the Pods' first list streams in ([`Caches::first_objects`]):
    /// starts once every other kind is listed and reads each Pod as it is decoded, so at a cold
    /// start only the end of the snapshot's work follows the list. `Err` (nothing published)
    /// when that list is already over or failed, or a kind is not ready; the observation loop
    /// then builds from the caches.
    ///
    /// [`Caches::first_objects`]: crate::run::watch::caches::Caches::first_objects
    async fn observe_first(&self) -> Result<Arc<ClusterSnapshot>, String> {
        let _serial = self.serial.lock().await;
        let started = Instant::now();
        let (config, _) = self.config.current();
        let executor = self.runtime.executor_available();
        let (objects, pods) = self
            .caches
            .first_objects()
            .ok_or("the first Pod list cannot be streamed into a snapshot")?;
        let cfg = config.clone();
        let snapshot = tokio::task::spawn_blocking(move || {
            let settings = ObserveSettings::from_config(&cfg, executor);
            let snapshot = objects.observe_arriving(&pods, &settings, now()).snapshot;
            drop(objects);
            Arc::new(snapshot)
        })
        .await
        .map_err(|e| format!("build snapshot: {e}"))?;
        // The tap closes as the list's end reaches the Pod watcher, just before its store
        // applies it: the store is given a moment to say it is listed too.
        if self.caches.first_list_state() == FirstList::Complete {
            let _ = tokio::time::timeout(FIRST_STORE_WAIT, self.caches.wait_listed()).await;
        }
        self.caches
            .first_list_complete()
            .map_err(|e| format!("build snapshot: {e}"))?;
        self.publish(snapshot, started, config).await
    }

    /// Publishes a built snapshot, then the cluster gauges and the dump.
    async fn publish(
        &self,
        snapshot: Arc<ClusterSnapshot>,
        started: Instant,
        config: Arc<Config>,
    ) -> Result<Arc<ClusterSnapshot>, String> {
        let built_ms = started.elapsed().as_millis();
        // Published before the gauges are computed: the decision pass needs only the snapshot,
        // and on a cold start at 5,000 nodes the gauges (pool scores, 20,000 per-node gauge
        // effects) would delay the first record by their whole cost (BENCH-LIVE.md). The pass
        // and the gauges then run side by side.
        *self
            .latest
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(snapshot.clone());
        self.published.notify_waiters();
        let for_gauges = snapshot.clone();
        let gauges = tokio::task::spawn_blocking(move || cluster_gauges(&for_gauges, &config))
            .await
            .map_err(|e| format!("cluster gauges: {e}"))?;
        self.metrics.reset_cluster_gauges();
        for g in &gauges {
            if let Effect::Metric(m) = g
                && let Err(e) = self.metrics.apply(m)
            {
                tracing::warn!(error = %e, "gauge ignored");
            }
        }
        self.metrics
            .observation_duration
            .observe(started.elapsed().as_secs_f64());
        if let Some(path) = &self.dump {
            match serde_json::to_vec(&*snapshot) {
                Ok(bytes) => {
                    let tmp = path.with_extension("tmp");
                    if std::fs::write(&tmp, bytes)
                        .and_then(|()| std::fs::rename(&tmp, path))
                        .is_err()
                    {
                        tracing::warn!(path = %path.display(), "cannot write the snapshot dump");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot encode the snapshot"),
            }
        }
        tracing::debug!(
            nodes = snapshot.nodes.len(),
            pods = snapshot.pods.len(),
            workloads = snapshot.workloads.len(),
            problems = snapshot.problems.len(),
            built_ms,
            total_ms = started.elapsed().as_millis(),
            "observation pass"
        );
        Ok(snapshot)
    }

    /// Runs forever: one pass now, then one every `observationLoopInterval` (re-read each time).
    pub async fn run(self: Arc<Self>) {
        let mut first = true;
        // A cold start: the first snapshot is built while the Pods are still listing, unless
        // another kind takes too long (the loop then waits for everything, as it does later).
        let mut streamed = false;
        if tokio::time::timeout(FIRST_STREAMED_WAIT, self.caches.wait_listed_but_pods())
            .await
            .is_ok()
        {
            match self.observe_first().await {
                Ok(_) => streamed = true,
                Err(e) => tracing::debug!(error = %e, "first snapshot not streamed"),
            }
        }
        loop {
            let observed = if std::mem::take(&mut streamed) {
                Ok(())
            } else {
                self.observe_once().await.map(drop)
            };
            if let Err(e) = observed {
                if first {
                    tracing::info!(error = %e, "initial observation pass failed");
                } else {
                    tracing::warn!(error = %e, "observation pass failed");
                }
            }
            first = false;
            let (config, _) = self.config.current();
            if self.latest().is_some() {
                tokio::time::sleep(config.observation_loop_interval).await;
                continue;
            }
            // No snapshot yet. While the caches are still listing, the next pass starts the
            // moment the last kind finishes its first list (or fails: a missing CRD); the bound keeps a pass
            // (and its log line saying what is missing) at least every second meanwhile.
            let retry = config
                .observation_loop_interval
                .min(std::time::Duration::from_secs(1));
            if self.caches.listed() {
                tokio::time::sleep(retry).await;
            } else {
                let _ = tokio::time::timeout(retry, self.caches.wait_listed()).await;
            }
        }
    }
}
