//! What `alfred replay`'s reader costs against what it builds: the process's peak resident
//! size after reading the inputs and after building the snapshot (Linux `VmHWM`), and the
//! snapshot's size written as JSON, so the README can say how many snapshots' worth the
//! reader needs (README, "Bounded work per input"). The pass itself is not run.
//!
//! ```sh
//! cargo xtask replay-dump /tmp/dump.json
//! cargo run --release -p alfred-kube --example replay_memory -- /tmp/dump.json
//! ```

use std::io::Write;
use std::path::PathBuf;

use alfred_kube::inputs::{Inputs, load};
use alfred_model::Timestamp;
use alfred_observe::ObserveSettings;

/// A writer that only counts what it is given.
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A `kB` line of `/proc/self/status` (`VmHWM`: the peak resident size), in MB.
fn status_mb(key: &str) -> f64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1e3)
}

fn main() {
    let paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if paths.is_empty() {
        eprintln!("usage: replay_memory INPUT...");
        std::process::exit(2);
    }
    let start = status_mb("VmHWM");
    let objects = match load(&paths) {
        Ok(Inputs::Objects(objects)) => objects,
        Ok(Inputs::Snapshot(_)) => {
            eprintln!("an alfred snapshot: nothing to build");
            std::process::exit(2);
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let after_read = status_mb("VmHWM");
    let now = Timestamp::parse_rfc3339("2026-11-29T08:00:00Z").expect("a valid instant");
    let snapshot = objects.observe(&ObserveSettings::default(), now).snapshot;
    let after_observe = status_mb("VmHWM");
    let mut json = Counter(0);
    serde_json::to_writer(&mut json, &snapshot).expect("a snapshot serializes");
    println!(
        "{{\"nodes\": {}, \"pods\": {}, \"pending_pods\": {}, \"start_mb\": {start:.0}, \
         \"peak_after_read_mb\": {after_read:.0}, \"peak_after_observe_mb\": {after_observe:.0}, \
         \"snapshot_json_mb\": {:.0}}}",
        snapshot.nodes.len(),
        snapshot.pods.len(),
        snapshot.pending_pods.len(),
        json.0 as f64 / 1e6
    );
}
