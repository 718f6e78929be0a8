//! Profile identity, `--print-profile` output and `configurationID`
//! (docs/design-simulation.md#profile-identity).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::config::Profile;
use crate::plugins::{FEATURE_GATES, SCHEDULER_VERSION};

/// The wire-contract string hashed into the configuration ID; bump when the protocol changes.
pub const WORKER_CONTRACT: &str = "alfred-snapshot-v1";

/// A worker's identity (all four fields compared exactly).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Identity {
    /// The profile's scheduler name (`default-scheduler` when the profile is unnamed).
    pub scheduler_name: String,
    /// The operator-chosen `--backend` label, so two workers of one scheduler stay apart.
    pub backend: String,
    /// The modelled kube-scheduler version (`v1.35.4`).
    pub scheduler_version: String,
    /// `sha256:` and the hash of the defaulted configuration and the build, so any edit or new
    /// image gives a new ID.
    #[serde(rename = "configurationID")]
    pub configuration_id: String,
}

/// What `--print-profile` prints (keys in this order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrintedProfile {
    /// Who the worker is.
    pub identity: Identity,
    /// Whether OMEGangPack runs at every point a gang needs.
    pub gang_scheduling: bool,
}

impl PrintedProfile {
    /// The compact one-line JSON, without the trailing newline.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Build provenance hashed into the configuration ID. The executable digest is computed by
/// the binary (IO) and passed in, so this crate stays pure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BuildInfo {
    /// The crate name (part of the hashed build provenance).
    pub package: String,
    /// The crate version.
    pub version: String,
    /// Source revision, when known at build time (empty otherwise).
    pub source_revision: String,
    /// Lowercase hex SHA-256 of the running executable's bytes.
    pub executable_sha256: String,
}

/// Canonical JSON: no whitespace, object keys sorted bytewise, integers in plain decimal.
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        // Non-integers (only `clientConnection.qps` can be one) are hashed as strings.
        Value::Number(n) if n.as_i64().is_none() && n.as_u64().is_none() => {
            out.push_str(&Value::String(n.to_string()).to_string());
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Lowercase hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest.iter() {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The canonical document hashed into the configuration ID.
pub fn configuration_document(profile: &Profile, build: &BuildInfo) -> Value {
    let gates: serde_json::Map<String, Value> = FEATURE_GATES
        .iter()
        .map(|(k, v)| (k.to_string(), Value::Bool(*v)))
        .collect();
    serde_json::json!({
        "schedulerVersion": SCHEDULER_VERSION,
        "config": profile.normalized,
        "featureGates": gates,
        "workerContract": WORKER_CONTRACT,
        "build": serde_json::to_value(build).unwrap_or(Value::Null),
    })
}

/// `sha256:` + hex SHA-256 of the canonical configuration document.
pub fn configuration_id(profile: &Profile, build: &BuildInfo) -> String {
    let doc = canonical_json(&configuration_document(profile, build));
    format!("sha256:{}", sha256_hex(doc.as_bytes()))
}

/// The profile a worker with this configuration and `--backend` prints.
pub fn printed_profile(profile: &Profile, backend: &str, build: &BuildInfo) -> PrintedProfile {
    PrintedProfile {
        identity: Identity {
            scheduler_name: profile.scheduler_name.clone(),
            backend: backend.to_string(),
            scheduler_version: SCHEDULER_VERSION.to_string(),
            configuration_id: configuration_id(profile, build),
        },
        gang_scheduling: profile.gang_scheduling,
    }
}
