//! Which members' reports the hub can use, and what each says about shortage and room
//! (docs/plumb/design.md#reports and docs/plumb/design.md#stepping-in).

use std::collections::BTreeMap;
use std::time::Duration;

use plumb_model::spec::Placement;
use plumb_model::{Intent, Report, Timestamp};

use super::config::{ClusterConfig, HubConfig};

/// A report older than this is stale.
pub const STALE_AFTER: Duration = Duration::from_secs(120);
/// Recent launch failures at or above this void a member's dynamic room and put its region
/// last for new nodes.
pub const RECURRING_LAUNCH_FAILURES: u32 = 3;

/// What a member hands the hub each step.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MemberInput {
    /// Its latest `status.report` (with its `time`), if any was read.
    pub report: Option<Report>,
    /// Its current `status.intent`, if any.
    pub intent: Option<Intent>,
    /// The spec hash the hub computes for this member from its own copy.
    pub expected_hash: String,
}

/// Why a report is or is not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportUse {
    /// Fresh and in sync.
    Usable,
    /// No report (or one without a time).
    Missing,
    /// Older than two minutes.
    Stale,
    /// Computed from a different spec.
    OutOfSync,
}

/// Classifies a member's report at `now`.
pub fn report_use(input: Option<&MemberInput>, now: Timestamp) -> ReportUse {
    let Some(report) = input.and_then(|i| i.report.as_ref()) else {
        return ReportUse::Missing;
    };
    let expected = input.map(|i| i.expected_hash.as_str()).unwrap_or_default();
    if report.spec_hash != expected {
        return ReportUse::OutOfSync;
    }
    match report.time {
        None => ReportUse::Missing,
        Some(t) if now.since(t) > STALE_AFTER => ReportUse::Stale,
        Some(_) => ReportUse::Usable,
    }
}

/// How far the fleet may step in for a short member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StepIn {
    /// Not short.
    NotShort,
    /// Short, but still trying alone.
    Waiting,
    /// Others' existing nodes (tier 0) may be lent (StaticFirst after `earlyAfter`).
    StaticOnly,
    /// Others' existing nodes and NodePools (tiers 0 and 1).
    Full,
}

/// One member as this step sees it.
#[derive(Debug, Clone)]
pub struct Member<'a> {
    /// Its spec entry.
    pub config: &'a ClusterConfig,
    /// Its report when usable.
    pub report: Option<&'a Report>,
    /// Why it is or is not usable.
    pub report_use: ReportUse,
    /// Its intent as read.
    pub intent: Option<&'a Intent>,
}

impl Member<'_> {
    /// Dynamic room, voided by recurring launch failures.
    pub fn dynamic_room(&self) -> u32 {
        self.report.map_or(0, |r| {
            if r.recent_launch_failures >= RECURRING_LAUNCH_FAILURES {
                0
            } else {
                r.dynamic_room
            }
        })
    }

    /// Its region: the spec's, else the report's.
    pub fn region(&self) -> Option<&str> {
        self.config
            .region
            .as_deref()
            .or_else(|| self.report.and_then(|r| r.region.as_deref()))
            .filter(|r| !r.is_empty())
    }

    /// Whether its own NodePools cannot help: none registered, at their limits, or voided by
    /// launch failures.
    pub fn pools_cannot_help(&self) -> bool {
        !self.config.has_node_pools || self.dynamic_room() == 0
    }

    /// Replicas on its nodes (or arriving) that are not ready yet.
    pub fn becoming_ready(&self) -> u32 {
        self.report.map_or(0, |r| {
            r.desired_replicas
                .saturating_sub(r.ready_replicas.saturating_add(r.unschedulable_replicas))
        })
    }
}

/// Every spec member, in spec order, with its report classified.
pub fn members<'a>(
    config: &'a HubConfig,
    inputs: &'a BTreeMap<String, MemberInput>,
    now: Timestamp,
) -> Vec<Member<'a>> {
    config
        .clusters
        .iter()
        .map(|c| {
            let input = inputs.get(&c.name);
            let report_use = report_use(input, now);
            Member {
                config: c,
                report: input
                    .and_then(|i| i.report.as_ref())
                    .filter(|_| report_use == ReportUse::Usable),
                report_use,
                intent: input.and_then(|i| i.intent.as_ref()),
            }
        })
        .collect()
}

/// How far the fleet may step in for a member that needs `need` replicas of its own
/// (docs/plumb/design.md#stepping-in).
pub fn step_in(config: &HubConfig, member: &Member<'_>, need: u32, now: Timestamp) -> StepIn {
    let Some(report) = member.report.filter(|_| need > 0) else {
        return StepIn::NotShort;
    };
    let short_for = report.short_since.map_or(Duration::ZERO, |s| now.since(s));
    let early = short_for >= config.early_after && member.becoming_ready() == 0;
    if short_for >= config.after || (early && member.pools_cannot_help()) {
        StepIn::Full
    } else if early && config.placement == Placement::StaticFirst {
        StepIn::StaticOnly
    } else {
        StepIn::Waiting
    }
}
