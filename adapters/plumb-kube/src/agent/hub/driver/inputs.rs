//! What the hub makes of the copies it read, pure: each member's [`MemberInput`] (a fresh
//! read, else the last one, whose report then goes stale by plumb-core's two-minute rule),
//! which copies hold the policy's `status.fleet`, and the status a new term adopts.

use std::collections::BTreeMap;

use plumb_core::hub::{HubConfig, MemberInput, decision_sequence, most_recent_fleet};
use plumb_core::quorum::majority;
use plumb_model::{AdaptivePolicySpec, FleetStatus, PolicyStatus};
use serde_json::Value;

/// One member's copy of a policy as this step read it.
#[derive(Debug, Clone, PartialEq)]
pub enum CopyRead {
    /// Read: its status (empty when it has none yet).
    Read(Box<PolicyStatus>),
    /// The member answered and has no copy of the policy.
    Absent,
    /// Not one of the members the hub reaches (no client): it has no report (D.4).
    NotMember,
    /// The read failed (the member's last read stands).
    Failed(String),
}

/// The copy of `key` in one member's listing (`None`: no client for it).
pub fn copy_read(key: &str, listing: Option<&Result<BTreeMap<String, Value>, String>>) -> CopyRead {
    match listing {
        None => CopyRead::NotMember,
        Some(Err(e)) => CopyRead::Failed(e.clone()),
        Some(Ok(copies)) => match copies.get(key) {
            None => CopyRead::Absent,
            Some(copy) => match status_of(copy) {
                Ok(status) => CopyRead::Read(Box::new(status)),
                Err(e) => CopyRead::Failed(e),
            },
        },
    }
}

/// The `status` of a copy (lenient: unknown fields are a newer member's); an absent or null
/// status is an empty one. The error names the field.
pub fn status_of(copy: &Value) -> Result<PolicyStatus, String> {
    match copy.get("status") {
        None | Some(Value::Null) => Ok(PolicyStatus::default()),
        Some(status) => serde_path_to_error::deserialize(status).map_err(|e| {
            format!(
                "status.{}: {}",
                e.path(),
                crate::one_line(&e.inner().to_string())
            )
        }),
    }
}

/// Remembers this step's reads in `last` (a copy read replaces the last read, a copy gone
/// removes it, a failed read keeps it and is appended to `errors` as `<cluster>: <error>`).
pub fn remember(
    reads: &BTreeMap<String, CopyRead>,
    last: &mut BTreeMap<String, PolicyStatus>,
    errors: &mut Vec<String>,
) {
    for (cluster, read) in reads {
        match read {
            CopyRead::Read(status) => {
                last.insert(cluster.clone(), (**status).clone());
            }
            CopyRead::Absent => {
                last.remove(cluster);
            }
            CopyRead::Failed(e) => errors.push(format!("{cluster}: {e}")),
            CopyRead::NotMember => {}
        }
    }
}

/// Every spec member's input from its last read (this step's where it has one), with the
/// hash the hub expects from its own copy of the spec.
pub fn member_inputs(
    spec: &AdaptivePolicySpec,
    namespace: Option<&str>,
    last: &BTreeMap<String, PolicyStatus>,
) -> BTreeMap<String, MemberInput> {
    HubConfig::from_spec(spec)
        .clusters
        .iter()
        .map(|c| {
            let status = last.get(&c.name);
            let input = MemberInput {
                report: status.and_then(|s| s.report.clone()),
                intent: status.and_then(|s| s.intent.clone()),
                expected_hash: plumb_model::member_spec_hash(spec, namespace, &c.name),
            };
            (c.name.clone(), input)
        })
        .collect()
}

/// The members whose copies carry `status.fleet`: this member first, then every spec member
/// the hub reaches. A status counts as stored once this member's copy and a majority of
/// these hold it, so a successor reading a majority of them reads at least one
/// (docs/plumb/design.md#the-hubs-writes).
pub fn fleet_holders<'a>(
    spec: &AdaptivePolicySpec,
    own: &str,
    reachable: impl Fn(&str) -> bool + 'a,
) -> Vec<String> {
    let mut holders = vec![own.to_owned()];
    for c in &HubConfig::from_spec(spec).clusters {
        if c.name != own && reachable(&c.name) {
            holders.push(c.name.clone());
        }
    }
    holders
}

/// The `status.fleet` a new term adopts: the most recent among the copies read this step,
/// once a majority of `holders`' copies were read (none, and the hub waits, while fewer); an
/// empty status when no copy has one.
pub fn adoption(reads: &BTreeMap<String, CopyRead>, holders: &[String]) -> Option<FleetStatus> {
    let read: Vec<&PolicyStatus> = holders
        .iter()
        .filter_map(|h| match reads.get(h) {
            Some(CopyRead::Read(status)) => Some(&**status),
            _ => None,
        })
        .collect();
    if read.len() < majority(holders.len()) {
        return None;
    }
    let fleets = read
        .iter()
        .filter_map(|s| s.fleet.as_ref())
        .map(|f| (f, decision_sequence(f)));
    Some(most_recent_fleet(fleets).cloned().unwrap_or_default())
}
