//! The request/result wire protocol, schema `v1` (docs/design-simulation.md#request-and-result),
//! and its evaluation.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

use crate::config::Profile;
use crate::engine::{InputError, MoveInput, Outcome, PreparedCluster};
use crate::identity::Identity;
use crate::objects::{
    Cluster, LabelSelector, Namespace, Node, ObjectMeta, Pod, PodGroup, SelectorObject,
};
use crate::outcome::{Decision, WorkerReason};

/// The only schema version.
pub const SCHEMA_VERSION: &str = "v1";
/// Largest request the worker reads (16 MiB).
pub const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;
/// Largest result Alfred reads (16 MiB).
pub const MAX_RESULT_BYTES: usize = 16 * 1024 * 1024;
/// Largest `--print-profile` output Alfred reads (64 KiB).
pub const MAX_PROFILE_BYTES: usize = 64 * 1024;
/// Largest stderr Alfred accepts (64 KiB).
pub const MAX_STDERR_BYTES: usize = 64 * 1024;
/// At most this many replacement pods per request.
pub const MAX_REPLACEMENT_PODS: usize = 128;

/// A simulation request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SimulationRequest {
    /// The request format; only `v1` is read.
    pub schema_version: String,
    /// Echoed in the result, so a caller can pair them.
    #[serde(rename = "requestID")]
    pub request_id: String,
    /// The snapshot the cluster objects come from; echoed in the result.
    #[serde(rename = "snapshotID")]
    pub snapshot_id: String,
    /// The snapshot's time (RFC 3339); echoed in the result.
    pub snapshot_time: String,
    /// The worker identity the request was built for; a worker refuses another's.
    pub profile: Identity,
    /// The complete, unbound pods to place, for the profile's scheduler.
    pub replacement_pods: Vec<Pod>,
    /// The pods the move replaces: bound, and also present in `cluster_objects`.
    pub source_pods: Vec<Pod>,
    /// Nodes, Pods, Namespaces, Services, controllers and PodGroups, closed under reference.
    pub cluster_objects: Vec<Value>,
    /// The replacements form one gang: all land or none.
    #[serde(default)]
    pub require_gang: bool,
    /// Nodes the replacements may not land on (recommend-only requests).
    #[serde(default)]
    pub excluded_nodes: Vec<String>,
    /// The one node the move leaves (execute-mode requests, instead of `excluded_nodes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migration_from_node: Option<String>,
}

/// A pod named in a placement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodRef {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
    /// The pod's UID, when the request gave one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

/// Where one replacement pod lands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Placement {
    /// The replacement pod.
    pub pod: PodRef,
    /// The node it lands on (known and not excluded).
    pub node_name: String,
}

/// A simulation result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SimulationResult {
    /// The request format (`v1`).
    pub schema_version: String,
    /// The request's id.
    #[serde(rename = "requestID")]
    pub request_id: String,
    /// The request's snapshot id.
    #[serde(rename = "snapshotID")]
    pub snapshot_id: String,
    /// The request's snapshot time.
    pub snapshot_time: String,
    /// The worker's identity.
    pub profile: Identity,
    /// Feasible, infeasible, or beyond what the model can say.
    pub decision: Decision,
    /// The reason paired with the decision (`PlacementFound`, `NoFeasiblePlacement`, `Unsupported`).
    pub reason: WorkerReason,
    /// One placement per replacement pod, in request order, when the decision is feasible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placements: Option<Vec<Placement>>,
}

/// A request the worker refuses (exit 1).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RequestError {
    /// `is not valid JSON: …` for a syntax error, `<field path>: …` for valid JSON that does not
    /// fit the schema.
    #[error("request {}", crate::clip::clip(.0, 280))]
    Decode(String),
    /// The request is over [`MAX_REQUEST_BYTES`]: refused before reading.
    #[error("request is larger than {MAX_REQUEST_BYTES} bytes")]
    TooLarge,
    /// The first byte is not `{` (a request is one JSON object, nothing before it).
    #[error("request must be a JSON object starting with '{{'")]
    NotAnObject,
    /// Valid JSON with a field the worker cannot accept.
    #[error(
        "request {}: {}: {}",
        crate::clip::clip(.field, 100),
        crate::clip::clip(&format!("{:?}", .value), 80),
        crate::clip::clip(.why, 100)
    )]
    Invalid {
        /// The field's path in the request.
        field: String,
        /// The offending value, as text.
        value: String,
        /// Why it is refused.
        why: String,
    },
}

impl From<InputError> for RequestError {
    fn from(e: InputError) -> Self {
        match e {
            InputError::Invalid { field, value, why } => {
                RequestError::Invalid { field, value, why }
            }
        }
    }
}

