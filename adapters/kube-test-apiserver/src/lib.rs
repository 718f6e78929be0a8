//! A real Kubernetes API server (v1.20.2) for a controller's integration tests, run on loopback
//! beside etcd: `build`, `start`, `stop`, `status` and `restart`, for the repository's `cargo
//! xtask apiserver`. A [`Profile`] names the product it serves: its cache folder, the prefix of
//! the variables `status` prints, and the ServiceAccount whose kubeconfig it writes.
//!
//! No registry this project can reach ships a kube-apiserver binary, so this builds one from Debian
//! bookworm's own `kubernetes` source package (its orig tarball is the full upstream v1.20.2 tree
//! with `vendor/`), with Debian's `golang-1.19` and runs it beside Debian's `etcd-server`. The recipe:
//!
//! 1. `apt-get source --download-only kubernetes` through a temporary deb-src list passed with apt
//!    options (the system's apt configuration is never touched), `apt-get download` of the Go
//!    toolchain, etcd and reflect2, each unpacked with `dpkg -x` into the cache folder;
//! 2. a GOPATH-mode build (Kubernetes 1.20 predates its go.mod workflow), CGO off, offline;
//! 3. `openapi-gen` over every package tagged `+k8s:openapi-gen=` (the tarball lacks the generated
//!    `zz_generated.openapi.go`);
//! 4. the vendored `modern-go/reflect2` 1.0.1 replaced by Debian's 1.0.2 (1.0.1 crashes under
//!    Go >= 1.18 on the first custom-resource write).
//!
//! Everything lives under `${XDG_CACHE_HOME:-$HOME/.cache}/<profile cache folder>`: `downloads/`
//! the Debian packages, `bin-<recipe>/` the finished binaries (a second `build` or `start` reuses
//! them at once), `build.lock` serialises builds, `run/` the state of a running server (a fresh,
//! empty etcd on every `start`), its logs and two kubeconfigs: `run/admin.kubeconfig` (group
//! `system:masters`) and `run/<profile kubeconfig>.kubeconfig` (the profile's ServiceAccount user
//! `system:serviceaccount:<namespace>:<name>`, so the product's shipped RBAC binds it unchanged).
//! Everything listens on 127.0.0.1 only.
//!
//! `--dir DIR --port PORT` (after any subcommand) names a private instance instead: state in `DIR`
//! (wiped by `start`), kube-apiserver on `PORT`, etcd on `PORT+1`/`PORT+2`, same binaries. `restart`
//! restarts kube-apiserver alone (etcd, tokens, certs and kubeconfigs stay), which is what a live
//! test of watch recovery does to its private instance.

#![warn(missing_docs, unreachable_pub)]

use std::fs;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// Bumped whenever the recipe changes: each recipe has its own `bin-<id>/` folder, so checkouts
/// of different recipes sharing one cache never overwrite each other's binaries.
const RECIPE_ID: &str = "v1.20.2-r3";
const RECIPE: &str = "kube-apiserver v1.20.2 / debian bookworm kubernetes source / go 1.19";
const SOURCE_PACKAGE: &str = "kubernetes";
const SUITE: &str = "bookworm";
const BINARY_PACKAGES: [&str; 4] = [
    "golang-1.19-go",
    "golang-1.19-src",
    "etcd-server",
    "golang-github-modern-go-reflect2-dev",
];
const ETCD_CLIENT_PORT: u16 = 23790;
const ETCD_PEER_PORT: u16 = 23800;
const APISERVER_PORT: u16 = 16443;

/// Who the server is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// The folder under `${XDG_CACHE_HOME:-$HOME/.cache}` (binaries, downloads, `run/`).
    pub cache_folder: &'static str,
    /// The prefix of the variables `status` prints (`<prefix>_RUNNING`, `_URL`, `_KUBECONFIG`,
    /// `_<KUBECONFIG NAME>_KUBECONFIG`).
    pub env_prefix: &'static str,
    /// The namespace of the ServiceAccount (and the kubeconfigs' default namespace).
    pub namespace: &'static str,
    /// The ServiceAccount the second kubeconfig authenticates as.
    pub service_account: &'static str,
    /// The second kubeconfig's file name without `.kubeconfig`.
    pub kubeconfig_name: &'static str,
    /// The name of the etcd member and of the kubeconfigs' cluster.
    pub cluster_name: &'static str,
}

impl Profile {
    /// The ServiceAccount's user name.
    fn user(&self) -> String {
        format!(
            "system:serviceaccount:{}:{}",
            self.namespace, self.service_account
        )
    }
    /// The ServiceAccount's groups, comma-separated.
    fn groups(&self) -> String {
        format!(
            "system:serviceaccounts,system:serviceaccounts:{}",
            self.namespace
        )
    }
}

const USAGE: &str =
    "usage: cargo xtask apiserver build|start|stop|status|restart [--dir DIR] [--port PORT]";

