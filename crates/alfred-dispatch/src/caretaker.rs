//! [`Caretaker`]: the one object an embedder keeps per leadership term.
//!
//! A pass needs more than its snapshot: the circuit breaker and report flags of the term
//! ([`Session`]), the node records the previous pass wrote (the seed of node-event
//! lifecycles), the requests whose write failed (`SubmissionUncertain` next pass), fresh
//! request UUIDs, the dispatch deadline and the durable state. Every driver used to carry
//! these between passes by hand; the caretaker carries them, so a driver only hands over
//! what it read, applies the effects it gets back in order, and reports each write's
//! outcome.
//!
//! The core draws no random numbers, so UUIDs come from a [`UuidSupply`] the driver
//! chooses: random in `alfred run`, derived from the inputs in `replay`, seeded in the
//! twin. A term must never reuse a UUID another term wrote, so a production supply is
//! random; [`DerivedUuids`] is for reproducible drivers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use alfred_model::config::{Config, RuntimeOptions};
use alfred_model::effect::Effect;
use alfred_model::record::NodeRecord;
use alfred_model::{ClusterSnapshot, Timestamp};
use sha2::{Digest, Sha256};

use crate::dispatch::JournalSlot;
use crate::dispatch::guard::GuardObservation;
use crate::dispatch::recheck::FreshObserver;
use crate::pass::stages::{CoreStages, Stages};
use crate::pass::steps::{Held, PassRun, RunInput, drive};
use crate::pass::{DurableState, PassOutput, Session};
use crate::simulation::sim::Simulator;

/// UUIDs offered to every pass: a pass writes at most one request, and a few spares keep
/// the supply's sequence independent of what the pass decided.
pub const UUIDS_PER_PASS: usize = 4;

/// Where request UUIDs come from (lower-case RFC 4122 version 4 strings).
pub trait UuidSupply: Send {
    /// The next UUID; never one handed out before.
    fn next_uuid(&mut self) -> String;
}

impl<F: FnMut() -> String + Send> UuidSupply for F {
    fn next_uuid(&mut self) -> String {
        self()
    }
}

/// Version-4-shaped UUIDs derived from a seed (SHA-256 of the seed and a counter), for
/// drivers whose output must be reproducible (`replay`, tests, examples). Two terms with
/// the same seed repeat each other's UUIDs: a live operator uses random ones.
#[derive(Debug, Clone)]
pub struct DerivedUuids {
    seed: [u8; 32],
    next: u64,
}

impl DerivedUuids {
    /// The sequence of `seed`, from its first UUID.
    pub fn new(seed: [u8; 32]) -> DerivedUuids {
        DerivedUuids { seed, next: 0 }
    }
}

impl UuidSupply for DerivedUuids {
    fn next_uuid(&mut self) -> String {
        let mut h = Sha256::new();
        h.update(self.seed);
        h.update(self.next.to_be_bytes());
        self.next += 1;
        let d: [u8; 32] = h.finalize().into();
        let mut b = [0u8; 16];
        b.copy_from_slice(&d[..16]);
        format_v4(b)
    }
}

/// Formats 16 bytes as a version 4, variant RFC 4122 UUID (the version and variant bits
/// are set, the rest kept).
pub fn format_v4(mut b: [u8; 16]) -> String {
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// What the driver read for one pass. Built with [`Reading::new`] and the setters; every
/// field left out has the default its setter documents.
///
/// The snapshot, the configuration and the guard objects are lent (`&T`, `&Arc<T>`) or
/// shared (`Arc<T>`): a reading of shared values makes a `'static` [`PassRun`] that an
/// async driver can move to a blocking pool between steps.
pub struct Reading<'a> {
    snapshot: Held<'a, ClusterSnapshot>,
    config: Held<'a, Config>,
    now: Timestamp,
    state: Option<DurableState>,
    guard: Option<Held<'a, GuardObservation>>,
    fresh: Option<&'a dyn FreshObserver>,
    live: bool,
    uuids: Option<&'a [String]>,
    config_changed: bool,
}

