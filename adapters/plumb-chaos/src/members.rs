//! What each member does besides its agent's election and hub: its workload (demand that
//! surges past what its nodes run, replicas that follow the served floor), its report every
//! 30 s (with the run's report delays and signal faults), and its scaler, which asks
//! plumb-core's fencing what to serve from the member's own intent, Lease and clock.

use std::time::Duration;

use plumb_core::fencing::served_floor;
use plumb_model::{Report, Sample, Timestamp};

use crate::invariants::Served;
use crate::store::write_fault;
use crate::world::{Load, SignalFault, World};

/// Moves every workload on by one 5-second tick.
pub fn evolve(w: &mut World) {
    let t = w.t;
    for i in 0..w.members.len() {
        let now = w.clock(i);
        let surge_p = 1.0 / 240.0;
        for load in w.members[i].loads.values_mut() {
            if load.surge_until <= t && w.rng.chance(surge_p) {
                load.surge_until = t + i64::try_from(w.rng.range(120, 900)).unwrap_or(0) * 1000;
                let over = u32::try_from(w.rng.range(1, 4)).unwrap_or(1);
                load.want = load.capacity + over;
            } else if load.surge_until <= t {
                load.want = load.base;
            }
            load.desired = load.want.max(load.served);
            let target = load.desired.min(load.capacity);
            if load.ready < target && w.rng.chance(0.5) {
                load.ready += 1;
            } else if load.ready > target {
                load.ready = target;
            }
            let needed = load.desired.saturating_sub(load.capacity);
            if needed > 0 && load.short_since.is_none() {
                load.short_since = Some(now);
            } else if needed == 0 {
                load.short_since = None;
            }
            if w.rng.chance(0.01) {
                load.launch_failures = u32::try_from(w.rng.range(0, 4)).unwrap_or(0);
            }
        }
    }
}

/// Member `i` writes its report for every policy it holds (unless delayed or down).
pub fn report(w: &mut World, i: usize) {
    if !w.agent_up(i) || !w.reach(i, i) || w.members[i].reports_paused_until > w.t {
        return;
    }
    let now = w.clock(i);
    let fault = w.members[i]
        .signal_fault
        .filter(|(_, until)| *until > w.t)
        .map(|(f, _)| f);
    let policies: Vec<String> = w.members[i].store.policies.keys().cloned().collect();
    for policy in policies {
        if !write_fault(&mut w.fault_rng, &w.api, &mut w.faults).answered_ok() {
            continue;
        }
        let m = &w.members[i];
        let (Some(copy), Some(load)) = (m.store.policies.get(&policy), m.loads.get(&policy)) else {
            continue;
        };
        let report = make_report(copy, load, &m.name, now, fault, &mut w.rng);
        let member = &mut w.members[i];
        let rv = member.store.bump();
        if let Some(copy) = member.store.policies.get_mut(&policy) {
            copy.status.report = Some(report);
            copy.rv = rv;
        }
    }
}

fn make_report(
    copy: &crate::store::PolicyCopy,
    load: &Load,
    name: &str,
    now: Timestamp,
    fault: Option<SignalFault>,
    rng: &mut crate::rng::Rng,
) -> Report {
    let signals = copy.spec.signals.clone().unwrap_or_default();
    let sample = |value: f64| match fault {
        Some(SignalFault::Missing) => None,
        Some(SignalFault::Stale) => Some(Sample {
            value,
            time: now.minus(Duration::from_secs(600)),
        }),
        Some(SignalFault::Spike) => Some(Sample {
            value: value * 1e9,
            time: now,
        }),
        None => Some(Sample { value, time: now }),
    };
    let ratio = f64::from(load.want) / f64::from(load.ready.max(1));
    let has_pools = copy
        .spec
        .clusters
        .as_deref()
        .unwrap_or_default()
        .iter()
        .any(|c| c.name.as_deref() == Some(name) && !c.node_pools().is_empty());
    let jitter = f64::from(u32::try_from(rng.range(0, 100)).unwrap_or(0)) / 100.0;
    Report {
        time: Some(now),
        desired_replicas: load.desired,
        ready_replicas: load.ready,
        unschedulable_replicas: load.desired.saturating_sub(load.capacity),
        needed_replicas: load.desired.saturating_sub(load.capacity),
        short_since: load.short_since,
        static_room: load.capacity.saturating_sub(load.desired),
        dynamic_room: if has_pools { load.pool_room } else { 0 },
        recent_launch_failures: load.launch_failures,
        region: None,
        pressure: signals.pressure.as_ref().and_then(|_| sample(ratio)),
        latency: signals
            .latency
            .as_ref()
            .and_then(|_| sample(0.2 + 0.6 * jitter)),
        error_rate: signals
            .error_rate
            .as_ref()
            .and_then(|_| sample(0.1 * jitter)),
        safe_pressure: (jitter > 0.3).then_some(1.0),
        safe_since: (jitter > 0.3).then_some(now.minus(Duration::from_secs(3600))),
        spec_hash: copy.hashes.get(name).cloned().unwrap_or_default(),
        ..Report::default()
    }
}

/// Every member's scaler answers for every policy; the checker judges each answer.
pub fn scalers(w: &mut World) {
    for i in 0..w.members.len() {
        if !w.reach(i, i) {
            continue;
        }
        let now = w.clock(i);
        let m = &w.members[i];
        let lease = m.store.lease.as_ref().map(|(_, r)| r);
        let mut served_by_policy = Vec::new();
        for (policy, copy) in &m.store.policies {
            let max = copy
                .spec
                .clusters
                .as_deref()
                .unwrap_or_default()
                .iter()
                .find(|c| c.name.as_deref() == Some(m.name.as_str()))
                .and_then(|c| c.max_replicas)
                .map(|v| u32::try_from(v.max(0)).unwrap_or(u32::MAX));
            let intent = copy.status.intent.as_ref();
            let mode = copy.spec.mode();
            let floor = served_floor(intent, lease, mode, max, now);
            w.checker.served(&Served {
                member: &m.name,
                policy,
                floor,
                intent,
                lease,
                mode,
                max_replicas: max,
                member_now: now,
            });
            served_by_policy.push((policy.clone(), floor));
        }
        for (policy, floor) in served_by_policy {
            if floor > 0 {
                w.counters.served_checks += 1;
            }
            if let Some(load) = w.members[i].loads.get_mut(&policy) {
                load.served = floor;
            }
        }
    }
}