/// Runs one subcommand (`build`, `start`, `stop`, `status`, `restart`, then `--dir DIR --port
/// PORT` for a private instance) for `profile`; `start` and `status` print the variables a test
/// reads, one `NAME=value` a line on stdout.
pub fn main(profile: &Profile, args: &[String]) -> Result<()> {
    let cache = Cache::new(profile)?;
    let inst = Instance::from_args(profile, &cache, args.get(1..).unwrap_or_default())?;
    match args.first().map(String::as_str) {
        Some("build") => build(&cache),
        Some("start") => {
            build(&cache)?;
            start(&cache, &inst)
        }
        Some("stop") => stop(&inst),
        Some("status") => status(&inst),
        Some("restart") => restart(&cache, &inst),
        _ => bail!(USAGE),
    }
}

/// One server: its state folder and ports. The default is the shared test server (`run/` under
/// the cache, port 16443, etcd on 23790/23800); `--dir DIR --port PORT` names a private one (etcd
/// on PORT+1 and PORT+2), e.g. for a test that restarts its server.
struct Instance {
    profile: Profile,
    run_dir: PathBuf,
    port: u16,
    etcd_client: u16,
    etcd_peer: u16,
}

impl Instance {
    fn from_args(profile: &Profile, cache: &Cache, args: &[String]) -> Result<Instance> {
        let mut inst = Instance {
            profile: *profile,
            run_dir: cache.run(),
            port: APISERVER_PORT,
            etcd_client: ETCD_CLIENT_PORT,
            etcd_peer: ETCD_PEER_PORT,
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--dir" => {
                    inst.run_dir = PathBuf::from(it.next().context(USAGE)?);
                }
                "--port" => {
                    let port: u16 = it.next().context(USAGE)?.parse().context(USAGE)?;
                    inst.port = port;
                    inst.etcd_client = port.checked_add(1).context(USAGE)?;
                    inst.etcd_peer = port.checked_add(2).context(USAGE)?;
                }
                _ => bail!(USAGE),
            }
        }
        Ok(inst)
    }
}

struct Cache {
    root: PathBuf,
}

impl Cache {
    fn new(profile: &Profile) -> Result<Cache> {
        let base = match std::env::var_os("XDG_CACHE_HOME") {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            _ => PathBuf::from(
                std::env::var_os("HOME").context("neither XDG_CACHE_HOME nor HOME is set")?,
            )
            .join(".cache"),
        };
        Ok(Cache {
            root: base.join(profile.cache_folder),
        })
    }
    fn bin(&self) -> PathBuf {
        self.root.join(format!("bin-{RECIPE_ID}"))
    }
    fn stamp(&self) -> PathBuf {
        self.bin().join("BUILT")
    }
    fn run(&self) -> PathBuf {
        self.root.join("run")
    }
    fn downloads(&self) -> PathBuf {
        self.root.join("downloads")
    }
    fn work(&self) -> PathBuf {
        self.root.join("work")
    }
}

// ---------------------------------------------------------------------------------------------
// build

