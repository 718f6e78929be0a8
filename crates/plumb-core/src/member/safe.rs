//! `safePressure` and `safeSince`: the highest pressure this cluster served while it was not
//! short, with every replica its autoscaler wanted ready and every signal read. The window
//! lasts a day from `safeSince`, then starts over, so a load pattern long gone stops vouching
//! for what the replicas can take.

use plumb_model::{Report, Timestamp};

/// How long one `safePressure` window lasts.
pub const SAFE_WINDOW_SECS: u64 = 24 * 60 * 60;

/// The new `safePressure` and `safeSince`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Safe {
    /// The highest safe pressure of the window, if any was seen.
    pub pressure: Option<f64>,
    /// When the window started.
    pub since: Option<Timestamp>,
}

/// Carries the previous report's window forward (a new one when there is none, or it is a day
/// old) and raises it to `pressure` when the cluster served it safely (`safe_now`). Without a
/// pressure signal there is nothing to track.
pub fn safe_pressure(
    pressure: Option<f64>,
    safe_now: bool,
    previous: Option<&Report>,
    now: Timestamp,
) -> Safe {
    let window = previous
        .and_then(|p| p.safe_since.map(|since| (since, p.safe_pressure)))
        .filter(|(since, _)| *since <= now && now.since(*since).as_secs() < SAFE_WINDOW_SECS);
    let (since, mut best) = window.unwrap_or((now, None));
    match pressure {
        None if previous.is_none_or(|p| p.safe_since.is_none()) => Safe::default(),
        Some(p) if safe_now => {
            best = Some(best.map_or(p, |b| b.max(p)));
            Safe {
                pressure: best,
                since: Some(since),
            }
        }
        _ => Safe {
            pressure: best,
            since: Some(since),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().expect("time")
    }

    fn prev(pressure: Option<f64>, since: &str) -> Report {
        Report {
            safe_pressure: pressure,
            safe_since: Some(at(since)),
            ..Report::default()
        }
    }

    #[test]
    fn the_first_safe_report_starts_the_window() {
        let now = at("2026-12-01T12:00:00Z");
        assert_eq!(
            safe_pressure(Some(3.0), true, None, now),
            Safe {
                pressure: Some(3.0),
                since: Some(now)
            }
        );
        assert_eq!(safe_pressure(None, true, None, now), Safe::default());
        assert_eq!(
            safe_pressure(Some(3.0), false, None, now),
            Safe {
                pressure: None,
                since: Some(now)
            }
        );
    }

    #[test]
    fn only_safe_reports_raise_it_and_unsafe_ones_keep_it() {
        let now = at("2026-12-01T12:00:00Z");
        let p = prev(Some(4.0), "2026-12-01T08:00:00Z");
        let kept = safe_pressure(Some(9.0), false, Some(&p), now);
        assert_eq!(kept.pressure, Some(4.0));
        assert_eq!(kept.since, Some(at("2026-12-01T08:00:00Z")));
        assert_eq!(
            safe_pressure(Some(9.0), true, Some(&p), now).pressure,
            Some(9.0)
        );
        assert_eq!(
            safe_pressure(Some(2.0), true, Some(&p), now).pressure,
            Some(4.0)
        );
        assert_eq!(safe_pressure(None, true, Some(&p), now).pressure, Some(4.0));
    }

    #[test]
    fn a_day_old_window_starts_over() {
        let now = at("2026-12-02T08:00:00Z");
        let p = prev(Some(4.0), "2026-12-01T08:00:00Z");
        assert_eq!(
            safe_pressure(Some(2.0), true, Some(&p), now),
            Safe {
                pressure: Some(2.0),
                since: Some(now)
            }
        );
        let just_before = at("2026-12-02T07:59:59Z");
        assert_eq!(
            safe_pressure(Some(2.0), true, Some(&p), just_before).pressure,
            Some(4.0)
        );
    }
}
