//! `plumb replay DIR` on a fleet folder: the hub's decisions, effects and decision log over a
//! recorded timeline, offline and deterministic. The folder holds the hub's copy of the
//! policy (`policy.yaml` or `policy.json`) and `fleet.json`: per step time, what each member
//! reported (a report, or a recorded member folder turned into one by the member report),
//! and optionally the intents and route weights read. The replay runs one [`Hub`] over the
//! steps and carries its writes out itself (intents to members, weights to the routes), so
//! the next step reads what the hub wrote, unless the timeline overrides it. Layout:
//! fixtures/plumb/README.md#a-fleet-folder.
//!
//! Bad input exits 2 with one line naming the file and the field.

mod timeline;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use plumb_core::hub::{DecisionLine, Effect, Hub, MemberInput, OutcomeLine, StepInput};
use plumb_model::{AdaptivePolicy, Report, Timestamp};
use serde_json::{Map, Value};

use crate::objects::InputError;
use crate::replay::{Format, Recorded};
pub use timeline::{FLEET_FILE, Step, Timeline};

/// Whether `dir` holds a fleet (its `fleet.json`) rather than one recorded member.
pub fn is_fleet(dir: &Path) -> bool {
    dir.join(FLEET_FILE).is_file()
}

/// A fleet folder, read and checked.
#[derive(Debug, Clone)]
pub struct FleetInput {
    /// The hub's copy of the policy.
    pub policy: AdaptivePolicy,
    /// The timeline.
    pub timeline: Timeline,
    /// Recorded member folders the timeline names, read, by their relative path.
    pub recorded: BTreeMap<String, Recorded>,
}

impl FleetInput {
    /// Reads `dir`: the policy, `fleet.json` and every recorded member folder it names.
    pub fn read(dir: &Path) -> Result<FleetInput, InputError> {
        let policy = timeline::read_policy(dir)?;
        let text = read_text(&dir.join(FLEET_FILE))?;
        let timeline = Timeline::parse(&text, &policy)
            .map_err(|message| InputError {
                path: dir.join(FLEET_FILE),
                message,
            })?
            .read_from(dir.join(FLEET_FILE));
        let mut recorded = BTreeMap::new();
        for step in &timeline.steps {
            for folder in step.members.values() {
                if !recorded.contains_key(folder) {
                    recorded.insert(folder.clone(), Recorded::read(&dir.join(folder))?);
                }
            }
        }
        Ok(FleetInput {
            policy,
            timeline,
            recorded,
        })
    }
}

/// Reads a file as UTF-8 text, naming it on failure.
pub(crate) fn read_text(path: &Path) -> Result<String, InputError> {
    std::fs::read_to_string(path).map_err(|e| InputError {
        path: path.to_path_buf(),
        message: format!("cannot read: {e}"),
    })
}

/// One hub step of the replay: what it decided, its outcome lines and its effects.
#[derive(Debug, Clone)]
pub struct ReplayedStep {
    /// The step's time.
    pub time: Timestamp,
    /// The decision line, if the step changed something.
    pub decision: Option<DecisionLine>,
    /// Outcome lines due at this step.
    pub outcomes: Vec<OutcomeLine>,
    /// The effects, in order (not carried out when the timeline makes the writes fail).
    pub effects: Vec<Effect>,
}

/// Runs the hub over the timeline.
pub fn replay(input: &FleetInput) -> Result<Vec<ReplayedStep>, InputError> {
    let spec = &input.policy.spec;
    let key = input.policy.key();
    let namespace = input.policy.metadata.namespace.as_deref();
    let timeline = &input.timeline;
    let mut hub = Hub::new(
        key.clone(),
        timeline.hub.clone(),
        timeline.fleet.clone().unwrap_or_default(),
    );
    let mut members: BTreeMap<String, MemberInput> = plumb_core::hub::HubConfig::from_spec(spec)
        .clusters
        .iter()
        .map(|c| {
            let input = MemberInput {
                expected_hash: plumb_model::hash::member_spec_hash(spec, namespace, &c.name),
                ..MemberInput::default()
            };
            (c.name.clone(), input)
        })
        .collect();
    let mut reports: BTreeMap<String, Option<Map<String, Value>>> = BTreeMap::new();
    let mut weights = timeline.initial_weights(spec);
    let mut out = Vec::new();
    let mut sequence = 0u32;
    for (index, step) in timeline.steps.iter().enumerate() {
        for now in step.times() {
            sequence += 1;
            read_step(input, index, step, now, &key, &mut reports, &mut members)?;
            if let Some(w) = &step.weights {
                weights = Some(w.clone());
            }
            let suffix = format!("{sequence:08x}");
            let mut result = hub.step(&StepInput {
                spec,
                members: &members,
                weights: weights.as_ref(),
                now,
                id_suffix: &suffix,
            });
            match &step.write_fails {
                Some(error) if result.effects.iter().any(is_write) => {
                    hub.write_failed(&mut result, error);
                }
                _ => carry_out(&result.effects, &mut members, &mut weights),
            }
            out.push(ReplayedStep {
                time: now,
                decision: result.decision,
                outcomes: result.outcomes,
                effects: result.effects,
            });
        }
    }
    Ok(out)
}

