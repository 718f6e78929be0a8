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

pub mod clip;
pub mod config;
pub mod engine;
mod gang;
pub mod identity;
pub mod model;
pub mod objects;
pub mod outcome;
pub mod plugins;
pub mod quantity;
pub mod selection;
pub mod wire;
pub mod workers;

/// The scheduler name of pods that name none.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

pub use config::{ConfigError, Profile, load_config};
pub use engine::{InputError, MoveInput, Outcome, PodPlacement, PreparedCluster};
pub use gang::is_gpu_resource;
pub use identity::{
    BuildInfo, Identity, PrintedProfile, canonical_json, configuration_id, printed_profile,
    sha256_hex,
};
pub use objects::Cluster;
pub use outcome::{Cause, Decision, Failure, SchedulingReason, SchedulingStatus, WorkerReason};
pub use plugins::SCHEDULER_VERSION;
pub use selection::{ProfileConfig, Selected, TemplateFacts, select_profile};
pub use wire::{
    Evaluation, Placement, PodRef, RequestError, SimulationRequest, SimulationResult,
    cluster_from_objects, cluster_objects, decode_request, decode_result, encode_request,
    encode_result, evaluate, validate_result,
};
pub use workers::{ProbeError, WorkerEntry, WorkersError, WorkersFile, check_probe, parse_workers};

/// Simulates one move in-process: converts `cluster` and places `input`'s replacement pods.
/// For several moves against the same cluster, build a [`PreparedCluster`] once instead.
pub fn simulate(
    profile: &Profile,
    cluster: &Cluster,
    input: &MoveInput<'_>,
) -> Result<Outcome, InputError> {
    PreparedCluster::new(cluster, &profile.scheduler_name)?.simulate(profile, input, &mut || false)
}
