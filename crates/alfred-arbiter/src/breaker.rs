//! The circuit breaker (docs/design.md#circuit-breaker).
//!
//! Deliberately **not durable** and not serialisable: "A new leader starts the count
//! afresh". The dispatcher keeps one in memory per leadership term and feeds it the
//! terminal outcomes of alfred's own requests.

use std::collections::VecDeque;
use std::time::Duration;

use alfred_model::Timestamp;

/// Outcomes kept.
pub const BREAKER_WINDOW: usize = 10;
/// Outcomes needed before the breaker can trip.
pub const BREAKER_MIN_OUTCOMES: usize = 4;
/// How long a tripped breaker stays open.
pub const BREAKER_OPEN_FOR: Duration = Duration::from_secs(60 * 60);

/// The last [`BREAKER_WINDOW`] terminal outcomes of alfred's own requests and the instant
/// until which the breaker is open. [`Breaker::default`] is closed with an empty window —
/// what a new leader starts with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Breaker {
    /// `true` = completed, `false` = failed; oldest first.
    outcomes: VecDeque<bool>,
    open_until: Option<Timestamp>,
}

impl Breaker {
    /// A closed breaker with no outcomes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a terminal outcome (`completed` = success, `failed` = failure; a stall is
    /// not an outcome and must not be recorded). After appending, when at least
    /// [`BREAKER_MIN_OUTCOMES`] are held and failures × 2 > count, the breaker opens until
    /// `now + 60 min` (a later trip can only extend it) and the outcomes are cleared.
    pub fn record_outcome(&mut self, success: bool, now: Timestamp) {
        self.outcomes.push_back(success);
        while self.outcomes.len() > BREAKER_WINDOW {
            self.outcomes.pop_front();
        }
        let count = self.outcomes.len();
        let failures = self.outcomes.iter().filter(|ok| !**ok).count();
        if count >= BREAKER_MIN_OUTCOMES && failures * 2 > count {
            let until = now.plus(BREAKER_OPEN_FOR);
            self.open_until = Some(self.open_until.map_or(until, |old| old.max(until)));
            self.outcomes.clear();
        }
    }

    /// Whether the breaker is open at `now` (closed again from `open_until` on).
    pub fn is_open(&self, now: Timestamp) -> bool {
        self.open_until.is_some_and(|until| now < until)
    }

    /// When the breaker closes, if it ever tripped.
    pub fn open_until(&self) -> Option<Timestamp> {
        self.open_until
    }

    /// The outcomes held (oldest first; `true` = success).
    pub fn outcomes(&self) -> Vec<bool> {
        self.outcomes.iter().copied().collect()
    }
}
