//! When a decision's outcome lines fall due. A decision log (alfred's and Plumb's hub share
//! this skeleton) follows each decision with `kind: outcome` lines at fixed checkpoints after
//! it — 60, 300 and 900 seconds — the last one marked `final`. A follower that must watch
//! longer (Plumb follows readiness for at least `readyTimeout`) adds one later, final
//! checkpoint. This crate answers only the schedule questions, so every product writing such
//! lines counts checkpoints the same way:
//!
//! * which checkpoints are due at `now` for a decision taken at `decided`, given how many
//!   lines were already written ([`Schedule::due`]); a checkpoint missed by several
//!   observations falls due at the next one, in order;
//! * when the next one falls due ([`Schedule::next_due`]);
//! * whether a follower is done ([`Schedule::finished`]).
//!
//! Pure: no clock, no IO; time is an input.
//!
//! ```
//! use std::time::Duration;
//! use outcome_checkpoints::Schedule;
//! use utc_time::Timestamp;
//!
//! let decided = Timestamp::from_unix_secs(1_000);
//! let now = decided.plus(Duration::from_secs(400));
//! let due: Vec<u64> = Schedule::STANDARD.due(decided, 0, now).map(|c| c.after_seconds).collect();
//! assert_eq!(due, [60, 300]);
//! let next = Schedule::STANDARD.next_due(decided, 2);
//! assert_eq!(next, Some(decided.plus(Duration::from_secs(900))));
//! ```

#![warn(missing_docs, unreachable_pub)]

use std::time::Duration;

use utc_time::Timestamp;

/// The standard checkpoints, in seconds after the decision: 1, 5 and 15 minutes.
pub const STANDARD_SECONDS: [u64; 3] = [60, 300, 900];

/// One outcome checkpoint of a schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// Its position in the schedule (0 first): lines written so far, once it is written,
    /// are `index + 1`.
    pub index: usize,
    /// Seconds after the decision (`afterSeconds`).
    pub after_seconds: u64,
    /// The last checkpoint (`final`): the decision is no longer followed after it.
    pub is_final: bool,
}

/// The checkpoints one decision is followed at: ascending seconds after the decision, the
/// last one final.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    seconds: [u64; 4],
    len: usize,
}

impl Schedule {
    /// 60, 300 and 900 s; 900 is final.
    pub const STANDARD: Schedule = Schedule {
        seconds: [
            STANDARD_SECONDS[0],
            STANDARD_SECONDS[1],
            STANDARD_SECONDS[2],
            0,
        ],
        len: STANDARD_SECONDS.len(),
    };

    /// The standard checkpoints, followed until at least `horizon`: when `horizon` is
    /// longer than the last standard checkpoint, one more checkpoint at `horizon` (whole
    /// seconds, rounded up) becomes the final one.
    pub fn following(horizon: Duration) -> Schedule {
        let mut secs = horizon.as_secs();
        if horizon.subsec_nanos() > 0 {
            secs = secs.saturating_add(1);
        }
        let mut schedule = Schedule::STANDARD;
        if secs > STANDARD_SECONDS[STANDARD_SECONDS.len() - 1] {
            schedule.seconds[schedule.len] = secs;
            schedule.len += 1;
        }
        schedule
    }

    /// The checkpoints' seconds after the decision, ascending.
    pub fn seconds(&self) -> &[u64] {
        &self.seconds[..self.len]
    }

    /// The checkpoint at `index`, if the schedule has one.
    pub fn checkpoint(&self, index: usize) -> Option<Checkpoint> {
        self.seconds().get(index).map(|&after_seconds| Checkpoint {
            index,
            after_seconds,
            is_final: index + 1 == self.len,
        })
    }

    /// When the checkpoint at `index` falls due for a decision taken at `decided`.
    pub fn time_of(&self, decided: Timestamp, index: usize) -> Option<Timestamp> {
        self.checkpoint(index)
            .map(|c| decided.plus(Duration::from_secs(c.after_seconds)))
    }

    /// When the next line falls due, `written` lines having been written; none once
    /// finished.
    pub fn next_due(&self, decided: Timestamp, written: usize) -> Option<Timestamp> {
        self.time_of(decided, written)
    }

    /// The checkpoints due by `now` (their time ≤ `now`), `written` lines having been
    /// written, in order.
    pub fn due(
        &self,
        decided: Timestamp,
        written: usize,
        now: Timestamp,
    ) -> impl Iterator<Item = Checkpoint> + use<> {
        let schedule = *self;
        (written..schedule.len).map_while(move |index| {
            schedule
                .time_of(decided, index)
                .filter(|t| *t <= now)
                .and(schedule.checkpoint(index))
        })
    }

    /// Whether every line was written.
    pub fn finished(&self, written: usize) -> bool {
        written >= self.len
    }
}

#[cfg(test)]
mod tests;