impl<'a> Reading<'a> {
    /// A pass over `snapshot` with `config` at `now`.
    ///
    /// `now` and `snapshot.observed_at` are two different instants. `now` is the time of the
    /// pass: the record's timestamp, ages, cooldowns, the hourly window, the dispatch deadline.
    /// `observed_at` is when the objects were read. In execute mode a snapshot older than 30
    /// seconds at `now`, stamped after `now`, or not stamped at all (the Unix epoch) withholds
    /// every request (`ObservationStale`). So a live driver passes the time it starts the pass
    /// with a snapshot stamped with the time its objects were read, from the same clock; a
    /// replay of a recorded snapshot passes `snapshot.observed_at` itself (what `alfred
    /// replay` does without `--now`). Recommend-only passes do not test the age.
    pub fn new(
        snapshot: impl Into<Held<'a, ClusterSnapshot>>,
        config: impl Into<Held<'a, Config>>,
        now: Timestamp,
    ) -> Self {
        Reading {
            snapshot: snapshot.into(),
            config: config.into(),
            now,
            state: None,
            guard: None,
            fresh: None,
            live: false,
            uuids: None,
            config_changed: false,
        }
    }

    /// The durable state as just read (journal, stored node records). Default: the state
    /// the caretaker carries from its previous pass, as if every write had landed — right
    /// for a driver whose writes cannot fail; one whose writes can fail reads it again.
    pub fn state(mut self, state: DurableState) -> Self {
        self.state = Some(state);
        self
    }

    /// The migration guard's two admission objects as read (docs/design-pass.md#migration-guard). Default: neither
    /// found, so execute mode withholds with `GuardUnavailable`.
    pub fn guard(mut self, guard: impl Into<Held<'a, GuardObservation>>) -> Self {
        self.guard = Some(guard.into());
        self
    }

    /// The cluster can change during the pass, and `observer` makes the execute-mode
    /// re-check's fresh looks (docs/design-pass.md#pre-submit-re-check steps 1 and 12) for
    /// [`Caretaker::pass`]. Default: the cluster cannot change during the pass, both looks
    /// see `snapshot`.
    pub fn fresh_looks(mut self, observer: &'a dyn FreshObserver) -> Self {
        self.fresh = Some(observer);
        self.live = true;
        self
    }

    /// The cluster can change during the pass, and the driver of the [`PassRun`] answers
    /// the re-check's [`Step::Look`](crate::Step::Look)s itself. Default: the cluster cannot change.
    pub fn live(mut self) -> Self {
        self.live = true;
        self
    }

    /// UUIDs for this pass, drawn by the driver. Default: [`UUIDS_PER_PASS`] from the
    /// caretaker's [`UuidSupply`].
    pub fn uuids(mut self, uuids: &'a [String]) -> Self {
        self.uuids = Some(uuids);
        self
    }

    /// A newer configuration arrived while the driver gathered the inputs (the pass then
    /// withholds with `ConfigurationChanged`). Default: `false`.
    pub fn config_changed(mut self, changed: bool) -> Self {
        self.config_changed = changed;
        self
    }
}

/// One leadership term of alfred: the decision pass with what lives between passes.
///
/// A new leader makes a new one (the breaker starts closed: docs/design-runtime.md#leader-election); the durable
/// state it needs comes in through each [`Reading`]. The driving loop:
///
/// 1. read the cluster into a snapshot, the config, the journal and the guard;
/// 2. [`Caretaker::begin`] a [`PassRun`] on that [`Reading`], answer its [`Step`](crate::Step)s (a fresh
///    look, a simulation) until [`Step::Done`](crate::Step::Done), and [`Caretaker::finish`] it → the record,
///    the effects in order, the new durable state; [`Caretaker::pass`] does all three for
///    a driver whose answers come without waiting;
/// 3. apply the effects in order, stopping at the first failed dispatch write
///    ([`Effect::is_dispatch_write`](alfred_model::effect::Effect::is_dispatch_write): the
///    journal or the migration request; or, when that write is
///    [`crate::Contingency::save_index`], applying its `then` instead), and tell the
///    caretaker each write's outcome with [`Caretaker::write_done`].
///
/// The crate's front page shows it compiled.
pub struct Caretaker {
    runtime: RuntimeOptions,
    namespace: String,
    config_map_name: String,
    dispatch_deadline: Option<Duration>,
    uuids: Box<dyn UuidSupply>,
    stages: Arc<dyn Stages + Send + Sync>,
    session: Session,
    previous_node_records: Option<BTreeMap<String, NodeRecord>>,
    state: DurableState,
    /// Until a write of the last pass fails: the journal as that pass read it and the
    /// last journal text the driver reported written, to fall back on.
    unconfirmed: Option<Unconfirmed>,
}

