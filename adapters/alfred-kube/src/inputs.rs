//! Reading `alfred replay` inputs: files or directories holding what
//! `kubectl get … -o json|yaml` prints, or an alfred snapshot JSON.
//!
//! Every failure names the file, and where the object is known, the object and the
//! field, so a user can go straight to the problem. Nothing here interprets objects:
//! that is `alfred-observe`'s job.

use std::fmt;
use std::path::{Path, PathBuf};

use std::io::Read;

use alfred_model::ClusterSnapshot;
use alfred_model::Timestamp;
use alfred_observe::ClusterObjects;
use alfred_observe::stream::{Document, ReadError, read_document_digesting};
use alfred_observe::{Observation, ObserveSettings, PodDigest};

/// What the inputs held.
#[derive(Debug)]
pub enum Inputs {
    /// Kubernetes objects, to be observed into a snapshot.
    Objects(Box<ReadObjects>),
    /// A ready-made alfred snapshot (`observedAt`, `nodes`, … at the top level).
    Snapshot(Box<ClusterSnapshot>),
}

/// The Kubernetes objects of the inputs, the Pods already digested into their snapshot
/// records: a dump's Pods are most of its size, and their typed objects several times the
/// records, so they are not kept until the snapshot is built.
#[derive(Debug, Default)]
pub struct ReadObjects {
    /// Every object but the Pods (`objects.pods` is empty).
    pub objects: ClusterObjects,
    /// The Pods, in the order read.
    pub pods: PodDigest,
}

impl ReadObjects {
    /// The snapshot at `now`: what [`alfred_observe::observe`] gives for the same objects.
    pub fn observe(self, settings: &ObserveSettings, now: Timestamp) -> Observation {
        alfred_observe::observe_digested(
            &self.objects,
            &self.objects.nodes,
            self.pods,
            settings,
            now,
        )
    }

    fn extend(&mut self, mut part: ClusterObjects) {
        for pod in part.pods.drain(..) {
            self.pods.add(&pod);
        }
        self.objects.extend(part);
    }
}

/// A replay input that could not be read.
#[derive(Debug)]
pub struct InputError {
    /// The file at fault.
    pub path: PathBuf,
    /// What is wrong (names the object and field where known).
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for InputError {}

fn err(path: &Path, message: impl Into<String>) -> InputError {
    InputError {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Expands directories (their `*.json`, `*.yaml`, `*.yml` files, sorted by name, not
/// recursively) and keeps files as given.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, InputError> {
    let mut files = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|e| err(path, format!("cannot read: {e}")))?;
        if meta.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| err(path, format!("cannot list directory: {e}")))?
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| {
                    p.is_file()
                        && matches!(
                            p.extension().and_then(|e| e.to_str()),
                            Some("json" | "yaml" | "yml")
                        )
                })
                .collect();
            found.sort();
            if found.is_empty() {
                return Err(err(path, "directory holds no .json, .yaml or .yml file"));
            }
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    if files.is_empty() {
        return Err(err(Path::new("-"), "no input given"));
    }
    Ok(files)
}

/// Whether a JSON text is an alfred snapshot rather than Kubernetes objects.
fn looks_like_snapshot(value: &serde_json::Value) -> bool {
    value
        .as_object()
        .is_some_and(|o| o.contains_key("observedAt") && !o.contains_key("kind"))
}

/// Reads every input file. A snapshot must come alone; objects from several files merge.
///
/// A JSON file is read through a buffer and its List items are typed one at a time, so
/// neither the whole text nor a `serde_json::Value` tree of it is ever held, and each Pod is
/// digested into its snapshot record as it is read: peak memory is the records and the other
/// typed objects plus one buffer and one item. (A YAML file is parsed whole.)
pub fn load(paths: &[PathBuf]) -> Result<Inputs, InputError> {
    let files = expand(paths)?;
    let mut objects = ReadObjects::default();
    let mut snapshot: Option<(PathBuf, ClusterSnapshot)> = None;
    for file in &files {
        let cannot_read = |e: std::io::Error| err(file, format!("cannot read: {e}"));
        let handle = std::fs::File::open(file).map_err(cannot_read)?;
        let mut reader = std::io::BufReader::with_capacity(1 << 20, handle);
        if !matches!(
            first_byte(&mut reader).map_err(cannot_read)?,
            Some(b'{' | b'[')
        ) {
            let mut text = String::new();
            reader.read_to_string(&mut text).map_err(cannot_read)?;
            let part =
                ClusterObjects::from_documents(&text).map_err(|e| err(file, e.to_string()))?;
            objects.extend(part);
            continue;
        }
        let malformed = |e: serde_json::Error| err(file, format!("malformed JSON: {e}"));
        let mut de = serde_json::Deserializer::from_reader(reader);
        let document =
            read_document_digesting(&mut de, &mut objects.pods).map_err(|e| match e {
                ReadError::Syntax(e) => malformed(e),
                ReadError::Object(e) => err(file, e.to_string()),
            })?;
        de.end().map_err(malformed)?;
        let value = match document {
            Document::Objects(part) => {
                objects.extend(part);
                continue;
            }
            Document::Other(value) => value,
        };
        if looks_like_snapshot(&value) {
            let mut snap: ClusterSnapshot = serde_path_to_error::deserialize(&value)
                .map_err(|e| err(file, snapshot_error(&value, e)))?;
            snap.normalize();
            if snapshot.is_some() || !files.len().eq(&1) {
                return Err(err(file, "an alfred snapshot must be the only input"));
            }
            snapshot = Some((file.clone(), snap));
            continue;
        }
        let mut part = ClusterObjects::default();
        part.add_value(value)
            .map_err(|e| err(file, e.to_string()))?;
        objects.extend(part);
    }
    Ok(match snapshot {
        Some((_, s)) => Inputs::Snapshot(Box::new(s)),
        None => Inputs::Objects(Box::new(objects)),
    })
}

