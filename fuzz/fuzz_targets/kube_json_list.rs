//! `alfred run`'s streamed JSON list decoder (`ListSplitter`, then each item as a slim Pod and
//! a slim Node): cutting the body into chunks anywhere changes neither the items nor the
//! outcome, and every failure is one short line.
#![no_main]

use alfred_fuzz::{assert_error_line, chunking};
use alfred_kube::run::decode::list_split::ListSplitter;
use alfred_kube::run::decode::slim::{SlimNode, SlimPod};
use alfred_kube::run::watch::list_watch::ItemError;
use libfuzzer_sys::fuzz_target;

/// The items of a body, and its outcome: the list's metadata bytes, or the error line.
type Split = (Vec<Vec<u8>>, Result<Option<Vec<u8>>, String>);

/// The items and the final outcome of splitting `body` fed `chunk` bytes at a time.
fn split(body: &[u8], chunk: usize) -> Split {
    let mut splitter = ListSplitter::new();
    let mut items = Vec::new();
    for piece in body.chunks(chunk) {
        if let Err(e) = splitter.push(piece, |item| items.push(item.to_vec())) {
            return (items, Err(e.to_string()));
        }
    }
    (items, splitter.finish().map_err(|e| e.to_string()))
}

fuzz_target!(|data: &[u8]| {
    let (chunk, body) = chunking(data);
    let whole = split(body, body.len().max(1));
    let chunked = split(body, chunk);
    assert_eq!(whole, chunked, "chunks of {chunk} bytes split differently");
    if let Err(e) = &whole.1 {
        assert_error_line("JSON list body", e);
    }
    for (index, item) in whole.0.iter().enumerate() {
        if let Err(e) = serde_json::from_slice::<SlimPod>(item) {
            let line = ItemError {
                index,
                source: Box::new(e),
            }
            .to_string();
            assert_error_line("JSON list item (Pod)", &line);
        }
        if let Err(e) = serde_json::from_slice::<SlimNode>(item) {
            let line = ItemError {
                index,
                source: Box::new(e),
            }
            .to_string();
            assert_error_line("JSON list item (Node)", &line);
        }
    }
});
