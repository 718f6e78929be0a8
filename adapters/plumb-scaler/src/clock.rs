//! Where the scaler's `now` comes from. Fencing compares the intent's `expires` and the
//! Lease's `renewTime + leaseDurationSeconds` with the scaler's own clock
//! (docs/plumb/design.md#fencing), so the clock is an input: the system clock in production,
//! and in tests a clock that follows tokio's (pausable) time, so expiry and the 30-second
//! re-send run without waiting.

use std::time::{SystemTime, UNIX_EPOCH};

use utc_time::Timestamp;

/// A source of the current UTC time.
pub trait Clock: Send + Sync + 'static {
    /// Now.
    fn now(&self) -> Timestamp;
}

/// The machine's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp::from_unix_nanos(i64::try_from(since_epoch.as_nanos()).unwrap_or(i64::MAX))
    }
}

/// A clock that starts at a given instant and advances with tokio's time, which tests pause
/// and advance (`tokio::time::pause`, `advance`).
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    start: Timestamp,
    started: tokio::time::Instant,
}

impl TokioClock {
    /// A clock reading `start` now.
    pub fn starting_at(start: Timestamp) -> Self {
        TokioClock {
            start,
            started: tokio::time::Instant::now(),
        }
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Timestamp {
        self.start.plus(self.started.elapsed())
    }
}
