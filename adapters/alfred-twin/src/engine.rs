//! The discrete-event simulation: arrivals, placement by the scheduler model, pending pods
//! retried on every change, departures, caretaker passes, surge migrations as OMENative
//! performs them, evictions, and the metrics.
//!
//! Time is integer milliseconds from the start of the run; events at the same instant run
//! in the order they were scheduled, so a run is a pure function of its inputs and seed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use alfred_dispatch::RequestPayload;
use alfred_model::Timestamp;

use crate::arrivals::{Arrival, GANG_POD_GPUS, GANG_PODS, Mode};
use crate::trace::TraceTask;
use crate::world::{Request, World};

/// The instant the simulation starts at: Monday 2026-11-30 00:00:00 UTC.
pub const T0_UNIX_SECS: i64 = 1_795_996_800;

/// Simulation time (ms) → [`Timestamp`].
pub fn ts(ms: i64) -> Timestamp {
    Timestamp::from_unix_nanos(T0_UNIX_SECS * 1_000_000_000 + ms * 1_000_000)
}

/// Minutes.
pub const MINUTE: i64 = 60_000;

/// Whether this process may run on more than one core (its affinity and quota allow it).
/// The twin's helper threads (the policies' shared walk, the snapshot update's second list)
/// pay only then: on one core a helper thread time-slices with the one it helps, the two
/// working sets evicting each other, and a 14-day run took 6 to 9 % longer with them.
pub fn several_cores() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
}

/// Options of one run.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// End of the run (ms).
    pub horizon_ms: i64,
    /// Arrival mode (for the report).
    pub mode: Mode,
    /// Metrics ignore what happens before this (churn: the cluster starts empty).
    pub warmup_ms: i64,
    /// Time between metric samples.
    pub sample_every_ms: i64,
    /// Time between pool-score samples (alfred-score on the whole cluster).
    pub score_every_ms: i64,
    /// OMENative acknowledges a request after this long.
    pub ack_delay_ms: i64,
    /// A replacement (or a re-placed evicted pod) serves this long after it is placed.
    pub ready_ms: i64,
    /// CPU and memory are a fit constraint.
    pub cpu_mem: bool,
}

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    /// Waiting for a node.
    Pending,
    /// On a node.
    Running,
    /// Left.
    Gone,
}

/// One task: a single-pod OMENative InferenceService, or a gang (one Instance of
/// [`GANG_PODS`] pods of [`GANG_POD_GPUS`] GPUs, one PodGroup, `ome-scheduler`).
#[derive(Debug, Clone)]
pub struct Task {
    /// A gang: `req` is per pod, `node` is the leader's node, `worker` the worker's.
    pub gang: bool,
    /// The gang worker's node (while running).
    pub worker: Option<usize>,
    /// `t<id>` (InferenceService name).
    pub name: String,
    /// Index of the trace task.
    pub trace: usize,
    /// What its pod asks.
    pub req: Request,
    /// When it arrived.
    pub arrived: i64,
    /// State.
    pub state: TaskState,
    /// Node (while running).
    pub node: Option<usize>,
    /// When its current pod started (placement or the last move).
    pub started: i64,
    /// First placement.
    pub first_placed: Option<i64>,
    /// The node of its first placement (a gang's: the leader's).
    pub first_placed_node: Option<usize>,
    /// How long it runs once first placed (ms); `None` = forever.
    pub lifetime: Option<i64>,
    /// When it is due to leave (first placement + lifetime).
    pub depart_at: Option<i64>,
    /// Its lifetime ended while a move ran: it leaves when the move ends.
    pub depart_pending: bool,
    /// The migration in progress, if any.
    pub migration: Option<usize>,
    /// Every migration it had.
    pub migrations: Vec<usize>,
    /// Evicted and not yet re-placed: since when.
    pub evicted_at: Option<i64>,
    /// Pod incarnation (bumped by each move).
    pub incarnation: u32,
    /// While pending: the node its `status.nominatedNodeName` names (its requests are held
    /// there). Cleared when it binds, as kube-apiserver does.
    pub nominated: Option<usize>,
}

impl Task {
    /// Pods of its Instance.
    pub fn pod_count(&self) -> u32 {
        if self.gang { GANG_PODS } else { 1 }
    }

    /// GPUs of its Instance.
    pub fn total_gpus(&self) -> u32 {
        self.req.gpus * self.pod_count()
    }

