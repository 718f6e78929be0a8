//! `--decision-log PATH|-` (docs/design-pass.md#decision-log): the leader
//! appends one `kind: decision` JSON line per pass that decided something, and `kind: outcome`
//! lines with the same `decisionId` 1, 5 and 15 minutes later, driven from the observation loop's
//! snapshots (so they are written between passes too).
//!
//! The lines and the follow-up are the pure core's (`alfred_dispatch::decision_log`, shared
//! with `alfred-twin`); this module only gathers what the pass produced, feeds the tracker
//! with each new snapshot, and appends the lines to the file (or stdout), one line per
//! record, flushed after each. Schema: `adapters/alfred-twin/README.md`.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alfred_dispatch::decision_log::{
    self, OutcomeTracker, PENDING_PER_DECISION, SnapshotFacts, TrackedDecision,
};
use alfred_dispatch::{Journal, JournalSlot, PassOutput};
use alfred_model::ClusterSnapshot;
use alfred_model::config::Config;
use serde_json::Value;

use crate::run::decision::pass::Reads;
use crate::run::watch::config::ConfigStore;
use crate::run::watch::observe::Observer;

/// Appends JSON lines to a file (created if missing) or stdout.
pub struct LineWriter {
    out: Box<dyn Write + Send>,
}

impl LineWriter {
    /// `-` is stdout; anything else a file opened for appending.
    pub fn open(target: &str) -> io::Result<LineWriter> {
        if target == "-" {
            return Ok(LineWriter::new(Box::new(io::stdout())));
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(target)?;
        Ok(LineWriter::new(Box::new(file)))
    }

    /// Over any writer.
    pub fn new(out: Box<dyn Write + Send>) -> LineWriter {
        LineWriter { out }
    }

    /// One record: compact JSON, a newline, flushed.
    pub fn write(&mut self, line: &Value) -> io::Result<()> {
        let mut text = serde_json::to_vec(line).map_err(io::Error::other)?;
        text.push(b'\n');
        self.out.write_all(&text)?;
        self.out.flush()
    }
}

struct Inner {
    writer: LineWriter,
    tracker: OutcomeTracker,
    journal: Option<Journal>,
    sequence: u64,
    last_observed: Option<alfred_model::Timestamp>,
}

/// The decision log of this replica (only the leader's passes feed it).
pub struct DecisionLog {
    inner: Mutex<Inner>,
    ack_timeout: Duration,
}

impl DecisionLog {
    /// Opens `target` (`-`: stdout); `ack_timeout` is `--migration-ack-timeout`.
    pub fn open(target: &str, ack_timeout: Duration) -> io::Result<Arc<DecisionLog>> {
        Ok(Arc::new(DecisionLog::new(
            LineWriter::open(target)?,
            ack_timeout,
        )))
    }

