//! Scenario 20: `workers.json` strictness and the startup probe
//! (docs/design-simulation.md#worker-registry).

use alfred_sim::workers::{
    ProbeError, WorkersError, check_probe, evaluate_args, go_duration_ms, parse_timeout,
    parse_workers, probe_args,
};

const GOOD: &str = r#"{
  "workers": [
    {
      "binaryPath": "/alfred-simulator",
      "schedulerConfigPath": "/etc/alfred-simulation/default-scheduler.yaml",
      "identity": {"schedulerName": "default-scheduler", "backend": "kube-v135",
                   "schedulerVersion": "v1.35.4", "configurationID": "sha256:aa"},
      "gangScheduling": false
    },
    {
      "binaryPath": "/alfred-simulator",
      "schedulerConfigPath": "/etc/alfred-simulation/ome-scheduler.yaml",
      "identity": {"schedulerName": "ome-scheduler", "backend": "ome-v135",
                   "schedulerVersion": "v1.35.4", "configurationID": "sha256:bb"},
      "gangScheduling": true
    }
  ]
}"#;

#[test]
fn the_documented_file_parses() {
    let f = parse_workers(GOOD.as_bytes()).expect("valid");
    assert_eq!(f.workers.len(), 2);
    assert!(f.workers[1].gang_scheduling);
    let absent = GOOD.replacen(",\n      \"gangScheduling\": false", "", 1);
    assert!(!parse_workers(absent.as_bytes()).expect("valid").workers[0].gang_scheduling);
}

fn err(text: &str) -> WorkersError {
    parse_workers(text.as_bytes()).expect_err("must be refused")
}

