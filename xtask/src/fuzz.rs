//! `cargo xtask fuzz`: builds the libFuzzer targets of `fuzz/` and runs them.
//!
//! The targets are built with the **stable** toolchain: libFuzzer's coverage instrumentation is
//! plain `-C` codegen flags (`-Cpasses=sancov-module` and LLVM's sanitizer-coverage options),
//! with no sanitizer (alfred forbids `unsafe`), so neither nightly nor cargo-fuzz is needed;
//! `--target <host>` keeps build scripts uninstrumented, as cargo-fuzz does. libfuzzer-sys
//! compiles libFuzzer itself, which needs a C++ compiler (checked first, with what to install).
//!
//! Each run reads the committed corpus `fuzz/corpus/<target>` and seeds copied from the
//! fixtures, writes what it discovers to a scratch corpus under the target directory (so the
//! repository's corpus only changes through `--minimize`), and stops at the first crash,
//! leaving the input in `fuzz/artifacts/<target>/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Instrumentation flags libfuzzer-sys needs (the ones cargo-fuzz passes without a sanitizer).
const RUSTFLAGS: &str = "--cfg fuzzing -Cpasses=sancov-module \
    -Cllvm-args=-sanitizer-coverage-level=4 \
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
    -Cllvm-args=-sanitizer-coverage-pc-table \
    -Cllvm-args=-sanitizer-coverage-trace-compares";

/// How a target is seeded: fixture files (relative to the repository root; a folder means its
/// files with one of `extensions`), and whether each seed gets a leading chunk-size byte (the
/// list-splitter targets read their first byte as the chunk length).
struct Target {
    name: &'static str,
    seeds: &'static [&'static str],
    extensions: &'static [&'static str],
    chunk_byte: bool,
    /// libFuzzer's `-max_len`: room for the largest fixture it is seeded with.
    max_len: usize,
}

const CLUSTERS: &str = "fixtures/clusters";
const CONFIGS: &[&str] = &[
    "fixtures/configs",
    "fixtures/simulation/alfred-config.template.yaml",
];
const SCHEDULER_CONFIGS: &[&str] = &[
    "fixtures/simulation/default-scheduler.yaml",
    "fixtures/simulation/ome-scheduler.yaml",
];
/// Recorded Plumb members: each object file alone seeds `plumb_replay` (the committed corpus
/// holds whole members, objects and signals together).
const PLUMB_MEMBERS: &[&str] = &[
    "fixtures/plumb/default",
    "fixtures/plumb/launch-failures",
    "fixtures/plumb/promised-elsewhere",
];
/// Recorded Plumb fleets: each `fleet.json` alone seeds `plumb_fleet` with the shortage story's
/// policy (the committed corpus holds policy and timeline together).
const PLUMB_FLEETS: &[&str] = &[
    "fixtures/plumb/fleets/shortage-story",
    "fixtures/plumb/fleets/home-cannot-take-it",
    "fixtures/plumb/fleets/member-ignored",
];
/// Recorded signal answers: each seeds `plumb_signals`.
const PLUMB_SIGNALS: &[&str] = &[
    "fixtures/plumb/default/signals.json",
    "fixtures/plumb/signal-error/signals.json",
    "fixtures/plumb/signal-nan/signals.json",
    "fixtures/plumb/signal-two-samples/signals.json",
];
const SMALL: usize = 16 << 10;
const LARGE: usize = 96 << 10;

