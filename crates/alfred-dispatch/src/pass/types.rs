//! What a pass takes and gives (docs/design-pass.md#pass-pipeline): its input, its output,
//! the durable state and the session carried between passes. Data only: the stepped run
//! (`steps`) and the reporter (`report::pass_report`) build on these types, and nothing here
//! depends on them, so the pass's modules import in one direction.

use std::collections::BTreeMap;

use alfred_model::config::{Config, RuntimeOptions};
use alfred_model::effect::Effect;
use alfred_model::record::{Candidate, LastCycle, NodeRecord, Verdict};
use alfred_model::{ClusterSnapshot, Timestamp};
use serde::{Deserialize, Serialize};

use crate::dispatch::guard::GuardObservation;
use crate::dispatch::journal::Journal;
use crate::dispatch::recheck::FreshLooks;
use crate::dispatch::{Breaker, JournalSlot};
use crate::pass::stages::PoolGauge;

/// Version of the [`DurableState`] document.
pub(crate) const DURABLE_STATE_VERSION: &str = "alfred-state/v1";

/// What survives a pass and a change of leader (the file `alfred replay --state FILE`
/// reads and writes; see `STATE.md`).
///
/// ```json
/// {"version":"alfred-state/v1",
///  "journal":{"version":"v1","entries":[…],"backoffUntil":"…"},   // state.json, as is
///  "nodeRecords":{"gpu-a":{…node record…}}}
/// ```
///
/// * `journal` is exactly the `state.json` document of the `alfred-dispatch-state`
///   ConfigMap; `null` or absent = no journal (a fresh install without migration).
///   It is also the dispatch ledger of docs/design.md#ledger: every request alfred made, with
///   its source and simulated targets, its creation and end — claims, node cooling and
///   alfred's own hourly count are derived from it, so they survive a leader change.
/// * `nodeRecords` are the `node.<name>` records of the recommendations ConfigMap (the
///   seed for node-event lifecycles).
/// * The circuit breaker is **not** here: a new leader starts the count afresh (15.3).
///
/// A file that is not this document (or a bare `state.json`) is kept verbatim: the
/// journal is then unreadable, execution withholds with `JournalUnavailable`, and
/// [`DurableState::to_text`] writes the original bytes back.
#[derive(Debug, Clone, PartialEq)]
pub struct DurableState {
    /// The journal.
    pub journal: JournalSlot,
    /// The stored node records, by node name.
    pub node_records: BTreeMap<String, NodeRecord>,
    /// The original text when the document could not be read at all.
    pub verbatim: Option<String>,
}

impl Default for DurableState {
    fn default() -> Self {
        DurableState {
            journal: JournalSlot::Readable(Journal::empty()),
            node_records: BTreeMap::new(),
            verbatim: None,
        }
    }
}

/// The state file as read ([`StateOut`] writes it).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StateWire {
    version: String,
    #[serde(default)]
    journal: Option<serde_json::Value>,
    #[serde(default)]
    node_records: BTreeMap<String, NodeRecord>,
}

/// The state file's journal member as written in the file. An unreadable journal is kept
/// as these bytes and written back as them: read back through a JSON value, a number too
/// large for an integer (read as a float) could change in its last digit on every round trip
/// (a fuzz finding).
#[derive(Deserialize)]
struct JournalBytes<'a> {
    #[serde(borrow, default)]
    journal: Option<&'a serde_json::value::RawValue>,
}

/// [`StateWire`] as written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StateOut<'a> {
    version: &'a str,
    journal: Option<JournalOut<'a>>,
    node_records: &'a BTreeMap<String, NodeRecord>,
}

