//! The Karpenter objects (`karpenter.sh/v1`) plumb reads, as small hand-written types: only
//! the fields the member report uses. Unknown fields are ignored, so a full object recorded
//! with `kubectl get nodepools -o json` reads as well as a minimal one.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, Taint};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

/// The API group and version of both kinds.
pub const API_VERSION: &str = "karpenter.sh/v1";

/// The label that names a node's (or NodeClaim's) NodePool.
pub const NODEPOOL_LABEL: &str = "karpenter.sh/nodepool";

/// A Karpenter NodePool: its limits bound what it may still launch (dynamic room).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodePool {
    /// Name, labels.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Limits and the template of the nodes it launches.
    #[serde(default)]
    pub spec: NodePoolSpec,
    /// What its nodes hold now.
    #[serde(default)]
    pub status: NodePoolStatus,
}

/// `NodePool.spec`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodePoolSpec {
    /// Most of each resource the pool's nodes may hold together; none means unbounded.
    #[serde(default)]
    pub limits: BTreeMap<String, Quantity>,
    /// What a node it launches looks like.
    #[serde(default)]
    pub template: NodeClaimTemplate,
}

/// `NodePool.spec.template`: labels, taints and requirements of the nodes it launches.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeClaimTemplate {
    /// Labels every launched node carries.
    #[serde(default)]
    pub metadata: TemplateMeta,
    /// Taints and requirements.
    #[serde(default)]
    pub spec: NodeClaimTemplateSpec,
}

/// Template metadata (labels only).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateMeta {
    /// Labels every launched node carries.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// Template spec: taints and node requirements.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeClaimTemplateSpec {
    /// Taints every launched node carries.
    #[serde(default)]
    pub taints: Vec<Taint>,
    /// Requirements on the launched nodes' labels (instance type, zone, …).
    #[serde(default)]
    pub requirements: Vec<NodeSelectorRequirement>,
}

/// `NodePool.status`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodePoolStatus {
    /// What the pool's nodes hold together now (Karpenter keeps it up to date).
    #[serde(default)]
    pub resources: BTreeMap<String, Quantity>,
}

/// A Karpenter NodeClaim: a node being launched or launched. Failed launches show on it (a
/// `Launched=False` condition while it exists, and Warning Events naming it).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeClaim {
    /// Name, labels (`karpenter.sh/nodepool` names its pool).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Conditions and the node it became.
    #[serde(default)]
    pub status: NodeClaimStatus,
}

/// `NodeClaim.status`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeClaimStatus {
    /// The node it became, once registered.
    #[serde(default)]
    pub node_name: Option<String>,
    /// `Launched`, `Registered`, `Initialized`, …
    #[serde(default)]
    pub conditions: Vec<ClaimCondition>,
}

/// One NodeClaim condition.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimCondition {
    /// `Launched`, `Registered`, …
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Machine-readable reason.
    #[serde(default)]
    pub reason: Option<String>,
    /// When the status last changed.
    #[serde(default)]
    pub last_transition_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
}

impl NodeClaim {
    /// The NodePool that launched it (its `karpenter.sh/nodepool` label).
    pub fn node_pool(&self) -> Option<&str> {
        self.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(NODEPOOL_LABEL))
            .map(String::as_str)
    }
}
