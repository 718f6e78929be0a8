//! What the process reports: the Prometheus registry (`metrics`) and the `/metrics`, `/healthz`,
//! `/readyz` endpoints (`http`).

pub(crate) mod http;
pub mod metrics;