    /// Nodes of its pods (leader first).
    pub fn pod_nodes(&self) -> Vec<usize> {
        self.node.into_iter().chain(self.worker).collect()
    }

    /// Size bucket for the wait metrics: "1", "2", "4", "8", or "2x8" for a gang.
    pub fn size_key(&self) -> &'static str {
        if self.gang {
            "2x8"
        } else {
            Sim::size_key(self.req.gpus)
        }
    }
}

/// Phase of a migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigPhase {
    /// Annotation written, not acknowledged yet.
    Requested,
    /// Replacement placed, not ready yet.
    Surge,
    /// Done.
    Completed,
    /// Nothing fitted.
    Failed,
}

impl MigPhase {
    /// OMENative's status phase string.
    pub fn as_status(self) -> &'static str {
        match self {
            MigPhase::Requested => "Requested",
            MigPhase::Surge => "SurgePending",
            MigPhase::Completed => "Completed",
            MigPhase::Failed => "Failed",
        }
    }
}

/// One surge migration.
#[derive(Debug, Clone)]
pub struct Migration {
    /// Request UUID.
    pub uuid: String,
    /// Task.
    pub task: usize,
    /// Node left.
    pub from: usize,
    /// Preferred targets.
    pub hints: Vec<usize>,
    /// The annotation value (alfred) or empty.
    pub payload: String,
    /// When requested.
    pub requested: i64,
    /// When acknowledged (the surge started).
    pub started: Option<i64>,
    /// Where the replacement went (a gang: the leader's replacement).
    pub target: Option<usize>,
    /// A gang: where the worker's replacement went.
    pub worker_target: Option<usize>,
    /// When it ended.
    pub ended: Option<i64>,
    /// Phase.
    pub phase: MigPhase,
}

/// What a caretaker asks the twin to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Move a task by surge (OMENative's migration).
    Migrate {
        /// Task.
        task: usize,
        /// Request UUID.
        uuid: String,
        /// Annotation value.
        payload: String,
        /// Preferred targets (node indices), ranked.
        hints: Vec<usize>,
    },
    /// Evict a task's pod (the scheduler re-places it).
    Evict {
        /// Task.
        task: usize,
    },
    /// Cordon or uncordon a node.
    Cordon {
        /// Node.
        node: usize,
        /// Cordoned after the action.
        cordoned: bool,
    },
    /// Set a pending single-pod task's nomination (only where it is unset).
    Nominate {
        /// Task.
        task: usize,
        /// The pod incarnation the write was conditioned on (its uid).
        incarnation: u32,
        /// Node.
        node: usize,
    },
    /// Clear a task's nomination (only while it still names `node`).
    ClearNomination {
        /// Task.
        task: usize,
        /// The pod incarnation the write was conditioned on (its uid).
        incarnation: u32,
        /// Node.
        node: usize,
    },
    /// OMENative gives up the task's running migration (`Failed`): a fault the chaos
    /// campaign injects (a node failing under the move, the executor erring). Nothing when
    /// the task has no migration running.
    FailMigration {
        /// Task.
        task: usize,
    },
    /// Add or remove alfred's drain-plan `NoSchedule` taint.
    Taint {
        /// Node.
        node: usize,
        /// Tainted after the action.
        tainted: bool,
        /// The taint's value (the plan id).
        value: String,
    },
}

/// A caretaker: runs a pass on a schedule and asks for actions.
pub trait Caretaker {
    /// Name for the report.
    fn name(&self) -> String;
    /// Time between passes (ms); 0 = never.
    fn interval_ms(&self) -> i64;
    /// One pass.
    fn pass(&mut self, sim: &Sim, now: i64) -> Vec<Action>;
    /// Extra instants the caretaker wants to be woken at (drained after each pass).
    fn wake_times(&mut self) -> Vec<i64> {
        Vec::new()
    }
    /// A wake-up.
    fn wake(&mut self, _sim: &Sim, _now: i64) {}
    /// The caretaker's own snapshot of the cluster at `now`, when it keeps one up to date
    /// ([`crate::snapshot::Incremental`]): the pool-score samples read it rather than
    /// bringing another copy up to date, and the pass at the same instant then finds it
    /// current. `None` (the default): the samples keep their own.
    fn snapshot(&mut self, _sim: &Sim, _now: i64) -> Option<&alfred_model::ClusterSnapshot> {
        None
    }
    /// The end of the run.
    fn finish(&mut self, _sim: &Sim, _now: i64) {}
}

