//! Small shared helpers: problem collection, time conversion, GPU resource names.

use std::collections::BTreeMap;

use alfred_model::Timestamp;
use alfred_model::snapshot::ObjectProblem;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Collects the problems of one build.
#[derive(Debug, Default)]
pub(crate) struct Problems(pub Vec<ObjectProblem>);

impl Problems {
    pub(crate) fn add(
        &mut self,
        kind: &str,
        namespace: &str,
        name: &str,
        field: impl Into<String>,
        message: impl Into<String>,
    ) {
        self.0.push(ObjectProblem {
            kind: kind.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            field: field.into(),
            message: message.into(),
        });
    }
}

/// Go's zero `time.Time` (0001-01-01T00:00:00Z) in Unix seconds; at or before it a time is
/// "zero".
const GO_ZERO_UNIX_SECS: i64 = -62_135_596_800;

/// A Kubernetes time as a [`Timestamp`]; `None` for the zero time.
pub(crate) fn k8s_time(t: &Time) -> Option<Timestamp> {
    let nanos = t.0.as_nanosecond();
    let nanos = i64::try_from(nanos).unwrap_or(if nanos < 0 { i64::MIN } else { i64::MAX });
    let ts = Timestamp::from_unix_nanos(nanos);
    (ts.unix_secs() > GO_ZERO_UNIX_SECS).then_some(ts)
}

/// A time string from a dynamic object: `None` when absent, null or zero; an error naming the
/// value when it is not RFC 3339.
pub(crate) fn parse_time(v: Option<&serde_json::Value>) -> Result<Option<Timestamp>, String> {
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) if s.is_empty() => Ok(None),
        Some(serde_json::Value::String(s)) => match Timestamp::parse_rfc3339(s) {
            Ok(t) if t.unix_secs() <= GO_ZERO_UNIX_SECS => Ok(None),
            Ok(t) => Ok(Some(t)),
            Err(e) => Err(e.to_string()),
        },
        Some(other) => Err(format!("expected an RFC 3339 string, got {other}")),
    }
}

/// Whether a resource name counts as a GPU (docs/design-snapshot.md#gpu-resources).
pub fn is_gpu_resource(name: &str) -> bool {
    name == "nvidia.com/gpu"
        || name == "amd.com/gpu"
        || name.starts_with("nvidia.com/mig-")
        || (name.starts_with("gpu.intel.com/")
            && !name.contains("memory")
            && !name.contains("millicores"))
}

/// Labels or annotations as a sorted map.
pub(crate) fn string_map(m: Option<&BTreeMap<String, String>>) -> BTreeMap<String, String> {
    m.cloned().unwrap_or_default()
}

/// Go `strconv.ParseInt(s, 10, bits)`: optional sign, decimal digits only.
pub(crate) fn parse_go_int(s: &str, bits: u32) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: i64 = s.strip_prefix('+').unwrap_or(s).parse().ok()?;
    let max = if bits >= 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = if bits >= 64 {
        i64::MIN
    } else {
        -(1i64 << (bits - 1))
    };
    (min..=max).contains(&v).then_some(v)
}