/// What the store holds if a write of the last pass fails (see [`Caretaker::write_done`]).
struct Unconfirmed {
    read: JournalSlot,
    written: Option<String>,
}

impl std::fmt::Debug for Caretaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caretaker")
            .field("runtime", &self.runtime)
            .field("namespace", &self.namespace)
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl Caretaker {
    /// A new term with these runtime options and UUID supply; the rest at its defaults:
    /// namespace `ome`, config ConfigMap `alfred-config`, no dispatch deadline, the real
    /// stages ([`CoreStages`]), an empty journal.
    pub fn new(runtime: RuntimeOptions, uuids: impl UuidSupply + 'static) -> Caretaker {
        Caretaker {
            runtime,
            namespace: "ome".into(),
            config_map_name: "alfred-config".into(),
            dispatch_deadline: None,
            uuids: Box::new(uuids),
            stages: Arc::new(CoreStages),
            session: Session::default(),
            previous_node_records: None,
            state: DurableState::default(),
            unconfirmed: None,
        }
    }

    /// alfred's namespace (the guard's username, events on the config ConfigMap) and the
    /// config ConfigMap's name.
    pub fn with_identity(mut self, namespace: &str, config_map_name: &str) -> Caretaker {
        self.namespace = namespace.into();
        self.config_map_name = config_map_name.into();
        self
    }

    /// How long after its `now` a pass may still write a request (docs/design-pass.md#when-execution-is-enabled); `None`: no
    /// deadline, for a driver whose clock stands still during a pass.
    pub fn with_dispatch_deadline(mut self, deadline: Option<Duration>) -> Caretaker {
        self.dispatch_deadline = deadline;
        self
    }

    /// Other stages than the real ones (tests that script the policies).
    pub fn with_stages(mut self, stages: impl Stages + Send + Sync + 'static) -> Caretaker {
        self.stages = Arc::new(stages);
        self
    }

    /// The durable state to start from, for a driver that carries it (see
    /// [`Reading::state`]).
    pub fn with_state(mut self, state: DurableState) -> Caretaker {
        self.state = state;
        self
    }

    /// The runtime options.
    pub fn runtime(&self) -> &RuntimeOptions {
        &self.runtime
    }

    /// Changes what the next passes report besides their decisions
    /// ([`RuntimeOptions::telemetry`]): unlike the other options, it changes no decision, so
    /// a driver may switch it between passes (the twin, when asked to log every advice row).
    pub fn set_telemetry(&mut self, telemetry: alfred_model::config::Telemetry) {
        self.runtime.telemetry = telemetry;
    }

    /// The durable state after the last pass, as if its writes had landed (or as read,
    /// before the first pass).
    pub fn state(&self) -> &DurableState {
        &self.state
    }

    /// The durable state, for a driver that plays the store and edits it between passes
    /// (the twin's operator clearing a stalled entry).
    pub fn state_mut(&mut self) -> &mut DurableState {
        &mut self.state
    }

    /// The term's in-memory state (breaker, report flags, failed requests to report).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Runs one decision pass on what the driver read, answering its questions at once:
    /// looks through the reading's [`Reading::fresh_looks`] observer, simulations through
    /// `simulator`.
    pub fn pass(&mut self, reading: Reading<'_>, simulator: &mut dyn Simulator) -> PassOutput {
        let observer = reading.fresh;
        let mut run = self.begin(reading);
        drive(&mut run, observer, simulator);
        match self.finish(run) {
            Ok(out) => out,
            Err(_) => unreachable!("drive returns at Step::Done"),
        }
    }

    /// Starts a pass on what the driver read. The run owns (or borrows from the reading)
    /// everything it needs, so the caretaker is free until [`Caretaker::finish`]; a run
    /// dropped before it leaves the caretaker as it was (but for the state read).
    pub fn begin<'a>(&mut self, reading: Reading<'a>) -> PassRun<'a> {
        if let Some(state) = reading.state {
            self.state = state;
        }
        let uuids = match reading.uuids {
            Some(u) => u.to_vec(),
            None => (0..UUIDS_PER_PASS)
                .map(|_| self.uuids.next_uuid())
                .collect(),
        };
        let previous = self
            .previous_node_records
            .as_ref()
            .unwrap_or(&self.state.node_records)
            .clone();
        let frozen_look = (!reading.live).then(|| Some(reading.snapshot.clone()));
        let input = RunInput {
            snapshot: reading.snapshot,
            config: reading.config,
            runtime: self.runtime.clone(),
            namespace: self.namespace.clone(),
            config_map_name: self.config_map_name.clone(),
            state: Held::Shared(Arc::new(self.state.clone())),
            previous_node_records: Held::Shared(Arc::new(previous)),
            guard: reading
                .guard
                .unwrap_or_else(|| Held::Shared(Arc::new(GuardObservation::default()))),
            uuids,
            config_changed: reading.config_changed,
            deadline: self.dispatch_deadline.map(|d| reading.now.plus(d)),
            now: reading.now,
            frozen_look,
        };
        PassRun::new(input, Held::Shared(self.stages.clone()), &self.session)
    }

    /// The output of a run at [`Step::Done`](crate::Step::Done), with what the term carries to the next pass
    /// taken from it; `Err(run)` when the run is not done.
    pub fn finish<'a>(&mut self, run: PassRun<'a>) -> Result<PassOutput, Box<PassRun<'a>>> {
        let out = run.into_output()?;
        self.session = out.session.clone();
        self.previous_node_records = Some(out.node_records.clone());
        let read = std::mem::replace(&mut self.state, out.new_state.clone()).journal;
        self.unconfirmed = Some(Unconfirmed {
            read,
            written: None,
        });
        Ok(out)
    }

    /// The outcome of one write effect of the last pass, in the order applied. A request
    /// that may not have landed is reported by the next pass (`SubmissionUncertain`,
    /// docs/design-pass.md#dispatch-pass `attempt()` step 5). After the first failed dispatch write (journal or
    /// request) the carried journal is the last one reported written (or the one the
    /// pass read), which is what the store holds since the driver stops there. A driver
    /// whose writes cannot fail need not call it; other effects only count when they are
    /// journal writes.
    pub fn write_done(&mut self, effect: &Effect, applied: bool) {
        if !effect.is_dispatch_write() {
            return;
        }
        if let Effect::RequestMigration { uuid, .. } = effect
            && !applied
        {
            self.session.failed_requests.push(uuid.clone());
        }
        if applied {
            if let (Effect::WriteJournal { state_json }, Some(u)) = (effect, &mut self.unconfirmed)
            {
                u.written = Some(state_json.clone());
            }
            return;
        }
        if let Some(u) = self.unconfirmed.take() {
            self.state.journal = match u.written {
                Some(text) => JournalSlot::from_state_json(Some(&text)),
                None => u.read,
            };
        }
    }
}

