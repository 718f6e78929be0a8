//! Prometheus as the members see it: per-second series kept for a while, scraped every
//! `scrape` seconds, read through a `window`-second query. A signal read at `t` therefore
//! describes the window ending at the last scrape, up to `scrape + window` seconds behind
//! what the servers do now (the lag the operations checklist asks `cooldown` to exceed).

use std::collections::VecDeque;

use crate::queue::{Histogram, SecondStats};

/// The signals a member reads.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Signals {
    /// Arriving requests per second.
    pub demand: f64,
    /// Waiting requests per ready replica, averaged over the window.
    pub pressure: f64,
    /// TTFT p95 over the window, seconds (0 with no request served, as a query written with
    /// `or vector(0)` reads).
    pub latency: f64,
    /// Dropped requests over arrivals in the window (0 with none).
    pub error_rate: f64,
    /// When the sample was taken (seconds since the run's start).
    pub sampled_at: u64,
}

/// One cluster's recorded seconds.
#[derive(Debug, Clone)]
pub struct Series {
    seconds: VecDeque<(u64, SecondStats)>,
    scrape: u64,
    window: u64,
}

impl Series {
    /// Empty series for this scrape interval and query window.
    pub fn new(scrape: u64, window: u64) -> Series {
        Series {
            seconds: VecDeque::new(),
            scrape: scrape.max(1),
            window: window.max(1),
        }
    }

    /// Records second `t`.
    pub fn push(&mut self, t: u64, stats: SecondStats) {
        self.seconds.push_back((t, stats));
        let keep = self.scrape + self.window + 5;
        while self.seconds.front().is_some_and(|(s, _)| s + keep < t) {
            self.seconds.pop_front();
        }
    }

    /// The signals as a query at `now` reads them (the window ending at the last scrape at or
    /// before `now`).
    pub fn read(&self, now: u64) -> Signals {
        let end = now - now % self.scrape;
        let start = end.saturating_sub(self.window);
        let mut arrivals = 0u64;
        let mut dropped = 0u64;
        let mut pressure = 0.0;
        let mut n = 0u32;
        let mut ttft = Histogram::default();
        for (t, s) in &self.seconds {
            if *t < start || *t >= end {
                continue;
            }
            arrivals += u64::from(s.arrivals);
            dropped += u64::from(s.dropped);
            pressure += f64::from(s.waiting) / f64::from(s.ready.max(1));
            ttft.add(&s.ttft);
            n += 1;
        }
        Signals {
            demand: arrivals as f64 / self.window as f64,
            pressure: if n == 0 { 0.0 } else { pressure / f64::from(n) },
            latency: ttft.quantile(0.95).unwrap_or(0.0),
            error_rate: if arrivals == 0 {
                0.0
            } else {
                dropped as f64 / arrivals as f64
            },
            sampled_at: end,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_sees_the_window_before_the_last_scrape_only() {
        let mut s = Series::new(15, 60);
        for t in 0..200 {
            let arrivals = if t >= 170 { 100 } else { 2 };
            s.push(
                t,
                SecondStats {
                    arrivals,
                    waiting: 4,
                    ready: 2,
                    ..SecondStats::default()
                },
            );
        }
        // at 199 the last scrape was at 195: the window is [135, 195): 35 s at 2, 25 s at 100
        let r = s.read(199);
        assert_eq!(r.sampled_at, 195);
        assert!((r.demand - (35.0 * 2.0 + 25.0 * 100.0) / 60.0).abs() < 1e-9);
        assert!((r.pressure - 2.0).abs() < 1e-9);
        assert_eq!(r.latency, 0.0);
    }
}
