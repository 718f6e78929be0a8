//! Repository rules, checked as tests so that the normal test command enforces them
//! (`cargo nextest run --workspace`, `cargo test --workspace`), and by `cargo xtask tidy`.
//!
//! - Core crates (every package under `crates/`) have no IO, async, Kubernetes client or randomness
//!   crate in their normal (non-dev) dependency closure, per `cargo metadata`; `alfred-observe`
//!   alone may use `k8s-openapi` (plain data types) to translate Kubernetes objects.
//! - Sources under `crates/*/src` never read a clock, the environment, the file system, the
//!   network, spawn processes, draw random numbers, or use hash collections (outside comments and
//!   string literals).
//! - Every `crates/*/src/**/*.rs` and `adapters/*/src/**/*.rs` file starts with a `//!` module doc.
//! - No `.rs` file has trailing whitespace.
//! - Every workspace member's `Cargo.toml` has `[lints] workspace = true`.
//! - The core crates depend on each other only as ARCHITECTURE.md draws it (the arbiter knows
//!   neither the policy nor the scorer), and nothing under `crates/` depends on an adapter.
//! - The two products stay apart: no `plumb-*` crate depends on an `alfred-*` crate or the
//!   reverse (normal, build or dev dependencies); what both need lives in a shared crate named
//!   for what it does.
//! - The twin's tests skip for missing trace data only through `common::skip_unless_ci`, which
//!   fails when `CI` is set.
//! - Every `docs/<page>.md#<anchor>` a source file names exists (the page, and a heading with
//!   that anchor), and so does every relative link of the Markdown pages (README, ARCHITECTURE,
//!   `docs/`); no crate, adapter or tool names a document outside the repository (`§`
//!   sections, spec files, seeds, lettered decisions), and every other `*.md` file their
//!   comments name exists; nor does any Markdown page, manifest, deploy or fixture file or script
//!   (`EVALUATION.md` and its archive, a record of the past, aside), and every page's relative
//!   links resolve.
//! - ARCHITECTURE.md's driving-loop listing (its first ```rust block) is, line for line, the
//!   marked loop of `crates/alfred-dispatch/examples/driving_loop.rs`, which the test command
//!   compiles and runs.
//! - README.md, ARCHITECTURE.md, `docs/` and `.ci/run` do not narrate history ("now that …",
//!   "before this change", "in the first evaluation"); that lives in git and `EVALUATION.md`.
//! - clippy's `too_many_lines` (at 150, clippy.toml) is allowed only with a comment on the same
//!   line saying why.
//! - Every `"alfred_…"` metric name written in non-test code of `crates/*/src` and
//!   `adapters/*/src` is one that `alfred_model::metric::MetricId` declares.
//! - `cargo xtask tidy` also runs the tests that hold `docs/` to the code (`docs_reference` in
//!   `alfred-model`, `alfred`, `plumb-model` and `plumb-kube`): a config key, spec field,
//!   flag, reason code, metric or Event without its row there fails. The normal test command
//!   runs those tests itself.
//!
//! Each failure names the file and line (or the dependency chain) to fix.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The core crates the design names; every package under `crates/` is checked as core, this list
/// only guards against the check silently seeing none of them.
const CORE_CRATES: [&str; 10] = [
    "alfred-model",
    "alfred-observe",
    "alfred-score",
    "alfred-policy",
    "alfred-arbiter",
    "alfred-dispatch",
    "alfred-sim",
    "scheduler-model",
    "utc-time",
    "plumb-model",
];

/// Crates that bring IO, async runtimes, Kubernetes clients or randomness, anywhere in a core
/// crate's normal dependency closure. A trailing `*` matches a prefix.
const BANNED_IN_CLOSURE: [&str; 9] = [
    "tokio",
    "kube*",
    "k8s-openapi",
    "hyper",
    "hyper-*",
    "axum",
    "axum-*",
    "reqwest",
    "rand",
];

/// Banned as a direct dependency of a core crate (it sits deep in many harmless trees).
const BANNED_DIRECT: [&str; 1] = ["getrandom"];

/// Exceptions: (core crate, banned pattern it may have).
const ALLOWED: [(&str, &str); 1] = [("alfred-observe", "k8s-openapi")];

/// The workspace crates each core crate may depend on (normal and build dependencies), as
/// ARCHITECTURE.md draws them: adapters → dispatch → (policy → score, arbiter, sim) → model,
/// observe → model; sim → scheduler-model, the product-neutral scheduler model. Any other edge
/// between workspace crates fails.
const CORE_DIRECTION: [(&str, &[&str]); 15] = [
    ("utc-time", &[]),
    ("seeded-rng", &[]),
    ("error-line", &[]),
    ("outcome-checkpoints", &["utc-time"]),
    ("alfred-model", &["utc-time"]),
    ("scheduler-model", &[]),
    ("plumb-model", &["utc-time"]),
    ("alfred-testkit", &["alfred-model"]),
    ("alfred-observe", &["alfred-model"]),
    ("alfred-score", &["alfred-model"]),
    ("alfred-sim", &["alfred-model", "scheduler-model"]),
    (
        "plumb-core",
        &[
            "plumb-model",
            "scheduler-model",
            "utc-time",
            "outcome-checkpoints",
        ],
    ),
    ("alfred-arbiter", &["alfred-model"]),
    ("alfred-policy", &["alfred-model", "alfred-score"]),
    (
        "alfred-dispatch",
        &[
            "alfred-model",
            "alfred-score",
            "alfred-policy",
            "alfred-arbiter",
            "alfred-sim",
            "outcome-checkpoints",
        ],
    ),
];

/// The packages whose `docs_reference` tests hold `docs/` to the code.
const DOCS_REFERENCE_PACKAGES: [&str; 4] = ["alfred-model", "alfred", "plumb-model", "plumb-kube"];

/// The adapter libraries a program embeds without taking a command line: none of them may reach
/// a crate of [`COMMAND_LINE_ONLY`] through its normal dependencies, except the one it is for
/// (the `/metrics` server is `metrics-endpoint`'s whole job, so axum is allowed there).
const ADAPTER_LIBRARIES: [(&str, &[&str]); 5] = [
    ("alfred-kube", &[]),
    ("kube-connect", &[]),
    ("kube-leader-lease", &[]),
    ("kube-event-recorder", &[]),
    ("metrics-endpoint", &["axum"]),
];

/// What only a binary takes: argument parsing, the HTTP server, the log subscriber.
const COMMAND_LINE_ONLY: [&str; 3] = ["clap", "axum", "tracing-subscriber"];

/// The folders besides `crates/*` and `adapters/*` whose Rust files, tests included, must point
/// only into the repository (every crate and adapter does, so a new one is held to it at once).
const SELF_CONTAINED_TOOLS: [&str; 3] = ["benches", "fuzz", "xtask"];

/// Text that must not appear in core sources outside comments and string literals.
const BANNED_TOKENS: [(&str, &str); 10] = [
    ("SystemTime::now", "take the time from the caller's input"),
    ("Instant::now", "take the time from the caller's input"),
    ("env::var", "configuration comes in as data"),
    ("thread_rng", "no randomness in the core"),
    ("std::fs", "no file system in the core"),
    ("std::net", "no network in the core"),
    ("std::process", "no processes in the core"),
    (
        "HashMap",
        "use BTreeMap/IndexMap: output must not depend on hash order",
    ),
    (
        "HashSet",
        "use BTreeSet/IndexSet: output must not depend on hash order",
    ),
    ("rand::", "no randomness in the core"),
];

/// Runs every rule and reports all violations (`cargo xtask tidy`).
pub(crate) fn run_all(root: &Path) -> Result<()> {
    let metadata = cargo_metadata(root)?;
    let mut failures = Vec::new();
    for (rule, violations) in [
        (
            "core dependency closure",
            core_dependency_violations(&metadata)?,
        ),
        ("core sources", core_source_violations(root)?),
        ("module docs", module_doc_violations(root)?),
        ("trailing whitespace", trailing_whitespace_violations(root)?),
        ("history wording", history_wording_violations(root)?),
        ("history narration", history_narration_violations(root)?),
        ("workspace lints", workspace_lints_violations(&metadata)?),
        (
            "core dependency direction",
            core_direction_violations(&metadata)?,
        ),
        ("products apart", product_separation_violations(&metadata)?),
        (
            "libraries without a command line",
            adapter_library_violations(&metadata)?,
        ),
        ("twin trace skips", twin_skip_violations(root)?),
        ("references into docs/", docs_link_violations(root)?),
        ("markdown links", markdown_link_violations(root)?),
        ("metric names", metric_name_violations(root)?),
        ("driving loop", driving_loop_violations(root)?),
        ("long functions", long_function_allow_violations(root)?),
        ("snapshot builders", snapshot_builder_violations(root)?),
        ("self-contained crates", outside_reference_violations(root)?),
        (
            "self-contained text files",
            outside_reference_text_violations(root)?,
        ),
        (
            "markdown names in comments",
            markdown_name_violations(root)?,
        ),
        ("docs reference", docs_reference_violations(root)?),
    ] {
        if violations.is_empty() {
            eprintln!("tidy: {rule}: ok");
        } else {
            failures.push(format!("{rule}:\n  {}", violations.join("\n  ")));
        }
    }
    if !failures.is_empty() {
        bail!("tidy found problems:\n{}", failures.join("\n"));
    }
    Ok(())
}

