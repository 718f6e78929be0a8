//! InferenceReplica per-Instance status rows: DenseV1 (`status.instanceStatuses`) and
//! ColumnarV2 (`status.instanceStatusColumns`), docs/design-snapshot.md#workloads.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// Alfred's bound on rows per InferenceReplica.
pub const MAX_ROWS: usize = 10_000;

const PHASES: [&str; 8] = [
    "Pending",
    "Creating",
    "Ready",
    "Updating",
    "Restarting",
    "Migrating",
    "Failed",
    "Deleting",
];

/// One decoded per-Instance row.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Row {
    /// `index`.
    pub index: i64,
    /// `incarnation`.
    pub incarnation: i64,
    /// `phase`.
    pub phase: String,
    /// `runningRevision`.
    pub running_revision: String,
    /// `targetRevision`.
    pub target_revision: String,
    /// `podCount`.
    pub pod_count: i64,
    /// `servingPodCount`.
    pub serving_pod_count: i64,
    /// `availablePodCount`.
    pub available_pod_count: i64,
    /// `admitted`.
    pub admitted: bool,
    /// `activeOrdinal`.
    pub active_ordinal: i64,
    /// `operation.type`, when an operation is in flight.
    pub operation: Option<String>,
}

/// Decodes the rows of an IR `status` in whichever encoding it uses, then checks them
/// (docs/design-snapshot.md#workloads, the status rows). The error names the field and the
/// value.
pub fn decode(status: &Value) -> Result<Vec<Row>, String> {
    let encoding = status.get("instanceStatusEncoding");
    let dense = status.get("instanceStatuses").filter(|v| !v.is_null());
    let columns = status.get("instanceStatusColumns").filter(|v| !v.is_null());
    let rows = match encoding {
        None | Some(Value::Null) => {
            if columns.is_some() {
                return Err(
                    "status.instanceStatusColumns is set without instanceStatusEncoding: ColumnarV2"
                        .into(),
                );
            }
            decode_dense(dense)?
        }
        Some(Value::String(s)) if s.is_empty() => {
            if columns.is_some() {
                return Err("status.instanceStatusColumns is set without instanceStatusEncoding: ColumnarV2".into());
            }
            decode_dense(dense)?
        }
        Some(Value::String(s)) if s == "ColumnarV2" => {
            if dense.is_some() {
                return Err("status.instanceStatuses must be absent with instanceStatusEncoding: ColumnarV2".into());
            }
            let cols = columns.ok_or(
                "status.instanceStatusColumns is missing with instanceStatusEncoding: ColumnarV2",
            )?;
            decode_columnar(cols)?
        }
        Some(other) => {
            return Err(format!(
                "status.instanceStatusEncoding: unknown encoding {other}"
            ));
        }
    };
    check_rows(&rows)?;
    Ok(rows)
}

fn check_rows(rows: &[Row]) -> Result<(), String> {
    if rows.len() > MAX_ROWS {
        return Err(format!(
            "{} status rows exceed the bound of {MAX_ROWS}",
            rows.len()
        ));
    }
    let mut seen = BTreeSet::new();
    for r in rows {
        let at = format!("status row index {}", r.index);
        if r.index < 0 {
            return Err(format!("{at}: negative index"));
        }
        if !seen.insert(r.index) {
            return Err(format!("{at}: duplicate index"));
        }
        if !PHASES.contains(&r.phase.as_str()) {
            return Err(format!("{at}: unknown phase {:?}", r.phase));
        }
        if r.incarnation < 0 {
            return Err(format!("{at}: negative incarnation {}", r.incarnation));
        }
        for (what, v) in [
            ("podCount", r.pod_count),
            ("servingPodCount", r.serving_pod_count),
            ("availablePodCount", r.available_pod_count),
        ] {
            if v < 0 {
                return Err(format!("{at}: negative {what} {v}"));
            }
        }
        if !(0..=1).contains(&r.active_ordinal) {
            return Err(format!(
                "{at}: activeOrdinal {} is not 0 or 1",
                r.active_ordinal
            ));
        }
    }
    Ok(())
}

