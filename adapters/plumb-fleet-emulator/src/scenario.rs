//! The borrowing story the live fleet test and `cargo xtask plumb-fleet` play: members `a`, `b`,
//! `c`… each run the workload `serving/llm` behind one HTTPRoute (in the first member) whose
//! backends are `llm-<member>`. The first member gets all traffic and has one node of its own
//! and a NodePool at its limit; the others have room. When the load rises, the first member
//! stays short, so the hub borrows replicas in the others (floors served by their scalers, set
//! by their KEDA clients, bound and made ready by their emulators) and moves traffic to them.
//!
//! Each member's demand is the fleet's load times its route share, so moving traffic relieves
//! the short member as it would in production; its own autoscaler wants
//! `ceil(demand / replicaCapacity)` replicas, and KEDA adds the hub's floor to that wish.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::cluster::{Action, ClusterEmulator, ClusterSpec};
use crate::keda::{KedaClient, ScaledObject};
use crate::prometheus::{FakePrometheus, Scripted};

/// The workload's namespace in every member.
pub const NAMESPACE: &str = "serving";
/// The workload's Deployment, its AdaptivePolicy and its HTTPRoute.
pub const WORKLOAD: &str = "llm";
/// The demand signal's query (what the fake Prometheus answers).
pub const DEMAND_QUERY: &str = r#"sum(rate(vllm:request_success_total{model_name="llm"}[1m]))"#;
/// Requests per second one replica serves.
pub const REPLICA_CAPACITY: f64 = 10.0;
/// Each member's most replicas (the policy's `maxReplicas` and KEDA's `maxReplicaCount`).
pub const MAX_REPLICAS: u32 = 8;

/// The policy's timings: short, so the story plays in a minute or two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoryTiming {
    /// `escalation.after`.
    pub after: &'static str,
    /// `escalation.earlyAfter`.
    pub early_after: &'static str,
    /// `escalation.cooldown`.
    pub cooldown: &'static str,
    /// `escalation.calmFor`.
    pub calm_for: &'static str,
    /// `escalation.readyTimeout`.
    pub ready_timeout: &'static str,
}

impl Default for StoryTiming {
    fn default() -> Self {
        StoryTiming {
            after: "20s",
            early_after: "5s",
            cooldown: "5s",
            calm_for: "2m",
            ready_timeout: "2m",
        }
    }
}

/// One member's emulated cluster in the story: the first is short, the others have room.
pub fn cluster_spec(member: &str, first: bool) -> ClusterSpec {
    ClusterSpec {
        cluster: member.to_owned(),
        namespace: NAMESPACE.to_owned(),
        deployment: WORKLOAD.to_owned(),
        gpus_per_replica: 4,
        gpus_per_node: 8,
        region: format!("region-{member}"),
        pool: format!("gpu-{member}"),
        static_nodes: if first { 1 } else { 2 },
        pool_max_nodes: if first { 0 } else { 2 },
        launch_delay: Duration::from_secs(10),
        launch_failures: 0,
        load_time: Duration::from_secs(5),
    }
}

/// The AdaptivePolicy every member gets (the same spec everywhere), in `mode`.
pub fn policy(members: &[String], mode: &str, timing: StoryTiming) -> Value {
    let clusters: Vec<Value> = members
        .iter()
        .enumerate()
        .map(|(i, m)| {
            json!({
                "name": m,
                "nodePools": [format!("gpu-{m}")],
                "maxReplicas": MAX_REPLICAS,
                "weight": if i == 0 { 100 } else { 0 },
                "backend": {"name": format!("{WORKLOAD}-{m}")},
            })
        })
        .collect();
    json!({
        "apiVersion": "plumb-k8s.github.io/v1alpha1",
        "kind": "AdaptivePolicy",
        "metadata": {"name": WORKLOAD, "namespace": NAMESPACE},
        "spec": {
            "mode": mode,
            "workload": {"name": WORKLOAD},
            "clusters": clusters,
            "signals": {"demand": DEMAND_QUERY},
            "capacity": {"replicaCapacity": REPLICA_CAPACITY, "step": 2},
            "escalation": {
                "after": timing.after,
                "earlyAfter": timing.early_after,
                "cooldown": timing.cooldown,
                "calmFor": timing.calm_for,
                "readyTimeout": timing.ready_timeout,
            },
            "traffic": {
                "routes": [{"cluster": members[0], "name": WORKLOAD}],
                "stepPercent": 20
            }
        }
    })
}

