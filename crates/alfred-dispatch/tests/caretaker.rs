//! The caretaker carries a term between passes: a request whose write failed is reported
//! by the next pass (`SubmissionUncertain`) with no bookkeeping by the driver, and a
//! request that landed is followed by the next pass.

mod common;

use std::time::Duration;

use alfred_dispatch::journal::Phase;
use alfred_dispatch::{Caretaker, PassOutput, Reading};
use alfred_model::effect::Effect;
use alfred_model::reason::DispatchReason as D;
use common::*;

fn caretaker(w: &World) -> Caretaker {
    let mut next = 0u32;
    Caretaker::new(w.runtime.clone(), move || {
        next += 1;
        uuid(next)
    })
    .with_stages(w.stages.clone())
}

fn pass(c: &mut Caretaker, w: &mut World) -> PassOutput {
    let reading = Reading::new(&w.snap, &w.config, w.now).guard(&w.guard);
    c.pass(reading, &mut w.sim)
}

/// Applies `out`'s writes in order, failing the request write; returns its UUID.
fn apply_failing_the_request(c: &mut Caretaker, out: &PassOutput) -> String {
    for e in &out.effects {
        let failed = matches!(e, Effect::RequestMigration { .. });
        c.write_done(e, !failed);
        if let (true, Effect::RequestMigration { uuid, .. }) = (failed, e) {
            return uuid.clone();
        }
    }
    panic!("no request in {:?}", out.effects);
}

#[test]
fn a_failed_request_write_is_reported_by_the_next_pass() {
    let mut w = World::execute();
    let mut c = caretaker(&w);
    let first = pass(&mut c, &mut w);
    let id = apply_failing_the_request(&mut c, &first);
    assert_eq!(c.session().failed_requests, std::slice::from_ref(&id));
    assert_eq!(
        entry_phase(&c, &id),
        Phase::Prepared,
        "the save after the request never ran"
    );
    w.now = w.now.plus(Duration::from_secs(30));
    w.snap.observed_at = w.now.minus(Duration::from_secs(5));
    let second = pass(&mut c, &mut w);
    let row = second
        .record
        .recommendations
        .as_ref()
        .and_then(|r| r.iter().find(|x| x.request_uuid == id))
        .expect("the entry's row");
    assert_eq!(row.dispatch_reason, Some(D::SubmissionUncertain));
    assert!(c.session().failed_requests.is_empty(), "consumed");
}

fn entry_phase(c: &Caretaker, id: &str) -> Phase {
    match &c.state().journal {
        alfred_dispatch::JournalSlot::Readable(j) => j.entry(id).expect("the entry").phase,
        other => panic!("journal not readable: {other:?}"),
    }
}

#[test]
fn when_every_write_lands_the_carried_journal_is_the_passes_own() {
    let mut w = World::execute();
    let mut c = caretaker(&w);
    let first = pass(&mut c, &mut w);
    for e in &first.effects {
        c.write_done(e, true);
    }
    assert_eq!(c.state(), &first.new_state);
    let Effect::RequestMigration { uuid: id, .. } = first
        .effects
        .iter()
        .find(|e| matches!(e, Effect::RequestMigration { .. }))
        .expect("a request")
        .clone()
    else {
        unreachable!()
    };
    assert_eq!(entry_phase(&c, &id), Phase::Submitted);
    // The next pass follows it (no second request while it is unresolved).
    w.now = w.now.plus(Duration::from_secs(30));
    w.snap.observed_at = w.now.minus(Duration::from_secs(5));
    let second = pass(&mut c, &mut w);
    assert!(
        !second
            .effects
            .iter()
            .any(|e| matches!(e, Effect::RequestMigration { .. })),
        "one unresolved request at a time"
    );
}