impl DurableState {
    /// The durable state as `alfred run` reads it: `state.json` of the
    /// `alfred-dispatch-state` ConfigMap (`Ok(None)`: not there; `Err`: why the read
    /// failed, so execution withholds with `JournalUnavailable`) and the `node.<name>`
    /// keys of the recommendations ConfigMap (hashed keys, which cannot name their node,
    /// and values that are not records are left out).
    pub fn from_config_maps(
        journal: Result<Option<&str>, String>,
        stored_node_keys: &BTreeMap<String, String>,
    ) -> DurableState {
        let journal = match journal {
            Err(error) => JournalSlot::Unreadable {
                text: String::new(),
                error,
            },
            Ok(text) => JournalSlot::from_state_json(text),
        };
        DurableState {
            journal,
            node_records: node_records_of_keys(stored_node_keys),
            verbatim: None,
        }
    }
}

/// The readable `node.<name>` records among a ConfigMap's keys, by node name.
pub fn node_records_of_keys(stored: &BTreeMap<String, String>) -> BTreeMap<String, NodeRecord> {
    stored
        .iter()
        .filter_map(|(k, v)| {
            let name = k.strip_prefix("node.")?;
            let record: NodeRecord = serde_json::from_str(v).ok()?;
            Some((name.to_owned(), record))
        })
        .collect()
}

#[cfg(test)]
mod tests;
