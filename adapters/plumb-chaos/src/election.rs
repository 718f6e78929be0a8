//! One round of an agent's election loop, as part 4's agent would run it: read every
//! member's `plumb-hub` Lease (an unreachable member or a failed read is `Unreachable`), hand
//! the views to plumb-core's [`Elector`](plumb_core::quorum::Elector), carry out its
//! compare-and-swap writes with the run's faults, and settle them. The checker sees every
//! Lease write that landed and every term a majority holds.

use plumb_core::quorum::{Attempt, LeaseView, VoterView, majority};

use crate::store::{read_fails, write_fault};
use crate::world::World;

/// Runs agent `i`'s round (when its agent is up).
pub fn round(w: &mut World, i: usize) {
    if !w.agent_up(i) {
        return;
    }
    let now = w.clock(i);
    let views: Vec<VoterView> = (0..w.members.len())
        .map(|j| {
            let view = if !w.reach(i, j) || read_fails(&mut w.fault_rng, &w.api, &mut w.faults) {
                LeaseView::Unreachable
            } else {
                match &w.members[j].store.lease {
                    None => LeaseView::Absent,
                    Some((rv, record)) => LeaseView::Present {
                        resource_version: rv.to_string(),
                        record: record.clone(),
                    },
                }
            };
            VoterView::new(w.members[j].name.clone(), view)
        })
        .collect();
    let attempt = w.members[i].agent.elector.on_read(views, now);
    if let Attempt::Write(plan) = attempt {
        let holder = plan.record.holder.clone().unwrap_or_default();
        let mut results = Vec::new();
        for write in &plan.writes {
            let Some(j) = w.index(&write.member) else {
                continue;
            };
            let call = if w.reach(i, j) {
                write_fault(&mut w.fault_rng, &w.api, &mut w.faults)
            } else {
                crate::store::Call::Failed(0)
            };
            let landed = call.landed()
                && w.members[j]
                    .store
                    .cas_lease(&write.precondition, &plan.record)
                    .is_ok();
            if landed {
                w.checker.lease_written(&holder);
            }
            results.push((write.member.clone(), landed && call.answered_ok()));
        }
        let leading = w.members[i].agent.elector.on_write(&plan, &results, now);
        if leading {
            w.checker.term_held(plan.record.transitions, &holder);
        }
        note_majority_terms(w);
    }
    if !w.members[i].agent.elector.is_leading(now) {
        w.members[i].agent.hubs.clear();
    }
}

/// Every (term, holder) a majority of all Leases hold is committed, whatever the writer saw.
fn note_majority_terms(w: &mut World) {
    let need = majority(w.members.len());
    let mut held: std::collections::BTreeMap<(u32, String), usize> =
        std::collections::BTreeMap::new();
    for m in &w.members {
        if let Some((_, r)) = &m.store.lease
            && let Some(h) = &r.holder
        {
            *held.entry((r.transitions, h.clone())).or_insert(0) += 1;
        }
    }
    for ((term, holder), n) in held {
        if n >= need {
            w.checker.term_held(term, &holder);
        }
    }
}
