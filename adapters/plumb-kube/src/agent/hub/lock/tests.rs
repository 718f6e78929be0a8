//! The Lease object the lock writes and reads back, the release record, the request timeout
//! and the leadership's deadline (the rounds themselves run against real servers in
//! tests/live_fleet.rs).

use super::*;

#[test]
fn a_lease_written_reads_back_as_the_same_record() {
    let record = LeaseRecord {
        holder: Some("us-east/plumb-agent-0".into()),
        acquire_time: Some(Timestamp::parse_rfc3339("2026-12-01T12:00:00.123456Z").unwrap()),
        renew_time: Some(Timestamp::parse_rfc3339("2026-12-01T12:00:04.5Z").unwrap()),
        lease_duration_seconds: 15,
        transitions: 3,
    };
    let lease = lease_object(&record, Some("42".into()));
    assert_eq!(lease.metadata.name.as_deref(), Some("plumb-hub"));
    assert_eq!(lease.metadata.resource_version.as_deref(), Some("42"));
    assert_eq!(plumb_scaler::watch::lease_record(&lease), record);
    let json = serde_json::to_value(&lease).unwrap();
    assert_eq!(json["spec"]["renewTime"], "2026-12-01T12:00:04.500000Z");
    assert_eq!(json["spec"]["holderIdentity"], "us-east/plumb-agent-0");
}

#[test]
fn a_released_lease_has_no_holder_and_keeps_its_term() {
    let released = LeaseRecord {
        holder: None,
        acquire_time: None,
        renew_time: None,
        lease_duration_seconds: 1,
        transitions: 7,
    };
    let json = serde_json::to_value(lease_object(&released, None)).unwrap();
    assert_eq!(json["spec"].get("holderIdentity"), None);
    assert_eq!(json["spec"]["leaseTransitions"], 7);
}

#[test]
fn a_request_gets_a_quarter_of_the_renew_deadline() {
    assert_eq!(
        request_timeout(&LeaseTiming::default()),
        Duration::from_millis(2500)
    );
    let short = LeaseTiming {
        duration: Duration::from_secs(4),
        renew_deadline: Duration::from_secs(3),
        retry_period: Duration::from_millis(500),
    };
    assert_eq!(request_timeout(&short), Duration::from_millis(750));
}

#[test]
fn leadership_ends_at_its_deadline() {
    let t = Timestamp::from_unix_secs(100);
    let l = Leadership {
        term: Some(1),
        until: Some(t),
    };
    assert!(l.leading(Timestamp::from_unix_secs(99)));
    assert!(!l.leading(t));
    assert!(!Leadership::default().leading(t));
}

/// The own-member rule (lock/own.rs), round by round: `(own read, write committed with the own
/// Lease)` at a time.
mod own_member {
    use super::super::own::{OwnMember, Skip};
    use std::time::Duration;
    use utc_time::Timestamp;

    const LEASE: Duration = Duration::from_secs(4);

    fn at(s: i64) -> Timestamp {
        Timestamp::from_unix_secs(s)
    }

    #[test]
    fn a_round_without_the_own_lease_writes_nothing() {
        let mut rule = OwnMember::default();
        assert_eq!(rule.may_write(true, at(0)), Ok(()));
        assert!(rule.committed(true));
        assert_eq!(rule.may_write(false, at(1)), Err(Skip::OwnUnreadable));
        assert!(rule.missing());
    }

    #[test]
    fn a_commit_that_missed_the_own_lease_is_no_hold() {
        let mut rule = OwnMember::default();
        assert_eq!(rule.may_write(true, at(0)), Ok(()));
        assert!(!rule.committed(false));
        assert!(rule.missing());
        // The next round reaches it again: a hold.
        assert_eq!(rule.may_write(true, at(1)), Ok(()));
        assert!(rule.committed(true));
        assert!(!rule.missing());
    }

    #[test]
    fn a_lapse_while_the_own_member_fails_benches_for_one_lease_duration() {
        let mut rule = OwnMember::default();
        assert!(rule.committed(true));
        assert_eq!(rule.may_write(false, at(1)), Err(Skip::OwnUnreadable));
        assert_eq!(rule.may_write(false, at(2)), Err(Skip::OwnUnreadable));
        assert!(rule.lapsed(at(3), LEASE));
        // Its server answers again at once: still no write until the bench ends, so the
        // others' clocks (one lease duration after the last renewal) run out first.
        assert_eq!(
            rule.may_write(true, at(4)),
            Err(Skip::Benched { until: at(7) })
        );
        assert_eq!(
            rule.may_write(false, at(6)),
            Err(Skip::Benched { until: at(7) })
        );
        assert_eq!(rule.may_write(true, at(7)), Ok(()));
    }

    #[test]
    fn a_lapse_for_other_reasons_does_not_bench() {
        let mut rule = OwnMember::default();
        assert!(rule.committed(true));
        // The other members stop answering; the own one answers: the hold lapses without a
        // bench, and the agent campaigns at its next round.
        assert_eq!(rule.may_write(true, at(1)), Ok(()));
        assert!(!rule.lapsed(at(3), LEASE));
        assert_eq!(rule.may_write(true, at(3)), Ok(()));
    }

    #[test]
    fn a_flapping_own_member_keeps_the_hold_while_one_round_per_deadline_reaches_it() {
        let mut rule = OwnMember::default();
        for s in 0..10 {
            let answers = s % 2 == 0;
            match rule.may_write(answers, at(s)) {
                Ok(()) => assert!(rule.committed(true)),
                Err(skip) => assert_eq!(skip, Skip::OwnUnreadable),
            }
        }
        // Never lapsed (the lock extends the hold at every committed round): no bench.
        assert_eq!(rule.may_write(true, at(10)), Ok(()));
    }

    #[test]
    fn a_candidate_whose_own_member_is_down_does_not_campaign() {
        let mut rule = OwnMember::default();
        assert_eq!(rule.may_write(false, at(0)), Err(Skip::OwnUnreadable));
        assert_eq!(rule.may_write(true, at(1)), Ok(()));
    }
}
