//! The migration-request annotation `ome.io/migration-request-v1-<uuid>` and its payload
//! (docs/design-pass.md#migration-request, docs/design-pass.md#source-fingerprint).
//!
//! The payload is written byte for byte as the contract gives it: a compact JSON object
//! with the members in the order `schemaVersion`, `component`, `instance`, `from_node`,
//! `hint_target_nodes` (omitted when empty), `reason`, `requested_at`, `requested_by`.
//! The journal stores the identical bytes as `payload`; a retry decodes them strictly
//! ([`RequestPayload::decode`]) and compares them with the entry.

use alfred_model::Timestamp;
use alfred_model::config::is_dns1123_subdomain;
use alfred_model::reason::RowReason;
use alfred_model::snapshot::ComponentKind;

/// Prefix of the annotation key; the UUID follows.
pub const ANNOTATION_PREFIX: &str = "ome.io/migration-request-v1-";
/// Largest payload the contract accepts.
pub const MAX_PAYLOAD_BYTES: usize = 4096;
/// Most hints alfred writes (the contract accepts 8; alfred writes ≤ 3).
pub const MAX_ALFRED_HINTS: usize = 3;
/// Most hints the contract accepts.
pub const MAX_CONTRACT_HINTS: usize = 8;
/// `requested_by` of alfred's requests.
pub const REQUESTED_BY: &str = "alfred";

/// One migration request, as alfred writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestPayload {
    /// Component of the Instance.
    pub component: ComponentKind,
    /// Instance index (≥ 0).
    pub instance: i64,
    /// The node to leave.
    pub from_node: String,
    /// Up to three preferred targets, ranked.
    pub hint_target_nodes: Vec<String>,
    /// `Fragmentation`, `NodeUnhealthy` or `NodeMaintenance`.
    pub reason: RowReason,
    /// The journal entry's `createdAt`.
    pub requested_at: Timestamp,
}

/// Why a payload cannot be built or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// A member breaks a rule of the contract.
    #[error("migration request: {field}: {message}")]
    Invalid {
        /// The member.
        field: &'static str,
        /// What is wrong, naming the value.
        message: String,
    },
    /// The text is not the exact JSON shape alfred writes.
    #[error("migration request payload does not decode strictly: {0}")]
    Malformed(String),
}

fn invalid(field: &'static str, message: impl Into<String>) -> RequestError {
    RequestError::Invalid {
        field,
        message: message.into(),
    }
}

/// The annotation key of a request UUID.
pub fn annotation_key(uuid: &str) -> String {
    format!("{ANNOTATION_PREFIX}{uuid}")
}