fn build(cache: &Cache) -> Result<()> {
    // One build at a time per cache folder (several checkouts on one machine share it); a second
    // caller waits here and then finds the finished build.
    fs::create_dir_all(&cache.root)?;
    let lock = fs::File::create(cache.root.join("build.lock"))?;
    lock.lock()
        .with_context(|| format!("cannot lock {}", cache.root.join("build.lock").display()))?;
    if cache.stamp().is_file()
        && cache.bin().join("kube-apiserver").is_file()
        && cache.bin().join("etcd").is_file()
    {
        eprintln!("apiserver: cached build in {}", cache.bin().display());
        return Ok(());
    }
    let started = Instant::now();
    eprintln!(
        "apiserver: building {RECIPE} ({RECIPE_ID}) in {} (about 5 minutes on 2 cores)",
        cache.root.display()
    );
    fs::create_dir_all(cache.downloads())?;
    download_binary_packages(cache)?;
    let orig = download_source(cache)?;

    check_source_version(&orig)?;
    let work = cache.work();
    if work.exists() {
        fs::remove_dir_all(&work).with_context(|| format!("cannot clear {}", work.display()))?;
    }
    let root = work.join("root");
    fs::create_dir_all(&root)?;
    for deb in debs(cache)? {
        run(Command::new("dpkg").arg("-x").arg(&deb).arg(&root))?;
    }
    let goroot = root.join("usr/lib/go-1.19");
    let go = goroot.join("bin/go");
    if !go.is_file() {
        bail!("{} is missing after unpacking golang-1.19-go", go.display());
    }

    let gopath = work.join("gopath");
    let k8s = gopath.join("src/k8s.io/kubernetes");
    fs::create_dir_all(&k8s)?;
    run(Command::new("tar")
        .arg("-xzf")
        .arg(&orig)
        .arg("--strip-components=1")
        .arg("-C")
        .arg(&k8s))?;
    replace_reflect2(&root, &k8s)?;

    let go_env = |cmd: &mut Command| {
        cmd.current_dir(&k8s)
            .env("GOROOT", &goroot)
            .env("GOPATH", &gopath)
            .env("GOCACHE", work.join("gocache"))
            .env("GO111MODULE", "off")
            .env("GOPROXY", "off")
            .env("GOFLAGS", "")
            .env("GOTOOLCHAIN", "local")
            .env("CGO_ENABLED", "0")
            .env("PATH", path_with(&goroot.join("bin")));
    };
    let tools = work.join("tools");
    let openapi_gen = tools.join("openapi-gen");
    let mut cmd = Command::new(&go);
    go_env(&mut cmd);
    run(cmd
        .args(["build", "-o"])
        .arg(&openapi_gen)
        .arg("k8s.io/kubernetes/vendor/k8s.io/kube-openapi/cmd/openapi-gen"))?;

    let inputs = openapi_input_packages(&k8s)?;
    eprintln!(
        "apiserver: openapi-gen over {} tagged packages",
        inputs.len()
    );
    let mut cmd = Command::new(&openapi_gen);
    go_env(&mut cmd);
    run(cmd
        .arg("--input-dirs")
        .arg(inputs.join(","))
        .args([
            "--output-package",
            "k8s.io/kubernetes/pkg/generated/openapi",
        ])
        .args(["--output-file-base", "zz_generated.openapi"])
        .arg("--go-header-file")
        .arg(k8s.join("hack/boilerplate/boilerplate.generatego.txt"))
        .arg("--output-base")
        .arg(gopath.join("src"))
        .arg("--report-filename")
        .arg(work.join("openapi-api-rule-violations.txt")))?;
    if !k8s
        .join("pkg/generated/openapi/zz_generated.openapi.go")
        .is_file()
    {
        bail!("openapi-gen did not write pkg/generated/openapi/zz_generated.openapi.go");
    }

    set_version(&k8s)?;
    let built = work.join("kube-apiserver");
    let mut cmd = Command::new(&go);
    go_env(&mut cmd);
    run(cmd
        .args(["build", "-trimpath", "-ldflags", "-s -w", "-o"])
        .arg(&built)
        .arg("k8s.io/kubernetes/cmd/kube-apiserver"))?;

    let bin = cache.bin();
    fs::create_dir_all(&bin)?;
    install(&built, &bin.join("kube-apiserver"))?;
    install(&root.join("usr/bin/etcd"), &bin.join("etcd"))
        .context("etcd-server has no usr/bin/etcd")?;
    fs::write(cache.stamp(), format!("{RECIPE} ({RECIPE_ID})\n"))?;
    // The tree (~120 MB) and Go's build cache (~1 GB) are not needed once the binaries exist.
    fs::remove_dir_all(&work).with_context(|| format!("cannot remove {}", work.display()))?;
    eprintln!(
        "apiserver: built {} and {} in {:.0} s",
        bin.join("kube-apiserver").display(),
        bin.join("etcd").display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Copies then renames into place: a server still running the old file keeps it (copying over a
/// running executable fails with "text file busy").
fn install(from: &Path, to: &Path) -> Result<()> {
    let tmp = to.with_extension("new");
    fs::copy(from, &tmp).with_context(|| format!("cannot copy {}", from.display()))?;
    fs::rename(&tmp, to).with_context(|| format!("cannot install {}", to.display()))?;
    Ok(())
}

fn path_with(dir: &Path) -> std::ffi::OsString {
    let mut paths = vec![dir.to_path_buf()];
    if let Some(old) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&old));
    }
    std::env::join_paths(paths).expect("PATH entries contain no separator")
}

fn debs(cache: &Cache) -> Result<Vec<PathBuf>> {
    let mut debs = Vec::new();
    for name in BINARY_PACKAGES {
        let prefix = format!("{name}_");
        let found = fs::read_dir(cache.downloads())?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                let f = p.file_name().unwrap_or_default().to_string_lossy();
                f.starts_with(&prefix) && f.ends_with(".deb")
            })
            .max();
        debs.push(found.with_context(|| format!("{name} was not downloaded"))?);
    }
    Ok(debs)
}

fn download_binary_packages(cache: &Cache) -> Result<()> {
    if debs(cache).is_ok() {
        return Ok(());
    }
    // A machine whose package lists were never fetched knows no candidate: fetch them once.
    let policy = output(Command::new("apt-cache").args(["policy", "etcd-server"]))?;
    if !policy.contains("Candidate:") || policy.contains("Candidate: (none)") {
        run(Command::new("apt-get").args(["update", "-q"]))?;
    }
    run(Command::new("apt-get")
        .args(["download", "-q", "-o", "APT::Sandbox::User=root"])
        .args(BINARY_PACKAGES)
        .current_dir(cache.downloads()))
}

