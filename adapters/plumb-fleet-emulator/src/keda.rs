//! What KEDA does with an `external-push` trigger on `plumb scaler`, and what the HPA it
//! creates then does: each polling interval `GetMetricSpec` and `GetMetrics`, then the HPA's
//! arithmetic for an `AverageValue` external metric (`ceil(value / target)` replicas, no
//! change within the 10 % tolerance), the largest of all triggers' answers, clamped to
//! `[minReplicaCount, maxReplicaCount]`, written to the Deployment's replicas.
//!
//! [`hpa_desired`] is the arithmetic (pure); [`KedaClient`] the calls and the write.

use std::collections::HashMap;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use plumb_scaler::proto::external_scaler_client::ExternalScalerClient;
use plumb_scaler::proto::{GetMetricsRequest, ScaledObjectRef};
use tonic::transport::Channel;

/// The HPA's tolerance: a usage ratio within 10 % of 1 changes nothing.
pub const TOLERANCE: f64 = 0.1;

/// One external metric's answer: its value and its `AverageValue` target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetricAnswer {
    /// The value KEDA read.
    pub value: f64,
    /// The target (Plumb's is 1).
    pub target: f64,
}

/// The replicas the HPA sets: for each metric `ceil(value / target)`, unless the usage ratio
/// `value / (target × current)` is within [`TOLERANCE`] of 1 (then `current`); the largest of
/// those and `others` (what the workload's other triggers want), clamped to `[min, max]`.
pub fn hpa_desired(current: u32, metrics: &[MetricAnswer], others: u32, min: u32, max: u32) -> u32 {
    let mut desired = others;
    for m in metrics {
        if !(m.value.is_finite() && m.target > 0.0) {
            continue;
        }
        let ratio = m.value / (m.target * f64::from(current.max(1)));
        let want = if current > 0 && (ratio - 1.0).abs() <= TOLERANCE {
            current
        } else {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let replicas = (m.value / m.target)
                .ceil()
                .max(0.0)
                .min(f64::from(u32::MAX)) as u32;
            replicas
        };
        desired = desired.max(want);
    }
    desired.clamp(min, max.max(min))
}

/// A ScaledObject with one `external-push` trigger on `plumb scaler`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaledObject {
    /// Its name (KEDA passes it to the scaler).
    pub name: String,
    /// Its namespace, the Deployment's.
    pub namespace: String,
    /// The Deployment it scales.
    pub deployment: String,
    /// The trigger's `policy`.
    pub policy: String,
    /// `minReplicaCount`.
    pub min_replicas: u32,
    /// `maxReplicaCount`.
    pub max_replicas: u32,
}

/// KEDA's side of the conversation with one member's scaler, for one ScaledObject.
#[derive(Clone)]
pub struct KedaClient {
    scaler: ExternalScalerClient<Channel>,
    kube: Client,
    object: ScaledObject,
}

impl std::fmt::Debug for KedaClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KedaClient")
            .field("object", &self.object)
            .finish_non_exhaustive()
    }
}

impl KedaClient {
    /// Connects to the scaler at `endpoint` (`http://127.0.0.1:6000`).
    pub async fn connect(endpoint: String, kube: Client, object: ScaledObject) -> Result<Self> {
        let scaler = ExternalScalerClient::connect(endpoint.clone())
            .await
            .with_context(|| format!("connecting to the scaler at {endpoint}"))?;
        Ok(KedaClient {
            scaler,
            kube,
            object,
        })
    }

    fn reference(&self) -> ScaledObjectRef {
        ScaledObjectRef {
            name: self.object.name.clone(),
            namespace: self.object.namespace.clone(),
            scaler_metadata: HashMap::from([("policy".to_owned(), self.object.policy.clone())]),
        }
    }

    /// The served floor now: `GetMetricSpec`, then `GetMetrics` for its one metric.
    pub async fn floor(&mut self) -> Result<MetricAnswer> {
        let spec = self
            .scaler
            .get_metric_spec(self.reference())
            .await
            .context("GetMetricSpec")?
            .into_inner();
        let Some(metric) = spec.metric_specs.first() else {
            bail!("GetMetricSpec returned no metric");
        };
        let target = if metric.target_size_float > 0.0 {
            metric.target_size_float
        } else {
            #[allow(clippy::cast_precision_loss)]
            let t = metric.target_size as f64;
            t
        };
        let values = self
            .scaler
            .get_metrics(GetMetricsRequest {
                scaled_object_ref: Some(self.reference()),
                metric_name: metric.metric_name.clone(),
            })
            .await
            .context("GetMetrics")?
            .into_inner();
        let Some(value) = values.metric_values.first() else {
            bail!("GetMetrics returned no value");
        };
        let value = if value.metric_value_float != 0.0 {
            value.metric_value_float
        } else {
            #[allow(clippy::cast_precision_loss)]
            let v = value.metric_value as f64;
            v
        };
        Ok(MetricAnswer { value, target })
    }

    /// One polling interval: asks the scaler, computes the HPA's replicas with `others` (what
    /// the workload's own triggers want) and writes them when they differ. Returns (floor
    /// served, replicas set).
    pub async fn sync(&mut self, others: u32) -> Result<(f64, u32)> {
        let answer = self.floor().await?;
        let deployments: Api<Deployment> =
            Api::namespaced(self.kube.clone(), &self.object.namespace);
        let current = deployments
            .get(&self.object.deployment)
            .await
            .context("reading the Deployment")?
            .spec
            .and_then(|s| s.replicas)
            .unwrap_or(1);
        let current = u32::try_from(current.max(0)).unwrap_or(0);
        let desired = hpa_desired(
            current,
            &[answer],
            others,
            self.object.min_replicas,
            self.object.max_replicas,
        );
        if desired != current {
            // The HPA writes the scale subresource; a merge patch of spec.replicas is the same.
            let patch = serde_json::json!({"spec": {"replicas": desired}});
            deployments
                .patch(
                    &self.object.deployment,
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
                .context("setting the Deployment's replicas")?;
        }
        Ok((answer.value, desired))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floor(value: f64) -> MetricAnswer {
        MetricAnswer { value, target: 1.0 }
    }

    #[test]
    fn a_floor_above_the_workloads_own_wish_sets_the_replicas() {
        assert_eq!(hpa_desired(2, &[floor(5.0)], 2, 1, 10), 5);
    }

    #[test]
    fn the_largest_trigger_wins_and_the_bounds_clamp() {
        assert_eq!(hpa_desired(2, &[floor(3.0)], 6, 1, 10), 6);
        assert_eq!(hpa_desired(2, &[floor(30.0)], 2, 1, 10), 10);
        assert_eq!(hpa_desired(2, &[floor(0.0)], 0, 1, 10), 1);
    }

    #[test]
    fn within_the_tolerance_nothing_changes() {
        // 10.5 / (1 × 10) = 1.05: within 10 %.
        assert_eq!(hpa_desired(10, &[floor(10.5)], 0, 1, 20), 10);
        assert_eq!(hpa_desired(10, &[floor(11.5)], 0, 1, 20), 12);
    }

    #[test]
    fn a_nan_or_zero_target_answer_is_ignored() {
        assert_eq!(hpa_desired(3, &[floor(f64::NAN)], 3, 1, 10), 3);
        let zero_target = MetricAnswer {
            value: 5.0,
            target: 0.0,
        };
        assert_eq!(hpa_desired(3, &[zero_target], 3, 1, 10), 3);
    }
}