/// `alfred snapshot: <object>: field <path>: <problem>`, the object named by the `name` (and
/// `namespace`) of the list element the path goes through, when it has one.
fn snapshot_error(
    value: &serde_json::Value,
    e: serde_path_to_error::Error<serde_json::Error>,
) -> String {
    use serde_path_to_error::Segment;
    let path = e.path().to_string();
    let mut segments = e.path().iter();
    let object = match (segments.next(), segments.next()) {
        (Some(Segment::Map { key }), Some(Segment::Seq { index })) => {
            let item = &value[key.as_str()][*index];
            let text = |k: &str| {
                item.get(k)
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("")
            };
            let who = match (text("namespace"), text("name")) {
                (_, "") => String::new(),
                ("", name) => format!(" {}", clip(name, 60)),
                (ns, name) => format!(" {}/{}", clip(ns, 30), clip(name, 60)),
            };
            format!("{}[{index}]{who}: ", clip(key, 30))
        }
        _ => String::new(),
    };
    let field = if path == "." {
        String::new()
    } else {
        format!("field {}: ", clip(&path, 60))
    };
    let problem = serde_problem(&e.into_inner().to_string());
    // Each part is cut on its own so a long name cannot push the problem out; the whole is
    // cut last, leaving room for the file name in front of it.
    clip(
        &format!("alfred snapshot: {object}{field}{}", clip(&problem, 150)),
        240,
    )
}

/// serde's refusal of a member or variant name, rephrased to fit one line: its "unknown
/// field `k`, expected one of `a`, `b`, …" lists every name the type has (a snapshot's
/// node has dozens), so the unknown key is kept and the list is cut after a few names,
/// saying how many it left out. Any other message is kept as it is.
fn serde_problem(message: &str) -> String {
    const LISTED: usize = 3;
    let Some((what, rest)) = ["unknown field `", "unknown variant `"]
        .iter()
        .find_map(|prefix| Some((&prefix[..prefix.len() - 2], message.strip_prefix(prefix)?)))
    else {
        return message.to_owned();
    };
    let Some((key, expected)) = rest.rsplit_once("`, expected ") else {
        return message.to_owned();
    };
    let key = clip(key, 40);
    let names: Vec<&str> = expected
        .trim_start_matches("one of ")
        .split(", ")
        .flat_map(|part| part.split(" or "))
        .filter(|name| !name.is_empty())
        .collect();
    if names.len() <= LISTED {
        return format!("{what} `{key}`, expected {expected}");
    }
    format!(
        "{what} `{key}`, expected one of {}, … ({} more)",
        names[..LISTED].join(", "),
        names.len() - LISTED
    )
}

/// Text inside an error line, on one line and at most `max` characters.
fn clip(text: &str, max: usize) -> String {
    alfred_sim::clip::clip(text, max)
}

/// The first byte that is not ASCII whitespace, without consuming it (whitespace before it may
/// be consumed, which neither JSON nor a YAML document's meaning depends on at that length).
fn first_byte(reader: &mut impl std::io::BufRead) -> std::io::Result<Option<u8>> {
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(None);
        }
        if let Some(&b) = buf.iter().find(|b| !b.is_ascii_whitespace()) {
            return Ok(Some(b));
        }
        let n = buf.len();
        reader.consume(n);
    }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, synced,