/// Fetches the `kubernetes` source package through a temporary deb-src list: the system's apt
/// configuration and package lists are left as they are.
fn download_source(cache: &Cache) -> Result<PathBuf> {
    let find_orig = || -> Result<Option<PathBuf>> {
        Ok(fs::read_dir(cache.downloads())?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                let f = p.file_name().unwrap_or_default().to_string_lossy();
                f.starts_with("kubernetes_") && f.ends_with(".orig.tar.gz")
            })
            .max())
    };
    if let Some(orig) = find_orig()? {
        return Ok(orig);
    }
    let (uri, signed_by) = debian_mirror()?;
    let apt = cache.root.join("apt-tmp");
    if apt.exists() {
        fs::remove_dir_all(&apt)?;
    }
    fs::create_dir_all(apt.join("lists/partial"))?;
    fs::create_dir_all(apt.join("parts"))?;
    let options = match &signed_by {
        Some(key) => format!("[signed-by={key}] "),
        None => String::new(),
    };
    fs::write(
        apt.join("sources.list"),
        format!("deb-src {options}{uri} {SUITE} main\n"),
    )?;
    let apt_options = [
        format!(
            "Dir::Etc::SourceList={}",
            apt.join("sources.list").display()
        ),
        format!("Dir::Etc::SourceParts={}", apt.join("parts").display()),
        format!("Dir::State::Lists={}", apt.join("lists").display()),
        "Dir::Cache::pkgcache=".to_owned(),
        "Dir::Cache::srcpkgcache=".to_owned(),
        "APT::Sandbox::User=root".to_owned(),
    ];
    let apt_get = || {
        let mut cmd = Command::new("apt-get");
        cmd.arg("-q");
        for o in &apt_options {
            cmd.arg("-o").arg(o);
        }
        cmd.current_dir(cache.downloads());
        cmd
    };
    run(apt_get().arg("update"))?;
    run(apt_get().args(["source", "--download-only", SOURCE_PACKAGE]))?;
    fs::remove_dir_all(&apt)?;
    find_orig()?.context("apt-get source left no kubernetes_*.orig.tar.gz")
}

/// The Debian mirror this machine already uses for `bookworm` (deb822 `.sources` or one-line
/// `sources.list` format), with its keyring when one is named.
fn debian_mirror() -> Result<(String, Option<String>)> {
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(dir) = fs::read_dir("/etc/apt/sources.list.d") {
        let mut more: Vec<PathBuf> = dir.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        more.sort();
        files.extend(more);
    }
    for file in files {
        let Ok(text) = fs::read_to_string(&file) else {
            continue;
        };
        let name = file.to_string_lossy();
        let found = if name.ends_with(".sources") {
            mirror_from_deb822(&text)
        } else if name.ends_with(".list") {
            mirror_from_one_line(&text)
        } else {
            None
        };
        if let Some(found) = found {
            return Ok(found);
        }
    }
    bail!(
        "no apt source for Debian `{SUITE}` main found under /etc/apt: cannot fetch the kubernetes source package"
    )
}

fn mirror_from_deb822(text: &str) -> Option<(String, Option<String>)> {
    for stanza in text.split("\n\n") {
        let field = |key: &str| {
            stanza.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim().eq_ignore_ascii_case(key)).then(|| v.trim().to_owned())
            })
        };
        let (Some(uris), Some(suites)) = (field("URIs"), field("Suites")) else {
            continue;
        };
        let components = field("Components").unwrap_or_default();
        if field("Enabled").is_some_and(|v| v == "no")
            || !suites.split_whitespace().any(|s| s == SUITE)
            || !components.split_whitespace().any(|c| c == "main")
        {
            continue;
        }
        let uri = uris.split_whitespace().next()?.to_owned();
        return Some((uri, field("Signed-By")));
    }
    None
}

fn mirror_from_one_line(text: &str) -> Option<(String, Option<String>)> {
    for line in text.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("deb ") else {
            continue;
        };
        let mut rest = rest.trim_start();
        let mut signed_by = None;
        if let Some(opts) = rest.strip_prefix('[') {
            let (opts, after) = opts.split_once(']')?;
            signed_by = opts
                .split_whitespace()
                .find_map(|o| o.strip_prefix("signed-by=").map(str::to_owned));
            rest = after.trim_start();
        }
        let words: Vec<&str> = rest.split_whitespace().collect();
        if words.len() >= 3 && words[1] == SUITE && words[2..].contains(&"main") {
            return Some((words[0].to_owned(), signed_by));
        }
    }
    None
}

/// The orig tarball carries no `.git`; Debian's version (`1.20.5+really1.20.2`) names the release.
fn check_source_version(orig: &Path) -> Result<()> {
    let name = orig.file_name().unwrap_or_default().to_string_lossy();
    if !name.contains("1.20.2") {
        bail!("{name}: expected the v1.20.2 source (Debian `1.20.5+really1.20.2`)");
    }
    Ok(())
}

