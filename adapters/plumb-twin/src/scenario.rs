//! The named scenarios (docs/plumb/twin.md#scenarios): the fleet, its load and what goes
//! wrong when, and the policy Plumb runs with. Everything here that is not in the trace (rates,
//! diurnal curves, bursts, capacity shortages, slowdowns) is synthetic and labelled so.

use plumb_model::AdaptivePolicy;
use serde_json::{Value, json};

/// One member cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterSetup {
    /// Cluster name (ClusterProfile name).
    pub name: String,
    /// Region (`topology.kubernetes.io/region` of its nodes).
    pub region: String,
    /// Hours the region's clock is behind UTC (its diurnal peak is at 14:00 local).
    pub utc_offset_hours: f64,
    /// Its own users' arrival rate at the diurnal peak, requests/s (synthetic scale).
    pub peak_rate: f64,
    /// Steady share of the fleet's traffic in percent.
    pub weight: u32,
    /// Static GPU nodes registered with `nodeSelector` (outside any NodePool).
    pub static_nodes: u32,
    /// The NodePool's GPU limit (0: no NodePool).
    pub pool_gpus: u32,
    /// `clusters[].maxReplicas` and the ScaledObject's `maxReplicaCount`.
    pub max_replicas: u32,
    /// The ScaledObject's `minReplicaCount`.
    pub min_replicas: u32,
}

/// A scripted regional burst: the region's users send `factor` times their rate (ramping
/// over five minutes at each end).
#[derive(Debug, Clone, PartialEq)]
pub struct Burst {
    /// Region.
    pub region: String,
    /// Start, minutes from the run's start.
    pub start_min: f64,
    /// End, minutes from the run's start.
    pub end_min: f64,
    /// Rate multiplier at full strength.
    pub factor: f64,
}

/// A window in which every NodePool launch in a region fails for want of capacity.
#[derive(Debug, Clone, PartialEq)]
pub struct Shortage {
    /// Region.
    pub region: String,
    /// Start, minutes.
    pub start_min: f64,
    /// End, minutes.
    pub end_min: f64,
}

/// Periodic slowdowns of one cluster's replicas (a noisy neighbour): service time times
/// `factor` for `on_min` out of every `period_min` minutes, from `start_min` to `end_min`.
#[derive(Debug, Clone, PartialEq)]
pub struct Slowdown {
    /// Cluster.
    pub cluster: String,
    /// First slowdown, minutes.
    pub start_min: f64,
    /// No slowdown starts after this, minutes.
    pub end_min: f64,
    /// Minutes between slowdown starts.
    pub period_min: f64,
    /// Minutes each slowdown lasts.
    pub on_min: f64,
    /// Service-time multiplier while slowed.
    pub factor: f64,
}

/// The modelled workload and infrastructure, the same for every cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSetup {
    /// GPUs one replica requests.
    pub gpus_per_replica: u32,
    /// GPUs of one node (static or NodePool).
    pub gpus_per_node: u32,
    /// Requests one replica serves at once (continuous batching).
    pub slots_per_replica: u32,
    /// Prompt tokens per second one request's prefill runs at.
    pub prefill_tokens_per_s: f64,
    /// Seconds per generated token.
    pub seconds_per_token: f64,
    /// Model load time from bound to ready: uniform in this range, seconds.
    pub load_secs: (f64, f64),
    /// NodePool launch delay: log-normal median and sigma, seconds.
    pub launch_median_secs: f64,
    /// Sigma of the launch delay's logarithm.
    pub launch_sigma: f64,
    /// A launch that fails for want of capacity fails after this many seconds (uniform).
    pub launch_fail_secs: (f64, f64),
    /// Karpenter's `consolidateAfter` for an empty NodePool node, seconds.
    pub consolidate_after_secs: f64,
    /// The autoscaler's target demand per replica, requests/s.
    pub target_per_replica: f64,
    /// The HPA's scale-down stabilisation window, seconds.
    pub stabilization_secs: u64,
    /// The HPA's sync period, seconds.
    pub hpa_sync_secs: u64,
    /// Prometheus scrape interval, seconds.
    pub scrape_secs: u64,
    /// Query window (`rate(…[1m])`), seconds.
    pub window_secs: u64,
    /// Waiting requests per ready replica beyond which arrivals are dropped.
    pub queue_per_replica: u32,
    /// A request waiting longer than this is dropped (client timeout), seconds.
    pub timeout_secs: f64,
    /// Latency SLO on the TTFT p95 proxy, seconds.
    pub latency_slo: f64,
    /// Error-rate SLO.
    pub error_rate_slo: f64,
    /// `capacity.replicaCapacity` (requests/s one replica serves).
    pub replica_capacity: f64,
}

