//! The one code generator of `externalscaler.proto`: protox parses it (pure Rust, no `protoc`)
//! and tonic-prost-build writes the messages, the client and the server. Shared by
//! `examples/gen_proto.rs` (which `cargo xtask proto` runs to rewrite the committed file) and
//! `tests/generated_code.rs` (which fails when the committed file is not this output).

use std::path::{Path, PathBuf};

/// The crate's folder.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The committed generated file.
pub fn committed_file() -> PathBuf {
    crate_dir().join("generated/externalscaler.rs")
}

/// Generates `externalscaler.rs` into `out_dir` and returns its path.
pub fn generate(out_dir: &Path) -> Result<PathBuf, Box<dyn std::error::Error>> {
    let proto_dir = crate_dir().join("proto");
    let descriptors = protox::compile(["externalscaler.proto"], [&proto_dir])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .emit_rerun_if_changed(false)
        .out_dir(out_dir)
        .compile_fds(descriptors)?;
    Ok(out_dir.join("externalscaler.rs"))
}