/// The no-op caretaker.
#[derive(Debug, Default)]
pub struct NoCaretaker;

impl Caretaker for NoCaretaker {
    fn name(&self) -> String {
        "none".into()
    }
    fn interval_ms(&self) -> i64 {
        0
    }
    fn pass(&mut self, _: &Sim, _: i64) -> Vec<Action> {
        Vec::new()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Arrival(usize),
    Depart(usize),
    Pass,
    Sample,
    Score,
    MigAck(usize),
    MigReady(usize),
    Wake,
}

/// One metric sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Time (ms).
    pub t: i64,
    /// Allocated / total GPUs.
    pub allocation_rate: f64,
    /// Stranded GPUs per pool.
    pub stranded: Vec<u64>,
    /// Pending tasks.
    pub pending: usize,
    /// GPUs they ask.
    pub pending_gpus: u64,
    /// Moves and evictions so far.
    pub moves: u64,
    /// GPUs asked by arrivals so far / capacity.
    pub arrived_share: f64,
}

/// Pool scores at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreSample {
    /// Time (ms).
    pub t: i64,
    /// Per pool (in [`World::pools`] order).
    pub scores: Vec<f64>,
}

/// The whole simulated state a caretaker can read.
#[derive(Debug, Clone)]
pub struct Sim {
    /// Nodes.
    pub world: World,
    /// Trace tasks (shapes).
    pub trace: Vec<TraceTask>,
    /// Tasks created so far.
    pub tasks: Vec<Task>,
    /// Migrations so far.
    pub migrations: Vec<Migration>,
    /// Pending tasks, in queue order.
    pub pending: Vec<usize>,
    /// Running tasks per node.
    pub on_node: Vec<Vec<usize>>,
    /// Options.
    pub opts: SimOptions,
    /// Migrations requested (time), evictions (time).
    pub move_times: Vec<i64>,
    /// Migrations completed.
    pub moves_completed: u64,
    /// Migrations failed.
    pub moves_failed: u64,
    /// Evictions.
    pub evictions: u64,
    /// Nominations written.
    pub nominations: u64,
    /// Downtime of evicted pods (ms).
    pub disruption_ms: i64,
    /// Samples.
    pub samples: Vec<Sample>,
    /// Pool-score samples.
    pub score_samples: Vec<ScoreSample>,
    /// GPUs asked by arrivals so far.
    pub arrived_gpus: u64,
    /// Capacity.
    pub capacity: u64,
    /// Surge pods per node (migration indices), for the snapshot.
    pub surge_on_node: Vec<Vec<usize>>,
    /// Departures to schedule (set by first placements).
    new_departures: Vec<(i64, usize)>,
    /// Tasks that changed, in the order they did (a task may come more than once): every
    /// change of what a task's snapshot entries read (its state, nodes, incarnation, start,
    /// eviction, nomination, migration list) logs the task here, so the incremental snapshot
    /// reads only these tasks rather than every live one on every update (reading each live
    /// task was a twentieth of a 14-day run). New tasks are not logged: they are new.
    pub touched: Vec<usize>,
}

impl Sim {
    /// Now as a [`Timestamp`].
    pub fn task_index(&self, name: &str) -> Option<usize> {
        let id: usize = name.strip_prefix('t')?.parse().ok()?;
        (id < self.tasks.len()).then_some(id)
    }

    /// Whether a task's pod fits node `n` (its own nomination is not held against it).
    fn fits_task(&self, task: usize, n: usize) -> bool {
        let t = &self.tasks[task];
        if t.nominated == Some(n) {
            self.world.fits_nominated(n, &t.req)
        } else {
            self.world.fits(n, &t.req)
        }
    }

    /// Where the scheduler model puts a task's pods (all or nothing for a gang). A
    /// nominated pod is tried on its nominated node first, as kube-scheduler does.
    fn choose_for(&self, task: usize, excluded: &[usize], hints: &[usize]) -> Option<Vec<usize>> {
        let t = &self.tasks[task];
        if let Some(n) = t.nominated
            && !excluded.contains(&n)
            && self.fits_task(task, n)
        {
            return Some(vec![n]);
        }
        if t.gang {
            self.world
                .choose_gang(&t.req, t.pod_count(), excluded, hints)
        } else {
            hints
                .iter()
                .copied()
                .find(|&h| !excluded.contains(&h) && self.world.fits(h, &t.req))
                .or_else(|| self.world.choose(&t.req, excluded))
                .map(|n| vec![n])
        }
    }

