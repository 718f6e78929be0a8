//! alfred-sim: a deterministic model of the kube-scheduler v1.35.4 default profile and of the
//! OME scheduler's OMEGangPack plugin, answering where the replacement pods of a move would
//! land (`Feasible`), that they would not (`Infeasible`), or that the model cannot say
//! (`Unsupported`). Pure: no IO, no clock, no randomness.
//!
//! Entry points:
//! * [`load_config`] / [`Profile`]: a KubeSchedulerConfiguration, validated and defaulted;
//! * [`printed_profile`] / [`configuration_id`]: the worker identity;
//! * [`PreparedCluster::new`] + [`PreparedCluster::simulate`]: the model, in-process;
//! * [`evaluate`]: the wire protocol (`SimulationRequest` → `SimulationResult`);
//! * [`parse_workers`] / [`check_probe`]: `workers.json` and the startup probe;
//! * [`select_profile`]: which profile simulates an Instance, or the reason none does.
//!
//! # Example
//!
//! Where would a 1-GPU replacement pod land if its node `gpu-a` is excluded?
//!
//! ```
//! use std::collections::BTreeSet;
//!
//! use alfred_sim::objects::{Cluster, Node, Pod};
//! use alfred_sim::{Decision, MoveInput, Profile, simulate};
//! use serde_json::json;
//!
//! let node = |name: &str| -> Node {
//!     serde_json::from_value(json!({
//!         "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
//!         "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110",
//!                                    "nvidia.com/gpu": "8"}}
//!     }))
//!     .unwrap()
//! };
//! let replacement: Pod = serde_json::from_value(json!({
//!     "metadata": {"namespace": "default", "name": "chat-0", "uid": "u-chat-0"},
//!     "spec": {"containers": [{"name": "engine", "image": "engine:1", "resources":
//!         {"requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}}}]}
//! }))?;
//! let cluster = Cluster { nodes: vec![node("gpu-a"), node("gpu-b")], ..Cluster::default() };
//! let excluded: BTreeSet<String> = ["gpu-a".to_owned()].into();
//! let input = MoveInput {
//!     replacement_pods: std::slice::from_ref(&replacement),
//!     excluded_nodes: &excluded,
//!     require_gang: false,
//! };
//! let outcome = simulate(&Profile::default_scheduler(), &cluster, &input)?;
//! assert_eq!(outcome.decision, Decision::Feasible);
//! assert_eq!(outcome.placements[0].node_name, "gpu-b");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs, unreachable_pub)]

pub mod identity;
pub mod selection;
pub mod wire;
pub mod workers;

// The scheduler model itself lives in the product-neutral `scheduler-model` crate; its modules
// and root items are re-exported so every `alfred_sim::…` path keeps working.
pub use scheduler_model::{
    DEFAULT_SCHEDULER_NAME, clip, config, engine, model, objects, outcome, plugins, quantity,
    simulate,
};

pub use config::{ConfigError, Profile, load_config};
pub use engine::{InputError, MoveInput, Outcome, PodPlacement, PreparedCluster};
pub use identity::{
    BuildInfo, Identity, PrintedProfile, canonical_json, configuration_id, printed_profile,
    sha256_hex,
};
pub use objects::Cluster;
pub use outcome::{Cause, Decision, Failure, SchedulingReason, SchedulingStatus, WorkerReason};
pub use plugins::SCHEDULER_VERSION;
pub use scheduler_model::is_gpu_resource;
pub use selection::{ProfileConfig, Selected, TemplateFacts, select_profile};
pub use wire::{
    Evaluation, Placement, PodRef, RequestError, SimulationRequest, SimulationResult,
    cluster_from_objects, cluster_objects, decode_request, decode_result, encode_request,
    encode_result, evaluate, validate_result,
};
pub use workers::{ProbeError, WorkerEntry, WorkersError, WorkersFile, check_probe, parse_workers};