fn int_field(obj: &Value, key: &str, at: &str) -> Result<i64, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(0),
        Some(v) => v
            .as_i64()
            .ok_or_else(|| format!("{at}.{key}: {v} is not an integer")),
    }
}

fn str_field(obj: &Value, key: &str, at: &str) -> Result<String, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v) => Err(format!("{at}.{key}: {v} is not a string")),
    }
}

fn operation_type(v: Option<&Value>, at: &str) -> Result<Option<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(op @ Value::Object(_)) => {
            let t = str_field(op, "type", &format!("{at}.operation"))?;
            Ok(Some(if t.is_empty() {
                "Unknown".to_owned()
            } else {
                t
            }))
        }
        Some(other) => Err(format!("{at}.operation: {other} is not an object")),
    }
}

fn decode_dense(list: Option<&Value>) -> Result<Vec<Row>, String> {
    let items = match list {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(format!("status.instanceStatuses: {other} is not an array")),
    };
    if items.len() > MAX_ROWS {
        return Err(format!(
            "{} status rows exceed the bound of {MAX_ROWS}",
            items.len()
        ));
    }
    let mut rows = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("status.instanceStatuses[{i}]");
        if !item.is_object() {
            return Err(format!("{at}: {item} is not an object"));
        }
        let index = match item.get("index") {
            Some(v) => v
                .as_i64()
                .ok_or_else(|| format!("{at}.index: {v} is not an integer"))?,
            None => return Err(format!("{at}.index: missing")),
        };
        let admitted = match item.get("admitted") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(v) => return Err(format!("{at}.admitted: {v} is not a boolean")),
        };
        rows.push(Row {
            index,
            incarnation: int_field(item, "incarnation", &at)?,
            phase: str_field(item, "phase", &at)?,
            running_revision: str_field(item, "runningRevision", &at)?,
            target_revision: str_field(item, "targetRevision", &at)?,
            pod_count: int_field(item, "podCount", &at)?,
            serving_pod_count: int_field(item, "servingPodCount", &at)?,
            available_pod_count: int_field(item, "availablePodCount", &at)?,
            admitted,
            active_ordinal: int_field(item, "activeOrdinal", &at)?,
            operation: operation_type(item.get("operation"), &at)?,
        });
    }
    Ok(rows)
}

/// Parses a canonical index set (`"0-1,3"`): ascending, disjoint, non-adjacent terms, no
/// leading zeros, ranges with `first < last`.
pub fn parse_index_set(text: &str) -> Result<Vec<i64>, String> {
    fn number(s: &str) -> Option<i64> {
        if s.is_empty()
            || !s.bytes().all(|b| b.is_ascii_digit())
            || (s.len() > 1 && s.starts_with('0'))
        {
            return None;
        }
        s.parse::<i64>().ok().filter(|v| *v <= i64::from(i32::MAX))
    }
    let bad = || format!("{text:?} is not a canonical index set");
    let mut out = Vec::new();
    let mut last: Option<i64> = None;
    for term in text.split(',') {
        let (a, b) = match term.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a).ok_or_else(bad)?, number(b).ok_or_else(bad)?);
                if a >= b {
                    return Err(bad());
                }
                (a, b)
            }
            None => {
                let a = number(term).ok_or_else(bad)?;
                (a, a)
            }
        };
        if let Some(l) = last
            && a <= l + 1
        {
            return Err(bad());
        }
        if out.len() as i64 + (b - a + 1) > MAX_ROWS as i64 {
            return Err(format!("{text:?} names more than {MAX_ROWS} rows"));
        }
        out.extend(a..=b);
        last = Some(b);
    }
    Ok(out)
}