    /// Over a writer.
    pub fn new(writer: LineWriter, ack_timeout: Duration) -> DecisionLog {
        DecisionLog {
            inner: Mutex::new(Inner {
                writer,
                tracker: OutcomeTracker::new(),
                journal: None,
                sequence: 0,
                last_observed: None,
            }),
            ack_timeout,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// After a pass whose effects were applied (the leader, still holding the lease): the
    /// decision line when the pass decided something, and its follow-up when it wrote a
    /// request (or, in recommend-only mode, planned a move).
    pub fn after_pass(&self, input: &Reads, output: &PassOutput) {
        let mut inner = self.lock();
        if let JournalSlot::Readable(after) = &output.new_state.journal {
            // A plan that started or ended: its `plan` / `planOutcome` line
            // (docs/design-policies.md#drain-plans reporting).
            let before = inner
                .journal
                .as_ref()
                .map_or(&[][..], |j| j.plans.as_slice());
            let lines =
                decision_log::plan_lines(input.now, before, &after.plans, &output.record.plans);
            for line in &lines {
                if let Err(e) = inner.writer.write(line) {
                    tracing::warn!(error = %e, "cannot write the decision log");
                }
            }
            inner.journal = Some(after.clone());
        }
        if !output.decided_something() {
            return;
        }
        inner.sequence += 1;
        let prefix: String = output
            .uuids_offered
            .first()
            .map(|u| u.chars().take(8).collect())
            .unwrap_or_default();
        let id = format!("{:06}-{prefix}", inner.sequence);
        let snapshot = &input.snapshot;
        let pools = decision_log::touched_pools(snapshot, &output.explain, &output.effects);
        let pending = decision_log::pending_for(snapshot, &pools, PENDING_PER_DECISION);
        let line = decision_log::decision_line(
            &id,
            input.now,
            input.config.mode.as_str(),
            &output.pools,
            &output.explain,
            &output.simulations,
            &output.effects,
            &pending,
            false,
            &output.advice_counts,
        );
        if let Err(e) = inner.writer.write(&line) {
            tracing::warn!(error = %e, "cannot write the decision log");
        }
        if decision_log::should_follow(input.config.mode, &output.explain, &output.effects) {
            let requests = decision_log::dispatched(&output.effects);
            inner.tracker.record(TrackedDecision {
                decision_id: id,
                time: input.now,
                applied: !requests.is_empty(),
                requests,
                pools,
                pending: pending.into_iter().map(|p| p.pod).collect(),
            });
        }
    }

    /// After an observation: the outcome lines that fell due. Returns how many were written.
    pub fn observed(&self, snapshot: &ClusterSnapshot, config: &Config) -> usize {
        let mut inner = self.lock();
        if inner.last_observed == Some(snapshot.observed_at) {
            return 0;
        }
        inner.last_observed = Some(snapshot.observed_at);
        if inner.tracker.open() == 0 {
            return 0;
        }
        let Inner {
            writer,
            tracker,
            journal,
            ..
        } = &mut *inner;
        let facts = SnapshotFacts::new(snapshot, journal.as_ref(), config, self.ack_timeout);
        let lines = tracker.observe(snapshot.observed_at, &facts);
        for line in &lines {
            if let Err(e) = writer.write(line) {
                tracing::warn!(error = %e, "cannot write the decision log");
            }
        }
        lines.len()
    }
}

/// Feeds the log with each new snapshot of the observation loop (checked every second).
pub async fn follow(log: Arc<DecisionLog>, observer: Arc<Observer>, config: Arc<ConfigStore>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Some(snapshot) = observer.latest() {
            let (cfg, _) = config.current();
            let log = log.clone();
            // Pool scoring is CPU work: off the async workers.
            if let Err(e) = tokio::task::spawn_blocking(move || log.observed(&snapshot, &cfg)).await
                && e.is_panic()
            {
                std::panic::resume_unwind(e.into_panic());
            }
        }
    }
}

#[cfg(test)]
mod tests {

    use alfred_dispatch::{DurableState, Explained, Session};
    use alfred_model::Timestamp;
    use alfred_model::effect::Effect;
    use alfred_model::reason::RowReason;
    use alfred_model::record::{Candidate, LastCycle, Policy, Verdict};
    use alfred_model::snapshot::{ComponentKind, DeploymentMode, Node, PendingPod, Pod};

    use super::*;

    /// A pass's output with these effects, candidates and journal (`None`: not read), the
    /// rest empty.
    fn output(
        effects: Vec<Effect>,
        explain: Vec<Explained>,
        journal: Option<Journal>,
    ) -> PassOutput {
        let t0 = Timestamp::from_unix_secs(1_790_000_000);
        PassOutput {
            record: LastCycle::new(t0, alfred_model::record::Mode::RecommendOnly, vec![]),
            node_records: Default::default(),
            effects,
            new_state: DurableState {
                journal: journal.map_or(JournalSlot::Missing, JournalSlot::Readable),
                ..DurableState::default()
            },
            session: Session::default(),
            pools: vec![],
            explain,
            journal_error: None,
            uuids_offered: vec!["6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f".into()],
            uuids_used: 0,
            simulations: vec![],
            if_final_save_fails: None,
            advice_counts: vec![],
        }
    }

