//! Error text as one short line: a message may echo an input's key or value (an unknown
//! field, a YAML snippet), and every error alfred prints must stay one line of at most 300
//! characters, naming its field first.

/// `text` on one line (control characters and runs of whitespace as one space), cut to at
/// most `max` characters, the cut marked with `…`.
pub fn clip(text: &str, max: usize) -> String {
    let mut line = String::with_capacity(text.len().min(max * 4));
    for c in text.trim().chars() {
        let c = if c.is_whitespace() || c.is_control() {
            ' '
        } else {
            c
        };
        if c == ' ' && line.ends_with(' ') {
            continue;
        }
        line.push(c);
    }
    match line.char_indices().nth(max.saturating_sub(1)) {
        Some((end, _)) if line[end..].chars().count() > 1 => format!("{}…", &line[..end]),
        _ => line,
    }
}

#[cfg(test)]
mod tests {
    use super::clip;

    #[test]
    fn short_text_is_kept_and_long_text_is_cut_to_max_characters() {
        assert_eq!(clip("a  b\n c", 10), "a b c");
        assert_eq!(clip("abcdef", 6), "abcdef");
        let cut = clip(&"é".repeat(50), 10);
        assert_eq!(cut.chars().count(), 10);
        assert!(cut.ends_with('…'));
    }
}