const TARGETS: &[Target] = &[
    Target {
        name: "annotations",
        seeds: &[],
        extensions: &[],
        chunk_byte: false,
        max_len: 4096,
    },
    Target {
        name: "config_json",
        seeds: &[],
        extensions: &[],
        chunk_byte: false,
        max_len: SMALL,
    },
    Target {
        name: "config_yaml",
        seeds: CONFIGS,
        extensions: &["yaml"],
        chunk_byte: false,
        max_len: SMALL,
    },
    Target {
        name: "journal",
        seeds: &[],
        extensions: &[],
        chunk_byte: false,
        max_len: SMALL,
    },
    Target {
        name: "kube_json_list",
        seeds: &[
            "adapters/alfred-kube/tests/data/protobuf/pods.json",
            "adapters/alfred-kube/tests/data/protobuf/nodes.json",
        ],
        extensions: &[],
        chunk_byte: true,
        max_len: SMALL,
    },
    Target {
        name: "kube_protobuf",
        seeds: &[
            "adapters/alfred-kube/tests/data/protobuf/pods.pb",
            "adapters/alfred-kube/tests/data/protobuf/nodes.pb",
        ],
        extensions: &[],
        chunk_byte: true,
        max_len: SMALL,
    },
    Target {
        name: "observe",
        seeds: &[CLUSTERS],
        extensions: &["json"],
        chunk_byte: false,
        max_len: LARGE,
    },
    Target {
        name: "plumb_duration",
        seeds: &[],
        extensions: &[],
        chunk_byte: false,
        max_len: 256,
    },
    Target {
        name: "plumb_fleet",
        seeds: PLUMB_FLEETS,
        extensions: &["json"],
        chunk_byte: false,
        max_len: SMALL,
    },
    Target {
        name: "plumb_policy",
        seeds: &["fixtures/plumb/policies"],
        extensions: &["yaml", "json"],
        chunk_byte: false,
        max_len: SMALL,
    },
    Target {
        name: "plumb_replay",
        seeds: PLUMB_MEMBERS,
        extensions: &["json"],
        chunk_byte: false,
        max_len: LARGE,
    },
    Target {
        name: "plumb_scaler_request",
        seeds: &[],
        extensions: &[],
        chunk_byte: false,
        max_len: 4096,
    },
    Target {
        name: "plumb_signals",
        seeds: PLUMB_SIGNALS,
        extensions: &["json"],
        chunk_byte: false,
        max_len: SMALL,
    },
    Target {
        name: "replay_inputs",
        seeds: &[CLUSTERS],
        extensions: &["json"],
        chunk_byte: false,
        max_len: LARGE,
    },
    Target {
        name: "replay_json",
        seeds: &[CLUSTERS],
        extensions: &["json"],
        chunk_byte: false,
        max_len: LARGE,
    },
    Target {
        name: "replay_yaml",
        seeds: &["fixtures/crds"],
        extensions: &["yaml"],
        chunk_byte: false,
        max_len: SMALL,
    },
    Target {
        name: "sim_config",
        seeds: SCHEDULER_CONFIGS,
        extensions: &[],
        chunk_byte: false,
        max_len: SMALL,
    },
    Target {
        name: "sim_request",
        seeds: &[],
        extensions: &[],
        chunk_byte: false,
        max_len: SMALL,
    },
    Target {
        name: "sim_result",
        seeds: &[],
        extensions: &[],
        chunk_byte: false,
        max_len: SMALL,
    },
    Target {
        name: "state",
        seeds: &[],
        extensions: &[],
        chunk_byte: false,
        max_len: SMALL,
    },
    Target {
        name: "workers",
        seeds: &["fixtures/simulation/workers.template.json"],
        extensions: &[],
        chunk_byte: false,
        max_len: SMALL,
    },
];

const USAGE: &str = "\
usage: cargo xtask fuzz --list
       cargo xtask fuzz [TARGET...] [--seconds N] [--minimize]

  --list        name the targets (one per parser of outside input) and what each checks
  TARGET...     the targets to run (default: all, one after the other)
  --seconds N   how long each target runs (default 20)
  --minimize    afterwards, merge the scratch corpus into fuzz/corpus/<target> (libFuzzer -merge)
";

pub(crate) fn main(args: &[String]) -> Result<()> {
    let root = crate::workspace_root();
    let mut names = Vec::new();
    let mut seconds = 20u64;
    let mut minimize = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--list" => return list(&root),
            "--seconds" => {
                let value = it.next().context("--seconds needs a number")?;
                seconds = value
                    .parse()
                    .with_context(|| format!("--seconds {value:?} is not a whole number"))?;
            }
            "--minimize" => minimize = true,
            "-h" | "--help" => {
                print!("{USAGE}");
                return Ok(());
            }
            other if other.starts_with('-') => bail!("unknown flag {other:?}\n\n{USAGE}"),
            other => names.push(other.to_owned()),
        }
    }
    check_targets_match_sources(&root)?;
    let selected: Vec<&Target> = if names.is_empty() {
        TARGETS.iter().collect()
    } else {
        names
            .iter()
            .map(|n| {
                TARGETS.iter().find(|t| t.name == n).with_context(|| {
                    format!("no fuzz target {n:?} (`cargo xtask fuzz --list` names them)")
                })
            })
            .collect::<Result<_>>()?
    };
    let target_dir = target_dir(&root);
    let bins = build(&root, &target_dir)?;
    let mut failed = Vec::new();
    for target in selected {
        if let Err(e) = run_target(&root, &target_dir, &bins, target, seconds, minimize) {
            eprintln!("fuzz {}: {e:#}", target.name);
            failed.push(target.name);
        }
    }
    if !failed.is_empty() {
        bail!("fuzz targets failed: {}", failed.join(", "));
    }
    Ok(())
}

/// `--list`: every target with the first line of its doc comment.
fn list(root: &Path) -> Result<()> {
    check_targets_match_sources(root)?;
    for target in TARGETS {
        let source = root
            .join("fuzz/fuzz_targets")
            .join(format!("{}.rs", target.name));
        let text = std::fs::read_to_string(&source)
            .with_context(|| format!("cannot read {}", source.display()))?;
        let doc: Vec<&str> = text
            .lines()
            .take_while(|l| l.starts_with("//!"))
            .map(|l| l.trim_start_matches("//!").trim())
            .collect();
        println!("{:<16} {}", target.name, doc.join(" "));
    }
    Ok(())
}

/// The table above and `fuzz/fuzz_targets/` name the same targets.
fn check_targets_match_sources(root: &Path) -> Result<()> {
    let mut on_disk: Vec<String> = std::fs::read_dir(root.join("fuzz/fuzz_targets"))
        .context("cannot list fuzz/fuzz_targets")?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".rs"))
                .map(str::to_owned)
        })
        .collect();
    on_disk.sort();
    let listed: Vec<String> = TARGETS.iter().map(|t| t.name.to_owned()).collect();
    if on_disk != listed {
        bail!(
            "xtask/src/fuzz.rs lists {listed:?} but fuzz/fuzz_targets holds {on_disk:?}: \
             add the target to TARGETS (sorted)"
        );
    }
    Ok(())
}

