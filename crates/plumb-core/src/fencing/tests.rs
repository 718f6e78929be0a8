//! Tests of fencing: each check alone voids the floor, and the cap applies.

use proptest::prelude::*;
use utc_time::Timestamp;

use super::*;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_unix_secs(1_790_000_000 + secs)
}

fn intent(replicas: u32, hub: &str, expires: i64) -> Intent {
    Intent {
        replicas,
        expires: Some(t(expires)),
        hub: Some(hub.to_string()),
        ..Intent::default()
    }
}

fn lease(holder: &str, renewed: i64) -> LeaseRecord {
    LeaseRecord {
        holder: Some(holder.to_string()),
        acquire_time: Some(t(0)),
        renew_time: Some(t(renewed)),
        lease_duration_seconds: 15,
        transitions: 0,
    }
}

#[test]
fn serves_the_floor_when_every_check_passes() {
    let got = fence(
        Some(&intent(6, "a/hub-0", 300)),
        Some(&lease("a/hub-0", 0)),
        Mode::Auto,
        None,
        t(10),
    );
    assert_eq!(got, Fence::Served(6));
}

#[test]
fn caps_at_the_members_current_max_replicas() {
    let i = intent(6, "a/hub-0", 300);
    let l = lease("a/hub-0", 0);
    assert_eq!(
        served_floor(Some(&i), Some(&l), Mode::Auto, Some(4), t(10)),
        4
    );
    assert_eq!(
        served_floor(Some(&i), Some(&l), Mode::Auto, Some(0), t(10)),
        0
    );
    assert_eq!(
        served_floor(Some(&i), Some(&l), Mode::Auto, Some(9), t(10)),
        6
    );
}

#[test]
fn shadow_mode_serves_nothing() {
    let got = fence(
        Some(&intent(6, "a/hub-0", 300)),
        Some(&lease("a/hub-0", 0)),
        Mode::Shadow,
        None,
        t(10),
    );
    assert_eq!(got, Fence::Fenced(FenceReason::Shadow));
}

#[test]
fn no_intent_serves_nothing() {
    assert_eq!(
        fence(None, Some(&lease("a/hub-0", 0)), Mode::Auto, None, t(10)),
        Fence::Fenced(FenceReason::NoIntent)
    );
}

#[test]
fn an_expired_intent_serves_nothing_from_its_expiry_on() {
    let i = intent(6, "a/hub-0", 10);
    let l = lease("a/hub-0", 5);
    assert_eq!(served_floor(Some(&i), Some(&l), Mode::Auto, None, t(9)), 6);
    assert_eq!(
        fence(Some(&i), Some(&l), Mode::Auto, None, t(10)),
        Fence::Fenced(FenceReason::IntentExpired)
    );
    let no_expiry = Intent { expires: None, ..i };
    assert_eq!(
        fence(Some(&no_expiry), Some(&l), Mode::Auto, None, t(9)),
        Fence::Fenced(FenceReason::IntentExpired)
    );
}

#[test]
fn an_intent_from_another_hub_serves_nothing() {
    let got = fence(
        Some(&intent(6, "a/old-hub", 300)),
        Some(&lease("b/hub-1", 0)),
        Mode::Auto,
        None,
        t(10),
    );
    assert_eq!(
        got,
        Fence::Fenced(FenceReason::NotTheHolder {
            intent_hub: "a/old-hub".into(),
            holder: "b/hub-1".into()
        })
    );
    assert_eq!(
        FenceReason::NotTheHolder {
            intent_hub: "a/old-hub".into(),
            holder: "b/hub-1".into()
        }
        .to_string(),
        r#"status.intent.hub "a/old-hub" does not hold the plumb-hub Lease (held by "b/hub-1")"#
    );
}

#[test]
fn an_intent_naming_no_hub_serves_nothing() {
    let i = Intent {
        hub: Some(String::new()),
        ..intent(6, "", 300)
    };
    assert_eq!(
        fence(
            Some(&i),
            Some(&lease("a/hub-0", 0)),
            Mode::Auto,
            None,
            t(10)
        ),
        Fence::Fenced(FenceReason::NoHub)
    );
}

#[test]
fn no_lease_or_no_holder_serves_nothing() {
    let i = intent(6, "a/hub-0", 300);
    assert_eq!(
        fence(Some(&i), None, Mode::Auto, None, t(10)),
        Fence::Fenced(FenceReason::NoLeaseHolder)
    );
    let released = LeaseRecord {
        holder: None,
        ..lease("a/hub-0", 0)
    };
    assert_eq!(
        fence(Some(&i), Some(&released), Mode::Auto, None, t(10)),
        Fence::Fenced(FenceReason::NoLeaseHolder)
    );
}

#[test]
fn an_expired_lease_serves_nothing_by_the_scalers_clock() {
    let i = intent(6, "a/hub-0", 300);
    let l = lease("a/hub-0", 0);
    assert_eq!(served_floor(Some(&i), Some(&l), Mode::Auto, None, t(14)), 6);
    assert_eq!(
        fence(Some(&i), Some(&l), Mode::Auto, None, t(15)),
        Fence::Fenced(FenceReason::LeaseExpired)
    );
    let never_renewed = LeaseRecord {
        renew_time: None,
        ..l
    };
    assert_eq!(
        fence(Some(&i), Some(&never_renewed), Mode::Auto, None, t(1)),
        Fence::Fenced(FenceReason::LeaseExpired)
    );
}

proptest! {
    /// The served floor is 0 whenever any fencing check fails, and never above the cap.
    #[test]
    fn served_floor_is_zero_whenever_fencing_fails(
        replicas in 0u32..50,
        auto in any::<bool>(),
        has_intent in any::<bool>(),
        expires in proptest::option::of(-30i64..30),
        intent_hub in proptest::option::of(prop_oneof![Just("a/p"), Just("b/p"), Just("")]),
        has_lease in any::<bool>(),
        holder in proptest::option::of(prop_oneof![Just("a/p"), Just("b/p"), Just("")]),
        renewed in proptest::option::of(-30i64..30),
        duration in 0u32..30,
        cap in proptest::option::of(0u32..50),
    ) {
        let now = t(0);
        let i = Intent { replicas, expires: expires.map(t), hub: intent_hub.map(String::from), ..Intent::default() };
        let l = LeaseRecord {
            holder: holder.map(String::from),
            acquire_time: None,
            renew_time: renewed.map(t),
            lease_duration_seconds: duration,
            transitions: 0,
        };
        let mode = if auto { Mode::Auto } else { Mode::Shadow };
        let served = served_floor(has_intent.then_some(&i), has_lease.then_some(&l), mode, cap, now);
        let holds = auto
            && has_intent
            && expires.is_some_and(|e| e > 0)
            && intent_hub.is_some_and(|h| !h.is_empty())
            && has_lease
            && holder == intent_hub
            && renewed.is_some_and(|r| r + i64::from(duration) > 0);
        if holds {
            prop_assert_eq!(served, cap.map_or(replicas, |c| replicas.min(c)));
        } else {
            prop_assert_eq!(served, 0);
        }
    }
}
