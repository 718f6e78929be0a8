//! `alfred replay --simulation-workers FILE`: real `alfred-simulator` worker processes,
//! loaded and probed as `alfred run` does, answer the pass's predictions — the same answers
//! as `--simulate-in-process` — and every `workers.json` / probe error stops replay with
//! the documented message (docs/design-simulation.md#worker-registry,
//! docs/design-runtime.md#simulation-workers).
//!
//! The worker binary: `alfred-simulator` from the cargo target directory next to `alfred`,
//! brought up to date with `cargo build -p alfred-simulator`, copied (stripped when `strip`
//! is available) into a temporary directory; `workers.json` and the alfred config are
//! generated there from `fixtures/simulation/*.template.*` with the identities the copy
//! prints (see `fixtures/simulation/README.md`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{Value, json};

const NOW: &str = "2026-11-29T08:00:00Z";
const CLUSTER: &str = "fixtures/clusters/ten-node-spread.json";
const PREFIX: &str = "alfred replay: unable to configure recommendation simulation: ";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
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

/// `alfred-simulator` next to `alfred` in the target directory, (re)built now so that it
/// runs the same alfred-sim as `alfred` (a no-op when it is up to date).
fn simulator_in_target() -> PathBuf {
    let alfred = Path::new(env!("CARGO_BIN_EXE_alfred"));
    let sim = alfred.with_file_name("alfred-simulator");
    {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-p", "alfred-simulator"])
            .current_dir(repo());
        if alfred.parent().and_then(Path::file_name) == Some("release".as_ref()) {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("cargo build -p alfred-simulator");
        assert!(status.success(), "cargo build -p alfred-simulator failed");
    }
    assert!(sim.exists(), "{} not found", sim.display());
    sim
}

/// A generated worker set: the binary, both scheduler configurations, `workers.json` and
/// the alfred config naming the printed identities, in one temporary directory.
struct Workers {
    dir: PathBuf,
    sim: PathBuf,
    default_id: String,
    ome_id: String,
}

impl Workers {
    fn generate() -> Workers {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("alfred-replay-workers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let sim = dir.join("alfred-simulator");
        let source = simulator_in_target();
        let stripped = Command::new("strip")
            .arg("-o")
            .arg(&sim)
            .arg(&source)
            .status()
            .is_ok_and(|s| s.success());
        if !stripped {
            std::fs::copy(&source, &sim).expect("copy alfred-simulator");
        }
        for f in ["default-scheduler.yaml", "ome-scheduler.yaml"] {
            std::fs::copy(repo().join("fixtures/simulation").join(f), dir.join(f))
                .expect("copy scheduler config");
        }
        let id = |backend: &str, file: &str| -> String {
            let out = Command::new(&sim)
                .args(["--backend", backend, "--scheduler-config"])
                .arg(dir.join(file))
                .arg("--print-profile")
                .env_clear()
                .output()
                .expect("run alfred-simulator --print-profile");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v: Value = serde_json::from_slice(&out.stdout).expect("profile JSON");
            v["identity"]["configurationID"]
                .as_str()
                .expect("configurationID")
                .to_owned()
        };
        let w = Workers {
            default_id: id("kube-v135", "default-scheduler.yaml"),
            ome_id: id("ome-v135", "ome-scheduler.yaml"),
            dir,
            sim,
        };
        std::fs::write(w.dir.join("workers.json"), w.fill("workers.template.json")).unwrap();
        std::fs::write(
            w.dir.join("alfred-config.yaml"),
            w.fill("alfred-config.template.yaml"),
        )
        .unwrap();
        w
    }

    /// A template of `fixtures/simulation` with the placeholders filled.
    fn fill(&self, template: &str) -> String {
        std::fs::read_to_string(repo().join("fixtures/simulation").join(template))
            .expect("template")
            .replace("${SIMULATOR}", &self.sim.to_string_lossy())
            .replace("${DIR}", &self.dir.to_string_lossy())
            .replace("${DEFAULT_ID}", &self.default_id)
            .replace("${OME_ID}", &self.ome_id)
    }

    fn workers_json(&self) -> Value {
        serde_json::from_str(&self.fill("workers.template.json")).unwrap()
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).to_string_lossy().into_owned()
    }

    /// Writes a variant of `workers.json` and returns its path.
    fn variant(&self, name: &str, text: &str) -> String {
        let path = self.dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }
}

fn workers() -> &'static Workers {
    static W: OnceLock<Workers> = OnceLock::new();
    W.get_or_init(Workers::generate)
}

