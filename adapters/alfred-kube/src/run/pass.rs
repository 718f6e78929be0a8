//! The seam to the pure decision pass (`alfred-dispatch`).
//!
//! The adapter gathers the inputs (snapshot, configuration, flags, the journal text, the
//! guard objects, `now`, fresh UUIDs, the previous pass's write outcomes), calls
//! [`DecisionPass::run`] on a blocking thread, and applies the effects it returns. Nothing
//! here decides anything.
//!
//! `alfred-dispatch` does not export its pass entry point yet; [`PendingPass`] stands in
//! (it returns no effects and says so once in the log). Wiring the real pass is a change of
//! [`default_pass`] only.

use std::sync::Arc;

use alfred_model::config::{Config, RuntimeOptions};
use alfred_model::effect::Effect;
use alfred_model::{ClusterSnapshot, Timestamp};
use serde_json::Value;

use super::apply::ApplyReport;

/// UUIDs handed to every pass (a pass writes at most one request).
pub const UUIDS_PER_PASS: usize = 4;

/// Everything one pass reads.
pub struct PassInput {
    /// The snapshot the pass decides on (latest cached, or freshly built for early passes).
    pub snapshot: Arc<ClusterSnapshot>,
    /// The configuration the pass started with.
    pub config: Arc<Config>,
    /// The validated flags.
    pub runtime: RuntimeOptions,
    /// alfred's namespace.
    pub namespace: String,
    /// `state.json` of `alfred-dispatch-state` as just read (`None`: not there / not read).
    pub journal: Option<String>,
    /// Whether reading the journal failed (as opposed to it being absent).
    pub journal_unreadable: bool,
    /// The ValidatingAdmissionPolicy `ome-alfred-migration-writes` as read (`None`: missing).
    pub guard_policy: Option<Value>,
    /// Its binding.
    pub guard_binding: Option<Value>,
    /// Now.
    pub now: Timestamp,
    /// Fresh version 4 UUIDs.
    pub uuids: Vec<String>,
    /// What happened to the previous pass's writes.
    pub last_apply: ApplyReport,
}

/// What one pass returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PassOutput {
    /// Effects to apply, in order.
    pub effects: Vec<Effect>,
}

/// A decision pass with its in-memory state (ledger, breaker); one per leadership term.
pub trait DecisionPass: Send {
    /// Runs one pass.
    fn run(&mut self, input: &PassInput) -> PassOutput;
}

/// Stand-in until `alfred-dispatch` exports its pass.
#[derive(Default)]
pub struct PendingPass {
    warned: bool,
}

impl DecisionPass for PendingPass {
    fn run(&mut self, _input: &PassInput) -> PassOutput {
        if !self.warned {
            tracing::warn!(
                "decision pass not wired yet (alfred-dispatch has no pass entry point): no recommendations are written"
            );
            self.warned = true;
        }
        PassOutput::default()
    }
}

/// The pass a new leader starts with (a fresh, empty ledger: alfred-engine.md §12).
pub fn default_pass() -> Box<dyn DecisionPass> {
    Box::new(PendingPass::default())
}
