//! The dispatch ledger: alfred's own requests, as the arbiter needs them for claims,
//! node cooling and alfred's part of the hourly count.
//!
//! The ledger is **fed and durable** (docs/design.md#ledger). The dispatcher records a
//! [`DispatchRecord`] when it appends a journal entry, marks it absorbed when the entry
//! ends, and persists the ledger with its journal, so `NodeCooldown`, claims and the
//! hourly count work at admission and survive a leader change. The circuit breaker is
//! deliberately **not** part of it (see [`crate::Breaker`]).
//!
//! # JSON schema (`Ledger`, version `v1`)
//!
//! ```json
//! {
//!   "version": "v1",
//!   "records": [
//!     {
//!       "uuid": "6f1c…",                 // request UUID (string, non-empty, unique)
//!       "workload": "ns/name",           // the InferenceService, "namespace/name"
//!       "workloadUID": "…",              // its metadata.uid ("" when unknown)
//!       "component": "engine",           // decoder | engine | router
//!       "instance": 0,                   // Instance index
//!       "reason": "NodeUnhealthy",       // Fragmentation | NodeUnhealthy | NodeMaintenance
//!       "fromNode": "node-a",            // node left
//!       "targets": ["node-b"],           // sorted, unique: nodes the move lands on
//!       "claims": [{"node": "node-b", "gpus": 4}],  // GPUs claimed per node, sorted by node
//!       "createdAt": "2026-11-29T07:51:28.12Z",     // RFC 3339, when the entry was created
//!       "absorbedAt": "2026-11-29T08:01:02Z"        // optional: when the request ended
//!     }
//!   ]
//! }
//! ```
//!
//! Reading is strict: unknown members, another `version`, an empty or duplicate `uuid`
//! fail. `records` and every optional member may be absent (`[]`, none); `targets` and
//! `claims` are normalised (sorted, merged) on read so equal ledgers compare equal.
//!
//! Semantics:
//! * a record is **live** until absorbed: `absorbedAt` set, or the snapshot shows a
//!   terminal status row with its UUID, or its InferenceService is gone (or replaced);
//!   a live record claims its GPUs, counts in flight and keeps its workload busy;
//! * a node **cools** for `perNodeCooldownMinutes` after a record used it (as `fromNode`
//!   or in `targets`), counted from `absorbedAt`, else from `createdAt` (the dispatcher's
//!   time rule, docs/design.md#cooldowns);
//! * every record counts in the hourly count by `createdAt`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use alfred_model::reason::RowReason;
use alfred_model::snapshot::{ComponentKind, Workload};
use alfred_model::{ClusterSnapshot, Timestamp};
use serde::{Deserialize, Serialize};

use crate::count::identity;

/// The ledger's schema version.
pub const LEDGER_VERSION: &str = "v1";

/// GPUs a dispatch claims on one node.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeClaim {
    /// Node name.
    pub node: String,
    /// GPUs claimed there.
    pub gpus: u32,
}

/// One of alfred's own requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DispatchRecord {
    /// The request UUID (the journal entry's).
    pub uuid: String,
    /// `namespace/name` of the InferenceService.
    pub workload: String,
    /// Its `metadata.uid`.
    #[serde(rename = "workloadUID", default)]
    pub workload_uid: String,
    /// Component.
    pub component: ComponentKind,
    /// Instance index.
    pub instance: i64,
    /// Why the move was proposed.
    pub reason: RowReason,
    /// The node left.
    pub from_node: String,
    /// Nodes the move lands on (sorted, unique).
    #[serde(default)]
    pub targets: Vec<String>,
    /// GPUs claimed per node (sorted by node, one entry per node).
    #[serde(default)]
    pub claims: Vec<NodeClaim>,
    /// When the journal entry was created.
    pub created_at: Timestamp,
    /// When the request ended (completed or failed), if it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absorbed_at: Option<Timestamp>,
}

impl DispatchRecord {
    /// The request identity `workloadUID/uuid` (see [`crate::identity`]).
    pub fn identity(&self) -> String {
        identity(&self.workload_uid, &self.uuid)
    }

    /// Sorts and merges `targets` and `claims`; claimed nodes are targets too.
    pub fn normalize(&mut self) {
        let mut claims: BTreeMap<String, u32> = BTreeMap::new();
        for c in self.claims.drain(..) {
            let e = claims.entry(c.node).or_insert(0);
            *e = e.saturating_add(c.gpus);
        }
        self.claims = claims
            .into_iter()
            .map(|(node, gpus)| NodeClaim { node, gpus })
            .collect();
        for c in &self.claims {
            self.targets.push(c.node.clone());
        }
        self.targets.sort();
        self.targets.dedup();
    }