fn bad(field: impl Into<String>, value: impl ToString, why: &str) -> RequestError {
    RequestError::Invalid {
        field: field.into(),
        value: value.to_string(),
        why: why.to_string(),
    }
}

/// Decodes a request strictly (size, leading `{`, unknown fields, trailing data).
pub fn decode_request(bytes: &[u8]) -> Result<SimulationRequest, RequestError> {
    if bytes.len() > MAX_REQUEST_BYTES {
        return Err(RequestError::TooLarge);
    }
    if bytes.first() != Some(&b'{') {
        return Err(RequestError::NotAnObject);
    }
    decode_json(bytes)
}

/// Decodes `bytes`, naming the field path of a schema error; messages are clipped so an echoed
/// value cannot make a long line.
fn decode_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, RequestError> {
    // JSON text is UTF-8. serde_json checks the strings it decodes but not the ones it skips,
    // so the one-pass decoder, which skips the fields it does not type, would accept bytes the
    // plain decoder refuses: the whole request is checked first, for both.
    let text = std::str::from_utf8(bytes).map_err(|e| {
        RequestError::Decode(format!(
            "is not valid JSON: invalid UTF-8 at byte {}",
            e.valid_up_to()
        ))
    })?;
    // A member name twice in one object: the typed decoders refuse it where they type the
    // object and a `Value` would keep the last one, so both decoders refuse it everywhere
    // (alfred never writes one).
    let mut names = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize::<_, UniqueNames>(&mut names).map_err(decode_error)?;
    let mut reader = serde_json::Deserializer::from_str(text);
    let decoded: T = serde_path_to_error::deserialize(&mut reader).map_err(decode_error)?;
    reader.end().map_err(|e| {
        RequestError::Decode(format!(
            "is not valid JSON: {}",
            clip_message(&e.to_string())
        ))
    })?;
    Ok(decoded)
}

/// A decoding error as a [`RequestError`], naming the field path of a schema error.
fn decode_error(e: serde_path_to_error::Error<serde_json::Error>) -> RequestError {
    let path = e.path().to_string();
    let inner = e.into_inner();
    let text = clip_message(&inner.to_string());
    RequestError::Decode(match inner.classify() {
        serde_json::error::Category::Data if path != "." => format!("{path}: {text}"),
        serde_json::error::Category::Data => text,
        _ => format!("is not valid JSON: {text}"),
    })
}

/// Any JSON value, read without keeping it, refusing a member name repeated in one object.
struct UniqueNames;

impl<'de> Deserialize<'de> for UniqueNames {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueNamesVisitor)
    }
}

struct UniqueNamesVisitor;

