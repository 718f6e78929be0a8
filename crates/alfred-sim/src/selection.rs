//! Profile selection for an Instance (docs/design-simulation.md#profile-selection): which
//! configured profile simulates its pods, or the scheduling reason why none does. Alfred's decision
//! pass calls this before building a request.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::DEFAULT_SCHEDULER_NAME;
use crate::identity::Identity;
use crate::outcome::SchedulingReason;

/// `alfredConfig.scheduling.profiles.<schedulerName>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProfileConfig {
    /// The worker's `--backend` label.
    pub backend: String,
    /// The scheduler version the worker must print.
    pub scheduler_version: String,
    /// The configuration ID the worker must print (checked at its startup probe).
    #[serde(rename = "configurationID")]
    pub configuration_id: String,
    /// Whether the profile simulates gangs (OMEGangPack); a multi-pod Instance needs it.
    #[serde(default)]
    pub gang_scheduling: bool,
}

/// What selection reads from one pod template of the Instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateFacts<'a> {
    /// `spec.schedulerName` (empty = `default-scheduler`).
    pub scheduler_name: &'a str,
    /// `spec.nodeName` (must be empty).
    pub node_name: &'a str,
}

/// The selected profile: the identity to put in the request and whether it simulates gangs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selected {
    /// The identity to put in the request.
    pub identity: Identity,
    /// Whether the selected profile simulates gangs.
    pub gang_scheduling: bool,
    /// The Instance has more than one pod: the request must set `requireGang`.
    pub require_gang: bool,
}

fn clean(s: &str) -> bool {
    !s.is_empty() && s.trim() == s
}

/// Selects the profile for an Instance with `pod_count` pods built from `templates`.
/// Reasons, in order: `NoTemplates`, `MixedSchedulers`, `TemplateBound`,
/// `ProfileNotConfigured`, `ProfileInvalid`, `GangUnsupported`. There is no fallback profile.
pub fn select_profile(
    templates: &[TemplateFacts<'_>],
    pod_count: usize,
    profiles: &BTreeMap<String, ProfileConfig>,
) -> Result<Selected, SchedulingReason> {
    let effective = |t: &TemplateFacts<'_>| {
        if t.scheduler_name.is_empty() {
            DEFAULT_SCHEDULER_NAME.to_string()
        } else {
            t.scheduler_name.to_string()
        }
    };
    let Some(first) = templates.first() else {
        return Err(SchedulingReason::NoTemplates);
    };
    let name = effective(first);
    if templates.iter().any(|t| effective(t) != name) {
        return Err(SchedulingReason::MixedSchedulers);
    }
    if templates.iter().any(|t| !t.node_name.is_empty()) {
        return Err(SchedulingReason::TemplateBound);
    }
    let Some(p) = profiles.get(&name) else {
        return Err(SchedulingReason::ProfileNotConfigured);
    };
    if !(clean(&p.backend) && clean(&p.scheduler_version) && clean(&p.configuration_id)) {
        return Err(SchedulingReason::ProfileInvalid);
    }
    let require_gang = pod_count > 1;
    if require_gang && !p.gang_scheduling {
        return Err(SchedulingReason::GangUnsupported);
    }
    Ok(Selected {
        identity: Identity {
            scheduler_name: name,
            backend: p.backend.clone(),
            scheduler_version: p.scheduler_version.clone(),
            configuration_id: p.configuration_id.clone(),
        },
        gang_scheduling: p.gang_scheduling,
        require_gang,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profiles() -> BTreeMap<String, ProfileConfig> {
        let mk = |b: &str, gang| ProfileConfig {
            backend: b.into(),
            scheduler_version: "v1.35.4".into(),
            configuration_id: "sha256:x".into(),
            gang_scheduling: gang,
        };
        BTreeMap::from([
            ("default-scheduler".to_string(), mk("kube-v135", false)),
            ("ome-scheduler".to_string(), mk("ome-v135", true)),
            ("padded".to_string(), mk(" b", false)),
        ])
    }

    fn t(s: &'static str) -> TemplateFacts<'static> {
        TemplateFacts {
            scheduler_name: s,
            node_name: "",
        }
    }

    #[test]
    fn reasons_in_order() {
        let p = profiles();
        assert_eq!(
            select_profile(&[], 1, &p),
            Err(SchedulingReason::NoTemplates)
        );
        assert_eq!(
            select_profile(&[t(""), t("ome-scheduler")], 2, &p),
            Err(SchedulingReason::MixedSchedulers)
        );
        let bound = TemplateFacts {
            scheduler_name: "",
            node_name: "n1",
        };
        assert_eq!(
            select_profile(&[bound], 1, &p),
            Err(SchedulingReason::TemplateBound)
        );
        assert_eq!(
            select_profile(&[t("volcano")], 1, &p),
            Err(SchedulingReason::ProfileNotConfigured)
        );
        assert_eq!(
            select_profile(&[t("padded")], 1, &p),
            Err(SchedulingReason::ProfileInvalid)
        );
        assert_eq!(
            select_profile(&[t("")], 2, &p),
            Err(SchedulingReason::GangUnsupported)
        );
        assert_eq!(
            SchedulingReason::GangUnsupported.status(),
            crate::SchedulingStatus::Unsupported
        );
        assert_eq!(
            SchedulingReason::ProfileNotConfigured.status(),
            crate::SchedulingStatus::Unavailable
        );
    }

    #[test]
    fn selects_by_effective_name() {
        let p = profiles();
        let s = select_profile(&[t(""), t("default-scheduler")], 1, &p).expect("selected");
        assert_eq!(s.identity.scheduler_name, "default-scheduler");
        assert!(!s.require_gang);
        let g = select_profile(&[t("ome-scheduler"), t("ome-scheduler")], 2, &p).expect("gang");
        assert_eq!(g.identity.backend, "ome-v135");
        assert!(g.require_gang && g.gang_scheduling);
    }
}
