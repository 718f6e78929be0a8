//! The `plumb` binary's library: reading a recorded member (Kubernetes Lists and signal
//! samples), the policy check and the offline replay. `src/main.rs` is the thin CLI over it;
//! the fuzz targets call the same readers, so every parser of outside input lives here.
//!
//! Kubernetes types stay inside this crate; the decisions are the core crates'.

pub mod cli;
pub mod fleet;
pub mod objects;
pub mod observe;
pub mod policy;
pub mod replay;
pub mod signals;

/// Exit status for bad input.
pub const EXIT_BAD_INPUT: u8 = 2;

/// The longest error line plumb prints, prefix included.
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

    #[test]
    fn one_line_joins_lines_and_clips_long_messages() {
        assert_eq!(one_line(" a\n\n b\tc "), "a b c");
        let long = "x".repeat(1000);
        let clipped = one_line(&long);
        assert_eq!(clipped.chars().count(), MAX_ERROR_LINE - 20);
        assert!(clipped.ends_with('…'));
    }
}
