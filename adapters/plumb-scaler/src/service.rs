//! The `externalscaler.ExternalScaler` service KEDA calls: every answer is read from the
//! [`FloorCache`] and the clock, nothing else.
//!
//! - `IsActive`: the served floor is above 0.
//! - `StreamIsActive`: the same, pushed (see [`crate::stream`]).
//! - `GetMetricSpec`: always the one metric `plumb-floor-<policy>` with target 1, even for a
//!   policy not (yet) in the cache: KEDA reads the spec when it builds the HPA, and a failed
//!   discovery can leave a recovered push scaler unable to activate (keda#8168).
//! - `GetMetrics`: the served floor.
//!
//! A policy this member has no copy of is `NotFound`, naming it; before the watchers have
//! listed once, `Unavailable`; a request naming no usable policy, `InvalidArgument`.

use std::sync::Arc;
use std::time::Duration;

use tonic::{Request, Response, Status};

use crate::clock::Clock;
use crate::floor::{FloorCache, PolicyKey, Served, Unanswerable};
use crate::proto::external_scaler_server::{ExternalScaler, ExternalScalerServer};
use crate::proto::{
    GetMetricSpecResponse, GetMetricsRequest, GetMetricsResponse, IsActiveResponse, MetricSpec,
    MetricValue, ScaledObjectRef,
};
use crate::request::{metric_name, policy_of, policy_of_metrics_request};
use crate::stream::{ActiveStream, active_stream};

/// How often `StreamIsActive` re-sends an unchanged answer (docs/plumb/scaler.md).
pub const RECHECK: Duration = Duration::from_secs(30);

/// The scaler service.
#[derive(Clone)]
pub struct Scaler {
    cache: FloorCache,
    clock: Arc<dyn Clock>,
    recheck: Duration,
}

impl Scaler {
    /// A service answering from `cache` at `clock`'s time.
    pub fn new(cache: FloorCache, clock: Arc<dyn Clock>) -> Self {
        Scaler {
            cache,
            clock,
            recheck: RECHECK,
        }
    }

    /// The tonic service to add to a server.
    pub fn into_server(self) -> ExternalScalerServer<Self> {
        ExternalScalerServer::new(self)
    }

    /// The floor served for `key` now, or the status that says why there is none.
    pub fn served(&self, key: &PolicyKey) -> Result<Served, Status> {
        let served = self.cache.snapshot().served(key, self.clock.now());
        if let Ok(Served {
            why_zero: Some(why),
            ..
        }) = &served
        {
            tracing::debug!(policy = %key, why, "serving 0");
        }
        served.map_err(|e| match e {
            Unanswerable::NotSynced => Status::unavailable(crate::server::NOT_LISTED),
            Unanswerable::UnknownPolicy(key) => {
                Status::not_found(format!("AdaptivePolicy {key}: not found in this cluster"))
            }
        })
    }

    /// The `GetMetrics` answer for `key`.
    pub fn metrics(&self, key: &PolicyKey) -> Result<GetMetricsResponse, Status> {
        let served = self.served(key)?;
        Ok(GetMetricsResponse {
            metric_values: vec![MetricValue {
                metric_name: metric_name(key),
                metric_value: i64::from(served.floor),
                metric_value_float: f64::from(served.floor),
            }],
        })
    }
}

#[tonic::async_trait]
impl ExternalScaler for Scaler {
    async fn is_active(
        &self,
        request: Request<ScaledObjectRef>,
    ) -> Result<Response<IsActiveResponse>, Status> {
        let key = policy_of(request.get_ref())?;
        let served = self.served(&key)?;
        Ok(Response::new(IsActiveResponse {
            result: served.floor > 0,
        }))
    }

    type StreamIsActiveStream = ActiveStream;

    async fn stream_is_active(
        &self,
        request: Request<ScaledObjectRef>,
    ) -> Result<Response<Self::StreamIsActiveStream>, Status> {
        let key = policy_of(request.get_ref())?;
        if let Err(status) = self.served(&key)
            && status.code() == tonic::Code::NotFound
        {
            return Err(status);
        }
        Ok(Response::new(active_stream(
            key,
            self.cache.subscribe(),
            self.clock.clone(),
            self.recheck,
        )))
    }

    async fn get_metric_spec(
        &self,
        request: Request<ScaledObjectRef>,
    ) -> Result<Response<GetMetricSpecResponse>, Status> {
        let key = policy_of(request.get_ref())?;
        Ok(Response::new(GetMetricSpecResponse {
            metric_specs: vec![MetricSpec {
                metric_name: metric_name(&key),
                target_size: 1,
                target_size_float: 1.0,
            }],
        }))
    }

    async fn get_metrics(
        &self,
        request: Request<GetMetricsRequest>,
    ) -> Result<Response<GetMetricsResponse>, Status> {
        let key = policy_of_metrics_request(request.get_ref())?;
        self.metrics(&key).map(Response::new)
    }
}
