//! scheduler-model: a deterministic model of the kube-scheduler v1.35.4 default profile and of
//! the OME scheduler's OMEGangPack plugin. Given a cluster (nodes, bound and pending pods,
//! namespaces, workload selectors, PodGroups) and pods to place, it says where they would land
//! (`Feasible`), that they would not (`Infeasible`), or that the model cannot say
//! (`Unsupported`), applying the scheduler's hard constraints (resources incl. extended ones
//! such as GPUs, node selector and affinity, taints and tolerations, pod (anti-)affinity,
//! topology spread, host ports) and its scores. Pure: no IO, no clock, no randomness; ties go
//! to the smallest node name.
//!
//! It is product-neutral: alfred predicts where a move's replacement pods land with it, and
//! Plumb counts how many replicas still fit on a cluster's nodes.
//!
//! Entry points:
//! * [`objects`]: Kubernetes-shaped serde types (Node, Pod, …) that deserialize from the API's
//!   JSON, and the [`Cluster`] they form;
//! * [`load_config`] / [`Profile`]: a KubeSchedulerConfiguration, validated and defaulted;
//! * [`PreparedCluster::new`] (or [`PreparedCluster::from_view`] over borrowed objects) +
//!   [`PreparedCluster::simulate`]: a cluster converted once, against which many placements are
//!   simulated; [`simulate`] does both for one placement;
//! * [`PreparedCluster::place`] and [`PreparedCluster::count_fitting`]: room questions (place a
//!   pod and keep it, count the copies that still fit on some nodes); [`RoomCluster`] answers
//!   the same questions on a compact conversion, for pods that read no other pod's labels;
//!   [`BoundPod`] is a bound pod read once for it, for callers that keep a cluster's pods.

#![warn(missing_docs, unreachable_pub)]

pub mod bound;
pub mod clip;
pub mod config;
pub mod engine;
mod gang;
pub mod model;
pub mod names;
pub mod objects;
pub mod outcome;
pub mod plugins;
pub mod quantity;

/// The scheduler name of pods that name none.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

pub use bound::{BoundPod, Interner};
pub use config::{ConfigError, Profile, load_config};
pub use engine::{
    Checkpoint, ClusterView, InputError, MoveInput, Outcome, PodPlacement, PreparedCluster,
    RoomCluster, occupants,
};
pub use gang::is_gpu_resource;
pub use objects::Cluster;
pub use outcome::{Cause, Decision, Failure, SchedulingReason, SchedulingStatus, WorkerReason};
pub use plugins::SCHEDULER_VERSION;

/// Simulates one placement in-process: converts `cluster` and places `input`'s pods. For
/// several placements against the same cluster, build a [`PreparedCluster`] once instead.
pub fn simulate(
    profile: &Profile,
    cluster: &Cluster,
    input: &MoveInput<'_>,
) -> Result<Outcome, InputError> {
    PreparedCluster::new(cluster, &profile.scheduler_name)?.simulate(profile, input, &mut || false)
}