impl<'de> Visitor<'de> for UniqueNamesVisitor {
    type Value = UniqueNames;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<UniqueNames, E> {
        Ok(UniqueNames)
    }
    fn visit_i64<E>(self, _: i64) -> Result<UniqueNames, E> {
        Ok(UniqueNames)
    }
    fn visit_u64<E>(self, _: u64) -> Result<UniqueNames, E> {
        Ok(UniqueNames)
    }
    fn visit_f64<E>(self, _: f64) -> Result<UniqueNames, E> {
        Ok(UniqueNames)
    }
    fn visit_str<E>(self, _: &str) -> Result<UniqueNames, E> {
        Ok(UniqueNames)
    }
    fn visit_unit<E>(self) -> Result<UniqueNames, E> {
        Ok(UniqueNames)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<UniqueNames, A::Error> {
        while seq.next_element::<UniqueNames>()?.is_some() {}
        Ok(UniqueNames)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UniqueNames, A::Error> {
        // Most objects have a few members (label and annotation maps may have many): the
        // first ones are scanned, the rest kept in a set.
        let mut first: Vec<Cow<'de, str>> = Vec::new();
        let mut rest: BTreeSet<Cow<'de, str>> = BTreeSet::new();
        while let Some(MemberName(name)) = map.next_key()? {
            if first.contains(&name) || rest.contains(&name) {
                return Err(de::Error::custom(format!("duplicate field `{name}`")));
            }
            map.next_value::<UniqueNames>()?;
            if first.len() < 16 {
                first.push(name);
            } else {
                rest.insert(name);
            }
        }
        Ok(UniqueNames)
    }
}

/// A member name, borrowed from the input when it has no escapes.
struct MemberName<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for MemberName<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NameVisitor;
        impl<'de> Visitor<'de> for NameVisitor {
            type Value = MemberName<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<MemberName<'de>, E> {
                Ok(MemberName(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<MemberName<'de>, E> {
                Ok(MemberName(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(NameVisitor)
    }
}

/// At most ~170 characters: the start and the end of a message (the end says what was expected).
fn clip_message(message: &str) -> String {
    let chars = message.chars().count();
    if chars <= 170 {
        return message.to_owned();
    }
    let head: String = message.chars().take(100).collect();
    let tail: String = message.chars().skip(chars - 60).collect();
    format!("{head}…{tail}")
}

/// One cluster object decoded straight into its type (no intermediate `Value` tree when
/// `apiVersion` and `kind` come first, as Alfred writes them).
enum ClusterObject {
    Node(Box<Node>),
    Pod(Box<Pod>),
    Namespace(Namespace),
    Selector(SelectorObject),
    PodGroup(PodGroup),
}

#[derive(Deserialize)]
struct SelectorSource {
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: Option<SelectorSpec>,
}

#[derive(Deserialize)]
struct SelectorSpec {
    #[serde(default)]
    selector: Option<Value>,
}

impl ClusterObject {
    fn from_parts<'de, D: serde::Deserializer<'de>>(
        api: &str,
        kind: &str,
        d: D,
    ) -> Result<ClusterObject, D::Error> {
        use serde::de::Error;
        Ok(match (api, kind) {
            ("v1", "Node") => ClusterObject::Node(Box::new(Node::deserialize(d)?)),
            ("v1", "Pod") => ClusterObject::Pod(Box::new(Pod::deserialize(d)?)),
            ("v1", "Namespace") => ClusterObject::Namespace(Namespace::deserialize(d)?),
            ("v1", "Service" | "ReplicationController")
            | ("apps/v1", "ReplicaSet" | "StatefulSet") => {
                let src = SelectorSource::deserialize(d)?;
                let raw = src.spec.and_then(|s| s.selector);
                let selector = if api == "v1" {
                    map_selector(raw.as_ref())
                } else {
                    match raw {
                        Some(v) => Some(LabelSelector::deserialize(&v).map_err(D::Error::custom)?),
                        None => None,
                    }
                };
                ClusterObject::Selector(SelectorObject {
                    kind: kind.to_string(),
                    metadata: src.metadata,
                    selector,
                })
            }
            ("scheduling.x-k8s.io/v1alpha1", "PodGroup") => {
                ClusterObject::PodGroup(PodGroup::deserialize(d)?)
            }
            _ => {
                return Err(D::Error::custom(format!(
                    "clusterObjects: {api} {kind}: object kind not accepted"
                )));
            }
        })
    }
}

impl<'de> Deserialize<'de> for ClusterObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ClusterObject;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a Kubernetes object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ClusterObject, A::Error> {
                use serde::de::Error;
                let (mut api, mut kind) = (None::<String>, None::<String>);
                let mut rest = serde_json::Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "apiVersion" if api.is_none() => api = Some(map.next_value()?),
                        "kind" if kind.is_none() => kind = Some(map.next_value()?),
                        _ => {
                            if let (Some(a), Some(k), true) = (&api, &kind, rest.is_empty()) {
                                // Fast path: hand the rest of the map (starting with the key
                                // just read, whose value is still unread) to the typed decoder.
                                return ClusterObject::from_parts(
                                    a,
                                    k,
                                    Chained {
                                        first_key: Some(key),
                                        tail: map,
                                    },
                                );
                            }
                            rest.insert(key, map.next_value()?);
                        }
                    }
                }
                if let Some(a) = &api {
                    rest.insert("apiVersion".into(), Value::String(a.clone()));
                }
                if let Some(k) = &kind {
                    rest.insert("kind".into(), Value::String(k.clone()));
                }
                let v = Value::Object(rest);
                ClusterObject::from_parts(
                    api.as_deref().unwrap_or(""),
                    kind.as_deref().unwrap_or(""),
                    &v,
                )
                .map_err(A::Error::custom)
            }
        }
        d.deserialize_map(V)
    }
}

/// A map deserializer over a live map whose first key was already read (its value was not).
struct Chained<A> {
    first_key: Option<String>,
    tail: A,
}

impl<'de, A: serde::de::MapAccess<'de>> serde::Deserializer<'de> for Chained<A> {
    type Error = A::Error;
    fn deserialize_any<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, A::Error> {
        v.visit_map(self)
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

impl<'de, A: serde::de::MapAccess<'de>> serde::de::MapAccess<'de> for Chained<A> {
    type Error = A::Error;
    fn next_key_seed<K: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        use serde::de::IntoDeserializer;
        match self.first_key.take() {
            Some(k) => {
                let de: serde::de::value::StringDeserializer<A::Error> = k.into_deserializer();
                seed.deserialize(de).map(Some)
            }
            None => self.tail.next_key_seed(seed),
        }
    }
    fn next_value_seed<S: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<S::Value, A::Error> {
        self.tail.next_value_seed(seed)
    }
}

