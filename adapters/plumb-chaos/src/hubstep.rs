//! One hub step of a leading agent for one policy, as part 4's agent would carry it out:
//! read every member's copy (a member it cannot read keeps its last read, so its report goes
//! stale), read the weights from the first route, adopt the most recent `status.fleet` when
//! the term's hub is new, step plumb-core's [`Hub`], then in this order: log the outcome lines
//! (at least once), store `status.fleet` (else the step is discarded and the next one adopts
//! again), log the decision line, write the intents, then the weights (each route only while
//! its member's Lease names this hub). A failed write stops the step and is recorded on the
//! decision ([`Hub::write_failed`]); a crash fault kills the agent after some of the writes.

use std::collections::BTreeMap;

use plumb_core::hub::{Effect, Hub, MemberInput, StepInput, StepOutput};
use plumb_core::quorum::majority;
use plumb_model::{FleetStatus, Timestamp};

use crate::invariants::StepSeen;
use crate::store::{Call, most_recent_fleet, read_fails, write_fault};
use crate::world::{FleetCopies, HubState, World};

/// Runs agent `i`'s step for `policy`.
pub fn step(w: &mut World, i: usize, policy: &str) {
    let now = w.clock(i);
    let identity = w.members[i].agent.identity.clone();
    if !w.reach(i, i) || read_fails(&mut w.fault_rng, &w.api, &mut w.faults) {
        return;
    }
    let Some(copy) = w.members[i].store.policies.get(policy) else {
        w.members[i].agent.hubs.remove(policy);
        return;
    };
    let spec = copy.spec.clone();
    let hashes = copy.hashes.clone();
    let inputs = read_members(w, i, policy, &spec, &hashes);
    let weights = read_weights(w, i, policy, &spec);
    if !w.members[i].agent.hubs.contains_key(policy) {
        let Some(adopted) = adopt(w, i, policy) else {
            w.counters.adoptions_waited += 1;
            return;
        };
        let hub = Hub::new(policy, identity.clone(), adopted);
        w.members[i]
            .agent
            .hubs
            .insert(policy.to_string(), HubState { hub, stored: None });
    }
    let suffix = format!("{:08x}", w.rng.next_u64() & 0xffff_ffff);
    let Some(state) = w.members[i].agent.hubs.get_mut(policy) else {
        return;
    };
    let mut out = state.hub.step(&StepInput {
        spec: &spec,
        members: &inputs,
        weights: weights.as_ref(),
        now,
        id_suffix: &suffix,
    });
    w.counters.hub_steps += 1;
    let leading = w.members[i].agent.elector.is_leading(now);
    w.checker.step(&StepSeen {
        policy,
        hub: &identity,
        leading,
        spec: &spec,
        members: &inputs,
        now,
        effects: &out.effects,
    });
    for o in &out.outcomes {
        w.checker.outcome(o);
        w.counters.outcome_lines += 1;
    }
    if !store_fleet(w, i, policy, &out.fleet, now) {
        w.counters.discarded_steps += 1;
        w.members[i].agent.hubs.remove(policy);
        return;
    }
    if let Some(d) = &out.decision {
        w.checker.decision(d);
        w.counters.decisions += 1;
    }
    carry_out(w, i, policy, &spec, &mut out, now);
}

/// Each spec member's input: a fresh read where it can, else the last read.
fn read_members(
    w: &mut World,
    i: usize,
    policy: &str,
    spec: &plumb_model::AdaptivePolicySpec,
    hashes: &BTreeMap<String, String>,
) -> BTreeMap<String, MemberInput> {
    let mut inputs = BTreeMap::new();
    for c in spec.clusters.as_deref().unwrap_or_default() {
        let name = c.name.clone().unwrap_or_default();
        let key = (policy.to_string(), name.clone());
        if let Some(j) = w.index(&name)
            && w.reach(i, j)
            && !read_fails(&mut w.fault_rng, &w.api, &mut w.faults)
        {
            let read = w.members[j]
                .store
                .policies
                .get(policy)
                .map(|cp| (cp.status.report.clone(), cp.status.intent.clone(), cp.rv));
            match read {
                Some(r) => w.members[i].agent.cache.insert(key.clone(), r),
                None => w.members[i].agent.cache.remove(&key),
            };
        }
        let (report, intent, _) = w.members[i]
            .agent
            .cache
            .get(&key)
            .cloned()
            .unwrap_or_default();
        let expected_hash = hashes.get(&name).cloned().unwrap_or_default();
        inputs.insert(
            name,
            MemberInput {
                report,
                intent,
                expected_hash,
            },
        );
    }
    inputs
}

