//! The schedule's answers at and around each checkpoint, the longer horizon, and a property:
//! walking any sequence of observation times writes every checkpoint exactly once, in order.

use std::time::Duration;

use proptest::prelude::*;
use utc_time::Timestamp;

use super::{Checkpoint, STANDARD_SECONDS, Schedule};

fn at(decided: Timestamp, secs: u64) -> Timestamp {
    decided.plus(Duration::from_secs(secs))
}

#[test]
fn nothing_is_due_before_the_first_minute_and_the_first_is_due_on_it() {
    let d = Timestamp::from_unix_secs(10_000);
    assert_eq!(Schedule::STANDARD.due(d, 0, at(d, 59)).count(), 0);
    let due: Vec<Checkpoint> = Schedule::STANDARD.due(d, 0, at(d, 60)).collect();
    assert_eq!(
        due,
        [Checkpoint {
            index: 0,
            after_seconds: 60,
            is_final: false
        }]
    );
}

#[test]
fn missed_checkpoints_fall_due_together_in_order_and_the_last_is_final() {
    let d = Timestamp::from_unix_secs(10_000);
    let due: Vec<(u64, bool)> = Schedule::STANDARD
        .due(d, 0, at(d, 5_000))
        .map(|c| (c.after_seconds, c.is_final))
        .collect();
    assert_eq!(due, [(60, false), (300, false), (900, true)]);
    assert!(Schedule::STANDARD.finished(3));
    assert!(!Schedule::STANDARD.finished(2));
    assert_eq!(Schedule::STANDARD.next_due(d, 3), None);
}

#[test]
fn lines_already_written_are_not_due_again() {
    let d = Timestamp::from_unix_secs(10_000);
    let due: Vec<u64> = Schedule::STANDARD
        .due(d, 1, at(d, 300))
        .map(|c| c.after_seconds)
        .collect();
    assert_eq!(due, [300]);
    assert_eq!(Schedule::STANDARD.next_due(d, 2), Some(at(d, 900)));
}

#[test]
fn a_longer_horizon_adds_a_final_checkpoint_rounded_up_to_the_second() {
    let s = Schedule::following(Duration::from_millis(1_200_500));
    assert_eq!(s.seconds(), [60, 300, 900, 1201]);
    assert_eq!(s.checkpoint(2).map(|c| c.is_final), Some(false));
    assert_eq!(s.checkpoint(3).map(|c| c.is_final), Some(true));
}

#[test]
fn a_horizon_within_fifteen_minutes_keeps_the_standard_schedule() {
    assert_eq!(
        Schedule::following(Duration::from_secs(900)),
        Schedule::STANDARD
    );
    assert_eq!(
        Schedule::following(Duration::from_secs(600)),
        Schedule::STANDARD
    );
    assert_eq!(Schedule::STANDARD.seconds(), STANDARD_SECONDS);
}

proptest! {
    #[test]
    fn any_observation_times_write_each_checkpoint_once_in_order(
        gaps in proptest::collection::vec(0u64..700, 1..40),
        horizon in 0u64..3_000,
    ) {
        let schedule = Schedule::following(Duration::from_secs(horizon));
        let d = Timestamp::from_unix_secs(50_000);
        let mut now = d;
        let mut written = 0;
        let mut seen = Vec::new();
        for gap in gaps {
            now = now.plus(Duration::from_secs(gap));
            for c in schedule.due(d, written, now) {
                prop_assert_eq!(c.index, written);
                prop_assert!(at(d, c.after_seconds) <= now);
                written = c.index + 1;
                seen.push(c.after_seconds);
            }
            if let Some(next) = schedule.next_due(d, written) {
                prop_assert!(next > now);
            }
        }
        prop_assert_eq!(seen.as_slice(), &schedule.seconds()[..written]);
    }
}
