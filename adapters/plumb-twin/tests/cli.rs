//! The command line: every flag and summary field has its row in docs/plumb/twin.md, every
//! preset its row; without the traces it says where it looked and exits 0; bad input is one
//! line naming the flag, exit 2.

use std::path::PathBuf;
use std::process::Command;

use plumb_twin::figures::Summary;
use plumb_twin::scenario::NAMES;

fn doc() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/plumb/twin.md");
    std::fs::read_to_string(path).unwrap()
}

fn twin(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_plumb-twin"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn every_flag_field_and_scenario_has_its_row() {
    let help = String::from_utf8(twin(&["--help"]).stdout).unwrap();
    let doc = doc();
    let flags: Vec<&str> = help
        .split_whitespace()
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()))
        .filter(|w| *w != "--help" && *w != "--version")
        .collect();
    assert!(flags.len() >= 6, "{help}");
    for flag in flags {
        assert!(doc.contains(&format!("| `{flag}")), "{flag} has no row");
    }
    let fields = serde_json::to_value(Summary::default()).unwrap();
    for field in fields.as_object().unwrap().keys() {
        if field == "caretaker" || field == "minutesOverSloByCluster" {
            continue;
        }
        assert!(doc.contains(&format!("`{field}`")), "{field} has no row");
    }
    for name in NAMES {
        assert!(doc.contains(&format!("| `{name}` |")), "{name} has no row");
    }
}

#[test]
fn without_the_traces_it_says_where_it_looked_and_exits_0() {
    let out = Command::new(env!("CARGO_BIN_EXE_plumb-twin"))
        .args(["--scenario", "calm-diurnal", "--out"])
        .arg(std::env::temp_dir().join("plumb-twin-no-data"))
        .env("PLUMB_TWIN_DATA", "/nonexistent/plumb-twin-data")
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("no trace data in /nonexistent/plumb-twin-data"),
        "{err}"
    );
}

#[test]
fn an_unknown_scenario_is_one_line_naming_the_flag() {
    let out = twin(&["--scenario", "nope", "--out", "/tmp/plumb-twin-x"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("plumb-twin: --scenario: unknown scenario \"nope\""),
        "{err}"
    );
}
