//! docs/plumb/scaler.md against the scaler: every trigger metadata key the scaler reads has a
//! row in its table, and every row names a key the scaler reads.

use std::path::Path;

use plumb_scaler::request::{POLICY_KEY, POLICY_NAMESPACE_KEY};

#[test]
fn every_trigger_metadata_key_is_documented_and_every_row_is_read() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/plumb/scaler.md");
    let text = std::fs::read_to_string(&path).expect("docs/plumb/scaler.md");
    let table = text
        .split("| key | required | meaning |")
        .nth(1)
        .expect("docs/plumb/scaler.md: no metadata key table");
    let documented: Vec<&str> = table
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.split('`').nth(1))
        .collect();
    assert_eq!(documented, [POLICY_KEY, POLICY_NAMESPACE_KEY]);
}