impl Default for ModelSetup {
    fn default() -> Self {
        ModelSetup {
            gpus_per_replica: 4,
            gpus_per_node: 8,
            slots_per_replica: 16,
            prefill_tokens_per_s: 8000.0,
            seconds_per_token: 0.03,
            load_secs: (120.0, 240.0),
            launch_median_secs: 75.0,
            launch_sigma: 0.35,
            launch_fail_secs: (20.0, 60.0),
            consolidate_after_secs: 0.0,
            target_per_replica: 1.5,
            stabilization_secs: 300,
            hpa_sync_secs: 15,
            scrape_secs: 15,
            window_secs: 60,
            queue_per_replica: 32,
            timeout_secs: 60.0,
            latency_slo: 2.0,
            error_rate_slo: 0.01,
            replica_capacity: 2.0,
        }
    }
}

/// A named scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Preset name.
    pub name: String,
    /// One line: what it shows.
    pub about: String,
    /// Default simulated hours.
    pub hours: f64,
    /// UTC hour of day at the run's start.
    pub start_hour_utc: f64,
    /// Members.
    pub clusters: Vec<ClusterSetup>,
    /// The diurnal curve's trough as a share of the peak (1.0: flat).
    pub diurnal_low: f64,
    /// Regional bursts.
    pub bursts: Vec<Burst>,
    /// Capacity shortages.
    pub shortages: Vec<Shortage>,
    /// Slowdowns.
    pub slowdowns: Vec<Slowdown>,
    /// Model and infrastructure.
    pub model: ModelSetup,
}

/// The preset names, in the order `--help` lists them.
pub const NAMES: [&str; 6] = [
    "regional-shortage",
    "burst-home",
    "calm-diurnal",
    "flapping-signal",
    "burst-train",
    "fleet-16",
];

fn cluster(name: &str, region: &str, offset: f64, rate: f64, weight: u32) -> ClusterSetup {
    ClusterSetup {
        name: name.to_owned(),
        region: region.to_owned(),
        utc_offset_hours: offset,
        peak_rate: rate,
        weight,
        static_nodes: 2,
        pool_gpus: 32,
        max_replicas: 16,
        min_replicas: 2,
    }
}