pub(crate) fn cargo_metadata(root: &Path) -> Result<Value> {
    let triple = host_triple()?;
    let text = crate::output(
        Command::new(crate::cargo())
            .args([
                "metadata",
                "--format-version",
                "1",
                "--filter-platform",
                &triple,
            ])
            .current_dir(root),
    )?;
    serde_json::from_str(&text).context("cargo metadata printed invalid JSON")
}

fn host_triple() -> Result<String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let text = crate::output(Command::new(rustc).arg("-vV"))?;
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .context("rustc -vV names no host")
}

fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    }
}

/// Packages under `<workspace>/crates/` with their ids.
fn core_packages(metadata: &Value) -> Result<Vec<(String, String)>> {
    let root = metadata["workspace_root"]
        .as_str()
        .context("metadata has no workspace_root")?;
    let crates_dir = Path::new(root).join("crates");
    let members: BTreeSet<&str> = metadata["workspace_members"]
        .as_array()
        .context("metadata has no workspace_members")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut core = Vec::new();
    for pkg in metadata["packages"]
        .as_array()
        .context("metadata has no packages")?
    {
        let id = pkg["id"].as_str().unwrap_or_default();
        let manifest = Path::new(pkg["manifest_path"].as_str().unwrap_or_default());
        if members.contains(id) && manifest.starts_with(&crates_dir) {
            core.push((
                pkg["name"].as_str().unwrap_or_default().to_owned(),
                id.to_owned(),
            ));
        }
    }
    Ok(core)
}

/// The banned crates reachable from each core crate through normal and build dependencies, each
/// reported with the chain that reaches it.
pub(crate) fn core_dependency_violations(metadata: &Value) -> Result<Vec<String>> {
    let names: BTreeMap<&str, &str> = metadata["packages"]
        .as_array()
        .context("metadata has no packages")?
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap_or_default(),
                p["name"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    // id -> non-dev dependency ids
    let mut edges: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for node in metadata["resolve"]["nodes"]
        .as_array()
        .context("metadata has no resolve graph")?
    {
        let id = node["id"].as_str().unwrap_or_default();
        let deps = node["deps"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let non_dev = deps.iter().filter(|d| {
            d["dep_kinds"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|k| k["kind"].as_str() != Some("dev")))
        });
        edges.insert(id, non_dev.filter_map(|d| d["pkg"].as_str()).collect());
    }

    let core = core_packages(metadata)?;
    let mut violations = Vec::new();
    for expected in CORE_CRATES {
        if !core.iter().any(|(name, _)| name == expected) {
            violations.push(format!(
                "core crate {expected} is not a workspace member under crates/"
            ));
        }
    }
    for (name, id) in &core {
        let allowed = |dep: &str| {
            ALLOWED
                .iter()
                .any(|(krate, pattern)| krate == name && matches(pattern, dep))
        };
        for direct in edges.get(id.as_str()).into_iter().flatten() {
            let dep = names.get(direct).copied().unwrap_or(*direct);
            if BANNED_DIRECT.iter().any(|p| matches(p, dep)) && !allowed(dep) {
                violations.push(format!("{name} depends directly on {dep}"));
            }
        }
        // Breadth-first, remembering the parent, to print the shortest chain to each banned crate.
        let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = VecDeque::from([id.as_str()]);
        let mut seen = BTreeSet::from([id.as_str()]);
        while let Some(at) = queue.pop_front() {
            for &next in edges.get(at).into_iter().flatten() {
                if !seen.insert(next) {
                    continue;
                }
                parent.insert(next, at);
                let dep = names.get(next).copied().unwrap_or(next);
                if BANNED_IN_CLOSURE.iter().any(|p| matches(p, dep)) && !allowed(dep) {
                    let mut chain = vec![dep];
                    let mut cur = next;
                    while let Some(&p) = parent.get(cur) {
                        chain.push(names.get(p).copied().unwrap_or(p));
                        cur = p;
                    }
                    chain.reverse();
                    violations.push(format!(
                        "{name} must not depend on {dep} (IO/async/Kubernetes/randomness): {}",
                        chain.join(" -> ")
                    ));
                    continue; // one report per banned crate is enough; do not walk below it
                }
                queue.push_back(next);
            }
        }
    }
    Ok(violations)
}

/// `.rs` files below `dir`, sorted, skipping `target/` and hidden folders.
fn rust_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry.file_type()?;
            if kind.is_dir() {
                if !name.starts_with('.') && name != "target" && name != "tmp" {
                    stack.push(entry.path());
                }
            } else if kind.is_file() && name.ends_with(".rs") {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    Ok(files)
}

/// `<root>/<group>/*/src/**/*.rs`.
fn sources_of(root: &Path, group: &str) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let Ok(entries) = fs::read_dir(root.join(group)) else {
        return Ok(files);
    };
    let mut crates: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    crates.sort();
    for krate in crates {
        files.extend(rust_files(&krate.join("src"))?);
    }
    Ok(files)
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn read(path: &Path) -> Result<String> {
    fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

pub(crate) fn core_source_violations(root: &Path) -> Result<Vec<String>> {
    let mut violations = Vec::new();
    for file in sources_of(root, "crates")? {
        let code = code_only(&read(&file)?);
        for (n, line) in code.lines().enumerate() {
            for (token, why) in banned_tokens_in(line) {
                violations.push(format!(
                    "{}:{}: `{token}` in a core crate: {why}",
                    relative(root, &file),
                    n + 1
                ));
            }
        }
    }
    Ok(violations)
}

/// The banned tokens found in one line of code (comments and strings already blanked).
fn banned_tokens_in(line: &str) -> Vec<(&'static str, &'static str)> {
    let mut found = Vec::new();
    for (token, why) in BANNED_TOKENS {
        let mut from = 0;
        while let Some(at) = line[from..].find(token) {
            let start = from + at;
            let end = start + token.len();
            from = end;
            let before = line[..start].chars().next_back();
            let after = line[end..].chars().next();
            let ident = |c: char| c.is_alphanumeric() || c == '_';
            // `std::fs` but not `std::fsx`; `rand::` but not `operand::`.
            let path_like = token.starts_with("std::") || token.ends_with("::");
            if (path_like && before.is_some_and(ident))
                || (token.starts_with("std::") && after.is_some_and(ident))
            {
                continue;
            }
            found.push((token, why));
            break;
        }
    }
    found
}

/// The source with comments and the contents of string and char literals replaced by spaces; line
/// breaks are kept, so line numbers stay right.
pub(crate) fn code_only(src: &str) -> String {
    let chars: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && matches!(next, Some('"' | '#')) && !prev_is_ident(&chars, i) {
            // raw string r"..." / r#"..."#
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            out.push('r');
            out.extend(std::iter::repeat_n('#', hashes));
            out.push('"');
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) {
                    out.push('"');
                    out.extend(std::iter::repeat_n('#', hashes));
                    j += 1 + hashes;
                    break;
                }
                out.push(blank(chars[j]));
                j += 1;
            }
            i = j;
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    out.push(' ');
                    out.push(blank(chars[i + 1]));
                    i += 2;
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            if i < chars.len() {
                out.push('"');
                i += 1;
            }
        } else if c == '\'' {
            // a char literal ('x', '\n', '\u{1F600}') or a lifetime ('a): only blank literals
            let end = if next == Some('\\') {
                (i + 2..chars.len().min(i + 12)).find(|&k| chars[k] == '\'')
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    out.push('\'');
                    out.extend(std::iter::repeat_n(' ', end - i - 1));
                    out.push('\'');
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev_is_ident(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

pub(crate) fn module_doc_violations(root: &Path) -> Result<Vec<String>> {
    let mut violations = Vec::new();
    for file in sources_of(root, "crates")?
        .into_iter()
        .chain(sources_of(root, "adapters")?)
    {
        let text = read(&file)?;
        if let Some(problem) = module_doc_problem(&text) {
            violations.push(format!("{}:1: {problem}", relative(root, &file)));
        }
    }
    Ok(violations)
}

fn module_doc_problem(text: &str) -> Option<&'static str> {
    match text.lines().find(|l| !l.trim().is_empty()) {
        Some(first) if first.trim_start().starts_with("//!") => None,
        Some(_) => Some("does not start with a `//!` module doc saying what the module is for"),
        None => Some("is empty: start it with a `//!` module doc"),
    }
}

pub(crate) fn trailing_whitespace_violations(root: &Path) -> Result<Vec<String>> {
    let mut violations = Vec::new();
    for file in rust_files(root)? {
        for n in trailing_whitespace_lines(&read(&file)?) {
            violations.push(format!(
                "{}:{n}: trailing whitespace",
                relative(root, &file)
            ));
        }
    }
    Ok(violations)
}

/// Comments (in Rust files and in `.ci/run`) say what the code is and why, not which issue
/// asked for it or whose it was: that history lives in git and EVALUATION.md, where it stays
/// true, while a comment naming an issue number means nothing to a reader of a fresh clone.
pub(crate) fn history_wording_violations(root: &Path) -> Result<Vec<String>> {
    let mut files = rust_files(root)?;
    files.push(root.join(".ci/run"));
    let mut violations = Vec::new();
    for file in files {
        let text = read(&file)?;
        let shell = file.extension().is_none_or(|e| e != "rs");
        for (n, line) in text.lines().enumerate() {
            if let Some(what) = history_wording(line, shell) {
                violations.push(format!(
                    "{}:{}: {what} in a comment",
                    relative(root, &file),
                    n + 1
                ));
            }
        }
    }
    Ok(violations)
}

/// The files allowed to build a snapshot step by step: the model's builder for embedders and
/// the testkit's for tests. A third builder drifts from both (its accounting, its defaults).
const SNAPSHOT_BUILDERS: [&str; 2] = [
    "crates/alfred-model/src/build.rs",
    "crates/alfred-testkit/src/builder.rs",
];

/// Tests, benches and the twin share one cluster builder and one random cluster generator
/// (`alfred-testkit`): no other file defines a builder's `build(self) -> ClusterSnapshot` or
/// a hand-rolled xorshift or splitmix step.
pub(crate) fn snapshot_builder_violations(root: &Path) -> Result<Vec<String>> {
    let mut violations = Vec::new();
    for file in rust_files(root)? {
        let name = relative(root, &file);
        // The twins' shared generator drives their simulations (arrivals, faults), not test
        // clusters, and a product binary does not take its randomness from a test kit.
        if name.starts_with("crates/alfred-testkit/")
            || name.starts_with("xtask/")
            || name == "crates/seeded-rng/src/lib.rs"
        {
            continue;
        }
        for (n, line) in read(&file)?.lines().enumerate() {
            if let Some(what) = second_generator(line) {
                if what == "a snapshot builder" && SNAPSHOT_BUILDERS.contains(&name.as_str()) {
                    continue;
                }
                violations.push(format!("{name}:{}: {what} outside alfred-testkit", n + 1));
            }
        }
    }
    Ok(violations)
}

/// What kind of second builder or generator the line defines, if any.
fn second_generator(line: &str) -> Option<&'static str> {
    let code = line.split("//").next().unwrap_or("");
    let compact: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.contains("fnbuild(") && compact.contains("self)->ClusterSnapshot") {
        return Some("a snapshot builder");
    }
    let xorshift = [
        "^=x<<13", "^=x>>7", "^=x<<17", "^=x>>12", "^=x<<25", "^=x>>27",
    ];
    if xorshift.iter().any(|step| compact.contains(step)) {
        return Some("a hand-rolled xorshift generator");
    }
    if compact.contains("0xbf58476d1ce4e5b9") || compact.contains("0xBF58_476D_1CE4_E5B9") {
        return Some("a hand-rolled splitmix generator");
    }
    None
}

/// A function over clippy's line threshold is split along its steps; where it is not (yet),
/// its `allow` says why on the same line, so the exception stays visible and explained.
pub(crate) fn long_function_allow_violations(root: &Path) -> Result<Vec<String>> {
    let mut violations = Vec::new();
    for file in rust_files(root)? {
        for (n, line) in read(&file)?.lines().enumerate() {
            if unexplained_long_function_allow(line) {
                violations.push(format!(
                    "{}:{}: a too_many_lines allow without a comment saying why",
                    relative(root, &file),
                    n + 1
                ));
            }
        }
    }
    Ok(violations)
}

/// Whether the line allows `too_many_lines` with no `//` reason after it.
fn unexplained_long_function_allow(line: &str) -> bool {
    const LINT: &str = concat!("clippy::", "too_many_lines");
    let Some(at) = line.find(LINT) else {
        return false;
    };
    let code = &line[..at];
    if code.contains("//") || !code.contains("allow(") {
        return false;
    }
    line[at..]
        .split_once("//")
        .is_none_or(|(_, why)| why.trim().len() < 3)
}

/// What a line's comment narrates, if anything: an issue number or a role.
fn history_wording(line: &str, shell: bool) -> Option<&'static str> {
    let marker = if shell { "#" } else { "//" };
    let comment = line.find(marker).map(|i| line[i..].to_lowercase())?;
    let issue = comment.match_indices("issue").any(|(i, _)| {
        let rest = comment[i + "issue".len()..].trim_start_matches([' ', '#']);
        rest.starts_with(|c: char| c.is_ascii_digit())
    });
    if issue {
        return Some("an issue number (say what the code does; the issue is in git)");
    }
    if comment.contains("engineer's") || comment.contains("engineers'") {
        return Some("a role (name the component, not whose it was)");
    }
    None
}

/// The pages that say what alfred is and does, where history does not belong: it lives in git
/// and `EVALUATION.md` (a line pointing there may name an evaluation).
const PRESENT_TENSE_PAGES: [&str; 4] =
    ["README.md", "ARCHITECTURE.md", "CONTRIBUTING.md", ".ci/run"];

/// Lines of the README, ARCHITECTURE.md, `docs/` and `.ci/run` that narrate history ("now
/// that …", "before this change", "it was … in the first evaluation").
pub(crate) fn history_narration_violations(root: &Path) -> Result<Vec<String>> {
    let mut files: Vec<PathBuf> = PRESENT_TENSE_PAGES.iter().map(|p| root.join(p)).collect();
    files.extend(text_files(&root.join("docs"), &["md"])?);
    let mut violations = Vec::new();
    for file in files.into_iter().filter(|f| f.exists()) {
        for (n, line) in read(&file)?.lines().enumerate() {
            if let Some(what) = history_narration(line) {
                violations.push(format!(
                    "{}:{}: {what}: say what is, and leave the history to git and EVALUATION.md",
                    relative(root, &file),
                    n + 1
                ));
            }
        }
    }
    Ok(violations)
}

/// What a line narrates, if anything.
fn history_narration(line: &str) -> Option<&'static str> {
    const PHRASES: [&str; 4] = [
        "now that",
        "before this change",
        "after this change",
        "until now",
    ];
    const WHEN: [&str; 12] = [
        "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
        "tenth", "earlier", "previous",
    ];
    let lower = line.to_lowercase();
    if PHRASES.iter().any(|p| lower.contains(p)) {
        return Some("a change narrated");
    }
    if lower.contains("evaluation.md") || lower.contains("evaluation-archive.md") {
        return None;
    }
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .any(|w| WHEN.contains(&w[0]) && w[1].starts_with("evaluation"))
        .then_some("an earlier evaluation narrated")
}