    fn place(&mut self, task: usize, nodes: &[usize], now: i64) {
        let req = self.tasks[task].req;
        self.clear_nomination(task);
        for &node in nodes {
            self.world.bind(node, &req);
            if !self.on_node[node].contains(&task) {
                self.on_node[node].push(task);
            }
        }
        self.touched.push(task);
        let t = &mut self.tasks[task];
        t.state = TaskState::Running;
        t.node = nodes.first().copied();
        t.worker = nodes.get(1).copied();
        t.started = now;
        if t.first_placed.is_none() {
            t.first_placed = Some(now);
            t.first_placed_node = t.node;
            if let Some(l) = t.lifetime {
                t.depart_at = Some(now + l);
                self.new_departures.push((now + l, task));
            }
        }
        if let Some(e) = t.evicted_at.take() {
            self.disruption_ms += now - e + self.opts.ready_ms;
        }
    }

    /// Drops a task's nomination and its hold; the node it named.
    fn clear_nomination(&mut self, task: usize) -> Option<usize> {
        let n = self.tasks[task].nominated.take()?;
        self.touched.push(task);
        let req = self.tasks[task].req;
        self.world.unhold(n, &req);
        Some(n)
    }

    /// Removes a task's pods; the nodes freed.
    fn unplace(&mut self, task: usize) -> Vec<usize> {
        let nodes = self.tasks[task].pod_nodes();
        self.touched.push(task);
        self.tasks[task].node = None;
        self.tasks[task].worker = None;
        let req = self.tasks[task].req;
        for &node in &nodes {
            self.world.release(node, &req);
            self.on_node[node].retain(|&x| x != task);
        }
        nodes
    }

    /// Tries the pending queue after `node` gained room (`None`: any node).
    fn retry(&mut self, node: Option<usize>, now: i64) {
        if self.pending.is_empty() {
            return;
        }
        let mut placed_any = false;
        let queue = std::mem::take(&mut self.pending);
        let mut keep = Vec::with_capacity(queue.len());
        for task in queue {
            let candidate = match node {
                Some(n) => self.fits_task(task, n),
                None => true,
            };
            let choice = if candidate {
                self.choose_for(task, &[], &[])
            } else {
                None
            };
            match choice {
                Some(n) => {
                    self.place(task, &n, now);
                    placed_any = true;
                }
                None => keep.push(task),
            }
        }
        self.pending = keep;
        let _ = placed_any;
    }

    fn depart(&mut self, task: usize, now: i64) {
        match self.tasks[task].state {
            TaskState::Gone => {}
            TaskState::Pending => {
                self.pending.retain(|&x| x != task);
                if let Some(n) = self.clear_nomination(task) {
                    self.retry(Some(n), now);
                }
                if let Some(e) = self.tasks[task].evicted_at.take() {
                    self.disruption_ms += now - e;
                }
                self.touched.push(task);
                self.tasks[task].state = TaskState::Gone;
            }
            TaskState::Running => {
                if self.tasks[task].migration.is_some() {
                    self.tasks[task].depart_pending = true;
                    return;
                }
                // `unplace` logged the task.
                let nodes = self.unplace(task);
                self.tasks[task].state = TaskState::Gone;
                for n in nodes {
                    self.retry(Some(n), now);
                }
            }
        }
    }

    fn end_migration(&mut self, m: usize, phase: MigPhase, now: i64) {
        let task = self.migrations[m].task;
        self.migrations[m].phase = phase;
        self.migrations[m].ended = Some(now);
        self.tasks[task].migration = None;
        let mut freed = Vec::new();
        if phase == MigPhase::Completed {
            let targets: Vec<usize> = self.migrations[m]
                .target
                .into_iter()
                .chain(self.migrations[m].worker_target)
                .collect();
            // The surge pods become the Instance's pods; the originals go.
            let req = self.tasks[task].req;
            for &target in &targets {
                self.surge_on_node[target].retain(|&x| x != m);
                self.world.release(target, &req);
            }
            freed = self.unplace(task);
            // `place` logged the task.
            self.place(task, &targets, now);
            self.tasks[task].incarnation += 1;
            self.moves_completed += 1;
        } else {
            self.moves_failed += 1;
        }
        if self.tasks[task].depart_pending {
            self.tasks[task].depart_pending = false;
            self.depart(task, now);
        }
        for n in freed {
            self.retry(Some(n), now);
        }
    }