fn is_write(effect: &Effect) -> bool {
    matches!(
        effect,
        Effect::WriteIntent { .. } | Effect::WriteWeights { .. }
    )
}

/// Applies the step's recorded inputs: intents read, then each member's report.
fn read_step(
    input: &FleetInput,
    index: usize,
    step: &Step,
    now: Timestamp,
    key: &str,
    reports: &mut BTreeMap<String, Option<Map<String, Value>>>,
    members: &mut BTreeMap<String, MemberInput>,
) -> Result<(), InputError> {
    for (name, intent) in &step.intents {
        if let Some(m) = members.get_mut(name) {
            m.intent.clone_from(intent);
        }
    }
    let fleet_file = input.timeline.dir_file();
    for (name, member) in members.iter_mut() {
        let report = if let Some(folder) = step.members.get(name) {
            let recorded = input.recorded.get(folder).ok_or_else(|| InputError {
                path: fleet_file.clone(),
                message: format!("steps[{index}].members.{name}: {folder} was not read"),
            })?;
            let replayed = crate::replay::replay(recorded, name, now, Some(key))?;
            replayed
                .report
                .map(|r| {
                    serde_json::to_value(r)
                        .ok()
                        .and_then(|v| v.as_object().cloned())
                })
                .unwrap_or_default()
        } else {
            let previous = reports.get(name).cloned().flatten();
            match step.reports.get(name) {
                Some(None) => None,
                Some(Some(partial)) => {
                    let mut merged = previous.unwrap_or_default();
                    merged.extend(partial.clone());
                    if !partial.contains_key("time") {
                        merged.insert("time".into(), Value::String(now.to_rfc3339()));
                    }
                    Some(merged)
                }
                None if step.silent.contains(name) => previous,
                None => previous.map(|mut r| {
                    r.insert("time".into(), Value::String(now.to_rfc3339()));
                    r
                }),
            }
        };
        member.report =
            match &report {
                None => None,
                Some(object) => Some(decode_report(object, &member.expected_hash).map_err(
                    |e| InputError {
                        path: fleet_file.clone(),
                        message: format!("steps[{index}].reports.{name}.{e}"),
                    },
                )?),
            };
        reports.insert(name.clone(), report);
    }
    Ok(())
}

/// A report from its JSON object; `specHash` absent or `null` is the one the hub expects (a
/// member in sync). The error names the field.
fn decode_report(object: &Map<String, Value>, expected_hash: &str) -> Result<Report, String> {
    let mut object = object.clone();
    if object.get("specHash").is_none_or(Value::is_null) {
        object.insert("specHash".into(), Value::String(expected_hash.to_owned()));
    }
    serde_path_to_error::deserialize(Value::Object(object)).map_err(|e| {
        let path = e.path().to_string();
        format!("{path}: {}", crate::one_line(&e.into_inner().to_string()))
    })
}

/// Carries the hub's writes out: intents onto members, weights onto the routes.
fn carry_out(
    effects: &[Effect],
    members: &mut BTreeMap<String, MemberInput>,
    weights: &mut Option<BTreeMap<String, u32>>,
) {
    for effect in effects {
        match effect {
            Effect::WriteIntent {
                cluster, intent, ..
            } => {
                if let Some(m) = members.get_mut(cluster) {
                    m.intent.clone_from(intent);
                }
            }
            Effect::WriteWeights { weights: w } => *weights = Some(w.clone()),
            Effect::Event(_) | Effect::Metric(_) => {}
        }
    }
}

