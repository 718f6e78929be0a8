//! Tests of the quorum: majority reads, compare-and-swap write plans, the elector's clocks,
//! and the safety property that two candidates never both commit a hold on the fleet.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use proptest::prelude::*;
use utc_time::Timestamp;

use super::*;

/// An in-memory fleet of `plumb-hub` Leases with the API server's compare-and-swap rules.
#[derive(Debug, Clone, Default)]
struct Leases {
    /// member -> (resourceVersion, record)
    stored: BTreeMap<String, (u64, LeaseRecord)>,
    members: Vec<String>,
    next_version: u64,
}

impl Leases {
    fn new(n: usize) -> Self {
        Leases {
            members: (0..n).map(|i| format!("m{i}")).collect(),
            ..Leases::default()
        }
    }

    /// The views a candidate reaching `reachable` gets.
    fn views(&self, reachable: &BTreeSet<String>) -> Vec<VoterView> {
        self.members
            .iter()
            .map(|m| {
                let view = if !reachable.contains(m) {
                    LeaseView::Unreachable
                } else {
                    match self.stored.get(m) {
                        None => LeaseView::Absent,
                        Some((rv, record)) => LeaseView::Present {
                            resource_version: rv.to_string(),
                            record: record.clone(),
                        },
                    }
                };
                VoterView::new(m.clone(), view)
            })
            .collect()
    }

    /// Carries a plan out on the Leases `reachable` at write time; the per-Lease results.
    fn apply(&mut self, plan: &WritePlan, reachable: &BTreeSet<String>) -> Vec<(String, bool)> {
        plan.writes
            .iter()
            .map(|w| {
                let ok = reachable.contains(&w.member) && self.cas(w, &plan.record);
                (w.member.clone(), ok)
            })
            .collect()
    }

    fn cas(&mut self, write: &CasWrite, record: &LeaseRecord) -> bool {
        let current = self.stored.get(&write.member).map(|(rv, _)| rv.to_string());
        let matches = match (&write.precondition, current) {
            (Precondition::Absent, None) => true,
            (Precondition::ResourceVersion(want), Some(have)) => *want == have,
            _ => false,
        };
        if matches {
            self.next_version += 1;
            self.stored
                .insert(write.member.clone(), (self.next_version, record.clone()));
        }
        matches
    }
}

fn all(leases: &Leases) -> BTreeSet<String> {
    leases.members.iter().cloned().collect()
}

fn t(secs: i64) -> Timestamp {
    Timestamp::from_unix_secs(1_790_000_000 + secs)
}

fn record(holder: &str, renewed: i64) -> LeaseRecord {
    LeaseRecord {
        holder: Some(holder.to_string()),
        acquire_time: Some(t(0)),
        renew_time: Some(t(renewed)),
        lease_duration_seconds: 15,
        transitions: 0,
    }
}

fn present(member: &str, rv: &str, rec: LeaseRecord) -> VoterView {
    VoterView::new(
        member,
        LeaseView::Present {
            resource_version: rv.to_string(),
            record: rec,
        },
    )
}

/// One elector round against the fleet: read what `reachable` shows, write, settle.
fn round(
    e: &mut Elector,
    leases: &mut Leases,
    reachable: &BTreeSet<String>,
    now: Timestamp,
) -> bool {
    match e.on_read(leases.views(reachable), now) {
        Attempt::Write(plan) => {
            let results = leases.apply(&plan, reachable);
            e.on_write(&plan, &results, now)
        }
        Attempt::Wait(_) => e.is_leading(now),
    }
}

#[test]
fn majority_is_floor_half_plus_one() {
    let got: Vec<usize> = (1..=6).map(majority).collect();
    assert_eq!(got, vec![1, 2, 2, 3, 3, 4]);
}

#[test]
fn timing_defaults_are_15s_10s_2s() {
    let timing = LeaseTiming::default();
    assert_eq!(timing.duration, Duration::from_secs(15));
    assert_eq!(timing.renew_deadline, Duration::from_secs(10));
    assert_eq!(timing.retry_period, Duration::from_secs(2));
}