/// The first route's weights, when traffic is managed and its member answers.
fn read_weights(
    w: &mut World,
    i: usize,
    policy: &str,
    spec: &plumb_model::AdaptivePolicySpec,
) -> Option<BTreeMap<String, u32>> {
    let route = spec.traffic.as_ref()?.routes.as_deref()?.first()?;
    let j = w.index(route.cluster.as_deref()?)?;
    if !w.reach(i, j) || read_fails(&mut w.fault_rng, &w.api, &mut w.faults) {
        return None;
    }
    let key = format!("{policy}/{}", route.name.as_deref()?);
    w.members[j]
        .store
        .routes
        .get(&key)
        .map(|r| r.weights.clone())
}

/// The most recent `status.fleet` among the copies agent `i` reads, once it reads a majority
/// of the members' copies (with [`FleetCopies::Majority`] that majority holds at least one
/// copy of the last status stored); none while it reads fewer, and the hub waits.
fn adopt(w: &mut World, i: usize, policy: &str) -> Option<FleetStatus> {
    let readable: Vec<usize> = (0..w.members.len())
        .filter(|&j| w.reach(i, j) && !read_fails(&mut w.fault_rng, &w.api, &mut w.faults))
        .collect();
    let copies: Vec<_> = readable
        .iter()
        .filter_map(|&j| w.members[j].store.policies.get(policy))
        .collect();
    if copies.len() < majority(w.members.len()) {
        return None;
    }
    Some(most_recent_fleet(copies).unwrap_or_default())
}

/// Stores `status.fleet` as [`FleetCopies`] says; true when it is stored.
fn store_fleet(w: &mut World, i: usize, policy: &str, fleet: &FleetStatus, now: Timestamp) -> bool {
    let unchanged = w.members[i]
        .agent
        .hubs
        .get(policy)
        .is_some_and(|s| s.stored.as_ref() == Some(fleet));
    if unchanged {
        return true;
    }
    let targets: Vec<usize> = match w.fleet_copies {
        FleetCopies::Own => vec![i],
        FleetCopies::Majority => (0..w.members.len()).filter(|&j| w.reach(i, j)).collect(),
    };
    let mut acknowledged = 0;
    let mut own = false;
    for j in targets {
        let Some(rv) = w.members[j].store.policies.get(policy).map(|c| c.rv) else {
            continue;
        };
        let call = write_fault(&mut w.fault_rng, &w.api, &mut w.faults);
        if !call.landed() {
            continue;
        }
        let written = w.members[j].store.cas_status(policy, rv, |c| {
            c.status.fleet = Some(fleet.clone());
            c.fleet_written = Some(now);
        });
        if written.is_ok() && call.answered_ok() {
            acknowledged += 1;
            own |= j == i;
            // the write's answer carries the copy's new resourceVersion
            let rv = w.members[j].store.policies.get(policy).map_or(0, |c| c.rv);
            let name = w.members[j].name.clone();
            if let Some(c) = w.members[i]
                .agent
                .cache
                .get_mut(&(policy.to_string(), name))
            {
                c.2 = rv;
            }
        }
    }
    let stored = match w.fleet_copies {
        FleetCopies::Own => own,
        FleetCopies::Majority => own && acknowledged >= majority(w.members.len()),
    };
    if stored && let Some(s) = w.members[i].agent.hubs.get_mut(policy) {
        s.stored = Some(fleet.clone());
    }
    stored
}

