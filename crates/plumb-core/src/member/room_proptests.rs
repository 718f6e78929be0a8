//! The compact conversion of the placement check answers as the full one does: on random
//! clusters (taints, node selectors and affinity, pod affinity and anti-affinity on bound and
//! placed pods, topology spread, host ports, limits-only and init-container requests, pending,
//! terminal, duplicate and misplaced pods) the static room, the promised replicas placed and
//! left over, and the whole report are the same with the compact conversion as with the
//! full one (the scheduler model's `PreparedCluster`, used alone before); and reading the
//! bound pods once (`MemberObservation::read_bound_pods`) changes no report.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::member::observation::{ObservedPod, Promised};
use crate::member::tests::{GPU, now};
use crate::member::{report, report_with};
use plumb_model::AdaptivePolicySpec;
use scheduler_model::Interner;

/// One node: GPUs, CPUs, zone (3: no zone label), pool (0 `gpu`, 1 `other`, 2 none), taint
/// (0 none, 1 GPU NoSchedule, 2 PreferNoSchedule, 3 NoExecute), unschedulable, tier label.
type NodeCase = (u32, u32, usize, usize, usize, bool, bool);

/// One bound pod: node (past the last: a node not observed), app, milli-CPU, GPUs, phase
/// (0–3 running, 4 succeeded, 5 pending), name index ([`pod_name`]), host port,
/// terms (see [`terms`]), shape (0 requests, 1 limits only, 2 an init container, 3 no
/// resources, 4 another namespace).
type PodCase = (usize, usize, u32, u32, usize, usize, bool, usize, usize);

/// A pod template: app, milli-CPU, GPUs, tolerates the GPU taint, node selector (0 none,
/// 1 pool `gpu`, 2 tier), required zone affinity, terms (see [`terms`]), host port.
type TemplateCase = (usize, u32, u32, bool, usize, bool, usize, bool);

const APPS: [&str; 4] = ["w", "a", "b", "c"];

fn node_json(i: usize, c: &NodeCase) -> Value {
    let (gpus, cpus, zone, pool, taint, unschedulable, tier) = *c;
    let name = format!("n{i}");
    let mut labels = json!({"kubernetes.io/hostname": name});
    if zone < 3 {
        labels["topology.kubernetes.io/zone"] = json!(format!("z{zone}"));
    }
    match pool {
        0 => labels["karpenter.sh/nodepool"] = json!("gpu"),
        1 => labels["karpenter.sh/nodepool"] = json!("other"),
        _ => {}
    }
    if tier {
        labels["tier"] = json!("fast");
    }
    let taints = match taint {
        1 => json!([{"key": GPU, "value": "present", "effect": "NoSchedule"}]),
        2 => json!([{"key": "spot", "effect": "PreferNoSchedule"}]),
        3 => json!([{"key": "maint", "effect": "NoExecute"}]),
        _ => json!([]),
    };
    json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints, "unschedulable": unschedulable},
        "status": {"allocatable": {"cpu": cpus.to_string(),
                                   "memory": format!("{}Mi", 512 * (1 + (i + zone) % 4)), "pods": "6",
                                   GPU: gpus.to_string()}}
    })
}

