//! The configuration model: the whole `alfredConfig` document (docs/configuration.md,
//! docs/configuration.md#keys), the per-workload annotations
//! (docs/design-snapshot.md#workload-annotations) and the binary flags that shape a pass
//! (docs/configuration.md#flags-of-alfred-run).
//!
//! * [`Config::from_yaml`] / [`Config::from_json`] parse strictly (unknown keys, duplicate
//!   keys and wrong types fail, naming the key path), fill in the defaults (for integer and
//!   duration keys `0` or absence means the default; explicit `0`/`false` of numbers and
//!   booleans are kept; `null` counts as absent) and validate in the reference order,
//!   returning the **first** [`ConfigError`].
//! * [`Config::builtin`] (= `Default`) is the built-in configuration of
//!   docs/design-runtime.md#configuration-loading.
//! * [`Config::to_effective_yaml`] / [`Config::to_effective_json`] print every key with its
//!   effective value; both parse back to an equal `Config`.
//! * YAML is YAML 1.2 (docs/design-runtime.md#configuration-loading): only `true`/`false` (any of
//!   their three capitalisations) are booleans, `yes`/`on` are strings, `01:00` is a string.
//!
//! Pure: no IO, no clock; `BTreeMap`/`BTreeSet` only.

pub mod annotations;
mod duration;
mod error;
mod load;
mod model;
mod names;
mod runtime;
mod tree;

pub use duration::{DurationError, format_go_duration, parse_go_duration};
pub use error::{ConfigError, MAX_LINE_CHARS};
pub use model::{
    Aggressiveness, ConditionStatus, ConditionTrigger, Config, DefragmentationConfig,
    DrainPlansConfig, DrainProtection, EarlyTickTrigger, LabelTrigger, MaintenanceConfig,
    MaintenanceTrigger, MaintenanceWindow, Mode, NodeHealthConfig, PoliciesConfig,
    SchedulingConfig, SchedulingProfile, ScoringConfig, SpotPolicyConfig, TaintEffect,
    TaintTrigger, TimeOfDay, TriggerRule, Weekday, defaults,
};
pub use names::{is_dns1123_subdomain, is_label_value, is_qualified_name};
pub use runtime::{
    MigrationApiVersion, RuntimeFlags, RuntimeOptions, RuntimeOptionsError, Telemetry,
};

#[cfg(test)]
mod tests;
