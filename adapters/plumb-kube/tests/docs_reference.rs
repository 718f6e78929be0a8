//! The user reference in `docs/plumb/` against the binary: every flag of every `plumb`
//! subcommand has a row in the `## Flags` table of `docs/plumb/configuration.md` naming its
//! command (and its default, when it has one), and every row names a flag. `cargo xtask tidy`
//! runs this test too.

use std::collections::BTreeSet;
use std::path::Path;

use clap::CommandFactory;
use plumb_kube::cli::Cli;

/// The rows of the Flags table: (flag, cells).
fn flag_rows() -> Vec<(String, Vec<String>)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/plumb/configuration.md");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let section = text
        .split("\n## Flags\n")
        .nth(1)
        .expect("docs/plumb/configuration.md: no ## Flags section");
    let section = section.split("\n## ").next().unwrap_or_default();
    section
        .lines()
        .filter_map(|l| l.trim().strip_prefix('|'))
        .filter_map(|body| {
            let cells: Vec<String> = body
                .trim_end_matches('|')
                .split('|')
                .map(|c| c.trim().to_owned())
                .collect();
            let flag = cells
                .first()?
                .strip_prefix('`')?
                .split_once('`')?
                .0
                .to_owned();
            flag.starts_with("--").then_some((flag, cells))
        })
        .collect()
}

/// Every (command path, flag, default) of the CLI; clap's own `--help`/`--version` left out.
fn cli_flags() -> Vec<(String, String, Option<String>)> {
    fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<(String, String, Option<String>)>) {
        for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            let Some(long) = arg.get_long() else { continue };
            if ["help", "version"].contains(&long) {
                continue;
            }
            let default = arg
                .get_default_values()
                .first()
                .map(|d| d.to_string_lossy().into_owned());
            out.push((path.to_owned(), format!("--{long}"), default));
        }
        for sub in cmd.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }
    let mut out = Vec::new();
    walk(&Cli::command(), "plumb", &mut out);
    out
}

#[test]
fn every_flag_of_plumb_is_documented_with_its_command_and_default() {
    let rows = flag_rows();
    let flags = cli_flags();
    assert!(flags.len() >= 5, "the walk found too few flags: {flags:?}");
    for (command, flag, default) in &flags {
        let row = rows
            .iter()
            .find(|(name, cells)| name == flag && cells.get(1) == Some(&format!("`{command}`")))
            .unwrap_or_else(|| {
                panic!("docs/plumb/configuration.md: no Flags row for {flag} of `{command}`")
            });
        if let Some(default) = default {
            assert!(
                row.1[2].starts_with(&format!("`{default}`")),
                "docs/plumb/configuration.md: the default of {flag} is `{default}`, the row says {}",
                row.1[2]
            );
        }
    }
    let known: BTreeSet<(&str, String)> = flags
        .iter()
        .map(|(command, flag, _)| (flag.as_str(), format!("`{command}`")))
        .collect();
    for (flag, cells) in &rows {
        assert!(
            known.contains(&(flag.as_str(), cells.get(1).cloned().unwrap_or_default())),
            "docs/plumb/configuration.md: the Flags row {flag} ({:?}) names no flag of plumb",
            cells.get(1)
        );
    }
}
