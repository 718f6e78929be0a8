//! KubeSchedulerConfiguration v1: strict decoding, the acceptance rules of
//! docs/design-simulation.md#configuration-acceptance, defaulting
//! (docs/design-simulation.md#defaulting) and the normalised document hashed into the configuration
//! ID.
//!
//! YAML is read as YAML 1.2 (serde-saphyr), docs/design-simulation.md#configuration-acceptance;
//! JSON is YAML 1.2 too.

use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

use crate::objects::{NodeAffinity, NodeSelectorTerm, TopologySpreadConstraint};
use crate::plugins::{
    DEFAULT_PLUGINS, EXTENSION_POINTS, GANG_PACK_REQUIRED_POINTS, OME_GANG_PACK, default_weight,
    points_of,
};

/// Why a scheduler configuration was refused. Every variant names the field and value.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConfigError {
    /// The document is not YAML 1.2 (the parser's message).
    #[error("scheduler configuration is not valid YAML: {}", crate::clip::clip(.0, 240))]
    Syntax(String),
    #[error(
        "scheduler configuration: {}: {}",
        crate::clip::clip(.context, 100),
        crate::clip::clip(.message, 160)
    )]
    /// A part of the document has the wrong shape for its schema (an unknown key, a value of
    /// the wrong type).
    Decode {
        /// The part that failed: the configuration, or a plugin's args.
        context: String,
        /// The decoder's message.
        message: String,
    },
    #[error(
        "scheduler configuration: {}: {} is not allowed: {}",
        crate::clip::clip(.field, 100),
        crate::clip::clip(&format!("{:?}", .value), 80),
        crate::clip::clip(.why, 70)
    )]
    /// A well-formed value the acceptance rules refuse
    /// (docs/design-simulation.md#configuration-acceptance).
    Invalid {
        /// The field's path, such as `profiles[0].schedulerName`.
        field: String,
        /// The value refused.
        value: String,
        /// The rule it breaks.
        why: String,
    },
}

