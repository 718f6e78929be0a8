//! What a run reports: the `summary.json` object of each caretaker, the CSV time series and
//! the SVG charts comparing caretakers.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::engine::{RunResult, Sim};

/// Percentile (nearest rank) of sorted values.
fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn r3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The largest number of moves/evictions started in any rolling hour.
pub fn max_per_hour(times: &[i64]) -> usize {
    let mut best = 0;
    let mut lo = 0;
    for hi in 0..times.len() {
        while times[hi] - times[lo] >= 3_600_000 {
            lo += 1;
        }
        best = best.max(hi - lo + 1);
    }
    best
}

/// Waiting times (minutes) by size key of tasks that arrived after the warm-up; a task
/// never placed counts with the time it waited until the run ended (censored).
pub fn waits(sim: &Sim, end: i64) -> BTreeMap<&'static str, Vec<f64>> {
    let mut m: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    for k in ["1", "2", "4", "8"] {
        m.insert(k, Vec::new());
    }
    for t in &sim.tasks {
        if t.arrived < sim.opts.warmup_ms {
            continue;
        }
        let until = t.first_placed.unwrap_or(end);
        m.entry(t.size_key())
            .or_default()
            .push((until - t.arrived) as f64 / 60_000.0);
    }
    for v in m.values_mut() {
        v.sort_by(f64::total_cmp);
    }
    m
}

/// `waits.csv`: every pod of two GPUs or more (and every gang) that arrived after the
/// warm-up, with when it arrived, how long it waited (censored at the end of the run, as
/// [`waits`]) and the pool it was first placed in (empty if never): the rows behind the
/// summary's percentiles, for reading where a tail comes from.
pub fn waits_csv(runs: &[(String, &RunResult)]) -> String {
    let mut s = String::from("caretaker,task,gpus,size,arrived_hours,wait_minutes,placed_pool\n");
    for (name, r) in runs {
        let sim = &r.sim;
        for t in &sim.tasks {
            if t.arrived < sim.opts.warmup_ms || (t.req.gpus < 2 && !t.gang) {
                continue;
            }
            let until = t.first_placed.unwrap_or(r.end);
            let pool = t
                .first_placed_node
                .map(|n| sim.world.pools[sim.world.nodes[n].pool].as_str())
                .unwrap_or("");
            s.push_str(&format!(
                "{name},{},{},{},{:.4},{:.3},{pool}\n",
                t.name,
                t.req.gpus,
                t.size_key(),
                t.arrived as f64 / 3_600_000.0,
                (until - t.arrived) as f64 / 60_000.0,
            ));
        }
    }
    s
}

/// The summary object of one run.
pub fn summary(caretaker: &str, res: &RunResult, wall_seconds: f64, extra: Value) -> Value {
    let sim = &res.sim;
    let warm: Vec<_> = sim
        .samples
        .iter()
        .filter(|s| s.t >= sim.opts.warmup_ms)
        .collect();
    let n = warm.len().max(1) as f64;
    let fill = sim.opts.mode == crate::arrivals::Mode::Fill;
    let allocation = if fill {
        sim.samples.last().map_or(0.0, |s| s.allocation_rate)
    } else {
        warm.iter().map(|s| s.allocation_rate).sum::<f64>() / n
    };
    let stranded_total = warm
        .iter()
        .map(|s| s.stranded.iter().sum::<u64>() as f64)
        .sum::<f64>()
        / n;
    let mut by_pool = serde_json::Map::new();
    for (i, p) in sim.world.pools.iter().enumerate() {
        by_pool.insert(
            p.clone(),
            json!(r3(
                warm.iter().map(|s| s.stranded[i] as f64).sum::<f64>() / n
            )),
        );
    }
    let mut score_pool = serde_json::Map::new();
    let sw: Vec<_> = sim
        .score_samples
        .iter()
        .filter(|s| s.t >= sim.opts.warmup_ms)
        .collect();
    for (i, p) in sim.world.pools.iter().enumerate() {
        let v = sw.iter().map(|s| s.scores[i]).sum::<f64>() / sw.len().max(1) as f64;
        score_pool.insert(p.clone(), json!(r3(v)));
    }
    let mut wait = serde_json::Map::new();
    for (k, v) in waits(sim, res.end) {
        wait.insert(
            k.to_owned(),
            json!({
                "count": v.len(),
                "p50": r3(pct(&v, 0.5)),
                "p95": r3(pct(&v, 0.95)),
                "max": r3(v.last().copied().unwrap_or(0.0)),
            }),
        );
    }
    let unplaced = sim
        .tasks
        .iter()
        .filter(|t| t.first_placed.is_none())
        .count();
    let hours = (res.end as f64 / 3_600_000.0).max(1e-9);
    let moves = sim.moves_completed + sim.evictions;
    let mut by_load = Vec::new();
    if fill {
        let mut pct_level = 50u32;
        for s in &sim.samples {
            while s.arrived_share + 1e-9 >= f64::from(pct_level) / 100.0 && pct_level <= 150 {
                by_load.push(json!({
                    "load": f64::from(pct_level) / 100.0,
                    "allocationRate": r3(s.allocation_rate),
                    "strandedGpus": s.stranded.iter().sum::<u64>(),
                    "pendingTasks": s.pending,
                    "pendingGpus": s.pending_gpus,
                }));
                pct_level += 5;
            }
        }
    }
    let mut v = json!({
        "caretaker": caretaker,
        "placement": sim.world.placement.as_str(),
        "mode": sim.opts.mode.as_str(),
        "allocationRate": r3(allocation),
        "strandedGpusMean": r3(stranded_total),
        "strandedGpusByPool": by_pool,
        "poolScoreMean": score_pool,
        "waitMinutes": wait,
        "unplaced": unplaced,
        "arrivals": sim.tasks.len(),
        "moves": moves,
        "movesRequested": sim.move_times.len() as u64 - sim.evictions,
        "movesFailed": sim.moves_failed,
        "evictions": sim.evictions,
        "movesPerHour": r3(moves as f64 / hours),
        "maxMovesPerHour": max_per_hour(&sim.move_times),
        "disruptionMinutes": r3(sim.disruption_ms as f64 / 60_000.0),
        "simulatedHours": r3(hours),
        "warmupHours": r3(sim.opts.warmup_ms as f64 / 3_600_000.0),
        "wallSeconds": r3(wall_seconds),
    });
    if fill && let Some(o) = v.as_object_mut() {
        o.insert("byLoad".into(), Value::Array(by_load));
    }
    if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
        o.extend(e);
    }
    v
}

