//! Regenerates `generated/externalscaler.rs` from `proto/externalscaler.proto`; run through
//! `cargo xtask proto`. With `--check` it only compares and exits 1 when they differ.

#[path = "../proto/generate.rs"]
mod generate;

use std::process::ExitCode;

fn main() -> ExitCode {
    let check = std::env::args().any(|a| a == "--check");
    let out = std::env::temp_dir().join(format!("plumb-scaler-proto-{}", std::process::id()));
    let result = std::fs::create_dir_all(&out)
        .map_err(Into::into)
        .and_then(|()| generate::generate(&out));
    let fresh = match result.and_then(|path| Ok(std::fs::read_to_string(path)?)) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("gen-proto: {e}");
            return ExitCode::FAILURE;
        }
    };
    let _ = std::fs::remove_dir_all(&out);
    let committed = generate::committed_file();
    let current = std::fs::read_to_string(&committed).unwrap_or_default();
    if check {
        if current == fresh {
            println!("{}: up to date", committed.display());
            return ExitCode::SUCCESS;
        }
        eprintln!(
            "{}: differs from the generator's output; run `cargo xtask proto`",
            committed.display()
        );
        return ExitCode::FAILURE;
    }
    if let Err(e) = std::fs::write(&committed, fresh) {
        eprintln!("gen-proto: {}: {e}", committed.display());
        return ExitCode::FAILURE;
    }
    println!("wrote {}", committed.display());
    ExitCode::SUCCESS
}
