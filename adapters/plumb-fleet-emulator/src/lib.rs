//! What a Plumb member cluster has that a bare test API server lacks, for the live fleet tests
//! and `cargo xtask plumb-fleet`: no scheduler, kubelet, controller-manager, Karpenter or KEDA
//! runs there. [`cluster`] plays all but KEDA for one workload (it creates the Deployment's
//! pods, binds them to nodes while room lasts, launches pool nodes after a delay or fails to,
//! and marks pods ready after a load time); [`keda`] does what KEDA does with an
//! `external-push` trigger (asks `plumb scaler` for the metric each polling interval and sets
//! the Deployment's replicas by the HPA's arithmetic); [`prometheus`] answers each member's
//! instant queries from a script; [`scenario`] is the borrowing story the live fleet test and
//! `cargo xtask plumb-fleet` play over them; [`fleet`] starts and prepares the member API
//! servers they run on.
//!
//! Each is a pure planner (observed objects and a time in, actions out: unit-tested) and a thin
//! loop that reads the API server and carries the actions out.

#![warn(missing_docs, unreachable_pub)]

pub mod cluster;
pub mod fleet;
pub mod keda;
pub mod prometheus;
pub mod scenario;