fn replay(config: &str, simulation: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "replay",
        CLUSTER,
        "--now",
        NOW,
        "--migration-api-version",
        "v1",
        "--config",
        config,
        "--format",
        "json",
    ];
    args.extend_from_slice(simulation);
    alfred(&args)
}

fn rows(stdout: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(stdout).expect("replay prints JSON");
    v["record"]["recommendations"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn the_fixture_configurations_are_the_models_built_in_ones() {
    let read =
        |f: &str| std::fs::read_to_string(repo().join("fixtures/simulation").join(f)).unwrap();
    assert_eq!(
        read("default-scheduler.yaml"),
        alfred_sim::config::DEFAULT_SCHEDULER_YAML
    );
    assert_eq!(
        read("ome-scheduler.yaml"),
        alfred_sim::config::OME_SCHEDULER_YAML
    );
    let ome = alfred_sim::load_config(alfred_sim::config::OME_SCHEDULER_YAML).unwrap();
    assert!(ome.gang_scheduling);
}

#[test]
fn workers_predict_what_the_in_process_model_predicts() {
    let w = workers();
    let config = w.path("alfred-config.yaml");
    let workers_json = w.path("workers.json");
    let (code, with_workers, stderr) = replay(&config, &["--simulation-workers", &workers_json]);
    assert_eq!(code, 0, "{stderr}");
    let got = rows(&with_workers);
    assert_eq!(got.len(), 10, "{with_workers}");
    // Eight predictions a pass; the remaining two are out of budget.
    let predicted: Vec<&Value> = got
        .iter()
        .filter(|r| r["scheduling"]["reason"] == "PlacementFound")
        .collect();
    assert_eq!(predicted.len(), 8, "{with_workers}");
    for r in &predicted {
        let s = &r["scheduling"];
        assert_eq!(s["status"], "Feasible");
        assert_eq!(s["schedulerName"], "default-scheduler");
        assert_eq!(s["backend"], "kube-v135");
        assert_eq!(s["schedulerVersion"], "v1.35.4");
        assert_eq!(s["configurationID"], json!(w.default_id));
        assert_eq!(s["snapshotTime"], NOW);
        let placements = s["placements"].as_array().expect("placements");
        assert_eq!(placements.len(), 1, "{r}");
        let node = placements[0]["nodeName"].as_str().unwrap();
        assert!(node.starts_with("gpu-h100-"), "{node}");
        assert_ne!(
            node,
            r["fromNode"].as_str().unwrap(),
            "the source is excluded"
        );
    }
    for r in got.iter().skip(8) {
        assert_eq!(r["scheduling"]["reason"], "SimulationBudgetExceeded", "{r}");
    }

    // The same pass with the model in-process: byte for byte the same output.
    let (code, in_process, stderr) = replay(&config, &["--simulate-in-process"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(with_workers, in_process);

    // Deterministic.
    let (code, again, stderr) = replay(&config, &["--simulation-workers", &workers_json]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(with_workers, again);
}

#[test]
fn a_profile_no_worker_answers_is_worker_failed() {
    let w = workers();
    // The config names an identity (another configurationID) that no worker has.
    let config = w
        .fill("alfred-config.template.yaml")
        .replace(&w.default_id, "sha256:0000");
    let config = w.variant("alfred-config-unregistered.yaml", &config);
    let (code, stdout, stderr) =
        replay(&config, &["--simulation-workers", &w.path("workers.json")]);
    assert_eq!(code, 0, "{stderr}");
    let got = rows(&stdout);
    assert_eq!(got.len(), 10);
    for r in got.iter().take(8) {
        assert_eq!(r["scheduling"]["status"], "Unavailable", "{r}");
        assert_eq!(r["scheduling"]["reason"], "WorkerFailed", "{r}");
        assert!(r["scheduling"].get("placements").is_none(), "{r}");
    }
}

fn replay_error(workers_json: &str) -> (i32, String) {
    let w = workers();
    let (code, stdout, stderr) = replay(
        &w.path("alfred-config.yaml"),
        &["--simulation-workers", workers_json],
    );
    assert!(stdout.is_empty(), "{stdout}");
    (code, stderr)
}

#[test]
fn a_worker_printing_another_identity_stops_replay() {
    let w = workers();
    let mut v = w.workers_json();
    v["workers"][1]["identity"]["configurationID"] = json!("sha256:0000");
    let path = w.variant("workers-wrong-identity.json", &v.to_string());
    let (code, stderr) = replay_error(&path);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "{PREFIX}probe worker 1: worker profile identity does not match registry entry: identity.configurationID: printed {:?}, registered \"sha256:0000\"\n",
            w.ome_id
        )
    );
}

#[test]
fn a_wrong_gang_claim_stops_replay() {
    let w = workers();
    let mut v = w.workers_json();
    v["workers"][1]["gangScheduling"] = json!(false);
    let path = w.variant("workers-wrong-gang.json", &v.to_string());
    let (code, stderr) = replay_error(&path);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "{PREFIX}probe worker 1: worker gang scheduling claim does not match registry entry\n"
        )
    );
}

#[test]
fn an_unknown_field_stops_replay_naming_it() {
    let w = workers();
    let mut v = w.workers_json();
    v["workers"][0]["timeout"] = json!("10s");
    let path = w.variant("workers-unknown-field.json", &v.to_string());
    let (code, stderr) = replay_error(&path);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.starts_with(PREFIX), "{stderr}");
    assert!(stderr.contains("unknown field `timeout`"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn a_repeated_identity_stops_replay_naming_it() {
    let w = workers();
    let mut v = w.workers_json();
    let first = v["workers"][0].clone();
    v["workers"][1] = first;
    let path = w.variant("workers-repeated.json", &v.to_string());
    let (code, stderr) = replay_error(&path);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("workers[1].identity repeats the identity of workers[0]"),
        "{stderr}"
    );
}

#[test]
fn null_trailing_data_and_relative_paths_stop_replay() {
    let w = workers();
    let text = w.fill("workers.template.json");
    let mut v = w.workers_json();
    v["workers"][0]["gangScheduling"] = Value::Null;
    let mut relative = w.workers_json();
    relative["workers"][0]["binaryPath"] = json!("alfred-simulator");
    for (name, body, expect) in [
        (
            "workers-null.json",
            v.to_string(),
            "workers-null.json: workers[0].gangScheduling: invalid type: null, expected a boolean",
        ),
        (
            "workers-trailing.json",
            format!("{text}{{}}"),
            "trailing characters",
        ),
        (
            "workers-relative.json",
            relative.to_string(),
            "workers[0].binaryPath: \"alfred-simulator\" must be an absolute path",
        ),
    ] {
        let (code, stderr) = replay_error(&w.variant(name, &body));
        assert_eq!(code, 2, "{name}: {stderr}");
        assert!(stderr.starts_with(PREFIX), "{name}: {stderr}");
        assert!(stderr.contains(expect), "{name}: {stderr}");
    }
}

#[test]
fn a_binary_that_is_not_executable_or_a_config_it_refuses_stops_replay() {
    let w = workers();
    let mut v = w.workers_json();
    v["workers"][0]["binaryPath"] = json!(w.path("default-scheduler.yaml"));
    let (code, stderr) = replay_error(&w.variant("workers-not-exec.json", &v.to_string()));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "{PREFIX}worker 0: worker binary is not executable"
        )),
        "{stderr}"
    );

    let bad = w.variant(
        "bad-scheduler.yaml",
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: []\n",
    );
    let mut v = w.workers_json();
    v["workers"][0]["schedulerConfigPath"] = json!(bad);
    let (code, stderr) = replay_error(&w.variant("workers-bad-config.json", &v.to_string()));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "{PREFIX}probe worker 0: scheduler worker exited unsuccessfully (exit status 1): alfred-simulator: "
        )),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn a_gang_is_simulated_by_the_ome_worker() {
    let w = workers();
    let config = w.path("alfred-config.yaml");
    let run = |simulation: &[&str]| {
        let mut args = vec![
            "replay",
            "fixtures/clusters/deployment-modes.json",
            "--now",
            NOW,
            "--migration-api-version",
            "v1",
            "--config",
            &config,
            "--format",
            "json",
        ];
        args.extend_from_slice(simulation);
        let (code, stdout, stderr) = alfred(&args);
        assert_eq!(code, 0, "{stderr}");
        stdout
    };
    let with_workers = run(&["--simulation-workers", &w.path("workers.json")]);
    let gang = rows(&with_workers)
        .into_iter()
        .find(|r| r["workload"] == "inference/qwen3-235b")
        .expect("the OMENative gang's row");
    let s = &gang["scheduling"];
    assert_eq!(s["schedulerName"], "ome-scheduler", "{gang}");
    assert_eq!(s["backend"], "ome-v135", "{gang}");
    assert_eq!(s["configurationID"], json!(w.ome_id), "{gang}");
    // The worker decided (no room for two 8-GPU members in one RDMA block outside the
    // source nodes); it did not fail.
    assert_eq!(s["reason"], "NoFeasiblePlacement", "{gang}");
    assert_eq!(with_workers, run(&["--simulate-in-process"]));
}