fn trailing_whitespace_lines(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.ends_with(' ') || l.ends_with('\t'))
        .map(|(n, _)| n + 1)
        .collect()
}

pub(crate) fn workspace_lints_violations(metadata: &Value) -> Result<Vec<String>> {
    let members: BTreeSet<&str> = metadata["workspace_members"]
        .as_array()
        .context("metadata has no workspace_members")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut violations = Vec::new();
    for pkg in metadata["packages"]
        .as_array()
        .context("metadata has no packages")?
    {
        if !members.contains(pkg["id"].as_str().unwrap_or_default()) {
            continue;
        }
        let manifest = PathBuf::from(pkg["manifest_path"].as_str().unwrap_or_default());
        if !uses_workspace_lints(&read(&manifest)?) {
            violations.push(format!(
                "{}: no `[lints] workspace = true`: every crate follows the workspace lint levels",
                manifest.display()
            ));
        }
    }
    Ok(violations)
}

/// Whether a manifest has `[lints]` + `workspace = true` (or `lints.workspace = true` / `lints = {
/// workspace = true }` at the top level).
fn uses_workspace_lints(manifest: &str) -> bool {
    let mut section = String::new();
    for line in manifest.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = header.trim().to_owned();
            continue;
        }
        let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        let ok = match section.as_str() {
            "lints" => compact == "workspace=true",
            "" => compact == "lints.workspace=true" || compact == "lints={workspace=true}",
            _ => false,
        };
        if ok {
            return true;
        }
    }
    false
}

