//! The README shows the replay command of "Try it" with its output: this test runs the command
//! and checks that every line the README shows is a line the command prints, in the same order.
//! Lines of the form `[… what was left out …]` mark where the README abridges the output.

use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `sh` block and the `text` block after the README's "## Try it" heading.
fn try_it(readme: &str) -> (String, Vec<String>) {
    let section = readme
        .split("\n## Try it\n")
        .nth(1)
        .expect("README.md has a \"## Try it\" section");
    let mut blocks = section.split("```").skip(1).step_by(2);
    let command = blocks.next().expect("a command block");
    let output = blocks.next().expect("an output block");
    let command = command
        .strip_prefix("sh\n")
        .expect("the command block is sh")
        .replace("\\\n", " ");
    let output = output
        .strip_prefix("text\n")
        .expect("the output block is text")
        .lines()
        .map(str::to_owned)
        .collect();
    (command, output)
}

/// The lines of `shown` (markers aside) that are not found in `printed` in order.
fn missing_in_order(shown: &[String], printed: &str) -> Vec<String> {
    let mut printed = printed.lines();
    shown
        .iter()
        .filter(|line| !(line.starts_with("[…") && line.ends_with("…]")))
        .filter(|line| !printed.any(|p| p == line.as_str()))
        .cloned()
        .collect()
}

#[test]
fn the_readme_shows_what_its_replay_command_prints() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let (command, shown) = try_it(&readme);
    let args: Vec<&str> = command
        .split_whitespace()
        .skip_while(|w| *w != "--")
        .skip(1)
        .collect();
    assert_eq!(args.first(), Some(&"replay"), "{command}");
    let out = Command::new(env!("CARGO_BIN_EXE_alfred"))
        .args(&args)
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout).unwrap();
    assert!(shown.len() > 10, "the README shows the output");
    let missing = missing_in_order(&shown, &printed);
    assert!(
        missing.is_empty(),
        "README.md shows lines `alfred {}` does not print (in this order): {missing:#?}\n\
         it prints:\n{printed}",
        args.join(" ")
    );
}

#[test]
fn a_line_out_of_order_or_changed_is_found() {
    let printed = "a\nb\nc\nd\n";
    let lines = |s: &[&str]| s.iter().map(|l| (*l).to_owned()).collect::<Vec<_>>();
    assert!(missing_in_order(&lines(&["a", "[… b …]", "c", "d"]), printed).is_empty());
    assert_eq!(missing_in_order(&lines(&["a", "c", "b"]), printed), ["b"]);
    assert_eq!(missing_in_order(&lines(&["a", "x"]), printed), ["x"]);
}
