//! What the process reports: the Prometheus registry (`metrics`). The `alfred` binary serves it
//! on `/metrics` (with `/healthz` and `/readyz`) through the shared `metrics-endpoint` crate.

pub mod metrics;