/// Edges between workspace crates that leave a core crate against [`CORE_DIRECTION`]: normal
/// and build dependencies on another core crate not listed for it, and any dependency (dev
/// included) on a workspace crate outside `crates/` (an adapter or tool).
pub(crate) fn core_direction_violations(metadata: &Value) -> Result<Vec<String>> {
    let core = core_packages(metadata)?;
    let members: BTreeMap<&str, &str> = metadata["packages"]
        .as_array()
        .context("metadata has no packages")?
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap_or_default(),
                p["name"].as_str().unwrap_or_default(),
            )
        })
        .filter(|(id, _)| {
            metadata["workspace_members"]
                .as_array()
                .is_some_and(|m| m.iter().any(|x| x.as_str() == Some(id)))
        })
        .collect();
    let core_names: BTreeSet<&str> = core.iter().map(|(n, _)| n.as_str()).collect();
    let mut violations = Vec::new();
    for node in metadata["resolve"]["nodes"]
        .as_array()
        .context("metadata has no resolve graph")?
    {
        let id = node["id"].as_str().unwrap_or_default();
        let Some((name, _)) = core.iter().find(|(_, cid)| cid == id) else {
            continue;
        };
        let allowed = CORE_DIRECTION
            .iter()
            .find(|(krate, _)| krate == name)
            .map(|(_, deps)| *deps);
        for dep in node["deps"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let Some(&dep_name) = dep["pkg"].as_str().and_then(|p| members.get(p)) else {
                continue; // not a workspace crate
            };
            if dep_name == name.as_str() {
                continue; // a crate's tests may enable its own features
            }
            let normal = dep["dep_kinds"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|k| k["kind"].as_str() != Some("dev")));
            if !core_names.contains(dep_name) {
                violations.push(format!(
                    "{name} depends on {dep_name}, which is not a core crate: nothing under crates/ depends on adapters or tools"
                ));
            } else if normal && !allowed.is_some_and(|deps| deps.contains(&dep_name)) {
                violations.push(format!(
                    "{name} must not depend on {dep_name} (ARCHITECTURE.md: {name} may use {})",
                    allowed
                        .filter(|d| !d.is_empty())
                        .map_or("no other core crate".to_owned(), |d| d.join(", "))
                ));
            }
        }
    }
    Ok(violations)
}

/// Crates of [`COMMAND_LINE_ONLY`] that an adapter library of [`ADAPTER_LIBRARIES`] reaches
/// through normal or build dependencies (dev-dependencies are the tests' business), each with
/// the shortest chain, and every listed library that is not a workspace member.
pub(crate) fn adapter_library_violations(metadata: &Value) -> Result<Vec<String>> {
    let names: BTreeMap<&str, &str> = metadata["packages"]
        .as_array()
        .context("metadata has no packages")?
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap_or_default(),
                p["name"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    let mut edges: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for node in metadata["resolve"]["nodes"]
        .as_array()
        .context("metadata has no resolve graph")?
    {
        let deps = node["deps"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter(|d| {
                d["dep_kinds"]
                    .as_array()
                    .is_some_and(|kinds| kinds.iter().any(|k| k["kind"].as_str() != Some("dev")))
            })
            .filter_map(|d| d["pkg"].as_str())
            .collect();
        edges.insert(node["id"].as_str().unwrap_or_default(), deps);
    }
    let members: BTreeSet<&str> = metadata["workspace_members"]
        .as_array()
        .context("metadata has no workspace_members")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut violations = Vec::new();
    for (library, allowed) in ADAPTER_LIBRARIES {
        let Some(&id) = names
            .iter()
            .find(|(id, name)| **name == library && members.contains(**id))
            .map(|(id, _)| id)
        else {
            violations.push(format!(
                "adapter library {library} is not a workspace member"
            ));
            continue;
        };
        let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = VecDeque::from([id]);
        let mut seen = BTreeSet::from([id]);
        while let Some(at) = queue.pop_front() {
            for &next in edges.get(at).into_iter().flatten() {
                if !seen.insert(next) {
                    continue;
                }
                parent.insert(next, at);
                let dep = names.get(next).copied().unwrap_or(next);
                if COMMAND_LINE_ONLY.contains(&dep) && !allowed.contains(&dep) {
                    let mut chain = vec![dep];
                    let mut cur = next;
                    while let Some(&p) = parent.get(cur) {
                        chain.push(names.get(p).copied().unwrap_or(p));
                        cur = p;
                    }
                    chain.reverse();
                    violations.push(format!(
                        "{library} must build without {dep} (a library takes no command line, HTTP server or log subscriber; the binary does): {}",
                        chain.join(" -> ")
                    ));
                    continue;
                }
                queue.push_back(next);
            }
        }
    }
    Ok(violations)
}

/// The two product lines, by package-name prefix: no crate of one may depend on a crate of the
/// other, in any kind of dependency (a test helper would still tie their releases together).
const PRODUCTS: [&str; 2] = ["alfred-", "plumb-"];

/// Dependencies (normal, build or dev) between workspace crates of different products, and
/// from a shared crate (of neither product) to a crate of either.
pub(crate) fn product_separation_violations(metadata: &Value) -> Result<Vec<String>> {
    let members: BTreeSet<&str> = metadata["workspace_members"]
        .as_array()
        .context("metadata has no workspace_members")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let names: BTreeMap<&str, &str> = metadata["packages"]
        .as_array()
        .context("metadata has no packages")?
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap_or_default(),
                p["name"].as_str().unwrap_or_default(),
            )
        })
        .filter(|(id, _)| members.contains(id))
        .collect();
    // `alfred` (the binary's package) belongs to its product as `alfred-*` does.
    let product = |name: &str| {
        PRODUCTS
            .iter()
            .position(|p| name.starts_with(p) || Some(name) == p.strip_suffix('-'))
    };
    let mut violations = Vec::new();
    for node in metadata["resolve"]["nodes"]
        .as_array()
        .context("metadata has no resolve graph")?
    {
        let Some(&name) = node["id"].as_str().and_then(|id| names.get(id)) else {
            continue;
        };
        let own = product(name);
        for dep in node["deps"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let Some(&dep_name) = dep["pkg"].as_str().and_then(|id| names.get(id)) else {
                continue;
            };
            let Some(other) = product(dep_name) else {
                continue;
            };
            if own.is_none() {
                // A shared crate (scheduler-model, kube-leader-lease, ...) serves both products
                // only while it depends on neither.
                violations.push(format!(
                    "{name} depends on {dep_name}: a shared crate depends on no product's crate"
                ));
            } else if own != Some(other) {
                violations.push(format!(
                    "{name} depends on {dep_name}: the products stay apart; move what both need into a shared crate named for what it does"
                ));
            }
        }
    }
    Ok(violations)
}

/// Lines of the twin's tests that announce a skip themselves instead of calling
/// `common::skip_unless_ci` (which fails the test in CI rather than skipping it).
pub(crate) fn twin_skip_violations(root: &Path) -> Result<Vec<String>> {
    let tests = root.join("adapters/alfred-twin/tests");
    let mut violations = Vec::new();
    for file in rust_files(&tests)? {
        if file.ends_with("common/mod.rs") {
            continue;
        }
        for n in self_announced_skips(&read(&file)?) {
            violations.push(format!(
                "{}:{n}: a test skips by itself: call common::skip_unless_ci so that CI fails instead",
                relative(root, &file)
            ));
        }
    }
    Ok(violations)
}

/// Lines that print a message about skipping (`println!`/`eprintln!` with "skip").
fn self_announced_skips(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            (l.contains("println!(") || l.contains("print!("))
                && l.to_ascii_lowercase().contains("skip")
        })
        .map(|(n, _)| n + 1)
        .collect()
}

/// Runs the `docs_reference` tests (`cargo xtask tidy` only: the normal test command runs them
/// as tests already, and a test must not start cargo inside cargo).
fn docs_reference_violations(root: &Path) -> Result<Vec<String>> {
    let mut cmd = Command::new(crate::cargo());
    cmd.args(["test", "--locked", "--quiet"]);
    for package in DOCS_REFERENCE_PACKAGES {
        cmd.args(["-p", package]);
    }
    cmd.args(["--test", "docs_reference"]).current_dir(root);
    let out = cmd.output().context("cannot run cargo test")?;
    if out.status.success() {
        return Ok(Vec::new());
    }
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let mut violations: Vec<String> = text
        .lines()
        .filter(|l| l.contains("docs/") && !l.contains("-->"))
        .map(|l| l.trim().to_owned())
        .collect();
    if violations.is_empty() {
        violations.push(format!("the docs_reference tests failed:\n{text}"));
    }
    Ok(violations)
}

/// The anchor GitHub gives a Markdown heading: lower case, spaces to `-`, punctuation other
/// than `-` and `_` dropped.
fn heading_anchor(title: &str) -> String {
    title
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown page's headings (outside fenced code).
fn page_anchors(text: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut anchors = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !fenced && hashes > 0 && line[hashes..].starts_with(' ') {
            anchors.insert(heading_anchor(&line[hashes..]));
        }
    }
    anchors
}

/// The `docs/<page>.md` and `docs/<page>.md#<anchor>` references of a text, with their line.
fn docs_links(text: &str) -> Vec<(usize, String, Option<String>)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("docs/") {
            let tail = &rest[at + "docs/".len()..];
            let end = tail
                .find(|c: char| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '#' | '/')))
                .unwrap_or(tail.len());
            let link = tail[..end].trim_end_matches('.');
            rest = &tail[end..];
            let (page, anchor) = match link.split_once('#') {
                Some((p, a)) => (p, Some(a.to_owned())),
                None => (link, None),
            };
            if page.ends_with(".md") {
                out.push((n + 1, page.to_owned(), anchor));
            }
        }
    }
    out
}