/// The decision log: each step's decision line, then its outcome lines, one JSON object a
/// line.
pub fn render_json(steps: &[ReplayedStep]) -> String {
    let mut out = String::new();
    for step in steps {
        if let Some(d) = &step.decision {
            out.push_str(&serde_json::to_string(d).unwrap_or_default());
            out.push('\n');
        }
        for o in &step.outcomes {
            out.push_str(&serde_json::to_string(o).unwrap_or_default());
            out.push('\n');
        }
    }
    out
}

/// A table: per step that decided something or wrote an outcome line, the decision (time,
/// id, phase, action, message, held, out of sync), its effects other than gauges, and the
/// outcome lines (checkpoint, time to ready, what followed).
pub fn render_table(steps: &[ReplayedStep]) -> String {
    let mut out = String::new();
    for step in steps {
        let time = step.time.to_rfc3339();
        let effects: Vec<String> = step.effects.iter().filter_map(effect_line).collect();
        if let Some(d) = &step.decision {
            let _ = writeln!(
                out,
                "{time}  {}  {:?}  {}  {}{}",
                d.decision_id,
                d.phase,
                d.action,
                if d.message.is_empty() {
                    "-"
                } else {
                    &d.message
                },
                lists(d)
            );
        } else if !effects.is_empty() {
            let _ = writeln!(out, "{time}  no decision");
        }
        for line in &effects {
            let _ = writeln!(out, "    {line}");
        }
        if let Some(error) = step.decision.as_ref().and_then(|d| d.error.as_ref()) {
            let _ = writeln!(out, "    not applied: {error}");
        }
        for o in &step.outcomes {
            let ready: Vec<String> = o
                .ready_after_seconds
                .iter()
                .map(|(c, s)| format!("{c} {s}s"))
                .collect();
            let _ = writeln!(
                out,
                "{time}  outcome {} +{}s{}  ready: {}  followed by: {}",
                o.decision_id,
                o.after_seconds,
                if o.final_ { " final" } else { "" },
                if ready.is_empty() {
                    "-".to_owned()
                } else {
                    ready.join(", ")
                },
                if o.followed_by.is_empty() {
                    "-".to_owned()
                } else {
                    o.followed_by.join(", ")
                },
            );
        }
    }
    out
}

fn lists(d: &DecisionLine) -> String {
    let mut s = String::new();
    if !d.held.is_empty() {
        let _ = write!(s, "  [held: {}]", d.held.join(", "));
    }
    if !d.out_of_sync.is_empty() {
        let _ = write!(s, "  [out of sync: {}]", d.out_of_sync.join(", "));
    }
    s
}

fn effect_line(effect: &Effect) -> Option<String> {
    match effect {
        Effect::WriteIntent {
            cluster,
            intent,
            renewal,
        } => Some(match intent {
            None => format!("intent {cluster}: cleared"),
            Some(i) => format!(
                "intent {cluster}: {} replicas, tier {}, added {}{}",
                i.replicas,
                i.tier.map_or_else(
                    || "-".to_owned(),
                    |t| serde_json::to_string(&t).unwrap_or_default()
                ),
                i.added,
                if *renewal { " (renewal)" } else { "" }
            ),
        }),
        Effect::WriteWeights { weights } => Some(format!(
            "weights: {}",
            weights
                .iter()
                .map(|(c, w)| format!("{c} {w}"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Effect::Event(e) => Some(format!("event {:?} {}: {}", e.type_, e.reason, e.message)),
        Effect::Metric(plumb_core::hub::Metric::TimeToReady { seconds }) => {
            Some(format!("time to ready: {seconds}s"))
        }
        Effect::Metric(_) => None,
    }
}

/// `plumb replay DIR` on a fleet folder: the text in `format`, or the one-line error.
pub fn run(dir: &Path, format: Format) -> Result<String, String> {
    let input = FleetInput::read(dir).map_err(|e| e.to_string())?;
    let steps = replay(&input).map_err(|e| e.to_string())?;
    Ok(match format {
        Format::Json => render_json(&steps),
        Format::Table => render_table(&steps),
    })
}