/// The journal member as written: a readable journal, or an unreadable one's bytes as read
/// (when they are JSON), else its text as a JSON string.
#[derive(Serialize)]
#[serde(untagged)]
enum JournalOut<'a> {
    Readable(&'a Journal),
    Bytes(Box<serde_json::value::RawValue>),
    Text(&'a str),
}

impl DurableState {
    /// Reads a state file (a `DurableState` document or a bare `state.json`).
    pub fn from_text(text: &str) -> DurableState {
        let unreadable = |error: String| DurableState {
            journal: JournalSlot::Unreadable {
                text: text.to_owned(),
                error: crate::dispatch::journal::clip(&error, 280),
            },
            node_records: BTreeMap::new(),
            verbatim: Some(text.to_owned()),
        };
        let value = match crate::strict_json::parse_strict(text) {
            Ok(v) => v,
            Err(e) => return unreadable(format!("state file is not strict JSON: {e}")),
        };
        if value.get("entries").is_some() {
            let journal = JournalSlot::from_state_json(Some(text));
            let verbatim = match &journal {
                JournalSlot::Readable(_) => None,
                _ => Some(text.to_owned()),
            };
            return DurableState {
                journal,
                node_records: BTreeMap::new(),
                verbatim,
            };
        }
        let wire: StateWire = match serde_json::from_value(value) {
            Ok(w) => w,
            Err(e) => return unreadable(format!("state file: {e}")),
        };
        if wire.version != DURABLE_STATE_VERSION {
            return unreadable(format!("state file version {:?} is unknown", wire.version));
        }
        let journal = match wire.journal {
            None | Some(serde_json::Value::Null) => JournalSlot::Missing,
            Some(v) => match Journal::from_value(v) {
                Ok(j) => JournalSlot::Readable(j),
                Err(e) => JournalSlot::Unreadable {
                    // The member's own bytes (the document parsed above, so they are there).
                    text: serde_json::from_str::<JournalBytes<'_>>(text)
                        .ok()
                        .and_then(|b| b.journal.map(|r| r.get().to_owned()))
                        .unwrap_or_default(),
                    error: e.to_string(),
                },
            },
        };
        DurableState {
            journal,
            node_records: wire.node_records,
            verbatim: None,
        }
    }

    /// Writes the state file (the original bytes when it could not be read).
    pub fn to_text(&self) -> String {
        if let Some(v) = &self.verbatim {
            return v.clone();
        }
        let journal = match &self.journal {
            JournalSlot::Missing => None,
            JournalSlot::Readable(j) => Some(JournalOut::Readable(j)),
            JournalSlot::Unreadable { text, .. } => Some(
                serde_json::value::RawValue::from_string(text.clone())
                    .map_or(JournalOut::Text(text), JournalOut::Bytes),
            ),
        };
        let wire = StateOut {
            version: DURABLE_STATE_VERSION,
            journal,
            node_records: &self.node_records,
        };
        serde_json::to_string_pretty(&wire).unwrap_or_default()
    }
}

/// In-memory state of one leadership term (lost on a leader change, by design).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Session {
    /// The circuit breaker.
    pub breaker: Breaker,
    /// `OMENativeUnavailable` was already reported in this degraded period.
    pub omenative_unavailable_reported: bool,
    /// UUIDs whose [`Effect::RequestMigration`] the adapter's applier reported **not**
    /// applied in the previous pass (an error, a conflict, a timeout: the write may or
    /// may not have landed). [`crate::Caretaker::write_done`] fills it from the
    /// applier's results before the next pass; empty (the default) changes nothing.
    ///
    /// It completes docs/design-pass.md#dispatch-pass `attempt()` step 5–6 across the pass boundary
    /// (the pure pass cannot observe its own write): if the next pass's follow-up
    /// (docs/design-pass.md#follow-up) still finds that entry `prepared` (no annotation, no status
    /// row, not yet stalled), the entry is saved as `prepared/SubmissionUncertain` and its row
    /// shows `withheld/SubmissionUncertain`; that pass does not retry it (the reference
    /// records the failure in the pass that wrote; the retry belongs to the pass after).
    /// If the annotation did land, the follow-up reports `RequestAnnotationObserved`
    /// and this list is ignored. [`run_pass`](crate::run_pass) consumes it: the output session's list
    /// is empty. Lost on a leader change, like the rest of the session (the new leader
    /// learns the truth from the cluster).
    pub failed_requests: Vec<String>,
}

