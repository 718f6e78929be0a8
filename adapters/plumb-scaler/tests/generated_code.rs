//! The committed generated code is what the generator makes of `proto/externalscaler.proto`
//! today, and it speaks KEDA's wire protocol: the method paths, and each field's number and
//! type, checked on encoded bytes (the facts KEDA's side depends on).

#[path = "../proto/generate.rs"]
mod generate;

use std::collections::HashMap;

use plumb_scaler::proto::{
    GetMetricSpecResponse, GetMetricsRequest, GetMetricsResponse, IsActiveResponse, MetricSpec,
    MetricValue, ScaledObjectRef,
};
use prost::Message;

#[test]
fn the_committed_code_is_the_generators_output() {
    let out = std::env::temp_dir().join(format!("plumb-scaler-gen-test-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let fresh = std::fs::read_to_string(generate::generate(&out).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    let committed = std::fs::read_to_string(generate::committed_file()).unwrap();
    assert!(
        fresh == committed,
        "generated/externalscaler.rs differs from the generator's output for proto/externalscaler.proto: run `cargo xtask proto`"
    );
}

#[test]
fn the_service_answers_on_kedas_method_paths() {
    let code = std::fs::read_to_string(generate::committed_file()).unwrap();
    for method in ["IsActive", "StreamIsActive", "GetMetricSpec", "GetMetrics"] {
        let path = format!("\"/externalscaler.ExternalScaler/{method}\"");
        assert!(code.contains(&path), "no route {path}");
    }
}

/// A string field: tag byte, length, bytes.
fn string_field(tag: u8, text: &str) -> Vec<u8> {
    let mut out = vec![tag, u8::try_from(text.len()).unwrap()];
    out.extend_from_slice(text.as_bytes());
    out
}

#[test]
fn every_field_has_kedas_number_and_type() {
    // ScaledObjectRef: name = 1, namespace = 2 (strings), scalerMetadata = 3 (map entries
    // with key = 1, value = 2).
    let object = ScaledObjectRef {
        name: "so".into(),
        namespace: "ns".into(),
        scaler_metadata: HashMap::from([("policy".into(), "p".into())]),
    };
    let entry = [string_field(0x0a, "policy"), string_field(0x12, "p")].concat();
    let object_bytes = [
        string_field(0x0a, "so"),
        string_field(0x12, "ns"),
        vec![0x1a, u8::try_from(entry.len()).unwrap()],
        entry,
    ]
    .concat();
    assert_eq!(object.encode_to_vec(), object_bytes);

    // IsActiveResponse: result = 1 (bool, varint).
    assert_eq!(
        IsActiveResponse { result: true }.encode_to_vec(),
        [0x08, 0x01]
    );

    // MetricSpec: metricName = 1, targetSize = 2 (int64 varint), targetSizeFloat = 3 (double).
    let spec = MetricSpec {
        metric_name: "m".into(),
        target_size: 1,
        target_size_float: 1.0,
    };
    let spec_bytes = [
        string_field(0x0a, "m"),
        vec![0x10, 0x01, 0x19],
        1.0f64.to_le_bytes().to_vec(),
    ]
    .concat();
    assert_eq!(spec.encode_to_vec(), spec_bytes);
    // GetMetricSpecResponse: metricSpecs = 1 (repeated message).
    let specs = GetMetricSpecResponse {
        metric_specs: vec![spec],
    };
    let expected = [
        vec![0x0a, u8::try_from(spec_bytes.len()).unwrap()],
        spec_bytes,
    ]
    .concat();
    assert_eq!(specs.encode_to_vec(), expected);

    // GetMetricsRequest: scaledObjectRef = 1 (message), metricName = 2.
    let request = GetMetricsRequest {
        scaled_object_ref: Some(object),
        metric_name: "m".into(),
    };
    let expected = [
        vec![0x0a, u8::try_from(object_bytes.len()).unwrap()],
        object_bytes,
        string_field(0x12, "m"),
    ]
    .concat();
    assert_eq!(request.encode_to_vec(), expected);

    // MetricValue: metricName = 1, metricValue = 2 (int64), metricValueFloat = 3 (double);
    // GetMetricsResponse: metricValues = 1.
    let value = MetricValue {
        metric_name: "m".into(),
        metric_value: 3,
        metric_value_float: 3.0,
    };
    let value_bytes = [
        string_field(0x0a, "m"),
        vec![0x10, 0x03, 0x19],
        3.0f64.to_le_bytes().to_vec(),
    ]
    .concat();
    assert_eq!(value.encode_to_vec(), value_bytes);
    let values = GetMetricsResponse {
        metric_values: vec![value],
    };
    let expected = [
        vec![0x0a, u8::try_from(value_bytes.len()).unwrap()],
        value_bytes,
    ]
    .concat();
    assert_eq!(values.encode_to_vec(), expected);
}
