//! Which `status.fleet` a new hub adopts (docs/plumb/design.md#the-hubs-writes):
//! the most recent among the members' copies it read, so phase, cooldown, followed decisions
//! and ready-wait clocks carry over a hand-over. One rule for every driver (the agent, the
//! fault campaign), so both adopt the same status from the same copies.

use plumb_model::FleetStatus;

/// The most recent of `copies`: the latest `lastStep`, then the largest tie-break key the
/// driver knows (the campaign: when it was written; the agent: the decision sequence), then
/// the last given. None when no copy carries a status.
pub fn most_recent_fleet<'a, K: Ord>(
    copies: impl IntoIterator<Item = (&'a FleetStatus, K)>,
) -> Option<&'a FleetStatus> {
    copies
        .into_iter()
        .max_by(|(a, ak), (b, bk)| a.last_step.cmp(&b.last_step).then(ak.cmp(bk)))
        .map(|(fleet, _)| fleet)
}

/// The sequence of a decision id (`<sequence>-<8 hex>`), 0 when there is none: the agent's
/// tie-break between copies stepped at the same instant.
pub fn decision_sequence(fleet: &FleetStatus) -> u64 {
    fleet
        .last_decision
        .as_deref()
        .and_then(|id| id.split('-').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_model::Timestamp;

    fn fleet(last_step: Option<i64>, decision: Option<&str>) -> FleetStatus {
        FleetStatus {
            last_step: last_step.map(Timestamp::from_unix_secs),
            last_decision: decision.map(str::to_owned),
            ..FleetStatus::default()
        }
    }

    #[test]
    fn the_latest_last_step_wins_then_the_key() {
        let old = fleet(Some(100), Some("9-aaaaaaaa"));
        let new = fleet(Some(200), Some("3-bbbbbbbb"));
        let none = fleet(None, None);
        let copies = [&old, &new, &none].map(|f| (f, decision_sequence(f)));
        assert_eq!(most_recent_fleet(copies), Some(&new));
        let tie = fleet(Some(200), Some("4-cccccccc"));
        let copies = [&new, &tie, &old].map(|f| (f, decision_sequence(f)));
        assert_eq!(most_recent_fleet(copies), Some(&tie));
        assert_eq!(most_recent_fleet::<u64>([]), None);
    }

    #[test]
    fn a_decision_id_without_a_sequence_counts_as_zero() {
        assert_eq!(decision_sequence(&fleet(None, Some("x-1"))), 0);
        assert_eq!(decision_sequence(&fleet(None, Some("12-0000abcd"))), 12);
        assert_eq!(decision_sequence(&FleetStatus::default()), 0);
    }
}