    fn sample(&mut self, now: i64) {
        let total = self.world.total_gpus().max(1);
        self.samples.push(Sample {
            t: now,
            allocation_rate: self.world.allocated_gpus() as f64 / total as f64,
            stranded: self.world.stranded(),
            pending: self.pending.len(),
            pending_gpus: self
                .pending
                .iter()
                .map(|&t| u64::from(self.tasks[t].total_gpus()))
                .sum(),
            moves: self.moves_completed + self.evictions,
            arrived_share: self.arrived_gpus as f64 / total as f64,
        });
    }

    /// Size bucket of a task's GPU count ("1", "2", "4", "8").
    pub fn size_key(gpus: u32) -> &'static str {
        match gpus {
            0 | 1 => "1",
            2 | 3 => "2",
            4..=7 => "4",
            _ => "8",
        }
    }
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The final state (tasks, migrations, samples).
    pub sim: Sim,
    /// Simulated end (ms).
    pub end: i64,
}

/// Runs the simulation with one caretaker; `progress` is called with the simulated share
/// done (0..1) now and then.
pub fn run(
    arrivals: &[Arrival],
    trace: &[TraceTask],
    world: World,
    opts: &SimOptions,
    caretaker: &mut dyn Caretaker,
    progress: &mut dyn FnMut(f64),
) -> RunResult {
    let mut sim = Sim::new(world, trace, opts, arrivals.len());
    let mut heap: BinaryHeap<Reverse<(i64, u64, Ev)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |heap: &mut BinaryHeap<Reverse<(i64, u64, Ev)>>, t: i64, e: Ev| {
        seq += 1;
        heap.push(Reverse((t, seq, e)));
    };
    // Arrivals are fed lazily (they are sorted) to keep the heap small.
    let mut next_arrival = 0usize;
    let interval = caretaker.interval_ms();
    if interval > 0 {
        push(&mut heap, interval, Ev::Pass);
    }
    push(&mut heap, 0, Ev::Sample);
    if opts.score_every_ms > 0 {
        push(&mut heap, opts.score_every_ms, Ev::Score);
    }
    // The pool-score samples' snapshot when the caretaker keeps none, brought up to date at
    // each sample rather than built afresh (most tasks are unchanged from one to the next).
    let mut score_snapshot = crate::snapshot::Incremental::new();
    let mut last_progress = 0i64;
    let end = opts.horizon_ms;
    loop {
        let next_heap = heap.peek().map(|Reverse((t, _, _))| *t);
        let next_arr = arrivals.get(next_arrival).map(|a| a.at);
        let (now, ev) = match (next_heap, next_arr) {
            (None, None) => break,
            (Some(h), Some(a)) if a < h => {
                next_arrival += 1;
                (a, Ev::Arrival(next_arrival - 1))
            }
            (None, Some(a)) => {
                next_arrival += 1;
                (a, Ev::Arrival(next_arrival - 1))
            }
            (Some(_), _) => {
                let Some(Reverse((t, _, e))) = heap.pop() else {
                    break;
                };
                (t, e)
            }
        };
        if now > end {
            break;
        }
        if now - last_progress > 6 * 3_600_000 {
            last_progress = now;
            progress(now as f64 / end.max(1) as f64);
        }
        match ev {
            Ev::Arrival(i) => sim.arrive(&arrivals[i], now),
            Ev::Depart(task) => sim.depart(task, now),
            Ev::Sample => {
                sim.sample(now);
                push(&mut heap, now + opts.sample_every_ms, Ev::Sample);
            }
            Ev::Score => {
                let snap = match caretaker.snapshot(&sim, now) {
                    Some(snap) => snap,
                    None => score_snapshot.update(&sim, now),
                };
                let score = alfred_score::score(snap, &alfred_model::config::Config::default());
                let mut scores = vec![0.0; sim.world.pools.len()];
                for p in score.pools {
                    if let Ok(i) = sim.world.pools.binary_search(&p.pool) {
                        scores[i] = p.score;
                    }
                }
                sim.score_samples.push(ScoreSample { t: now, scores });
                push(&mut heap, now + opts.score_every_ms, Ev::Score);
            }
            Ev::Pass => {
                for a in caretaker.pass(&sim, now) {
                    if let Some(m) = sim.apply(a, now) {
                        push(&mut heap, now + opts.ack_delay_ms, Ev::MigAck(m));
                    }
                }
                for w in caretaker.wake_times() {
                    if w > now {
                        push(&mut heap, w, Ev::Wake);
                    }
                }
                push(&mut heap, now + interval, Ev::Pass);
            }
            Ev::Wake => caretaker.wake(&sim, now),
            // A migration ended early (FailMigration) has no acknowledgement or readiness.
            Ev::MigAck(m) | Ev::MigReady(m) if sim.migrations[m].ended.is_some() => {}
            Ev::MigAck(m) => {
                if sim.acknowledge(m, now) {
                    push(&mut heap, now + opts.ready_ms, Ev::MigReady(m));
                }
            }
            Ev::MigReady(m) => sim.end_migration(m, MigPhase::Completed, now),
        }
        for (t, task) in std::mem::take(&mut sim.new_departures) {
            push(&mut heap, t, Ev::Depart(task));
        }
    }
    // Evicted pods still waiting count their downtime to the end.
    for t in &sim.tasks {
        if let Some(e) = t.evicted_at {
            sim.disruption_ms += end - e;
        }
    }
    sim.sample(end);
    caretaker.finish(&sim, end);
    progress(1.0);
    RunResult { sim, end }
}