fn index_set_field(cols: &Value, key: &str) -> Result<Option<Vec<i64>>, String> {
    match cols.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => parse_index_set(s)
            .map(Some)
            .map_err(|e| format!("status.instanceStatusColumns.{key}: {e}")),
        Some(v) => Err(format!(
            "status.instanceStatusColumns.{key}: {v} is not a string"
        )),
    }
}

/// Decodes a group list (`[{value, indexes}]`) into index → value, checking the ordering,
/// disjointness and membership rules. `value_ok` validates and converts one value.
fn groups<T: Clone>(
    cols: &Value,
    key: &str,
    members: &BTreeSet<i64>,
    required: bool,
    value_ok: impl Fn(&Value) -> Option<T>,
    less: impl Fn(&T, &T) -> bool,
) -> Result<BTreeMap<i64, T>, String> {
    let at = format!("status.instanceStatusColumns.{key}");
    let list = match cols.get(key) {
        None | Some(Value::Null) => {
            if required {
                return Err(format!("{at}: missing"));
            }
            return Ok(BTreeMap::new());
        }
        Some(Value::Array(l)) => l,
        Some(v) => return Err(format!("{at}: {v} is not an array")),
    };
    if list.is_empty() {
        return Err(format!("{at}: present but empty"));
    }
    let mut out = BTreeMap::new();
    let mut prev: Option<T> = None;
    for (i, g) in list.iter().enumerate() {
        let gat = format!("{at}[{i}]");
        let value = g.get("value").and_then(&value_ok).ok_or_else(|| {
            format!(
                "{gat}.value: {} is not allowed",
                g.get("value").unwrap_or(&Value::Null)
            )
        })?;
        if let Some(p) = &prev
            && !less(p, &value)
        {
            return Err(format!("{gat}.value: groups are not strictly ascending"));
        }
        let idx = match g.get("indexes") {
            Some(Value::String(s)) => {
                parse_index_set(s).map_err(|e| format!("{gat}.indexes: {e}"))?
            }
            other => {
                return Err(format!(
                    "{gat}.indexes: {} is not an index set",
                    other.unwrap_or(&Value::Null)
                ));
            }
        };
        for ix in idx {
            if !members.contains(&ix) {
                return Err(format!("{gat}.indexes: {ix} is not a member"));
            }
            if out.insert(ix, value.clone()).is_some() {
                return Err(format!("{gat}.indexes: {ix} is in two groups"));
            }
        }
        prev = Some(value);
    }
    Ok(out)
}

