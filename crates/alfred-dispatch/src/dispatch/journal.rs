//! The dispatch journal: key `state.json` of ConfigMap `alfred-dispatch-state`
//! (docs/design-pass.md#journal).
//!
//! ```json
//! {"version":"v1","entries":[{"uuid":"…","workload":{"Namespace":"…","Name":"…"},
//!   "workloadUID":"…","irName":"…","irUID":"…","component":"engine","instance":0,
//!   "fromNode":"…","targets":["…"],"payload":"…","sourceFingerprint":"…",
//!   "createdAt":"…","lastAttempt":"…","acknowledgedAt":"…","completedAt":"…",
//!   "phase":"prepared|submitted|acknowledged|completed|failed|stalled","reason":"…"}],
//!  "backoffUntil":"…"}
//! ```
//!
//! Reading is strict ([`Journal::parse`]): unknown members, duplicate members (exact,
//! case-sensitive, docs/design-pass.md#journal), trailing data, a missing or `null` member that is
//! required (`entries`, `entries[i].instance`, …), a version other than `v1`, more than
//! 256 entries, more than 512 KiB, repeated UUIDs or any broken rule make the whole
//! document unreadable. The caller then withholds every move with `JournalUnavailable`
//! and never rewrites the document: alfred does not repair a journal.
//!
//! Times are written as RFC 3339 in UTC with nanoseconds, trailing zeros trimmed.

use std::collections::BTreeSet;
use std::time::Duration;

use alfred_model::Timestamp;
use alfred_model::config::is_dns1123_subdomain;
use alfred_model::reason::DispatchReason;
use alfred_model::record::DispatchStatus;
use alfred_model::snapshot::ComponentKind;
use serde::{Deserialize, Serialize};

use crate::dispatch::request::{MAX_PAYLOAD_BYTES, is_canonical_uuid};

/// The only journal version.
pub const JOURNAL_VERSION: &str = "v1";
/// Most entries a journal may hold.
pub const MAX_ENTRIES: usize = 256;
/// Most drain plans kept (active and recently ended).
pub const MAX_PLANS: usize = 64;
/// Largest `state.json`, read or written.
pub const MAX_STATE_BYTES: usize = 512 * 1024;
/// What the chart installs.
pub const INITIAL_STATE_JSON: &str = r#"{"version":"v1","entries":[]}"#;

/// A journal entry's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Built and saved; the annotation may not be written yet.
    Prepared,
    /// The annotation was written (or seen).
    Submitted,
    /// OMENative reports it in progress.
    Acknowledged,
    /// Done (terminal).
    Completed,
    /// Failed (terminal).
    Failed,
    /// Stuck; still unresolved.
    Stalled,
}

impl Phase {
    /// `completed` and `failed` end an entry.
    pub fn is_terminal(self) -> bool {
        matches!(self, Phase::Completed | Phase::Failed)
    }

    /// The dispatch status a row shows for this phase (`prepared` → `withheld`).
    pub fn status(self) -> DispatchStatus {
        match self {
            Phase::Prepared => DispatchStatus::Withheld,
            Phase::Submitted => DispatchStatus::Submitted,
            Phase::Acknowledged => DispatchStatus::Acknowledged,
            Phase::Completed => DispatchStatus::Completed,
            Phase::Failed => DispatchStatus::Failed,
            Phase::Stalled => DispatchStatus::Stalled,
        }
    }

    /// The documented string.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Prepared => "prepared",
            Phase::Submitted => "submitted",
            Phase::Acknowledged => "acknowledged",
            Phase::Completed => "completed",
            Phase::Failed => "failed",
            Phase::Stalled => "stalled",
        }
    }
}

/// `workload`: the Go struct without JSON tags, hence the capitalised keys.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadRef {
    /// Namespace (DNS-1123 label).
    #[serde(rename = "Namespace")]
    pub namespace: String,
    /// Name (DNS-1123 subdomain).
    #[serde(rename = "Name")]
    pub name: String,
}