/// Everything one pass reads.
pub struct PassInput<'a> {
    /// The pass's snapshot.
    pub snapshot: &'a ClusterSnapshot,
    /// Where the execute-mode re-check's fresh observations come from
    /// (docs/design-pass.md#pre-submit-re-check steps 1 and 12): [`FreshLooks::Frozen`] with a
    /// snapshot when the cluster cannot change during the pass, [`FreshLooks::Observe`] to observe
    /// on demand.
    pub fresh: FreshLooks<'a>,
    /// Configuration (one object for the whole pass).
    pub config: &'a Config,
    /// Validated flags.
    pub runtime: &'a RuntimeOptions,
    /// alfred's namespace (guard username, config ConfigMap events).
    pub namespace: &'a str,
    /// Name of the config ConfigMap (`--config-name`).
    pub config_map_name: &'a str,
    /// Durable state: the journal as read (and the stored node records).
    pub state: &'a DurableState,
    /// The previous node records (seed; usually `state.node_records`).
    pub previous_node_records: &'a BTreeMap<String, NodeRecord>,
    /// The guard objects as read this pass.
    pub guard: &'a GuardObservation,
    /// Pre-generated lower-case v4 UUIDs; at most one is used per pass.
    pub uuids: &'a [String],
    /// A newer configuration arrived while the pass ran.
    pub config_changed: bool,
    /// The dispatch deadline, if tracked.
    pub deadline: Option<Timestamp>,
    /// Now.
    pub now: Timestamp,
}

/// Candidates with their verdicts (`replay --format json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explained {
    /// The candidate.
    pub candidate: Candidate,
    /// Its verdict, when it reached the arbiter or the journal.
    pub verdict: Option<Verdict>,
}

/// Everything one pass produces.
#[derive(Debug, Clone, PartialEq)]
pub struct PassOutput {
    /// `last-cycle.json`.
    pub record: LastCycle,
    /// The node records now.
    pub node_records: BTreeMap<String, NodeRecord>,
    /// Effects, in the order to apply them.
    pub effects: Vec<Effect>,
    /// The durable state after the pass (assuming every write effect succeeded).
    pub new_state: DurableState,
    /// The session to carry into the next pass.
    pub session: Session,
    /// Pool scores.
    pub pools: Vec<PoolGauge>,
    /// Candidates and verdicts.
    pub explain: Vec<Explained>,
    /// Why the journal could not be used, for the log.
    pub journal_error: Option<String>,
    /// The UUIDs the pass was offered (the first `uuids_used` of them used).
    pub uuids_offered: Vec<String>,
    /// UUIDs consumed from `uuids`.
    pub uuids_used: usize,
    /// Every simulation the pass asked for, as answered, in order (the decision log's).
    pub simulations: Vec<crate::decision_log::SimulationRecord>,
    /// What to write instead when the journal save after the request fails.
    pub if_final_save_fails: Option<Contingency>,
    /// Under [`Telemetry::DecisionsCountingAdvice`], the defragmentation walk's advice rows,
    /// counted per `(reason, advisoryReason)` in that order: they are in neither `record`
    /// nor `explain`. Empty otherwise.
    ///
    /// [`Telemetry::DecisionsCountingAdvice`]: alfred_model::config::Telemetry::DecisionsCountingAdvice
    pub advice_counts: Vec<alfred_model::record::AdviceCount>,
}

impl PassOutput {
    /// Whether the pass decided something worth a decision-log line: a candidate explained,
    /// advice counted, or a request written ([`crate::decision_log::decided_something`],
    /// with the advice a pass counted instead of explaining).
    pub fn decided_something(&self) -> bool {
        !self.advice_counts.is_empty()
            || crate::decision_log::decided_something(&self.explain, &self.effects)
    }
}

/// The other ending of a pass that wrote a request (docs/design-pass.md#dispatch-pass `attempt()`
/// step 6). The journal save after the annotation is the one write whose failure leaves
/// the cluster ahead of the journal: the request stands, the journal still says
/// `prepared`. The pass cannot see its own writes fail, so it returns both endings and
/// the applier picks: when `effects[save_index]` fails, it applies `then` instead of
/// `effects[save_index + 1..]` — the same report with the request's row saying
/// `submitted/SubmissionJournalUncertain` — rather than stopping. The next pass re-reads
/// the journal and the InferenceService and learns the truth (`RequestAnnotationObserved`).
#[derive(Debug, Clone, PartialEq)]
pub struct Contingency {
    /// Index in [`PassOutput::effects`] of the journal save that follows the request.
    pub save_index: usize,
    /// The effects to apply after that save failed.
    pub then: Vec<Effect>,
}