fn decode_columnar(cols: &Value) -> Result<Vec<Row>, String> {
    if !cols.is_object() {
        return Err(format!(
            "status.instanceStatusColumns: {cols} is not an object"
        ));
    }
    let member_list =
        index_set_field(cols, "members")?.ok_or("status.instanceStatusColumns.members: missing")?;
    let members: BTreeSet<i64> = member_list.iter().copied().collect();
    if let Some(order) = cols.get("rowOrder").filter(|v| !v.is_null()) {
        let at = "status.instanceStatusColumns.rowOrder";
        let order: Vec<i64> = order
            .as_array()
            .ok_or_else(|| format!("{at}: {order} is not an array"))?
            .iter()
            .map(|v| {
                v.as_i64()
                    .ok_or_else(|| format!("{at}: {v} is not an integer"))
            })
            .collect::<Result<_, _>>()?;
        let as_set: BTreeSet<i64> = order.iter().copied().collect();
        if as_set != members || order.len() != members.len() {
            return Err(format!("{at}: not a permutation of members"));
        }
        if order == member_list {
            return Err(format!(
                "{at}: ascending order must be expressed by absence"
            ));
        }
    }
    let non_empty_str = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    let str_less = |a: &String, b: &String| a.as_bytes() < b.as_bytes();
    let phases = groups(cols, "phases", &members, true, non_empty_str, str_less)?;
    if phases.len() != members.len() {
        return Err("status.instanceStatusColumns.phases: some member has no phase".into());
    }
    let running = groups(
        cols,
        "runningRevisions",
        &members,
        false,
        non_empty_str,
        str_less,
    )?;
    let target = groups(
        cols,
        "targetRevisions",
        &members,
        false,
        non_empty_str,
        str_less,
    )?;
    let int_less = |a: &i64, b: &i64| a < b;
    let incarnations = groups(
        cols,
        "incarnations",
        &members,
        false,
        |v| v.as_i64().filter(|x| *x != 0),
        int_less,
    )?;
    let count = |v: &Value| v.as_i64().filter(|x| (1..=i64::from(i32::MAX)).contains(x));
    let pods = groups(cols, "podCounts", &members, false, count, int_less)?;
    let serving = groups(cols, "servingPodCounts", &members, false, count, int_less)?;
    let available = groups(cols, "availablePodCounts", &members, false, count, int_less)?;
    let subset = |key: &str| -> Result<BTreeSet<i64>, String> {
        let set: BTreeSet<i64> = index_set_field(cols, key)?
            .unwrap_or_default()
            .into_iter()
            .collect();
        if let Some(x) = set.iter().find(|x| !members.contains(x)) {
            return Err(format!(
                "status.instanceStatusColumns.{key}: {x} is not a member"
            ));
        }
        Ok(set)
    };
    let admitted = subset("admitted")?;
    let ordinal_one = subset("activeOrdinalOne")?;

    let mut operations: BTreeMap<i64, Option<String>> = BTreeMap::new();
    if let Some(entries) = cols.get("entries").filter(|v| !v.is_null()) {
        let at = "status.instanceStatusColumns.entries";
        let list = entries
            .as_array()
            .ok_or_else(|| format!("{at}: {entries} is not an array"))?;
        if list.is_empty() {
            return Err(format!("{at}: present but empty"));
        }
        let mut prev: Option<i64> = None;
        for (i, e) in list.iter().enumerate() {
            let eat = format!("{at}[{i}]");
            let ix = e
                .get("index")
                .and_then(Value::as_i64)
                .ok_or_else(|| format!("{eat}.index: missing or not an integer"))?;
            if !members.contains(&ix) {
                return Err(format!("{eat}.index: {ix} is not a member"));
            }
            if prev.is_some_and(|p| p >= ix) {
                return Err(format!("{eat}.index: entries are not strictly ascending"));
            }
            prev = Some(ix);
            let records = [
                "conditions",
                "readySince",
                "operation",
                "lastFailure",
                "announced",
            ];
            if !records
                .iter()
                .any(|k| e.get(*k).is_some_and(|v| !v.is_null()))
            {
                return Err(format!("{eat}: an entry must hold at least one record"));
            }
            operations.insert(ix, operation_type(e.get("operation"), &eat)?);
        }
    }

    Ok(member_list
        .iter()
        .map(|ix| Row {
            index: *ix,
            incarnation: incarnations.get(ix).copied().unwrap_or(0),
            phase: phases.get(ix).cloned().unwrap_or_default(),
            running_revision: running.get(ix).cloned().unwrap_or_default(),
            target_revision: target.get(ix).cloned().unwrap_or_default(),
            pod_count: pods.get(ix).copied().unwrap_or(0),
            serving_pod_count: serving.get(ix).copied().unwrap_or(0),
            available_pod_count: available.get(ix).copied().unwrap_or(0),
            admitted: admitted.contains(ix),
            active_ordinal: i64::from(ordinal_one.contains(ix)),
            operation: operations.get(ix).cloned().flatten(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_sets_are_canonical() {
        assert_eq!(parse_index_set("0-1,3").unwrap(), vec![0, 1, 3]);
        assert_eq!(parse_index_set("5").unwrap(), vec![5]);
        for bad in [
            "0,1,3", "1-1", "3,0", "", "01", " 1", "+1", "1,", "2-1", "0-2,3",
        ] {
            assert!(parse_index_set(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn dense_and_columnar_agree() {
        let columnar: Value = serde_json::json!({
            "instanceStatusEncoding": "ColumnarV2",
            "instanceStatusColumns": {
                "members": "0-1,3",
                "phases": [{"value": "Ready", "indexes": "0-1,3"}],
                "runningRevisions": [{"value": "chat-engine-5d8f9c7a", "indexes": "0-1,3"}],
                "incarnations": [{"value": 1, "indexes": "0,3"}, {"value": 2, "indexes": "1"}],
                "podCounts": [{"value": 1, "indexes": "0-1,3"}],
                "servingPodCounts": [{"value": 1, "indexes": "0-1,3"}],
                "availablePodCounts": [{"value": 1, "indexes": "0-1,3"}],
                "admitted": "0-1,3",
                "activeOrdinalOne": "0",
                "entries": [{"index": 0, "readySince": "2026-09-26T03:12:44Z"}]
            }
        });
        let rows = decode(&columnar).unwrap();
        let row = |index, incarnation, active_ordinal| Row {
            index,
            incarnation,
            phase: "Ready".into(),
            running_revision: "chat-engine-5d8f9c7a".into(),
            target_revision: String::new(),
            pod_count: 1,
            serving_pod_count: 1,
            available_pod_count: 1,
            admitted: true,
            active_ordinal,
            operation: None,
        };
        let want = vec![row(0, 1, 1), row(1, 2, 0), row(3, 1, 0)];
        assert_eq!(rows, want);
        let dense = serde_json::json!({"instanceStatuses": [
            {"index": 0, "incarnation": 1, "phase": "Ready", "runningRevision": "chat-engine-5d8f9c7a",
             "podCount": 1, "servingPodCount": 1, "availablePodCount": 1, "admitted": true, "activeOrdinal": 1},
            {"index": 1, "incarnation": 2, "phase": "Ready", "runningRevision": "chat-engine-5d8f9c7a",
             "podCount": 1, "servingPodCount": 1, "availablePodCount": 1, "admitted": true},
            {"index": 3, "incarnation": 1, "phase": "Ready", "runningRevision": "chat-engine-5d8f9c7a",
             "podCount": 1, "servingPodCount": 1, "availablePodCount": 1, "admitted": true}
        ]});
        assert_eq!(decode(&dense).unwrap(), want);
    }

    #[test]
    fn malformed_rows_and_columns_are_rejected() {
        let cases = [
            serde_json::json!({"instanceStatuses": [{"index": 0, "phase": "Sleeping"}]}),
            serde_json::json!({"instanceStatuses": [{"index": 0, "phase": "Ready"}, {"index": 0, "phase": "Ready"}]}),
            serde_json::json!({"instanceStatuses": [{"index": -1, "phase": "Ready"}]}),
            serde_json::json!({"instanceStatuses": [{"index": 0, "phase": "Ready", "activeOrdinal": 2}]}),
            serde_json::json!({"instanceStatuses": [{"index": 0, "phase": "Ready", "podCount": -1}]}),
            serde_json::json!({"instanceStatuses": [{"index": 0, "phase": "Ready"}],
                               "instanceStatusColumns": {"members": "0"}}),
            serde_json::json!({"instanceStatusEncoding": "ColumnarV2"}),
            serde_json::json!({"instanceStatusEncoding": "ColumnarV3", "instanceStatusColumns": {}}),
            serde_json::json!({"instanceStatusEncoding": "ColumnarV2", "instanceStatusColumns": {
                "members": "0-1", "phases": [{"value": "Ready", "indexes": "0"}]}}),
            serde_json::json!({"instanceStatusEncoding": "ColumnarV2", "instanceStatusColumns": {
                "members": "0-1", "phases": [{"value": "Ready", "indexes": "0-1"}], "podCounts": []}}),
            serde_json::json!({"instanceStatusEncoding": "ColumnarV2", "instanceStatusColumns": {
                "members": "0-1", "phases": [{"value": "Ready", "indexes": "1"}, {"value": "Creating", "indexes": "0"}]}}),
        ];
        for c in cases {
            assert!(decode(&c).is_err(), "{c}");
        }
    }
}
