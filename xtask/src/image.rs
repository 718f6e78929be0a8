//! `cargo xtask image [--tag NAME:TAG] [--engine podman|docker] [--check]`: alfred's container
//! image, built from the `Containerfile` without pulling a base image.
//!
//! The release binaries (`alfred`, `alfred-simulator`) are built on this machine; they, the shared
//! libraries `ldd` lists for them and the CA bundle are staged under `target/image/rootfs/rootfs`,
//! imported as a local image, and named as the Containerfile's `ROOTFS` stage, so its `build` stage
//! (which would pull a Rust image) is skipped. The final stage is `FROM scratch`: no shell.
//!
//! `--check` then runs `alfred replay` inside the image (read-only root, no network, every
//! capability dropped, as `deploy/deployment.yaml` runs it) and compares its output with the host
//! binary's, and checks that the image runs as UID 65532 and has no `/bin/sh`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{cargo, output, run, workspace_root};

/// The binaries the image holds, each as (package, binary).
const BINARIES: [(&str, &str); 2] = [
    ("alfred", "alfred"),
    ("alfred-simulator", "alfred-simulator"),
];

/// The replay `--check` runs inside the image and on the host: the README's first command.
const REPLAY: [&str; 8] = [
    "replay",
    "/fixtures/clusters/ten-node-spread.json",
    "--now",
    "2026-11-29T08:00:00Z",
    "--migration-api-version",
    "v1",
    "--simulate-in-process",
    "--explain",
];

/// The staged files as a local image, removed once the final image is built.
const ROOTFS_IMAGE: &str = "localhost/alfred-image-rootfs:staged";

/// The CA bundle alfred's TLS client may read.
const CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

struct Options {
    tag: String,
    engine: String,
    check: bool,
}

pub(crate) fn main(args: &[String]) -> Result<()> {
    let root = workspace_root();
    let options = parse(args, &root)?;
    build(&root, &options)?;
    if options.check {
        check(&root, &options)?;
    }
    Ok(())
}

fn parse(args: &[String], root: &Path) -> Result<Options> {
    let mut options = Options {
        tag: format!("localhost/alfred:{}", workspace_version(root)?),
        engine: "podman".to_owned(),
        check: false,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--tag" => options.tag = it.next().context("--tag needs NAME:TAG")?.clone(),
            "--engine" => {
                options.engine = it
                    .next()
                    .context("--engine needs podman or docker")?
                    .clone()
            }
            "--check" => options.check = true,
            other => {
                bail!("image: unknown argument `{other}` (--tag NAME:TAG, --engine E, --check)")
            }
        }
    }
    Ok(options)
}

/// `[workspace.package] version` of the root `Cargo.toml`: the image's default tag.
fn workspace_version(root: &Path) -> Result<String> {
    let text = fs::read_to_string(root.join("Cargo.toml")).context("cannot read Cargo.toml")?;
    let section = text
        .split("[workspace.package]")
        .nth(1)
        .context("Cargo.toml has no [workspace.package]")?;
    section
        .lines()
        .take_while(|l| !l.starts_with('['))
        .find_map(|l| l.strip_prefix("version = "))
        .map(|v| v.trim().trim_matches('"').to_owned())
        .context("[workspace.package] has no version")
}

fn build(root: &Path, options: &Options) -> Result<()> {
    // One package at a time: built together, cargo would unify their dependencies' features
    // and rebuild what `cargo build --release -p alfred` already built.
    for (package, binary) in BINARIES {
        run(Command::new(cargo())
            .args([
                "build",
                "--release",
                "--locked",
                "-p",
                package,
                "--bin",
                binary,
            ])
            .current_dir(root))?;
    }

    let work = target_dir(root).join("image");
    let staged = work.join("rootfs");
    if staged.exists() {
        fs::remove_dir_all(&staged).context("cannot clear target/image/rootfs")?;
    }
    let tree = staged.join("rootfs");
    let context = work.join("context");
    fs::create_dir_all(&tree)?;
    fs::create_dir_all(&context)?;
    let binaries: Vec<PathBuf> = BINARIES
        .iter()
        .map(|(_, b)| target_dir(root).join("release").join(b))
        .collect();
    for binary in &binaries {
        let staged_binary = tree.join(binary.file_name().context("a binary has a name")?);
        copy_into(binary, &staged_binary)?;
        // The release profile keeps debug info; the image does not need it.
        run(Command::new("strip")
            .arg("--strip-debug")
            .arg(&staged_binary))?;
    }
    for library in shared_libraries(&binaries)? {
        copy_into(&library, &tree.join(library.strip_prefix("/")?))?;
    }
    copy_into(
        Path::new(CA_BUNDLE),
        &tree.join(CA_BUNDLE.trim_start_matches('/')),
    )?;

    let tarball = work.join("rootfs.tar");
    run(Command::new("tar")
        .arg("-C")
        .arg(&staged)
        .arg("-cf")
        .arg(&tarball)
        .args(["--owner=0", "--group=0", "rootfs"]))?;
    let rootfs_image = ROOTFS_IMAGE;
    run(Command::new(&options.engine)
        .arg("import")
        .arg(&tarball)
        .arg(rootfs_image))?;
    let mut build = Command::new(&options.engine);
    build.arg("build");
    if options.engine == "podman" {
        build.arg("--pull=never");
    }
    build
        .arg("-f")
        .arg(root.join("Containerfile"))
        .arg("--build-arg")
        .arg(format!("ROOTFS={rootfs_image}"))
        .args(["-t", &options.tag])
        .arg(&context);
    let built = run(&mut build);
    run(Command::new(&options.engine).args(["rmi", rootfs_image]))?;
    built?;
    eprintln!("image: built {}", options.tag);
    Ok(())
}

