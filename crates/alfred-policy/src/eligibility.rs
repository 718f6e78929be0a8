//! OMENative eligibility as the policies report it
//! (docs/design-policies.md#omenative-eligibility): alfred-score's blocks as advisory reasons.

use alfred_model::index::{InstanceFacts, SnapshotIndex};
use alfred_model::reason::AdvisoryReason;
use alfred_model::snapshot::{Component, Instance, Workload};
use alfred_score::RepackBlock;

use crate::context::Ctx;

/// The shared OMENative eligibility (docs/design-policies.md#omenative-eligibility, alfred-score's)
/// as the reason to report; `None` = eligible.
pub(crate) fn omenative_eligibility(
    ctx: &Ctx<'_>,
    w: &Workload,
    c: &Component,
    inst: &Instance,
) -> Option<AdvisoryReason> {
    alfred_score::omenative_eligibility(&ctx.inputs.snap, w, c, inst).map(advisory)
}

/// [`omenative_eligibility`] read from the snapshot's index (`idx` is `ctx.inputs.snap`'s;
/// `component_flags` and `facts` the component's and the Instance's entries).
pub(crate) fn omenative_eligibility_at(
    ctx: &Ctx<'_>,
    idx: &SnapshotIndex,
    w: &Workload,
    component_flags: u8,
    facts: &InstanceFacts,
) -> Option<AdvisoryReason> {
    alfred_score::omenative_eligibility_indexed(&ctx.inputs.snap, idx, w, component_flags, facts)
        .map(advisory)
}

/// The advisory reason of a block (every block the policies see has one).
pub(crate) fn advisory(block: RepackBlock) -> AdvisoryReason {
    block
        .advisory_reason()
        .unwrap_or(AdvisoryReason::OMENativeStateIneligible)
}