/// The request as the worker decodes it: cluster objects go straight to their types.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TypedRequest {
    schema_version: String,
    #[serde(rename = "requestID")]
    request_id: String,
    #[serde(rename = "snapshotID")]
    snapshot_id: String,
    snapshot_time: String,
    profile: Identity,
    replacement_pods: Vec<Pod>,
    source_pods: Vec<Pod>,
    cluster_objects: Vec<ClusterObject>,
    #[serde(default)]
    require_gang: bool,
    #[serde(default)]
    excluded_nodes: Vec<String>,
    #[serde(default)]
    migration_from_node: Option<String>,
}

/// Decodes a request for evaluation in one pass: the request without its `clusterObjects`
/// (left empty) and the [`Cluster`] they describe. Same strictness as [`decode_request`].
pub fn decode_request_cluster(bytes: &[u8]) -> Result<(SimulationRequest, Cluster), RequestError> {
    if bytes.len() > MAX_REQUEST_BYTES {
        return Err(RequestError::TooLarge);
    }
    if bytes.first() != Some(&b'{') {
        return Err(RequestError::NotAnObject);
    }
    let t: TypedRequest = decode_json(bytes)?;
    let mut cluster = Cluster::default();
    for o in t.cluster_objects {
        match o {
            ClusterObject::Node(n) => cluster.nodes.push(*n),
            ClusterObject::Pod(p) => cluster.pods.push(*p),
            ClusterObject::Namespace(n) => cluster.namespaces.push(n),
            ClusterObject::Selector(s) => cluster.selector_objects.push(s),
            ClusterObject::PodGroup(g) => cluster.pod_groups.push(g),
        }
    }
    let req = SimulationRequest {
        schema_version: t.schema_version,
        request_id: t.request_id,
        snapshot_id: t.snapshot_id,
        snapshot_time: t.snapshot_time,
        profile: t.profile,
        replacement_pods: t.replacement_pods,
        source_pods: t.source_pods,
        cluster_objects: Vec::new(),
        require_gang: t.require_gang,
        excluded_nodes: t.excluded_nodes,
        migration_from_node: t.migration_from_node,
    };
    Ok((req, cluster))
}

/// Compact JSON of a request (what goes on the worker's stdin).
pub fn encode_request(request: &SimulationRequest) -> Vec<u8> {
    serde_json::to_vec(request).unwrap_or_default()
}

/// The object's JSON with `apiVersion` and `kind` first (the worker's fast decoding path).
fn tagged<T: Serialize>(api_version: &str, kind: &str, object: &T) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("apiVersion".into(), Value::String(api_version.into()));
    m.insert("kind".into(), Value::String(kind.into()));
    if let Ok(Value::Object(fields)) = serde_json::to_value(object) {
        m.extend(fields);
    }
    Value::Object(m)
}

/// The `clusterObjects` of a request for a [`Cluster`] (the inverse of
/// [`cluster_from_objects`]).
pub fn cluster_objects(cluster: &Cluster) -> Vec<Value> {
    let mut out = Vec::new();
    out.extend(
        cluster
            .namespaces
            .iter()
            .map(|n| tagged("v1", "Namespace", n)),
    );
    out.extend(cluster.nodes.iter().map(|n| tagged("v1", "Node", n)));
    out.extend(cluster.pods.iter().map(|p| tagged("v1", "Pod", p)));
    for o in &cluster.selector_objects {
        let (api, map_form) = match o.kind.as_str() {
            "Service" | "ReplicationController" => ("v1", true),
            _ => ("apps/v1", false),
        };
        let selector = match (&o.selector, map_form) {
            (None, _) => Value::Null,
            (Some(s), true) => serde_json::to_value(&s.match_labels).unwrap_or(Value::Null),
            (Some(s), false) => serde_json::to_value(s).unwrap_or(Value::Null),
        };
        out.push(serde_json::json!({
            "apiVersion": api,
            "kind": o.kind,
            "metadata": o.metadata,
            "spec": {"selector": selector},
        }));
    }
    out.extend(
        cluster
            .pod_groups
            .iter()
            .map(|g| tagged("scheduling.x-k8s.io/v1alpha1", "PodGroup", g)),
    );
    out
}

/// Compact JSON of a result, with the trailing newline.
pub fn encode_result(result: &SimulationResult) -> String {
    let mut s = serde_json::to_string(result).unwrap_or_default();
    s.push('\n');
    s
}

/// Decodes a worker's stdout into a result (strict; at most [`MAX_RESULT_BYTES`]).
pub fn decode_result(bytes: &[u8]) -> Result<SimulationResult, RequestError> {
    if bytes.len() > MAX_RESULT_BYTES {
        return Err(RequestError::TooLarge);
    }
    decode_json(bytes)
}

