//! The defragmentation walk's advice rows counted instead of kept
//! ([`PolicySettings::count_advice`](crate::PolicySettings::count_advice)).
//!
//! Why: on the trace cluster a pass's walk makes over a thousand advice rows (moves that do
//! not pay, Instances that may not move) and a handful of executable ones. An embedder that
//! publishes no record reads the advice only as counts, yet building, ordering, arbitrating
//! and reporting the rows was about a fifth of its pass. Under `count_advice` each walking
//! thread sets its advice rows aside as soon as a chunk is walked, keeping only what a
//! count and the drain plans' replacement of a row read, so the sort, the merge of the two
//! threads' rows and everything after them see only the rows that can be decided on.

use std::collections::BTreeMap;

use alfred_model::reason::{AdvisoryReason, RowReason};
use alfred_model::record::{AdviceCount, Candidate};
use alfred_model::snapshot::ComponentKind;

/// An advice row set aside: its Instance (a drain plan's step takes the place of that
/// Instance's row, counted or not) and its reasons.
#[derive(Debug)]
pub(crate) struct SetAside {
    pub(crate) workload: String,
    pub(crate) component: ComponentKind,
    pub(crate) instance: i64,
    reason: RowReason,
    advisory_reason: Option<AdvisoryReason>,
}

/// Moves the advice rows of `rows` to `aside`, with the entries of `companion` (empty, or
/// one per row) beside them dropped. The rows kept keep their order.
pub(crate) fn set_aside<S>(
    rows: &mut Vec<Candidate>,
    companion: &mut Vec<S>,
    aside: &mut Vec<SetAside>,
) {
    if !companion.is_empty() {
        let mut kept = rows.iter().map(|r| r.executable);
        companion.retain(|_| kept.next().unwrap_or(true));
    }
    rows.retain_mut(|r| {
        if r.executable {
            return true;
        }
        aside.push(SetAside {
            workload: std::mem::take(&mut r.workload),
            component: r.component,
            instance: r.instance,
            reason: r.reason,
            advisory_reason: r.advisory_reason,
        });
        false
    });
}

/// The rows set aside, counted per `(reason, advisoryReason)` in that order.
pub(crate) fn count(aside: &[SetAside]) -> Vec<AdviceCount> {
    tally(aside.iter().map(|a| (a.reason, a.advisory_reason)))
}

/// The advice rows among `rows` counted as [`Telemetry::DecisionsCountingAdvice`] counts
/// them: what a pass that keeps its rows would have counted.
///
/// [`Telemetry::DecisionsCountingAdvice`]: alfred_model::config::Telemetry::DecisionsCountingAdvice
pub fn count_rows(rows: &[Candidate]) -> Vec<AdviceCount> {
    tally(
        rows.iter()
            .filter(|r| !r.executable)
            .map(|r| (r.reason, r.advisory_reason)),
    )
}

fn tally(pairs: impl Iterator<Item = (RowReason, Option<AdvisoryReason>)>) -> Vec<AdviceCount> {
    let mut counts: BTreeMap<(RowReason, Option<AdvisoryReason>), u64> = BTreeMap::new();
    for pair in pairs {
        *counts.entry(pair).or_default() += 1;
    }
    counts
        .into_iter()
        .map(|((reason, advisory_reason), rows)| AdviceCount {
            reason,
            advisory_reason,
            rows,
        })
        .collect()
}
