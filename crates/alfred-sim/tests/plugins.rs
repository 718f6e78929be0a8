//! Each filter and score plugin in isolation (a profile with only that score enabled).

mod common;

use alfred_sim::{Decision, Profile};
use common::*;
use serde_json::json;

fn only_score(name: &str) -> Profile {
    profile_yaml(&format!(
        "    plugins:\n      score:\n        disabled:\n          - name: '*'\n        enabled:\n          - name: {name}\n"
    ))
}

#[test]
fn balanced_allocation_prefers_even_use() {
    let c = cluster(
        vec![
            node("a", "8", "64Gi", 0, json!({})),
            node("b", "8", "8Gi", 0, json!({})),
        ],
        vec![],
    );
    let rep = [pod("default", "r", "4", "4Gi", 0)];
    assert_eq!(
        nodes_of(&run(
            &only_score("NodeResourcesBalancedAllocation"),
            &c,
            &rep,
            &[]
        )),
        ["b"]
    );
}

#[test]
fn least_and_most_allocated() {
    let c = cluster(
        vec![
            node("a", "8", "8Gi", 0, json!({})),
            node("b", "16", "16Gi", 0, json!({})),
        ],
        vec![],
    );
    let rep = [pod("default", "r", "4", "4Gi", 0)];
    assert_eq!(
        nodes_of(&run(&only_score("NodeResourcesFit"), &c, &rep, &[])),
        ["b"]
    );
    let most = profile_yaml(
        "    plugins:\n      score:\n        disabled:\n          - name: '*'\n        enabled:\n          - name: NodeResourcesFit\n    pluginConfig:\n      - name: NodeResourcesFit\n        args:\n          scoringStrategy:\n            type: MostAllocated\n",
    );
    assert_eq!(nodes_of(&run(&most, &c, &rep, &[])), ["a"]);
}

#[test]
fn image_locality_prefers_nodes_with_the_image() {
    let with_image = |n: alfred_sim::objects::Node, img: &str| {
        let mut v = serde_json::to_value(&n).expect("ser");
        v["status"]["images"] = json!([{"names": [img], "sizeBytes": 500_000_000}]);
        serde_json::from_value(v).expect("node")
    };
    let c = cluster(
        vec![
            node("a", "8", "8Gi", 0, json!({})),
            with_image(node("b", "8", "8Gi", 0, json!({})), "engine:latest"),
        ],
        vec![],
    );
    let mut rep = pod("default", "r", "1", "1Gi", 0);
    rep.spec.containers[0].image = "engine".into();
    assert_eq!(
        nodes_of(&run(&only_score("ImageLocality"), &c, &[rep], &[])),
        ["b"]
    );
}

#[test]
fn preferred_node_affinity_weights() {
    let c = cluster(
        vec![
            node("a", "8", "8Gi", 0, json!({"tier": "gold"})),
            node("b", "8", "8Gi", 0, json!({"tier": "silver"})),
        ],
        vec![],
    );
    let rep = with(
        pod("default", "r", "1", "1Gi", 0),
        json!({"spec": {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "preference": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]}},
            {"weight": 50, "preference": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["silver"]}]}}
        ]}}}}),
    );
    assert_eq!(
        nodes_of(&run(&only_score("NodeAffinity"), &c, &[rep], &[])),
        ["b"]
    );
}

#[test]
fn prefer_no_schedule_taints() {
    let c = cluster(
        vec![
            with_node(
                node("a", "8", "8Gi", 0, json!({})),
                json!({"taints": [{"key": "k", "value": "v", "effect": "PreferNoSchedule"}]}),
            ),
            node("b", "8", "8Gi", 0, json!({})),
        ],
        vec![],
    );
    let plain = pod("default", "r", "1", "1Gi", 0);
    assert_eq!(
        nodes_of(&run(&only_score("TaintToleration"), &c, &[plain], &[])),
        ["b"]
    );
    let tolerant = with(
        pod("default", "r", "1", "1Gi", 0),
        json!({"spec": {"tolerations": [{"key": "k", "operator": "Exists"}]}}),
    );
    let o = run(&only_score("TaintToleration"), &c, &[tolerant], &[]);
    assert_eq!(nodes_of(&o), ["a"], "tolerated: a tie, smallest name");
    assert_eq!(o.ties.len(), 1);
}

#[test]
fn inter_pod_affinity_scores() {
    let c = cluster(
        vec![
            node("a", "8", "8Gi", 0, json!({})),
            node("b", "8", "8Gi", 0, json!({})),
        ],
        vec![bound(
            labels(
                pod("default", "cache", "1", "1Gi", 0),
                json!({"app": "cache"}),
            ),
            "b",
        )],
    );
    let term = json!({"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "kubernetes.io/hostname"}});
    let near = with(
        pod("default", "r", "1", "1Gi", 0),
        json!({"spec": {"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [term.clone()]}}}}),
    );
    assert_eq!(
        nodes_of(&run(&only_score("InterPodAffinity"), &c, &[near], &[])),
        ["b"]
    );
    let far = with(
        pod("default", "r", "1", "1Gi", 0),
        json!({"spec": {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [term]}}}}),
    );
    assert_eq!(
        nodes_of(&run(&only_score("InterPodAffinity"), &c, &[far], &[])),
        ["a"]
    );

    // Existing pods' required affinity attracts matching pods (hardPodAffinityWeight).
    let wants_web = with(
        bound(pod("default", "sidecar", "1", "1Gi", 0), "b"),
        json!({"spec": {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}}}),
    );
    let c = cluster(c.nodes.clone(), vec![wants_web]);
    let web = labels(pod("default", "r", "1", "1Gi", 0), json!({"app": "web"}));
    assert_eq!(
        nodes_of(&run(
            &only_score("InterPodAffinity"),
            &c,
            std::slice::from_ref(&web),
            &[]
        )),
        ["b"]
    );
    let zero = profile_yaml(
        "    plugins:\n      score:\n        disabled:\n          - name: '*'\n        enabled:\n          - name: InterPodAffinity\n    pluginConfig:\n      - name: InterPodAffinity\n        args:\n          hardPodAffinityWeight: 0\n",
    );
    assert_eq!(
        nodes_of(&run(&zero, &c, &[web], &[])),
        ["a"],
        "no pull: tie → a"
    );
}

#[test]
fn schedule_anyway_spread_scores() {
    let web = |n: &str| labels(pod("default", n, "100m", "100Mi", 0), json!({"app": "web"}));
    let c = cluster(
        vec![
            node("a", "8", "8Gi", 0, json!({})),
            node("b", "8", "8Gi", 0, json!({})),
        ],
        vec![bound(web("w1"), "a"), bound(web("w2"), "a")],
    );
    let rep = with(
        web("r"),
        json!({"spec": {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "web"}}}]}}),
    );
    assert_eq!(
        nodes_of(&run(&only_score("PodTopologySpread"), &c, &[rep], &[])),
        ["b"]
    );
}