#[test]
fn read_names_the_newest_terms_freshest_record() {
    let term = |holder: &str, renewed: i64, transitions: u32| LeaseRecord {
        transitions,
        ..record(holder, renewed)
    };
    // x is named by two Leases, but y holds a newer term
    let views = vec![
        present("a", "1", term("x/p", 10, 0)),
        present("b", "1", term("y/p", 5, 1)),
        present("c", "1", term("x/p", 5, 0)),
    ];
    let newest = read(views).expect("all reachable");
    assert_eq!(newest.holder(), Some("y/p"));
    assert_eq!(newest.votes, 1);
    // within a term, the freshest record
    let views = vec![
        present("a", "1", term("x/p", 10, 2)),
        present("b", "1", term("x/p", 12, 2)),
        present("c", "1", term("x/p", 5, 2)),
    ];
    let read = read(views).expect("all reachable");
    assert_eq!(read.record.and_then(|r| r.renew_time), Some(t(12)));
    assert_eq!(read.votes, 3);
}

#[test]
fn a_new_term_goes_above_every_term_seen() {
    let mut e = Elector::new("z/p", LeaseTiming::default());
    let views = vec![
        present(
            "a",
            "1",
            LeaseRecord {
                transitions: 4,
                ..record("x/p", 0)
            },
        ),
        present(
            "b",
            "1",
            LeaseRecord {
                transitions: 7,
                holder: None,
                ..record("y/p", 0)
            },
        ),
        VoterView::new("c", LeaseView::Absent),
    ];
    assert!(matches!(
        e.on_read(views.clone(), t(1)),
        Attempt::Wait(Wait::HeldBy { .. })
    ));
    let Attempt::Write(plan) = e.on_read(views, t(16)) else {
        panic!("x expired")
    };
    assert_eq!(plan.record.transitions, 8);
    assert_eq!(plan.record.holder.as_deref(), Some("z/p"));
}

#[test]
fn a_tie_goes_to_the_latest_renewal_then_the_smaller_identity() {
    let views = vec![
        present("a", "1", record("x/p", 10)),
        present("b", "1", record("y/p", 20)),
        VoterView::new("c", LeaseView::Absent),
    ];
    assert_eq!(read(views).expect("quorum").holder(), Some("y/p"));
    let views = vec![
        present("b", "1", record("y/p", 20)),
        present("a", "1", record("x/p", 20)),
    ];
    assert_eq!(read(views).expect("quorum").holder(), Some("x/p"));
}

#[test]
fn read_without_a_majority_says_how_many_are_reachable() {
    let views = vec![
        present("a", "1", record("x/p", 10)),
        VoterView::new("b", LeaseView::Unreachable),
        VoterView::new("c", LeaseView::Unreachable),
    ];
    let err = read(views).expect_err("1 of 3");
    assert_eq!(
        err,
        NoQuorum {
            reachable: 1,
            need: 2
        }
    );
    assert_eq!(err.to_string(), "1 members reachable, need 2");
}

#[test]
fn every_listed_voter_counts_reachable_or_not() {
    // a 2-member fleet needs both: the cut-off member cannot elect itself
    let mut leases = Leases::new(2);
    let mut e = Elector::new("m0/p", LeaseTiming::default());
    let alone: BTreeSet<String> = ["m0".to_string()].into();
    assert!(!round(&mut e, &mut leases, &alone, t(0)));
    assert!(
        leases.stored.is_empty(),
        "nothing written without a majority"
    );
    assert_eq!(
        e.on_read(leases.views(&alone), t(1)),
        Attempt::Wait(Wait::NoQuorum(NoQuorum {
            reachable: 1,
            need: 2
        }))
    );
}

#[test]
fn a_voter_listed_twice_counts_once() {
    let views = vec![
        VoterView::new("a", LeaseView::Absent),
        VoterView::new("a", LeaseView::Absent),
        VoterView::new("b", LeaseView::Unreachable),
    ];
    assert_eq!(
        read(views).expect_err("a and b"),
        NoQuorum {
            reachable: 1,
            need: 2
        }
    );
}

#[test]
fn a_write_plan_is_one_cas_per_reachable_lease_on_what_was_read() {
    let views = vec![
        present("a", "7", record("x/p", 10)),
        VoterView::new("b", LeaseView::Absent),
        VoterView::new("c", LeaseView::Unreachable),
    ];
    let read = read(views).expect("2 of 3");
    let plan = plan_write(&read, record("y/p", 20)).expect("2 of 3 reachable");
    assert_eq!(
        plan.writes,
        vec![
            CasWrite {
                member: "a".into(),
                precondition: Precondition::ResourceVersion("7".into())
            },
            CasWrite {
                member: "b".into(),
                precondition: Precondition::Absent
            },
        ]
    );
    assert_eq!(
        plan.settle(&[("a".into(), true), ("b".into(), true)]),
        WriteOutcome::Committed { accepted: 2 }
    );
    assert_eq!(
        plan.settle(&[("a".into(), true), ("b".into(), false), ("c".into(), true)]),
        WriteOutcome::Failed(NoQuorum {
            reachable: 1,
            need: 2
        }),
        "a member outside the plan does not count"
    );
}

