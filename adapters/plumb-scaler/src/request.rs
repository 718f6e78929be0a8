//! Reading KEDA's requests: which policy a ScaledObject's trigger names, and the metric it is
//! served as. A request that names no usable policy is refused with `InvalidArgument` and one
//! line naming the field and its value; nothing in a request can make the scaler fail.

use tonic::Status;

use crate::floor::PolicyKey;
use crate::proto::{GetMetricsRequest, ScaledObjectRef};

/// The trigger metadata key naming the AdaptivePolicy (required).
pub const POLICY_KEY: &str = "policy";
/// The trigger metadata key naming the policy's namespace (default the ScaledObject's).
pub const POLICY_NAMESPACE_KEY: &str = "policyNamespace";
/// The metric's name is this prefix and the policy's name.
pub const METRIC_PREFIX: &str = "plumb-floor-";

/// The policy a ScaledObject's trigger names.
pub fn policy_of(object: &ScaledObjectRef) -> Result<PolicyKey, Status> {
    let name = object
        .scaler_metadata
        .get(POLICY_KEY)
        .map(|s| s.trim())
        .unwrap_or_default();
    if name.is_empty() {
        return Err(Status::invalid_argument(format!(
            "scalerMetadata.{POLICY_KEY}: required (the AdaptivePolicy's name) in the trigger of ScaledObject {}/{}",
            shown(&object.namespace),
            shown(&object.name)
        )));
    }
    check_name(&format!("scalerMetadata.{POLICY_KEY}"), name)?;
    let namespace = match object.scaler_metadata.get(POLICY_NAMESPACE_KEY) {
        Some(ns) if !ns.trim().is_empty() => {
            check_name(&format!("scalerMetadata.{POLICY_NAMESPACE_KEY}"), ns.trim())?;
            ns.trim()
        }
        _ if object.namespace.is_empty() => {
            return Err(Status::invalid_argument(format!(
                "scaledObjectRef.namespace: required when scalerMetadata.{POLICY_NAMESPACE_KEY} is not set"
            )));
        }
        _ => {
            check_name("scaledObjectRef.namespace", &object.namespace)?;
            object.namespace.as_str()
        }
    };
    Ok(PolicyKey::new(namespace, name))
}

/// The metric a policy is served as: `plumb-floor-<policy>`.
pub fn metric_name(key: &PolicyKey) -> String {
    format!("{METRIC_PREFIX}{}", key.name)
}

/// The policy a `GetMetrics` request asks about; its `metricName` must be the policy's metric
/// (or empty).
pub fn policy_of_metrics_request(request: &GetMetricsRequest) -> Result<PolicyKey, Status> {
    let object = request
        .scaled_object_ref
        .as_ref()
        .ok_or_else(|| Status::invalid_argument("scaledObjectRef: required"))?;
    let key = policy_of(object)?;
    let expected = metric_name(&key);
    if !request.metric_name.is_empty() && request.metric_name != expected {
        return Err(Status::invalid_argument(format!(
            "metricName: \"{}\" is not the metric of policy {}/{} ({})",
            shown(&request.metric_name),
            shown(&key.namespace),
            shown(&key.name),
            shown(&expected)
        )));
    }
    Ok(key)
}

/// A Kubernetes object name (RFC 1123 subdomain: lower-case letters, digits, `-` and `.`,
/// starting and ending alphanumeric, at most 253 characters).
fn check_name(field: &str, value: &str) -> Result<(), Status> {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let ok = value.len() <= 253
        && value.chars().all(|c| alnum(c) || c == '-' || c == '.')
        && value.starts_with(alnum)
        && value.ends_with(alnum);
    if ok {
        Ok(())
    } else {
        Err(Status::invalid_argument(format!(
            "{field}: \"{}\" is not a Kubernetes object name",
            shown(value)
        )))
    }
}

/// The longest echo of a request's value in an error, in characters (after escaping).
const SHOWN_CHARS: usize = 50;