#[test]
fn pod_count_and_container_request_rules() {
    let mut small = node("a", "4", "8Gi", 0, json!({}));
    small.status.allocatable.insert("pods".into(), "1".into());
    let c = cluster(
        vec![small],
        vec![bound(pod("default", "x", "100m", "1Mi", 0), "a")],
    );
    let nothing: alfred_sim::objects::Pod = serde_json::from_value(json!({
        "metadata": {"namespace": "default", "name": "r"}, "spec": {"containers": [{"name": "c"}]}})).expect("pod");
    assert_eq!(
        run(&default_profile(), &c, &[nothing], &[]).decision,
        Decision::Infeasible,
        "pod count"
    );

    let c = cluster(vec![node("a", "4", "8Gi", 0, json!({}))], vec![]);
    // A regular init container's request counts when it is the largest.
    let init = with(
        pod("default", "r", "2", "1Gi", 0),
        json!({"spec": {"initContainers": [{"name": "i", "resources": {"requests": {"cpu": "6"}}}]}}),
    );
    assert_eq!(
        run(&default_profile(), &c, &[init], &[]).decision,
        Decision::Infeasible
    );
    // Sidecars add up with the containers: 1 + 3 = 4 fits exactly; plus overhead does not.
    let sidecar = with(
        pod("default", "r", "3", "1Gi", 0),
        json!({"spec": {"initContainers": [{"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}]}}),
    );
    assert_eq!(
        run(&default_profile(), &c, std::slice::from_ref(&sidecar), &[]).decision,
        Decision::Feasible
    );
    let overhead = with(sidecar, json!({"spec": {"overhead": {"cpu": "100m"}}}));
    assert_eq!(
        run(&default_profile(), &c, &[overhead], &[]).decision,
        Decision::Infeasible
    );
    // A limit without a request is the request.
    let limit_only = with(
        pod("default", "r", "1", "1Gi", 0),
        json!({"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "5"}}}]}}),
    );
    assert_eq!(
        run(&default_profile(), &c, &[limit_only], &[]).decision,
        Decision::Infeasible
    );
}

#[test]
fn namespace_selector_in_anti_affinity() {
    let mut c = cluster(
        vec![
            node("a", "8", "8Gi", 0, json!({})),
            node("b", "8", "8Gi", 0, json!({})),
        ],
        vec![bound(
            labels(pod("prod", "db", "1", "1Gi", 0), json!({"app": "db"})),
            "a",
        )],
    );
    c.namespaces[1]
        .metadata
        .labels
        .insert("env".into(), "prod".into());
    let anti = |ns_sel: serde_json::Value| {
        with(
            pod("default", "r", "1", "1Gi", 0),
            json!({"spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "namespaceSelector": ns_sel, "topologyKey": "kubernetes.io/hostname"}
            ]}}}}),
        )
    };
    // Matching the prod namespace by label: a is forbidden.
    assert_eq!(
        nodes_of(&run(
            &default_profile(),
            &c,
            &[anti(json!({"matchLabels": {"env": "prod"}}))],
            &[]
        )),
        ["b"]
    );
    // Another namespace label: the db pod does not count, a (smallest, emptier by name) wins.
    assert_eq!(
        nodes_of(&run(
            &only_score("TaintToleration"),
            &c,
            &[anti(json!({"matchLabels": {"env": "dev"}}))],
            &[]
        )),
        ["a"]
    );
}

#[test]
fn in_place_resize_in_flight_counts_the_larger_amount() {
    // Spec says 1 cpu, but the kubelet still holds 3 allocated: only 1 cpu is left on a 4-cpu node.
    let resizing = with(
        bound(pod("default", "x", "1", "1Gi", 0), "a"),
        json!({"status": {"containerStatuses": [{"name": "c", "allocatedResources": {"cpu": "3"}}]}}),
    );
    let c = cluster(vec![node("a", "4", "8Gi", 0, json!({}))], vec![resizing]);
    let rep = [pod("default", "r", "2", "1Gi", 0)];
    assert_eq!(
        run(&default_profile(), &c, &rep, &[]).decision,
        Decision::Infeasible
    );
    let c = cluster(
        vec![node("a", "4", "8Gi", 0, json!({}))],
        vec![bound(pod("default", "x", "1", "1Gi", 0), "a")],
    );
    assert_eq!(
        run(&default_profile(), &c, &rep, &[]).decision,
        Decision::Feasible
    );
}