/// References into `docs/` from the workspace's Rust files that name a missing page or a
/// heading the page does not have.
pub(crate) fn docs_link_violations(root: &Path) -> Result<Vec<String>> {
    let mut pages: BTreeMap<String, Option<BTreeSet<String>>> = BTreeMap::new();
    let mut violations = Vec::new();
    for file in rust_files(root)? {
        for (line, page, anchor) in docs_links(&read(&file)?) {
            let anchors = pages.entry(page.clone()).or_insert_with(|| {
                fs::read_to_string(root.join("docs").join(&page))
                    .ok()
                    .map(|t| page_anchors(&t))
            });
            let at = format!("{}:{line}", relative(root, &file));
            match (anchors, anchor) {
                (None, _) => violations.push(format!("{at}: docs/{page} does not exist")),
                (Some(set), Some(a)) if !set.contains(&a) => violations.push(format!(
                    "{at}: docs/{page} has no heading with the anchor #{a}"
                )),
                _ => {}
            }
        }
    }
    Ok(violations)
}

/// Whether a line points at a document outside the repository: a `§` section, a spec file, a
/// seed, or a lettered decision (`E4`, `G.10`, `B.1`, `decision 15.3`). The trace data under
/// `../shared/data` is an input the twin reads, not a document, and is not one of them.
fn outside_reference(line: &str) -> Option<&'static str> {
    const FILES: [&str; 9] = [
        "alfred-engine.md",
        "alfred-policies.md",
        "decisions.md",
        "ome-objects.md",
        "scheduler-simulation.md",
        "rust-engineering.md",
        "drain-plans-anchors.md",
        "shared/spec",
        "shared/seeds",
    ];
    if line.contains('§') {
        return Some("a § section");
    }
    if FILES.iter().any(|f| line.contains(f)) {
        return Some("a specification file");
    }
    let lower = line.to_lowercase();
    if lower.split("decision ").skip(1).any(numbered_decision) {
        return Some("a numbered decision");
    }
    let words: Vec<&str> = line
        .split(|c: char| !(c.is_alphanumeric() || c == '.'))
        .collect();
    for pair in words.windows(2) {
        // The seed documents are numbered 000, 001, …; a random seed (`seed 501`) is not one.
        if pair[0].eq_ignore_ascii_case("seed")
            && pair[1].len() == 3
            && pair[1].starts_with("00")
            && pair[1].bytes().all(|b| b.is_ascii_digit())
        {
            return Some("a seed");
        }
    }
    words
        .iter()
        .any(|w| lettered_decision(w.trim_end_matches('.')))
        .then_some("a lettered decision")
}

/// `15.3`, `e4`, `g.10` at the start of the text after "decision " (lower case).
fn numbered_decision(text: &str) -> bool {
    let token: String = text
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '.')
        .collect();
    let token = token.trim_end_matches('.');
    match token.split_once('.') {
        Some((major, minor)) if !major.is_empty() && major.bytes().all(|b| b.is_ascii_digit()) => {
            !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit())
        }
        _ => lettered_decision(&token.to_uppercase()),
    }
}

/// `E4`, `E16`, `G.10`, `B.1`: the letters and forms the decisions are numbered with.
fn lettered_decision(word: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit());
    match word.split_at_checked(1) {
        Some(("E", rest)) => digits(rest),
        Some(("G" | "B", rest)) => rest.strip_prefix('.').is_some_and(digits),
        _ => false,
    }
}

/// Every crate, adapter and tool folder, each of which must point only into the repository.
fn self_contained_dirs(root: &Path) -> Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    for group in ["crates", "adapters"] {
        let Ok(entries) = fs::read_dir(root.join(group)) else {
            continue;
        };
        dirs.extend(
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir()),
        );
    }
    dirs.extend(SELF_CONTAINED_TOOLS.iter().map(|t| root.join(t)));
    dirs.sort();
    if dirs.len() <= SELF_CONTAINED_TOOLS.len() {
        bail!("no crate or adapter found under {}", root.display());
    }
    Ok(dirs)
}

/// Lines of every crate, adapter and tool that point outside the repository. This file is
/// left out: it names the forms it looks for.
pub(crate) fn outside_reference_violations(root: &Path) -> Result<Vec<String>> {
    let mut violations = Vec::new();
    for krate in self_contained_dirs(root)? {
        for file in rust_files(&krate)? {
            if file.ends_with("xtask/src/tidy.rs") {
                continue;
            }
            outside_references_in(root, &file, &mut violations)?;
        }
    }
    Ok(violations)
}

/// Adds a violation for each line of `file` that points outside the repository.
fn outside_references_in(root: &Path, file: &Path, violations: &mut Vec<String>) -> Result<()> {
    for (n, line) in read(file)?.lines().enumerate() {
        if let Some(what) = outside_reference(line) {
            violations.push(format!(
                "{}:{}: names {what} outside the repository: point into docs/ instead",
                relative(root, file),
                n + 1
            ));
        }
    }
    Ok(())
}

/// The `*.md` names a Rust file's comments mention (outside `docs/` links, which
/// [`docs_link_violations`] checks with their anchors), with their line.
fn markdown_names(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Some(at) = line.find("//") else { continue };
        let comment = &line[at..];
        for word in comment.split(|c: char| !(c.is_alphanumeric() || "-_./".contains(c))) {
            let word = word.trim_end_matches('.');
            if word.ends_with(".md") && word.len() > 3 && !word.contains("docs/") {
                out.push((n + 1, word));
            }
        }
    }
    out
}

/// Markdown files named in comments that the repository does not have: a name with a path
/// resolves from the root or the crate; a bare name must be some file of the repository.
pub(crate) fn markdown_name_violations(root: &Path) -> Result<Vec<String>> {
    let mut everywhere = BTreeSet::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir)?.filter_map(|e| e.ok()) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if path.is_dir() {
                if !name.starts_with('.') && !["target", "tmp", "corpus"].contains(&name.as_str()) {
                    stack.push(path);
                }
            } else if name.ends_with(".md") {
                everywhere.insert(name);
            }
        }
    }
    let mut violations = Vec::new();
    for base in self_contained_dirs(root)? {
        for file in rust_files(&base)? {
            if file.ends_with("xtask/src/tidy.rs") {
                continue;
            }
            for (line, name) in markdown_names(&read(&file)?) {
                let found = if name.contains('/') {
                    root.join(name).exists() || base.join(name).exists()
                } else {
                    everywhere.contains(name)
                };
                if !found {
                    violations.push(format!(
                        "{}:{line}: {name} is not a file of the repository",
                        relative(root, &file)
                    ));
                }
            }
        }
    }
    Ok(violations)
}

/// The files below `root` whose extension is one of `extensions` (and `.ci/run` when `sh` is
/// asked for), sorted; build output, fuzz corpora and hidden folders left out.
fn text_files(root: &Path, extensions: &[&str]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir)?.filter_map(|e| e.ok()) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if path.is_dir() {
                if !name.starts_with('.') && !["target", "tmp", "corpus"].contains(&name.as_str()) {
                    stack.push(path);
                }
            } else if path
                .extension()
                .is_some_and(|e| extensions.iter().any(|x| e == *x))
            {
                files.push(path);
            }
        }
    }
    if extensions.contains(&"sh") {
        files.push(root.join(".ci/run"));
    }
    files.sort();
    Ok(files)
}

/// Files other than Rust sources that must point only into the repository too: Markdown pages,
/// manifests, deploy and fixture files, scripts. `EVALUATION-ARCHIVE.md` records what happened
/// when, in the words of the time, and is left as it was written; `EVALUATION.md` summarises it
/// and may name what an entry measured against.
const TEXT_EXTENSIONS: [&str; 6] = ["md", "toml", "yaml", "yml", "py", "sh"];

/// Lines of the repository's other text files (see [`TEXT_EXTENSIONS`]) that point outside it.
pub(crate) fn outside_reference_text_violations(root: &Path) -> Result<Vec<String>> {
    let mut violations = Vec::new();
    for file in text_files(root, &TEXT_EXTENSIONS)? {
        if file.ends_with("EVALUATION.md")
            || file.ends_with("EVALUATION-ARCHIVE.md")
            || file.ends_with("Cargo.lock")
        {
            continue;
        }
        outside_references_in(root, &file, &mut violations)?;
    }
    Ok(violations)
}

/// The relative link targets of a Markdown text (`](target)`), with their line; web and mail
/// links are left out.
fn markdown_links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let tail = &rest[at + 2..];
            let Some(end) = tail.find(')') else { break };
            let target = &tail[..end];
            rest = &tail[end..];
            if !(target.contains("://") || target.starts_with("mailto:") || target.contains(' ')) {
                out.push((n + 1, target.to_owned()));
            }
        }
    }
    out
}

