//! `alfred replay`'s input file as the binary reads it (`alfred_kube::inputs::load`): a List
//! in JSON, YAML documents, or an alfred snapshot JSON. Every refusal is one short line
//! (file name included), and an accepted snapshot is normalised (normalising it again
//! changes nothing) and reads back from its own JSON unchanged.
#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use alfred_fuzz::assert_error_line;
use alfred_kube::inputs::{Inputs, load};
use libfuzzer_sys::fuzz_target;

/// One scratch file per fuzzing process (the loader reads files, as the binary does).
static FILE: LazyLock<PathBuf> = LazyLock::new(|| {
    let dir = std::env::temp_dir().join(format!("alfred-fuzz-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir.join("input.json")
});

fuzz_target!(|data: &[u8]| {
    std::fs::write(&*FILE, data).expect("scratch file");
    match load(std::slice::from_ref(&*FILE)) {
        Ok(Inputs::Snapshot(snapshot)) => {
            let mut again = (*snapshot).clone();
            again.normalize();
            assert_eq!(*snapshot, again, "normalize is not idempotent");
            let text = serde_json::to_string(&*snapshot).expect("a snapshot serializes");
            let mut read: alfred_model::ClusterSnapshot = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("a printed snapshot does not re-parse: {e}"));
            read.normalize();
            assert_eq!(*snapshot, read, "snapshot JSON round trip changed it");
        }
        Ok(Inputs::Objects(_)) => {}
        Err(e) => assert_error_line("replay input", &e.to_string()),
    }
});