/// Kubernetes' build scripts stamp the version into the binary; the tarball's own values say
/// `v0.0.0-master` (what `/version` then serves). Write v1.20.2 into both version packages (the
/// server's and client-go's) instead: `-X` linker flags did not reach the vendored packages.
fn set_version(k8s: &Path) -> Result<()> {
    const VALUES: [(&str, &str); 4] = [
        ("gitMajor", "1"),
        ("gitMinor", "20"),
        ("gitVersion", "v1.20.2"),
        ("gitTreeState", "clean"),
    ];
    for file in [
        "staging/src/k8s.io/component-base/version/base.go",
        "staging/src/k8s.io/client-go/pkg/version/base.go",
    ] {
        let file = k8s.join(file);
        let text =
            fs::read_to_string(&file).with_context(|| format!("{} missing", file.display()))?;
        let mut done = [false; VALUES.len()];
        let mut out = String::with_capacity(text.len() + 64);
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let found = words
                .next()
                .and_then(|first| VALUES.iter().position(|(name, _)| *name == first))
                .filter(|&i| !done[i] && matches!(words.next(), Some("=" | "string")));
            match found {
                Some(i) => {
                    out.push_str(&format!("\t{} = \"{}\"", VALUES[i].0, VALUES[i].1));
                    done[i] = true;
                }
                None => out.push_str(line),
            }
            out.push('\n');
        }
        if let Some(i) = done.iter().position(|d| !d) {
            bail!("{}: no `{}` variable to set", file.display(), VALUES[i].0);
        }
        fs::write(&file, out)?;
    }
    Ok(())
}

fn replace_reflect2(root: &Path, k8s: &Path) -> Result<()> {
    let from = root.join("usr/share/gocode/src/github.com/modern-go/reflect2");
    let to = k8s.join("vendor/github.com/modern-go/reflect2");
    // 1.0.2 dropped files of 1.0.1 (go_above_17.go, ...): replace the package, do not overlay it.
    for entry in fs::read_dir(&to).with_context(|| format!("{} missing", to.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "go") {
            fs::remove_file(&path)?;
        }
    }
    let mut copied = 0;
    for entry in fs::read_dir(&from).with_context(|| format!("{} missing", from.display()))? {
        let path = entry?.path();
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if name.ends_with(".go") && !name.ends_with("_test.go") {
            fs::copy(&path, to.join(&name))?;
            copied += 1;
        }
    }
    if copied == 0 {
        bail!("no reflect2 sources in {}", from.display());
    }
    Ok(())
}

/// Every Go package (import path as the kubernetes tree sees it) that has a non-test `.go` file
/// carrying the `+k8s:openapi-gen=` tag: staging repositories are reached through `vendor/`.
fn openapi_input_packages(k8s: &Path) -> Result<Vec<String>> {
    let mut packages = std::collections::BTreeSet::new();
    for (dir, import_prefix) in [
        ("pkg", "k8s.io/kubernetes/pkg"),
        ("staging/src", "k8s.io/kubernetes/vendor"),
        ("vendor/k8s.io", "k8s.io/kubernetes/vendor/k8s.io"),
        ("vendor/sigs.k8s.io", "k8s.io/kubernetes/vendor/sigs.k8s.io"),
    ] {
        let base = k8s.join(dir);
        let mut stack = vec![base.clone()];
        while let Some(d) = stack.pop() {
            for entry in fs::read_dir(&d)? {
                let entry = entry?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let kind = entry.file_type()?; // symlinks are not followed
                if kind.is_dir() {
                    if !name.starts_with('_') && !name.starts_with('.') && name != "testdata" {
                        stack.push(entry.path());
                    }
                } else if kind.is_file() && name.ends_with(".go") && !name.ends_with("_test.go") {
                    let mut text = String::new();
                    fs::File::open(entry.path())?.read_to_string(&mut text).ok();
                    if text.contains("+k8s:openapi-gen=") {
                        let rel = d.strip_prefix(&base).expect("under base");
                        let rel = rel.to_string_lossy();
                        packages.insert(if rel.is_empty() {
                            import_prefix.to_owned()
                        } else {
                            format!("{import_prefix}/{rel}")
                        });
                    }
                }
            }
        }
    }
    if packages.is_empty() {
        bail!(
            "no package tagged +k8s:openapi-gen= under {}",
            k8s.display()
        );
    }
    Ok(packages.into_iter().collect())
}

// ---------------------------------------------------------------------------------------------
// start / stop

