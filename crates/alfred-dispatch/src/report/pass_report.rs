//! The report at the end of a pass (docs/design-pass.md#pass-pipeline steps 6–7): the breaker
//! and executor gauges, the rows, `last-cycle.json` with the node records, Node events and
//! cluster gauges, and the pass's second ending for a failed journal save after the request
//! (docs/design-pass.md#dispatch-pass `attempt()` step 6).

use std::collections::BTreeMap;

use alfred_model::config::{Config, RuntimeOptions, Telemetry};
use alfred_model::effect::{Effect, MetricChange, MetricUpdate};
use alfred_model::metric::MetricId;
use alfred_model::plan::PlanView;
use alfred_model::record::{LastCycle, NodeRecord};
use alfred_model::{ClusterSnapshot, Timestamp};
use alfred_policy::NodeMarker;

use crate::dispatch::Decision;
use crate::pass::Contingency;
use crate::pass::stages::PoolGauge;
use crate::report::{self, RowsAs, Submissions};

/// What the report reads besides the rows.
pub(crate) struct PassReport<'a> {
    /// The pass's snapshot.
    pub snapshot: &'a ClusterSnapshot,
    /// Configuration.
    pub config: &'a Config,
    /// Flags (helper threads, whether an executor is there).
    pub runtime: &'a RuntimeOptions,
    /// The node records the durable state holds.
    pub stored_node_records: &'a BTreeMap<String, NodeRecord>,
    /// The node records of the previous pass (the lifecycle's seed).
    pub previous_node_records: &'a BTreeMap<String, NodeRecord>,
    /// The node-health policy's markers.
    pub node_markers: &'a [NodeMarker],
    /// Pool scores.
    pub pools: &'a [PoolGauge],
    /// The drain plans as the record shows them.
    pub plan_views: Vec<PlanView>,
    /// Whether the circuit breaker is open after the dispatch.
    pub breaker_open: bool,
    /// Now.
    pub now: Timestamp,
}

/// What the report produced besides its effects.
pub(crate) struct Reported {
    /// `last-cycle.json`.
    pub record: LastCycle,
    /// The node records now.
    pub node_records: BTreeMap<String, NodeRecord>,
    /// The second ending, when the pass wrote a request followed by a journal save.
    pub if_final_save_fails: Option<Contingency>,
}

/// Appends the report's effects for `decisions` to `effects` (the pass's effects so far).
pub(crate) fn report_pass(
    r: &PassReport<'_>,
    decisions: &[Decision],
    effects: &mut Vec<Effect>,
) -> Reported {
    // The journal save right after the request annotation (docs/design-pass.md#dispatch-pass
    // attempt() step 6): if it fails, the request stands but the journal does not know it.
    let final_save = effects
        .iter()
        .position(|e| matches!(e, Effect::RequestMigration { .. }))
        .map(|i| i + 1)
        .filter(|&i| matches!(effects.get(i), Some(Effect::WriteJournal { .. })));
    let (node_records, node_fx, deleted) = if r.config.policies.node_health.enabled {
        report::node_records(
            r.node_markers,
            r.snapshot.observed_at,
            r.previous_node_records,
        )
    } else {
        // docs/design-pass.md#node-records: no records and no Node events; the stored keys go.
        let deleted =
            report::node_keys_without_node_health(r.stored_node_records, r.previous_node_records);
        (BTreeMap::new(), Vec::new(), deleted)
    };
    let tail = Tail {
        r,
        node_records: &node_records,
        node_fx: &node_fx,
        deleted: &deleted,
    };
    // The decisions with every `RequestSubmitted` read as `SubmissionJournalUncertain`.
    let uncertain = |save_index: usize, rows_split: bool| {
        let mut then = Vec::new();
        tail.append(
            decisions,
            Submissions::JournalUncertain,
            &mut then,
            rows_split,
        );
        Contingency { save_index, then }
    };
    let helper = r.runtime.helper_threads;
    // The two endings read the same inputs: with a helper thread, made at once, each on one
    // thread (the rows are not split then: one helper thread at a time).
    let (record, if_final_save_fails) = match final_save {
        Some(save_index) if helper => std::thread::scope(|scope| {
            let second = scope.spawn(move || uncertain(save_index, false));
            let record = tail.append(decisions, Submissions::AsDecided, effects, false);
            let second = second
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (record, Some(second))
        }),
        _ => {
            let second = final_save.map(|save_index| uncertain(save_index, helper));
            let record = tail.append(decisions, Submissions::AsDecided, effects, helper);
            (record, second)
        }
    };
    Reported {
        record,
        node_records,
        if_final_save_fails,
    }
}

/// The report's effects after the dispatch's, for either ending.
struct Tail<'a> {
    r: &'a PassReport<'a>,
    node_records: &'a BTreeMap<String, NodeRecord>,
    node_fx: &'a [Effect],
    deleted: &'a [String],
}

impl Tail<'_> {
    /// Appends the report's effects to `fx` (in place: a pass has thousands of them, one
    /// per advice row and per GPU node, so they are not collected and moved again).
    /// `rows_split`: whether the rows may be built in two halves on two threads.
    fn append(
        &self,
        decisions: &[Decision],
        submissions: Submissions,
        fx: &mut Vec<Effect>,
        rows_split: bool,
    ) -> LastCycle {
        let r = self.r;
        let cfg = r.config;
        let telemetry = r.runtime.telemetry;
        let full = telemetry == Telemetry::Full;
        if full {
            let node_fx = self.node_fx.len();
            fx.reserve(decisions.len() * 3 + r.snapshot.nodes.len() * 4 + node_fx + 64);
            fx.push(gauge(
                MetricId::CircuitBreakerState,
                if r.breaker_open { 1.0 } else { 0.0 },
            ));
            let dispatcher = r.runtime.executor_available();
            fx.push(gauge(
                MetricId::OmenativeUnavailable,
                if dispatcher { 0.0 } else { 1.0 },
            ));
        }
        // The recommendations ConfigMap goes before the rows' effects: its slot is taken now
        // and filled once the record is made (inserting it then would move every effect
        // after it, thousands a pass).
        let at = fx.len();
        if cfg.recommendations_config_map_enabled {
            fx.push(gauge(MetricId::CircuitBreakerState, 0.0));
        }
        let split_min = if rows_split {
            report::SPLIT_MIN_DECISIONS
        } else {
            usize::MAX
        };
        let how = RowsAs {
            submissions,
            telemetry,
        };
        let rows = report::rows_into_halves_as(decisions, how, cfg.mode, fx, split_min);
        let mut record = LastCycle::new(r.now, report::record_mode(cfg.mode), rows);
        record.plans = r.plan_views.clone();
        if cfg.recommendations_config_map_enabled {
            // Before the rows' effects, in the slot taken above.
            fx[at] = report::recommendations_effect(
                &cfg.recommendations_config_map_name,
                &record,
                self.node_records,
                self.deleted.to_vec(),
            );
        }
        // The Node events (kept without telemetry) and the signal counters (not).
        let node_fx = self.node_fx.iter();
        fx.extend(node_fx.filter(|e| full || !e.is_telemetry()).cloned());
        if full {
            report::cluster_gauges_into(r.snapshot, r.pools, fx);
        }
        record
    }
}

fn gauge(id: MetricId, value: f64) -> Effect {
    Effect::Metric(MetricUpdate {
        name: id.name().into(),
        labels: vec![],
        change: MetricChange::Set(value),
    })
}