impl WorkloadRef {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// One request alfred prepared or made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Entry {
    /// Names the annotation and the InferenceReplica migration row.
    pub uuid: String,
    /// The InferenceService.
    pub workload: WorkloadRef,
    /// Its UID.
    #[serde(rename = "workloadUID")]
    pub workload_uid: String,
    /// The InferenceReplica.
    pub ir_name: String,
    /// Its UID.
    #[serde(rename = "irUID")]
    pub ir_uid: String,
    /// Component.
    pub component: ComponentKind,
    /// Instance index (required, ≥ 0).
    pub instance: i64,
    /// The node to leave.
    pub from_node: String,
    /// Sorted unique simulated placement nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    /// The exact annotation value.
    pub payload: String,
    /// alfred's fingerprint of the source (docs/design-pass.md#source-fingerprint).
    pub source_fingerprint: String,
    /// When the entry was made; also the payload's `requested_at`.
    pub created_at: Timestamp,
    /// Last write attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempt: Option<Timestamp>,
    /// When OMENative first reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledged_at: Option<Timestamp>,
    /// When it ended (terminal phases only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Timestamp>,
    /// Phase.
    pub phase: Phase,
    /// Last reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<DispatchReason>,
}

impl Entry {
    /// Unresolved: anything not `completed`/`failed` (a stalled entry still counts).
    pub fn is_unresolved(&self) -> bool {
        !self.phase.is_terminal()
    }

    /// When the entry last used its nodes: `completedAt`, else `createdAt`
    /// (docs/design-pass.md#pre-submit-re-check step 13).
    pub fn node_use_time(&self) -> Timestamp {
        self.completed_at.unwrap_or(self.created_at)
    }

    fn validate(&self, i: usize) -> Result<(), JournalError> {
        let f = |field: &str, message: String| JournalError::Invalid {
            field: format!("entries[{i}].{field}"),
            message,
        };
        if !is_canonical_uuid(&self.uuid) {
            return Err(f(
                "uuid",
                format!("{:?} is not a lower-case RFC 4122 UUID", self.uuid),
            ));
        }
        if !is_dns1123_label(&self.workload.namespace) {
            return Err(f(
                "workload.Namespace",
                format!("{:?} is not a DNS-1123 label", self.workload.namespace),
            ));
        }
        if !is_dns1123_subdomain(&self.workload.name) {
            return Err(f(
                "workload.Name",
                format!("{:?} is not a DNS-1123 subdomain", self.workload.name),
            ));
        }
        if self.workload_uid.is_empty() {
            return Err(f("workloadUID", "is empty".into()));
        }
        if !is_dns1123_subdomain(&self.ir_name) {
            return Err(f(
                "irName",
                format!("{:?} is not a DNS-1123 subdomain", self.ir_name),
            ));
        }
        if self.ir_uid.is_empty() {
            return Err(f("irUID", "is empty".into()));
        }
        if self.instance < 0 {
            return Err(f("instance", format!("{} is negative", self.instance)));
        }
        if self.from_node.is_empty() {
            return Err(f("fromNode", "is empty".into()));
        }
        if self.targets.windows(2).any(|w| w[0] >= w[1]) {
            return Err(f("targets", "not sorted and unique".into()));
        }
        if self.payload.len() > MAX_PAYLOAD_BYTES {
            return Err(f(
                "payload",
                format!("{} bytes exceed {MAX_PAYLOAD_BYTES}", self.payload.len()),
            ));
        }
        if serde_json::from_str::<serde_json::Value>(&self.payload).is_err() {
            return Err(f("payload", "is not valid JSON".into()));
        }
        if self.source_fingerprint.is_empty() {
            return Err(f("sourceFingerprint", "is empty".into()));
        }
        if self.created_at == Timestamp::EPOCH {
            return Err(f("createdAt", "is the zero time".into()));
        }
        for (name, t) in [
            ("lastAttempt", self.last_attempt),
            ("acknowledgedAt", self.acknowledged_at),
        ] {
            if let Some(t) = t
                && t < self.created_at
            {
                return Err(f(name, format!("{t} is before createdAt")));
            }
        }
        match (self.phase.is_terminal(), self.completed_at) {
            (true, None) => {
                return Err(f(
                    "completedAt",
                    format!("required for phase {}", self.phase.as_str()),
                ));
            }
            (true, Some(t)) if t < self.created_at => {
                return Err(f("completedAt", format!("{t} is before createdAt")));
            }
            (false, Some(_)) => {
                return Err(f(
                    "completedAt",
                    format!("forbidden for phase {}", self.phase.as_str()),
                ));
            }
            _ => {}
        }
        Ok(())
    }
}