/// CSV time series of every run (one row per sample and caretaker).
pub fn timeseries_csv(runs: &[(String, &RunResult)]) -> String {
    let mut s = String::new();
    let pools = runs
        .first()
        .map(|(_, r)| r.sim.world.pools.clone())
        .unwrap_or_default();
    s.push_str("caretaker,hours,allocation_rate,stranded_gpus,pending_tasks,pending_gpus,moves,arrived_share");
    for p in &pools {
        s.push_str(&format!(",stranded_{p}"));
    }
    for p in &pools {
        s.push_str(&format!(",score_{p}"));
    }
    s.push('\n');
    for (name, r) in runs {
        let mut k = 0;
        for smp in &r.sim.samples {
            while k + 1 < r.sim.score_samples.len() && r.sim.score_samples[k + 1].t <= smp.t {
                k += 1;
            }
            s.push_str(&format!(
                "{name},{:.4},{:.5},{},{},{},{},{:.5}",
                smp.t as f64 / 3_600_000.0,
                smp.allocation_rate,
                smp.stranded.iter().sum::<u64>(),
                smp.pending,
                smp.pending_gpus,
                smp.moves,
                smp.arrived_share
            ));
            for v in &smp.stranded {
                s.push_str(&format!(",{v}"));
            }
            for i in 0..pools.len() {
                let v = r
                    .sim
                    .score_samples
                    .get(k)
                    .filter(|x| x.t <= smp.t)
                    .map_or(0.0, |x| x.scores[i]);
                s.push_str(&format!(",{v:.4}"));
            }
            s.push('\n');
        }
    }
    s
}

/// SVG charts comparing the runs: `(file name, svg)`.
pub fn charts(runs: &[(String, &RunResult)]) -> Vec<(String, String)> {
    let hours = |t: i64| t as f64 / 3_600_000.0;
    let series = |f: &dyn Fn(&crate::engine::Sample) -> f64| -> Vec<(String, Vec<(f64, f64)>)> {
        runs.iter()
            .map(|(n, r)| {
                (
                    n.clone(),
                    r.sim.samples.iter().map(|s| (hours(s.t), f(s))).collect(),
                )
            })
            .collect()
    };
    let mut out = vec![
        (
            "allocation_rate.svg".to_owned(),
            crate::svg::line_chart(
                "GPU allocation rate",
                "hours",
                "allocated / total",
                &series(&|s| s.allocation_rate),
            ),
        ),
        (
            "stranded_gpus.svg".to_owned(),
            crate::svg::line_chart(
                "Stranded GPUs (free, unusable by a node-size request)",
                "hours",
                "GPUs",
                &series(&|s| s.stranded.iter().sum::<u64>() as f64),
            ),
        ),
        (
            "pending_gpus.svg".to_owned(),
            crate::svg::line_chart(
                "GPUs asked by pending tasks",
                "hours",
                "GPUs",
                &series(&|s| s.pending_gpus as f64),
            ),
        ),
        (
            "moves.svg".to_owned(),
            crate::svg::line_chart(
                "Moves and evictions (cumulative)",
                "hours",
                "count",
                &series(&|s| s.moves as f64),
            ),
        ),
    ];
    if let Some((_, first)) = runs.first() {
        for (i, p) in first.sim.world.pools.iter().enumerate() {
            let ser: Vec<(String, Vec<(f64, f64)>)> = runs
                .iter()
                .map(|(n, r)| {
                    (
                        n.clone(),
                        r.sim
                            .score_samples
                            .iter()
                            .map(|s| (hours(s.t), s.scores[i]))
                            .collect(),
                    )
                })
                .collect();
            if ser.iter().any(|(_, v)| v.iter().any(|&(_, y)| y > 0.0)) {
                out.push((
                    format!("pool_score_{p}.svg"),
                    crate::svg::line_chart(
                        &format!("alfred pool score: {p}"),
                        "hours",
                        "score",
                        &ser,
                    ),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rolling_hour_and_percentiles() {
        assert_eq!(max_per_hour(&[]), 0);
        assert_eq!(max_per_hour(&[0, 10, 3_599_999, 3_600_000, 3_600_001]), 4);
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(pct(&v, 0.5), 2.0);
        assert_eq!(pct(&v, 0.95), 4.0);
    }
}