impl Scenario {
    /// The preset `name`, or the one-line error listing the names.
    pub fn preset(name: &str) -> Result<Scenario, String> {
        let three = || {
            vec![
                cluster("east-a", "us-east-1", 5.0, 12.0, 35),
                cluster("east-b", "us-east-1", 5.0, 12.0, 35),
                cluster("west", "us-west-2", 8.0, 10.0, 30),
            ]
        };
        let base = Scenario {
            name: name.to_owned(),
            about: String::new(),
            hours: 6.0,
            start_hour_utc: 15.0,
            clusters: three(),
            diurnal_low: 0.3,
            bursts: Vec::new(),
            shortages: Vec::new(),
            slowdowns: Vec::new(),
            model: ModelSetup::default(),
        };
        let s = match name {
            "regional-shortage" => {
                let mut s = base;
                s.about = "us-east's NodePools fail to launch for an hour while its users \
                           burst (x1.6) near its evening peak"
                    .to_owned();
                s.clusters[2].pool_gpus = 48;
                s.bursts.push(Burst {
                    region: "us-east-1".into(),
                    start_min: 150.0,
                    end_min: 210.0,
                    factor: 1.6,
                });
                s.shortages.push(Shortage {
                    region: "us-east-1".into(),
                    start_min: 140.0,
                    end_min: 200.0,
                });
                s
            }
            "burst-home" => {
                let mut s = base;
                s.about = "all users are home's; its gateway sends 10 % to each of two \
                           helpers; they burst (x2.5) beyond home's NodePool limit"
                    .to_owned();
                s.hours = 4.0;
                s.clusters = vec![
                    cluster("home", "us-east-1", 5.0, 12.0, 80),
                    cluster("helper-a", "us-east-1", 5.0, 0.0, 10),
                    cluster("helper-b", "us-west-2", 8.0, 0.0, 10),
                ];
                for c in &mut s.clusters[1..] {
                    c.static_nodes = 3;
                    c.pool_gpus = 16;
                    c.min_replicas = 1;
                }
                s.clusters[0].pool_gpus = 24;
                s.bursts.push(Burst {
                    region: "us-east-1".into(),
                    start_min: 90.0,
                    end_min: 150.0,
                    factor: 2.5,
                });
                s
            }
            "calm-diurnal" => {
                let mut s = base;
                s.about = "a day of diurnal load within every cluster's own NodePools: \
                           Plumb must do nothing"
                    .to_owned();
                s.hours = 24.0;
                s.start_hour_utc = 0.0;
                s
            }
            "flapping-signal" => {
                let mut s = base;
                s.about = "east-a slows down (service x1.8) for 4 of every 9 minutes: \
                           pressure and latency cross their bands again and again"
                    .to_owned();
                s.hours = 3.0;
                s.slowdowns.push(Slowdown {
                    cluster: "east-a".into(),
                    start_min: 30.0,
                    end_min: 150.0,
                    period_min: 9.0,
                    on_min: 4.0,
                    factor: 1.8,
                });
                s
            }
            "burst-train" => {
                let mut s = base;
                s.about = "us-east short of capacity for three hours while its users burst \
                           (x1.7) for 20 minutes every 50"
                    .to_owned();
                s.hours = 5.0;
                s.clusters[2].pool_gpus = 48;
                s.shortages.push(Shortage {
                    region: "us-east-1".into(),
                    start_min: 50.0,
                    end_min: 240.0,
                });
                for k in 0..4 {
                    let start = 60.0 + 50.0 * f64::from(k);
                    s.bursts.push(Burst {
                        region: "us-east-1".into(),
                        start_min: start,
                        end_min: start + 20.0,
                        factor: 1.7,
                    });
                }
                s
            }
            "fleet-16" => {
                let mut s = base;
                s.about = "sixteen members in four regions, a calm diurnal day (the speed \
                           check)"
                    .to_owned();
                s.hours = 24.0;
                s.start_hour_utc = 0.0;
                let regions = [
                    ("us-east-1", 5.0),
                    ("us-west-2", 8.0),
                    ("eu-west-1", 0.0),
                    ("ap-south-1", -5.5),
                ];
                s.clusters = (0..16u32)
                    .map(|i| {
                        let (region, offset) = regions[(i % 4) as usize];
                        let weight = if i < 4 { 7 } else { 6 };
                        cluster(&format!("m{i:02}"), region, offset, 8.0, weight)
                    })
                    .collect();
                s
            }
            other => {
                return Err(format!(
                    "--scenario: unknown scenario {other:?} (one of {})",
                    NAMES.join(", ")
                ));
            }
        };
        Ok(s)
    }

    /// Takes the Steady weights from `policy` (a `--policy` may change them).
    pub fn use_policy_weights(&mut self, policy: &AdaptivePolicy) {
        for c in &mut self.clusters {
            if let Some(w) = policy.spec.cluster(&c.name).and_then(|s| s.weight) {
                c.weight = u32::try_from(w).unwrap_or(0);
            }
        }
    }