/// The whole `state.json` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Journal {
    /// `v1`.
    pub version: String,
    /// Entries, oldest first.
    pub entries: Vec<Entry>,
    /// Failure-backoff deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_until: Option<Timestamp>,
    /// Drain plans (docs/design-policies.md#drain-plans): the active ones and those ended in the
    /// last day (for the pool backoff and the outcome log). Absent in a state written before plans
    /// existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plans: Vec<alfred_model::plan::PlanRecord>,
}

impl Default for Journal {
    fn default() -> Self {
        Journal::empty()
    }
}

/// Why a journal is unreadable (or cannot be written). Every variant means
/// `JournalUnavailable`; the message names the field for the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JournalError {
    /// The key is missing from the ConfigMap.
    #[error("state.json is missing")]
    Missing,
    /// Larger than 512 KiB.
    #[error("state.json is {0} bytes, more than 512 KiB")]
    TooLarge(usize),
    /// Not strict JSON (syntax, duplicate member, trailing data).
    #[error("state.json is not strict JSON: {}", clip(.0, 240))]
    Syntax(String),
    /// A member is unknown, missing, null or of the wrong type.
    #[error("state.json: {}: {}", clip(.field, 100), clip(.message, 170))]
    Schema {
        /// Path of the member, e.g. `entries[0].instance`.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A rule is broken.
    #[error("state.json: {}: {}", clip(.field, 100), clip(.message, 170))]
    Invalid {
        /// Path of the member.
        field: String,
        /// What is wrong.
        message: String,
    },
}

/// One short error line (alfred-sim's rule, shared by every error alfred prints).
pub use alfred_sim::clip::clip;

/// Whether `s` is a DNS-1123 label.
pub fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

impl Journal {
    /// `{"version":"v1","entries":[]}`.
    pub fn empty() -> Journal {
        Journal {
            version: JOURNAL_VERSION.into(),
            entries: Vec::new(),
            backoff_until: None,
            plans: Vec::new(),
        }
    }

    /// Reads `state.json` strictly (see the module docs).
    pub fn parse(text: &str) -> Result<Journal, JournalError> {
        if text.len() > MAX_STATE_BYTES {
            return Err(JournalError::TooLarge(text.len()));
        }
        let value = crate::strict_json::parse_strict(text)
            .map_err(|e| JournalError::Syntax(e.to_string()))?;
        Journal::from_value(value)
    }

