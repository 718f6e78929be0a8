//! The floor source: copies read from policies, each fencing outcome, and the cache's
//! change notifications.

use super::*;

fn at(text: &str) -> Timestamp {
    Timestamp::parse_rfc3339(text).unwrap()
}

fn policy(yaml: &str) -> AdaptivePolicy {
    AdaptivePolicy::from_yaml(yaml).unwrap()
}

const POLICY: &str = "
metadata: {name: llama, namespace: serving}
spec:
  mode: auto
  workload: {name: llama}
  clusters:
    - {name: east, maxReplicas: 6}
    - {name: west, maxReplicas: -3}
status:
  intent: {replicas: 8, expires: '2026-12-07T12:05:00Z', hub: east/agent-0}
";

fn lease(holder: &str, renewed: &str) -> LeaseRecord {
    LeaseRecord {
        holder: Some(holder.to_owned()),
        acquire_time: Some(at(renewed)),
        renew_time: Some(at(renewed)),
        lease_duration_seconds: 15,
        transitions: 0,
    }
}

fn snapshot(copy: CachedPolicy, lease: Option<LeaseRecord>) -> Snapshot {
    Snapshot {
        policies: [(PolicyKey::new("serving", "llama"), copy)].into(),
        lease,
        policies_synced: true,
        lease_synced: true,
    }
}

fn key() -> PolicyKey {
    PolicyKey::new("serving", "llama")
}

#[test]
fn a_copy_is_capped_at_this_members_max_replicas() {
    let p = policy(POLICY);
    assert_eq!(PolicyCopy::from_policy(&p, "east").max_replicas, Some(6));
    assert_eq!(PolicyCopy::from_policy(&p, "").max_replicas, None);
    assert_eq!(PolicyCopy::from_policy(&p, "west").max_replicas, Some(0));
    assert_eq!(PolicyCopy::from_policy(&p, "north").max_replicas, Some(0));
    let copy = PolicyCopy::from_policy(&p, "east");
    assert_eq!(copy.mode, Mode::Auto);
    assert_eq!(copy.intent.as_ref().map(|i| i.replicas), Some(8));
    let shadow = policy("metadata: {name: a, namespace: b}\nspec: {workload: {name: a}}");
    assert_eq!(PolicyCopy::from_policy(&shadow, "east").mode, Mode::Shadow);
    assert_eq!(PolicyCopy::from_policy(&shadow, "east").intent, None);
}

#[test]
fn each_fencing_outcome_is_served_as_its_floor() {
    let now = at("2026-12-07T12:00:05Z");
    let readable = |yaml: &str, cluster: &str| {
        CachedPolicy::Readable(PolicyCopy::from_policy(&policy(yaml), cluster))
    };
    let holder = Some(lease("east/agent-0", "2026-12-07T12:00:00Z"));
    let cases = [
        ("normal", readable(POLICY, ""), holder.clone(), 8, None),
        ("capped", readable(POLICY, "east"), holder.clone(), 6, None),
        (
            "shadow",
            readable(&POLICY.replace("mode: auto", "mode: shadow"), ""),
            holder.clone(),
            0,
            Some("mode is shadow"),
        ),
        (
            "expired",
            readable(&POLICY.replace("12:05:00Z", "12:00:05Z"), ""),
            holder.clone(),
            0,
            Some("status.intent.expires has passed"),
        ),
        (
            "fenced",
            readable(POLICY, ""),
            Some(lease("west/agent-1", "2026-12-07T12:00:00Z")),
            0,
            Some(
                "status.intent.hub \"east/agent-0\" does not hold the plumb-hub Lease (held by \"west/agent-1\")",
            ),
        ),
        (
            "lease expired",
            readable(POLICY, ""),
            Some(lease("east/agent-0", "2026-12-07T11:59:50Z")),
            0,
            Some("the plumb-hub Lease has expired"),
        ),
        (
            "no lease",
            readable(POLICY, ""),
            None,
            0,
            Some("the plumb-hub Lease has no holder"),
        ),
        (
            "unreadable",
            CachedPolicy::Unreadable("spec.mode: unknown variant `fast`".into()),
            holder.clone(),
            0,
            Some("the policy copy cannot be read: spec.mode: unknown variant `fast`"),
        ),
    ];
    for (name, copy, lease, floor, why) in cases {
        let served = snapshot(copy, lease).served(&key(), now).unwrap();
        assert_eq!(served.floor, floor, "{name}");
        assert_eq!(served.why_zero.as_deref(), why, "{name}");
    }
}

#[test]
fn nothing_is_answered_before_both_watchers_listed_and_an_absent_policy_is_unknown() {
    let now = at("2026-12-07T12:00:05Z");
    let mut s = Snapshot::default();
    assert_eq!(s.served(&key(), now), Err(Unanswerable::NotSynced));
    assert_eq!(s.active(&key(), now), None);
    s.policies_synced = true;
    assert_eq!(s.served(&key(), now), Err(Unanswerable::NotSynced));
    s.lease_synced = true;
    assert_eq!(
        s.served(&key(), now),
        Err(Unanswerable::UnknownPolicy(key()))
    );
    assert_eq!(s.active(&key(), now), Some(false));
}