/// `$CARGO_TARGET_DIR/fuzz`, or `fuzz/target`: apart from the workspace's own builds, whose
/// flags differ.
fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir).join("fuzz"),
        None => root.join("fuzz/target"),
    }
}

/// Builds every target (release, instrumented) and returns the folder of the binaries.
fn build(root: &Path, target_dir: &Path) -> Result<PathBuf> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_owned());
    if Command::new(&cxx).arg("--version").output().is_err() {
        bail!(
            "cannot run the C++ compiler `{cxx}`: libfuzzer-sys compiles libFuzzer (C++) and \
             needs one (Debian/Ubuntu: `apt-get install g++`; or set CXX)"
        );
    }
    let host = host_triple()?;
    let mut cmd = Command::new(crate::cargo());
    cmd.args([
        "build",
        "--release",
        "--locked",
        "--bins",
        "--target",
        &host,
    ])
    .arg("--manifest-path")
    .arg(root.join("fuzz/Cargo.toml"))
    .env("CARGO_TARGET_DIR", target_dir)
    .env("RUSTFLAGS", RUSTFLAGS)
    .env_remove("CARGO_ENCODED_RUSTFLAGS")
    .current_dir(root.join("fuzz"));
    crate::run(&mut cmd).context(
        "building the fuzz targets failed (stable Rust 1.90+ and a C++ compiler are enough; \
         the crate is fuzz/, outside the workspace)",
    )?;
    Ok(target_dir.join(host).join("release"))
}

fn host_triple() -> Result<String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let text = crate::output(Command::new(rustc).arg("-vV"))?;
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .context("`rustc -vV` names no host")
}

fn run_target(
    root: &Path,
    target_dir: &Path,
    bins: &Path,
    target: &Target,
    seconds: u64,
    minimize: bool,
) -> Result<()> {
    let committed = root.join("fuzz/corpus").join(target.name);
    let scratch = target_dir.join("corpus").join(target.name);
    let seeds = target_dir.join("seeds").join(target.name);
    let artifacts = root.join("fuzz/artifacts").join(target.name);
    for dir in [&committed, &scratch, &artifacts] {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    copy_seeds(root, target, &seeds)?;
    // Targets that read files (`replay_inputs`) write one scratch file per process under the
    // temporary folder: give them one of the target folder's, emptied on every run, rather than
    // leave a folder in /tmp per run.
    let tmp = target_dir.join("tmp").join(target.name);
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let bin = bins.join(target.name);
    let mut cmd = Command::new(&bin);
    cmd.env("TMPDIR", &tmp)
        .arg(&scratch)
        .arg(&committed)
        .arg(&seeds)
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-max_len={}", target.max_len))
        .arg("-timeout=10")
        .arg("-rss_limit_mb=2048")
        .arg("-print_final_stats=1")
        .arg(format!("-artifact_prefix={}/", artifacts.display()));
    crate::run(&mut cmd).with_context(|| {
        format!(
            "{} found a crash (input saved under {}; reproduce with `{} <input>`)",
            target.name,
            artifacts.display(),
            bin.display()
        )
    })?;
    if minimize {
        let merged = target_dir.join("merged").join(target.name);
        let _ = std::fs::remove_dir_all(&merged);
        std::fs::create_dir_all(&merged)?;
        crate::run(
            Command::new(&bin)
                .env("TMPDIR", &tmp)
                .arg("-merge=1")
                .arg(format!("-max_len={}", target.max_len))
                .arg(&merged)
                .arg(&committed)
                .arg(&scratch),
        )?;
        std::fs::remove_dir_all(&committed)?;
        std::fs::rename(&merged, &committed)
            .or_else(|_| copy_dir(&merged, &committed))
            .context("cannot replace the committed corpus")?;
    }
    Ok(())
}

/// Copies the target's fixture seeds into `dir` (rebuilt on every run, never committed).
fn copy_seeds(root: &Path, target: &Target, dir: &Path) -> Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let mut files = Vec::new();
    for seed in target.seeds {
        let path = root.join(seed);
        if path.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                let file = entry?.path();
                let ext = file.extension().and_then(|e| e.to_str()).unwrap_or("");
                if target.extensions.contains(&ext) {
                    files.push(file);
                }
            }
        } else {
            files.push(path);
        }
    }
    for file in files {
        let bytes =
            std::fs::read(&file).with_context(|| format!("cannot read seed {}", file.display()))?;
        let mut seed = Vec::with_capacity(bytes.len() + 1);
        if target.chunk_byte {
            seed.push(7);
        }
        seed.extend_from_slice(&bytes);
        let name = file.file_name().context("a seed file has a name")?;
        std::fs::write(dir.join(name), seed)?;
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        std::fs::copy(entry.path(), to.join(entry.file_name()))?;
    }
    Ok(())
}
