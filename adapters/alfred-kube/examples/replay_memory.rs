//! What `alfred replay`'s reader costs against what it builds: the process's peak resident
//! size after reading the inputs and after building the snapshot (Linux `VmHWM`), and the
//! snapshot's size written as JSON, so benches/RESULTS.md can say how many snapshots' worth
//! the reader needs ("Bounded work per input"). The pass itself is not run.
//!
//! ```sh
//! cargo xtask replay-dump /tmp/dump.json
//! cargo run --release -p alfred-kube --example replay_memory -- /tmp/dump.json
//! cargo run --release -p alfred-kube --example replay_memory -- --typed /tmp/dump.json
//! ```

use std::io::Write;
use std::path::PathBuf;

use alfred_kube::inputs::{Inputs, load};
use alfred_model::{ClusterSnapshot, Timestamp};
use alfred_observe::ObserveSettings;
use alfred_observe::stream::{Document, read_document};

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

/// The reader without digesting Pods, for comparison: the List streamed item by item, every
/// Pod kept as its typed object until the snapshot is built.
fn observe_typed(path: &std::path::Path, now: Timestamp) -> (f64, ClusterSnapshot) {
    let file = std::fs::File::open(path).expect("a readable input");
    let mut de =
        serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(1 << 20, file));
    let Ok(Document::Objects(objects)) = read_document(&mut de) else {
        panic!("a JSON List");
    };
    let after_read = status_mb("VmHWM");
    let snapshot = alfred_observe::observe(&objects, &ObserveSettings::default(), now).snapshot;
    (after_read, snapshot)
}

fn main() {
    let mut paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let typed = paths.first().is_some_and(|p| p.as_os_str() == "--typed");
    if typed {
        paths.remove(0);
    }
    if paths.is_empty() {
        eprintln!("usage: replay_memory [--typed] INPUT...");
        std::process::exit(2);
    }
    let start = status_mb("VmHWM");
    let now = Timestamp::parse_rfc3339("2026-11-29T08:00:00Z").expect("a valid instant");
    let (after_read, snapshot) = if typed {
        observe_typed(&paths[0], now)
    } else {
        observe_digested(&paths, now)
    };
    report(start, after_read, &snapshot);
}

fn observe_digested(paths: &[PathBuf], now: Timestamp) -> (f64, ClusterSnapshot) {
    let objects = match load(paths) {
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
    let snapshot = objects.observe(&ObserveSettings::default(), now).snapshot;
    (after_read, snapshot)
}

fn report(start: f64, after_read: f64, snapshot: &ClusterSnapshot) {
    let after_observe = status_mb("VmHWM");
    let mut json = Counter(0);
    serde_json::to_writer(&mut json, snapshot).expect("a snapshot serializes");
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