    /// Whether the record is absorbed: explicitly, or because `snapshot` shows its end
    /// (a terminal status row with its UUID) or no longer holds its InferenceService (or
    /// holds another incarnation of it).
    pub fn is_absorbed(&self, snapshot: &ClusterSnapshot) -> bool {
        if self.absorbed_at.is_some() {
            return true;
        }
        match find_workload(snapshot, &self.workload) {
            None => true,
            Some(w) => {
                (!self.workload_uid.is_empty() && !w.uid.is_empty() && w.uid != self.workload_uid)
                    || w.migration
                        .records
                        .iter()
                        .any(|r| r.uuid == self.uuid && r.is_terminal())
            }
        }
    }

    /// The instant node cooling counts from: `absorbedAt`, else `createdAt`.
    pub fn cooling_from(&self) -> Timestamp {
        self.absorbed_at.unwrap_or(self.created_at)
    }

    /// Whether the record used `node` (as source or target).
    pub fn used(&self, node: &str) -> bool {
        self.from_node == node || self.targets.iter().any(|t| t == node)
    }
}

/// Finds a workload by `namespace/name` without assuming the snapshot is normalised.
pub(crate) fn find_workload<'a>(snapshot: &'a ClusterSnapshot, key: &str) -> Option<&'a Workload> {
    let (ns, name) = key.split_once('/')?;
    snapshot.workload(ns, name).or_else(|| {
        snapshot
            .workloads
            .iter()
            .find(|w| w.namespace == ns && w.name == name)
    })
}

/// The durable dispatch ledger (see the module documentation for its JSON schema).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "LedgerWire", into = "LedgerWire")]
pub struct Ledger {
    records: Vec<DispatchRecord>,
    /// Nodes active drain plans free (docs/design.md#drain-plans-and-the-budget): not serialized,
    /// derived from the plans.
    protected: BTreeSet<String>,
    /// Request UUID → the active drain plan whose step it is: not serialized, derived from
    /// the plans (docs/design-policies.md#overlapping-steps).
    plan_steps: BTreeMap<String, String>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LedgerWire {
    version: String,
    #[serde(default)]
    records: Vec<DispatchRecord>,
}

impl TryFrom<LedgerWire> for Ledger {
    type Error = String;
    fn try_from(w: LedgerWire) -> Result<Self, String> {
        if w.version != LEDGER_VERSION {
            return Err(format!(
                "ledger version {:?} is not {LEDGER_VERSION:?}",
                w.version
            ));
        }
        let mut ledger = Ledger::new();
        for mut r in w.records {
            if r.uuid.is_empty() {
                return Err("ledger record with an empty uuid".to_owned());
            }
            if ledger.get(&r.uuid).is_some() {
                return Err(format!("ledger records uuid {:?} twice", r.uuid));
            }
            r.normalize();
            ledger.records.push(r);
        }
        ledger.sort();
        Ok(ledger)
    }
}

impl From<Ledger> for LedgerWire {
    fn from(l: Ledger) -> Self {
        LedgerWire {
            version: LEDGER_VERSION.to_owned(),
            records: l.records,
        }
    }
}

impl Default for Ledger {
    fn default() -> Self {
        Self::new()
    }
}

impl Ledger {
    /// An empty ledger (a fresh install).
    pub fn new() -> Self {
        Self {
            records: Vec::new(),
            protected: BTreeSet::new(),
            plan_steps: BTreeMap::new(),
        }
    }

    /// Marks a node an active drain plan frees: no move may target it.
    pub fn protect(&mut self, node: &str) {
        self.protected.insert(node.to_owned());
    }

    /// The nodes active drain plans free.
    pub fn protected_nodes(&self) -> &BTreeSet<String> {
        &self.protected
    }

    /// Marks request `uuid` a step of the active drain plan `plan_id`.
    pub fn mark_plan_step(&mut self, uuid: &str, plan_id: &str) {
        self.plan_steps.insert(uuid.to_owned(), plan_id.to_owned());
    }

    /// The active drain plan request `uuid` is a step of, if any.
    pub fn plan_of(&self, uuid: &str) -> Option<&str> {
        self.plan_steps.get(uuid).map(String::as_str)
    }

    /// The records, oldest first (ties by UUID).
    pub fn records(&self) -> &[DispatchRecord] {
        &self.records
    }

    fn sort(&mut self) {
        self.records
            .sort_by(|a, b| (a.created_at, &a.uuid).cmp(&(b.created_at, &b.uuid)));
    }

    /// The record of a UUID.
    pub fn get(&self, uuid: &str) -> Option<&DispatchRecord> {
        self.records.iter().find(|r| r.uuid == uuid)
    }

    /// Records a dispatch; a record with the same UUID is replaced (idempotent retries).
    /// A record with an empty UUID is ignored.
    pub fn record(&mut self, mut record: DispatchRecord) {
        if record.uuid.is_empty() {
            return;
        }
        record.normalize();
        self.records.retain(|r| r.uuid != record.uuid);
        self.records.push(record);
        self.sort();
    }

