//! `alfred run`'s protobuf list decoder (`ProtoListSplitter`, then each item as a slim Pod
//! and a slim Node): cutting the body anywhere changes nothing, every failure is one short
//! line, and the protobuf and JSON decoders agree: an object decoded from protobuf, written
//! as the JSON the API server would send, decodes through the JSON path to the same object.
#![no_main]

use alfred_fuzz::{assert_error_line, chunking};
use alfred_kube::run::decode::proto_list::ProtoListSplitter;
use alfred_kube::run::decode::slim::{FromProtobuf, SlimNode, SlimPod};
use alfred_kube::run::watch::list_watch::ItemError;
use libfuzzer_sys::fuzz_target;

/// The items of a body, and its outcome: the list's metadata bytes, or the error line.
type Split = (Vec<Vec<u8>>, Result<Option<Vec<u8>>, String>);

/// The items and the final outcome of splitting `body` fed `chunk` bytes at a time.
fn split(body: &[u8], chunk: usize) -> Split {
    let mut splitter = ProtoListSplitter::new();
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
        assert_error_line("protobuf list body", e);
    }
    // Items, or the body itself as one item (most mutations break the envelope first).
    let items = whole
        .0
        .iter()
        .map(Vec::as_slice)
        .chain(std::iter::once(body));
    for (index, item) in items.enumerate() {
        match SlimPod::from_protobuf(item) {
            Ok(pod) => {
                let json = serde_json::to_vec(&pod.to_k8s()).expect("a Pod serializes");
                let via_json: SlimPod = serde_json::from_slice(&json)
                    .unwrap_or_else(|e| panic!("the JSON of a protobuf Pod does not decode: {e}"));
                assert_eq!(
                    pod.to_k8s(),
                    via_json.to_k8s(),
                    "protobuf and JSON Pods differ"
                );
            }
            Err(e) => {
                let line = ItemError {
                    index,
                    source: Box::new(e),
                }
                .to_string();
                assert_error_line("protobuf list item (Pod)", &line);
            }
        }
        match SlimNode::from_protobuf(item) {
            Ok(node) => {
                let json = serde_json::to_vec(&node.to_k8s()).expect("a Node serializes");
                let via_json: SlimNode = serde_json::from_slice(&json)
                    .unwrap_or_else(|e| panic!("the JSON of a protobuf Node does not decode: {e}"));
                assert_eq!(
                    node.to_k8s(),
                    via_json.to_k8s(),
                    "protobuf and JSON Nodes differ"
                );
            }
            Err(e) => {
                let line = ItemError {
                    index,
                    source: Box::new(e),
                }
                .to_string();
                assert_error_line("protobuf list item (Node)", &line);
            }
        }
    }
});
