//! Every bad-input surface of `alfred replay` and `alfred config check` answers with one line
//! of at most 300 characters naming the file, the object where there is one, and the field
//! path — however large the offending value.

use std::path::{Path, PathBuf};
use std::process::Command;

const NOW: &str = "2026-11-29T08:00:00Z";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn alfred(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_alfred"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run alfred");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A test's own scratch folder, removed when the test ends.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(tag: &str) -> TempDir {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("alfred-error-lines-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TempDir(d)
}

/// Writes `body` as `name` and returns `(path, stderr)` of `alfred <args…> <path>`-style runs.
fn write(dir: &TempDir, name: &str, body: &str) -> String {
    let path = dir.0.join(name);
    std::fs::write(&path, body).unwrap();
    path.to_string_lossy().into_owned()
}

/// The error is one line, short, and contains every `wanted` part.
fn one_short_line(stderr: &str, wanted: &[&str]) {
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let line = stderr.trim_end();
    assert!(
        line.chars().count() <= 300,
        "{} chars: {line}",
        line.chars().count()
    );
    for w in wanted {
        assert!(line.contains(w), "{w:?} missing from {line}");
    }
}

fn replay_error(input: &str) -> String {
    let (code, stdout, stderr) = alfred(&["replay", input, "--now", NOW]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    stderr
}

#[test]
fn yaml_replay_errors() {
    let d = temp_dir("yaml");
    let dup = write(
        &d,
        "dup.yaml",
        "kind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: a\n    name: b\n",
    );
    one_short_line(
        &replay_error(&dup),
        &[&dup, "duplicate mapping key: name", "line 7"],
    );
    assert!(!replay_error(&dup).contains("DuplicateKeyPolicy"));
    let unclosed = write(&d, "unclosed.yaml", "kind: List\nitems: [\n");
    one_short_line(&replay_error(&unclosed), &[&unclosed, "line 2"]);
}

#[test]
fn huge_values_are_clipped() {
    let d = temp_dir("huge");
    let huge = "y".repeat(1 << 20);
    let yaml = write(
        &d,
        "huge.yaml",
        &format!(
            "kind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: a\n  spec:\n    unschedulable: \"{huge}\"\n"
        ),
    );
    one_short_line(
        &replay_error(&yaml),
        &[
            &yaml,
            "Node a",
            "field spec.unschedulable",
            "expected a boolean",
        ],
    );
    let json = write(
        &d,
        "huge.json",
        &format!(
            r#"{{"kind":"List","items":[{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{huge}","namespace":"ns"}},"spec":{{"nodeName":7}}}}]}}"#
        ),
    );
    one_short_line(
        &replay_error(&json),
        &[&json, "Pod ns/yyy", "field spec.nodeName"],
    );
    let config = write(
        &d,
        "conf.yaml",
        &format!("schemaVersion: 1\nmode: \"{huge}\"\n"),
    );
    let (code, _, stderr) = alfred(&["config", "check", &config]);
    assert_eq!(code, 2);
    one_short_line(&stderr, &[&config, "mode: \"yyy", "bytes"]);
}

#[test]
fn snapshot_json_errors_name_the_object_and_field() {
    let d = temp_dir("snapshot");
    let snap = write(
        &d,
        "snap.json",
        r#"{"observedAt":"2026-11-29T08:00:00Z","nodes":[{"name":"gpu-1","cordoned":null}]}"#,
    );
    one_short_line(
        &replay_error(&snap),
        &[
            &snap,
            "alfred snapshot: nodes[0] gpu-1: field nodes[0].cordoned",
        ],
    );
    let snap = write(
        &d,
        "snap2.json",
        r#"{"observedAt":"2026-11-29T08:00:00Z","nodes":7}"#,
    );
    one_short_line(&replay_error(&snap), &[&snap, "field nodes: invalid type"]);
}

#[test]
fn a_corrupt_journal_is_reported_on_stderr_and_in_the_json() {
    let d = temp_dir("journal");
    let state = write(
        &d,
        "state.json",
        r#"{"version":"alfred-state/v1","journal":{"version":"v1","entries":[{"bogus":1}]},"nodeRecords":{}}"#,
    );
    let (code, stdout, stderr) = alfred(&[
        "replay",
        "fixtures/clusters/two-pools.json",
        "--now",
        NOW,
        "--state",
        &state,
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    one_short_line(&stderr, &[&state, "journal unreadable", "entries[0]"]);
    let doc: serde_json::Value = serde_json::from_str(&stdout).expect("JSON output");
    let reported = doc["stateError"].as_str().expect("stateError");
    assert_eq!(format!("alfred replay: {reported}"), stderr.trim_end());
}

#[test]
fn config_errors_name_the_file_given_and_the_root() {
    let d = temp_dir("config");
    let list = write(&d, "my-alfred.yaml", "- 1\n");
    let (code, _, stderr) = alfred(&["config", "check", &list]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        format!("parse {list}: (document root): a list is not a mapping\n")
    );
    let (code, _, stderr) = alfred(&[
        "replay",
        "fixtures/clusters/two-pools.json",
        "--config",
        &list,
    ]);
    assert_eq!(code, 2);
    one_short_line(&stderr, &[&format!("parse {list}: (document root)")]);
}