#[test]
fn the_next_change_is_the_earliest_expiry_still_ahead() {
    let copy = CachedPolicy::Readable(PolicyCopy::from_policy(&policy(POLICY), ""));
    let s = snapshot(copy, Some(lease("east/agent-0", "2026-12-07T12:00:00Z")));
    let lease_expires = at("2026-12-07T12:00:15Z");
    assert_eq!(
        s.next_change(&key(), at("2026-12-07T12:00:01Z")),
        Some(lease_expires)
    );
    assert_eq!(
        s.next_change(&key(), lease_expires),
        Some(at("2026-12-07T12:05:00Z"))
    );
    assert_eq!(s.next_change(&key(), at("2026-12-07T12:06:00Z")), None);
    assert_eq!(
        s.next_change(&PolicyKey::new("x", "y"), at("2026-12-07T12:00:01Z")),
        Some(lease_expires)
    );
}

#[test]
fn the_cache_notifies_only_on_a_real_change() {
    let cache = FloorCache::new();
    let mut rx = cache.subscribe();
    rx.borrow_and_update();
    cache.set_lease(None);
    assert!(rx.has_changed().unwrap());
    rx.borrow_and_update();
    cache.set_lease(None);
    assert!(
        !rx.has_changed().unwrap(),
        "the same Lease again is no change"
    );
    let copy = CachedPolicy::Readable(PolicyCopy::from_policy(&policy(POLICY), ""));
    cache.put_policy(key(), copy.clone());
    assert!(rx.has_changed().unwrap());
    rx.borrow_and_update();
    cache.put_policy(key(), copy);
    assert!(!rx.has_changed().unwrap());
    cache.remove_policy(&key());
    assert!(rx.has_changed().unwrap());
    assert!(cache.snapshot().policies.is_empty());
    assert!(cache.snapshot().lease_synced);
    assert!(!cache.snapshot().synced());
}

mod invariants {
    use proptest::prelude::*;

    use super::*;

    const T0: i64 = 1_800_000_000;

    fn arbitrary_case() -> impl Strategy<Value = (Snapshot, Timestamp, Option<u32>)> {
        (
            (any::<bool>(), 0u32..50, prop::option::of(-100i64..400)),
            (prop::option::of(0usize..3), prop::option::of(0usize..3)),
            (
                prop::option::of(-100i64..100),
                0u32..60,
                prop::option::of(0u32..40),
            ),
            0i64..300,
        )
            .prop_map(
                |((auto, replicas, expires), (hub, holder), (renewed, duration, cap), now)| {
                    let names = ["east/agent-0", "west/agent-1", ""];
                    let intent = Intent {
                        replicas,
                        expires: expires.map(|s| Timestamp::from_unix_secs(T0 + s)),
                        hub: hub.map(|i| names[i].to_owned()),
                        ..Intent::default()
                    };
                    let copy = PolicyCopy {
                        mode: if auto { Mode::Auto } else { Mode::Shadow },
                        intent: Some(intent),
                        max_replicas: cap,
                    };
                    let lease = holder.map(|i| LeaseRecord {
                        holder: Some(names[i].to_owned()),
                        acquire_time: None,
                        renew_time: renewed.map(|s| Timestamp::from_unix_secs(T0 + s)),
                        lease_duration_seconds: duration,
                        transitions: 0,
                    });
                    (
                        snapshot(CachedPolicy::Readable(copy), lease),
                        Timestamp::from_unix_secs(T0 + now),
                        cap,
                    )
                },
            )
    }

    proptest! {
        /// A floor above 0 is served only when every fencing check passes, never above the
        /// cap; a 0 always says why; and the next time-based change is always ahead.
        #[test]
        fn a_served_floor_passes_every_check((s, now, cap) in arbitrary_case()) {
            let served = s.served(&key(), now).unwrap();
            prop_assert_eq!(served.why_zero.is_some(), served.floor == 0);
            prop_assert!(served.floor <= cap.unwrap_or(u32::MAX));
            if served.floor > 0 {
                let Some(CachedPolicy::Readable(copy)) = s.policies.get(&key()) else {
                    unreachable!("the case holds one readable copy");
                };
                let intent = copy.intent.as_ref().unwrap();
                let lease = s.lease.as_ref().unwrap();
                prop_assert_eq!(copy.mode, Mode::Auto);
                prop_assert!(now < intent.expires.unwrap());
                prop_assert!(!intent.hub.as_deref().unwrap().is_empty());
                prop_assert_eq!(intent.hub.as_deref(), lease.holder.as_deref());
                prop_assert!(now < lease.expires().unwrap());
            }
            if let Some(next) = s.next_change(&key(), now) {
                prop_assert!(next > now);
            }
            prop_assert_eq!(s.active(&key(), now), Some(served.floor > 0));
        }
    }
}