fn is_unpadded_nonempty(s: &str) -> bool {
    !s.is_empty() && s.trim() == s
}

/// RFC 3339 with a non-zero date.
pub fn is_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 20 {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let shape = digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && (b[10] == b'T' || b[10] == b't')
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    if !shape {
        return false;
    }
    let mut rest = &s[19..];
    if let Some(r) = rest.strip_prefix('.') {
        let n = r.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &r[n..];
    }
    let zone_ok = rest == "Z"
        || rest == "z"
        || (rest.len() == 6
            && (rest.starts_with('+') || rest.starts_with('-'))
            && rest.as_bytes()[3] == b':'
            && rest.as_bytes()[1..3].iter().all(u8::is_ascii_digit)
            && rest.as_bytes()[4..6].iter().all(u8::is_ascii_digit));
    zone_ok && &s[0..4] != "0000" && !s.starts_with("0001-01-01T00:00:00")
}

fn map_selector(v: Option<&Value>) -> Option<LabelSelector> {
    let obj = v?.as_object()?;
    let mut sel = LabelSelector::default();
    for (k, v) in obj {
        sel.match_labels.insert(k.clone(), v.as_str()?.to_string());
    }
    if sel.match_labels.is_empty() {
        return None; // an empty map selector selects nothing
    }
    Some(sel)
}

/// Splits `clusterObjects` into a [`Cluster`].
pub fn cluster_from_objects(objects: &[Value]) -> Result<Cluster, RequestError> {
    let mut c = Cluster::default();
    for (i, o) in objects.iter().enumerate() {
        let field = format!("clusterObjects[{i}]");
        let api = o.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = o.get("kind").and_then(Value::as_str).unwrap_or("");
        let dec = |e: serde_json::Error| bad(&field, format!("{api} {kind}"), &e.to_string());
        match (api, kind) {
            ("v1", "Node") => c.nodes.push(Node::deserialize(o).map_err(dec)?),
            ("v1", "Pod") => c.pods.push(Pod::deserialize(o).map_err(dec)?),
            ("v1", "Namespace") => c.namespaces.push(Namespace::deserialize(o).map_err(dec)?),
            ("v1", "Service") | ("v1", "ReplicationController") => {
                let meta = match o.get("metadata") {
                    Some(m) => ObjectMeta::deserialize(m).map_err(dec)?,
                    None => ObjectMeta::default(),
                };
                c.selector_objects.push(SelectorObject {
                    kind: kind.to_string(),
                    metadata: meta,
                    selector: map_selector(o.pointer("/spec/selector")),
                });
            }
            ("apps/v1", "ReplicaSet") | ("apps/v1", "StatefulSet") => {
                let meta = match o.get("metadata") {
                    Some(m) => ObjectMeta::deserialize(m).map_err(dec)?,
                    None => ObjectMeta::default(),
                };
                let selector = match o.pointer("/spec/selector") {
                    Some(s) => Some(LabelSelector::deserialize(s).map_err(dec)?),
                    None => None,
                };
                c.selector_objects.push(SelectorObject {
                    kind: kind.to_string(),
                    metadata: meta,
                    selector,
                });
            }
            ("scheduling.x-k8s.io/v1alpha1", "PodGroup") => {
                c.pod_groups.push(PodGroup::deserialize(o).map_err(dec)?)
            }
            _ => {
                return Err(bad(
                    field,
                    format!("{api} {kind}"),
                    "object kind not accepted",
                ));
            }
        }
    }
    Ok(c)
}

/// Checks the closure requirements of docs/design-simulation.md#request-and-result.
pub fn validate_closure(req: &SimulationRequest, cluster: &Cluster) -> Result<(), RequestError> {
    if cluster.nodes.is_empty() {
        return Err(bad(
            "clusterObjects",
            "no Node",
            "at least one Node is required",
        ));
    }
    let namespaces: BTreeSet<&str> = cluster
        .namespaces
        .iter()
        .map(|n| n.metadata.name.as_str())
        .collect();
    let namespaces = &namespaces;
    let uids = check_cluster_pods(cluster, namespaces)?;
    check_pod_groups(cluster, namespaces)?;
    let mut rep_uids = BTreeSet::new();
    for (i, p) in req.replacement_pods.iter().enumerate() {
        need_namespace(
            namespaces,
            &format!("replacementPods[{i}]"),
            &p.metadata.namespace,
        )?;
        if !p.metadata.uid.is_empty()
            && (!rep_uids.insert(p.metadata.uid.clone()) || uids.contains(&p.metadata.uid))
        {
            return Err(bad(
                format!("replacementPods[{i}].metadata.uid"),
                &p.metadata.uid,
                "must be unique",
            ));
        }
    }
    check_source_pods(req, cluster)?;
    if let Some(from) = &req.migration_from_node {
        check_migration_from_node(req, from)?;
    }
    Ok(())
}