    /// A writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Buffer {
        fn lines(&self) -> Vec<Value> {
            String::from_utf8(self.0.lock().unwrap().clone())
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        }
    }

    #[test]
    fn the_file_is_appended_one_flushed_line_per_record() {
        let path = std::env::temp_dir().join(format!(
            "alfred-decision-log-{}-{:?}.jsonl",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_file(&path);
        let target = path.to_str().unwrap();
        let mut w = LineWriter::open(target).unwrap();
        w.write(&serde_json::json!({"kind": "decision", "n": 1}))
            .unwrap();
        // Flushed: readable before the writer is dropped.
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "{\"kind\":\"decision\",\"n\":1}\n");
        w.write(&serde_json::json!({"kind": "outcome", "text": "a\nb"}))
            .unwrap();
        drop(w);
        // Reopening appends (a restart or a new leader keeps the earlier lines).
        let mut w = LineWriter::open(target).unwrap();
        w.write(&serde_json::json!({"kind": "decision", "n": 2}))
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[1]["text"], "a\nb");
        assert_eq!(lines[2]["n"], 2);
        assert!(text.ends_with('\n'));
        std::fs::remove_file(&path).unwrap();
    }

    fn snapshot(at: Timestamp, big_pending: bool) -> ClusterSnapshot {
        let node = |name: &str| Node {
            name: name.into(),
            pool: Some("A100".into()),
            ..Node::default()
        };
        let mut s = ClusterSnapshot {
            observed_at: at,
            nodes: vec![node("n1"), node("n2")],
            ..ClusterSnapshot::default()
        };
        if big_pending {
            s.pending_pods.push(PendingPod {
                namespace: "ns".into(),
                name: "big".into(),
                gpus_needed: 8,
                pending_since: at,
                ..PendingPod::default()
            });
        } else {
            s.pods.push(Pod {
                namespace: "ns".into(),
                name: "big".into(),
                node: "n2".into(),
                ..Pod::default()
            });
        }
        s
    }

    #[test]
    fn plan_lines_follow_the_journal_from_pass_to_pass() {
        use alfred_model::plan::{DrainProtectionWire, PlanPhase, PlanRecord};
        use alfred_model::reason::PlanEndReason;
        let t0 = Timestamp::from_unix_secs(1_790_000_000);
        let buffer = Buffer::default();
        let log = DecisionLog::new(
            LineWriter::new(Box::new(buffer.clone())),
            Duration::from_secs(120),
        );
        let input = Reads::for_test(snapshot(t0, true), Config::builtin(), t0);
        let record = |phase: PlanPhase, reason: Option<PlanEndReason>| PlanRecord {
            benefit_milli_gpus: 0,
            cost_milli_gpus: 0,
            id: "dp-1".into(),
            pool: "H100".into(),
            node: "n1".into(),
            node_uid: String::new(),
            pod: "ns/big".into(),
            pod_uid: String::new(),
            gpus: 8,
            protection: DrainProtectionWire::Nominate,
            steps: vec![],
            phase,
            reason,
            started_at: t0,
            deadline: t0.plus(Duration::from_secs(3600)),
            ended_at: reason.map(|_| t0),
            pending_since: t0,
        };
        let pass = |plans: Vec<PlanRecord>| {
            let journal = Journal {
                plans,
                ..Journal::empty()
            };
            output(vec![], vec![], Some(journal))
        };
        // A pass that started a plan and decided nothing else: the plan line alone.
        log.after_pass(&input, &pass(vec![record(PlanPhase::Protecting, None)]));
        log.after_pass(&input, &pass(vec![record(PlanPhase::Draining, None)]));
        log.after_pass(
            &input,
            &pass(vec![record(
                PlanPhase::Completed,
                Some(PlanEndReason::PodBound),
            )]),
        );
        let lines = buffer.lines();
        let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["plan", "planOutcome"]);
        assert_eq!(lines[1]["boundOn"], "planNode");
    }