/// `value` as an error message echoes it: control characters, quotes and backslashes escaped
/// as Rust's `{:?}` does (so a message stays one line), clipped to [`SHOWN_CHARS`] with `…`,
/// so that a message echoing four values stays well under 300 characters.
fn shown(value: &str) -> String {
    let mut escaped = value.chars().flat_map(char::escape_debug);
    let mut out: String = escaped.by_ref().take(SHOWN_CHARS).collect();
    if escaped.next().is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(namespace: &str, metadata: &[(&str, &str)]) -> ScaledObjectRef {
        ScaledObjectRef {
            name: "llama".into(),
            namespace: namespace.into(),
            scaler_metadata: metadata
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    #[test]
    fn the_policy_namespace_defaults_to_the_scaled_objects() {
        let key = policy_of(&object("serving", &[("policy", "llama-70b")])).unwrap();
        assert_eq!(key, PolicyKey::new("serving", "llama-70b"));
        let key = policy_of(&object(
            "serving",
            &[("policy", "llama-70b"), ("policyNamespace", "models")],
        ))
        .unwrap();
        assert_eq!(key, PolicyKey::new("models", "llama-70b"));
        assert_eq!(metric_name(&key), "plumb-floor-llama-70b");
    }

    #[test]
    fn bad_metadata_is_refused_naming_the_field_and_value() {
        let cases = [
            (object("serving", &[]), "scalerMetadata.policy: required"),
            (
                object("serving", &[("policy", "Llama_70B")]),
                "scalerMetadata.policy: \"Llama_70B\" is not a Kubernetes object name",
            ),
            (
                object("", &[("policy", "llama")]),
                "scaledObjectRef.namespace: required",
            ),
            (
                object("serving", &[("policy", "llama"), ("policyNamespace", "-x")]),
                "scalerMetadata.policyNamespace: \"-x\" is not a Kubernetes object name",
            ),
            // Found by the fuzz target: the ScaledObject's own namespace was taken unchecked.
            (
                object("ser/ing", &[("policy", "llama")]),
                "scaledObjectRef.namespace: \"ser/ing\" is not a Kubernetes object name",
            ),
        ];
        for (request, expected) in cases {
            let status = policy_of(&request).unwrap_err();
            assert_eq!(status.code(), tonic::Code::InvalidArgument);
            assert!(
                status.message().starts_with(expected),
                "{:?} does not start with {expected:?}",
                status.message()
            );
        }
    }

    #[test]
    fn a_metrics_request_must_name_the_policys_metric_or_none() {
        let mut request = GetMetricsRequest {
            scaled_object_ref: Some(object("serving", &[("policy", "llama")])),
            metric_name: String::new(),
        };
        assert!(policy_of_metrics_request(&request).is_ok());
        request.metric_name = "plumb-floor-llama".into();
        assert!(policy_of_metrics_request(&request).is_ok());
        request.metric_name = "s0-plumb-floor-llama".into();
        let status = policy_of_metrics_request(&request).unwrap_err();
        assert_eq!(
            status.message(),
            "metricName: \"s0-plumb-floor-llama\" is not the metric of policy serving/llama (plumb-floor-llama)"
        );
        request.scaled_object_ref = None;
        let status = policy_of_metrics_request(&request).unwrap_err();
        assert_eq!(status.message(), "scaledObjectRef: required");
    }

    /// Found by the fuzz target `plumb_scaler_request`: a ScaledObjectRef's name or namespace
    /// with a newline was echoed raw, and a metricName or policy name of any length whole.
    #[test]
    fn every_refusal_is_one_short_line_whatever_the_request_holds() {
        let long = "x".repeat(253);
        let wild = "a\n\r\"\\\u{7}\u{10ffff}".repeat(40);
        let mut requests = vec![
            object(&wild, &[]),
            object("serving", &[("policy", &wild)]),
            object(
                "serving",
                &[("policy", "llama"), ("policyNamespace", &wild)],
            ),
        ];
        requests.push(ScaledObjectRef {
            name: wild.clone(),
            ..object("serving", &[])
        });
        let mut messages: Vec<String> = requests
            .iter()
            .map(|r| policy_of(r).unwrap_err().message().to_owned())
            .collect();
        let request = GetMetricsRequest {
            scaled_object_ref: Some(object(&long, &[("policy", &long)])),
            metric_name: wild.clone(),
        };
        messages.push(
            policy_of_metrics_request(&request)
                .unwrap_err()
                .message()
                .to_owned(),
        );
        for m in &messages {
            assert!(!m.contains(['\n', '\r']), "{m:?}");
            assert!(
                m.chars().count() <= 300,
                "{} characters: {m:?}",
                m.chars().count()
            );
        }
        let clipped = shown(&wild);
        assert_eq!(clipped.chars().count(), 51);
        assert!(
            clipped.starts_with(r#"a\n\r\"\\\u{7}\u{10ffff}a"#),
            "{clipped}"
        );
        assert!(messages[0].ends_with(&format!("ScaledObject {clipped}/llama")));
        assert_eq!(shown("serving"), "serving");
        assert_eq!(shown("a\nb\""), "a\\nb\\\"");
        assert_eq!(shown(&"y".repeat(51)), format!("{}…", "y".repeat(50)));
    }
}
