//! A plan's price in GPUs and the order of plans (docs/design-policies.md#drain-plans).

use std::collections::BTreeMap;

use alfred_model::plan::DrainPlan;
use alfred_score::{LadderSlots, PoolAnalysis, Weights};

/// The pool's bins priced as unusable free GPUs (see the module documentation).
pub(super) struct Pricing<'a, 'e> {
    eval: &'a PoolAnalysis<'e>,
    slots: LadderSlots,
    total_free: u64,
}

impl<'a, 'e> Pricing<'a, 'e> {
    pub(super) fn new(eval: &'a PoolAnalysis<'e>) -> Self {
        Pricing {
            eval,
            slots: LadderSlots::new(&eval.bins, &eval.weights),
            total_free: eval.bins.total_free(),
        }
    }

    /// `w(s)` of the ladder size a pod of `gpus` snaps to (the smallest size ≥ `gpus`, else
    /// the largest), as the demand weights count it.
    pub(super) fn weight_of(&self, gpus: u32) -> f64 {
        let sizes = &self.eval.weights.sizes;
        let size = sizes
            .iter()
            .copied()
            .find(|s| *s >= gpus)
            .or_else(|| sizes.last().copied())
            .unwrap_or(0);
        self.eval.weights.get(size)
    }

    /// `U` of slot counts: `Σ_s w(s)·max(0, F − slots(s)·s)`.
    pub(super) fn unusable(&self, slots: &LadderSlots) -> f64 {
        unusable_gpus(slots, &self.eval.weights, self.total_free)
    }

    /// `U(before) − U(after)` when node `name` alone gains `freed` GPUs: the most a plan
    /// freeing them there can recover, whatever its targets (the search's bound,
    /// [`super::best_new_plan`]).
    pub(super) fn benefit_of_freeing(&self, name: &str, freed: u32) -> Option<f64> {
        self.benefit(&BTreeMap::from([(name, i64::from(freed))]))
    }

    /// `U(before) − U(after)` when the bins named change by `delta` GPUs each (a bin that
    /// is not in the pool, or that would go below 0 or above its capacity, makes `None`).
    pub(super) fn benefit(&self, changes: &BTreeMap<&str, i64>) -> Option<f64> {
        let mut after = self.slots.clone();
        for (name, delta) in changes {
            let pos = self.eval.bins.position(name)?;
            let bin = self.eval.bins.get(pos)?;
            let new = i64::from(bin.free) + delta;
            if new < 0 || new > i64::from(bin.cap) {
                return None;
            }
            after.update(bin.free, u32::try_from(new).ok()?, bin.cap);
        }
        Some(self.unusable(&self.slots) - self.unusable(&after))
    }
}

/// `U = Σ_s w(s)·max(0, F − slots(s)·s)`: the pool's weighted fragmentation times its free
/// GPUs (the same sum [`LadderSlots::weighted_fragmentation`] makes, in GPUs).
pub fn unusable_gpus(slots: &LadderSlots, weights: &Weights, total_free: u64) -> f64 {
    slots.weighted_fragmentation(weights, total_free) * total_free as f64
}

/// Plan order: net GPUs per step ([`DrainPlan::rank`]), then fewer steps, fewer GPUs moved,
/// node name.
pub(super) fn better(a: &DrainPlan, b: &DrainPlan) -> bool {
    a.rank()
        .total_cmp(&b.rank())
        .reverse()
        .then(a.steps.len().cmp(&b.steps.len()))
        .then(a.moved_gpus().cmp(&b.moved_gpus()))
        .then(a.node.cmp(&b.node))
        .is_lt()
}