    /// Windows (start, end) in minutes of the scripted events, merged: recovery and release
    /// lag are measured from them.
    pub fn event_windows(&self) -> Vec<(f64, f64)> {
        let mut w: Vec<(f64, f64)> = self
            .bursts
            .iter()
            .map(|b| (b.start_min, b.end_min))
            .chain(self.shortages.iter().map(|s| (s.start_min, s.end_min)))
            .collect();
        w.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut merged: Vec<(f64, f64)> = Vec::new();
        for (s, e) in w {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        merged
    }

    /// The AdaptivePolicy every member applies (mode auto; escalation set per the operations
    /// checklist for this model: `after` above the pending-to-ready time, `cooldown` above
    /// the signals' lag).
    pub fn policy(&self) -> AdaptivePolicy {
        let m = &self.model;
        let clusters: Vec<Value> = self
            .clusters
            .iter()
            .map(|c| {
                let mut v = json!({
                    "name": c.name,
                    "nodeSelector": {"plumb.example/gpu": "true"},
                    "maxReplicas": c.max_replicas,
                    "region": c.region,
                    "weight": c.weight,
                    "backend": {"name": format!("llm-{}", c.name)},
                });
                if c.pool_gpus > 0 {
                    v["nodePools"] = json!(["gpu"]);
                }
                v
            })
            .collect();
        let first = &self.clusters[0].name;
        let value = json!({
            "apiVersion": "plumb-k8s.github.io/v1alpha1",
            "kind": "AdaptivePolicy",
            "metadata": {"name": "llm", "namespace": "serving"},
            "spec": {
                "mode": "auto",
                "workload": {"name": "llm"},
                "clusters": clusters,
                "signals": {
                    "demand": "sum(rate(vllm:request_success_total{model_name=\"llm\"}[1m]))",
                    "pressure": "avg(vllm:num_requests_waiting{model_name=\"llm\"})",
                    "latency": "histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{model_name=\"llm\"}[1m])))",
                    "latencySLO": m.latency_slo,
                    "errorRate": "sum(rate(llm_requests_dropped_total[1m])) / sum(rate(llm_requests_total[1m]))",
                    "errorRateSLO": m.error_rate_slo,
                },
                "capacity": {"replicaCapacity": m.replica_capacity, "step": 2},
                "escalation": {
                    "after": "5m",
                    "earlyAfter": "30s",
                    "readyTimeout": "10m",
                    "cooldown": "2m",
                    "calmFor": "15m",
                },
                "traffic": {
                    "routes": [{"cluster": first, "namespace": "serving", "name": "llm"}],
                    "stepPercent": 10,
                },
                "placement": "LocalFirst",
            }
        });
        // The preset's policy is built here from valid parts: a failure is a bug.
        AdaptivePolicy::from_value(value).expect("the preset's policy parses")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_has_a_valid_policy_whose_weights_sum_to_100() {
        for name in NAMES {
            let s = Scenario::preset(name).unwrap();
            let checked = s.policy().spec.check();
            assert!(checked.is_valid(), "{name}: {:?}", checked.problems);
            assert_eq!(s.clusters.iter().map(|c| c.weight).sum::<u32>(), 100);
        }
    }

    #[test]
    fn an_unknown_scenario_names_the_flag_and_the_choices() {
        let e = Scenario::preset("nope").unwrap_err();
        assert!(
            e.starts_with("--scenario: unknown scenario \"nope\""),
            "{e}"
        );
    }

    #[test]
    fn a_burst_train_s_windows_stay_apart_within_its_shortage() {
        let s = Scenario::preset("burst-train").unwrap();
        assert_eq!(s.event_windows(), vec![(50.0, 240.0)]);
    }

    #[test]
    fn overlapping_event_windows_merge() {
        let s = Scenario::preset("regional-shortage").unwrap();
        assert_eq!(s.event_windows(), vec![(140.0, 210.0)]);
    }
}