impl Sim {
    /// The simulation's starting state: the world, no task yet.
    fn new(world: World, trace: &[TraceTask], opts: &SimOptions, expected_tasks: usize) -> Sim {
        let n_nodes = world.nodes.len();
        let capacity = world.total_gpus();
        Sim {
            world,
            trace: trace.to_vec(),
            tasks: Vec::with_capacity(expected_tasks),
            migrations: Vec::new(),
            pending: Vec::new(),
            on_node: vec![Vec::new(); n_nodes],
            opts: opts.clone(),
            move_times: Vec::new(),
            moves_completed: 0,
            moves_failed: 0,
            evictions: 0,
            nominations: 0,
            disruption_ms: 0,
            samples: Vec::new(),
            score_samples: Vec::new(),
            arrived_gpus: 0,
            capacity,
            surge_on_node: vec![Vec::new(); n_nodes],
            new_departures: Vec::new(),
            touched: Vec::new(),
        }
    }

    /// A task of the trace arrives: its pod is placed at once when it fits, else it waits.
    fn arrive(&mut self, a: &Arrival, now: i64) {
        let tt = &self.trace[a.task];
        let cpu_mem = self.opts.cpu_mem;
        let req = Request {
            gpus: if a.gang { GANG_POD_GPUS } else { tt.gpus },
            cpu: if cpu_mem { tt.cpu_milli } else { 0 },
            mem: if cpu_mem { tt.memory_mib } else { 0 },
            pools: if a.gang {
                self.world.gang_pools(GANG_POD_GPUS)
            } else {
                self.world.pool_mask(&tt.gpu_spec)
            },
        };
        let id = self.tasks.len();
        self.tasks.push(Task {
            gang: a.gang,
            worker: None,
            name: format!("t{id:06}"),
            trace: a.task,
            req,
            arrived: now,
            state: TaskState::Pending,
            node: None,
            started: now,
            first_placed: None,
            first_placed_node: None,
            lifetime: a.lifetime,
            depart_at: None,
            depart_pending: false,
            migration: None,
            migrations: Vec::new(),
            evicted_at: None,
            incarnation: 1,
            nominated: None,
        });
        self.arrived_gpus += u64::from(self.tasks[id].total_gpus());
        match self.choose_for(id, &[], &[]) {
            Some(n) => self.place(id, &n, now),
            None => self.pending.push(id),
        }
    }