fn start(cache: &Cache, inst: &Instance) -> Result<()> {
    let run_dir = inst.run_dir.clone();
    if running(&run_dir, "kube-apiserver").is_some() && ready(inst) {
        eprintln!("apiserver: already running");
        return status(inst);
    }
    stop(inst)?;
    if run_dir.exists() {
        fs::remove_dir_all(&run_dir)?;
    }
    for d in ["etcd", "certs"] {
        fs::create_dir_all(run_dir.join(d))?;
    }
    let started = Instant::now();
    let admin_token = random_token()?;
    let sa_token = random_token()?;
    let p = &inst.profile;
    fs::write(
        run_dir.join("tokens.csv"),
        format!(
            "{admin_token},admin,admin,system:masters\n{sa_token},{},{}-uid,\"{}\"\n",
            p.user(),
            p.service_account,
            p.groups()
        ),
    )?;
    let sa_key = run_dir.join("certs/service-account.key");
    run(Command::new("openssl")
        .args(["genrsa", "-out"])
        .arg(&sa_key)
        .arg("2048")
        .stderr(Stdio::null()))?;

    let bin = cache.bin();
    let etcd_url = format!("http://127.0.0.1:{}", inst.etcd_client);
    let peer_url = format!("http://127.0.0.1:{}", inst.etcd_peer);
    let mut etcd = spawn_detached(
        &run_dir,
        "etcd",
        Command::new(bin.join("etcd"))
            .args(["--name", p.cluster_name, "--data-dir"])
            .arg(run_dir.join("etcd"))
            .args([
                "--listen-client-urls",
                &etcd_url,
                "--advertise-client-urls",
                &etcd_url,
            ])
            .args([
                "--listen-peer-urls",
                &peer_url,
                "--initial-advertise-peer-urls",
                &peer_url,
            ])
            .arg("--initial-cluster")
            .arg(format!("{}={peer_url}", p.cluster_name))
            .args(["--log-level", "warn"]),
    )?;
    let mut apiserver = spawn_apiserver(&bin, inst)?;

    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready(inst) {
        // The children's exit status, not /proc: right after exec a process's cmdline can still be
        // empty, which made a pid-file check report a starting server as gone.
        for (name, child) in [("etcd", &mut etcd), ("kube-apiserver", &mut apiserver)] {
            if child.try_wait()?.is_some() {
                let log =
                    fs::read_to_string(run_dir.join(format!("{name}.log"))).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(20).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                bail!(
                    "{name} exited during start-up; last lines of its log:\n{}",
                    tail.join("\n")
                );
            }
        }
        if Instant::now() > deadline {
            bail!(
                "kube-apiserver not ready after 60 s; see {}",
                run_dir.join("kube-apiserver.log").display()
            );
        }
        sleep(Duration::from_millis(250));
    }
    let ca = run_dir.join("certs/apiserver.crt");
    write_kubeconfig(
        &run_dir.join("admin.kubeconfig"),
        p,
        "admin",
        &admin_token,
        &ca,
        inst.port,
    )?;
    write_kubeconfig(
        &run_dir.join(format!("{}.kubeconfig", p.kubeconfig_name)),
        p,
        p.service_account,
        &sa_token,
        &ca,
        inst.port,
    )?;
    eprintln!(
        "apiserver: ready in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    status(inst)
}

/// Restarts kube-apiserver only (etcd, certs, tokens and kubeconfigs stay): the objects survive,
/// every watch and connection breaks.
fn restart(cache: &Cache, inst: &Instance) -> Result<()> {
    if running(&inst.run_dir, "etcd").is_none() {
        bail!("apiserver: not running (start it first)");
    }
    stop_one(&inst.run_dir, "kube-apiserver");
    let started = Instant::now();
    let mut apiserver = spawn_apiserver(&cache.bin(), inst)?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready(inst) {
        if apiserver.try_wait()?.is_some() {
            bail!(
                "kube-apiserver exited during the restart; see {}",
                inst.run_dir.join("kube-apiserver.log").display()
            );
        }
        if Instant::now() > deadline {
            bail!("kube-apiserver not ready 60 s after the restart");
        }
        sleep(Duration::from_millis(250));
    }
    eprintln!(
        "apiserver: restarted in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    status(inst)
}

/// Starts kube-apiserver of `inst` (its state folder already holds the certs, tokens and key).
fn spawn_apiserver(bin: &Path, inst: &Instance) -> Result<Child> {
    let etcd_url = format!("http://127.0.0.1:{}", inst.etcd_client);
    let sa_key = inst.run_dir.join("certs/service-account.key");
    spawn_detached(
        &inst.run_dir,
        "kube-apiserver",
        Command::new(bin.join("kube-apiserver"))
            .args(["--etcd-servers", &etcd_url])
            .args([
                "--bind-address",
                "127.0.0.1",
                "--advertise-address",
                "127.0.0.1",
            ])
            .arg(format!("--secure-port={}", inst.port))
            .arg("--insecure-port=0")
            .arg("--cert-dir")
            .arg(inst.run_dir.join("certs"))
            .arg("--token-auth-file")
            .arg(inst.run_dir.join("tokens.csv"))
            .args(["--authorization-mode", "RBAC"])
            .arg("--service-account-issuer=https://kubernetes.default.svc")
            .arg("--service-account-key-file")
            .arg(&sa_key)
            .arg("--service-account-signing-key-file")
            .arg(&sa_key)
            .args(["--service-cluster-ip-range", "10.0.0.0/24"])
            .args(["--disable-admission-plugins", "ServiceAccount"])
            .args(["--endpoint-reconciler-type", "none"])
            .args(["--allow-privileged=true", "--v=0"]),
    )
}

fn stop(inst: &Instance) -> Result<()> {
    for name in ["kube-apiserver", "etcd"] {
        stop_one(&inst.run_dir, name);
    }
    Ok(())
}

fn stop_one(run_dir: &Path, name: &str) {
    {
        let Some(pid) = running(run_dir, name) else {
            return;
        };
        eprintln!("apiserver: stopping {name} (pid {pid})");
        let _ = Command::new("kill").arg(pid.to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while running(run_dir, name).is_some() {
            if Instant::now() > deadline {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
                sleep(Duration::from_millis(200));
                break;
            }
            sleep(Duration::from_millis(100));
        }
        let _ = fs::remove_file(run_dir.join(format!("{name}.pid")));
    }
}

fn status(inst: &Instance) -> Result<()> {
    let run_dir = &inst.run_dir;
    let up = running(run_dir, "kube-apiserver").is_some() && ready(inst);
    let p = &inst.profile;
    let prefix = p.env_prefix;
    println!("{prefix}_RUNNING={}", if up { "yes" } else { "no" });
    println!("{prefix}_URL=https://127.0.0.1:{}", inst.port);
    println!(
        "{prefix}_KUBECONFIG={}",
        run_dir.join("admin.kubeconfig").display()
    );
    println!(
        "{prefix}_{}_KUBECONFIG={}",
        p.kubeconfig_name.to_uppercase().replace('-', "_"),
        run_dir
            .join(format!("{}.kubeconfig", p.kubeconfig_name))
            .display()
    );
    Ok(())
}

/// Starts a server in its own process group, so it outlives `cargo xtask` and a Ctrl-C of it.
fn spawn_detached(run_dir: &Path, name: &str, cmd: &mut Command) -> Result<Child> {
    let log = fs::File::create(run_dir.join(format!("{name}.log")))?;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start {name}"))?;
    fs::write(
        run_dir.join(format!("{name}.pid")),
        format!("{}\n", child.id()),
    )?;
    Ok(child)
}

/// The pid of `name` when its pid file names a live process that is really `name` (never signal a
/// process that merely reused the pid).
fn running(run_dir: &Path, name: &str) -> Option<u32> {
    let pid: u32 = fs::read_to_string(run_dir.join(format!("{name}.pid")))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let argv0 = cmdline.split(|b| *b == 0).next()?;
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let zombie = stat
        .rsplit_once(") ")
        .is_some_and(|(_, rest)| rest.starts_with('Z'));
    (String::from_utf8_lossy(argv0).ends_with(&format!("/{name}")) && !zombie).then_some(pid)
}

fn ready(inst: &Instance) -> bool {
    let run_dir = &inst.run_dir;
    let Ok(tokens) = fs::read_to_string(run_dir.join("tokens.csv")) else {
        return false;
    };
    let Some(admin) = tokens.lines().next().and_then(|l| l.split(',').next()) else {
        return false;
    };
    let ca = run_dir.join("certs/apiserver.crt");
    if !ca.is_file() {
        return false;
    }
    Command::new("curl")
        .args(["-sf", "--max-time", "2", "--cacert"])
        .arg(&ca)
        .arg("-H")
        .arg(format!("Authorization: Bearer {admin}"))
        .arg(format!("https://127.0.0.1:{}/readyz", inst.port))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn random_token() -> Result<String> {
    let mut bytes = [0u8; 24];
    fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A kubeconfig for `user` (a bearer token) of the server on `port`, trusting `ca`.
fn write_kubeconfig(
    path: &Path,
    p: &Profile,
    user: &str,
    token: &str,
    ca: &Path,
    port: u16,
) -> Result<()> {
    let (cluster, namespace) = (p.cluster_name, p.namespace);
    fs::write(
        path,
        format!(
            "apiVersion: v1
kind: Config
clusters:
- name: {cluster}
  cluster:
    server: https://127.0.0.1:{port}
    certificate-authority: {ca}
users:
- name: {user}
  user:
    token: {token}
contexts:
- name: {user}@{cluster}
  context:
    cluster: {cluster}
    user: {user}
    namespace: {namespace}
current-context: {user}@{cluster}
",
            ca = ca.display()
        ),
    )?;
    Ok(())
}

/// Runs a command, echoing it on stderr; fails when it exits non-zero (also `cargo xtask`'s).
pub fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("$ {}", display(cmd));
    let status = cmd
        .status()
        .with_context(|| format!("cannot start `{}`", display(cmd)))?;
    if !status.success() {
        bail!("`{}` failed: {status}", display(cmd));
    }
    Ok(())
}

/// Runs a command and returns its standard output; fails when it exits non-zero.
pub fn output(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot start `{}`", display(cmd)))?;
    if !out.status.success() {
        bail!(
            "`{}` failed: {}\n{}",
            display(cmd),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8(out.stdout).with_context(|| format!("`{}` printed non-UTF-8", display(cmd)))
}

/// A command as a shell line, long arguments shortened (e.g. openapi-gen's list of packages).
pub fn display(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        let a = a.to_string_lossy();
        s.push(' ');
        if a.chars().count() > 200 {
            s.extend(a.chars().take(120));
            s.push_str(&format!("...({} chars)", a.len()));
        } else {
            s.push_str(&a);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROFILE: Profile = Profile {
        cache_folder: "demo-apiserver",
        env_prefix: "DEMO_APISERVER",
        namespace: "demo",
        service_account: "demo-controller",
        kubeconfig_name: "controller",
        cluster_name: "demo-test",
    };

    #[test]
    fn the_service_account_kubeconfig_names_the_profiles_user_namespace_and_cluster() {
        assert_eq!(PROFILE.user(), "system:serviceaccount:demo:demo-controller");
        assert_eq!(
            PROFILE.groups(),
            "system:serviceaccounts,system:serviceaccounts:demo"
        );
        let path = std::env::temp_dir().join(format!("kta-kubeconfig-{}", std::process::id()));
        write_kubeconfig(
            &path,
            &PROFILE,
            "demo-controller",
            "t0k",
            Path::new("/ca.crt"),
            18443,
        )
        .unwrap();
        let text = fs::read_to_string(&path).unwrap();
        fs::remove_file(&path).unwrap();
        for want in [
            "- name: demo-test\n  cluster:\n    server: https://127.0.0.1:18443\n    certificate-authority: /ca.crt\n",
            "    token: t0k\n",
            "    namespace: demo\n",
            "current-context: demo-controller@demo-test\n",
        ] {
            assert!(text.contains(want), "{want:?} missing in\n{text}");
        }
    }

    #[test]
    fn private_instances_take_three_ports_from_the_one_given() {
        let cache = Cache {
            root: PathBuf::from("/cache"),
        };
        let args = ["--dir", "/tmp/x", "--port", "18443"].map(String::from);
        let inst = Instance::from_args(&PROFILE, &cache, &args).unwrap();
        assert_eq!(
            (
                inst.run_dir.as_path(),
                inst.port,
                inst.etcd_client,
                inst.etcd_peer
            ),
            (Path::new("/tmp/x"), 18443, 18444, 18445)
        );
        let shared = Instance::from_args(&PROFILE, &cache, &[]).unwrap();
        assert_eq!(shared.run_dir, Path::new("/cache/run"));
        assert!(Instance::from_args(&PROFILE, &cache, &["--port".into(), "65535".into()]).is_err());
    }

    #[test]
    fn sets_the_version_in_both_version_packages() {
        let k8s = std::env::temp_dir().join(format!("xtask-set-version-{}", std::process::id()));
        let component_base = k8s.join("staging/src/k8s.io/component-base/version");
        let client_go = k8s.join("staging/src/k8s.io/client-go/pkg/version");
        fs::create_dir_all(&component_base).unwrap();
        fs::create_dir_all(&client_go).unwrap();
        fs::write(
            component_base.join("base.go"),
            "var (\n\t// gitVersion is\n\tgitMajor string // major\n\tgitMinor string\n\
             \tgitVersion   = \"v0.0.0-master+abc\"\n\tgitCommit    = \"abc\"\n\tgitTreeState = \"\"  // state\n)\n",
        )
        .unwrap();
        fs::write(
            client_go.join("base.go"),
            "var (\n\tgitMajor string = \"\" // major\n\tgitMinor string = \"\"\n\
             \tgitVersion   string = \"v0.0.0-master+abc\"\n\tgitTreeState string = \"\"\n)\n",
        )
        .unwrap();
        set_version(&k8s).unwrap();
        for file in [component_base.join("base.go"), client_go.join("base.go")] {
            let text = fs::read_to_string(&file).unwrap();
            for want in [
                "\tgitMajor = \"1\"\n",
                "\tgitMinor = \"20\"\n",
                "\tgitVersion = \"v1.20.2\"\n",
                "\tgitTreeState = \"clean\"\n",
            ] {
                assert!(
                    text.contains(want),
                    "{}: {want:?} missing in\n{text}",
                    file.display()
                );
            }
        }
        let text = fs::read_to_string(component_base.join("base.go")).unwrap();
        assert!(
            text.contains("\t// gitVersion is\n"),
            "comments stay: {text}"
        );
        fs::write(client_go.join("base.go"), "var (\n)\n").unwrap();
        let err = set_version(&k8s).unwrap_err().to_string();
        assert!(err.contains("no `gitMajor` variable"), "{err}");
        fs::remove_dir_all(&k8s).unwrap();
    }

    #[test]
    fn finds_the_mirror_in_deb822_sources() {
        let text = "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n\
                    Components: main\nSigned-By: /usr/share/keyrings/k.gpg\n\n\
                    Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n\
                    Components: main\n";
        assert_eq!(
            mirror_from_deb822(text),
            Some((
                "http://mirror.example/debian".to_owned(),
                Some("/usr/share/keyrings/k.gpg".to_owned())
            ))
        );
        assert_eq!(
            mirror_from_deb822("Types: deb\nURIs: http://x/\nSuites: trixie\nComponents: main\n"),
            None
        );
    }

    #[test]
    fn finds_the_mirror_in_one_line_sources() {
        let text = "# comment\ndeb http://mirror.example/debian-security bookworm-security main\n\
                    deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm main contrib\n";
        assert_eq!(
            mirror_from_one_line(text),
            Some((
                "http://mirror.example/debian".to_owned(),
                Some("/k.gpg".to_owned())
            ))
        );
        assert_eq!(
            mirror_from_one_line("deb http://x/ bookworm contrib\n"),
            None
        );
    }
}