/// A worker script: `--print-profile` is answered by the real simulator (so the probe passes
/// with its identity), any other run does what `behaviour` says.
fn scripted_worker(name: &str, behaviour: &str) -> String {
    let w = workers();
    let script = format!(
        "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --print-profile ] && exec {} \"$@\"; done\n{behaviour}\n",
        w.sim.display()
    );
    let path = w.variant(name, &script);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut v = w.workers_json();
    for worker in v["workers"].as_array_mut().unwrap() {
        worker["binaryPath"] = json!(path);
    }
    w.variant(&format!("{name}.json"), &v.to_string())
}

#[test]
fn a_hung_worker_is_cut_at_the_simulation_timeout() {
    let w = workers();
    let workers_json = scripted_worker("hung-worker", "exec sleep 100");
    let started = std::time::Instant::now();
    let (code, stdout, stderr) = replay(
        &w.path("alfred-config.yaml"),
        &[
            "--simulation-workers",
            &workers_json,
            "--simulation-timeout",
            "1s",
        ],
    );
    let took = started.elapsed();
    assert_eq!(code, 0, "{stderr}");
    let got = rows(&stdout);
    let simulated: Vec<&Value> = got
        .iter()
        .filter(|r| r["scheduling"]["status"] == "Unavailable")
        .collect();
    // Each of the pass's 8 calls (its cap) is cut at 1 s, long before the 30 s pass budget:
    // the worker's failure is the reason; later moves find the 8 calls spent.
    let reasons: Vec<&Value> = simulated
        .iter()
        .map(|r| &r["scheduling"]["reason"])
        .collect();
    assert_eq!(reasons.len(), 10, "{stdout}");
    assert!(
        reasons[..8].iter().all(|r| *r == "WorkerFailed"),
        "{reasons:?}"
    );
    assert!(
        reasons[8..]
            .iter()
            .all(|r| *r == "SimulationBudgetExceeded"),
        "{reasons:?}"
    );
    assert!(
        took < std::time::Duration::from_secs(8 + 12),
        "took {took:?}"
    );
}

#[test]
fn a_worker_hung_in_its_probe_is_cut_at_the_simulation_timeout() {
    let w = workers();
    let mut v = w.workers_json();
    let script = w.variant("hung-probe", "#!/bin/sh\nexec sleep 100\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    v["workers"][0]["binaryPath"] = json!(script);
    let path = w.variant("workers-hung-probe.json", &v.to_string());
    let started = std::time::Instant::now();
    let (code, _, stderr) = replay(
        &w.path("alfred-config.yaml"),
        &["--simulation-workers", &path, "--simulation-timeout", "1s"],
    );
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "{PREFIX}probe worker 0: scheduler worker did not answer --print-profile within --simulation-timeout 1s; killed\n"
        )
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
}

#[test]
fn a_worker_killed_by_a_signal_is_reported_with_it() {
    let w = workers();
    let mut v = w.workers_json();
    let script = w.variant("crashing-probe", "#!/bin/sh\nkill -SEGV $$\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    v["workers"][0]["binaryPath"] = json!(script);
    let path = w.variant("workers-crashing.json", &v.to_string());
    let (code, stderr) = replay_error(&path);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "{PREFIX}probe worker 0: scheduler worker exited unsuccessfully (killed by signal 11 (SIGSEGV))\n"
        )
    );
}