fn invalid(field: impl Into<String>, value: impl ToString, why: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        field: field.into(),
        value: value.to_string(),
        why: why.into(),
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawConfig {
    api_version: Option<String>,
    kind: Option<String>,
    parallelism: Option<i64>,
    leader_election: Option<LeaderElection>,
    client_connection: Option<ClientConnection>,
    enable_profiling: Option<bool>,
    enable_contention_profiling: Option<bool>,
    percentage_of_nodes_to_score: Option<i64>,
    pod_initial_backoff_seconds: Option<i64>,
    pod_max_backoff_seconds: Option<i64>,
    profiles: Option<Vec<RawProfile>>,
    extenders: Option<Vec<Value>>,
    delay_cache_until_active: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LeaderElection {
    leader_elect: Option<bool>,
    lease_duration: Option<String>,
    renew_deadline: Option<String>,
    retry_period: Option<String>,
    resource_lock: Option<String>,
    resource_name: Option<String>,
    resource_namespace: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClientConnection {
    kubeconfig: Option<String>,
    accept_content_types: Option<String>,
    content_type: Option<String>,
    qps: Option<serde_json::Number>,
    burst: Option<i64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawProfile {
    scheduler_name: Option<String>,
    percentage_of_nodes_to_score: Option<i64>,
    plugins: Option<BTreeMap<String, PluginSet>>,
    #[serde(default)]
    plugin_config: Vec<PluginConfig>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PluginSet {
    #[serde(default)]
    enabled: Vec<PluginRef>,
    #[serde(default)]
    disabled: Vec<PluginRef>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PluginRef {
    name: String,
    weight: Option<i64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PluginConfig {
    name: String,
    args: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ResourceSpec {
    name: String,
    weight: Option<i64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ScoringStrategy {
    #[serde(rename = "type")]
    kind: Option<String>,
    resources: Option<Vec<ResourceSpec>>,
    requested_to_capacity_ratio: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NodeResourcesFitArgs {
    api_version: Option<String>,
    kind: Option<String>,
    ignored_resources: Option<Vec<String>>,
    ignored_resource_groups: Option<Vec<String>>,
    scoring_strategy: Option<ScoringStrategy>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BalancedAllocationArgs {
    api_version: Option<String>,
    kind: Option<String>,
    resources: Option<Vec<ResourceSpec>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InterPodAffinityArgs {
    api_version: Option<String>,
    kind: Option<String>,
    hard_pod_affinity_weight: Option<i64>,
    ignore_preferred_terms_of_existing_pods: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PodTopologySpreadArgs {
    api_version: Option<String>,
    kind: Option<String>,
    default_constraints: Option<Vec<TopologySpreadConstraint>>,
    defaulting_type: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NodeAffinityArgs {
    api_version: Option<String>,
    kind: Option<String>,
    added_affinity: Option<NodeAffinity>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DefaultPreemptionArgs {
    api_version: Option<String>,
    kind: Option<String>,
    min_candidate_nodes_percentage: Option<i64>,
    min_candidate_nodes_absolute: Option<i64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct VolumeBindingArgs {
    api_version: Option<String>,
    kind: Option<String>,
    bind_timeout_seconds: Option<i64>,
    shape: Option<Vec<Value>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DynamicResourcesArgs {
    api_version: Option<String>,
    kind: Option<String>,
    filter_timeout: Option<String>,
    binding_timeout: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct GangPackArgs {
    api_version: Option<String>,
    kind: Option<String>,
    topology_key: Option<String>,
    pod_group_topology_key_annotation: Option<String>,
    unsupported_placement_group_label: Option<String>,
    default_permit_timeout_seconds: Option<i64>,
    pod_group_sync_timeout_seconds: Option<i64>,
    gc_interval_seconds: Option<i64>,
    standalone_domain_packing: Option<bool>,
}

/// Scoring strategy of NodeResourcesFit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FitStrategy {
    /// Prefer the node with the most free room left (the default profile: spreads load).
    LeastAllocated,
    /// Prefer the node already most used (packs; the OME profile's choice, which keeps whole
    /// nodes free for large pods).
    MostAllocated,
}

/// NodeResourcesFit, as the model uses it.
#[derive(Debug, Clone, PartialEq)]
pub struct FitConfig {
    /// How the score rates a node's use.
    pub strategy: FitStrategy,
    /// The resources scored, with their weights (default `cpu` and `memory`, 1 each).
    pub resources: Vec<(String, i64)>,
    /// Extended resources the filter does not check (`ignoredResources`): the scheduler
    /// leaves them to another component, so the model must not refuse a node for them.
    pub ignored_resources: BTreeSet<String>,
    /// Resource groups (the part of an extended resource's name before `/`) ignored the same
    /// way (`ignoredResourceGroups`).
    pub ignored_groups: BTreeSet<String>,
}

/// PodTopologySpread defaulting.
#[derive(Debug, Clone, PartialEq)]
pub struct SpreadConfig {
    /// `System` defaulting (hostname 3, zone 5, ScheduleAnyway) vs `List`.
    pub system_defaulting: bool,
    /// Under `List` defaulting, the constraints applied to pods that set none (their
    /// selector built from the Services and controllers selecting the pod).
    pub default_constraints: Vec<TopologySpreadConstraint>,
}

/// OMEGangPack arguments after defaulting (docs/design-simulation.md#ome-profile).
#[derive(Debug, Clone, PartialEq)]
pub struct GangConfig {
    /// The node label whose values are the gang's domains, when the PodGroup names none.
    pub topology_key: String,
    /// The PodGroup annotation that names a gang's own topology key (empty: not read).
    pub pod_group_topology_key_annotation: String,
    /// A label that, on a PodGroup or a member, makes the gang `Infeasible`: the plugin
    /// rejects partner placement groups (empty: not checked).
    pub unsupported_placement_group_label: String,
    /// The wait of a PodGroup without `scheduleTimeoutSeconds`; a gang with neither is
    /// `Infeasible`.
    pub default_permit_timeout_seconds: i64,
    /// Whether a pod without a gang is scored towards the domain already most used.
    pub standalone_domain_packing: bool,
}

/// A loaded, validated scheduler profile: what the model evaluates.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The profile's `schedulerName` after defaulting.
    pub scheduler_name: String,
    /// True iff OMEGangPack runs (at all its required points).
    pub gang_scheduling: bool,
    /// Enabled filter plugins, in order.
    pub filters: Vec<String>,
    /// Enabled score plugins with their weights.
    pub scores: Vec<(String, i64)>,
    /// DefaultPreemption enabled at postFilter.
    pub preemption: bool,
    /// `NodeResourcesFit`'s arguments.
    pub fit: FitConfig,
    /// The resources `NodeResourcesBalancedAllocation` balances, with their weights.
    pub balanced_resources: Vec<(String, i64)>,
    /// `InterPodAffinity`'s `hardPodAffinityWeight`: how much an existing pod's required
    /// affinity to the incoming pod adds to a node's score.
    pub hard_pod_affinity_weight: i64,
    /// `InterPodAffinity`'s `ignorePreferredTermsOfExistingPods`: score only the incoming
    /// pod's preferred terms, not those of the pods already placed.
    pub ignore_preferred_terms_of_existing_pods: bool,
    /// `PodTopologySpread`'s defaulting.
    pub spread: SpreadConfig,
    /// `NodeAffinity`'s `addedAffinity`: node affinity every pod of the profile gets on top
    /// of its own.
    pub added_affinity: Option<NodeAffinity>,
    /// OMEGangPack's arguments, when the profile runs it.
    pub gang: Option<GangConfig>,
    /// The defaulted, normalised configuration (hashed into the configuration ID).
    pub normalized: Value,
}

impl Profile {
    /// Is this filter plugin enabled?
    pub fn has_filter(&self, name: &str) -> bool {
        self.filters.iter().any(|f| f == name)
    }

    /// Weight of an enabled score plugin.
    pub fn score_weight(&self, name: &str) -> Option<i64> {
        self.scores.iter().find(|(n, _)| n == name).map(|(_, w)| *w)
    }

    /// Added affinity's required terms (NodeAffinityArgs).
    pub fn added_required(&self) -> Option<&[NodeSelectorTerm]> {
        self.added_affinity
            .as_ref()
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(|s| s.node_selector_terms.as_slice())
    }

    /// The default scheduler's profile (`profiles: [{schedulerName: default-scheduler}]`).
    pub fn default_scheduler() -> Profile {
        load_config(DEFAULT_SCHEDULER_YAML).unwrap_or_else(|e| unreachable!("built-in: {e}"))
    }

    /// The OME scheduler's profile as its chart renders it with default values.
    pub fn ome_scheduler_chart_default() -> Profile {
        load_config(OME_SCHEDULER_YAML).unwrap_or_else(|e| unreachable!("built-in: {e}"))
    }
}

/// The default scheduler's configuration, as an operator writes it for the default profile.
pub const DEFAULT_SCHEDULER_YAML: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
";

/// The OME scheduler's configuration as the ome-scheduler chart renders it with defaults
/// (docs/design-simulation.md#ome-profile).
pub const OME_SCHEDULER_YAML: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  resourceName: ome-scheduler
  resourceNamespace: ome
profiles:
  - schedulerName: ome-scheduler
    plugins:
      multiPoint:
        enabled:
          - name: OMEGangPack
        disabled:
          - name: DefaultPreemption
      score:
        enabled:
          - name: NodeResourcesFit
            weight: 10
          - name: OMEGangPack
            weight: 10
        disabled:
          - name: PodTopologySpread
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources:
              - name: cpu
                weight: 1
              - name: memory
                weight: 1
      - name: OMEGangPack
        args:
          podGroupTopologyKeyAnnotation: ome.io/topology-key
          unsupportedPlacementGroupLabel: ome.io/placement-group
          defaultPermitTimeoutSeconds: 600
          podGroupSyncTimeoutSeconds: 30
          gcIntervalSeconds: 60
          standaloneDomainPacking: true
";

fn decode<T: DeserializeOwned>(context: &str, v: Value) -> Result<T, ConfigError> {
    serde_json::from_value(v).map_err(|e| ConfigError::Decode {
        context: context.to_string(),
        message: e.to_string(),
    })
}

fn is_qualified_name(s: &str) -> bool {
    let (prefix, name) = match s.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|l| {
                !l.is_empty()
                    && l.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            })
    });
    name_ok && prefix_ok
}

fn check_args_meta(
    plugin: &str,
    api_version: &Option<String>,
    kind: &Option<String>,
) -> Result<(), ConfigError> {
    if let Some(a) = api_version
        && a != "kubescheduler.config.k8s.io/v1"
    {
        return Err(invalid(
            format!("pluginConfig[{plugin}].args.apiVersion"),
            a,
            "must be kubescheduler.config.k8s.io/v1",
        ));
    }
    if let Some(k) = kind
        && *k != format!("{plugin}Args")
    {
        return Err(invalid(
            format!("pluginConfig[{plugin}].args.kind"),
            k,
            format!("must be {plugin}Args"),
        ));
    }
    Ok(())
}

/// Merges a custom plugin set into a default list (upstream `mergePlugins`).
fn merge(defaults: &[(String, i64)], custom: Option<&PluginSet>) -> Vec<(String, i64)> {
    let Some(custom) = custom else {
        return defaults.to_vec();
    };
    let disabled: BTreeSet<&str> = custom.disabled.iter().map(|p| p.name.as_str()).collect();
    let mut out: Vec<(String, i64)> = if disabled.contains("*") {
        Vec::new()
    } else {
        defaults
            .iter()
            .filter(|(n, _)| !disabled.contains(n.as_str()))
            .cloned()
            .collect()
    };
    for e in &custom.enabled {
        let w = e.weight.unwrap_or(0);
        if let Some(slot) = out.iter_mut().find(|(n, _)| *n == e.name) {
            slot.1 = w;
        } else {
            out.push((e.name.clone(), w));
        }
    }
    out
}

/// Expands multiPoint into one point (upstream `expandMultiPointPlugins` order: explicit
/// overrides first, then multiPoint-only plugins, then explicit-only plugins).
fn expand(
    point: &str,
    multi: &[(String, i64)],
    explicit: Option<&PluginSet>,
) -> Vec<(String, i64)> {
    let explicit_enabled: Vec<(String, i64)> = explicit
        .map(|s| {
            s.enabled
                .iter()
                .map(|p| (p.name.clone(), p.weight.unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default();
    let disabled: BTreeSet<&str> = explicit
        .map(|s| s.disabled.iter().map(|p| p.name.as_str()).collect())
        .unwrap_or_default();
    let all_disabled = disabled.contains("*");
    let multi_here: Vec<&(String, i64)> = multi
        .iter()
        .filter(|(n, _)| points_of(n).is_some_and(|ps| ps.contains(&point)))
        .filter(|(n, _)| !all_disabled && !disabled.contains(n.as_str()))
        .collect();
    // Membership through sorted sets: a plugin list of n names costs O(n log n), not O(n²).
    let multi_names: BTreeSet<&str> = multi_here.iter().map(|(m, _)| m.as_str()).collect();
    let explicit_names: BTreeSet<&str> = explicit_enabled.iter().map(|(e, _)| e.as_str()).collect();
    let mut out = Vec::new();
    let mut in_out = BTreeSet::new();
    for (n, w) in &explicit_enabled {
        if multi_names.contains(n.as_str()) {
            out.push((n.clone(), *w));
            in_out.insert(n.as_str());
        }
    }
    for (n, w) in &multi_here {
        if !explicit_names.contains(n.as_str()) {
            out.push((n.clone(), *w));
            in_out.insert(n.as_str());
        }
    }
    for (n, w) in &explicit_enabled {
        if in_out.insert(n.as_str()) {
            out.push((n.clone(), *w));
        }
    }
    out
}

fn resource_list(
    field: &str,
    list: Option<Vec<ResourceSpec>>,
) -> Result<Vec<(String, i64)>, ConfigError> {
    let list = list.unwrap_or_else(|| {
        vec![
            ResourceSpec {
                name: "cpu".into(),
                weight: Some(1),
            },
            ResourceSpec {
                name: "memory".into(),
                weight: Some(1),
            },
        ]
    });
    let mut out: Vec<(String, i64)> = Vec::new();
    let mut names = BTreeSet::new();
    for (i, r) in list.into_iter().enumerate() {
        let w = match r.weight.unwrap_or(0) {
            0 => 1,
            w => w,
        };
        if !(1..=100).contains(&w) {
            return Err(invalid(
                format!("{field}[{i}].weight"),
                w,
                "must be in the range [1, 100]",
            ));
        }
        if r.name.is_empty() || !names.insert(r.name.clone()) {
            return Err(invalid(
                format!("{field}[{i}].name"),
                &r.name,
                "must be a non-empty, unique resource name",
            ));
        }
        out.push((r.name, w));
    }
    Ok(out)
}

fn check_constraint(field: &str, c: &TopologySpreadConstraint) -> Result<(), ConfigError> {
    if let Some(k) = c.unknown.keys().next() {
        return Err(invalid(format!("{field}.{k}"), k, "unknown field"));
    }
    if c.max_skew <= 0 {
        return Err(invalid(
            format!("{field}.maxSkew"),
            c.max_skew,
            "must be greater than zero",
        ));
    }
    if c.topology_key.is_empty() {
        return Err(invalid(
            format!("{field}.topologyKey"),
            "",
            "can not be empty",
        ));
    }
    if !matches!(
        c.when_unsatisfiable.as_str(),
        "DoNotSchedule" | "ScheduleAnyway"
    ) {
        return Err(invalid(
            format!("{field}.whenUnsatisfiable"),
            &c.when_unsatisfiable,
            "supported values: DoNotSchedule, ScheduleAnyway",
        ));
    }
    if c.label_selector.is_some() {
        return Err(invalid(
            format!("{field}.labelSelector"),
            "set",
            "constraint must not define a selector, as they deduced for each pod",
        ));
    }
    Ok(())
}

fn positive_seconds(field: &str, v: Option<i64>) -> Result<(), ConfigError> {
    if let Some(v) = v
        && (v <= 0 || v.checked_mul(1_000_000_000).is_none())
    {
        return Err(invalid(
            field,
            v,
            "must be positive and representable as nanoseconds",
        ));
    }
    Ok(())
}

fn to_value<T: Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap_or(Value::Null)
}

/// The top-level fields after validation and defaulting.
struct TopLevel {
    profile: RawProfile,
    parallelism: i64,
    percentage_of_nodes_to_score: i64,
    initial_backoff: i64,
    max_backoff: i64,
    leader_election: LeaderElection,
    client_connection: ClientConnection,
}

/// Resource names with their scoring weights.
type WeightedResources = Vec<(String, i64)>;

/// Effective plugins per extension point, in the order the scheduler runs them.
type EffectivePlugins = BTreeMap<&'static str, Vec<(String, i64)>>;

/// Parses, validates and defaults a KubeSchedulerConfiguration (YAML 1.2 or JSON).
pub fn load_config(text: &str) -> Result<Profile, ConfigError> {
    let raw = parse_document(text)?;
    let top = top_level(&raw)?;
    let p = &top.profile;
    let scheduler_name = profile_scheduler_name(p)?;
    let plugins = p.plugins.clone().unwrap_or_default();
    check_enabled_plugins(&plugins)?;
    let (effective, gang_enabled) = effective_plugins(&plugins)?;
    let filters: Vec<String> = effective["filter"].iter().map(|(n, _)| n.clone()).collect();
    let mut scores = Vec::new();
    for (n, w) in &effective["score"] {
        let w = if *w == 0 {
            i64::from(default_weight(n))
        } else {
            *w
        };
        scores.push((n.clone(), w));
    }
    let preemption = effective["postFilter"]
        .iter()
        .any(|(n, _)| n == "DefaultPreemption");

    let args_by_name = plugin_args(p)?;
    let take = |name: &str| plugin_args_of(&args_by_name, name);
    let (fit, fit_strategy, fit_resources) = fit_args(take("NodeResourcesFit"))?;
    let (bal, balanced_resources) =
        balanced_allocation_args(take("NodeResourcesBalancedAllocation"))?;
    let (ipa, hard, ignore_pref) = inter_pod_affinity_args(take("InterPodAffinity"))?;
    let (pts, dt, dcs) = topology_spread_args(take("PodTopologySpread"))?;
    let na = node_affinity_args(take("NodeAffinity"))?;
    let dp = default_preemption_args(take("DefaultPreemption"))?;
    let vb = volume_binding_args(take("VolumeBinding"))?;
    let dra: DynamicResourcesArgs = decode(
        "pluginConfig[DynamicResources].args",
        take("DynamicResources"),
    )?;
    check_args_meta("DynamicResources", &dra.api_version, &dra.kind)?;
    let (gang, gang_args_norm) = gang_pack_args(gang_enabled, &args_by_name)?;

    let profile_norm = serde_json::json!({
        "schedulerName": scheduler_name,
        "percentageOfNodesToScore": p.percentage_of_nodes_to_score,
        "plugins": normalized_plugins(&effective),
        "rawPlugins": to_value(&plugins),
        "pluginConfig": {
            "NodeResourcesFit": to_value(&fit),
            "NodeResourcesBalancedAllocation": to_value(&bal),
            "InterPodAffinity": to_value(&ipa),
            "PodTopologySpread": to_value(&pts),
            "NodeAffinity": to_value(&na),
            "DefaultPreemption": to_value(&dp),
            "VolumeBinding": to_value(&vb),
            "DynamicResources": to_value(&dra),
            "OMEGangPack": gang_args_norm,
        },
    });
    let normalized = normalized_document(&raw, &top, profile_norm);

    Ok(Profile {
        scheduler_name,
        gang_scheduling: gang_enabled,
        filters,
        scores,
        preemption,
        fit: FitConfig {
            strategy: fit_strategy,
            resources: fit_resources,
            ignored_resources: fit
                .ignored_resources
                .unwrap_or_default()
                .into_iter()
                .collect(),
            ignored_groups: fit
                .ignored_resource_groups
                .unwrap_or_default()
                .into_iter()
                .collect(),
        },
        balanced_resources,
        hard_pod_affinity_weight: hard,
        ignore_preferred_terms_of_existing_pods: ignore_pref,
        spread: SpreadConfig {
            system_defaulting: dt == "System",
            default_constraints: dcs,
        },
        added_affinity: na.added_affinity,
        gang,
        normalized,
    })
}

/// Step 1: the document as a mapping of the known top-level fields.
fn parse_document(text: &str) -> Result<RawConfig, ConfigError> {
    // No source snippet: the message must stay one line.
    let mut options = serde_saphyr::Options::default();
    options.with_snippet = false;
    let value: Value = serde_saphyr::from_str_with_options(text, options)
        .map_err(|e| ConfigError::Syntax(e.to_string()))?;
    if !value.is_object() {
        return Err(invalid(
            "(document)",
            value_kind(&value),
            "must be a mapping",
        ));
    }
    decode("KubeSchedulerConfiguration", value)
}

/// Step 2: top-level checks and defaults, in the order the scheduler reports them.
fn top_level(raw: &RawConfig) -> Result<TopLevel, ConfigError> {
    let api_version = raw.api_version.clone().unwrap_or_default();
    if api_version != "kubescheduler.config.k8s.io/v1" {
        return Err(invalid(
            "apiVersion",
            api_version,
            "must be kubescheduler.config.k8s.io/v1",
        ));
    }
    let kind = raw.kind.clone().unwrap_or_default();
    if kind != "KubeSchedulerConfiguration" {
        return Err(invalid("kind", kind, "must be KubeSchedulerConfiguration"));
    }
    if let Some(ext) = &raw.extenders
        && !ext.is_empty()
    {
        return Err(invalid(
            "extenders",
            format!("{} extender(s)", ext.len()),
            "extenders are not supported",
        ));
    }
    let mut cc = raw.client_connection.clone().unwrap_or_default();
    if let Some(k) = &cc.kubeconfig
        && !k.is_empty()
    {
        return Err(invalid(
            "clientConnection.kubeconfig",
            k,
            "the simulator never connects to a cluster",
        ));
    }
    let mut profiles = raw.profiles.clone().unwrap_or_default();
    if profiles.len() != 1 {
        return Err(invalid(
            "profiles",
            format!("{} profiles", profiles.len()),
            "exactly one profile is required",
        ));
    }
    let parallelism = raw.parallelism.unwrap_or(16);
    if parallelism <= 0 {
        return Err(invalid(
            "parallelism",
            parallelism,
            "should be an integer value greater than zero",
        ));
    }
    let pct = raw.percentage_of_nodes_to_score.unwrap_or(0);
    if !(0..=100).contains(&pct) {
        return Err(invalid(
            "percentageOfNodesToScore",
            pct,
            "not in valid range [0-100]",
        ));
    }
    let initial = raw.pod_initial_backoff_seconds.unwrap_or(1);
    if initial <= 0 {
        return Err(invalid(
            "podInitialBackoffSeconds",
            initial,
            "must be greater than 0",
        ));
    }
    let max_backoff = raw.pod_max_backoff_seconds.unwrap_or(10);
    if max_backoff < initial {
        return Err(invalid(
            "podMaxBackoffSeconds",
            max_backoff,
            "must be greater than or equal to PodInitialBackoffSeconds",
        ));
    }
    let mut le = raw.leader_election.clone().unwrap_or_default();
    le.leader_elect.get_or_insert(true);
    le.lease_duration.get_or_insert_with(|| "15s".into());
    le.renew_deadline.get_or_insert_with(|| "10s".into());
    le.retry_period.get_or_insert_with(|| "2s".into());
    le.resource_lock.get_or_insert_with(|| "leases".into());
    le.resource_name
        .get_or_insert_with(|| "kube-scheduler".into());
    le.resource_namespace
        .get_or_insert_with(|| "kube-system".into());
    cc.kubeconfig.get_or_insert_with(String::new);
    cc.accept_content_types.get_or_insert_with(String::new);
    cc.content_type
        .get_or_insert_with(|| "application/vnd.kubernetes.protobuf".into());
    cc.qps.get_or_insert_with(|| serde_json::Number::from(50));
    cc.burst.get_or_insert(100);
    if cc.burst.unwrap_or(0) < 0 {
        return Err(invalid(
            "clientConnection.burst",
            cc.burst.unwrap_or(0),
            "must be non-negative",
        ));
    }
    Ok(TopLevel {
        profile: profiles.remove(0),
        parallelism,
        percentage_of_nodes_to_score: pct,
        initial_backoff: initial,
        max_backoff,
        leader_election: le,
        client_connection: cc,
    })
}

/// Step 3: the profile's own fields.
fn profile_scheduler_name(p: &RawProfile) -> Result<String, ConfigError> {
    let scheduler_name = p
        .scheduler_name
        .clone()
        .unwrap_or_else(|| crate::DEFAULT_SCHEDULER_NAME.to_string());
    if scheduler_name.is_empty() {
        return Err(invalid("profiles[0].schedulerName", "", "Required value"));
    }
    if let Some(pp) = p.percentage_of_nodes_to_score
        && !(0..=100).contains(&pp)
    {
        return Err(invalid(
            "profiles[0].percentageOfNodesToScore",
            pp,
            "not in valid range [0-100]",
        ));
    }
    Ok(scheduler_name)
}

/// Step 4: every enabled plugin is modelled, at a point it implements, with a weight in range.
fn check_enabled_plugins(plugins: &BTreeMap<String, PluginSet>) -> Result<(), ConfigError> {
    for (point, set) in plugins {
        if point != "multiPoint" && !EXTENSION_POINTS.contains(&point.as_str()) {
            return Err(invalid(
                format!("profiles[0].plugins.{point}"),
                point,
                "unknown extension point",
            ));
        }
        for (i, e) in set.enabled.iter().enumerate() {
            let field = format!("profiles[0].plugins.{point}.enabled[{i}].name");
            if e.name == "GangScheduling" {
                return Err(invalid(
                    field,
                    &e.name,
                    "the upstream GangScheduling plugin is refused; use OMEGangPack",
                ));
            }
            let Some(points) = points_of(&e.name) else {
                return Err(invalid(
                    field,
                    &e.name,
                    "only the modelled in-tree plugins and OMEGangPack may be enabled",
                ));
            };
            if point != "multiPoint" && !points.contains(&point.as_str()) {
                return Err(invalid(
                    field,
                    &e.name,
                    format!("plugin does not implement the {point} extension point"),
                ));
            }
            if let Some(w) = e.weight
                && !(0..=100).contains(&w)
            {
                return Err(invalid(
                    format!("profiles[0].plugins.{point}.enabled[{i}].weight"),
                    w,
                    "must be in the range [0, 100]",
                ));
            }
        }
    }
    Ok(())
}

/// Step 5: the plugins each point runs after multiPoint expansion, and whether OMEGangPack runs
/// (it must then run at every point it needs).
fn effective_plugins(
    plugins: &BTreeMap<String, PluginSet>,
) -> Result<(EffectivePlugins, bool), ConfigError> {
    let defaults: Vec<(String, i64)> = DEFAULT_PLUGINS
        .iter()
        .map(|(n, w)| (n.to_string(), i64::from(*w)))
        .collect();
    let multi = merge(&defaults, plugins.get("multiPoint"));
    let mut effective: EffectivePlugins = BTreeMap::new();
    for point in EXTENSION_POINTS {
        effective.insert(point, expand(point, &multi, plugins.get(*point)));
    }
    let enabled_anywhere: BTreeSet<String> = effective
        .values()
        .flatten()
        .map(|(n, _)| n.clone())
        .collect();
    let gang_enabled = enabled_anywhere.contains(OME_GANG_PACK);
    if gang_enabled {
        for point in GANG_PACK_REQUIRED_POINTS {
            if !effective[point].iter().any(|(n, _)| n == OME_GANG_PACK) {
                return Err(invalid(
                    format!("profiles[0].plugins.{point}"),
                    OME_GANG_PACK,
                    "OMEGangPack must be enabled at preFilter, filter, postFilter, reserve, permit and postBind",
                ));
            }
        }
    }
    Ok((effective, gang_enabled))
}

/// Step 6: the args of each configured plugin by name (each plugin at most once).
fn plugin_args(p: &RawProfile) -> Result<BTreeMap<String, Value>, ConfigError> {
    let mut seen = BTreeSet::new();
    let mut args_by_name: BTreeMap<String, Value> = BTreeMap::new();
    for (i, pc) in p.plugin_config.iter().enumerate() {
        if !seen.insert(pc.name.clone()) {
            return Err(invalid(
                format!("profiles[0].pluginConfig[{i}].name"),
                &pc.name,
                "repeated pluginConfig entry",
            ));
        }
        if pc.name == "GangScheduling" || points_of(&pc.name).is_none() {
            return Err(invalid(
                format!("profiles[0].pluginConfig[{i}].name"),
                &pc.name,
                "only the modelled in-tree plugins and OMEGangPack may be configured",
            ));
        }
        args_by_name.insert(
            pc.name.clone(),
            pc.args.clone().unwrap_or(Value::Object(Default::default())),
        );
    }
    Ok(args_by_name)
}

/// A plugin's args, an empty mapping when it is not configured.
fn plugin_args_of(args_by_name: &BTreeMap<String, Value>, name: &str) -> Value {
    args_by_name
        .get(name)
        .cloned()
        .unwrap_or(Value::Object(Default::default()))
}

/// NodeResourcesFit's args, defaulted, with its strategy and weighted resources.
fn fit_args(
    args: Value,
) -> Result<(NodeResourcesFitArgs, FitStrategy, WeightedResources), ConfigError> {
    let mut fit: NodeResourcesFitArgs = decode("pluginConfig[NodeResourcesFit].args", args)?;
    check_args_meta("NodeResourcesFit", &fit.api_version, &fit.kind)?;
    let mut strategy = fit.scoring_strategy.clone().unwrap_or_default();
    let strategy_kind = strategy
        .kind
        .clone()
        .unwrap_or_else(|| "LeastAllocated".into());
    let fit_strategy = match strategy_kind.as_str() {
        "LeastAllocated" => FitStrategy::LeastAllocated,
        "MostAllocated" => FitStrategy::MostAllocated,
        "RequestedToCapacityRatio" => {
            return Err(invalid(
                "pluginConfig[NodeResourcesFit].args.scoringStrategy.type",
                strategy_kind,
                "RequestedToCapacityRatio is not modelled",
            ));
        }
        other => {
            return Err(invalid(
                "pluginConfig[NodeResourcesFit].args.scoringStrategy.type",
                other,
                "supported values: LeastAllocated, MostAllocated",
            ));
        }
    };
    let fit_resources = resource_list(
        "pluginConfig[NodeResourcesFit].args.scoringStrategy.resources",
        strategy.resources.take(),
    )?;
    for (i, g) in fit.ignored_resource_groups.iter().flatten().enumerate() {
        if g.contains('/') || g.is_empty() {
            return Err(invalid(
                format!("pluginConfig[NodeResourcesFit].args.ignoredResourceGroups[{i}]"),
                g,
                "resource group name must not contain '/'",
            ));
        }
    }
    strategy.kind = Some(strategy_kind);
    strategy.resources = Some(resource_specs(&fit_resources));
    fit.scoring_strategy = Some(strategy);
    fit.ignored_resources.get_or_insert_with(Vec::new);
    fit.ignored_resource_groups.get_or_insert_with(Vec::new);
    Ok((fit, fit_strategy, fit_resources))
}

/// Weighted resources as the normalised document lists them.
fn resource_specs(resources: &[(String, i64)]) -> Vec<ResourceSpec> {
    resources
        .iter()
        .map(|(n, w)| ResourceSpec {
            name: n.clone(),
            weight: Some(*w),
        })
        .collect()
}

/// NodeResourcesBalancedAllocation's args, defaulted, with its weighted resources.
fn balanced_allocation_args(
    args: Value,
) -> Result<(BalancedAllocationArgs, Vec<(String, i64)>), ConfigError> {
    let mut bal: BalancedAllocationArgs =
        decode("pluginConfig[NodeResourcesBalancedAllocation].args", args)?;
    check_args_meta(
        "NodeResourcesBalancedAllocation",
        &bal.api_version,
        &bal.kind,
    )?;
    let balanced_resources = resource_list(
        "pluginConfig[NodeResourcesBalancedAllocation].args.resources",
        bal.resources.take(),
    )?;
    bal.resources = Some(resource_specs(&balanced_resources));
    Ok((bal, balanced_resources))
}

/// InterPodAffinity's args, defaulted: the hard affinity weight and whether existing pods'
/// preferred terms are ignored.
fn inter_pod_affinity_args(args: Value) -> Result<(InterPodAffinityArgs, i64, bool), ConfigError> {
    let mut ipa: InterPodAffinityArgs = decode("pluginConfig[InterPodAffinity].args", args)?;
    check_args_meta("InterPodAffinity", &ipa.api_version, &ipa.kind)?;
    let hard = *ipa.hard_pod_affinity_weight.get_or_insert(1);
    if !(0..=100).contains(&hard) {
        return Err(invalid(
            "pluginConfig[InterPodAffinity].args.hardPodAffinityWeight",
            hard,
            "not in valid range [0-100]",
        ));
    }
    let ignore_pref = *ipa
        .ignore_preferred_terms_of_existing_pods
        .get_or_insert(false);
    Ok((ipa, hard, ignore_pref))
}

/// PodTopologySpread's args, defaulted: the defaulting type and the default constraints.
fn topology_spread_args(
    args: Value,
) -> Result<(PodTopologySpreadArgs, String, Vec<TopologySpreadConstraint>), ConfigError> {
    let mut pts: PodTopologySpreadArgs = decode("pluginConfig[PodTopologySpread].args", args)?;
    check_args_meta("PodTopologySpread", &pts.api_version, &pts.kind)?;
    let dt = pts
        .defaulting_type
        .get_or_insert_with(|| "System".into())
        .clone();
    let dcs = pts.default_constraints.get_or_insert_with(Vec::new).clone();
    match dt.as_str() {
        "System" if !dcs.is_empty() => {
            return Err(invalid(
                "pluginConfig[PodTopologySpread].args.defaultConstraints",
                format!("{} constraint(s)", dcs.len()),
                "when .defaultingType=\"System\" must be empty",
            ));
        }
        "System" | "List" => {}
        other => {
            return Err(invalid(
                "pluginConfig[PodTopologySpread].args.defaultingType",
                other,
                "supported values: System, List",
            ));
        }
    }
    let mut seen_c = BTreeSet::new();
    for (i, c) in dcs.iter().enumerate() {
        let field = format!("pluginConfig[PodTopologySpread].args.defaultConstraints[{i}]");
        check_constraint(&field, c)?;
        if !seen_c.insert((c.topology_key.clone(), c.when_unsatisfiable.clone())) {
            return Err(invalid(
                field,
                &c.topology_key,
                "duplicate {topologyKey, whenUnsatisfiable}",
            ));
        }
    }
    Ok((pts, dt, dcs))
}

/// NodeAffinity's args: an added affinity may only match fields by `metadata.name`.
fn node_affinity_args(args: Value) -> Result<NodeAffinityArgs, ConfigError> {
    let na: NodeAffinityArgs = decode("pluginConfig[NodeAffinity].args", args)?;
    check_args_meta("NodeAffinity", &na.api_version, &na.kind)?;
    if let Some(a) = &na.added_affinity {
        let json = to_value(a);
        if let Some(k) = a.unknown.keys().next() {
            return Err(invalid(
                "pluginConfig[NodeAffinity].args.addedAffinity",
                k,
                "unknown field",
            ));
        }
        // Round-trip through the strict node-affinity check used for pods.
        if json.to_string().contains("\"matchFields\"")
            && a.required_during_scheduling_ignored_during_execution
                .iter()
                .flat_map(|s| &s.node_selector_terms)
                .flat_map(|t| &t.match_fields)
                .any(|f| f.key != "metadata.name")
        {
            return Err(invalid(
                "pluginConfig[NodeAffinity].args.addedAffinity.matchFields.key",
                "not metadata.name",
                "only metadata.name is supported",
            ));
        }
    }
    Ok(na)
}

/// DefaultPreemption's args, defaulted and range-checked.
fn default_preemption_args(args: Value) -> Result<DefaultPreemptionArgs, ConfigError> {
    let mut dp: DefaultPreemptionArgs = decode("pluginConfig[DefaultPreemption].args", args)?;
    check_args_meta("DefaultPreemption", &dp.api_version, &dp.kind)?;
    let pct_c = *dp.min_candidate_nodes_percentage.get_or_insert(10);
    let abs_c = *dp.min_candidate_nodes_absolute.get_or_insert(100);
    if !(0..=100).contains(&pct_c) {
        return Err(invalid(
            "pluginConfig[DefaultPreemption].args.minCandidateNodesPercentage",
            pct_c,
            "not in valid range [0, 100]",
        ));
    }
    if abs_c < 0 {
        return Err(invalid(
            "pluginConfig[DefaultPreemption].args.minCandidateNodesAbsolute",
            abs_c,
            "not in valid range [0, inf)",
        ));
    }
    if pct_c == 0 && abs_c == 0 {
        return Err(invalid(
            "pluginConfig[DefaultPreemption].args.minCandidateNodesAbsolute",
            0,
            "cannot be zero at the same time as minCandidateNodesPercentage",
        ));
    }
    Ok(dp)
}

/// VolumeBinding's args, defaulted and range-checked.
fn volume_binding_args(args: Value) -> Result<VolumeBindingArgs, ConfigError> {
    let mut vb: VolumeBindingArgs = decode("pluginConfig[VolumeBinding].args", args)?;
    check_args_meta("VolumeBinding", &vb.api_version, &vb.kind)?;
    let bts = *vb.bind_timeout_seconds.get_or_insert(600);
    if bts < 0 {
        return Err(invalid(
            "pluginConfig[VolumeBinding].args.bindTimeoutSeconds",
            bts,
            "invalid BindTimeoutSeconds, should not be a negative value",
        ));
    }
    Ok(vb)
}

/// OMEGangPack's args: required and checked when it runs, decoded strictly when only
/// configured (so typos are reported); with their normalised form.
fn gang_pack_args(
    gang_enabled: bool,
    args_by_name: &BTreeMap<String, Value>,
) -> Result<(Option<GangConfig>, Value), ConfigError> {
    if !gang_enabled {
        if !args_by_name.contains_key(OME_GANG_PACK) {
            return Ok((None, Value::Null));
        }
        let args = plugin_args_of(args_by_name, OME_GANG_PACK);
        let _: GangPackArgs = decode("pluginConfig[OMEGangPack].args", args.clone())?;
        return Ok((None, args));
    }
    let Some(gv) = args_by_name.get(OME_GANG_PACK).cloned() else {
        return Err(invalid(
            "profiles[0].pluginConfig",
            "no OMEGangPack entry",
            "OMEGangPack args with a positive gcIntervalSeconds are required",
        ));
    };
    let mut g: GangPackArgs = decode("pluginConfig[OMEGangPack].args", gv)?;
    for (field, v) in [
        ("topologyKey", &g.topology_key),
        (
            "podGroupTopologyKeyAnnotation",
            &g.pod_group_topology_key_annotation,
        ),
        (
            "unsupportedPlacementGroupLabel",
            &g.unsupported_placement_group_label,
        ),
    ] {
        if let Some(v) = v
            && !v.is_empty()
            && !is_qualified_name(v)
        {
            return Err(invalid(
                format!("pluginConfig[OMEGangPack].args.{field}"),
                v,
                "must be empty or a qualified label or annotation key",
            ));
        }
    }
    positive_seconds(
        "pluginConfig[OMEGangPack].args.defaultPermitTimeoutSeconds",
        g.default_permit_timeout_seconds,
    )?;
    positive_seconds(
        "pluginConfig[OMEGangPack].args.podGroupSyncTimeoutSeconds",
        g.pod_group_sync_timeout_seconds,
    )?;
    positive_seconds(
        "pluginConfig[OMEGangPack].args.gcIntervalSeconds",
        g.gc_interval_seconds,
    )?;
    if g.gc_interval_seconds.is_none() {
        return Err(invalid(
            "pluginConfig[OMEGangPack].args.gcIntervalSeconds",
            "absent",
            "a positive gcIntervalSeconds is required",
        ));
    }
    g.standalone_domain_packing.get_or_insert(true);
    let gang = GangConfig {
        topology_key: g.topology_key.clone().unwrap_or_default(),
        pod_group_topology_key_annotation: g
            .pod_group_topology_key_annotation
            .clone()
            .unwrap_or_default(),
        unsupported_placement_group_label: g
            .unsupported_placement_group_label
            .clone()
            .unwrap_or_default(),
        default_permit_timeout_seconds: g.default_permit_timeout_seconds.unwrap_or(0),
        standalone_domain_packing: g.standalone_domain_packing.unwrap_or(true),
    };
    Ok((Some(gang), to_value(&g)))
}

/// The effective plugins with their weights, point by point.
fn normalized_plugins(effective: &EffectivePlugins) -> BTreeMap<&str, Value> {
    effective
        .iter()
        .map(|(k, v)| {
            (
                *k,
                Value::Array(
                    v.iter()
                        .map(|(n, w)| serde_json::json!({"name": n, "weight": w}))
                        .collect(),
                ),
            )
        })
        .collect()
}

/// The defaulted, normalised configuration around its one normalised profile.
fn normalized_document(raw: &RawConfig, top: &TopLevel, profile: Value) -> Value {
    serde_json::json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "parallelism": top.parallelism,
        "leaderElection": to_value(&top.leader_election),
        "clientConnection": to_value(&top.client_connection),
        "enableProfiling": raw.enable_profiling.unwrap_or(true),
        "enableContentionProfiling": raw.enable_contention_profiling.unwrap_or(true),
        "percentageOfNodesToScore": top.percentage_of_nodes_to_score,
        "podInitialBackoffSeconds": top.initial_backoff,
        "podMaxBackoffSeconds": top.max_backoff,
        "delayCacheUntilActive": raw.delay_cache_until_active.unwrap_or(false),
        "extenders": [],
        "profiles": [profile],
    })
}

fn value_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a sequence",
        Value::Object(_) => "a mapping",
    }
}
