//! `StreamIsActive`, KEDA's push channel: the answer (floor above 0) is sent when the stream
//! opens, again at once whenever it changes, and re-sent every 30 seconds unchanged.
//!
//! The answer changes when the cache does (a watcher saw a new policy copy or Lease) or with
//! time alone (the intent or the Lease expires). The stream waits for whichever comes first:
//! a cache change, the next expiry, or the re-send; so an expiry is pushed when it happens,
//! not up to 30 seconds later. The stream holds no task: dropping it (KEDA hung up) ends it.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use tokio::sync::watch;
use tokio::time::Instant;
use tonic::Status;

use crate::clock::Clock;
use crate::floor::{PolicyKey, Snapshot};
use crate::proto::IsActiveResponse;

/// The stream `StreamIsActive` returns.
pub type ActiveStream = Pin<Box<dyn Stream<Item = Result<IsActiveResponse, Status>> + Send>>;

struct State {
    key: PolicyKey,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    clock: Arc<dyn Clock>,
    recheck: Duration,
    last: Option<bool>,
    resend_at: Instant,
}

/// The push stream for `key`.
pub fn active_stream(
    key: PolicyKey,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    clock: Arc<dyn Clock>,
    recheck: Duration,
) -> ActiveStream {
    let state = State {
        key,
        snapshots,
        clock,
        recheck,
        last: None,
        resend_at: Instant::now(),
    };
    Box::pin(futures::stream::unfold(state, next))
}

/// Waits for the next message to send; none when the cache is gone (the server stops).
async fn next(mut state: State) -> Option<(Result<IsActiveResponse, Status>, State)> {
    loop {
        let snapshot = state.snapshots.borrow_and_update().clone();
        let now = state.clock.now();
        let answer = snapshot.active(&state.key, now);
        if let Some(active) = answer
            && (state.last != Some(active) || Instant::now() >= state.resend_at)
        {
            if state.last.is_some_and(|last| last != active) {
                tracing::info!(policy = %state.key, active, "StreamIsActive: the answer changed");
            }
            state.last = Some(active);
            state.resend_at = Instant::now() + state.recheck;
            return Some((Ok(IsActiveResponse { result: active }), state));
        }
        // Not listed yet: nothing to send or re-send until the cache changes.
        let wake = answer.map(|_| {
            let expiry = snapshot
                .next_change(&state.key, now)
                .map(|at| Instant::now() + at.since(now));
            expiry.map_or(state.resend_at, |at| at.min(state.resend_at))
        });
        let sleep = async {
            match wake {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            changed = state.snapshots.changed() => {
                if changed.is_err() {
                    return None;
                }
            }
            () = sleep => {}
        }
    }
}

#[cfg(test)]
mod tests;
