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
