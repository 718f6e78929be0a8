//! The simulator's wire request (stdin of `alfred-simulator`): refusals are one short line; an
//! accepted request encoded again decodes equal; and the worker's one-pass decoder
//! (`decode_request_cluster`, which types the cluster objects while reading) agrees with the
//! plain decoder followed by the evaluation: same result, or both refuse.
#![no_main]

use std::sync::LazyLock;

use alfred_fuzz::assert_error_line;
use alfred_sim::wire::{
    decode_request, decode_request_cluster, encode_request, evaluate, evaluate_with_cluster,
};
use alfred_sim::{BuildInfo, Identity, Profile, printed_profile};
use libfuzzer_sys::fuzz_target;

static WORKER: LazyLock<(Profile, Identity)> = LazyLock::new(|| {
    let profile = Profile::default_scheduler();
    let build = BuildInfo {
        package: "alfred-fuzz".into(),
        version: "0".into(),
        source_revision: String::new(),
        executable_sha256: "00".into(),
    };
    let identity = printed_profile(&profile, "fuzz", &build).identity;
    (profile, identity)
});

fuzz_target!(|data: &[u8]| {
    let (profile, identity) = &*WORKER;
    if let Ok(request) = decode_request(data) {
        let again = decode_request(&encode_request(&request))
            .unwrap_or_else(|e| panic!("an encoded request does not decode: {e}"));
        assert_eq!(request, again, "request round trip changed it");
    }
    // Evaluate as this worker (a random identity is refused before anything else).
    let plain = decode_request(data).and_then(|mut request| {
        request.profile = identity.clone();
        evaluate(profile, identity, &request, &mut || false)
    });
    let one_pass = decode_request_cluster(data).and_then(|(mut header, cluster)| {
        header.profile = identity.clone();
        evaluate_with_cluster(profile, identity, &header, &cluster, &mut || false)
    });
    match (&plain, &one_pass) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "the decoders' evaluations differ"),
        (Err(a), Err(b)) => {
            assert_error_line("simulation request", &a.to_string());
            assert_error_line("simulation request (one pass)", &b.to_string());
        }
        _ => panic!("the decoders disagree: {plain:?} vs {one_pass:?}"),
    }
});