    /// Typed reading and validation of an already strictly parsed value.
    pub fn from_value(value: serde_json::Value) -> Result<Journal, JournalError> {
        let journal: Journal = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            JournalError::Schema {
                field: if path == "." {
                    "(document)".into()
                } else {
                    path
                },
                message: e.into_inner().to_string(),
            }
        })?;
        journal.validate()?;
        Ok(journal)
    }

    /// The rules of docs/design-pass.md#journal beyond the schema.
    pub fn validate(&self) -> Result<(), JournalError> {
        if self.version != JOURNAL_VERSION {
            return Err(JournalError::Invalid {
                field: "version".into(),
                message: format!("{:?} is not \"v1\"", self.version),
            });
        }
        if self.entries.len() > MAX_ENTRIES {
            return Err(JournalError::Invalid {
                field: "entries".into(),
                message: format!("{} entries, more than {MAX_ENTRIES}", self.entries.len()),
            });
        }
        if self.backoff_until == Some(Timestamp::EPOCH) {
            return Err(JournalError::Invalid {
                field: "backoffUntil".into(),
                message: "is the zero time".into(),
            });
        }
        if self.plans.len() > MAX_PLANS {
            return Err(JournalError::Invalid {
                field: "plans".into(),
                message: format!("{} plans, more than {MAX_PLANS}", self.plans.len()),
            });
        }
        let mut ids = BTreeSet::new();
        let mut active_nodes = BTreeSet::new();
        for (i, p) in self.plans.iter().enumerate() {
            if p.id.is_empty() || !ids.insert(p.id.as_str()) {
                return Err(JournalError::Invalid {
                    field: format!("plans[{i}].id"),
                    message: format!("{:?} is empty or repeated", p.id),
                });
            }
            if p.active() && !active_nodes.insert(p.node.as_str()) {
                return Err(JournalError::Invalid {
                    field: format!("plans[{i}].node"),
                    message: format!("{:?} has two active plans", p.node),
                });
            }
            if p.phase.ended() != p.reason.is_some() || p.phase.ended() != p.ended_at.is_some() {
                return Err(JournalError::Invalid {
                    field: format!("plans[{i}].reason"),
                    message: format!(
                        "reason and endedAt are required exactly when the phase has ended (phase {})",
                        p.phase.as_str()
                    ),
                });
            }
        }
        let mut seen = BTreeSet::new();
        for (i, e) in self.entries.iter().enumerate() {
            e.validate(i)?;
            if !seen.insert(e.uuid.as_str()) {
                return Err(JournalError::Invalid {
                    field: format!("entries[{i}].uuid"),
                    message: format!("{:?} repeats", e.uuid),
                });
            }
        }
        Ok(())
    }

    /// Writes `state.json`: compact, members in the documented order. Fails (→
    /// `JournalUnavailable`) when the result breaks a rule or exceeds 512 KiB.
    pub fn to_state_json(&self) -> Result<String, JournalError> {
        self.validate()?;
        let text = serde_json::to_string(self).map_err(|e| JournalError::Syntax(e.to_string()))?;
        if text.len() > MAX_STATE_BYTES {
            return Err(JournalError::TooLarge(text.len()));
        }
        Ok(text)
    }

    /// Entries that are not `completed`/`failed`.
    pub fn unresolved(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.is_unresolved())
    }

    /// The entry of a UUID.
    pub fn entry(&self, uuid: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.uuid == uuid)
    }

    /// Pruning, done only when a new entry is appended: terminal entries whose
    /// `completedAt` is older than `now − retention` are dropped; unresolved entries are
    /// never dropped.
    pub fn prune(&mut self, now: Timestamp, retention: Duration) {
        let cutoff = now.minus(retention);
        self.entries
            .retain(|e| match (e.phase.is_terminal(), e.completed_at) {
                (true, Some(done)) => done >= cutoff,
                _ => true,
            });
    }
}

