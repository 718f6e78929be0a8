//! The emulator's loop: set the cluster up (the Deployment, the NodePool, the static nodes),
//! then each tick read the workload's pods, the pool's nodes and the Deployment, plan, and
//! carry the actions out in order.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    PostParams,
};
use kube::{Api, Client};
use serde_json::{Value, json};

use super::{
    APP_LABEL, Action, ClusterSpec, GPU, LAUNCH_FAILURE_REASON, Launch, Memory, NODEPOOL_LABEL,
    Observed, PodView, claim_name, plan, static_node,
};

/// The label naming the emulated member on its nodes (so two emulators sharing one API server
/// keep apart).
const CLUSTER_LABEL: &str = "plumb-emulator/cluster";
/// The field manager of every write.
const MANAGER: &str = "plumb-fleet-emulator";

fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PatchParams::default()
    }
}

fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PostParams::default()
    }
}

fn karpenter(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("karpenter.sh", "v1", kind), plural)
}

/// One emulated member cluster for one workload.
pub struct ClusterEmulator {
    client: Client,
    spec: ClusterSpec,
    memory: Memory,
}

impl std::fmt::Debug for ClusterEmulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterEmulator")
            .field("spec", &self.spec)
            .field("memory", &self.memory)
            .finish_non_exhaustive()
    }
}

impl ClusterEmulator {
    /// An emulator of `spec` on `client`'s API server (admin rights).
    pub fn new(client: Client, spec: ClusterSpec) -> ClusterEmulator {
        ClusterEmulator {
            client,
            spec,
            memory: Memory::default(),
        }
    }