/// The HTTPRoute in the first member: one rule, a backend per member, all traffic on the first.
pub fn route(members: &[String]) -> Value {
    let backends: Vec<Value> = members
        .iter()
        .enumerate()
        .map(|(i, m)| {
            json!({"name": format!("{WORKLOAD}-{m}"), "port": 8000,
                   "weight": if i == 0 { 100 } else { 0 }})
        })
        .collect();
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": WORKLOAD, "namespace": NAMESPACE},
        "spec": {"rules": [{"backendRefs": backends}]}
    })
}

/// The route weights by member, read from the route's first rule.
pub fn weights_of(route: &Value, members: &[String]) -> BTreeMap<String, u32> {
    let refs = route["spec"]["rules"][0]["backendRefs"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    members
        .iter()
        .map(|m| {
            let backend = format!("{WORKLOAD}-{m}");
            let weight = refs
                .iter()
                .find(|r| r["name"] == backend.as_str())
                .and_then(|r| r["weight"].as_u64())
                .unwrap_or(1);
            (m.clone(), u32::try_from(weight).unwrap_or(u32::MAX))
        })
        .collect()
}

/// Splits the fleet's load by route share (weights that sum to 0 send everything to the
/// first member, as a route with no weights would not; the story never gets there).
pub fn demand_by_member(load: f64, weights: &BTreeMap<String, u32>) -> BTreeMap<String, f64> {
    let total: u32 = weights.values().sum();
    weights
        .iter()
        .map(|(m, w)| {
            let share = if total == 0 {
                0.0
            } else {
                f64::from(*w) / f64::from(total)
            };
            (m.clone(), load * share)
        })
        .collect()
}

/// What a member's own autoscaler wants for `demand`: `ceil(demand / replicaCapacity)`.
pub fn own_wish(demand: f64) -> u32 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let replicas = (demand / REPLICA_CAPACITY).ceil().clamp(0.0, 1_000.0) as u32;
    replicas
}

fn resource(api_version: &str, kind: &str, plural: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// Server-side applies `object` (namespaced when its metadata names a namespace).
pub async fn apply(
    client: &Client,
    api_version_kind_plural: (&str, &str, &str),
    object: &Value,
) -> Result<()> {
    let (api_version, kind, plural) = api_version_kind_plural;
    let ar = resource(api_version, kind, plural);
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    let params = PatchParams::apply("plumb-fleet-emulator").force();
    api.patch(name, &params, &Patch::Apply(object))
        .await
        .with_context(|| format!("applying {kind} {name}"))?;
    Ok(())
}

/// One member of the running story.
pub struct StoryMember {
    /// Its name.
    pub name: String,
    /// Its API server (admin).
    pub client: Client,
    /// Its cluster.
    pub emulator: ClusterEmulator,
    /// Its Prometheus.
    pub prometheus: FakePrometheus,
    /// KEDA, once its scaler's address is known.
    pub keda: Option<KedaClient>,
}

/// What one tick saw and did, per member.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TickView {
    /// The route weights read.
    pub weights: BTreeMap<String, u32>,
    /// Each member's demand.
    pub demand: BTreeMap<String, f64>,
    /// Each member's served floor and replicas set by KEDA (when attached and answering).
    pub keda: BTreeMap<String, (f64, u32)>,
    /// The emulators' actions (status writes left out).
    pub actions: BTreeMap<String, Vec<Action>>,
}

/// The story running over real API servers.
pub struct Story {
    /// Members in order (the first is short and holds the route).
    pub members: Vec<StoryMember>,
}

impl std::fmt::Debug for Story {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.members.iter().map(|m| m.name.as_str()).collect();
        f.debug_struct("Story").field("members", &names).finish()
    }
}

impl Story {
    /// The story over `members` (name, admin client); nothing is written yet.
    pub fn new(members: Vec<(String, Client)>) -> Story {
        let members = members
            .into_iter()
            .enumerate()
            .map(|(i, (name, client))| StoryMember {
                emulator: ClusterEmulator::new(client.clone(), cluster_spec(&name, i == 0)),
                prometheus: FakePrometheus::new(),
                keda: None,
                name,
                client,
            })
            .collect();
        Story { members }
    }

    /// The members' names.
    pub fn names(&self) -> Vec<String> {
        self.members.iter().map(|m| m.name.clone()).collect()
    }