#[test]
fn a_lease_changed_since_read_is_never_overwritten() {
    let mut leases = Leases::new(3);
    let everyone = all(&leases);
    let mut a = Elector::new("m0/a", LeaseTiming::default());
    let mut b = Elector::new("m1/b", LeaseTiming::default());
    let Attempt::Write(plan_a) = a.on_read(leases.views(&everyone), t(0)) else {
        panic!("a writes")
    };
    let Attempt::Write(plan_b) = b.on_read(leases.views(&everyone), t(0)) else {
        panic!("b writes")
    };
    let results_b = leases.apply(&plan_b, &everyone);
    assert!(b.on_write(&plan_b, &results_b, t(0)));
    let results_a = leases.apply(&plan_a, &everyone);
    assert!(
        results_a.iter().all(|(_, ok)| !ok),
        "every Lease changed since a read it"
    );
    assert!(!a.on_write(&plan_a, &results_a, t(0)));
    let read = read(leases.views(&everyone)).expect("all reachable");
    assert_eq!(read.holder(), Some("m1/b"));
}

#[test]
fn the_hub_renews_and_keeps_its_acquire_time() {
    let mut leases = Leases::new(3);
    let everyone = all(&leases);
    let mut e = Elector::new("m0/p", LeaseTiming::default());
    assert!(round(&mut e, &mut leases, &everyone, t(0)));
    assert!(round(&mut e, &mut leases, &everyone, t(2)));
    let rec = read(leases.views(&everyone))
        .expect("quorum")
        .record
        .expect("held");
    assert_eq!(rec.acquire_time, Some(t(0)));
    assert_eq!(rec.renew_time, Some(t(2)));
    assert_eq!(rec.lease_duration_seconds, 15);
    assert_eq!(rec.transitions, 0);
}

#[test]
fn a_hub_that_cannot_renew_steps_down_at_the_renew_deadline() {
    let mut leases = Leases::new(3);
    let everyone = all(&leases);
    let mut e = Elector::new("m0/p", LeaseTiming::default());
    assert!(round(&mut e, &mut leases, &everyone, t(0)));
    let alone: BTreeSet<String> = ["m0".to_string()].into();
    assert!(
        round(&mut e, &mut leases, &alone, t(9)),
        "no renewal, but within the deadline"
    );
    assert!(
        !round(&mut e, &mut leases, &alone, t(10)),
        "10 s without a renewal"
    );
}

#[test]
fn a_candidate_waits_a_full_lease_duration_from_its_own_observation() {
    let mut leases = Leases::new(3);
    let everyone = all(&leases);
    let mut hub = Elector::new("m0/hub", LeaseTiming::default());
    assert!(round(&mut hub, &mut leases, &everyone, t(0)));
    // the hub dies; a candidate whose first look is at t=100 (the record's own times are
    // long past, as with a skewed clock) still waits 15 s from that look
    let mut c = Elector::new("m1/c", LeaseTiming::default());
    assert_eq!(
        c.on_read(leases.views(&everyone), t(100)),
        Attempt::Wait(Wait::HeldBy {
            holder: "m0/hub".into(),
            until: t(115)
        })
    );
    assert!(!round(&mut c, &mut leases, &everyone, t(114)));
    assert!(round(&mut c, &mut leases, &everyone, t(115)));
    let rec = read(leases.views(&everyone))
        .expect("quorum")
        .record
        .expect("held");
    assert_eq!(rec.holder.as_deref(), Some("m1/c"));
    assert_eq!(rec.acquire_time, Some(t(115)));
    assert_eq!(rec.transitions, 1);
}

