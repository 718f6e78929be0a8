//! KEDA's requests to `plumb scaler` (protobuf `ScaledObjectRef` and `GetMetricsRequest`,
//! decoded with prost from the bytes) through the scaler's request reading
//! (`plumb_scaler::request`): a refusal is `InvalidArgument` with one short line, an accepted
//! request names a valid policy and its metric, and a decoded message encodes and decodes back
//! to itself.
#![no_main]

use alfred_fuzz::assert_error_line;
use libfuzzer_sys::fuzz_target;
use plumb_scaler::floor::PolicyKey;
use plumb_scaler::proto::{GetMetricsRequest, ScaledObjectRef};
use plumb_scaler::request::{METRIC_PREFIX, metric_name, policy_of, policy_of_metrics_request};
use prost::Message;

/// A Kubernetes object name, as the scaler must have checked it.
fn assert_object_name(what: &str, name: &str) {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    assert!(
        !name.is_empty()
            && name.len() <= 253
            && name.chars().all(|c| alnum(c) || c == '-' || c == '.')
            && name.starts_with(alnum)
            && name.ends_with(alnum),
        "{what} {name:?} was accepted but is not a Kubernetes object name"
    );
}

fn assert_policy(key: &PolicyKey) {
    assert_object_name("policy", &key.name);
    assert_object_name("policy namespace", &key.namespace);
    assert_eq!(metric_name(key), format!("{METRIC_PREFIX}{}", key.name));
}

fn assert_refusal(surface: &str, status: &tonic::Status) {
    assert_eq!(
        status.code(),
        tonic::Code::InvalidArgument,
        "{surface}: {status:?}"
    );
    assert_error_line(surface, status.message());
}

fn check_object(object: &ScaledObjectRef) {
    match policy_of(object) {
        Ok(key) => assert_policy(&key),
        Err(status) => assert_refusal("ScaledObjectRef", &status),
    }
    let again = ScaledObjectRef::decode(object.encode_to_vec().as_slice());
    assert_eq!(
        again.ok().as_ref(),
        Some(object),
        "ScaledObjectRef does not round-trip"
    );
}

fn check_metrics_request(request: &GetMetricsRequest) {
    match policy_of_metrics_request(request) {
        Ok(key) => {
            assert_policy(&key);
            let object = request
                .scaled_object_ref
                .as_ref()
                .expect("accepted without an object");
            assert_eq!(
                policy_of(object).ok(),
                Some(key.clone()),
                "the two readings differ"
            );
            assert!(
                request.metric_name.is_empty() || request.metric_name == metric_name(&key),
                "metricName {:?} accepted for {key}",
                request.metric_name
            );
        }
        Err(status) => assert_refusal("GetMetricsRequest", &status),
    }
    let again = GetMetricsRequest::decode(request.encode_to_vec().as_slice());
    assert_eq!(
        again.ok().as_ref(),
        Some(request),
        "GetMetricsRequest does not round-trip"
    );
}

fuzz_target!(|data: &[u8]| {
    // The same bytes as either message: both are what KEDA sends (IsActive, StreamIsActive and
    // GetMetricSpec take a ScaledObjectRef; GetMetrics a GetMetricsRequest).
    if let Ok(object) = ScaledObjectRef::decode(data) {
        check_object(&object);
    }
    if let Ok(request) = GetMetricsRequest::decode(data) {
        check_metrics_request(&request);
    }
});
