//! The workload: arrivals generated from a pod list in one of three modes.
//!
//! * `churn` (default): Poisson arrivals of tasks drawn uniformly from the trace (its size
//!   and shape mix), exponential lifetimes with mean `--mean-lifetime`; the rate is set so
//!   that the offered load is `--target-utilization` of the cluster's GPUs:
//!   `λ = U · capacity / (mean GPUs per task · mean lifetime)`.
//! * `fill` (FGD paper style): tasks in trace order, sampled again from the start when the
//!   list is exhausted, no departures, until the GPUs asked reach `--fill-to` of capacity;
//!   arrivals are evenly spaced over the first 90% of the run.
//! * `timed`: the trace's own `creation_time`/`deletion_time`, times `--time-scale`.
//!
//! `--time-scale S` applies to every mode: every instant and lifetime is multiplied by `S`.
//! `churn` generates its arrivals for a run of `horizon / S` first (inter-arrival times and
//! lifetimes scale together: the run is as long, the offered load unchanged, there are
//! `1/S` times as many arrivals); `fill` spreads its arrivals over `0.9 · horizon · S`
//! instead of `0.9 · horizon` (those after the horizon are dropped).
//!
//! `--gang-share F`: each arrival is, with probability `F`, a **gang**: a 2×8-GPU Instance
//! (two pods of 8 GPUs, one PodGroup) instead of the drawn task's shape (the task still
//! gives CPU and memory per pod). The draw uses its own PRNG stream, so `F = 0` leaves
//! the arrivals unchanged; in churn mode the rate accounts for the gangs' 16 GPUs.
//!
//! Everything is drawn from the twin's PRNG: the same seed and input give the same arrivals,
//! which every caretaker of a run shares.

use anyhow::{Result, bail};

use crate::rng::Rng;
use crate::trace::TraceTask;

/// Arrival mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Poisson arrivals, exponential lifetimes.
    Churn,
    /// Trace order, no departures.
    Fill,
    /// Trace times.
    Timed,
}

impl Mode {
    /// CLI name.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Churn => "churn",
            Mode::Fill => "fill",
            Mode::Timed => "timed",
        }
    }
    /// Parses the CLI name.
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "churn" => Some(Mode::Churn),
            "fill" => Some(Mode::Fill),
            "timed" => Some(Mode::Timed),
            _ => None,
        }
    }
}

/// Options of the generator.
#[derive(Debug, Clone)]
pub struct ArrivalOptions {
    /// Mode.
    pub mode: Mode,
    /// Length of the run (ms).
    pub horizon_ms: i64,
    /// Offered load in churn mode.
    pub target_utilization: f64,
    /// Mean lifetime in churn mode (ms).
    pub mean_lifetime_ms: f64,
    /// Share of capacity asked in fill mode.
    pub fill_to: f64,
    /// Multiplier of trace times in timed mode.
    pub time_scale: f64,
    /// Timed mode: trace second the run starts at (`None` = the earliest creation). Tasks
    /// created earlier and still alive then arrive at once with their remaining lifetime.
    pub timed_start: Option<i64>,
    /// Share of arrivals that are 2×8-GPU gangs.
    pub gang_share: f64,
    /// Seed.
    pub seed: u64,
}

/// GPUs per pod of a gang.
pub const GANG_POD_GPUS: u32 = 8;
/// Pods per gang.
pub const GANG_PODS: u32 = 2;

/// One arriving task (a single-pod OMENative InferenceService).
#[derive(Debug, Clone, PartialEq)]
pub struct Arrival {
    /// When (ms from the start).
    pub at: i64,
    /// Index of the trace task it copies.
    pub task: usize,
    /// How long it runs once first placed (ms); `None` = forever.
    pub lifetime: Option<i64>,
    /// A 2×8-GPU gang (two pods, one PodGroup).
    pub gang: bool,
}

