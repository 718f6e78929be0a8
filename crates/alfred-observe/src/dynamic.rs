//! Reading OME and PodGroup objects field by field from JSON, reporting what does not fit.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::Problems;

/// Identity and metadata of a dynamic object.
#[derive(Debug, Clone, Default)]
pub(crate) struct Meta {
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    pub generation: i64,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// `ownerReferences` with `controller: true`: (apiVersion, kind, name, uid).
    pub controllers: Vec<(String, String, String, String)>,
}

/// A view of one dynamic object that reports type errors as problems.
pub(crate) struct Dyn<'a> {
    pub meta: Meta,
    pub value: &'a Value,
}

impl<'a> Dyn<'a> {
    pub(crate) fn new(kind: &'static str, value: &'a Value, problems: &mut Problems) -> Self {
        let m = value.get("metadata");
        let s = |k: &str| {
            m.and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let mut meta = Meta {
            kind,
            namespace: s("namespace"),
            name: s("name"),
            uid: s("uid"),
            resource_version: s("resourceVersion"),
            ..Meta::default()
        };
        let mut this = Dyn {
            meta: Meta::default(),
            value,
        };
        meta.generation = match m.and_then(|m| m.get("generation")) {
            None | Some(Value::Null) => 0,
            Some(v) => v.as_i64().unwrap_or_else(|| {
                problems.add(
                    kind,
                    &meta.namespace,
                    &meta.name,
                    "metadata.generation",
                    format!("{v} is not an integer; taken as 0"),
                );
                0
            }),
        };
        this.meta = meta;
        this.meta.labels = this.string_map("metadata.labels", problems);
        this.meta.annotations = this.string_map("metadata.annotations", problems);
        if let Some(refs) = this.array("metadata.ownerReferences", problems) {
            for (i, r) in refs.iter().enumerate() {
                if r.get("controller").and_then(Value::as_bool) != Some(true) {
                    continue;
                }
                let f = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                if !r.is_object() {
                    this.problem(
                        problems,
                        &format!("metadata.ownerReferences[{i}]"),
                        format!("{r} is not an object"),
                    );
                    continue;
                }
                this.meta
                    .controllers
                    .push((f("apiVersion"), f("kind"), f("name"), f("uid")));
            }
        }
        this
    }

    pub(crate) fn problem(&self, problems: &mut Problems, field: &str, message: impl Into<String>) {
        problems.add(
            self.meta.kind,
            &self.meta.namespace,
            &self.meta.name,
            field,
            message,
        );
    }

    /// The value at a dotted path (`spec.engine.leader`); `None` when absent or null.
    pub(crate) fn get(&self, path: &str) -> Option<&'a Value> {
        let mut v = self.value;
        for part in path.split('.') {
            v = v.get(part)?;
        }
        (!v.is_null()).then_some(v)
    }

    pub(crate) fn str(&self, path: &str, problems: &mut Problems) -> Option<&'a str> {
        match self.get(path)? {
            Value::String(s) => Some(s.as_str()),
            other => {
                self.problem(problems, path, format!("{other} is not a string; ignored"));
                None
            }
        }
    }

    pub(crate) fn int(&self, path: &str, problems: &mut Problems) -> Option<i64> {
        let v = self.get(path)?;
        match v.as_i64() {
            Some(i) => Some(i),
            None => {
                self.problem(problems, path, format!("{v} is not an integer; ignored"));
                None
            }
        }
    }

    pub(crate) fn bool(&self, path: &str, problems: &mut Problems) -> Option<bool> {
        match self.get(path)? {
            Value::Bool(b) => Some(*b),
            other => {
                self.problem(problems, path, format!("{other} is not a boolean; ignored"));
                None
            }
        }
    }

    pub(crate) fn object(&self, path: &str, problems: &mut Problems) -> Option<&'a Value> {
        let v = self.get(path)?;
        if v.is_object() {
            Some(v)
        } else {
            self.problem(problems, path, format!("{v} is not an object; ignored"));
            None
        }
    }

    pub(crate) fn array(&self, path: &str, problems: &mut Problems) -> Option<&'a Vec<Value>> {
        match self.get(path)? {
            Value::Array(a) => Some(a),
            other => {
                self.problem(problems, path, format!("{other} is not an array; ignored"));
                None
            }
        }
    }

    pub(crate) fn string_map(
        &self,
        path: &str,
        problems: &mut Problems,
    ) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let Some(obj) = self.object(path, problems) else {
            return out;
        };
        for (k, v) in obj.as_object().into_iter().flatten() {
            match v {
                Value::String(s) => {
                    out.insert(k.clone(), s.clone());
                }
                other => self.problem(
                    problems,
                    &format!("{path}[{k}]"),
                    format!("{other} is not a string; ignored"),
                ),
            }
        }
        out
    }
}