    /// Writes everything the story starts from, after clearing what an earlier run left: the
    /// namespace, each cluster (Deployment of one replica, NodePool, nodes), the policy in every
    /// member (`mode`, its status cleared), and the route.
    pub async fn install(&mut self, mode: &str, timing: StoryTiming) -> Result<()> {
        let names = self.names();
        let policies = resource(
            "plumb-k8s.github.io/v1alpha1",
            "AdaptivePolicy",
            "adaptivepolicies",
        );
        for m in &mut self.members {
            m.emulator.reset().await?;
            let api: Api<DynamicObject> =
                Api::namespaced_with(m.client.clone(), NAMESPACE, &policies);
            if let Err(e) = api
                .delete(WORKLOAD, &kube::api::DeleteParams::default())
                .await
                && !matches!(&e, kube::Error::Api(s) if s.code == 404)
            {
                return Err(e.into());
            }
        }
        for m in &self.members {
            apply(
                &m.client,
                ("v1", "Namespace", "namespaces"),
                &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
            )
            .await?;
            m.emulator.set_up(1).await?;
            apply(
                &m.client,
                (
                    "plumb-k8s.github.io/v1alpha1",
                    "AdaptivePolicy",
                    "adaptivepolicies",
                ),
                &policy(&names, mode, timing),
            )
            .await?;
        }
        apply(
            &self.members[0].client,
            ("gateway.networking.k8s.io/v1", "HTTPRoute", "httproutes"),
            &route(&names),
        )
        .await
    }

    /// Connects member `i`'s KEDA client to its scaler at `endpoint` (`http://HOST:PORT`).
    pub async fn attach_keda(&mut self, i: usize, endpoint: String) -> Result<()> {
        let m = &mut self.members[i];
        let object = ScaledObject {
            name: WORKLOAD.to_owned(),
            namespace: NAMESPACE.to_owned(),
            deployment: WORKLOAD.to_owned(),
            policy: WORKLOAD.to_owned(),
            min_replicas: 1,
            max_replicas: MAX_REPLICAS,
        };
        m.keda = Some(KedaClient::connect(endpoint, m.client.clone(), object).await?);
        Ok(())
    }

    /// Reads the route's weights.
    pub async fn weights(&self) -> Result<BTreeMap<String, u32>> {
        let ar = resource("gateway.networking.k8s.io/v1", "HTTPRoute", "httproutes");
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.members[0].client.clone(), NAMESPACE, &ar);
        let route = api.get(WORKLOAD).await.context("reading the route")?;
        let value = serde_json::to_value(route)?;
        Ok(weights_of(&value, &self.names()))
    }

    /// One tick at `elapsed` with the fleet's `load` (requests per second): demand by route
    /// share into each Prometheus, then each KEDA client, then each emulator.
    pub async fn tick(&mut self, elapsed: Duration, load: f64) -> Result<TickView> {
        let weights = self.weights().await?;
        let demand = demand_by_member(load, &weights);
        let mut view = TickView {
            weights,
            demand: demand.clone(),
            ..TickView::default()
        };
        for m in &mut self.members {
            let d = demand.get(&m.name).copied().unwrap_or(0.0);
            m.prometheus.set(DEMAND_QUERY, Scripted::Value(d));
            if let Some(keda) = m.keda.as_mut() {
                match keda.sync(own_wish(d)).await {
                    Ok(answer) => {
                        view.keda.insert(m.name.clone(), answer);
                    }
                    Err(e) => {
                        tracing::warn!(member = m.name, error = %format!("{e:#}"), "KEDA could not ask the scaler")
                    }
                }
            }
            let actions = m.emulator.tick(elapsed).await?;
            let changes: Vec<Action> = actions
                .into_iter()
                .filter(|a| !matches!(a, Action::DeploymentStatus { .. }))
                .collect();
            view.actions.insert(m.name.clone(), changes);
        }
        Ok(view)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec!["a".into(), "b".into(), "c".into()]
    }

    #[test]
    fn the_policy_reads_as_a_valid_adaptive_policy_with_all_traffic_on_the_first() {
        let text =
            serde_json::to_string(&policy(&names(), "auto", StoryTiming::default())).unwrap();
        assert!(text.contains(r#""weight":100"#));
        assert_eq!(
            route(&names())["spec"]["rules"][0]["backendRefs"][1]["name"],
            "llm-b"
        );
    }

    #[test]
    fn demand_follows_the_route_share() {
        let weights = weights_of(&route(&names()), &names());
        assert_eq!(
            weights,
            BTreeMap::from([("a".into(), 100), ("b".into(), 0), ("c".into(), 0)])
        );
        let split = demand_by_member(60.0, &BTreeMap::from([("a".into(), 50), ("b".into(), 50)]));
        assert_eq!(split["a"], 30.0);
        assert_eq!(own_wish(31.0), 4);
        assert_eq!(own_wish(0.0), 0);
    }
}
