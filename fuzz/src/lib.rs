//! What every fuzz target checks besides "no panic": the error-line rule (one
//! line, at most 300 characters, on every surface), and small input splitters so one byte
//! string can drive a parser that takes several inputs.

/// The longest error line alfred may print (`alfred_kube::MAX_ERROR_LINE`).
pub const MAX_ERROR_LINE: usize = alfred_kube::MAX_ERROR_LINE;

/// Panics (a fuzzer crash) unless `message` is one non-empty line of at most
/// [`MAX_ERROR_LINE`] characters. `surface` names the parser in the crash report.
pub fn assert_error_line(surface: &str, message: &str) {
    assert!(!message.trim().is_empty(), "{surface}: empty error message");
    assert!(
        !message.contains(['\n', '\r']),
        "{surface}: error message spans several lines: {message:?}"
    );
    let chars = message.chars().count();
    assert!(
        chars <= MAX_ERROR_LINE,
        "{surface}: error line of {chars} characters (more than {MAX_ERROR_LINE}): {message:?}"
    );
}

/// Splits `data` at the first occurrence of `separator`: the head, and the rest (empty when
/// there is no separator).
pub fn split_once<'a>(data: &'a [u8], separator: &[u8]) -> (&'a [u8], &'a [u8]) {
    match data
        .windows(separator.len())
        .position(|window| window == separator)
    {
        Some(at) => (&data[..at], &data[at + separator.len()..]),
        None => (data, &[]),
    }
}

/// Chunk boundaries for the streaming splitters: the first byte picks a chunk length, so the
/// fuzzer explores every way a body can be cut on the wire. Returns the length and the body.
pub fn chunking(data: &[u8]) -> (usize, &[u8]) {
    match data.split_first() {
        Some((&first, rest)) => (usize::from(first % 64) + 1, rest),
        None => (1, data),
    }
}