/// Generates the arrivals (sorted by time).
pub fn generate(
    tasks: &[TraceTask],
    capacity_gpus: u64,
    o: &ArrivalOptions,
) -> Result<Vec<Arrival>> {
    if tasks.is_empty() {
        bail!("no GPU task to draw from");
    }
    let scale = if o.mode == Mode::Timed {
        1.0
    } else {
        o.time_scale
    };
    if scale.is_nan() || scale <= 0.0 {
        bail!("--time-scale must be positive");
    }
    if !(0.0..=1.0).contains(&o.gang_share) {
        bail!("--gang-share must be in [0, 1]");
    }
    let horizon_ms = if o.mode == Mode::Churn {
        (o.horizon_ms as f64 / scale).ceil() as i64
    } else {
        o.horizon_ms
    };
    let mut rng = Rng::new(o.seed);
    let mut gang_rng = Rng::new(o.seed ^ 0x6A96_0000_0000_0001);
    let mut is_gang = || o.gang_share > 0.0 && gang_rng.uniform() < o.gang_share;
    let mut out = Vec::new();
    match o.mode {
        Mode::Churn => {
            let mean_gpus =
                tasks.iter().map(|t| f64::from(t.gpus)).sum::<f64>() / tasks.len() as f64;
            let mean_gpus = (1.0 - o.gang_share) * mean_gpus
                + o.gang_share * f64::from(GANG_POD_GPUS * GANG_PODS);
            let rate =
                o.target_utilization * capacity_gpus as f64 / (mean_gpus * o.mean_lifetime_ms);
            if rate.is_nan() || rate <= 0.0 {
                bail!("arrival rate is not positive");
            }
            let mut t = 0.0;
            loop {
                t += rng.exp(1.0 / rate);
                if t >= horizon_ms as f64 {
                    break;
                }
                let task = rng.index(tasks.len());
                let life = rng.exp(o.mean_lifetime_ms).max(1000.0);
                out.push(Arrival {
                    at: t as i64,
                    task,
                    lifetime: Some(life as i64),
                    gang: is_gang(),
                });
            }
        }
        Mode::Fill => {
            let goal = o.fill_to * capacity_gpus as f64;
            let mut asked = 0.0;
            let mut picks = Vec::new();
            let mut i = 0;
            while asked < goal {
                let gang = is_gang();
                picks.push((i % tasks.len(), gang));
                asked += if gang {
                    f64::from(GANG_POD_GPUS * GANG_PODS)
                } else {
                    f64::from(tasks[i % tasks.len()].gpus)
                };
                i += 1;
            }
            let span = horizon_ms as f64 * 0.9;
            let step = span / picks.len().max(1) as f64;
            for (k, (task, gang)) in picks.into_iter().enumerate() {
                out.push(Arrival {
                    at: (k as f64 * step) as i64,
                    task,
                    lifetime: None,
                    gang,
                });
            }
        }
        Mode::Timed => {
            let first = tasks.iter().filter_map(|t| t.creation).min();
            let Some(first) = first else {
                bail!("timed mode needs creation_time/deletion_time columns in the pod list");
            };
            let start = o.timed_start.unwrap_or(first);
            for (i, t) in tasks.iter().enumerate() {
                let (Some(c), Some(d)) = (t.creation, t.deletion) else {
                    continue;
                };
                if d <= start {
                    continue;
                }
                let c = c.max(start);
                let at = ((c - start) as f64 * 1000.0 * o.time_scale) as i64;
                if at >= o.horizon_ms {
                    continue;
                }
                let life = (((d - c).max(1)) as f64 * 1000.0 * o.time_scale) as i64;
                out.push(Arrival {
                    at,
                    task: i,
                    lifetime: Some(life.max(1)),
                    gang: is_gang(),
                });
            }
            out.sort_by_key(|a| (a.at, a.task));
        }
    }
    if scale != 1.0 {
        for a in &mut out {
            a.at = (a.at as f64 * scale) as i64;
            a.lifetime = a.lifetime.map(|l| ((l as f64 * scale) as i64).max(1));
        }
        out.retain(|a| a.at < o.horizon_ms);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(gpus: u32, c: Option<i64>, d: Option<i64>) -> TraceTask {
        TraceTask {
            name: format!("p{gpus}"),
            cpu_milli: 1000,
            memory_mib: 1024,
            gpus,
            gpu_spec: vec![],
            creation: c,
            deletion: d,
        }
    }

    fn opts(mode: Mode) -> ArrivalOptions {
        ArrivalOptions {
            mode,
            horizon_ms: 10 * 24 * 3_600_000,
            target_utilization: 0.5,
            mean_lifetime_ms: 3_600_000.0,
            fill_to: 1.0,
            time_scale: 1.0,
            timed_start: None,
            gang_share: 0.0,
            seed: 1,
        }
    }

    #[test]
    fn churn_rate_matches_target_load() {
        let tasks = [task(1, None, None), task(3, None, None)];
        let a = generate(&tasks, 100, &opts(Mode::Churn)).unwrap();
        // λ = 0.5 · 100 / (2 · 1h) = 25/h over 240 h = 6000.
        assert!((a.len() as f64 - 6000.0).abs() < 300.0, "{}", a.len());
        let mean_life = a.iter().map(|x| x.lifetime.unwrap() as f64).sum::<f64>() / a.len() as f64;
        assert!((mean_life / 3_600_000.0 - 1.0).abs() < 0.05, "{mean_life}");
        assert!(a.windows(2).all(|w| w[0].at <= w[1].at));
        assert_eq!(
            a,
            generate(&tasks, 100, &opts(Mode::Churn)).unwrap(),
            "deterministic"
        );
    }

    #[test]
    fn fill_cycles_in_trace_order_until_capacity() {
        let tasks = [task(1, None, None), task(8, None, None)];
        let a = generate(&tasks, 20, &opts(Mode::Fill)).unwrap();
        let order: Vec<usize> = a.iter().map(|x| x.task).collect();
        assert_eq!(order, vec![0, 1, 0, 1, 0, 1]); // 19 < 20 after five, 27 after six
        assert!(a.iter().all(|x| x.lifetime.is_none()));
    }

    #[test]
    fn timed_uses_trace_times() {
        let tasks = [
            task(1, Some(100), Some(160)),
            task(2, Some(10), Some(20)),
            task(1, None, None),
        ];
        let mut o = opts(Mode::Timed);
        o.time_scale = 2.0;
        let a = generate(&tasks, 10, &o).unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!((a[0].task, a[0].at, a[0].lifetime), (1, 0, Some(20_000)));
        assert_eq!(
            (a[1].task, a[1].at, a[1].lifetime),
            (0, 180_000, Some(120_000))
        );
        assert!(generate(&[task(1, None, None)], 10, &o).is_err());
        // Starting at trace second 105: the first task is gone, the second arrives at once
        // with its remaining 55 s (× 2).
        o.timed_start = Some(105);
        let a = generate(&tasks, 10, &o).unwrap();
        assert_eq!(a.len(), 1);
        assert_eq!((a[0].task, a[0].at, a[0].lifetime), (0, 0, Some(110_000)));
    }

    #[test]
    fn time_scale_stretches_churn_and_fill_consistently() {
        let tasks = [task(1, None, None), task(3, None, None)];
        // Churn over 2H with S = 2: the arrivals of H with every instant and lifetime × 2.
        let base = generate(&tasks, 100, &opts(Mode::Churn)).unwrap();
        let mut o = opts(Mode::Churn);
        o.time_scale = 2.0;
        o.horizon_ms *= 2;
        let scaled = generate(&tasks, 100, &o).unwrap();
        assert_eq!(base.len(), scaled.len());
        for (a, b) in base.iter().zip(&scaled) {
            assert_eq!((b.task, b.at), (a.task, 2 * a.at));
            assert_eq!(b.lifetime, a.lifetime.map(|l| 2 * l));
        }
        // Same horizon: half as many arrivals, the same load (lifetimes twice as long).
        o.horizon_ms /= 2;
        let half = generate(&tasks, 100, &o).unwrap();
        assert!(half.iter().all(|a| a.at < o.horizon_ms));
        let ratio = half.len() as f64 / base.len() as f64;
        assert!((ratio - 0.5).abs() < 0.03, "{ratio}");
        // Fill: the same tasks in the same order, inter-arrival times × S; with S = 2 the
        // ones after the horizon are dropped (0.9 · 2 = 1.8 horizons → 1/1.8 kept).
        let base = generate(&tasks, 100, &opts(Mode::Fill)).unwrap();
        for s in [0.5, 2.0] {
            let mut o = opts(Mode::Fill);
            o.time_scale = s;
            let f = generate(&tasks, 100, &o).unwrap();
            for (a, b) in base.iter().zip(&f) {
                assert_eq!((b.task, b.at), (a.task, (a.at as f64 * s) as i64));
            }
            let kept = f.len() as f64 / base.len() as f64;
            let want = if s < 1.0 { 1.0 } else { 1.0 / 1.8 };
            assert!((kept - want).abs() < 0.05, "fill × {s}: {kept}");
        }
        let mut o = opts(Mode::Churn);
        o.time_scale = 0.0;
        assert!(generate(&tasks, 100, &o).is_err());
    }

    #[test]
    fn gang_share_marks_arrivals_and_keeps_the_load() {
        let tasks = [task(1, None, None), task(3, None, None)];
        let plain = generate(&tasks, 1000, &opts(Mode::Churn)).unwrap();
        assert!(plain.iter().all(|a| !a.gang));
        let mut o = opts(Mode::Churn);
        o.gang_share = 0.2;
        let g = generate(&tasks, 1000, &o).unwrap();
        let gangs = g.iter().filter(|a| a.gang).count() as f64 / g.len() as f64;
        assert!((gangs - 0.2).abs() < 0.02, "{gangs}");
        // Offered GPUs stay at the target: 0.5 · 1000 GPUs · 240 h / 1 h.
        let asked: f64 = g
            .iter()
            .map(|a| {
                let gpus = if a.gang {
                    16.0
                } else {
                    f64::from(tasks[a.task].gpus)
                };
                gpus * a.lifetime.unwrap() as f64 / 3_600_000.0
            })
            .sum();
        assert!(
            (asked / (0.5 * 1000.0 * 240.0) - 1.0).abs() < 0.05,
            "{asked}"
        );
        o.gang_share = 1.5;
        assert!(generate(&tasks, 1000, &o).is_err());
    }
}