/// Pod (anti-)affinity and spread: 0–2 none, 3 required anti-affinity to its own app by
/// hostname, 4 required anti-affinity to app `a` by zone, 5 required affinity to app `a` by
/// zone, 6 preferred affinity to app `b` by zone, 7 preferred anti-affinity to app `w` by
/// hostname, 8 hard spread by zone, 9 soft spread by hostname.
fn terms(kind: usize, app: &str) -> Value {
    let term = |sel: &str, key: &str| json!({"labelSelector": {"matchLabels": {"app": sel}}, "topologyKey": key});
    let host = "kubernetes.io/hostname";
    let zone = "topology.kubernetes.io/zone";
    match kind {
        3 => json!({"affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term(app, host)]}}}),
        4 => json!({"affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term("a", zone)]}}}),
        5 => json!({"affinity": {"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term("a", zone)]}}}),
        6 => json!({"affinity": {"podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 50, "podAffinityTerm": term("b", zone)}]}}}),
        7 => json!({"affinity": {"podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 30, "podAffinityTerm": term("w", host)}]}}}),
        8 => json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": zone,
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": app}}}]}),
        9 => json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": host,
            "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": app}}}]}),
        _ => json!({}),
    }
}

fn merge(into: &mut Value, from: Value) {
    if let (Some(a), Value::Object(b)) = (into.as_object_mut(), from) {
        a.extend(b);
    }
}

fn requests(milli: u32, gpus: u32) -> Value {
    json!({"cpu": format!("{milli}m"), "memory": format!("{}Mi", 32 + milli / 8),
           GPU: gpus.to_string()})
}

fn bound_pod(i: usize, c: &PodCase, nodes: usize) -> ObservedPod {
    let (node, app, milli, gpus, phase, name, port, kind, shape) = *c;
    let app = APPS[app];
    let mut container = json!({"name": "c", "image": "img:1"});
    match shape {
        1 => container["resources"] = json!({"limits": requests(milli, gpus)}),
        3 => {}
        _ => container["resources"] = json!({"requests": requests(milli, gpus)}),
    }
    if port {
        container["ports"] = json!([{"containerPort": 80, "hostPort": 8080}]);
    }
    let mut spec = json!({"containers": [container],
        "tolerations": [{"key": GPU, "operator": "Exists"}, {"key": "maint", "operator": "Exists"}]});
    if shape == 2 {
        spec["initContainers"] = json!([{"name": "init", "resources": {"requests": {"cpu": "3"}}}]);
    }
    merge(&mut spec, terms(kind, app));
    if phase != 5 {
        spec["nodeName"] = json!(if node < nodes {
            format!("n{node}")
        } else {
            "ghost".to_owned()
        });
    }
    let status = match phase {
        4 => "Succeeded",
        5 => "Pending",
        _ => "Running",
    };
    let namespace = if shape == 4 { "other" } else { "ml" };
    ObservedPod::from_value(&json!({
        "metadata": {"name": pod_name(app, i, name), "namespace": namespace,
                     "labels": {"app": app}},
        "spec": spec, "status": {"phase": status}
    }))
    .expect("pod")
}

/// Name index 0 or 1 names the pod like an earlier pod of its app (a duplicate), any other a
/// pod of its own.
fn pod_name(app: &str, i: usize, name: usize) -> String {
    if name < 2 {
        format!("{app}-{}", name.min(i))
    } else {
        format!("{app}-{i}")
    }
}

fn template(c: &TemplateCase, app: &str) -> Value {
    let (_, milli, gpus, tolerates, selector, zone_affinity, kind, port) = *c;
    let mut container = json!({"name": "c", "image": "img:1",
                               "resources": {"requests": requests(milli, gpus)}});
    if port {
        container["ports"] = json!([{"containerPort": 80, "hostPort": 8080}]);
    }
    let mut spec = json!({"containers": [container]});
    if tolerates {
        spec["tolerations"] = json!([{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]);
    }
    match selector {
        1 => spec["nodeSelector"] = json!({"karpenter.sh/nodepool": "gpu"}),
        2 => spec["nodeSelector"] = json!({"tier": "fast"}),
        _ => {}
    }
    merge(&mut spec, terms(kind, app));
    if zone_affinity {
        let node_affinity = json!({"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["z0", "z1"]}]}]}});
        match spec.get_mut("affinity") {
            Some(a) => a["nodeAffinity"] = node_affinity,
            None => spec["affinity"] = json!({"nodeAffinity": node_affinity}),
        }
    }
    json!({"metadata": {"labels": {"app": app}}, "spec": spec})
}

#[derive(Debug, Clone)]
struct Case {
    nodes: Vec<NodeCase>,
    pods: Vec<PodCase>,
    workload: TemplateCase,
    promised: Vec<(TemplateCase, u32)>,
    max_replicas: u32,
}

fn template_case() -> impl Strategy<Value = TemplateCase> {
    (
        0usize..4,
        0u32..3000,
        0u32..3,
        any::<bool>(),
        0usize..3,
        prop::bool::weighted(0.2),
        0usize..10,
        prop::bool::weighted(0.15),
    )
}

fn case() -> impl Strategy<Value = Case> {
    let node = (
        0u32..=4,
        1u32..=8,
        0usize..4,
        0usize..3,
        0usize..4,
        prop::bool::weighted(0.1),
        any::<bool>(),
    );
    let pod = (
        0usize..12,
        0usize..4,
        0u32..3000,
        0u32..3,
        0usize..6,
        0usize..40,
        prop::bool::weighted(0.1),
        0usize..10,
        0usize..5,
    );
    (
        prop::collection::vec(node, 1..10),
        prop::collection::vec(pod, 0..30),
        template_case(),
        prop::collection::vec((template_case(), 0u32..4), 0..3),
        0u32..40,
    )
        .prop_map(|(nodes, pods, workload, promised, max_replicas)| Case {
            nodes,
            pods,
            workload,
            promised,
            max_replicas,
        })
}

fn observation(c: &Case) -> MemberObservation {
    let nodes = c
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| serde_json::from_value(node_json(i, n)).expect("node"))
        .collect();
    let pods = c
        .pods
        .iter()
        .enumerate()
        .map(|(i, p)| bound_pod(i, p, c.nodes.len()))
        .collect();
    let promised = c
        .promised
        .iter()
        .enumerate()
        .map(|(i, (t, replicas))| Promised {
            policy: format!("ml/p{i}"),
            namespace: "ml".to_owned(),
            template: serde_json::from_value(template(t, APPS[t.0])).expect("template"),
            replicas: *replicas,
        })
        .collect();
    MemberObservation {
        namespace: "ml".to_owned(),
        deployments: vec![
            serde_json::from_value(json!({
                "metadata": {"name": "w", "namespace": "ml"},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "w"}},
                         "template": template(&c.workload, "w")},
                "status": {"readyReplicas": 2}
            }))
            .expect("deployment"),
        ],
        pods,
        nodes,
        promised,
        ..MemberObservation::default()
    }
}

fn policy(max_replicas: u32) -> AdaptivePolicySpec {
    serde_json::from_value(json!({
        "workload": {"name": "w"},
        "clusters": [{"name": "c1", "nodePools": ["gpu"], "maxReplicas": max_replicas}],
        "capacity": {"replicaCapacity": 4}
    }))
    .expect("spec")
}

/// The static room of the case's workload on `occupancy`.
fn room_on(
    occupancy: &mut Occupancy,
    obs: &MemberObservation,
    c: &Case,
) -> Result<StaticRoom, String> {
    let d = &obs.deployments[0];
    let template = template_pod(&d.spec.template, "ml", "w-replica");
    let pending: Vec<&Pod> = obs
        .pods
        .iter()
        .map(|p| &p.pod)
        .filter(|p| {
            p.spec.node_name.is_empty()
                && p.metadata.labels.get("app").map(String::as_str) == Some("w")
        })
        .collect();
    let registered = registered_nodes(&obs.nodes, &["gpu".to_owned()], None);
    static_room(
        occupancy,
        obs,
        &template,
        &pending,
        &registered.nodes,
        c.max_replicas,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_compact_conversion_answers_as_the_full_one(c in case()) {
        let obs = observation(&c);
        let mut compact = Occupancy::new();
        let fast = room_on(&mut compact, &obs, &c);
        let full = room_on(&mut Occupancy::full_only(), &obs, &c);
        prop_assert_eq!(&fast, &full);
        // Asked again on the kept conversions, after the first report took its pods back.
        prop_assert_eq!(&room_on(&mut compact, &obs, &c), &full);
        let spec = policy(c.max_replicas);
        let alone = report(&obs, &spec, "c1", &Default::default(), None, now());
        let in_full = report_with(&mut Occupancy::full_only(), &obs, &spec, "c1",
                                  &Default::default(), None, now());
        prop_assert_eq!(alone, in_full);
    }

    #[test]
    fn reading_the_bound_pods_once_changes_no_report(c in case()) {
        // Bound pods read once (as the agent's watches keep them) against the same pods
        // whole: the same report on either conversion, in any order of the read pods.
        let obs = observation(&c);
        let mut read = obs.clone();
        read.read_bound_pods(&mut Interner::new());
        prop_assert_eq!(read.pods.len() + read.bound_pods.len(), obs.pods.len());
        let spec = policy(c.max_replicas);
        let whole = report(&obs, &spec, "c1", &Default::default(), None, now());
        prop_assert_eq!(&report(&read, &spec, "c1", &Default::default(), None, now()), &whole);
        let in_full = report_with(&mut Occupancy::full_only(), &read, &spec, "c1",
                                  &Default::default(), None, now());
        prop_assert_eq!(&in_full, &whole);
        read.bound_pods.reverse();
        prop_assert_eq!(&report(&read, &spec, "c1", &Default::default(), None, now()), &whole);
        prop_assert_eq!(room_on(&mut Occupancy::new(), &read, &c),
                        room_on(&mut Occupancy::full_only(), &obs, &c));
    }

    #[test]
    fn pods_without_inter_pod_terms_are_answered_on_the_compact_conversion(
        mut c in case(),
    ) {
        // Neither the workload, its pending pods nor a promised replica reads other pods'
        // labels, so the compact conversion answers (bound pods may have terms of their own).
        c.workload.6 = 0;
        for (t, _) in &mut c.promised {
            t.6 = 0;
        }
        for p in &mut c.pods {
            if p.4 == 5 {
                p.7 = 0;
            }
        }
        let obs = observation(&c);
        let mut occupancy = Occupancy::new();
        let fast = room_on(&mut occupancy, &obs, &c);
        prop_assert!(!occupancy.converted_in_full());
        prop_assert_eq!(fast, room_on(&mut Occupancy::full_only(), &obs, &c));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn each_placement_lands_on_the_same_node_on_every_conversion(
        c in case(),
        read_once in any::<bool>(),
    ) {
        // Node by node, not only the counts: the promised replicas and then copies of the
        // workload are placed one after another on the full conversion of the pods whole (the
        // reference), on the full and the compact conversion of the same pods with the bound
        // ones read once (`read_once`) or whole.
        let whole = observation(&c);
        let mut obs = whole.clone();
        if read_once {
            obs.read_bound_pods(&mut Interner::new());
        }
        let profile = Profile::default_scheduler();
        let scheduler = &profile.scheduler_name;
        let full_of = |o: &MemberObservation| {
            let pods = occupancy(o);
            let view = ClusterView {
                nodes: &o.nodes,
                pods: &pods,
                namespaces: &o.namespaces,
                selector_objects: &[],
                pod_groups: &[],
            };
            RoomCluster::full(view, &o.bound_pods, scheduler)
        };
        let compact = RoomCluster::from_occupancy(
            &obs.nodes, &obs.namespaces, obs.pods.iter().map(|p| &p.pod), &obs.bound_pods,
            scheduler);
        let (Ok(mut reference), Ok(mut full), Ok(mut compact)) =
            (full_of(&whole), full_of(&obs), compact) else {
            return Err(TestCaseError::fail("conversion failed"));
        };
        // Duplicates are left to the full conversion; the rest is compact. The compact one is
        // compared until a pod it does not answer for was placed on the others.
        let mut in_step = compact.is_compact();
        for p in &obs.promised {
            let copies: Vec<Pod> = (0..p.replicas)
                .map(|i| template_pod(&p.template, "ml", &format!("{}-{i}", p.policy.replace('/', "-"))))
                .collect();
            let Some(first) = copies.first() else { continue };
            let one_by_one: Result<Vec<Option<String>>, _> =
                copies.iter().map(|c| reference.place(&profile, c)).collect();
            in_step &= compact.answers(&profile, first);
            if in_step {
                prop_assert_eq!(compact.place_copies(&profile, first, p.replicas), one_by_one.clone());
            }
            let on_full: Result<Vec<Option<String>>, _> =
                copies.iter().map(|c| full.place(&profile, c)).collect();
            prop_assert_eq!(on_full, one_by_one);
        }
        let mut to_place: Vec<Pod> = Vec::new();
        let workload = &obs.deployments[0].spec.template;
        to_place.extend((0..4).map(|i| template_pod(workload, "ml", &format!("w-{i}"))));
        let all: BTreeSet<String> = obs.nodes.iter().map(|n| n.metadata.name.clone()).collect();
        for pod in &to_place {
            let expected = (
                reference.place(&profile, pod),
                reference.count_fitting(&profile, pod, &all, 50),
            );
            in_step &= compact.answers(&profile, pod);
            if in_step {
                let on_compact = (
                    compact.place(&profile, pod),
                    compact.count_fitting(&profile, pod, &all, 50),
                );
                prop_assert_eq!(&on_compact, &expected);
            }
            let on_full = (full.place(&profile, pod), full.count_fitting(&profile, pod, &all, 50));
            prop_assert_eq!(&on_full, &expected);
        }
    }
}
