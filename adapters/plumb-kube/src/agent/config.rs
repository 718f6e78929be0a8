//! What `plumb agent` runs with, resolved from its command line (docs/plumb/configuration.md).

use std::path::PathBuf;
use std::time::Duration;

use plumb_core::quorum::LeaseTiming;

/// The namespace when neither `--namespace` nor the pod's service account names one.
pub const DEFAULT_NAMESPACE: &str = "plumb-system";
/// The per-cluster Lease that elects one of the agent's replicas.
pub const AGENT_LEASE: &str = "plumb-agent";
/// Each member's copy of the fleet's hub Lease.
pub const HUB_LEASE: &str = "plumb-hub";
/// Where a pod finds its own namespace.
pub const POD_NAMESPACE_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// Where decision, outcome and proposal lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecisionLogTarget {
    /// Standard output (`--decision-log -`, the default).
    Stdout,
    /// Appended to a file.
    File(PathBuf),
}

impl DecisionLogTarget {
    /// Reads `--decision-log`: `-` is standard output, anything else a file path.
    pub fn from_flag(flag: &str) -> DecisionLogTarget {
        if flag == "-" {
            DecisionLogTarget::Stdout
        } else {
            DecisionLogTarget::File(PathBuf::from(flag))
        }
    }
}

/// The clocks the seed fixes. Production always runs [`AgentTiming::default`]; the live tests
/// shorten them through hidden flags so a failover fits in seconds (docs/plumb/design.md#quorum).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentTiming {
    /// The `plumb-hub` quorum lock's clocks (15 s, 10 s, 2 s).
    pub hub_lease: LeaseTiming,
    /// How long a written floor holds (`status.intent.expires` - now; 5 min).
    pub intent_ttl: Duration,
    /// The local `plumb-agent` Lease's duration (15 s).
    pub agent_lease_duration: Duration,
}

impl Default for AgentTiming {
    fn default() -> Self {
        AgentTiming {
            hub_lease: LeaseTiming::default(),
            intent_ttl: plumb_core::hub::INTENT_TTL,
            agent_lease_duration: Duration::from_secs(15),
        }
    }
}

/// What `plumb agent` runs with.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// This member's name in the policies' `clusters[]` and in its hub Lease holder.
    pub cluster_name: String,
    /// Plumb's namespace: the Leases and the ClusterProfiles.
    pub namespace: String,
    /// This process's pod name (the Leases' holder is `<cluster>/<pod>`).
    pub pod_name: String,
    /// The member loop's period.
    pub interval: Duration,
    /// The hub loop's longest period.
    pub hub_interval: Duration,
    /// The member's own Prometheus (`None`: every configured signal fails with that reason).
    pub prometheus_url: Option<String>,
    /// The KEP-5339 access-provider file (`None`: a fleet of one).
    pub provider_file: Option<PathBuf>,
    /// Where the decision log goes.
    pub decision_log: DecisionLogTarget,
    /// Whether the local `plumb-agent` Lease elects one replica (else this one always runs).
    pub leader_elect: bool,
    /// Where `/metrics` is served.
    pub metrics_bind: String,
    /// Where `/healthz` and `/readyz` are served.
    pub health_probe_bind: String,
    /// The kubeconfig of this member (`None`: in-cluster, else `KUBECONFIG`, else
    /// `~/.kube/config`).
    pub kubeconfig: Option<PathBuf>,
    /// The seed's clocks (shortened only by the hidden test flags).
    pub timing: AgentTiming,
}

impl AgentConfig {
    /// `<cluster>/<pod>`: the holder this process writes into the Leases.
    pub fn identity(&self) -> String {
        format!("{}/{}", self.cluster_name, self.pod_name)
    }

    /// The namespace from `--namespace`, else the pod's, else [`DEFAULT_NAMESPACE`].
    pub fn resolve_namespace(flag: Option<&str>) -> String {
        if let Some(ns) = flag.filter(|s| !s.is_empty()) {
            return ns.to_owned();
        }
        std::fs::read_to_string(POD_NAMESPACE_FILE)
            .map(|s| s.trim().to_owned())
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dash_is_standard_output_and_anything_else_a_file() {
        assert_eq!(DecisionLogTarget::from_flag("-"), DecisionLogTarget::Stdout);
        assert_eq!(
            DecisionLogTarget::from_flag("/tmp/d.jsonl"),
            DecisionLogTarget::File(PathBuf::from("/tmp/d.jsonl"))
        );
    }

    #[test]
    fn the_flag_wins_over_the_pods_namespace() {
        assert_eq!(AgentConfig::resolve_namespace(Some("plumb")), "plumb");
    }

    #[test]
    fn the_seeds_clocks_are_the_default() {
        let t = AgentTiming::default();
        assert_eq!(t.hub_lease.duration, Duration::from_secs(15));
        assert_eq!(t.hub_lease.renew_deadline, Duration::from_secs(10));
        assert_eq!(t.hub_lease.retry_period, Duration::from_secs(2));
        assert_eq!(t.intent_ttl, Duration::from_secs(300));
    }
}
