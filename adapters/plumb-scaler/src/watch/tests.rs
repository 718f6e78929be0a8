//! The watchers' event handling: relists replace the cache when complete, unreadable copies
//! serve 0, deletions remove, and the Lease's fields become fencing's record.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::api::ObjectMeta;
use serde_json::json;

use super::*;

fn object(name: &str, mode: &str) -> Value {
    json!({
        "apiVersion": "plumb-k8s.github.io/v1alpha1",
        "kind": "AdaptivePolicy",
        "metadata": {"name": name, "namespace": "serving", "resourceVersion": "7", "uid": "u"},
        "spec": {"mode": mode, "workload": {"name": name}, "clusters": [{"name": "east", "maxReplicas": 4}]},
        "status": {"intent": {"replicas": 3, "hub": "east/agent-0"}}
    })
}

#[test]
fn a_relist_replaces_the_copies_only_once_complete() {
    let cache = FloorCache::new();
    let mut feed = PolicyFeed::new(cache.clone(), "east");
    feed.apply(Event::Apply(object("old", "auto")));
    feed.apply(Event::Init);
    feed.apply(Event::InitApply(object("a", "auto")));
    assert!(!cache.snapshot().policies_synced);
    assert!(
        cache
            .snapshot()
            .policies
            .contains_key(&PolicyKey::new("serving", "old"))
    );
    feed.apply(Event::InitApply(object("b", "shadow")));
    feed.apply(Event::InitDone);
    let snapshot = cache.snapshot();
    assert!(snapshot.policies_synced);
    let keys: Vec<String> = snapshot.policies.keys().map(ToString::to_string).collect();
    assert_eq!(keys, ["serving/a", "serving/b"]);
    let Some(CachedPolicy::Readable(a)) = snapshot.policies.get(&PolicyKey::new("serving", "a"))
    else {
        panic!("a is readable");
    };
    assert_eq!(a.max_replicas, Some(4));
    assert_eq!(a.intent.as_ref().map(|i| i.replicas), Some(3));
    feed.apply(Event::Delete(object("a", "auto")));
    assert_eq!(cache.snapshot().policies.len(), 1);
}

#[test]
fn an_unreadable_copy_is_kept_with_its_reason_and_a_nameless_one_is_skipped() {
    let cache = FloorCache::new();
    let mut feed = PolicyFeed::new(cache.clone(), "");
    feed.apply(Event::Apply(object("bad", "fast")));
    feed.apply(Event::Apply(json!({"metadata": {"name": "no-namespace"}})));
    let snapshot = cache.snapshot();
    assert_eq!(snapshot.policies.len(), 1);
    let Some(CachedPolicy::Unreadable(why)) =
        snapshot.policies.get(&PolicyKey::new("serving", "bad"))
    else {
        panic!("bad is unreadable");
    };
    assert!(
        why.starts_with("spec.mode: unknown variant `fast`"),
        "{why}"
    );
}

#[test]
fn the_hub_lease_becomes_fencings_record() {
    let renewed = "2026-12-07T12:00:00.5Z";
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(HUB_LEASE.into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("east/agent-0".into()),
            renew_time: Some(MicroTime(renewed.parse().unwrap())),
            lease_duration_seconds: Some(15),
            lease_transitions: Some(2),
            ..LeaseSpec::default()
        }),
    };
    let record = lease_record(&lease);
    assert_eq!(record.holder.as_deref(), Some("east/agent-0"));
    assert_eq!(
        record.renew_time,
        Some(Timestamp::parse_rfc3339(renewed).unwrap())
    );
    assert_eq!(record.lease_duration_seconds, 15);
    assert_eq!(record.transitions, 2);
    assert_eq!(record.acquire_time, None);

    let cache = FloorCache::new();
    let mut relist = None;
    apply_lease_event(&cache, &mut relist, Event::Init);
    apply_lease_event(&cache, &mut relist, Event::InitDone);
    assert!(cache.snapshot().lease_synced);
    assert_eq!(cache.snapshot().lease, None);
    apply_lease_event(&cache, &mut relist, Event::Apply(lease.clone()));
    assert_eq!(cache.snapshot().lease, Some(record));
    apply_lease_event(&cache, &mut relist, Event::Delete(lease));
    assert_eq!(cache.snapshot().lease, None);
}