    /// Applies one action of a caretaker's pass; the migration it requested, if any (its
    /// acknowledgement is due `ack_delay_ms` later).
    fn apply(&mut self, action: Action, now: i64) -> Option<usize> {
        match action {
            Action::Migrate {
                task,
                uuid,
                payload,
                hints,
            } => {
                let t = &self.tasks[task];
                if t.state != TaskState::Running || t.migration.is_some() {
                    return None;
                }
                let m = self.migrations.len();
                // The node the request names (a gang's worker node, say),
                // else the (leader) pod's.
                let from = RequestPayload::decode(&payload)
                    .ok()
                    .and_then(|p| self.world.node_index(&p.from_node))
                    .filter(|n| t.pod_nodes().contains(n))
                    .or(t.node)
                    .unwrap_or(0);
                self.migrations.push(Migration {
                    uuid,
                    task,
                    from,
                    hints,
                    payload,
                    requested: now,
                    started: None,
                    target: None,
                    worker_target: None,
                    ended: None,
                    phase: MigPhase::Requested,
                });
                self.tasks[task].migration = Some(m);
                self.touched.push(task);
                self.tasks[task].migrations.push(m);
                self.move_times.push(now);
                return Some(m);
            }
            Action::Cordon { node, cordoned } => {
                self.world.nodes[node].cordoned = cordoned;
                if !cordoned {
                    self.retry(Some(node), now);
                }
            }
            Action::Nominate {
                task,
                incarnation,
                node,
            } => {
                let t = &self.tasks[task];
                if t.state != TaskState::Pending
                    || t.incarnation != incarnation
                    || t.nominated.is_some()
                    || t.gang
                {
                    return None;
                }
                let req = t.req;
                self.touched.push(task);
                self.tasks[task].nominated = Some(node);
                self.world.hold(node, &req);
                self.nominations += 1;
                // The pod's update puts it back in the scheduler's active queue.
                self.retry(Some(node), now);
            }
            Action::ClearNomination {
                task,
                incarnation,
                node,
            } => {
                let t = &self.tasks[task];
                if t.incarnation != incarnation || t.nominated != Some(node) {
                    return None;
                }
                self.clear_nomination(task);
                self.retry(Some(node), now);
            }
            Action::Taint {
                node,
                tainted,
                value,
            } => {
                self.world.nodes[node].tainted = tainted;
                self.world.nodes[node].taint_value = if tainted { value } else { String::new() };
                if !tainted {
                    self.retry(Some(node), now);
                }
            }
            Action::FailMigration { task } => {
                let m = self.tasks[task].migration?;
                // The surge pods already placed go with the failed move.
                let req = self.tasks[task].req;
                let placed: Vec<usize> = self.migrations[m]
                    .target
                    .into_iter()
                    .chain(self.migrations[m].worker_target)
                    .collect();
                for n in placed {
                    self.surge_on_node[n].retain(|&x| x != m);
                    self.world.release(n, &req);
                    self.retry(Some(n), now);
                }
                self.migrations[m].target = None;
                self.migrations[m].worker_target = None;
                // OMENative picked it up to fail it: its status row exists.
                self.migrations[m].started.get_or_insert(now);
                self.end_migration(m, MigPhase::Failed, now);
            }
            Action::Evict { task } => {
                let t = &self.tasks[task];
                if t.state != TaskState::Running || t.migration.is_some() || t.gang {
                    return None;
                }
                let node = self.unplace(task).first().copied();
                self.evictions += 1;
                self.move_times.push(now);
                // `unplace` logged the task.
                let t = &mut self.tasks[task];
                t.state = TaskState::Pending;
                t.evicted_at = Some(now);
                t.incarnation += 1;
                self.pending.push(task);
                // The scheduler re-places it at once if it can.
                let excluded: Vec<usize> = node.into_iter().collect();
                let choice = self
                    .choose_for(task, &excluded, &[])
                    .or_else(|| self.choose_for(task, &[], &[]));
                if let Some(n) = choice {
                    self.pending.retain(|&x| x != task);
                    self.place(task, &n, now);
                }
                self.retry(node, now);
            }
        }
        None
    }

    /// OMENative picks migration `m` up and places its surge pods (a gang: all or nothing,
    /// one domain), preferring the hints in order, never on the node the request leaves.
    /// Whether the surge started (its readiness is due `ready_ms` later); else it failed.
    fn acknowledge(&mut self, m: usize, now: i64) -> bool {
        let mig = &self.migrations[m];
        let task = mig.task;
        let req = self.tasks[task].req;
        let target = self.choose_for(task, &[mig.from], &mig.hints.clone());
        self.migrations[m].started = Some(now);
        match target {
            Some(nodes) => {
                for &n in &nodes {
                    self.world.bind(n, &req);
                    self.surge_on_node[n].push(m);
                }
                self.migrations[m].target = nodes.first().copied();
                self.migrations[m].worker_target = nodes.get(1).copied();
                self.migrations[m].phase = MigPhase::Surge;
                true
            }
            None => {
                self.end_migration(m, MigPhase::Failed, now);
                false
            }
        }
    }
}
