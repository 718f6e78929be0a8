//! The run: every caretaker on the same arrivals, one simulated second at a time. Each
//! second the gateways split the users' requests, every cluster serves them and its
//! infrastructure moves; the HPAs sync every 15 s (reading the lagged demand and the served
//! floor), members report every 30 s (staggered) and the hub steps every 10 s.

use std::time::Duration;

use plumb_model::{AdaptivePolicy, Timestamp};

use crate::arrivals::{Arrival, Arrivals};
use crate::caretakers::{Kind, NaiveDriver, PlumbDriver};
use crate::figures::{Minute, Recorder, Summary};
use crate::fleet::{Fleet, short_of_capacity};
use crate::scenario::Scenario;
use crate::trace::Trace;

/// Members report every this many seconds.
pub const REPORT_SECS: u64 = 30;
/// The hub steps every this many seconds.
pub const HUB_SECS: u64 = 10;
/// The fleet runs this long before the scenario starts (HPAs, queues and Prometheus fill;
/// members report), without a hub and unmeasured.
pub const WARM_UP_SECS: u64 = 900;

/// What one run needs besides the caretaker.
#[derive(Debug, Clone)]
pub struct Setup<'a> {
    /// The scenario.
    pub scenario: &'a Scenario,
    /// The policy every member applies (the hub's copy too).
    pub policy: &'a AdaptivePolicy,
    /// The trace the users replay.
    pub trace: &'a Trace,
    /// The seed.
    pub seed: u64,
    /// Simulated hours.
    pub hours: f64,
}

/// One caretaker's result.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The figures.
    pub summary: Summary,
    /// Per-minute series.
    pub minutes: Vec<Minute>,
    /// Plumb's decision log (empty for the others).
    pub decision_log: String,
}

/// The run's start as a timestamp: 2026-12-01 at the scenario's start hour, UTC.
pub fn start_time(scenario: &Scenario) -> Timestamp {
    // 2026-12-01T00:00:00Z
    let midnight = Timestamp::from_unix_secs(1_796_083_200);
    midnight.plus(Duration::from_secs_f64(scenario.start_hour_utc * 3600.0))
}

/// `calmFor` of the policy in seconds (the oscillation window).
fn calm_for_secs(policy: &AdaptivePolicy) -> f64 {
    plumb_core::hub::HubConfig::from_spec(&policy.spec)
        .calm_for
        .as_secs_f64()
}

/// Runs `kind` over the setup.
pub fn run(setup: &Setup<'_>, kind: Kind) -> Outcome {
    let scenario = setup.scenario;
    let policy = setup.policy;
    let warm = WARM_UP_SECS;
    let start = start_time(scenario).minus(Duration::from_secs(warm));
    let routed = kind.routed();
    let mut fleet = Fleet::new(scenario, setup.seed, routed, -(warm as f64));
    let mut arrivals = Arrivals::new(scenario, setup.trace, setup.seed, warm as f64);
    let mut plumb = (kind == Kind::Plumb).then(|| PlumbDriver::new(policy, setup.seed));
    let mut naive = (kind == Kind::Naive).then(NaiveDriver::default);
    let mut recorder = Recorder::new(kind.name(), scenario, calm_for_secs(policy));
    let n = scenario.clusters.len();
    let seconds = warm + (setup.hours * 3600.0).round() as u64;
    let mut buffers: Vec<Vec<Arrival>> = vec![Vec::new(); n];
    let model = &scenario.model;
    for t in 0..seconds {
        let now = start.plus(Duration::from_secs(t));
        for (i, b) in buffers.iter_mut().enumerate() {
            b.clear();
            arrivals.second(i, t, b);
        }
        let scenario_t = t as f64 - warm as f64;
        fleet.serve(scenario, t, scenario_t, &buffers, routed);
        for i in 0..n {
            let region = &scenario.clusters[i].region;
            let short = short_of_capacity(scenario, region, scenario_t);
            fleet.clusters[i].tick(t as f64, model, short);
            // staggered HPA syncs and reports, one member after another
            let offset = (i as u64 * 7) % model.hpa_sync_secs.max(1);
            if t % model.hpa_sync_secs.max(1) == offset {
                let floor = match (&plumb, &naive) {
                    (Some(p), _) => p.served_floor(policy, scenario, &fleet, i, now),
                    (_, Some(_)) => fleet.intents[i].as_ref().map_or(0, |f| f.replicas),
                    _ => 0,
                };
                let demand = fleet.series[i].read(t).demand;
                fleet.clusters[i].autoscale(t as f64, model, demand, floor);
            }
            if kind.reports() && t % REPORT_SECS == (i as u64 * 11) % REPORT_SECS {
                fleet.report(policy, scenario, i, t, start);
            }
        }
        if t < warm {
            continue;
        }
        if t.is_multiple_of(HUB_SECS) {
            if let Some(p) = plumb.as_mut() {
                p.step(policy, scenario, &mut fleet, now);
            }
            if let Some(d) = naive.as_mut() {
                d.step(scenario, &mut fleet, now);
            }
        }
        recorder.second(scenario, &fleet, t - warm);
    }
    let decisions = plumb
        .as_ref()
        .map(|p| p.decisions)
        .or(naive.as_ref().map(|d| d.decisions))
        .unwrap_or(0);
    let (summary, minutes) = recorder.finish(scenario, decisions);
    Outcome {
        summary,
        minutes,
        decision_log: plumb.map(|p| p.log).unwrap_or_default(),
    }
}