/// The key escaped for a JSON Patch path: `~` → `~0` first, then `/` → `~1`.
pub fn json_patch_escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Whether `text` is a lower-case canonical RFC 4122 UUID (`8-4-4-4-12` hex, variant
/// `10xx`).
pub fn is_canonical_uuid(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() != 36 {
        return false;
    }
    for (i, c) in b.iter().enumerate() {
        let dash = matches!(i, 8 | 13 | 18 | 23);
        if dash {
            if *c != b'-' {
                return false;
            }
        } else if !(c.is_ascii_digit() || (b'a'..=b'f').contains(c)) {
            return false;
        }
    }
    // Variant RFC 4122: the first hex digit of the fourth group is 8, 9, a or b.
    matches!(b[19], b'8' | b'9' | b'a' | b'b')
}

fn json_string(out: &mut String, s: &str) {
    // serde_json writes a string exactly as Go's encoder does for the ASCII names and
    // RFC 3339 times a payload carries; serialising a &str cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\"")));
}

impl RequestPayload {
    /// Checks the contract's rules for what alfred writes.
    pub fn validate(&self) -> Result<(), RequestError> {
        if self.instance < 0 {
            return Err(invalid(
                "instance",
                format!("{} is negative", self.instance),
            ));
        }
        if !is_dns1123_subdomain(&self.from_node) {
            return Err(invalid(
                "from_node",
                format!("{:?} is not a DNS-1123 subdomain", self.from_node),
            ));
        }
        if self.hint_target_nodes.len() > MAX_ALFRED_HINTS {
            return Err(invalid(
                "hint_target_nodes",
                format!(
                    "{} hints; alfred writes at most {MAX_ALFRED_HINTS}",
                    self.hint_target_nodes.len()
                ),
            ));
        }
        check_hints(&self.hint_target_nodes, &self.from_node)
    }

    /// The exact annotation value: compact JSON, members in contract order.
    pub fn encode(&self) -> Result<String, RequestError> {
        self.validate()?;
        let mut out = String::with_capacity(256);
        out.push_str("{\"schemaVersion\":\"v1\",\"component\":");
        json_string(&mut out, self.component.as_str());
        out.push_str(",\"instance\":");
        out.push_str(&self.instance.to_string());
        out.push_str(",\"from_node\":");
        json_string(&mut out, &self.from_node);
        if !self.hint_target_nodes.is_empty() {
            out.push_str(",\"hint_target_nodes\":[");
            for (i, h) in self.hint_target_nodes.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_string(&mut out, h);
            }
            out.push(']');
        }
        out.push_str(",\"reason\":");
        json_string(&mut out, self.reason.as_str());
        out.push_str(",\"requested_at\":");
        json_string(&mut out, &self.requested_at.to_rfc3339());
        out.push_str(",\"requested_by\":\"alfred\"}");
        if out.len() > MAX_PAYLOAD_BYTES {
            return Err(invalid(
                "payload",
                format!("{} bytes exceed {MAX_PAYLOAD_BYTES}", out.len()),
            ));
        }
        Ok(out)
    }

    /// Decodes a payload alfred wrote, strictly: the exact member set and order alfred
    /// writes, `schemaVersion` `v1`, `requested_by` `alfred`, and re-encoding gives the same
    /// bytes. Anything else is an error (a retry then withholds with
    /// `JournalPayloadInvalid`).
    pub fn decode(text: &str) -> Result<RequestPayload, RequestError> {
        if text.len() > MAX_PAYLOAD_BYTES {
            return Err(RequestError::Malformed(format!(
                "{} bytes exceed {MAX_PAYLOAD_BYTES}",
                text.len()
            )));
        }
        let value: serde_json::Value = crate::strict_json::parse_strict(text)
            .map_err(|e| RequestError::Malformed(e.to_string()))?;
        let obj = value
            .as_object()
            .ok_or_else(|| RequestError::Malformed("not a JSON object".into()))?;
        let allowed = [
            "schemaVersion",
            "component",
            "instance",
            "from_node",
            "hint_target_nodes",
            "reason",
            "requested_at",
            "requested_by",
        ];
        for k in obj.keys() {
            if !allowed.contains(&k.as_str()) {
                return Err(RequestError::Malformed(format!("unknown member {k:?}")));
            }
        }
        let s = |k: &'static str| -> Result<&str, RequestError> {
            obj.get(k)
                .and_then(|v| v.as_str())
                .ok_or_else(|| RequestError::Malformed(format!("{k}: missing or not a string")))
        };
        if s("schemaVersion")? != "v1" {
            return Err(RequestError::Malformed("schemaVersion: not \"v1\"".into()));
        }
        if s("requested_by")? != REQUESTED_BY {
            return Err(RequestError::Malformed(
                "requested_by: not \"alfred\"".into(),
            ));
        }
        let component = ComponentKind::parse(s("component")?).ok_or_else(|| {
            RequestError::Malformed("component: not engine, decoder or router".into())
        })?;
        let instance = obj
            .get("instance")
            .and_then(|v| v.as_i64())
            .ok_or_else(|| RequestError::Malformed("instance: missing or not an integer".into()))?;
        let reason = RowReason::parse(s("reason")?)
            .ok_or_else(|| RequestError::Malformed("reason: unknown".into()))?;
        let requested_at = Timestamp::parse_rfc3339(s("requested_at")?)
            .map_err(|e| RequestError::Malformed(format!("requested_at: {e}")))?;
        let hint_target_nodes = match obj.get("hint_target_nodes") {
            None => Vec::new(),
            Some(serde_json::Value::Array(items)) => {
                let mut v = Vec::new();
                for it in items {
                    v.push(
                        it.as_str()
                            .ok_or_else(|| {
                                RequestError::Malformed("hint_target_nodes: not strings".into())
                            })?
                            .to_owned(),
                    );
                }
                v
            }
            Some(_) => {
                return Err(RequestError::Malformed(
                    "hint_target_nodes: not an array".into(),
                ));
            }
        };
        let p = RequestPayload {
            component,
            instance,
            from_node: s("from_node")?.to_owned(),
            hint_target_nodes,
            reason,
            requested_at,
        };
        let again = p.encode()?;
        if again != text {
            return Err(RequestError::Malformed(
                "not in alfred's canonical form (member order, spacing or time format)".into(),
            ));
        }
        Ok(p)
    }
}

