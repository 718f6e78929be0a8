//! The `plumb` binary's library: reading a recorded member (Kubernetes Lists and signal
//! samples), the policy check and the offline replay. `src/main.rs` is the thin CLI over it;
//! the fuzz targets call the same readers, so every parser of outside input lives here.
//!
//! Kubernetes types stay inside this crate; the decisions are the core crates'.

pub mod agent;
pub mod cli;
pub mod fleet;
pub mod objects;
pub mod observe;
pub mod policy;
pub mod replay;
pub mod scaler;
pub mod signals;

pub use error_line::{EXIT_BAD_INPUT, MAX_ERROR_LINE, one_line};

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