    /// Marks the request of `uuid` ended at `at` (the journal entry's `completedAt`).
    /// Returns false when no such record exists. An earlier absorption time is kept.
    pub fn absorb(&mut self, uuid: &str, at: Timestamp) -> bool {
        match self.records.iter_mut().find(|r| r.uuid == uuid) {
            Some(r) => {
                r.absorbed_at = Some(r.absorbed_at.map_or(at, |old| old.min(at)));
                true
            }
            None => false,
        }
    }

    /// Marks every record absorbed that `snapshot` shows ended or orphaned (see
    /// [`DispatchRecord::is_absorbed`]), at `now`.
    pub fn absorb_from(&mut self, snapshot: &ClusterSnapshot, now: Timestamp) {
        for r in &mut self.records {
            if r.absorbed_at.is_none() && r.is_absorbed(snapshot) {
                r.absorbed_at = Some(now);
            }
        }
    }

    /// Drops absorbed records whose absorption is older than `retention` (use
    /// [`crate::ArbiterSettings::ledger_retention`]) and whose creation is outside the
    /// hourly window. Live records are never dropped.
    pub fn prune(&mut self, now: Timestamp, retention: Duration) {
        self.records.retain(|r| match r.absorbed_at {
            None => true,
            Some(at) => {
                now.since(at) <= retention || now.since(r.created_at) <= crate::HOURLY_WINDOW
            }
        });
    }

    /// The ledger without one request (the dispatcher's re-check of a retried entry must
    /// not be held back by that entry itself, docs/design.md#ledger).
    pub fn without(&self, uuid: &str) -> Ledger {
        Ledger {
            records: self
                .records
                .iter()
                .filter(|r| r.uuid != uuid)
                .cloned()
                .collect(),
            protected: self.protected.clone(),
            plan_steps: self.plan_steps.clone(),
        }
    }

    /// `(identity, createdAt)` of every record: alfred's part of the hourly count.
    pub fn created_at(&self) -> Vec<(String, Timestamp)> {
        self.records
            .iter()
            .map(|r| (r.identity(), r.created_at))
            .collect()
    }

    /// Identities of the live records (alfred's own unresolved requests).
    pub fn live_identities(&self, snapshot: &ClusterSnapshot) -> Vec<String> {
        self.records
            .iter()
            .filter(|r| !r.is_absorbed(snapshot))
            .map(DispatchRecord::identity)
            .collect()
    }

    /// Whether a live record concerns `workload` (`namespace/name`).
    pub fn workload_busy(&self, snapshot: &ClusterSnapshot, workload: &str) -> bool {
        self.records
            .iter()
            .any(|r| r.workload == workload && !r.is_absorbed(snapshot))
    }

    /// The latest explicit absorption of a record of `workload`: when alfred last saw one
    /// of its own migrations of it end.
    pub fn last_end(&self, workload: &str) -> Option<Timestamp> {
        self.records
            .iter()
            .filter(|r| r.workload == workload)
            .filter_map(|r| r.absorbed_at)
            .max()
    }

    /// GPUs claimed per node by the live records.
    pub fn claims(&self, snapshot: &ClusterSnapshot) -> BTreeMap<String, u32> {
        let mut out: BTreeMap<String, u32> = BTreeMap::new();
        for r in self.records.iter().filter(|r| !r.is_absorbed(snapshot)) {
            for c in &r.claims {
                let e = out.entry(c.node.clone()).or_insert(0);
                *e = e.saturating_add(c.gpus);
            }
        }
        out
    }

    /// Whether `node` cools at `now`: a record used it (source or target) less than
    /// `window` before (counted from [`DispatchRecord::cooling_from`]; strict `<`).
    pub fn node_cooling(&self, node: &str, now: Timestamp, window: Duration) -> bool {
        self.node_cooling_outside(node, now, window, None)
    }

    /// [`Ledger::node_cooling`] not counting the steps of the drain plan `plan_id`
    /// (docs/design-policies.md#overlapping-steps: with `overlapSteps` a started plan's next
    /// step may land where its own earlier steps did).
    pub fn node_cooling_outside(
        &self,
        node: &str,
        now: Timestamp,
        window: Duration,
        plan_id: Option<&str>,
    ) -> bool {
        self.records.iter().any(|r| {
            r.used(node)
                && now.since(r.cooling_from()) < window
                && (plan_id.is_none() || self.plan_of(&r.uuid) != plan_id)
        })
    }

    /// Whether one of alfred's requests landed on `node` (as a target) within `window`: the
    /// part of a node's cooldown a drain-plan step leaving that node still honours
    /// (docs/design.md#drain-plans-and-the-budget; requests that only left it are the drain itself).
    pub fn node_received(&self, node: &str, now: Timestamp, window: Duration) -> bool {
        self.records
            .iter()
            .any(|r| r.targets.iter().any(|t| t == node) && now.since(r.cooling_from()) < window)
    }
}