/// Carries the step's writes out in order; stops at the first failure, or kills the agent
/// after some of them when a crash is due.
fn carry_out(
    w: &mut World,
    i: usize,
    policy: &str,
    spec: &plumb_model::AdaptivePolicySpec,
    out: &mut StepOutput,
    now: Timestamp,
) {
    let writes: Vec<Effect> = out
        .effects
        .iter()
        .filter(|e| matches!(e, Effect::WriteIntent { .. } | Effect::WriteWeights { .. }))
        .cloned()
        .collect();
    let crash_after =
        (w.crash_next_step && !writes.is_empty()).then(|| w.fault_rng.index(writes.len()));
    for (k, effect) in writes.iter().enumerate() {
        if crash_after == Some(k) {
            crate::campaign::kill_agent(w, i);
            w.crash_next_step = false;
            w.counters.crashes += 1;
            return;
        }
        let result = match effect {
            Effect::WriteIntent {
                cluster, intent, ..
            } => write_intent(w, i, policy, spec, cluster, intent.as_ref()),
            Effect::WriteWeights { weights } => write_weights(w, i, policy, spec, weights),
            Effect::Event(_) | Effect::Metric(_) => Ok(()),
        };
        if let Err(error) = result {
            w.counters.failed_writes += 1;
            if let Some(state) = w.members[i].agent.hubs.get_mut(policy) {
                state.hub.write_failed(out, &error);
            }
            let fleet = out.fleet.clone();
            store_fleet(w, i, policy, &fleet, now);
            return;
        }
    }
}

fn write_intent(
    w: &mut World,
    i: usize,
    policy: &str,
    spec: &plumb_model::AdaptivePolicySpec,
    cluster: &str,
    intent: Option<&plumb_model::Intent>,
) -> Result<(), String> {
    let j = w.index(cluster).ok_or("no such member")?;
    if !w.reach(i, j) {
        return Err(format!("{cluster}: unreachable"));
    }
    let rv = w.members[i]
        .agent
        .cache
        .get(&(policy.to_string(), cluster.to_string()))
        .map_or(0, |c| c.2);
    let call = write_fault(&mut w.fault_rng, &w.api, &mut w.faults);
    let mut landed = false;
    if call.landed() {
        let written = w.members[j]
            .store
            .cas_status(policy, rv, |c| c.status.intent = intent.cloned());
        if let Err(code) = written {
            return Err(format!("{cluster}: status {code}"));
        }
        landed = true;
    }
    if landed {
        w.counters.writes += 1;
        w.checker.store_write(policy, "intent", spec.mode());
        // the member's copy moved on: the cache's resourceVersion follows
        let rv = w.members[j].store.policies.get(policy).map_or(0, |c| c.rv);
        if let Some(c) = w.members[i]
            .agent
            .cache
            .get_mut(&(policy.to_string(), cluster.to_string()))
        {
            c.1 = intent.cloned();
            c.2 = rv;
        }
    }
    if call == Call::Ok {
        Ok(())
    } else {
        Err(format!("{cluster}: {}", call.error()))
    }
}

fn write_weights(
    w: &mut World,
    i: usize,
    policy: &str,
    spec: &plumb_model::AdaptivePolicySpec,
    weights: &BTreeMap<String, u32>,
) -> Result<(), String> {
    let routes = spec
        .traffic
        .as_ref()
        .and_then(|t| t.routes.clone())
        .unwrap_or_default();
    let identity = w.members[i].agent.identity.clone();
    for route in routes {
        let cluster = route.cluster.unwrap_or_default();
        let j = w.index(&cluster).ok_or("no such member")?;
        if !w.reach(i, j) || read_fails(&mut w.fault_rng, &w.api, &mut w.faults) {
            return Err(format!("{cluster}: unreachable"));
        }
        let holder = w.members[j]
            .store
            .lease
            .as_ref()
            .and_then(|(_, r)| r.holder.clone());
        if holder.as_deref() != Some(identity.as_str()) {
            return Err(format!("{cluster}: does not hold the hub lease"));
        }
        let call = write_fault(&mut w.fault_rng, &w.api, &mut w.faults);
        if call.landed() {
            let key = format!("{policy}/{}", route.name.unwrap_or_default());
            let rv = w.members[j].store.bump();
            w.members[j].store.routes.insert(
                key,
                crate::store::RouteCopy {
                    weights: weights.clone(),
                    rv,
                },
            );
            w.counters.writes += 1;
            w.checker.store_write(policy, "weights", spec.mode());
        }
        if call != Call::Ok {
            return Err(format!("{cluster}: {}", call.error()));
        }
    }
    Ok(())
}
