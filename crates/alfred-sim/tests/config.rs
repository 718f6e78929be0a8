//! Scenario 19 (library part): configuration acceptance
//! (docs/design-simulation.md#configuration-acceptance), defaulting
//! (docs/design-simulation.md#defaulting) and the identity
//! (docs/design-simulation.md#profile-identity), with a checked-in golden profile.

use alfred_sim::config::{FitStrategy, OME_SCHEDULER_YAML};
use alfred_sim::{BuildInfo, ConfigError, Profile, load_config, printed_profile};

const HEAD: &str = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

fn build() -> BuildInfo {
    BuildInfo {
        package: "alfred-simulator".into(),
        version: "0.1.0".into(),
        source_revision: "0000000000000000000000000000000000000000".into(),
        executable_sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
            .into(),
    }
}

fn refused(yaml: &str) -> String {
    match load_config(yaml) {
        Ok(p) => panic!("accepted: {p:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn default_profile_has_the_v1_35_defaults() {
    let p = Profile::default_scheduler();
    assert_eq!(p.scheduler_name, "default-scheduler");
    assert!(!p.gang_scheduling);
    assert!(p.preemption);
    assert_eq!(
        p.filters,
        [
            "NodeUnschedulable",
            "NodeName",
            "TaintToleration",
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "VolumeRestrictions",
            "NodeVolumeLimits",
            "VolumeBinding",
            "VolumeZone",
            "PodTopologySpread",
            "InterPodAffinity",
            "DynamicResources"
        ]
    );
    let scores: Vec<(&str, i64)> = p.scores.iter().map(|(n, w)| (n.as_str(), *w)).collect();
    assert_eq!(
        scores,
        [
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1)
        ]
    );
    assert_eq!(p.fit.strategy, FitStrategy::LeastAllocated);
    assert_eq!(p.hard_pod_affinity_weight, 1);
    assert!(p.spread.system_defaulting);
}

#[test]
fn lone_unnamed_profile_defaults_to_default_scheduler() {
    let p = load_config(&format!("{HEAD}profiles:\n  - {{}}\n")).expect("config");
    assert_eq!(p.scheduler_name, "default-scheduler");
}

#[test]
fn ome_chart_profile() {
    let p = Profile::ome_scheduler_chart_default();
    assert_eq!(p.scheduler_name, "ome-scheduler");
    assert!(p.gang_scheduling);
    assert!(!p.preemption);
    assert!(p.has_filter("OMEGangPack"));
    assert_eq!(p.score_weight("NodeResourcesFit"), Some(10));
    assert_eq!(p.score_weight("OMEGangPack"), Some(10));
    assert_eq!(p.score_weight("PodTopologySpread"), None);
    assert!(
        p.has_filter("PodTopologySpread"),
        "DoNotSchedule filtering remains"
    );
    assert_eq!(p.fit.strategy, FitStrategy::MostAllocated);
    let g = p.gang.expect("gang args");
    assert!(g.standalone_domain_packing);
    assert_eq!(g.pod_group_topology_key_annotation, "ome.io/topology-key");
}

#[test]
fn golden_print_profile() {
    let build = build();
    let default = printed_profile(&Profile::default_scheduler(), "kube-v135", &build).to_line();
    let ome =
        printed_profile(&Profile::ome_scheduler_chart_default(), "ome-v135", &build).to_line();
    let got = format!("{default}\n{ome}\n");
    let want = include_str!("golden/print-profile.txt");
    assert_eq!(
        got, want,
        "regenerate tests/golden/print-profile.txt if the recipe changed on purpose"
    );
}

#[test]
fn identity_is_stable_and_changes_with_config_or_build() {
    let b = build();
    let a1 = printed_profile(&Profile::default_scheduler(), "kube-v135", &b);
    let a2 = printed_profile(&Profile::default_scheduler(), "kube-v135", &b);
    assert_eq!(a1, a2);
    let edited = load_config(&format!(
        "{HEAD}parallelism: 17\nprofiles:\n  - schedulerName: default-scheduler\n"
    ))
    .expect("config");
    assert_ne!(
        printed_profile(&edited, "kube-v135", &b)
            .identity
            .configuration_id,
        a1.identity.configuration_id
    );
    let mut other_build = b.clone();
    other_build.executable_sha256.replace_range(0..1, "f");
    assert_ne!(
        printed_profile(&Profile::default_scheduler(), "kube-v135", &other_build)
            .identity
            .configuration_id,
        a1.identity.configuration_id
    );
    // An explicit default is the same configuration as an implicit one.
    let explicit = load_config(&format!(
        "{HEAD}parallelism: 16\nprofiles:\n  - schedulerName: default-scheduler\n"
    ))
    .expect("config");
    assert_eq!(
        printed_profile(&explicit, "kube-v135", &b)
            .identity
            .configuration_id,
        a1.identity.configuration_id
    );
}

#[test]
fn json_configuration_is_accepted() {
    let p = load_config(r#"{"apiVersion":"kubescheduler.config.k8s.io/v1","kind":"KubeSchedulerConfiguration","profiles":[{"schedulerName":"x"}]}"#).expect("json");
    assert_eq!(p.scheduler_name, "x");
}

#[test]
fn refusals_name_the_field_and_value() {
    let cases: &[(&str, &[&str])] = &[
        ("profiles:\n  - schedulerName: a\nbogus: 1\n", &["bogus"]),
        (
            "profiles:\n  - schedulerName: a\n    plugins:\n      filter:\n        enabeld: []\n",
            &["enabeld"],
        ),
        (
            "extenders:\n  - urlPrefix: http://x\nprofiles:\n  - schedulerName: a\n",
            &["extenders"],
        ),
        (
            "clientConnection:\n  kubeconfig: /k\nprofiles:\n  - schedulerName: a\n",
            &["clientConnection.kubeconfig", "/k"],
        ),
        (
            "profiles:\n  - schedulerName: a\n  - schedulerName: b\n",
            &["profiles", "2 profiles"],
        ),
        ("profiles: []\n", &["profiles", "0 profiles"]),
        (
            "profiles:\n  - schedulerName: a\n    plugins:\n      multiPoint:\n        enabled:\n          - name: GangScheduling\n",
            &["GangScheduling"],
        ),
        (
            "profiles:\n  - schedulerName: a\n    plugins:\n      filter:\n        enabled:\n          - name: MyPlugin\n",
            &["MyPlugin"],
        ),
        (
            "profiles:\n  - schedulerName: a\n    plugins:\n      score:\n        enabled:\n          - name: ImageLocality\n            weight: 101\n",
            &["weight", "101"],
        ),
        (
            "profiles:\n  - schedulerName: a\n    pluginConfig:\n      - name: NodeResourcesFit\n        args:\n          scoringStrategy:\n            type: RequestedToCapacityRatio\n",
            &["scoringStrategy.type", "RequestedToCapacityRatio"],
        ),
        (
            "profiles:\n  - schedulerName: a\n    pluginConfig:\n      - name: NodeResourcesFit\n        args:\n          scoringStrategy:\n            resources:\n              - name: cpu\n                weight: 200\n",
            &["resources[0].weight", "200"],
        ),
        (
            "profiles:\n  - schedulerName: a\n    pluginConfig:\n      - name: NodeResourcesFit\n        args:\n          typo: 1\n",
            &["NodeResourcesFit", "typo"],
        ),
        (
            "profiles:\n  - schedulerName: a\n    pluginConfig:\n      - name: InterPodAffinity\n        args:\n          hardPodAffinityWeight: 101\n",
            &["hardPodAffinityWeight", "101"],
        ),
        (
            "profiles:\n  - schedulerName: a\n    pluginConfig:\n      - name: PodTopologySpread\n        args:\n          defaultingType: System\n          defaultConstraints:\n            - maxSkew: 1\n              topologyKey: zone\n              whenUnsatisfiable: DoNotSchedule\n",
            &["defaultConstraints"],
        ),
        (
            "percentageOfNodesToScore: 101\nprofiles:\n  - schedulerName: a\n",
            &["percentageOfNodesToScore", "101"],
        ),
        (
            "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\nprofiles:\n  - schedulerName: a\n",
            &["podMaxBackoffSeconds", "2"],
        ),
        (
            "profiles:\n  - schedulerName: a\n    plugins:\n      multiPoint:\n        enabled:\n          - name: OMEGangPack\n",
            &["gcIntervalSeconds"],
        ),
        (
            "profiles:\n  - schedulerName: a\n    plugins:\n      multiPoint:\n        enabled:\n          - name: OMEGangPack\n    pluginConfig:\n      - name: OMEGangPack\n        args:\n          gcIntervalSeconds: 0\n",
            &["gcIntervalSeconds", "0"],
        ),
        (
            "profiles:\n  - schedulerName: a\n    plugins:\n      multiPoint:\n        enabled:\n          - name: OMEGangPack\n    pluginConfig:\n      - name: OMEGangPack\n        args:\n          gcIntervalSeconds: 60\n          topologyKey: \"bad key!\"\n",
            &["topologyKey", "bad key!"],
        ),
        (
            "profiles:\n  - schedulerName: a\n    pluginConfig:\n      - name: OMEGangPack\n        args:\n          gcIntervalSecs: 60\n",
            &["gcIntervalSecs"],
        ),
    ];
    for (body, needles) in cases {
        let msg = refused(&format!("{HEAD}{body}"));
        for n in *needles {
            assert!(msg.contains(n), "error {msg:?} should name {n:?}");
        }
    }
}

#[test]
fn partial_gang_pack_hooks_are_refused() {
    let yaml = OME_SCHEDULER_YAML.replace(
        "        disabled:\n          - name: DefaultPreemption\n",
        "        disabled:\n          - name: DefaultPreemption\n      permit:\n        disabled:\n          - name: OMEGangPack\n",
    );
    let msg = refused(&yaml);
    assert!(
        msg.contains("profiles[0].plugins.permit") && msg.contains("OMEGangPack"),
        "{msg}"
    );
}

#[test]
fn wrong_api_version_kind_duplicates_and_syntax() {
    let e = load_config("apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\nprofiles: [{}]\n").unwrap_err();
    assert!(e.to_string().contains("v1beta3"), "{e}");
    let e =
        load_config("apiVersion: kubescheduler.config.k8s.io/v1\nkind: Other\nprofiles: [{}]\n")
            .unwrap_err();
    assert!(e.to_string().contains("Other"), "{e}");
    let e = load_config(&format!(
        "{HEAD}parallelism: 1\nparallelism: 2\nprofiles: [{{}}]\n"
    ))
    .unwrap_err();
    assert!(matches!(e, ConfigError::Syntax(_)), "{e}");
    let e = load_config("profiles: [").unwrap_err();
    assert!(matches!(e, ConfigError::Syntax(_)), "{e}");
    let e = load_config("- a\n- b\n").unwrap_err();
    assert!(e.to_string().contains("must be a mapping"), "{e}");
}

#[test]
fn plugin_merge_rules() {
    // An enabled default keeps its place and takes the new weight; `*` disables all defaults.
    let p = load_config(&format!(
        "{HEAD}profiles:\n  - schedulerName: a\n    plugins:\n      score:\n        enabled:\n          - name: ImageLocality\n            weight: 7\n        disabled:\n          - name: '*'\n"
    ))
    .expect("config");
    assert_eq!(p.scores, vec![("ImageLocality".to_string(), 7)]);
    let p = load_config(&format!(
        "{HEAD}profiles:\n  - schedulerName: a\n    plugins:\n      multiPoint:\n        disabled:\n          - name: DefaultPreemption\n          - name: TaintToleration\n"
    ))
    .expect("config");
    assert!(!p.preemption);
    assert!(!p.has_filter("TaintToleration"));
    assert_eq!(p.score_weight("TaintToleration"), None);
}

/// A YAML syntax error is one line without a source snippet (found by the `sim_config` fuzz
/// target: a 9-line message with the document quoted).
#[test]
fn a_syntax_error_is_one_line() {
    let e = refused(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n  - schedulerName: \"unclosed\n    plugins: {}\n",
    );
    assert!(
        e.starts_with("scheduler configuration is not valid YAML: "),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
    assert!(e.chars().count() <= 300, "{e}");
}