/// The object named `what` lives in a supplied Namespace.
fn need_namespace(namespaces: &BTreeSet<&str>, what: &str, ns: &str) -> Result<(), RequestError> {
    if namespaces.contains(ns) {
        Ok(())
    } else {
        Err(bad(
            format!("{what} namespace"),
            ns,
            "Namespace not supplied",
        ))
    }
}

/// Every pod has a unique UID, its Namespace, its Node and its controlling owners supplied;
/// the pods' UIDs.
fn check_cluster_pods(
    cluster: &Cluster,
    namespaces: &BTreeSet<&str>,
) -> Result<BTreeSet<String>, RequestError> {
    let nodes: BTreeSet<&str> = cluster
        .nodes
        .iter()
        .map(|n| n.metadata.name.as_str())
        .collect();
    let owners: BTreeMap<(String, String, String), String> = cluster
        .selector_objects
        .iter()
        .map(|o| {
            (
                (
                    o.kind.clone(),
                    o.metadata.namespace.clone(),
                    o.metadata.name.clone(),
                ),
                o.metadata.uid.clone(),
            )
        })
        .collect();
    let mut uids = BTreeSet::new();
    for p in &cluster.pods {
        need_namespace(
            namespaces,
            &format!("pod {}", p.key()),
            &p.metadata.namespace,
        )?;
        if p.metadata.uid.is_empty() || !uids.insert(p.metadata.uid.clone()) {
            return Err(bad(
                format!("pod {} metadata.uid", p.key()),
                &p.metadata.uid,
                "must be present and unique",
            ));
        }
        if !p.spec.node_name.is_empty() && !nodes.contains(p.spec.node_name.as_str()) {
            return Err(bad(
                format!("pod {} spec.nodeName", p.key()),
                &p.spec.node_name,
                "names no supplied Node",
            ));
        }
        for o in &p.metadata.owner_references {
            if matches!(
                o.kind.as_str(),
                "ReplicationController" | "ReplicaSet" | "StatefulSet"
            ) {
                let k = (o.kind.clone(), p.metadata.namespace.clone(), o.name.clone());
                if owners.get(&k) != Some(&o.uid) {
                    return Err(bad(
                        format!("pod {} ownerReferences", p.key()),
                        format!("{}/{}", o.kind, o.name),
                        "owner not supplied with a matching UID",
                    ));
                }
            }
        }
    }
    let mut uids = BTreeSet::new();
    for p in &cluster.pods {
        need_namespace(
            namespaces,
            &format!("pod {}", p.key()),
            &p.metadata.namespace,
        )?;
        if p.metadata.uid.is_empty() || !uids.insert(p.metadata.uid.clone()) {
            return Err(bad(
                format!("pod {} metadata.uid", p.key()),
                &p.metadata.uid,
                "must be present and unique",
            ));
        }
        if !p.spec.node_name.is_empty() && !nodes.contains(p.spec.node_name.as_str()) {
            return Err(bad(
                format!("pod {} spec.nodeName", p.key()),
                &p.spec.node_name,
                "names no supplied Node",
            ));
        }
        for o in &p.metadata.owner_references {
            if matches!(
                o.kind.as_str(),
                "ReplicationController" | "ReplicaSet" | "StatefulSet"
            ) {
                let k = (o.kind.clone(), p.metadata.namespace.clone(), o.name.clone());
                if owners.get(&k) != Some(&o.uid) {
                    return Err(bad(
                        format!("pod {} ownerReferences", p.key()),
                        format!("{}/{}", o.kind, o.name),
                        "owner not supplied with a matching UID",
                    ));
                }
            }
        }
    }
    Ok(uids)
}

