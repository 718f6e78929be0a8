//! The push stream on its own, in tokio's paused time: the first answer, the re-send, a change.

use futures::StreamExt;

use super::*;
use crate::clock::TokioClock;
use crate::floor::FloorCache;

#[tokio::test(start_paused = true)]
async fn the_stream_resends_after_the_recheck_interval() {
    let cache = FloorCache::with_snapshot(Snapshot {
        policies_synced: true,
        lease_synced: true,
        ..Snapshot::default()
    });
    let clock = Arc::new(TokioClock::starting_at(
        utc_time::Timestamp::from_unix_secs(1_000),
    ));
    let key = PolicyKey::new("serving", "gone");
    let mut stream = active_stream(key, cache.subscribe(), clock, Duration::from_secs(30));
    let start = Instant::now();
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!((first.result, start.elapsed().as_secs()), (false, 0));
    let second = stream.next().await.unwrap().unwrap();
    assert_eq!((second.result, start.elapsed().as_secs()), (false, 30));
}
