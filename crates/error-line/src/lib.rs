//! Bad input reported as one line: what the `alfred` and `plumb` command lines print when a file,
//! flag or field is wrong. Both products promise "a clear one-line error naming the field and the
//! value"; this crate is that promise's one implementation, so neither keeps a copy.

#![warn(missing_docs, unreachable_pub)]

/// Exit status for bad input.
pub const EXIT_BAD_INPUT: u8 = 2;

/// The longest error line the command lines print, prefix included.
pub const MAX_ERROR_LINE: usize = 300;

/// An error message as one line (control characters as spaces, runs of spaces collapsed) of at
/// most [`MAX_ERROR_LINE`] − 20 characters: the messages name their file and field first, so a
/// clipped tail loses only the echo of a long value.
pub fn one_line(message: &str) -> String {
    let mut line = String::with_capacity(message.len().min(MAX_ERROR_LINE * 4));
    for c in message.trim().chars() {
        let c = if c.is_control() { ' ' } else { c };
        if c == ' ' && line.ends_with(' ') {
            continue;
        }
        line.push(c);
    }
    let max = MAX_ERROR_LINE - 20;
    match line.char_indices().nth(max - 1) {
        None => line,
        Some((end, _)) => format!("{}…", &line[..end]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn newlines_and_runs_of_spaces_fold_into_one_line() {
        assert_eq!(
            one_line("  policy.yaml:\n  spec.step:\tmust be at least 1  "),
            "policy.yaml: spec.step: must be at least 1"
        );
    }

    #[test]
    fn a_long_message_is_clipped_with_an_ellipsis() {
        let line = one_line(&"x".repeat(1000));
        assert_eq!(line.chars().count(), MAX_ERROR_LINE - 20);
        assert!(line.ends_with('…'));
    }

    proptest! {
        #[test]
        fn any_message_becomes_one_bounded_line(message in any::<String>()) {
            let line = one_line(&message);
            prop_assert!(!line.chars().any(char::is_control));
            prop_assert!(line.chars().count() <= MAX_ERROR_LINE - 20);
            prop_assert!(!line.contains("  "));
        }
    }
}