    /// What the emulator remembers (for tests).
    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    /// Creates the Deployment (`replicas`), the NodePool (when its CRD is installed) and the
    /// static nodes. Objects that exist already are left as they are.
    pub async fn set_up(&self, replicas: u32) -> Result<()> {
        let s = &self.spec;
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), &s.namespace);
        let deployment: Deployment = serde_json::from_value(json!({
            "metadata": {"name": s.deployment, "namespace": s.namespace},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {APP_LABEL: s.deployment}},
                "template": {
                    "metadata": {"labels": {APP_LABEL: s.deployment}},
                    "spec": {"containers": [self.container()]}
                }
            }
        }))?;
        ignore_exists(deployments.create(&post_params(), &deployment).await)
            .context("creating the Deployment")?;
        let limit = (s.static_nodes + s.pool_max_nodes) * s.gpus_per_node;
        let pools: Api<DynamicObject> =
            Api::all_with(self.client.clone(), &karpenter("NodePool", "nodepools"));
        let mut pool = DynamicObject::new(&s.pool, &karpenter("NodePool", "nodepools"));
        pool.data = json!({"spec": {"limits": {GPU: limit.to_string()}, "template": {"spec": {}}}});
        if let Err(e) = ignore_exists(pools.create(&post_params(), &pool).await) {
            tracing::warn!(error = %e, "no NodePool (is Karpenter's CRD installed?)");
        }
        for i in 0..s.static_nodes {
            self.create_node(&static_node(s, i)).await?;
        }
        Ok(())
    }

    fn container(&self) -> Value {
        let gpus = self.spec.gpus_per_replica.to_string();
        json!({
            "name": "server",
            "image": "vllm/vllm-openai",
            "resources": {
                "requests": {"cpu": "1", "memory": "1Gi", GPU: gpus},
                "limits": {GPU: gpus}
            }
        })
    }

    async fn create_node(&self, name: &str) -> Result<()> {
        let s = &self.spec;
        let nodes: Api<Node> = Api::all(self.client.clone());
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {
                NODEPOOL_LABEL: s.pool,
                CLUSTER_LABEL: s.cluster,
                "topology.kubernetes.io/region": s.region,
                "kubernetes.io/hostname": name,
            }}
        }))?;
        ignore_exists(nodes.create(&post_params(), &node).await)
            .with_context(|| format!("creating node {name}"))?;
        let capacity = json!({"cpu": "64", "memory": "512Gi", "pods": "110", GPU: s.gpus_per_node.to_string()});
        let status = json!({"status": {
            "capacity": capacity, "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
        }});
        nodes
            .patch_status(name, &patch_params(), &Patch::Merge(&status))
            .await
            .with_context(|| format!("setting node {name}'s status"))?;
        Ok(())
    }

    /// Removes what an earlier run left: the workload's Deployment and pods, this member's
    /// nodes and the pool's NodeClaims; the emulator's memory starts over.
    pub async fn reset(&mut self) -> Result<()> {
        let s = &self.spec;
        let gone = |r: kube::Result<()>| match r {
            Err(e) if !is_status(&e, 404) => Err(anyhow::Error::from(e)),
            _ => Ok(()),
        };
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), &s.namespace);
        gone(
            deployments
                .delete(&s.deployment, &DeleteParams::default())
                .await
                .map(drop),
        )?;
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &s.namespace);
        let selector = format!("{APP_LABEL}={}", s.deployment);
        gone(
            pods.delete_collection(
                &DeleteParams::default().grace_period(0),
                &ListParams::default().labels(&selector),
            )
            .await
            .map(drop),
        )?;
        let nodes: Api<Node> = Api::all(self.client.clone());
        let label = format!("{CLUSTER_LABEL}={}", s.cluster);
        gone(
            nodes
                .delete_collection(
                    &DeleteParams::default(),
                    &ListParams::default().labels(&label),
                )
                .await
                .map(drop),
        )?;
        let pool = format!("{NODEPOOL_LABEL}={}", s.pool);
        if let Err(e) = self
            .claims()
            .delete_collection(
                &DeleteParams::default(),
                &ListParams::default().labels(&pool),
            )
            .await
        {
            tracing::warn!(error = %e, "cannot clear the NodeClaims (is Karpenter's CRD installed?)");
        }
        self.memory = Memory::default();
        Ok(())
    }

    /// Reads what the planner needs.
    pub async fn observe(&self) -> Result<Observed> {
        let s = &self.spec;
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), &s.namespace);
        let replicas = deployments
            .get(&s.deployment)
            .await
            .context("reading the Deployment")?
            .spec
            .and_then(|d| d.replicas)
            .unwrap_or(1);
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &s.namespace);
        let selector = format!("{APP_LABEL}={}", s.deployment);
        let listed = pods.list(&ListParams::default().labels(&selector)).await?;
        let mut pods: Vec<PodView> = listed
            .items
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .map(pod_view)
            .collect();
        pods.sort_by(|a, b| a.name.cmp(&b.name));
        let nodes: Api<Node> = Api::all(self.client.clone());
        let label = format!("{CLUSTER_LABEL}={}", s.cluster);
        let mut nodes: Vec<String> = nodes
            .list(&ListParams::default().labels(&label))
            .await?
            .items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect();
        nodes.sort();
        Ok(Observed {
            replicas: u32::try_from(replicas.max(0)).unwrap_or(0),
            pods,
            nodes,
        })
    }

    /// One tick at `now` (since the emulator started): observe, plan, carry out. Returns the
    /// actions carried out.
    pub async fn tick(&mut self, now: Duration) -> Result<Vec<Action>> {
        let seen = self.observe().await?;
        let actions = plan(&self.spec, &seen, &self.memory, now);
        for action in &actions {
            self.carry_out(action)
                .await
                .with_context(|| format!("{action:?}"))?;
            self.memory.record(action, now);
        }
        Ok(actions)
    }

    async fn carry_out(&self, action: &Action) -> Result<()> {
        let s = &self.spec;
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &s.namespace);
        match action {
            Action::CreatePod(name) => {
                let pod: Pod = serde_json::from_value(json!({
                    "metadata": {"name": name, "namespace": s.namespace,
                                 "labels": {APP_LABEL: s.deployment}},
                    "spec": {"containers": [self.container()], "schedulerName": "plumb-emulator"}
                }))?;
                ignore_exists(pods.create(&post_params(), &pod).await)?;
            }
            Action::DeletePod(name) => {
                let gone = pods
                    .delete(name, &DeleteParams::default().grace_period(0))
                    .await;
                if let Err(e) = gone
                    && !is_status(&e, 404)
                {
                    return Err(e.into());
                }
            }
            Action::Bind { pod, node } => {
                let binding = json!({
                    "apiVersion": "v1", "kind": "Binding",
                    "metadata": {"name": pod},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": node}
                });
                let bound: kube::Result<Value> = pods
                    .create_subresource("binding", pod, &post_params(), &binding)
                    .await;
                // A pod bound already (an earlier tick whose answer was lost) stays bound.
                if let Err(e) = bound
                    && !is_status(&e, 409)
                {
                    return Err(e.into());
                }
                let status = json!({"status": {"phase": "Pending", "conditions": [
                    {"type": "PodScheduled", "status": "True"}
                ]}});
                pods.patch_status(pod, &patch_params(), &Patch::Merge(&status))
                    .await?;
            }
            Action::MarkUnschedulable(pod) => {
                let status = json!({"status": {"phase": "Pending", "conditions": [{
                    "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": "0/1 nodes are available: insufficient nvidia.com/gpu"
                }]}});
                pods.patch_status(pod, &patch_params(), &Patch::Merge(&status))
                    .await?;
            }
            Action::MarkReady(pod) => {
                let status = json!({"status": {"phase": "Running", "conditions": [
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Ready", "status": "True"}
                ]}});
                pods.patch_status(pod, &patch_params(), &Patch::Merge(&status))
                    .await?;
            }
            Action::StartLaunch(launch) => self.create_claim(*launch).await?,
            Action::CreateNode { launch, node } => {
                self.create_node(node).await?;
                self.claim_launched(*launch).await?;
            }
            Action::LaunchFailed(launch) => self.fail_launch(*launch).await?,
            Action::DeploymentStatus { replicas, ready } => {
                let deployments: Api<Deployment> =
                    Api::namespaced(self.client.clone(), &s.namespace);
                let status = json!({"status": {
                    "replicas": replicas, "readyReplicas": ready,
                    "availableReplicas": ready, "updatedReplicas": replicas
                }});
                deployments
                    .patch_status(&s.deployment, &patch_params(), &Patch::Merge(&status))
                    .await?;
            }
        }
        Ok(())
    }

    fn claims(&self) -> Api<DynamicObject> {
        Api::all_with(self.client.clone(), &karpenter("NodeClaim", "nodeclaims"))
    }

    async fn create_claim(&self, launch: Launch) -> Result<()> {
        let name = claim_name(&self.spec, launch);
        let mut claim = DynamicObject::new(&name, &karpenter("NodeClaim", "nodeclaims"));
        claim.metadata.labels = Some(BTreeMap::from([(
            NODEPOOL_LABEL.to_owned(),
            self.spec.pool.clone(),
        )]));
        claim.data = json!({"spec": {}});
        if let Err(e) = ignore_exists(self.claims().create(&post_params(), &claim).await) {
            tracing::warn!(error = %e, claim = name, "no NodeClaim (is Karpenter's CRD installed?)");
        }
        Ok(())
    }

    async fn claim_launched(&self, launch: Launch) -> Result<()> {
        let name = claim_name(&self.spec, launch);
        let status = json!({"status": {"conditions": [{
            "type": "Launched", "status": "True", "reason": "Launched",
            "lastTransitionTime": wall_clock_now()
        }]}});
        if let Err(e) = self
            .claims()
            .patch_status(&name, &patch_params(), &Patch::Merge(&status))
            .await
        {
            tracing::warn!(error = %e, claim = name, "cannot mark the NodeClaim launched");
        }
        Ok(())
    }

    /// Karpenter's way: an Event on the NodeClaim, then the NodeClaim deleted.
    async fn fail_launch(&self, launch: Launch) -> Result<()> {
        let name = claim_name(&self.spec, launch);
        let now = wall_clock_now();
        let event: Event = serde_json::from_value(json!({
            "metadata": {"name": format!("{name}.launch-failed"), "namespace": "default"},
            "involvedObject": {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": name},
            "reason": LAUNCH_FAILURE_REASON,
            "message": "launching nodeclaim: insufficient capacity",
            "type": "Warning",
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
            "source": {"component": "karpenter"}
        }))?;
        let events: Api<Event> = Api::namespaced(self.client.clone(), "default");
        ignore_exists(events.create(&post_params(), &event).await)?;
        if let Err(e) = self.claims().delete(&name, &DeleteParams::default()).await
            && !is_status(&e, 404)
        {
            tracing::warn!(error = %e, claim = name, "cannot delete the failed NodeClaim");
        }
        Ok(())
    }
}

/// The time now as RFC 3339 seconds (the Events' and conditions' clock: this host's, which
/// is the API server's).
fn wall_clock_now() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    utc_time::Timestamp::from_unix_nanos(i64::try_from(nanos).unwrap_or(i64::MAX)).to_rfc3339_secs()
}

fn pod_view(p: &Pod) -> PodView {
    let conditions = p
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let has = |type_: &str, status: &str, reason: Option<&str>| {
        conditions.iter().any(|c| {
            c.type_ == type_
                && c.status == status
                && reason.is_none_or(|r| c.reason.as_deref() == Some(r))
        })
    };
    PodView {
        name: p.metadata.name.clone().unwrap_or_default(),
        node: p.spec.as_ref().and_then(|s| s.node_name.clone()),
        ready: has("Ready", "True", None),
        unschedulable: has("PodScheduled", "False", Some("Unschedulable")),
    }
}

fn is_status(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}

/// A create that found the object there already is not an error for set-up.
fn ignore_exists<T>(result: kube::Result<T>) -> Result<()> {
    match result {
        Ok(_) => Ok(()),
        Err(e) if is_status(&e, 409) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