    #[test]
    fn a_pass_that_wrote_a_request_is_logged_and_followed_from_the_snapshots() {
        let t0 = Timestamp::from_unix_secs(1_790_000_000);
        let buffer = Buffer::default();
        let log = DecisionLog::new(
            LineWriter::new(Box::new(buffer.clone())),
            Duration::from_secs(120),
        );
        let mut config = Config::builtin();
        config.mode = alfred_model::config::Mode::Execute;
        let input = Reads::for_test(snapshot(t0, true), config.clone(), t0);
        // A pass that decided nothing writes nothing.
        log.after_pass(&input, &output(vec![], vec![], None));
        assert!(buffer.lines().is_empty());
        let output = output(
            vec![Effect::RequestMigration {
                namespace: "ns".into(),
                name: "a".into(),
                uid: "uid-a".into(),
                resource_version: "1".into(),
                annotation: "ome.io/migration-request".into(),
                payload: "{}".into(),
                uuid: "6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f".into(),
            }],
            vec![Explained {
                candidate: Candidate {
                    policy: Policy::Defragmentation,
                    workload: "ns/a".into(),
                    component: ComponentKind::Engine,
                    instance: 0,
                    mode: DeploymentMode::OMENative,
                    reason: RowReason::Fragmentation,
                    from_node: "n1".into(),
                    hint_target_nodes: vec!["n2".into()],
                    placement_target_nodes: vec![],
                    executable: true,
                    advisory_reason: None,
                    surge_shaped: true,
                    footprint_gpus: 1,
                    benefit: 0.5,
                    cost: 0.15,
                    score: 0.35,
                    emergency: false,
                    pod_gpus: vec![1],
                    scheduling: None,
                    plan: None,
                },
                verdict: Some(Verdict {
                    admitted: true,
                    request_uuid: "6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f".into(),
                    ..Verdict::default()
                }),
            }],
            None,
        );
        log.after_pass(&input, &output);
        let lines = buffer.lines();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["kind"], "decision");
        assert_eq!(lines[0]["decisionId"], "000001-6f1c2d3e");
        assert_eq!(lines[0]["mode"], "execute");
        assert_eq!(lines[0]["dispatch"][0]["workload"], "ns/a");
        assert_eq!(lines[0]["candidates"][0]["verdict"]["admitted"], true);
        assert_eq!(lines[0]["pendingAtDecision"][0]["pod"], "ns/big");
        // Observations: nothing before a minute; the same snapshot counts once.
        let at = |s: u64| t0.plus(Duration::from_secs(s));
        assert_eq!(log.observed(&snapshot(at(30), true), &config), 0);
        assert_eq!(log.observed(&snapshot(at(61), true), &config), 1);
        assert_eq!(log.observed(&snapshot(at(61), true), &config), 0);
        assert_eq!(log.observed(&snapshot(at(301), false), &config), 1);
        assert_eq!(log.observed(&snapshot(at(901), false), &config), 1);
        assert_eq!(log.observed(&snapshot(at(2000), false), &config), 0);
        let lines = buffer.lines();
        let after: Vec<i64> = lines[1..]
            .iter()
            .map(|l| l["afterSeconds"].as_i64().unwrap())
            .collect();
        assert_eq!(after, [60, 300, 900]);
        assert!(
            lines[1..]
                .iter()
                .all(|l| l["decisionId"] == "000001-6f1c2d3e")
        );
        assert_eq!(lines[3]["final"], true);
        // No journal was read (recommend-only flags): the request's phase is unknown.
        assert_eq!(lines[3]["requests"][0]["phase"], "unknown");
        // The waiting pod the move was for got n2 by the 5-minute checkpoint.
        assert_eq!(lines[1]["pending"][0]["placed"], false);
        assert_eq!(lines[2]["pending"][0]["node"], "n2");
    }
}
