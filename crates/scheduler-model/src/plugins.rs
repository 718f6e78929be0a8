//! The kube-scheduler v1.35.4 default plugin list, in one place
//! (docs/design-simulation.md#defaulting), and the extension points each plugin implements.

/// The modelled upstream version, reported as `schedulerVersion`.
pub const SCHEDULER_VERSION: &str = "v1.35.4";

/// The OME scheduler's out-of-tree plugin.
pub const OME_GANG_PACK: &str = "OMEGangPack";

/// Extension points of a profile's `plugins`, in the upstream field order.
pub const EXTENSION_POINTS: &[&str] = &[
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
];

/// The v1.35.4 default `multiPoint` list, in order, with score weights (0 = not a scorer).
/// Reconstructed from upstream `pkg/scheduler/apis/config/v1/default_plugins.go`; correct it
/// here if the v1.35.4 tag differs.
pub const DEFAULT_PLUGINS: &[(&str, i32)] = &[
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 0),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
];

/// Gate values the model implements (v1.35 defaults; not configurable). Hashed into the
/// configuration ID.
pub const FEATURE_GATES: &[(&str, bool)] = &[
    ("DynamicResourceAllocation", true),
    ("GenericWorkload", false),
    ("InPlacePodVerticalScaling", true),
    ("MatchLabelKeysInPodAffinity", true),
    ("MatchLabelKeysInPodTopologySpread", true),
    ("NodeDeclaredFeatures", false),
    ("NodeInclusionPolicyInPodTopologySpread", true),
    ("PodLevelResources", true),
    ("SchedulerAsyncPreemption", true),
    ("SchedulerPopFromBackoffQ", true),
    ("SchedulerQueueingHints", true),
    ("SidecarContainers", true),
];

/// The points OMEGangPack must be enabled at (docs/design-simulation.md#configuration-acceptance
/// rule 5).
pub const GANG_PACK_REQUIRED_POINTS: &[&str] = &[
    "preFilter",
    "filter",
    "postFilter",
    "reserve",
    "permit",
    "postBind",
];

/// Extension points a known plugin implements; `None` for an unknown plugin.
pub fn points_of(plugin: &str) -> Option<&'static [&'static str]> {
    Some(match plugin {
        "SchedulingGates" => &["preEnqueue"],
        "PrioritySort" => &["queueSort"],
        "NodeUnschedulable" | "NodeName" | "NodeVolumeLimits" => &["filter"],
        "TaintToleration" => &["filter", "preScore", "score"],
        "NodeAffinity" | "NodeResourcesFit" | "PodTopologySpread" | "InterPodAffinity" => {
            &["preFilter", "filter", "preScore", "score"]
        }
        "NodePorts" | "VolumeRestrictions" | "VolumeZone" => &["preFilter", "filter"],
        "VolumeBinding" => &[
            "preFilter",
            "filter",
            "reserve",
            "preBind",
            "preScore",
            "score",
        ],
        "DynamicResources" => &[
            "preEnqueue",
            "preFilter",
            "filter",
            "postFilter",
            "reserve",
            "preBind",
        ],
        "DefaultPreemption" => &["postFilter"],
        "NodeResourcesBalancedAllocation" => &["preScore", "score"],
        "ImageLocality" => &["score"],
        "DefaultBinder" => &["bind"],
        OME_GANG_PACK => &[
            "preEnqueue",
            "preFilter",
            "filter",
            "postFilter",
            "preScore",
            "score",
            "reserve",
            "permit",
            "postBind",
        ],
        _ => return None,
    })
}

/// Default score weight of a plugin (0 → 1 when it scores).
pub fn default_weight(plugin: &str) -> i32 {
    DEFAULT_PLUGINS
        .iter()
        .find(|(n, _)| *n == plugin)
        .map_or(1, |(_, w)| (*w).max(1))
}