/// then renamed over the target, so a crash leaves the old file or the new one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "state".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test's own scratch folder, removed when the test ends.
    struct TempDir(PathBuf);

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    impl std::ops::Deref for TempDir {
        type Target = PathBuf;
        fn deref(&self) -> &PathBuf {
            &self.0
        }
    }

    fn temp_dir(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("alfred-inputs-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }

    #[test]
    fn malformed_json_names_the_file() {
        let d = temp_dir("malformed");
        let f = d.join("bad.json");
        std::fs::write(&f, "{\"kind\": \"List\", ").unwrap();
        let e = load(std::slice::from_ref(&f)).unwrap_err();
        assert_eq!(e.path, f);
        assert!(e.to_string().contains("malformed JSON"), "{e}");
    }

    #[test]
    fn directories_expand_to_sorted_manifests() {
        let d = temp_dir("expand");
        std::fs::write(d.join("b.yaml"), "").unwrap();
        std::fs::write(d.join("a.json"), "{}").unwrap();
        std::fs::write(d.join("notes.txt"), "x").unwrap();
        let files = expand(std::slice::from_ref(&*d)).unwrap();
        let names: Vec<_> = files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.json", "b.yaml"]);
    }

    #[test]
    fn snapshot_json_is_recognised() {
        let d = temp_dir("snap");
        let f = d.join("snap.json");
        std::fs::write(&f, r#"{"observedAt":"2026-11-29T08:00:00Z","nodes":[]}"#).unwrap();
        assert!(matches!(
            load(std::slice::from_ref(&f)).unwrap(),
            Inputs::Snapshot(_)
        ));
    }

    /// The loader's error for a snapshot file holding `text`.
    fn snapshot_refusal(tag: &str, text: &str) -> String {
        let d = temp_dir(tag);
        let f = d.join("snap.json");
        std::fs::write(&f, text).unwrap();
        load(std::slice::from_ref(&f)).unwrap_err().to_string()
    }

    #[test]
    fn an_unknown_snapshot_field_is_named_and_the_expected_list_cut() {
        let e = snapshot_refusal(
            "unknown-field",
            r#"{"observedAt":"2026-11-29T08:00:00Z","nodes":[{"name":"gpu-1","gpuz":8}]}"#,
        );
        assert!(e.contains("nodes[0] gpu-1: field nodes[0].gpuz: "), "{e}");
        assert!(e.contains("unknown field `gpuz`, expected one of `"), "{e}");
        assert!(e.contains(" more)"), "{e}");
        assert!(e.chars().count() <= crate::MAX_ERROR_LINE, "{e}");
    }

    #[test]
    fn long_names_and_keys_keep_a_snapshot_error_on_one_short_line() {
        let long = "k".repeat(2000);
        let e = snapshot_refusal(
            "long-key",
            &format!(
                r#"{{"observedAt":"2026-11-29T08:00:00Z","pods":[{{"namespace":"{long}","name":"{long}","{long}":1}}]}}"#
            ),
        );
        assert!(e.contains("pods[0] kkk"), "{e}");
        assert!(e.contains("unknown field `kkk"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        assert!(
            e.chars().count() <= crate::MAX_ERROR_LINE,
            "{} chars: {e}",
            e.chars().count()
        );
    }

    #[test]
    fn serde_refusals_with_few_names_are_kept_whole() {
        assert_eq!(
            serde_problem("unknown variant `Up`, expected `Ready` or `NotReady`"),
            "unknown variant `Up`, expected `Ready` or `NotReady`"
        );
        assert_eq!(
            serde_problem("invalid type: null, expected a boolean"),
            "invalid type: null, expected a boolean"
        );
        assert_eq!(
            serde_problem("unknown field `x`, expected one of `a`, `b`, `c`, `d`, `e`"),
            "unknown field `x`, expected one of `a`, `b`, `c`, … (2 more)"
        );
    }

    /// The Pods digested while reading give the snapshot `observe` gives on the objects read
    /// whole: every cluster fixture, as JSON, and as YAML split over two files.
    #[test]
    fn replay_reading_gives_the_snapshot_of_the_objects_read_whole() {
        let now = alfred_model::Timestamp::parse_rfc3339("2026-11-29T08:00:00Z").unwrap();
        let settings = ObserveSettings::default();
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/clusters");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&fixtures)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        assert!(files.len() >= 5, "{files:?}");
        let d = temp_dir("digest");
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            let whole = ClusterObjects::from_documents(&text).unwrap();
            assert!(!whole.pods.is_empty(), "{}", file.display());
            let expected = alfred_observe::observe(&whole, &settings, now);

            let Inputs::Objects(read) = load(std::slice::from_ref(file)).unwrap() else {
                panic!("objects")
            };
            assert!(read.objects.pods.is_empty());
            assert_eq!(read.pods.len(), whole.pods.len());
            assert_eq!(read.observe(&settings, now), expected, "{}", file.display());

            // The same objects as YAML documents in two files: nodes, then everything else.
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            let items = value["items"].as_array().unwrap();
            let (nodes, rest): (Vec<_>, Vec<_>) = items.iter().partition(|i| i["kind"] == "Node");
            let a = d.join("a.yaml");
            let b = d.join("b.yaml");
            let list = |items: Vec<&serde_json::Value>| {
                serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()
            };
            std::fs::write(&a, format!("# nodes\n{}", list(nodes))).unwrap();
            std::fs::write(&b, format!("# the rest\n{}", list(rest))).unwrap();
            let Inputs::Objects(read) = load(&[a, b]).unwrap() else {
                panic!("objects")
            };
            assert_eq!(
                read.observe(&settings, now),
                expected,
                "{} as YAML",
                file.display()
            );
        }
    }

    #[test]
    fn atomic_write_replaces_the_file() {
        let d = temp_dir("atomic");
        let f = d.join("state.json");
        write_atomically(&f, b"one").unwrap();
        write_atomically(&f, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "two");
        assert_eq!(std::fs::read_dir(&*d).unwrap().count(), 1);
    }
}
