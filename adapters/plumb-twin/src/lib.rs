//! plumb-twin: Plumb's fleet twin. A simulated fleet of member clusters (static GPU nodes,
//! Karpenter NodePools, KEDA's HPA, model servers as queues, Prometheus with its lag) serves
//! the Azure LLM inference traces of 2023, while Plumb's real member report and hub step run
//! in the loop, against three baselines on the same arrivals. Model and assumptions:
//! docs/plumb/twin.md.

pub mod arrivals;
pub mod caretakers;
pub mod cluster;
pub mod engine;
pub mod figures;
pub mod fleet;
pub mod observe;
pub mod prom;
pub mod queue;
pub mod report;
pub mod rng;
pub mod scenario;
pub mod svg;
pub mod sweep;
pub mod trace;