/// Relative links of the repository's Markdown pages that name a missing file or heading.
pub(crate) fn markdown_link_violations(root: &Path) -> Result<Vec<String>> {
    let pages = text_files(root, &["md"])?;
    let mut violations = Vec::new();
    for page in pages.into_iter().filter(|p| p.exists()) {
        let text = read(&page)?;
        for (line, target) in markdown_links(&text) {
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap_or(root).join(path)
            };
            let at = format!("{}:{line}", relative(root, &page));
            if !file.exists() {
                violations.push(format!("{at}: {target}: no such file"));
            } else if let Some(a) = anchor
                && file.extension().is_some_and(|e| e == "md")
                && !page_anchors(&read(&file)?).contains(a)
            {
                violations.push(format!("{at}: {target}: no heading with that anchor"));
            }
        }
    }
    Ok(violations)
}

/// Where the metric list is declared, each name as `=> "alfred_…"`.
const METRIC_LIST: &str = "crates/alfred-model/src/metric.rs";

/// The `"alfred_…"` string literals of a text: (line, name).
fn metric_literals(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("\"alfred_") {
            let tail = &rest[at + 1..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(tail.len());
            rest = &tail[end..];
            if rest.starts_with('"') && end > "alfred_".len() {
                out.push((n + 1, &tail[..end]));
            }
        }
    }
    out
}

/// Metric names in non-test code that the metric list does not declare (a histogram's
/// `_bucket`, `_sum` and `_count` series count as its own).
pub(crate) fn metric_name_violations(root: &Path) -> Result<Vec<String>> {
    let list = read(&root.join(METRIC_LIST))?;
    let declared: BTreeSet<&str> = list
        .lines()
        .filter(|l| l.contains("=> \""))
        .flat_map(|l| metric_literals(l).into_iter().map(|(_, name)| name))
        .collect();
    if declared.is_empty() {
        bail!("{METRIC_LIST} declares no metric");
    }
    let known = |name: &str| {
        declared.contains(name)
            || ["_bucket", "_sum", "_count"]
                .iter()
                .any(|s| name.strip_suffix(s).is_some_and(|b| declared.contains(b)))
    };
    let mut violations = Vec::new();
    for file in sources_of(root, "crates")?
        .into_iter()
        .chain(sources_of(root, "adapters")?)
    {
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        if file.ends_with(METRIC_LIST) || name.ends_with("tests.rs") {
            continue;
        }
        let text = read(&file)?;
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (line, metric) in metric_literals(code) {
            if !known(metric) {
                violations.push(format!(
                    "{}:{line}: metric {metric} is not in {METRIC_LIST}",
                    relative(root, &file)
                ));
            }
        }
    }
    Ok(violations)
}

/// The page whose driving loop is compiled code, and the example that compiles it.
const DRIVING_LOOP_PAGE: &str = "ARCHITECTURE.md";
const DRIVING_LOOP_EXAMPLE: &str = "crates/alfred-dispatch/examples/driving_loop.rs";

/// The page's first ```rust block.
fn first_rust_block(page: &str) -> Option<Vec<&str>> {
    let mut lines = page.lines().skip_while(|l| l.trim() != "```rust");
    lines.next()?;
    Some(lines.take_while(|l| l.trim() != "```").collect())
}

/// The example's lines between its `// driving loop: begins` and `// driving loop: ends`
/// markers, less the indentation of the first marker.
fn marked_driving_loop(source: &str) -> Option<Vec<&str>> {
    let begin = source
        .lines()
        .find(|l| l.trim() == "// driving loop: begins")?;
    let indent = begin.len() - begin.trim_start().len();
    let mut lines = source
        .lines()
        .skip_while(|l| l.trim() != "// driving loop: begins");
    lines.next()?;
    Some(
        lines
            .take_while(|l| l.trim() != "// driving loop: ends")
            .map(|l| l.get(indent..).unwrap_or(l.trim_start()))
            .collect(),
    )
}

/// Where the page's listing differs from the compiled loop (the first differing line).
fn driving_loop_drift(page: &str, example: &str) -> Vec<String> {
    let (Some(shown), Some(compiled)) = (first_rust_block(page), marked_driving_loop(example))
    else {
        return vec![format!(
            "{DRIVING_LOOP_PAGE} has no ```rust block or {DRIVING_LOOP_EXAMPLE} no `// driving loop: begins`/`ends` markers"
        )];
    };
    let first_difference =
        (0..shown.len().max(compiled.len())).find(|&i| shown.get(i) != compiled.get(i));
    match first_difference {
        None => Vec::new(),
        Some(i) => vec![format!(
            "{DRIVING_LOOP_PAGE}: line {} of the driving loop listing is {:?}, {DRIVING_LOOP_EXAMPLE} has {:?}",
            i + 1,
            shown.get(i).copied().unwrap_or("(nothing)"),
            compiled.get(i).copied().unwrap_or("(nothing)")
        )],
    }
}