/// The pruning retention: `max(1h, perNodeCooldown, perWorkloadCooldown, healthFloor,
/// every cooldown-minutes override)`.
pub fn retention(minutes: impl IntoIterator<Item = u32>) -> Duration {
    let most = minutes.into_iter().max().unwrap_or(0);
    Duration::from_secs(3600).max(Duration::from_secs(u64::from(most) * 60))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const EXAMPLE: &str = r#"{"version":"v1","entries":[{"uuid":"6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f","workload":{"Namespace":"inference","Name":"qwen3-235b"},"workloadUID":"8c1d6f52-3b7e-4f0a-9d24-61e5a0c7b913","irName":"qwen3-235b-engine","irUID":"2f4e9a10-7c3b-4d8e-b1a6-93c0e5d7f248","component":"engine","instance":0,"fromNode":"gpu-h100-a07","targets":["gpu-h100-c03","gpu-h100-c11"],"payload":"{\"schemaVersion\":\"v1\",\"component\":\"engine\",\"instance\":0,\"from_node\":\"gpu-h100-a07\",\"hint_target_nodes\":[\"gpu-h100-c03\",\"gpu-h100-c11\",\"gpu-h100-d02\"],\"reason\":\"Fragmentation\",\"requested_at\":\"2026-09-28T10:15:02.418093721Z\",\"requested_by\":\"alfred\"}","sourceFingerprint":"3b8f0c6e2a91d47e5c0b8a6f1d3e7c92a4b6d8f0e1c3a5b7d9f2e4c6a8b0d1f3","createdAt":"2026-09-28T10:15:02.418093721Z","lastAttempt":"2026-09-28T10:15:02.61377854Z","acknowledgedAt":"2026-09-28T10:15:04Z","phase":"acknowledged","reason":"UUIDStatusObserved"}]}"#;

    #[test]
    fn the_documented_example_round_trips_byte_for_byte() {
        let j = Journal::parse(EXAMPLE).unwrap();
        assert_eq!(j.entries.len(), 1);
        assert_eq!(j.entries[0].phase, Phase::Acknowledged);
        assert_eq!(j.to_state_json().unwrap(), EXAMPLE);
        assert_eq!(
            Journal::parse(INITIAL_STATE_JSON)
                .unwrap()
                .to_state_json()
                .unwrap(),
            INITIAL_STATE_JSON
        );
    }

    fn err(text: &str) -> String {
        Journal::parse(text).unwrap_err().to_string()
    }

    /// A long unknown member name is clipped: the line stays one short line that still
    /// names the entry (found by the `journal` fuzz target: 305 and 483 characters).
    #[test]
    fn an_unknown_member_makes_one_short_line_naming_the_entry() {
        let long = "component".to_owned() + &"n".repeat(400);
        let text = EXAMPLE.replacen("\"component\"", &format!("\"{long}\""), 1);
        let e = err(&text);
        assert!(e.starts_with("state.json: entries[0].componentnnn"), "{e}");
        assert!(
            e.chars().count() <= 300,
            "{} characters: {e}",
            e.chars().count()
        );
        assert!(!e.contains('\n'));
        let state =
            crate::DurableState::from_text(&format!("{{\"version\":\"{}\"}}", "v".repeat(1000)));
        let crate::JournalSlot::Unreadable { error, .. } = &state.journal else {
            panic!("a state file of an unknown version is unreadable");
        };
        assert!(error.starts_with("state file version \"vvv"), "{error}");
        assert!(error.chars().count() <= 280, "{error}");
    }

    /// A fuzz finding: an unreadable journal in a state file was kept as its JSON value
    /// written again, and a number in it too large for an integer is read as a float, which
    /// serde_json may read one unit in the last place off: the text written back read as
    /// another number, and the state changed on every round trip. The journal member's own
    /// bytes are kept and written back now.
    #[test]
    fn an_unreadable_journal_with_a_huge_number_survives_the_round_trip() {
        let text = r#"{"version": "alfred-state/v1", "journal": {"version": "v1",
            "entries": [{"unknown": [7577777777777777777777777777777777777777777777777777777777]}]},
            "nodeRecords": {}}"#;
        let state = crate::DurableState::from_text(text);
        assert!(matches!(
            state.journal,
            crate::JournalSlot::Unreadable { .. }
        ));
        let again = crate::DurableState::from_text(&state.to_text());
        assert_eq!(again, state);
        assert_eq!(crate::DurableState::from_text(&again.to_text()), again);
    }

    #[test]
    fn clip_keeps_short_text_and_cuts_long_text_on_one_line() {
        assert_eq!(clip("a\n  b", 10), "a b");
        assert_eq!(clip(&"x".repeat(12), 10), format!("{}…", "x".repeat(9)));
        assert_eq!(clip(&"x".repeat(10), 10), "x".repeat(10));
    }

    #[test]
    fn strictness_names_the_field() {
        assert!(err(r#"{"version":"v2","entries":[]}"#).contains("version"));
        assert!(err(r#"{"version":"v1","entries":null}"#).contains("entries"));
        assert!(err(r#"{"version":"v1"}"#).contains("entries"));
        assert!(err(r#"{"version":"v1","entries":[],"extra":1}"#).contains("extra"));
        assert!(err(r#"{"version":"v1","entries":[],"version":"v1"}"#).contains("duplicate"));
        assert!(err(r#"{"version":"v1","entries":[]} {}"#).contains("strict JSON"));
        assert!(err(&EXAMPLE[..EXAMPLE.len() - 5]).contains("strict JSON"));
        assert!(err(&EXAMPLE.replace(",\"instance\":0,", ",")).contains("entries[0]"));
        assert!(
            err(&EXAMPLE.replace("\"instance\":0,", "\"instance\":null,"))
                .contains("entries[0].instance")
        );
        assert!(
            err(&EXAMPLE.replace("\"Namespace\"", "\"namespace\"")).contains("entries[0].workload")
        );
        assert!(
            err(&EXAMPLE.replace("acknowledged\",\"reason", "completed\",\"reason"))
                .contains("completedAt")
        );
        assert!(
            err(&EXAMPLE.replace("\"phase\":\"acknowledged\"", "\"phase\":\"done\""))
                .contains("entries[0].phase")
        );
        // Case-sensitive duplicates: "Name" vs "name" is an unknown member, not a merge.
        assert!(
            err(&EXAMPLE.replace(
                "\"Name\":\"qwen3-235b\"",
                "\"Name\":\"qwen3-235b\",\"name\":\"x\""
            ))
            .contains("name")
        );
    }

    #[test]
    fn limits_and_uniqueness() {
        let j = Journal::parse(EXAMPLE).unwrap();
        let mut twice = j.clone();
        twice.entries.push(j.entries[0].clone());
        let text = serde_json::to_string(&twice).unwrap();
        assert!(err(&text).contains("repeats"));
        let mut many = Journal::empty();
        for i in 0..257u32 {
            let mut e = j.entries[0].clone();
            e.uuid = format!("00000000-0000-4000-8000-{i:012x}");
            many.entries.push(e);
        }
        let text = serde_json::to_string(&many).unwrap();
        assert!(matches!(
            Journal::parse(&text),
            Err(JournalError::Invalid { .. } | JournalError::TooLarge(_))
        ));
        assert!(many.to_state_json().is_err());
        let big = format!("{}{}", " ".repeat(MAX_STATE_BYTES), INITIAL_STATE_JSON);
        assert!(matches!(
            Journal::parse(&big),
            Err(JournalError::TooLarge(_))
        ));
    }

    #[test]
    fn pruning_drops_only_old_terminal_entries() {
        let base = Journal::parse(EXAMPLE).unwrap().entries[0].clone();
        let t0 = base.created_at;
        let mut j = Journal::empty();
        let mut old_done = base.clone();
        old_done.uuid = "00000000-0000-4000-8000-000000000001".into();
        old_done.phase = Phase::Completed;
        old_done.completed_at = Some(t0);
        let mut young_done = old_done.clone();
        young_done.uuid = "00000000-0000-4000-8000-000000000002".into();
        young_done.completed_at = Some(t0.plus_minutes(50));
        let mut stalled = base.clone();
        stalled.uuid = "00000000-0000-4000-8000-000000000003".into();
        stalled.phase = Phase::Stalled;
        j.entries = vec![old_done, young_done, stalled];
        j.prune(t0.plus_minutes(61), retention([10, 30, 5]));
        let left: Vec<_> = j.entries.iter().map(|e| e.uuid.as_str()).collect();
        assert_eq!(
            left,
            [
                "00000000-0000-4000-8000-000000000002",
                "00000000-0000-4000-8000-000000000003"
            ]
        );
        assert_eq!(retention([90]), Duration::from_secs(90 * 60));
    }
}