/// Selector objects and PodGroups have their Namespace; PodGroups a unique UID, a positive
/// timeout when set, and no deletion under way.
fn check_pod_groups(cluster: &Cluster, namespaces: &BTreeSet<&str>) -> Result<(), RequestError> {
    for o in &cluster.selector_objects {
        need_namespace(
            namespaces,
            &format!("{} {}", o.kind, o.metadata.name),
            &o.metadata.namespace,
        )?;
    }
    let mut pg_uids = BTreeSet::new();
    for g in &cluster.pod_groups {
        let name = format!("PodGroup {}/{}", g.metadata.namespace, g.metadata.name);
        need_namespace(namespaces, &name, &g.metadata.namespace)?;
        if g.metadata.uid.is_empty() || !pg_uids.insert(g.metadata.uid.clone()) {
            return Err(bad(
                format!("{name} metadata.uid"),
                &g.metadata.uid,
                "must be present and unique",
            ));
        }
        if let Some(t) = g.spec.schedule_timeout_seconds
            && t <= 0
        {
            return Err(bad(
                format!("{name} spec.scheduleTimeoutSeconds"),
                t,
                "must be positive when set",
            ));
        }
        if g.metadata.deletion_timestamp.is_some() {
            return Err(bad(name, "deleting", "PodGroup must not be deleting"));
        }
    }
    Ok(())
}

/// Source pods are bound, appear identical in the cluster, and (without a migration node) sit
/// on excluded nodes.
fn check_source_pods(req: &SimulationRequest, cluster: &Cluster) -> Result<(), RequestError> {
    if req.source_pods.is_empty() {
        return Err(bad(
            "sourcePods",
            "[]",
            "at least one source pod is required",
        ));
    }
    let excluded: BTreeSet<&str> = req.excluded_nodes.iter().map(String::as_str).collect();
    for (i, s) in req.source_pods.iter().enumerate() {
        let field = format!("sourcePods[{i}]");
        if s.spec.node_name.is_empty() {
            return Err(bad(field, s.key(), "source pods must be bound"));
        }
        if !cluster.pods.iter().any(|p| p == s) {
            return Err(bad(
                field,
                s.key(),
                "must appear, identical, in clusterObjects",
            ));
        }
        if req.migration_from_node.is_none() && !excluded.contains(s.spec.node_name.as_str()) {
            return Err(bad(
                format!("{field}.spec.nodeName"),
                &s.spec.node_name,
                "source node must be in excludedNodes",
            ));
        }
    }
    Ok(())
}

/// A migration node is the one excluded node, hosts a source pod, and every replacement's
/// required node terms keep off it.
fn check_migration_from_node(req: &SimulationRequest, from: &String) -> Result<(), RequestError> {
    if req.excluded_nodes.len() != 1 || req.excluded_nodes[0] != *from {
        return Err(bad(
            "migrationFromNode",
            from,
            "must be the one excluded node",
        ));
    }
    if !req.source_pods.iter().any(|s| s.spec.node_name == *from) {
        return Err(bad("migrationFromNode", from, "must host a source pod"));
    }
    for (i, p) in req.replacement_pods.iter().enumerate() {
        let terms = p
            .spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|n| {
                n.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(|s| s.node_selector_terms.as_slice())
            .unwrap_or(&[]);
        let ok = !terms.is_empty()
            && terms.iter().all(|t| {
                t.match_expressions.iter().any(|e| {
                    e.key == crate::model::HOSTNAME_LABEL
                        && e.operator == "NotIn"
                        && e.values.contains(from)
                })
            });
        if !ok {
            return Err(bad(
                format!("replacementPods[{i}].spec.affinity"),
                p.key(),
                "every required term must carry kubernetes.io/hostname NotIn [migrationFromNode]",
            ));
        }
    }
    Ok(())
}

/// The evaluated request: the result to print and a diagnostic line for stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evaluation {
    /// The result to print on stdout.
    pub result: SimulationResult,
    /// The model's outcome, with the cause and ties for the diagnostic line.
    pub outcome: Outcome,
}

impl Evaluation {
    /// One short diagnostic line (cause and ties), or `None` when there is nothing to say.
    pub fn diagnostic(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(f) = &self.outcome.failure {
            parts.push(format!("{:?}: {}", f.cause, f.detail));
        }
        for (pod, nodes) in &self.outcome.ties {
            parts.push(format!("tie for {pod}: {}", nodes.join(",")));
        }
        if parts.is_empty() {
            None
        } else {
            let mut s = parts.join("; ");
            if s.len() > 4096 {
                let mut cut = 4096;
                while !s.is_char_boundary(cut) {
                    cut -= 1;
                }
                s.truncate(cut);
            }
            Some(s)
        }
    }
}

fn check_header(identity: &Identity, req: &SimulationRequest) -> Result<(), RequestError> {
    if req.schema_version != SCHEMA_VERSION {
        return Err(bad("schemaVersion", &req.schema_version, "must be \"v1\""));
    }
    if !is_unpadded_nonempty(&req.request_id) {
        return Err(bad(
            "requestID",
            &req.request_id,
            "must be non-empty and unpadded",
        ));
    }
    if !is_unpadded_nonempty(&req.snapshot_id) {
        return Err(bad(
            "snapshotID",
            &req.snapshot_id,
            "must be non-empty and unpadded",
        ));
    }
    if !is_rfc3339(&req.snapshot_time) {
        return Err(bad(
            "snapshotTime",
            &req.snapshot_time,
            "must be a non-zero RFC 3339 time",
        ));
    }
    if req.profile != *identity {
        return Err(bad(
            "profile",
            format!("{:?}", req.profile),
            "does not match this worker's identity",
        ));
    }
    if req.replacement_pods.len() > MAX_REPLACEMENT_PODS {
        return Err(bad(
            "replacementPods",
            req.replacement_pods.len(),
            "at most 128 replacement pods",
        ));
    }
    Ok(())
}