/// [`driving_loop_drift`] on the repository's files.
fn driving_loop_violations(root: &Path) -> Result<Vec<String>> {
    let page = read(&root.join(DRIVING_LOOP_PAGE))?;
    let example = read(&root.join(DRIVING_LOOP_EXAMPLE))?;
    Ok(driving_loop_drift(&page, &example))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace_root;

    fn fail_on(rule: &str, violations: Vec<String>) {
        use std::fmt::Write as _;
        let mut msg = String::new();
        for v in &violations {
            let _ = writeln!(msg, "  {v}");
        }
        assert!(
            violations.is_empty(),
            "tidy: {rule}: {} problem(s):\n{msg}",
            violations.len()
        );
    }

    // ---- the rules, applied to this repository ----

    #[test]
    fn core_crates_have_no_io_async_kube_or_random_dependencies() {
        let metadata = cargo_metadata(&workspace_root()).unwrap();
        fail_on(
            "core dependency closure",
            core_dependency_violations(&metadata).unwrap(),
        );
    }

    #[test]
    fn a_second_snapshot_builder_or_generator_is_found() {
        assert_eq!(
            second_generator("    pub fn build(mut self) -> ClusterSnapshot {"),
            Some("a snapshot builder")
        );
        assert_eq!(
            second_generator("        x ^= x << 13;"),
            Some("a hand-rolled xorshift generator")
        );
        assert_eq!(
            second_generator("    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);"),
            Some("a hand-rolled splitmix generator")
        );
        assert_eq!(
            second_generator("    fn build(snap: &ClusterSnapshot) -> Index {"),
            None
        );
        assert_eq!(second_generator("    // x ^= x << 13 in a comment"), None);
    }

    #[test]
    fn one_cluster_builder_and_one_generator_serve_every_test() {
        fail_on(
            "snapshot builders",
            snapshot_builder_violations(&workspace_root()).unwrap(),
        );
    }

    #[test]
    fn core_sources_use_no_clock_env_io_randomness_or_hash_collections() {
        fail_on(
            "core sources",
            core_source_violations(&workspace_root()).unwrap(),
        );
    }

    #[test]
    fn every_crate_and_adapter_module_starts_with_a_module_doc() {
        fail_on(
            "module docs",
            module_doc_violations(&workspace_root()).unwrap(),
        );
    }

    #[test]
    fn no_rust_file_has_trailing_whitespace() {
        fail_on(
            "trailing whitespace",
            trailing_whitespace_violations(&workspace_root()).unwrap(),
        );
    }

    #[test]
    fn every_crate_uses_the_workspace_lints() {
        let metadata = cargo_metadata(&workspace_root()).unwrap();
        fail_on(
            "workspace lints",
            workspace_lints_violations(&metadata).unwrap(),
        );
    }

    // ---- the checks themselves catch what they should ----

    fn tokens(src: &str) -> Vec<(usize, &'static str)> {
        code_only(src)
            .lines()
            .enumerate()
            .flat_map(|(n, l)| {
                banned_tokens_in(l)
                    .into_iter()
                    .map(move |(t, _)| (n + 1, t))
            })
            .collect()
    }

    #[test]
    fn banned_calls_are_found_in_code_with_their_line() {
        let src = "//! doc\nfn f() {\n    let t = std::time::SystemTime::now();\n    \
                   let m: HashMap<u8, u8> = x;\n    let v = std::env::var(\"X\");\n    \
                   use std::fs;\n    let r = rand::random::<u8>();\n}\n";
        assert_eq!(
            tokens(src),
            vec![
                (3, "SystemTime::now"),
                (4, "HashMap"),
                (5, "env::var"),
                (6, "std::fs"),
                (7, "rand::")
            ]
        );
    }

    #[test]
    fn comments_strings_and_lookalikes_are_not_flagged() {
        let src = "//! We never use HashMap here.\n/// `Instant::now` is banned\n\
                   /* SystemTime::now /* nested HashSet */ still comment std::fs */\n\
                   fn f<'a>(x: &'a str) -> char { let _ = \"HashMap \\\" std::net\"; \
                   let _ = r#\"thread_rng \"HashSet\"#; let _ = operand::x; let _ = std::fsx; '\"' }\n\
                   let y = 1; // HashMap\n";
        assert_eq!(tokens(src), vec![]);
        // line numbers survive blanking
        assert_eq!(code_only(src).lines().count(), src.lines().count());
    }

    #[test]
    fn module_doc_rule() {
        assert_eq!(module_doc_problem("//! Scores pools.\nfn f() {}\n"), None);
        assert_eq!(module_doc_problem("\n//! After a blank line.\n"), None);
        assert!(module_doc_problem("/// item doc\nfn f() {}\n").is_some());
        assert!(module_doc_problem("use x;\n//! late\n").is_some());
        assert!(module_doc_problem("").is_some());
    }

    #[test]
    fn no_comment_names_an_issue_or_a_role() {
        fail_on(
            "history wording",
            history_wording_violations(&workspace_root()).unwrap(),
        );
    }

    #[test]
    fn every_long_function_allow_says_why() {
        fail_on(
            "long functions",
            long_function_allow_violations(&workspace_root()).unwrap(),
        );
    }

    #[test]
    fn long_function_allow_rule() {
        // Split with `concat!` so that this file does not trip its own rule.
        let bare = concat!("#[allow(clippy::", "too_many_lines)]");
        assert!(unexplained_long_function_allow(bare));
        assert!(unexplained_long_function_allow(&format!("{bare} //")));
        assert!(!unexplained_long_function_allow(&format!(
            "{bare} // split pending"
        )));
        assert!(!unexplained_long_function_allow(concat!(
            "// clippy::",
            "too_many_lines is at 150"
        )));
        assert!(!unexplained_long_function_allow("fn f() {}"));
    }

    #[test]
    fn history_wording_rule() {
        // Split with `concat!` so that this file does not break its own rule.
        let flagged = [
            (concat!("let x = 1; // the API of iss", "ue 3"), false),
            (concat!("//! errors (iss", "ue #17), named"), false),
            (concat!("# a short campaign (iss", "ue 17 item 4)"), true),
            (concat!("//! the simulation engin", "eer's model"), false),
        ];
        for (line, shell) in flagged {
            assert!(history_wording(line, shell).is_some(), "{line}");
        }
        assert!(history_wording("// an issue with the lease", false).is_none());
        assert!(history_wording("let issue = 3; // counts", false).is_none());
        assert!(history_wording(concat!("let s = \"iss", "ue 3\";"), false).is_none());
    }

    #[test]
    fn readme_architecture_docs_and_ci_say_what_is() {
        fail_on(
            "history narration",
            history_narration_violations(&workspace_root()).unwrap(),
        );
    }

    #[test]
    fn history_narration_rule() {
        for line in [
            "# on by default now that the campaign is short",
            "(it was 90 ms in the first evaluation, 40 ms in the third)",
            "Measured at load 4 (before this change, at load 7: S 0.035 ms)",
            "the same as in earlier evaluations",
        ] {
            assert!(history_narration(line).is_some(), "{line}");
        }
        for line in [
            "Details: `adapters/alfred-twin/EVALUATION.md`, eighth evaluation.",
            "Measured: `adapters/alfred-twin/EVALUATION-ARCHIVE.md`, tenth evaluation.",
            "the evaluation twin runs 14 days",
            "a node that is no longer due for maintenance",
        ] {
            assert_eq!(history_narration(line), None, "{line}");
        }
    }

    #[test]
    fn trailing_whitespace_rule() {
        assert_eq!(trailing_whitespace_lines("a\nb \nc\n\td\t\n"), vec![2, 4]);
    }

    #[test]
    fn workspace_lints_rule() {
        assert!(uses_workspace_lints(
            "[package]\nname = \"x\"\n\n[lints]\nworkspace = true\n"
        ));
        assert!(uses_workspace_lints("lints.workspace = true\n[package]\n"));
        assert!(!uses_workspace_lints("[package]\nworkspace = true\n"));
        assert!(!uses_workspace_lints(
            "[lints]\n# workspace = true\n[lints.rust]\nunsafe_code = \"deny\"\n"
        ));
    }

    /// A tiny `cargo metadata` graph: core `alfred-score` -> `helper` -> `tokio` (banned through a
    /// normal dependency), `alfred-score` -dev-> `rand` (fine), `alfred-observe` -> `k8s-openapi`
    /// (allowed there), `alfred-policy` -> `getrandom` (banned as a direct dependency).
    fn metadata() -> Value {
        let pkg = |name: &str, dir: &str| {
            serde_json::json!({"id": format!("{name}-id"), "name": name,
                               "manifest_path": format!("/ws/{dir}/Cargo.toml")})
        };
        let dep = |name: &str, kind: Value| serde_json::json!({"pkg": format!("{name}-id"), "dep_kinds": [{"kind": kind}]});
        let node = |name: &str, deps: Vec<Value>| serde_json::json!({"id": format!("{name}-id"), "deps": deps});
        let mut packages: Vec<Value> = CORE_CRATES
            .iter()
            .map(|c| pkg(c, &format!("crates/{c}")))
            .collect();
        packages.push(pkg("alfred-kube", "adapters/alfred-kube"));
        for ext in ["helper", "tokio", "rand", "k8s-openapi", "getrandom"] {
            packages.push(pkg(ext, &format!("registry/{ext}")));
        }
        let mut members: Vec<Value> = CORE_CRATES
            .iter()
            .map(|c| Value::from(format!("{c}-id")))
            .collect();
        members.push("alfred-kube-id".into());
        serde_json::json!({
            "workspace_root": "/ws",
            "workspace_members": members,
            "packages": packages,
            "resolve": {"nodes": [
                node("alfred-score", vec![dep("helper", Value::Null), dep("rand", "dev".into())]),
                node("helper", vec![dep("tokio", Value::Null)]),
                node("alfred-observe", vec![dep("k8s-openapi", Value::Null)]),
                node("alfred-policy", vec![dep("getrandom", Value::Null)]),
                node("alfred-kube", vec![dep("tokio", Value::Null)]),
            ]}
        })
    }

    #[test]
    fn dependency_rule_reports_chains_and_honours_dev_deps_and_exceptions() {
        let v = core_dependency_violations(&metadata()).unwrap();
        assert_eq!(
            v,
            vec![
                "alfred-score must not depend on tokio (IO/async/Kubernetes/randomness): \
                 alfred-score -> helper -> tokio"
                    .to_owned(),
                "alfred-policy depends directly on getrandom".to_owned(),
            ]
        );
    }

    #[test]
    fn dependency_rule_notices_a_missing_core_crate() {
        let mut m = metadata();
        m["packages"]
            .as_array_mut()
            .unwrap()
            .retain(|p| p["name"] != "alfred-sim");
        let v = core_dependency_violations(&m).unwrap();
        assert!(
            v.iter()
                .any(|l| l.contains("alfred-sim is not a workspace member")),
            "{v:?}"
        );
    }

    #[test]
    fn core_crates_depend_on_each_other_only_as_the_architecture_draws() {
        let metadata = cargo_metadata(&workspace_root()).unwrap();
        fail_on(
            "core dependency direction",
            core_direction_violations(&metadata).unwrap(),
        );
    }

    #[test]
    fn no_plumb_crate_depends_on_an_alfred_crate_or_the_reverse() {
        let metadata = cargo_metadata(&workspace_root()).unwrap();
        fail_on(
            "products apart",
            product_separation_violations(&metadata).unwrap(),
        );
    }

    #[test]
    fn product_rule_catches_either_direction_and_dev_dependencies() {
        let mut m = metadata();
        let pkg = |name: &str| {
            serde_json::json!({"id": format!("{name}-id"), "name": name,
                               "manifest_path": format!("/ws/crates/{name}/Cargo.toml")})
        };
        m["packages"]
            .as_array_mut()
            .unwrap()
            .push(pkg("plumb-core"));
        m["workspace_members"]
            .as_array_mut()
            .unwrap()
            .push("plumb-core-id".into());
        let dep = |name: &str, kind: Value| serde_json::json!({"pkg": format!("{name}-id"), "dep_kinds": [{"kind": kind}]});
        let nodes = m["resolve"]["nodes"].as_array_mut().unwrap();
        nodes.push(serde_json::json!({"id": "plumb-core-id", "deps": [
            dep("plumb-model", Value::Null), dep("utc-time", Value::Null), dep("alfred-model", "dev".into())]}));
        nodes.push(serde_json::json!({"id": "alfred-dispatch-id", "deps": [dep("plumb-model", Value::Null)]}));
        nodes.push(
            serde_json::json!({"id": "alfred-model-id", "deps": [dep("utc-time", Value::Null)]}),
        );
        nodes.push(
            serde_json::json!({"id": "scheduler-model-id", "deps": [dep("alfred-model", "dev".into())]}),
        );
        assert_eq!(
            product_separation_violations(&m).unwrap(),
            vec![
                "plumb-core depends on alfred-model: the products stay apart; move what both need into a shared crate named for what it does".to_owned(),
                "alfred-dispatch depends on plumb-model: the products stay apart; move what both need into a shared crate named for what it does".to_owned(),
                "scheduler-model depends on alfred-model: a shared crate depends on no product's crate".to_owned(),
            ]
        );
    }

    #[test]
    fn adapter_libraries_build_without_clap_axum_or_tracing_subscriber() {
        let metadata = cargo_metadata(&workspace_root()).unwrap();
        fail_on(
            "libraries without a command line",
            adapter_library_violations(&metadata).unwrap(),
        );
    }

    #[test]
    fn library_rule_follows_normal_dependencies_only_and_honours_allowances() {
        let pkg = |name: &str| {
            serde_json::json!({"id": format!("{name}-id"), "name": name,
                               "manifest_path": format!("/ws/adapters/{name}/Cargo.toml")})
        };
        let dep = |name: &str, kind: Value| serde_json::json!({"pkg": format!("{name}-id"), "dep_kinds": [{"kind": kind}]});
        let libraries = ADAPTER_LIBRARIES.map(|(name, _)| name);
        let mut packages: Vec<Value> = libraries.iter().map(|n| pkg(n)).collect();
        packages.extend(["helper", "clap", "axum", "tracing-subscriber"].map(pkg));
        let members: Vec<Value> = libraries
            .iter()
            .map(|n| Value::from(format!("{n}-id")))
            .collect();
        let m = serde_json::json!({
            "workspace_members": members,
            "packages": packages,
            "resolve": {"nodes": [
                {"id": "alfred-kube-id", "deps": [dep("helper", Value::Null), dep("clap", "dev".into())]},
                {"id": "helper-id", "deps": [dep("tracing-subscriber", Value::Null)]},
                {"id": "metrics-endpoint-id", "deps": [dep("axum", Value::Null)]},
                {"id": "kube-connect-id", "deps": [dep("metrics-endpoint", Value::Null)]},
            ]}
        });
        assert_eq!(
            adapter_library_violations(&m).unwrap(),
            vec![
                "alfred-kube must build without tracing-subscriber (a library takes no command line, HTTP server or log subscriber; the binary does): alfred-kube -> helper -> tracing-subscriber".to_owned(),
                "kube-connect must build without axum (a library takes no command line, HTTP server or log subscriber; the binary does): kube-connect -> metrics-endpoint -> axum".to_owned(),
            ]
        );
    }

    #[test]
    fn twin_tests_skip_for_missing_data_only_outside_ci() {
        fail_on(
            "twin trace skips",
            twin_skip_violations(&workspace_root()).unwrap(),
        );
    }

    #[test]
    fn direction_rule_catches_an_arbiter_that_reads_the_scorer_and_a_core_crate_on_an_adapter() {
        let mut m = metadata();
        let dep = |name: &str, kind: Value| serde_json::json!({"pkg": format!("{name}-id"), "dep_kinds": [{"kind": kind}]});
        let nodes = m["resolve"]["nodes"].as_array_mut().unwrap();
        nodes.push(serde_json::json!({"id": "alfred-arbiter-id", "deps": [
            dep("alfred-model", Value::Null),
            dep("alfred-score", Value::Null),
            dep("alfred-policy", "dev".into()),
        ]}));
        nodes.push(serde_json::json!({"id": "alfred-dispatch-id", "deps": [
            dep("alfred-policy", Value::Null),
            dep("alfred-kube", "dev".into()),
        ]}));
        let v = core_direction_violations(&m).unwrap();
        assert_eq!(
            v,
            vec![
                "alfred-arbiter must not depend on alfred-score (ARCHITECTURE.md: alfred-arbiter may use alfred-model)".to_owned(),
                "alfred-dispatch depends on alfred-kube, which is not a core crate: nothing under crates/ depends on adapters or tools".to_owned(),
            ]
        );
    }

    #[test]
    fn skip_rule_finds_printed_skips() {
        let src = "fn t() {\n    let Some(x) = f() else {\n        println!(\"NOTICE: data missing; test skipped\");\n        return;\n    };\n    eprintln!(\"Skipping part\");\n    println!(\"ran\");\n}\n";
        assert_eq!(self_announced_skips(src), vec![3, 6]);
    }

    #[test]
    fn references_into_docs_resolve() {
        fail_on(
            "references into docs/",
            docs_link_violations(&workspace_root()).unwrap(),
        );
    }

    #[test]
    fn every_crate_points_only_into_the_repository() {
        fail_on(
            "self-contained crates",
            outside_reference_violations(&workspace_root()).unwrap(),
        );
    }

    #[test]
    fn docs_links_and_anchors_are_read_as_github_does() {
        assert_eq!(
            docs_links("// see docs/design.md#gates, and (docs/reasons.md).\n// docs/ alone\n"),
            vec![
                (1, "design.md".to_owned(), Some("gates".to_owned())),
                (1, "reasons.md".to_owned(), None),
            ]
        );
        let anchors = page_anchors(
            "# Design notes\n## Re-check before a request\n```\n# not a heading\n```\n### Drain plans and the budget\n",
        );
        assert_eq!(
            anchors.into_iter().collect::<Vec<_>>(),
            [
                "design-notes",
                "drain-plans-and-the-budget",
                "re-check-before-a-request"
            ]
        );
        assert_eq!(
            heading_anchor(" `alfred run` flags (v2)"),
            "alfred-run-flags-v2"
        );
    }

    #[test]
    fn outside_references_are_recognised() {
        for line in [
            "/// the gates of §8.3",
            "//! (alfred-engine.md, decisions)",
            "// decision E4 says",
            "// decision 15.3",
            "// seed 000 \"The arbiter\"",
            "// (B.1: a plan)",
            "// decision G.10",
            "// E16 applies",
            "// Decision e4: one function",
            "// as rust-engineering.md says",
        ] {
            assert!(outside_reference(line).is_some(), "{line}");
        }
        for line in [
            "/// docs/design.md#gates",
            "let b = 1; // 16 steps",
            "// the seed of the generator",
            "// E is a letter, Bx2 is a name, G.x too",
            "// SECTION_2",
            "// GPU models G2 and B1, E.1",
            "// 0 s: decision 1 moves ns/a",
            "// the trace under ../shared/data/alibaba-gpu-v2023",
            "the same from seed 501, two processes",
        ] {
            assert_eq!(outside_reference(line), None, "{line}");
        }
    }

    #[test]
    fn pages_manifests_and_scripts_point_only_into_the_repository() {
        fail_on(
            "self-contained text files",
            outside_reference_text_violations(&workspace_root()).unwrap(),
        );
    }

    #[test]
    fn markdown_files_named_in_comments_exist() {
        fail_on(
            "markdown names in comments",
            markdown_name_violations(&workspace_root()).unwrap(),
        );
    }

    #[test]
    fn markdown_names_are_read_from_comments_only() {
        let text = "let s = \"A.md\"; // see BENCH.md and adapters/x/README.md.\n\
                    /// docs/design.md#gates is checked elsewhere\n//! (STATE.md)\n";
        assert_eq!(
            markdown_names(text),
            vec![
                (1, "BENCH.md"),
                (1, "adapters/x/README.md"),
                (3, "STATE.md")
            ]
        );
    }

    #[test]
    fn architecture_driving_loop_is_the_compiled_one() {
        fail_on(
            "driving loop",
            driving_loop_violations(&workspace_root()).unwrap(),
        );
    }

    #[test]
    fn a_driving_loop_listing_that_drifts_is_named() {
        let example = "fn f() {\n    // driving loop: begins\n    let a = 1;\n    a\n    // driving loop: ends\n}\n";
        let page = |body: &str| format!("Text.\n\n```rust\n{body}```\n\nMore.\n");
        assert!(driving_loop_drift(&page("let a = 1;\na\n"), example).is_empty());
        let drift = driving_loop_drift(&page("let a = 2;\na\n"), example);
        assert_eq!(drift.len(), 1);
        assert!(drift[0].contains("line 1"), "{drift:?}");
        let shorter = driving_loop_drift(&page("let a = 1;\n"), example);
        assert!(shorter[0].contains("(nothing)"), "{shorter:?}");
        assert_eq!(driving_loop_drift("no listing", example).len(), 1);
    }

    #[test]
    fn markdown_links_resolve() {
        fail_on(
            "markdown links",
            markdown_link_violations(&workspace_root()).unwrap(),
        );
    }

    #[test]
    fn markdown_links_are_the_relative_ones() {
        let text = "See [a](pages/a.md#x) and [b](#y), [web](https://e.org/#z).\n[c](../c.md)\n";
        assert_eq!(
            markdown_links(text),
            vec![
                (1, "pages/a.md#x".to_owned()),
                (1, "#y".to_owned()),
                (2, "../c.md".to_owned())
            ]
        );
    }

    #[test]
    fn metric_names_in_code_are_the_declared_ones() {
        fail_on(
            "metric names",
            metric_name_violations(&workspace_root()).unwrap(),
        );
    }

    #[test]
    fn metric_literals_are_whole_names_in_quotes() {
        let text =
            "x(\"alfred_a_total\", 1);\nlet p = \"alfred_\"; f(\"alfred_b\" , \"alfred_c {x}\");\n";
        assert_eq!(
            metric_literals(text),
            vec![(1, "alfred_a_total"), (2, "alfred_b")]
        );
    }
}
