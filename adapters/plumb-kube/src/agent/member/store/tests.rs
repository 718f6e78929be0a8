//! Watch events applied to a kind: relists replace at once, undecodable objects are left out
//! with their error, deletes remove.

use serde_json::json;

use super::*;

fn node(name: &str, cpu: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
           "status": {"allocatable": {"cpu": cpu}}})
}

#[test]
fn a_relist_replaces_the_kind_when_it_completes() {
    let mut kind = Kind::<Node>::default();
    assert!(!kind.listed());
    kind.apply(Event::Init).unwrap();
    kind.apply(Event::InitApply(node("a", "4"))).unwrap();
    assert!(kind.objects().is_empty(), "nothing shows before InitDone");
    kind.apply(Event::InitDone).unwrap();
    assert!(kind.listed());
    kind.apply(Event::Apply(node("b", "8"))).unwrap();
    assert_eq!(kind.objects().keys().collect::<Vec<_>>(), ["a", "b"]);
    kind.apply(Event::Init).unwrap();
    kind.apply(Event::InitApply(node("c", "2"))).unwrap();
    kind.apply(Event::InitDone).unwrap();
    assert_eq!(kind.objects().keys().collect::<Vec<_>>(), ["c"]);
    kind.apply(Event::Delete(node("c", "2"))).unwrap();
    assert!(kind.objects().is_empty());
}

#[test]
fn an_undecodable_object_is_left_out_with_its_field() {
    let mut kind = Kind::<Deployment>::default();
    let good = json!({"metadata": {"name": "d", "namespace": "ml"}, "spec": {"replicas": 2}});
    kind.apply(Event::Apply(good)).unwrap();
    let bad = json!({"metadata": {"name": "d", "namespace": "ml"}, "spec": {"replicas": "two"}});
    let err = kind.apply(Event::Apply(bad)).unwrap_err();
    assert!(err.starts_with("ml/d: spec.replicas: "), "{err}");
    assert!(
        kind.objects().is_empty(),
        "the older version is not kept as if current"
    );
}

#[test]
fn an_absent_kind_counts_as_listed_and_empty() {
    let mut kind = Kind::<NodePool>::default();
    kind.mark_absent();
    assert!(kind.listed());
    assert!(kind.objects().is_empty());
}

#[test]
fn a_policy_copy_keeps_its_status_and_why_it_cannot_be_read() {
    let copy = PolicyCopy::decode(
        json!({
        "apiVersion": "plumb-k8s.github.io/v1alpha1", "kind": "AdaptivePolicy",
        "metadata": {"name": "p", "namespace": "ml", "generation": 3},
        "spec": {"mode": "manual"},
        "status": {"intent": {"replicas": 2}}}),
        &mut (),
    )
    .unwrap();
    assert_eq!(copy.key, "ml/p");
    assert_eq!(copy.generation, Some(3));
    assert_eq!(copy.status["intent"]["replicas"], 2);
    assert!(copy.parsed.unwrap_err().starts_with("spec.mode: "));
}

#[test]
fn pods_are_read_with_their_conditions() {
    let mut kind = Kind::<ObservedPod>::default();
    kind.apply(Event::Apply(json!({
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": {"containers": []},
        "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}})))
        .unwrap();
    assert!(kind.objects()["ml/p"].unschedulable);
}

#[test]
fn lent_objects_come_back_with_the_events_that_waited() {
    let mut kind = Kind::<Node>::default();
    kind.apply(Event::Apply(node("a", "4"))).unwrap();
    kind.apply(Event::Apply(node("b", "8"))).unwrap();
    let lent = kind.lend();
    assert_eq!(lent.objects.len(), 2);
    assert!(kind.objects().is_empty());
    kind.apply(Event::Delete(node("a", "4"))).unwrap();
    kind.apply(Event::Apply(node("c", "2"))).unwrap();
    assert!(kind.give_back(lent).is_empty());
    assert_eq!(kind.objects().keys().collect::<Vec<_>>(), ["b", "c"]);
    kind.apply(Event::Apply(node("d", "2"))).unwrap();
    assert_eq!(kind.objects().len(), 3, "events apply at once again");
}

#[test]
fn the_stores_lend_an_observation_and_take_it_back() {
    let stores = Stores::default();
    lock(&stores.nodes)
        .apply(Event::Apply(node("a", "4")))
        .unwrap();
    let observation = stores.lend();
    assert_eq!(observation.nodes.len(), 1);
    lock(&stores.nodes)
        .apply(Event::Apply(node("b", "4")))
        .unwrap();
    stores.give_back(observation);
    assert_eq!(
        lock(&stores.nodes).objects().keys().collect::<Vec<_>>(),
        ["a", "b"]
    );
}

fn pod(name: &str, node: &str, app: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "ml", "labels": {"app": app}},
           "spec": {"nodeName": node,
                    "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]},
           "status": {"phase": "Running"}})
}

#[test]
fn bound_pods_are_kept_read_once_and_the_others_whole() {
    let mut kind = Kind::<StoredPod>::default();
    kind.apply(Event::Apply(pod("a", "n1", "x"))).unwrap();
    kind.apply(Event::Apply(pod("b", "", "x"))).unwrap();
    let objects = kind.objects();
    assert!(matches!(&objects["ml/a"], StoredPod::Bound(b) if &*b.node_name == "n1"));
    assert!(matches!(&objects["ml/b"], StoredPod::Whole(p) if p.pod.spec.node_name.is_empty()));
    // Bound later: read once from then on.
    kind.apply(Event::Apply(pod("b", "n2", "x"))).unwrap();
    assert!(matches!(&kind.objects()["ml/b"], StoredPod::Bound(_)));
}

#[test]
fn the_stores_lend_pods_in_both_forms_and_take_them_back() {
    let stores = Stores::default();
    for (name, node, app) in [("a", "n1", "x"), ("b", "", "x"), ("c", "n2", "y")] {
        lock(&stores.pods)
            .apply(Event::Apply(pod(name, node, app)))
            .unwrap();
    }
    let copy = stores.observation();
    let observation = stores.lend();
    assert_eq!(observation.pods.len(), 1);
    assert_eq!(observation.bound_pods.len(), 2);
    assert_eq!(observation, copy);
    drop(copy);
    // The pods are a copy: a pod deleted during the pass is gone at once; its node and
    // labels are forgotten at the next pass, once no copy holds them.
    lock(&stores.pods)
        .apply(Event::Delete(pod("c", "n2", "y")))
        .unwrap();
    assert_eq!(
        lock(&stores.pods).objects().keys().collect::<Vec<_>>(),
        ["ml/a", "ml/b"]
    );
    stores.give_back(observation);
    let next = stores.lend();
    assert_eq!(next.bound_pods.len(), 1);
    // Kept: ml, n1, the resource and scheduler names, and {app: x}.
    assert_eq!(lock(&stores.pods).context.len(), (4, 1));
    stores.give_back(next);
}