fn check_hints(hints: &[String], from_node: &str) -> Result<(), RequestError> {
    if hints.len() > MAX_CONTRACT_HINTS {
        return Err(invalid("hint_target_nodes", "more than 8 hints"));
    }
    for (i, h) in hints.iter().enumerate() {
        if !is_dns1123_subdomain(h) {
            return Err(invalid(
                "hint_target_nodes",
                format!("{h:?} is not a DNS-1123 subdomain"),
            ));
        }
        if h == from_node {
            return Err(invalid(
                "hint_target_nodes",
                format!("{h:?} equals from_node"),
            ));
        }
        if hints[..i].contains(h) {
            return Err(invalid("hint_target_nodes", format!("{h:?} repeats")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> RequestPayload {
        RequestPayload {
            component: ComponentKind::Engine,
            instance: 0,
            from_node: "gpu-h100-a07".into(),
            hint_target_nodes: vec![
                "gpu-h100-c03".into(),
                "gpu-h100-c11".into(),
                "gpu-h100-d02".into(),
            ],
            reason: RowReason::Fragmentation,
            requested_at: Timestamp::parse_rfc3339("2026-09-28T10:15:02.418093721Z").unwrap(),
        }
    }

    #[test]
    fn golden_payload_bytes_match_the_contract_example() {
        assert_eq!(
            example().encode().unwrap(),
            r#"{"schemaVersion":"v1","component":"engine","instance":0,"from_node":"gpu-h100-a07","hint_target_nodes":["gpu-h100-c03","gpu-h100-c11","gpu-h100-d02"],"reason":"Fragmentation","requested_at":"2026-09-28T10:15:02.418093721Z","requested_by":"alfred"}"#
        );
    }

    #[test]
    fn golden_payload_without_hints_omits_the_member_and_trims_zeros() {
        let mut p = example();
        p.hint_target_nodes.clear();
        p.instance = 2;
        p.reason = RowReason::NodeUnhealthy;
        p.requested_at = Timestamp::parse_rfc3339("2026-09-28T10:15:02.500000000Z").unwrap();
        assert_eq!(
            p.encode().unwrap(),
            r#"{"schemaVersion":"v1","component":"engine","instance":2,"from_node":"gpu-h100-a07","reason":"NodeUnhealthy","requested_at":"2026-09-28T10:15:02.5Z","requested_by":"alfred"}"#
        );
        p.requested_at = Timestamp::from_unix_secs(1_790_000_000);
        assert!(
            p.encode()
                .unwrap()
                .contains(r#""requested_at":"2026-09-21T14:13:20Z""#)
        );
    }

    #[test]
    fn decode_round_trips_and_rejects_everything_else() {
        let text = example().encode().unwrap();
        assert_eq!(RequestPayload::decode(&text).unwrap(), example());
        let bad = [
            text.replace(
                "\"requested_by\":\"alfred\"",
                "\"requested_by\":\"kubectl-ome\"",
            ),
            text.replace("{\"schemaVersion\"", "{ \"schemaVersion\""),
            text.replace("\"v1\"", "\"v2\""),
            text.replace("}", ",\"extra\":1}"),
            format!("{text} "),
            text.replace(".418093721Z", ".418093721+00:00"),
            text[..text.len() - 1].to_string(),
            text.replace("\"instance\":0", "\"instance\":0,\"instance\":0"),
        ];
        for b in bad {
            assert!(RequestPayload::decode(&b).is_err(), "{b}");
        }
    }

    #[test]
    fn rules_refuse_bad_requests() {
        let mut p = example();
        p.hint_target_nodes.push("gpu-4".into());
        assert!(p.encode().is_err());
        let mut p = example();
        p.hint_target_nodes[0] = p.from_node.clone();
        assert!(p.encode().is_err());
        let mut p = example();
        p.instance = -1;
        assert!(p.encode().is_err());
        let mut p = example();
        p.from_node = "Bad_Node".into();
        assert!(p.encode().is_err());
    }

    #[test]
    fn keys_and_escaping() {
        let k = annotation_key("6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f");
        assert_eq!(
            k,
            "ome.io/migration-request-v1-6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
        );
        assert_eq!(
            json_patch_escape(&k),
            "ome.io~1migration-request-v1-6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
        );
        assert_eq!(json_patch_escape("a~/b"), "a~0~1b");
        assert!(is_canonical_uuid("6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"));
        assert!(!is_canonical_uuid("6F1C2D3E-8A4B-4C5D-9E6F-0A1B2C3D4E5F"));
        assert!(!is_canonical_uuid("6f1c2d3e-8a4b-4c5d-7e6f-0a1b2c3d4e5f"));
        assert!(!is_canonical_uuid("6f1c2d3e8a4b4c5d9e6f0a1b2c3d4e5f"));
    }
}