/// Where cargo puts its builds: `CARGO_TARGET_DIR`, else the workspace's `target/`.
pub(crate) fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

/// Copies `from` to `to` (following links), creating `to`'s parent folders.
fn copy_into(from: &Path, to: &Path) -> Result<()> {
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::copy(from, to)
        .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
    Ok(())
}

/// The shared libraries (and the dynamic loader) `ldd` lists for the binaries.
fn shared_libraries(binaries: &[PathBuf]) -> Result<BTreeSet<PathBuf>> {
    let mut libraries = BTreeSet::new();
    for binary in binaries {
        let text = output(Command::new("ldd").arg(binary))?;
        libraries.extend(ldd_paths(&text));
    }
    Ok(libraries)
}

/// The absolute paths of an `ldd` listing: `name => /path (addr)` and `/path (addr)`.
fn ldd_paths(text: &str) -> Vec<PathBuf> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let path = match line.split_once("=>") {
                Some((_, rest)) => rest.split_whitespace().next()?,
                None => line.split_whitespace().next()?,
            };
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

/// Runs the replay inside the image and on the host and compares them; checks the user and
/// that no shell is there.
fn check(root: &Path, options: &Options) -> Result<()> {
    let user = output(Command::new(&options.engine).args([
        "image",
        "inspect",
        "--format",
        "{{.Config.User}}",
        &options.tag,
    ]))?;
    if user.trim() != "65532:65532" {
        bail!(
            "image {} runs as `{}`, not 65532:65532",
            options.tag,
            user.trim()
        );
    }
    let fixtures = format!("{}:/fixtures:ro", root.join("fixtures").display());
    let inside = container_output(options, &["-v", &fixtures, &options.tag], &REPLAY)?;
    let host_args: Vec<String> = REPLAY
        .iter()
        .map(|a| a.replace("/fixtures/", &format!("{}/fixtures/", root.display())))
        .collect();
    let host = output(Command::new(target_dir(root).join("release/alfred")).args(&host_args))?;
    if inside != host {
        bail!(
            "`alfred replay` prints something else inside the image:\n{inside}\n--- on the host:\n{host}"
        );
    }
    eprintln!(
        "image: `alfred {}` inside {} prints what the host binary prints",
        REPLAY.join(" "),
        options.tag
    );
    match container_output(
        options,
        &["--entrypoint", "/bin/sh", &options.tag],
        &["-c", "true"],
    ) {
        Ok(_) => bail!("image {} has a shell at /bin/sh", options.tag),
        Err(e) => {
            let error = format!("{e:#}");
            if !(error.contains("/bin/sh")
                && (error.contains("no such file") || error.contains("not found")))
            {
                bail!("the shell check could not run in {}: {error}", options.tag);
            }
        }
    }
    eprintln!("image: no /bin/sh in {}", options.tag);
    Ok(())
}

/// `ENGINE run` with the deployment's restrictions. Where the default OCI runtime cannot start
/// containers here (crun on a host with hybrid cgroups), runc is tried when it is installed.
fn container_output(
    options: &Options,
    before_image: &[&str],
    after_image: &[&str],
) -> Result<String> {
    let attempt = |runtime: Option<&str>| {
        let mut cmd = Command::new(&options.engine);
        if let Some(runtime) = runtime {
            cmd.args(["--runtime", runtime]);
        }
        cmd.args([
            "run",
            "--rm",
            "--read-only",
            "--network=none",
            "--cap-drop=ALL",
            "--security-opt=no-new-privileges",
            "--ulimit=nofile=1024:1024",
            "--ulimit=nproc=1024:1024",
        ])
        .args(before_image)
        .args(after_image);
        output(&mut cmd)
    };
    match attempt(None) {
        Ok(text) => Ok(text),
        Err(first) if options.engine == "podman" && runc_installed() => {
            eprintln!("image: the default runtime failed ({first:#}); trying runc");
            attempt(Some("runc"))
        }
        Err(first) => Err(first),
    }
}

fn runc_installed() -> bool {
    Command::new("runc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_listings_give_the_library_paths() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f1)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f2)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f3)\n\
                    \tlibmissing.so => not found\n";
        assert_eq!(
            ldd_paths(text),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libgcc_s.so.1"),
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2"),
            ]
        );
    }

    #[test]
    fn the_default_tag_is_the_workspace_version() {
        let version = workspace_version(&workspace_root()).unwrap();
        assert!(version.split('.').count() == 3, "{version}");
        let options = parse(&[], &workspace_root()).unwrap();
        assert_eq!(options.tag, format!("localhost/alfred:{version}"));
        assert!(parse(&["--bogus".to_owned()], &workspace_root()).is_err());
    }
}
