//! Every reason code of docs/reasons.md comes out of some cluster.

use std::collections::BTreeSet;

use alfred_model::reason::{AdvisoryReason as A, RowReason};
use alfred_model::snapshot::ModelInfo;

use super::defrag::example1;
use super::nodehealth::worked_example;
use crate::propose_with;
use crate::settings::PolicySettings;
use crate::testkit::ClusterBuilder;

#[test]
fn every_policy_reason_code_is_produced() {
    let d = PolicySettings::default();
    let no_surface = PolicySettings {
        omenative_migration_enabled: false,
        ..PolicySettings::default()
    };
    let pinned = ModelInfo {
        volume_pinned: true,
        ..ModelInfo::default()
    };
    let fixtures: Vec<(ClusterBuilder, &PolicySettings)> = vec![
        (example1(), &d),
        (example1().executor(false), &d),
        (example1(), &no_surface),
        (example1().model("prod/a", "m", pinned), &d),
        (example1().missing_model("prod/b", "gone"), &d),
        (
            example1().workload("prod/a", |w| w.components[0].replica = None),
            &d,
        ),
        (
            example1().workload("prod/b", |w| w.settings.movable = false),
            &d,
        ),
        (example1().multinode("prod", "l", &[("n4", 2)]), &d),
        (
            // NoSurgeHeadroom and NonExecutableObservedFragmentation (a move that does not pay).
            ClusterBuilder::new()
                .node("n1", "H100", 8)
                .node("n2", "H100", 8)
                .node("n3", "H100", 8)
                .omenative("prod", "a", &[&[("n1", 6)]])
                .omenative("prod", "b", &[&[("n2", 3)]])
                .occupant("batch", "j", "n3", 4)
                .pending("prod", "big", 8, 20),
            &d,
        ),
        (
            ClusterBuilder::new()
                .node("n1", "H100", 8)
                .node("n2", "H100", 8)
                .node("n3", "H100", 8)
                .occupant("batch", "j1", "n1", 5)
                .occupant("batch", "j2", "n2", 5)
                .omenative("prod", "a", &[&[("n3", 8)]]),
            &d,
        ),
        (worked_example(), &d),
    ];
    let mut rows: BTreeSet<&'static str> = BTreeSet::new();
    let mut advice: BTreeSet<&'static str> = BTreeSet::new();
    let mut markers = 0;
    for (b, s) in fixtures {
        let now = b.now();
        let p = propose_with(&b.build(), s, now);
        markers += p.node_markers.len();
        for c in p.candidates {
            rows.insert(c.reason.as_str());
            if let Some(a) = c.advisory_reason {
                advice.insert(a.as_str());
            }
        }
    }
    let want_rows: BTreeSet<&str> = [
        RowReason::Fragmentation,
        RowReason::NodeUnhealthy,
        RowReason::NodeMaintenance,
    ]
    .iter()
    .map(|r| r.as_str())
    .collect();
    assert_eq!(rows, want_rows);
    // `RemediationSignal` is the node marker, never a row.
    assert!(markers > 0);
    let want_advice: BTreeSet<&str> = [
        A::OMENativeUnavailable,
        A::RawDeploymentMigrationUnsupported,
        A::LWSMigrationUnsupported,
        A::NoSurgeHeadroom,
        A::VolumePinned,
        A::ModelUnresolved,
        A::MigrationSurfaceDisabled,
        A::OMENativeObservationInvalid,
        A::OMENativeStateIneligible,
        A::NonExecutableObservedFragmentation,
    ]
    .iter()
    .map(|r| r.as_str())
    .collect();
    assert_eq!(advice, want_advice);
}
