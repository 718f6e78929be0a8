//! The rule that ties a hub to its own member (docs/plumb/agent.md#the-hubs-own-member).
//!
//! A hub steps the policies it lists on its own member's API server, so a hub whose own
//! server does not answer steps nothing: floors go unrenewed and traffic does not move, while
//! its lock, renewed on a majority of the other members' Leases, keeps everyone else from
//! taking over. So the own member's Lease is part of every hold:
//!
//! 1. a round whose read of the own member's Lease failed writes nothing (no acquisition, no
//!    renewal), so the hold lapses at the renew deadline and the others' clocks run out one
//!    lease duration after the last renewal, as if the hub had died;
//! 2. a write that committed on a majority but not on the own member's Lease is no renewal of
//!    this agent's hold (it does not extend how long it acts);
//! 3. a hold that lapsed while the own member was failing benches the agent for one lease
//!    duration: it writes nothing then, even if its server answers again, so another agent
//!    can take the lock instead of racing the one that just failed. After that it campaigns
//!    like any other agent (it waits while another holds the Lease).
//!
//! A server that misses a round now and then (slow, or flapping) costs nothing as long as one
//! round per renew deadline reaches it: only a lapse steps the hub down. Pure: the lock
//! feeds it what each round saw and the time.

use std::time::Duration;

use utc_time::Timestamp;

/// Why a round writes no Lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// The own member's Lease could not be read this round.
    OwnUnreadable,
    /// The hold lapsed while the own member failed; no write until then.
    Benched {
        /// When the agent may campaign again.
        until: Timestamp,
    },
}

/// What the rule remembers between rounds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnMember {
    /// Whether the own member failed (its Lease unread, or a committed write missed it) since
    /// this agent's last hold that included it.
    missed: bool,
    /// Until when this agent writes nothing (rule 3).
    benched_until: Option<Timestamp>,
}

impl OwnMember {
    /// Whether this round may write, given whether the own member's Lease was read at `now`
    /// (rules 1 and 3).
    pub fn may_write(&mut self, own_read: bool, now: Timestamp) -> Result<(), Skip> {
        if let Some(until) = self.benched_until {
            if now < until {
                return Err(Skip::Benched { until });
            }
            self.benched_until = None;
        }
        if !own_read {
            self.missed = true;
            return Err(Skip::OwnUnreadable);
        }
        Ok(())
    }

    /// A write committed on a majority: whether it counts as this agent's hold (rule 2).
    pub fn committed(&mut self, own_landed: bool) -> bool {
        self.missed = !own_landed;
        own_landed
    }

    /// The hold lapsed at `now`: a lapse while the own member failed benches the agent for
    /// `lease_duration` (rule 3). Returns whether it did.
    pub fn lapsed(&mut self, now: Timestamp, lease_duration: Duration) -> bool {
        if !self.missed {
            return false;
        }
        self.benched_until = Some(now.plus(lease_duration));
        self.missed = false;
        true
    }

    /// Whether the own member failed since the last hold that included it.
    pub fn missing(&self) -> bool {
        self.missed
    }
}
