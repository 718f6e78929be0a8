//! The defragmentation walk shared by two threads, beside other work of the pass.
//!
//! Why: on a large cluster the walk is most of a pass (the trace cluster's 1,213 nodes make
//! 3,000 to 4,500 component visits a pass), and the drain-plan search, which reads the same
//! context and analysis but not the walk's rows, is most of the rest. Cutting the walk in two
//! fixed halves left the search after both; here the visits are cut in small chunks that a
//! helper thread takes from the start while the calling thread runs the other work, then
//! takes the chunks left. The two threads end within a chunk of each other, whatever the
//! other work costs.
//!
//! The rows stay exactly the one-thread walk's. Each thread keeps, beside each row, its
//! place in the one-thread walk (its chunk, then its position in the chunk); a thread takes
//! chunks in increasing order, so a stable sort of its rows puts rows the sort's order ties
//! in the order of their places. The two sorted lists are then merged by the sort's order,
//! ties to the earlier place: the stable sort of the one-thread walk's rows.

use std::cmp::Ordering;
use std::sync::OnceLock;
use std::sync::atomic::{self, AtomicUsize};

use alfred_model::record::Candidate;

use crate::advice_counts::SetAside;
use crate::context::Ctx;
use crate::defragmentation::{
    PoolPricers, Walk, WalkLane, WalkParts, Walked, row_order, sort_rows_with,
};

/// A row's place in the one-thread walk: its chunk, then its position among the chunk's rows.
type Place = (usize, usize);

/// The walk of `parts` on this thread and a helper thread in chunks of `chunk` visits,
/// this thread running `beside` first. The helper thread builds the [`Walk`] meanwhile
/// (whichever thread needs it first builds it; the other waits for it).
pub(crate) fn shared<T>(
    ctx: &Ctx<'_>,
    parts: &WalkParts<'_, '_, '_>,
    chunk: usize,
    beside: impl FnOnce() -> T,
) -> (Walked, T) {
    let chunks = Chunks {
        next: AtomicUsize::new(0),
        chunk: chunk.max(1),
    };
    let ready: OnceLock<Walk> = OnceLock::new();
    let seed = ctx.seed();
    let (mut mine, mut theirs, other) = std::thread::scope(|scope| {
        let (chunks, ready) = (&chunks, &ready);
        let helper = scope.spawn(move || {
            // The helper's own context: same snapshot, settings and lookups.
            let ctx = seed.grow();
            let walk = ready.get_or_init(|| parts.walk(&ctx));
            walk_taken(&ctx, &WalkLane { parts, walk }, chunks)
        });
        let other = beside();
        let walk = ready.get_or_init(|| parts.walk(ctx));
        let mine = walk_taken(ctx, &WalkLane { parts, walk }, chunks);
        let theirs = helper
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (mine, theirs, other)
    });
    let mut aside = std::mem::take(&mut mine.aside);
    aside.append(&mut theirs.aside);
    let rows = merge(mine, theirs);
    // The caller names the walked snapshot's workloads and nodes.
    let (keys, nodes) = Default::default();
    (
        Walked {
            rows,
            aside,
            keys,
            nodes,
        },
        other,
    )
}

/// The chunks of a shared walk, handed out in increasing order.
struct Chunks {
    next: AtomicUsize,
    chunk: usize,
}

impl Chunks {
    /// The next chunk of a walk of `total` visits not taken yet: its number and its visits
    /// `[from, to)`.
    fn take(&self, total: usize) -> Option<(usize, usize, usize)> {
        // Only the counter is shared, and each number is handed out once: no ordering with
        // other memory is needed.
        let k = self.next.fetch_add(1, atomic::Ordering::Relaxed);
        let from = k.checked_mul(self.chunk)?;
        (from < total).then(|| (k, from, (from + self.chunk).min(total)))
    }
}

/// The rows one thread walked, filtered and sorted, each with its place, and the advice
/// rows it set aside (under `count_advice`).
struct Placed {
    rows: Vec<Candidate>,
    places: Vec<Place>,
    aside: Vec<SetAside>,
}

/// Walks chunks until none is left.
fn walk_taken(ctx: &Ctx<'_>, lane: &WalkLane<'_, '_, '_>, chunks: &Chunks) -> Placed {
    let total = lane.visits();
    let mut out = lane.out(ctx);
    let mut places = Vec::new();
    let mut pricers = PoolPricers::new(lane.pools_visited());
    while let Some((k, from, to)) = chunks.take(total) {
        if !out.counts_advice() {
            out.rows.reserve(lane.rows_bound(from, to));
        }
        let before = out.rows.len();
        lane.walk_visits(ctx, from, to, &mut pricers, &mut out);
        places.extend((0..out.rows.len() - before).map(|i| (k, i)));
    }
    let (mut rows, aside) = out.into_parts();
    lane.keep_in_window(&mut rows, &mut places);
    sort_rows_with(&mut rows, &mut places);
    Placed {
        rows,
        places,
        aside,
    }
}

/// The two threads' rows in the sort's order, ties to the earlier place. The order is
/// worked out on borrowed rows first, so each row (a few hundred bytes) moves once.
fn merge(a: Placed, b: Placed) -> Vec<Candidate> {
    let (mut i, mut j) = (0, 0);
    let mut from_b = Vec::with_capacity(a.rows.len() + b.rows.len());
    while i < a.rows.len() && j < b.rows.len() {
        let b_first = row_order(&b.rows[j], &a.rows[i]).then_with(|| b.places[j].cmp(&a.places[i]))
            == Ordering::Less;
        from_b.push(b_first);
        if b_first {
            j += 1;
        } else {
            i += 1;
        }
    }
    let mut out = Vec::with_capacity(a.rows.len() + b.rows.len());
    let (mut a, mut b) = (a.rows.into_iter(), b.rows.into_iter());
    for take_b in from_b {
        out.extend(if take_b { b.next() } else { a.next() });
    }
    out.extend(a);
    out.extend(b);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_visits_once_in_order() {
        let chunks = Chunks {
            next: AtomicUsize::new(0),
            chunk: 3,
        };
        let taken: Vec<_> = std::iter::from_fn(|| chunks.take(7)).collect();
        assert_eq!(taken, vec![(0, 0, 3), (1, 3, 6), (2, 6, 7)]);
        assert_eq!(
            chunks.take(7),
            None,
            "an exhausted walk hands out nothing more"
        );
    }
}
