//! The defragmentation walk's advice rows counted instead of kept
//! ([`PolicySettings::count_advice`](crate::PolicySettings::count_advice)).
//!
//! Why: on the trace cluster a pass's walk makes over a thousand advice rows (moves that do
//! not pay, Instances that may not move) and a handful of executable ones. An embedder that
//! publishes no record reads the advice only as counts, yet building, ordering, arbitrating
//! and reporting the rows was about a fifth of its pass. Under `count_advice` the walk
//! never builds its advice rows: it sets aside only what a count and the drain plans'
//! replacement of a row read ([`SetAside`]), so the sort, the merge of the two threads' rows
//! and everything after them see only the rows that can be decided on.

use std::collections::BTreeMap;
use std::sync::Arc;

use alfred_model::index::NameArena;
use alfred_model::reason::{AdvisoryReason, RowReason};
use alfred_model::record::{AdviceCount, Candidate, Policy};
use alfred_model::snapshot::ComponentKind;

use crate::context::NodeRef;

/// An advice row set aside: its Instance (a drain plan's step takes the place of that
/// Instance's row, counted or not), its source node and its reasons (a journal entry the
/// dispatcher reports on is matched with the row by these). The workload is its position in
/// the walked snapshot, its key read from [`NameArena`] only when a row is matched; so is
/// the source node, as a rule.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SetAside {
    pub(crate) workload: u32,
    pub(crate) component: ComponentKind,
    pub(crate) instance: i64,
    from_node: NodeRef,
    reason: RowReason,
    advisory_reason: Option<AdvisoryReason>,
}

impl SetAside {
    /// A defragmentation advice row of Instance `instance` of component `component` of the
    /// workload at position `workload` on `from_node`, set aside as the walk makes it (it is
    /// never built as a row).
    pub(crate) fn fragmentation(
        workload: u32,
        component: ComponentKind,
        instance: i64,
        from_node: NodeRef,
        why: AdvisoryReason,
    ) -> SetAside {
        SetAside {
            workload,
            component,
            instance,
            from_node,
            reason: RowReason::Fragmentation,
            advisory_reason: Some(why),
        }
    }
}

/// The advice rows a pass counted instead of keeping
/// ([`PolicySettings::count_advice`](crate::PolicySettings::count_advice)): their counts, and
/// which rows they were, so that the dispatcher does not make up a row for a journal entry it
/// reports on when the walk counted that Instance's row (a pass keeping its rows would have
/// put the entry's status on that advice row).
#[derive(Debug, Clone, Default)]
pub struct CountedAdvice {
    rows: Vec<SetAside>,
    /// The keys of the workloads the rows name by position.
    keys: Arc<NameArena>,
    /// The names of the nodes the rows name by position.
    nodes: Arc<NameArena>,
}

/// Equal when the same rows were counted in the same order: workloads and nodes compared by
/// name, not by the position that names them in one snapshot.
impl PartialEq for CountedAdvice {
    fn eq(&self, other: &Self) -> bool {
        self.rows.len() == other.rows.len()
            && self.rows.iter().zip(&other.rows).all(|(a, b)| {
                a.component == b.component
                    && a.instance == b.instance
                    && a.from_node.name(&self.nodes) == b.from_node.name(&other.nodes)
                    && a.reason == b.reason
                    && a.advisory_reason == b.advisory_reason
                    && self.keys.get(a.workload as usize) == other.keys.get(b.workload as usize)
            })
    }
}

impl CountedAdvice {
    pub(crate) fn new(
        rows: Vec<SetAside>,
        keys: Arc<NameArena>,
        nodes: Arc<NameArena>,
    ) -> CountedAdvice {
        CountedAdvice { rows, keys, nodes }
    }

    /// Counts the advice rows of `rows` as the walk does, taking them out of `rows` (the
    /// others keep their order): for a driver or a test that has the rows a pass would
    /// have kept.
    pub fn take_from(rows: &mut Vec<Candidate>) -> CountedAdvice {
        let mut aside = Vec::new();
        let mut keys = NameArena::default();
        set_aside(rows, &mut aside, &mut keys);
        CountedAdvice {
            rows: aside,
            keys: Arc::new(keys),
            nodes: Arc::default(),
        }
    }

    /// The rows counted per `(reason, advisoryReason)`, in that order.
    pub fn counts(&self) -> Vec<AdviceCount> {
        tally(self.rows.iter().map(|a| (a.reason, a.advisory_reason)))
    }

    /// Whether a counted row has `c`'s row key ([`Candidate::row_key`]).
    pub fn covers(&self, c: &Candidate) -> bool {
        c.policy == Policy::Defragmentation
            && self.rows.iter().any(|a| {
                a.component == c.component
                    && a.instance == c.instance
                    && a.reason == c.reason
                    && a.from_node.name(&self.nodes) == c.from_node
                    && self.keys.get(a.workload as usize) == Some(c.workload.as_str())
            })
    }