#[test]
fn a_renewal_seen_restarts_the_candidates_clock() {
    let mut leases = Leases::new(3);
    let everyone = all(&leases);
    let mut hub = Elector::new("m0/hub", LeaseTiming::default());
    let mut c = Elector::new("m1/c", LeaseTiming::default());
    assert!(round(&mut hub, &mut leases, &everyone, t(0)));
    assert!(!round(&mut c, &mut leases, &everyone, t(1)));
    assert!(round(&mut hub, &mut leases, &everyone, t(10)));
    assert!(
        !round(&mut c, &mut leases, &everyone, t(20)),
        "saw the renewal at 20"
    );
    assert!(!round(&mut c, &mut leases, &everyone, t(34)));
    assert!(round(&mut c, &mut leases, &everyone, t(35)));
}

#[test]
fn a_fleet_of_one_is_its_own_hub() {
    let mut leases = Leases::new(1);
    let everyone = all(&leases);
    let mut e = Elector::new("m0/p", LeaseTiming::default());
    assert!(round(&mut e, &mut leases, &everyone, t(0)));
}

/// The schedule the single-leader property found: c2 takes the fleet on m2–m4 and dies;
/// c1 takes over on m0, m1, m4 after 15 s; c0 then reads m0, m2, m3, where c2's old record
/// is on two Leases and c1's newer term on one. Naming the holder most Leases name, c0 judged
/// c2's record expired and took the fleet beside c1.
#[test]
fn a_deposed_holders_record_on_most_of_a_read_does_not_outvote_a_newer_term() {
    let mut leases = Leases::new(5);
    let reach = |ms: &[usize]| -> BTreeSet<String> { ms.iter().map(|i| format!("m{i}")).collect() };
    let mut c: Vec<Elector> = (0..3)
        .map(|i| Elector::new(format!("c{i}/p"), LeaseTiming::default()))
        .collect();
    assert!(round(&mut c[2], &mut leases, &reach(&[2, 3, 4]), t(0)));
    assert!(!round(&mut c[1], &mut leases, &reach(&[1, 3, 4]), t(0)));
    assert!(!round(&mut c[0], &mut leases, &reach(&[1, 2, 3]), t(0)));
    assert!(round(&mut c[1], &mut leases, &reach(&[0, 1, 4]), t(15)));
    assert!(
        !round(&mut c[0], &mut leases, &reach(&[0, 2, 3]), t(15)),
        "c1 holds a newer term"
    );
    assert_eq!(
        c[0].on_read(leases.views(&reach(&[0, 2, 3])), t(16)),
        Attempt::Wait(Wait::HeldBy {
            holder: "c1/p".into(),
            until: t(30)
        })
    );
}

fn reach_strategy(n: usize) -> impl Strategy<Value = Vec<u8>> {
    // per member: 0 = neither candidate reaches it, 1 = only a, 2 = only b, 3 = both
    proptest::collection::vec(0u8..4, n)
}

fn split(codes: &[u8], leases: &Leases) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut a = BTreeSet::new();
    let mut b = BTreeSet::new();
    for (code, m) in codes.iter().zip(&leases.members) {
        if code & 1 == 1 {
            a.insert(m.clone());
        }
        if code & 2 == 2 {
            b.insert(m.clone());
        }
    }
    (a, b)
}