/// Validates and evaluates a request for the worker whose identity is `identity`.
pub fn evaluate(
    profile: &Profile,
    identity: &Identity,
    req: &SimulationRequest,
    expired: &mut dyn FnMut() -> bool,
) -> Result<Evaluation, RequestError> {
    check_header(identity, req)?;
    let cluster = cluster_from_objects(&req.cluster_objects)?;
    evaluate_with_cluster(profile, identity, req, &cluster, expired)
}

/// As [`evaluate`], for a request whose cluster objects were already decoded (see
/// [`decode_request_cluster`]); `req.cluster_objects` is ignored.
pub fn evaluate_with_cluster(
    profile: &Profile,
    identity: &Identity,
    req: &SimulationRequest,
    cluster: &Cluster,
    expired: &mut dyn FnMut() -> bool,
) -> Result<Evaluation, RequestError> {
    check_header(identity, req)?;
    validate_closure(req, cluster)?;
    let mut prepared = PreparedCluster::new(cluster, &profile.scheduler_name)?;
    let excluded: BTreeSet<String> = req.excluded_nodes.iter().cloned().collect();
    let outcome = prepared.simulate(
        profile,
        &MoveInput {
            replacement_pods: &req.replacement_pods,
            excluded_nodes: &excluded,
            require_gang: req.require_gang,
        },
        expired,
    )?;
    let placements = (outcome.decision == Decision::Feasible).then(|| {
        outcome
            .placements
            .iter()
            .map(|p| Placement {
                pod: PodRef {
                    namespace: p.namespace.clone(),
                    name: p.name.clone(),
                    uid: p.uid.clone(),
                },
                node_name: p.node_name.clone(),
            })
            .collect()
    });
    Ok(Evaluation {
        result: SimulationResult {
            schema_version: SCHEMA_VERSION.to_string(),
            request_id: req.request_id.clone(),
            snapshot_id: req.snapshot_id.clone(),
            snapshot_time: req.snapshot_time.clone(),
            profile: req.profile.clone(),
            decision: outcome.decision,
            reason: outcome.decision.reason(),
            placements,
        },
        outcome,
    })
}

/// Why Alfred rejects a worker's response (`InvalidResponse`).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid worker response: {0}")]
pub struct InvalidResponse(pub String);

/// Alfred-side re-validation of a result against its request
/// (docs/design-simulation.md#request-and-result).
pub fn validate_result(
    req: &SimulationRequest,
    res: &SimulationResult,
) -> Result<(), InvalidResponse> {
    let e = |m: &str| Err(InvalidResponse(m.to_string()));
    if res.schema_version != req.schema_version
        || res.request_id != req.request_id
        || res.snapshot_id != req.snapshot_id
        || res.snapshot_time != req.snapshot_time
        || res.profile != req.profile
    {
        return e("schema version, IDs, time or profile differ from the request");
    }
    if res.reason != res.decision.reason() {
        return e("decision and reason do not pair");
    }
    match (&res.placements, res.decision) {
        (Some(pl), Decision::Feasible) => {
            if pl.len() != req.replacement_pods.len() {
                return e("placements do not list every replacement pod");
            }
            let known: BTreeSet<String> = req
                .cluster_objects
                .iter()
                .filter(|o| o.get("kind").and_then(Value::as_str) == Some("Node"))
                .filter_map(|o| o.pointer("/metadata/name").and_then(Value::as_str))
                .map(str::to_string)
                .collect();
            for (p, r) in pl.iter().zip(&req.replacement_pods) {
                if p.pod.namespace != r.metadata.namespace
                    || p.pod.name != r.metadata.name
                    || p.pod.uid != r.metadata.uid
                {
                    return e("placements are not in request order");
                }
                if !known.contains(&p.node_name) || req.excluded_nodes.contains(&p.node_name) {
                    return e("a placement names an unknown or excluded node");
                }
            }
            Ok(())
        }
        (None, Decision::Feasible) => e("Feasible without placements"),
        (Some(_), _) => e("placements on a non-Feasible result"),
        (None, _) => Ok(()),
    }
}