    /// Whether no row was counted.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// Moves the advice rows of `rows` to `aside`, their workloads' keys to `keys` (one per
/// row). The rows kept keep their order.
fn set_aside(rows: &mut Vec<Candidate>, aside: &mut Vec<SetAside>, keys: &mut NameArena) {
    rows.retain_mut(|r| {
        if r.executable {
            return true;
        }
        keys.push_key(&r.workload);
        aside.push(SetAside {
            workload: (keys.len() - 1) as u32,
            component: r.component,
            instance: r.instance,
            from_node: NodeRef::Name(std::mem::take(&mut r.from_node)),
            reason: r.reason,
            advisory_reason: r.advisory_reason,
        });
        false
    });
}

/// The advice rows among `rows` counted as [`Telemetry::DecisionsCountingAdvice`] counts
/// them ([`CountedAdvice::counts`]).
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

#[cfg(test)]
mod tests {
    use super::*;
    use alfred_model::snapshot::{DeploymentMode, Workload};

    fn workload(name: &str) -> Workload {
        Workload {
            namespace: "ns".into(),
            name: name.into(),
            ..Workload::default()
        }
    }

    fn candidate(name: &str, instance: i64, from: &str, why: Option<AdvisoryReason>) -> Candidate {
        crate::rows::row(
            Policy::Defragmentation,
            &workload(name),
            ComponentKind::Engine,
            instance,
            &DeploymentMode::OMENative,
            RowReason::Fragmentation,
            from.into(),
            why,
        )
    }

    fn keys(names: &[&str]) -> Arc<NameArena> {
        let mut k = NameArena::default();
        for n in names {
            k.push_key(&format!("ns/{n}"));
        }
        Arc::new(k)
    }

    fn nodes(names: &[&str]) -> Arc<NameArena> {
        let mut k = NameArena::default();
        for n in names {
            k.push_key(n);
        }
        Arc::new(k)
    }

    fn at(position: u32) -> NodeRef {
        NodeRef::Position(position)
    }

    #[test]
    fn rows_named_by_position_match_rows_named_by_key() {
        let no_room = AdvisoryReason::NoSurgeHeadroom;
        let not_paying = AdvisoryReason::NonExecutableObservedFragmentation;
        let by_position = CountedAdvice::new(
            vec![
                SetAside::fragmentation(1, ComponentKind::Engine, 0, at(1), not_paying),
                SetAside::fragmentation(2, ComponentKind::Engine, 1, at(2), no_room),
            ],
            keys(&["a", "b", "c"]),
            nodes(&["n0", "n1", "n2"]),
        );
        let mut rows = vec![
            candidate("a", 0, "n0", None),
            candidate("b", 0, "n1", Some(not_paying)),
            candidate("c", 1, "n2", Some(no_room)),
        ];
        let by_key = CountedAdvice::take_from(&mut rows);
        assert_eq!(rows, vec![candidate("a", 0, "n0", None)], "the move stays");
        assert_eq!(by_position, by_key);
        assert_eq!(by_position.counts(), by_key.counts());
        // Another snapshot's positions for the same rows (one node named, not placed).
        let shuffled = CountedAdvice::new(
            vec![
                SetAside::fragmentation(0, ComponentKind::Engine, 0, at(0), not_paying),
                SetAside::fragmentation(
                    3,
                    ComponentKind::Engine,
                    1,
                    NodeRef::Name("n2".into()),
                    no_room,
                ),
            ],
            keys(&["b", "x", "y", "c"]),
            nodes(&["n1", "n0"]),
        );
        assert_eq!(shuffled, by_position);
        let other = CountedAdvice::new(
            vec![
                SetAside::fragmentation(1, ComponentKind::Engine, 0, at(1), not_paying),
                SetAside::fragmentation(1, ComponentKind::Engine, 1, at(2), no_room),
            ],
            keys(&["b", "x"]),
            nodes(&["n0", "n1", "n2"]),
        );
        assert_ne!(other, by_position, "a different workload's row");
        let moved = CountedAdvice::new(
            vec![
                SetAside::fragmentation(1, ComponentKind::Engine, 0, at(0), not_paying),
                SetAside::fragmentation(2, ComponentKind::Engine, 1, at(2), no_room),
            ],
            keys(&["a", "b", "c"]),
            nodes(&["n0", "n1", "n2"]),
        );
        assert_ne!(moved, by_position, "a row from another node");
        for counted in [&by_position, &by_key, &shuffled] {
            assert!(counted.covers(&candidate("b", 0, "n1", Some(not_paying))));
            assert!(counted.covers(&candidate("c", 1, "n2", None)));
            assert!(!counted.covers(&candidate("a", 0, "n0", None)));
            assert!(!counted.covers(&candidate("b", 0, "n2", Some(not_paying))));
            assert!(!counted.covers(&candidate("b", 1, "n1", Some(not_paying))));
            assert!(!counted.covers(&candidate("x", 0, "n1", Some(not_paying))));
        }
    }
}