#[test]
fn every_error_names_what_is_wrong() {
    let e = err(&GOOD.replacen(
        "\"gangScheduling\": false",
        "\"gangScheduling\": false, \"extra\": 1",
        1,
    ));
    assert!(e.to_string().contains("extra"), "{e}");
    let e = err(&GOOD.replacen(
        "\"backend\": \"kube-v135\"",
        "\"backend\": \"kube-v135\", \"zone\": \"x\"",
        1,
    ));
    assert!(e.to_string().contains("zone"), "{e}");
    let e = err(&GOOD.replacen("{\n  \"workers\"", "{\"version\": 1, \"workers\"", 1));
    assert!(e.to_string().contains("version"), "{e}");
    let e = err(&GOOD.replacen("\"gangScheduling\": false", "\"gangScheduling\": null", 1));
    assert!(matches!(e, WorkersError::Decode(_)), "{e}");
    let e = err(&format!("{GOOD} {{}}"));
    assert!(e.to_string().contains("trailing"), "{e}");
    let e = err(&GOOD.replace("sha256:bb", "sha256:aa").replace(
        "ome-scheduler\", \"backend\": \"ome-v135",
        "default-scheduler\", \"backend\": \"kube-v135",
    ));
    match &e {
        WorkersError::DuplicateIdentity {
            index,
            first,
            identity,
        } => {
            assert_eq!((*index, *first), (1, 0));
            assert_eq!(identity.scheduler_name, "default-scheduler");
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("repeats the identity"));
    let e = err(&GOOD.replacen("\"/alfred-simulator\"", "\"alfred-simulator\"", 1));
    assert!(
        e.to_string().contains("binaryPath") && e.to_string().contains("alfred-simulator"),
        "{e}"
    );
    let e = err(&GOOD.replacen(
        "\"/etc/alfred-simulation/default-scheduler.yaml\"",
        "\"etc/x.yaml\"",
        1,
    ));
    assert!(e.to_string().contains("schedulerConfigPath"), "{e}");
    let e = err(&GOOD.replacen("\"kube-v135\"", "\" kube-v135\"", 1));
    assert!(e.to_string().contains("identity.backend"), "{e}");
    let e = err(&GOOD.replacen("\"sha256:aa\"", "\"\"", 1));
    assert!(e.to_string().contains("configurationID"), "{e}");
    let e = err(&GOOD.replacen("\"v1.35.4\"", "null", 1));
    assert!(matches!(e, WorkersError::Decode(_)), "{e}");
    let many: Vec<String> = (0..33)
        .map(|i| format!(r#"{{"binaryPath":"/a","schedulerConfigPath":"/c","identity":{{"schedulerName":"s","backend":"b{i}","schedulerVersion":"v","configurationID":"c"}}}}"#))
        .collect();
    let e = err(&format!("{{\"workers\":[{}]}}", many.join(",")));
    assert!(matches!(e, WorkersError::TooMany { count: 33 }), "{e}");
    assert!(matches!(
        err(&" ".repeat(1024 * 1024 + 1)),
        WorkersError::TooLarge
    ));
}

#[test]
fn probe_results() {
    let f = parse_workers(GOOD.as_bytes()).expect("valid");
    let entry = &f.workers[1];
    let ok = br#"{"identity":{"schedulerName":"ome-scheduler","backend":"ome-v135","schedulerVersion":"v1.35.4","configurationID":"sha256:bb"},"gangScheduling":true}"#;
    assert!(check_probe(entry, true, ok).is_ok());
    assert_eq!(
        check_probe(entry, false, ok),
        Err(ProbeError::ExitedUnsuccessfully)
    );
    let other_id = String::from_utf8_lossy(ok).replace("sha256:bb", "sha256:cc");
    let e = check_probe(entry, true, other_id.as_bytes()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "worker profile identity does not match registry entry: identity.configurationID: printed \"sha256:cc\", registered \"sha256:bb\""
    );
    let no_gang = String::from_utf8_lossy(ok).replace("true}", "false}");
    let e = check_probe(entry, true, no_gang.as_bytes()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "worker gang scheduling claim does not match registry entry"
    );
    assert_eq!(
        check_probe(entry, false, b"").unwrap_err().to_string(),
        "scheduler worker exited unsuccessfully"
    );
    assert!(matches!(
        check_probe(entry, true, b"not json"),
        Err(ProbeError::InvalidOutput(_))
    ));
    assert_eq!(
        probe_args(entry, "8s"),
        [
            "--backend",
            "ome-v135",
            "--scheduler-config",
            "/etc/alfred-simulation/ome-scheduler.yaml",
            "--timeout",
            "8s",
            "--print-profile"
        ]
    );
    assert_eq!(evaluate_args(entry, "8s").len(), 6);
}

#[test]
fn go_durations() {
    assert_eq!(parse_timeout("10s"), Ok(10_000_000_000));
    assert_eq!(parse_timeout("1m0s"), Ok(60_000_000_000));
    assert_eq!(parse_timeout("799.999ms"), Ok(799_999_000));
    assert_eq!(parse_timeout("1.5s"), Ok(1_500_000_000));
    for bad in ["61s", "0s", "", "10", "1x", "-1s", "2m"] {
        assert!(parse_timeout(bad).is_err(), "{bad}");
    }
    assert_eq!(go_duration_ms(8000), "8s");
    assert_eq!(go_duration_ms(7999), "7.999s");
    assert_eq!(parse_timeout(&go_duration_ms(7999)), Ok(7_999_000_000));
}

/// A long unknown field or value is clipped: one line of at most 300 characters that still
/// names the worker and field (found by the `workers` fuzz target: 351 characters).
#[test]
fn errors_with_long_names_or_values_stay_one_short_line() {
    let long = format!("iden{}tity", "y".repeat(400));
    let unknown = GOOD.replacen("\"identity\"", &format!("\"{long}\""), 1);
    let bad_path = GOOD.replacen(
        "\"/alfred-simulator\"",
        &format!("\"{}\"", "\\u0010".repeat(300)),
        1,
    );
    for (text, starts) in [
        (unknown, "workers.json: workers[0].idenyyy"),
        (bad_path, "workers.json: workers[0].binaryPath: \"\\u{10}"),
    ] {
        let e = err(&text).to_string();
        assert!(e.starts_with(starts), "{e}");
        assert!(
            e.chars().count() <= 300,
            "{} characters: {e}",
            e.chars().count()
        );
        assert!(!e.contains('\n'), "{e}");
    }
}
