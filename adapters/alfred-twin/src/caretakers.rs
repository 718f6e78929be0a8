//! The baseline caretakers: `descheduler` (modelled on the Kubernetes descheduler's
//! HighNodeUtilization strategy) and `crude` (the crude defragmenter).
//! Both leave gangs (2×8-GPU Instances) alone: evicting one pod breaks the gang, and the
//! crude model moves single pods.

use crate::engine::{Action, Caretaker, MINUTE, Sim, TaskState};

/// HighNodeUtilization baseline: every pass, nodes whose GPU utilisation is above 0 and
/// below `threshold` are underutilised; their pods are evicted, least-utilised node first
/// (ties: name), smallest pod first, at most `per_node` per node and `total` per pass, and
/// only pods that fit on some node that is not underutilised (the descheduler's own fit
/// check). The scheduler then re-places them; they wait like new pods and their downtime
/// (eviction to placement, plus the ready time) counts as disruption.
#[derive(Debug, Clone)]
pub struct Descheduler {
    /// Time between passes (ms).
    pub interval_ms: i64,
    /// GPU utilisation threshold (fraction).
    pub threshold: f64,
    /// `maxNoOfPodsToEvictPerNode`.
    pub per_node: usize,
    /// `maxNoOfPodsToEvictTotal` (per pass).
    pub total: usize,
}

impl Default for Descheduler {
    fn default() -> Self {
        Descheduler {
            interval_ms: 5 * MINUTE,
            threshold: 0.5,
            per_node: 8,
            total: 10,
        }
    }
}

fn util(sim: &Sim, i: usize) -> f64 {
    let n = &sim.world.nodes[i];
    f64::from(n.gpus - n.free_gpus) / f64::from(n.gpus.max(1))
}

impl Caretaker for Descheduler {
    fn name(&self) -> String {
        "descheduler".into()
    }
    fn interval_ms(&self) -> i64 {
        self.interval_ms
    }
    fn pass(&mut self, sim: &Sim, _now: i64) -> Vec<Action> {
        let n = sim.world.nodes.len();
        let under: Vec<bool> = (0..n)
            .map(|i| {
                let u = util(sim, i);
                u > 0.0 && u < self.threshold
            })
            .collect();
        let mut order: Vec<usize> = (0..n).filter(|&i| under[i]).collect();
        order.sort_by(|&a, &b| util(sim, a).total_cmp(&util(sim, b)).then(a.cmp(&b)));
        let mut out = Vec::new();
        for i in order {
            if out.len() >= self.total {
                break;
            }
            let mut pods: Vec<usize> = sim.on_node[i]
                .iter()
                .copied()
                .filter(|&t| sim.tasks[t].migration.is_none() && !sim.tasks[t].gang)
                .collect();
            pods.sort_by_key(|&t| (sim.tasks[t].req.gpus, t));
            let mut here = 0;
            for t in pods {
                if here >= self.per_node || out.len() >= self.total {
                    break;
                }
                let req = sim.tasks[t].req;
                let fits_elsewhere = (0..n).any(|j| j != i && !under[j] && sim.world.fits(j, &req));
                if fits_elsewhere {
                    out.push(Action::Evict { task: t });
                    here += 1;
                }
            }
        }
        out
    }
}

/// The crude defragmenter: every pass, in each pool where some pending pod waits, cordon
/// the partly used node with the fewest GPUs in use (ties: name) and move its pods by surge,
/// each to the fullest node that fits it, at most `per_hour` moves in any rolling hour. The
/// node is uncordoned once empty (the scheduler then gives it to the waiting pods), when
/// the pool has no pending pod any more, or when none of its pods can move. No scoring, no
/// simulation, no cooldowns.
#[derive(Debug, Clone)]
pub struct Crude {
    /// Time between passes (ms).
    pub interval_ms: i64,
    /// Moves per rolling hour.
    pub per_hour: usize,
    /// Requests made so far (for UUIDs).
    pub counter: u64,
    /// The node being drained, per pool.
    pub draining: Vec<Option<usize>>,
}