proptest! {
    /// Two candidates that each reach only their own part of the fleet (the parts disjoint)
    /// never both hold the quorum, whatever the order of their rounds; and a candidate that
    /// reaches a majority of a fleet with no live hub elects itself.
    #[test]
    fn two_disjoint_minorities_never_both_hold_the_quorum(
        n in 1usize..10,
        codes in reach_strategy(9),
        a_first in any::<bool>(),
        rounds in 1usize..4,
    ) {
        let mut leases = Leases::new(n);
        // disjoint: a member both would reach goes to a
        let codes: Vec<u8> = codes[..n].iter().map(|c| if *c == 3 { 1 } else { *c }).collect();
        let (reach_a, reach_b) = split(&codes, &leases);
        let mut a = Elector::new("a/p", LeaseTiming::default());
        let mut b = Elector::new("b/p", LeaseTiming::default());
        for r in 0..rounds {
            let now = t(r as i64 * 2);
            let (la, lb) = if a_first {
                let la = round(&mut a, &mut leases, &reach_a, now);
                (la, round(&mut b, &mut leases, &reach_b, now))
            } else {
                let lb = round(&mut b, &mut leases, &reach_b, now);
                (round(&mut a, &mut leases, &reach_a, now), lb)
            };
            prop_assert!(!(la && lb), "both lead with a={reach_a:?} b={reach_b:?}");
            prop_assert_eq!(la, reach_a.len() >= majority(n));
            prop_assert_eq!(lb, reach_b.len() >= majority(n));
        }
    }

    /// Candidates with overlapping reach that read before either writes: the Leases they
    /// share change under one of them, so at most one commits.
    #[test]
    fn concurrent_acquisitions_commit_at_most_once(
        n in 1usize..10,
        codes in reach_strategy(9),
        a_first in any::<bool>(),
    ) {
        let mut leases = Leases::new(n);
        let (reach_a, reach_b) = split(&codes[..n], &leases);
        let mut a = Elector::new("a/p", LeaseTiming::default());
        let mut b = Elector::new("b/p", LeaseTiming::default());
        let pa = a.on_read(leases.views(&reach_a), t(0));
        let pb = b.on_read(leases.views(&reach_b), t(0));
        let commit = |e: &mut Elector, attempt: &Attempt, reach: &BTreeSet<String>, leases: &mut Leases| match attempt {
            Attempt::Write(plan) => {
                let results = leases.apply(plan, reach);
                e.on_write(plan, &results, t(0))
            }
            Attempt::Wait(_) => false,
        };
        let (la, lb) = if a_first {
            let la = commit(&mut a, &pa, &reach_a, &mut leases);
            (la, commit(&mut b, &pb, &reach_b, &mut leases))
        } else {
            let lb = commit(&mut b, &pb, &reach_b, &mut leases);
            (commit(&mut a, &pa, &reach_a, &mut leases), lb)
        };
        prop_assert!(!(la && lb));
        if la || lb {
            let holder = read(leases.views(&all(&leases))).expect("all reachable").record.and_then(|r| r.holder);
            prop_assert_eq!(holder.as_deref(), Some(if la { "a/p" } else { "b/p" }));
        }
    }

    /// A candidate cut off with a minority never leads, even after the hub it last saw is
    /// long expired; once it reaches a majority again, it elects.
    #[test]
    fn a_majority_partition_can_elect(n in 1usize..10, cut in 0usize..10, wait in 16i64..100) {
        let mut leases = Leases::new(n);
        let everyone = all(&leases);
        let mut old = Elector::new("old/p", LeaseTiming::default());
        prop_assert!(round(&mut old, &mut leases, &everyone, t(0)));
        let reach: BTreeSet<String> = leases.members.iter().skip(cut.min(n)).cloned().collect();
        let mut c = Elector::new("c/p", LeaseTiming::default());
        prop_assert!(!round(&mut c, &mut leases, &reach, t(1)), "the old hub's record holds");
        let leads = round(&mut c, &mut leases, &reach, t(1 + wait));
        prop_assert_eq!(leads, reach.len() >= majority(n));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// Over any schedule of rounds, with each round's reach chosen freely (partitions that
    /// come and go), no two candidates lead at the same instant (one clock for all).
    #[test]
    fn at_most_one_candidate_leads_at_any_instant(
        n in 1usize..6,
        schedule in proptest::collection::vec((0usize..3, proptest::collection::vec(any::<bool>(), 5), 0i64..7), 1..80),
    ) {
        let mut leases = Leases::new(n);
        let mut electors: Vec<Elector> = (0..3).map(|i| Elector::new(format!("c{i}/p"), LeaseTiming::default())).collect();
        let mut now = t(0);
        for (who, reach, dt) in &schedule {
            now = now.plus(Duration::from_secs(*dt as u64));
            let reachable: BTreeSet<String> = leases
                .members
                .iter()
                .zip(reach)
                .filter(|(_, r)| **r)
                .map(|(m, _)| m.clone())
                .collect();
            round(&mut electors[*who], &mut leases, &reachable, now);
            let leading: Vec<&str> = electors.iter().filter(|e| e.is_leading(now)).map(Elector::identity).collect();
            prop_assert!(leading.len() <= 1, "{leading:?} lead at {now}");
        }
    }
}

/// Found by the fault campaign (`adapters/plumb-chaos`, seed 15 of 10-minute runs): A's
/// acquisition lands on one Lease only, B then acquires the same term on the others and
/// leads. A's clock runs ahead, so A's minority record reads as the freshest of the term;
/// renewing it would write over B's Leases while B still leads. A never committed that term,
/// so it waits, and B keeps its Leases.
#[test]
fn a_record_naming_the_candidate_that_it_never_committed_is_not_renewed() {
    let mut leases = Leases::new(3);
    let everyone = all(&leases);
    let only_m0: BTreeSet<String> = ["m0".to_string()].into();
    let m1_m2: BTreeSet<String> = ["m1".to_string(), "m2".to_string()].into();
    let ahead = |secs: i64| t(secs).plus(Duration::from_millis(1500));
    let mut a = Elector::new("m0/a", LeaseTiming::default());
    let mut b = Elector::new("m1/b", LeaseTiming::default());
    // A reads all three Leases absent, but its writes reach m0 only
    let Attempt::Write(plan) = a.on_read(leases.views(&everyone), ahead(0)) else {
        panic!("A should try to acquire");
    };
    let results = leases.apply(&plan, &only_m0);
    assert!(!a.on_write(&plan, &results, ahead(0)));
    // B, cut off from m0, acquires the same term on m1 and m2
    assert!(round(&mut b, &mut leases, &m1_m2, t(1)));
    let b_leases = (
        leases.stored.get("m1").cloned(),
        leases.stored.get("m2").cloned(),
    );
    // A reads its own record (renewed at its 1.5 s, B's at 1 s) as the freshest of term 0
    assert_eq!(
        read(leases.views(&everyone)).expect("quorum").holder(),
        Some("m0/a")
    );
    assert!(!round(&mut a, &mut leases, &everyone, ahead(3)));
    assert_eq!(
        (
            leases.stored.get("m1").cloned(),
            leases.stored.get("m2").cloned()
        ),
        b_leases,
        "A wrote over B's Leases"
    );
    assert!(b.is_leading(t(3)));
    // once that record is a lease duration old by A's observation, A may take a new term
    assert!(!round(&mut a, &mut leases, &everyone, ahead(17)));
    assert!(round(&mut a, &mut leases, &everyone, ahead(19)));
    let now = read(leases.views(&everyone)).expect("quorum");
    assert_eq!(now.holder(), Some("m0/a"));
    assert_eq!(now.record.map(|r| r.transitions), Some(1));
}

/// A failed acquisition of term 1 left on one Lease (m0) reads as the quorum's record, while
/// the live hub B renews term 0 on the other two. A candidate must take B's renewals as signs
/// of life: its clock restarts on a change of any Lease, not only of the quorum's record, so
/// it does not take term 2 from under B (fault campaign seed 82926: two hubs for 3 s).
#[test]
fn a_renewal_under_a_stale_newer_term_still_restarts_the_candidates_clock() {
    let stale = LeaseRecord {
        transitions: 1,
        ..record("m0/a", 0)
    };
    let views = |renewed: i64, rv: &str| {
        vec![
            present("m0", "1", stale.clone()),
            present("m1", rv, record("m1/b", renewed)),
            present("m2", rv, record("m1/b", renewed)),
        ]
    };
    let mut c = Elector::new("m2/c", LeaseTiming::default());
    assert_eq!(
        read(views(0, "10")).expect("quorum").record,
        Some(stale.clone()),
        "the stale newer term is the quorum's record"
    );
    assert!(matches!(c.on_read(views(0, "10"), t(0)), Attempt::Wait(_)));
    assert!(matches!(
        c.on_read(views(10, "11"), t(10)),
        Attempt::Wait(_)
    ));
    // 16 s after the stale record was first seen, 2 s after B's latest renewal: B is alive.
    match c.on_read(views(14, "12"), t(16)) {
        Attempt::Wait(Wait::HeldBy { until, .. }) => assert_eq!(until, t(31)),
        other => panic!("took a new term while the hub renews: {other:?}"),
    }
    // A voter that stops answering restarts nothing; B silent for a lease duration expires.
    let mut quiet = views(14, "12");
    quiet[1] = VoterView::new("m1", LeaseView::Unreachable);
    assert!(matches!(c.on_read(quiet.clone(), t(20)), Attempt::Wait(_)));
    assert!(matches!(c.on_read(quiet, t(31)), Attempt::Write(_)));
}

/// Two candidates start their first term at once: A's acquisition lands on two Leases, B's on
/// the third with a later renewal, so B's record reads as the freshest of term 0. A committed
/// term 0, so it renews over B's stray record at once instead of waiting it out (the live
/// tests saw the fleet without a hub for a lease duration at start-up before).
#[test]
fn a_hub_renews_over_a_same_term_record_that_landed_on_a_minority() {
    let mut leases = Leases::new(3);
    let everyone = all(&leases);
    let m0_m1: BTreeSet<String> = ["m0".to_string(), "m1".to_string()].into();
    let only_m2: BTreeSet<String> = ["m2".to_string()].into();
    let mut a = Elector::new("m0/a", LeaseTiming::default());
    let mut b = Elector::new("m2/b", LeaseTiming::default());
    // Both read every Lease absent; A's writes land on m0 and m1, B's (a moment later) on m2.
    let Attempt::Write(plan_a) = a.on_read(leases.views(&everyone), t(0)) else {
        panic!("A should try to acquire");
    };
    let Attempt::Write(plan_b) = b.on_read(leases.views(&everyone), t(1)) else {
        panic!("B should try to acquire");
    };
    let results = leases.apply(&plan_a, &m0_m1);
    assert!(a.on_write(&plan_a, &results, t(0)));
    let results = leases.apply(&plan_b, &only_m2);
    assert!(!b.on_write(&plan_b, &results, t(1)));
    let read_now = read(leases.views(&everyone)).expect("quorum");
    assert_eq!(
        read_now.holder(),
        Some("m2/b"),
        "B's stray record reads freshest"
    );
    // A renews at once, over all three Leases, keeping its acquire time.
    assert!(round(&mut a, &mut leases, &everyone, t(2)));
    for m in ["m0", "m1", "m2"] {
        let (_, r) = &leases.stored[m];
        assert_eq!(r.holder.as_deref(), Some("m0/a"), "{m}");
        assert_eq!(
            (r.acquire_time, r.renew_time, r.transitions),
            (Some(t(0)), Some(t(2)), 0)
        );
    }
    // B waits A out; A keeps leading.
    assert!(!round(&mut b, &mut leases, &everyone, t(3)));
    assert!(round(&mut a, &mut leases, &everyone, t(4)));
    assert_eq!(
        read(leases.views(&everyone)).expect("quorum").holder(),
        Some("m0/a")
    );
}

/// The hub's member is cut off (m0 unreachable); B (m1) and C (m2) see its record expire at
/// the same instant and acquire at once, each winning only its own Lease. Their retries are
/// staggered by rank after a failed acquisition, so one commits within a lease duration and a
/// retry period of the split, where retrying together would split again every time.
#[test]
fn candidates_whose_acquisitions_split_retry_one_after_another() {
    let mut leases = Leases::new(3);
    let everyone = all(&leases);
    let mut a = Elector::new("m0/a", LeaseTiming::default());
    assert!(round(&mut a, &mut leases, &everyone, t(0)));
    let reach: BTreeSet<String> = ["m1".to_string(), "m2".to_string()].into();
    let only = |m: &str| -> BTreeSet<String> { [m.to_string()].into() };
    let mut b = Elector::new("m1/b", LeaseTiming::default());
    let mut c = Elector::new("m2/c", LeaseTiming::default());
    let mut splits = 0;
    let mut leader = None;
    // Both read every 2 s; writes in the same round race: each wins its own Lease.
    for step in 0..20 {
        let now = t(1 + 2 * step);
        let pb = b.on_read(leases.views(&reach), now);
        let pc = c.on_read(leases.views(&reach), now);
        match (pb, pc) {
            (Attempt::Write(pb), Attempt::Write(pc)) => {
                splits += 1;
                let rb = leases.apply(&pb, &only("m1"));
                let rc = leases.apply(&pc, &only("m2"));
                assert!(!b.on_write(&pb, &rb, now) && !c.on_write(&pc, &rc, now));
            }
            (Attempt::Write(p), _) => {
                let r = leases.apply(&p, &reach);
                if b.on_write(&p, &r, now) {
                    leader = Some(("m1/b", now));
                }
            }
            (_, Attempt::Write(p)) => {
                let r = leases.apply(&p, &reach);
                if c.on_write(&p, &r, now) {
                    leader = Some(("m2/c", now));
                }
            }
            _ => {}
        }
        if leader.is_some() {
            break;
        }
    }
    assert_eq!(
        splits, 1,
        "one split, then the retries go one after another"
    );
    let (who, when) = leader.expect("a new hub");
    // The split at 17 s, its records first read at 19 s; m1 sorts before m2, so B retries
    // first, a lease duration and one retry period later (C would wait two).
    assert_eq!(who, "m1/b");
    assert_eq!(when, t(37), "the new hub took until {when}");
    assert!(!c.is_leading(when));
}