impl Default for Crude {
    fn default() -> Self {
        Crude {
            interval_ms: 5 * MINUTE,
            per_hour: 10,
            counter: 0,
            draining: Vec::new(),
        }
    }
}

impl Caretaker for Crude {
    fn name(&self) -> String {
        "crude".into()
    }
    fn interval_ms(&self) -> i64 {
        self.interval_ms
    }
    fn pass(&mut self, sim: &Sim, now: i64) -> Vec<Action> {
        let w = &sim.world;
        if self.draining.len() != w.pools.len() {
            self.draining = vec![None; w.pools.len()];
        }
        let recent = sim
            .move_times
            .iter()
            .rev()
            .take_while(|&&t| now - t < 60 * MINUTE)
            .count();
        let mut budget = self.per_hour.saturating_sub(recent);
        let mut out = Vec::new();
        // Nodes touched by moves in flight.
        let mut busy = vec![false; w.nodes.len()];
        let mut leaving = vec![0usize; w.nodes.len()];
        for m in &sim.migrations {
            if m.ended.is_none() {
                busy[m.from] = true;
                leaving[m.from] += 1;
                if let Some(t) = m.target {
                    busy[t] = true;
                }
            }
        }
        let mut world = w.clone();
        for pool in 0..w.pools.len() {
            let wanted = sim.pending.iter().any(|&t| {
                let r = sim.tasks[t].req;
                r.pools == 0 || r.pools & (1 << pool) != 0
            });
            let mut src = self.draining[pool];
            if let Some(n) = src
                && (!wanted || sim.on_node[n].is_empty())
                && leaving[n] == 0
            {
                out.push(Action::Cordon {
                    node: n,
                    cordoned: false,
                });
                self.draining[pool] = None;
                src = None;
                if !wanted {
                    continue;
                }
            }
            if !wanted || budget == 0 {
                continue;
            }
            let src = match src {
                Some(n) => n,
                None => {
                    let Some(n) = (0..w.nodes.len())
                        .filter(|&i| {
                            let n = &w.nodes[i];
                            n.pool == pool
                                && n.free_gpus < n.gpus
                                && n.free_gpus > 0
                                && !busy[i]
                                && !n.cordoned
                        })
                        .min_by_key(|&i| (w.nodes[i].gpus - w.nodes[i].free_gpus, i))
                    else {
                        continue;
                    };
                    out.push(Action::Cordon {
                        node: n,
                        cordoned: true,
                    });
                    world.nodes[n].cordoned = true;
                    self.draining[pool] = Some(n);
                    n
                }
            };
            let mut moved = 0;
            for &t in &sim.on_node[src] {
                if budget == 0 {
                    break;
                }
                let task = &sim.tasks[t];
                if task.migration.is_some() || task.state != TaskState::Running || task.gang {
                    continue;
                }
                let target = (0..world.nodes.len())
                    .filter(|&j| j != src && world.fits(j, &task.req))
                    .max_by_key(|&j| {
                        (
                            world.nodes[j].gpus - world.nodes[j].free_gpus,
                            std::cmp::Reverse(j),
                        )
                    });
                let Some(dst) = target else { continue };
                world.bind(dst, &task.req);
                self.counter += 1;
                out.push(Action::Migrate {
                    task: t,
                    uuid: format!("crude-{:08}", self.counter),
                    payload: String::new(),
                    hints: vec![dst],
                });
                budget -= 1;
                moved += 1;
            }
            if moved == 0 && leaving[src] == 0 && !sim.on_node[src].is_empty() && budget > 0 {
                // Nothing can move: give the node back.
                out.push(Action::Cordon {
                    node: src,
                    cordoned: false,
                });
                self.draining[pool] = None;
            }
        }
        out
    }
}
