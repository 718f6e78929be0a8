//! Per-workload annotations on an InferenceService's own `metadata.annotations`
//! (docs/design-snapshot.md#workload-annotations).
//!
//! Each parser takes the raw annotation value (`None` when the annotation is absent) and
//! never fails: it returns the value to plan with and, when the text could not be used, a
//! [`AnnotationDiagnostic`] saying so. A pass never stops on an annotation.

use std::fmt;

use super::model::defaults;

/// `alfred.ome.io/movable`.
pub const MOVABLE: &str = "alfred.ome.io/movable";
/// `alfred.ome.io/priority`.
pub const PRIORITY: &str = "alfred.ome.io/priority";
/// `alfred.ome.io/cooldown-minutes`.
pub const COOLDOWN_MINUTES: &str = "alfred.ome.io/cooldown-minutes";
/// `alfred.ome.io/tenant-group`.
pub const TENANT_GROUP: &str = "alfred.ome.io/tenant-group";
/// `alfred.ome.io/spot-policy`.
pub const SPOT_POLICY: &str = "alfred.ome.io/spot-policy";
/// `alfred.ome.io/opt-out-reason` (free text, ignored).
pub const OPT_OUT_REASON: &str = "alfred.ome.io/opt-out-reason";

/// An annotation value that could not be used; the default was used instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnnotationDiagnostic {
    /// The annotation key, e.g. `alfred.ome.io/priority`.
    pub annotation: &'static str,
    /// The rejected value.
    pub value: String,
    /// Why, e.g. `is outside [0, 1]`.
    pub problem: String,
    /// The value used instead, as text (e.g. `0.5`, `perWorkloadCooldownMinutes`).
    pub used: String,
}

impl fmt::Display for AnnotationDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The value is clipped: an annotation may hold 256 KiB, the line must stay short.
        write!(
            f,
            "{}: {} {}; using {}",
            self.annotation,
            super::error::quoted(&self.value),
            self.problem,
            self.used
        )
    }
}

/// A parsed annotation: the value to use and, for an unusable text, why it was ignored.
#[derive(Debug, Clone, PartialEq)]
pub struct Annotated<T> {
    /// The value to plan with (the default when absent or unusable).
    pub value: T,
    /// Set when the annotation was present but unusable.
    pub diagnostic: Option<AnnotationDiagnostic>,
}

impl<T> Annotated<T> {
    fn ok(value: T) -> Self {
        Annotated {
            value,
            diagnostic: None,
        }
    }

    fn ignored(value: T, annotation: &'static str, raw: &str, problem: &str, used: String) -> Self {
        Annotated {
            value,
            diagnostic: Some(AnnotationDiagnostic {
                annotation,
                value: raw.to_string(),
                problem: problem.to_string(),
                used,
            }),
        }
    }

    /// Whether the annotation was present but unusable.
    pub fn is_invalid(&self) -> bool {
        self.diagnostic.is_some()
    }
}

/// Go's `strconv.ParseBool`: `1 t T TRUE true True` and `0 f F FALSE false False`.
pub fn parse_go_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// `alfred.ome.io/movable`: a Go `ParseBool` spelling; absent or unparsable ⇒ `defaultMovable`.
pub fn parse_movable(raw: Option<&str>, default_movable: bool) -> Annotated<bool> {
    match raw {
        None => Annotated::ok(default_movable),
        Some(text) => match parse_go_bool(text) {
            Some(b) => Annotated::ok(b),
            None => Annotated::ignored(
                default_movable,
                MOVABLE,
                text,
                "is not a boolean (want true or false)",
                format!("defaultMovable ({default_movable})"),
            ),
        },
    }
}

/// `alfred.ome.io/priority`: a float in [0, 1]; absent or unusable ⇒ 0.5.
pub fn parse_priority(raw: Option<&str>) -> Annotated<f64> {
    let default = defaults::WORKLOAD_PRIORITY;
    let Some(text) = raw else {
        return Annotated::ok(default);
    };
    let ignored =
        |problem: &str| Annotated::ignored(default, PRIORITY, text, problem, default.to_string());
    match text.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Annotated::ok(p),
        Ok(_) => ignored("is outside [0, 1]"),
        Err(_) => ignored("is not a number"),
    }
}

/// `alfred.ome.io/cooldown-minutes`: an integer ≥ 0 replacing `perWorkloadCooldownMinutes`
/// (`Some(0)` = no cooldown). `value` is `None` when absent or unusable (use
/// `perWorkloadCooldownMinutes`); an unusable value also carries a diagnostic, which the
/// dispatcher turns into `InvalidCooldown` (policies and arbiter just ignore it).
pub fn parse_cooldown_minutes(raw: Option<&str>) -> Annotated<Option<u32>> {
    let Some(text) = raw else {
        return Annotated::ok(None);
    };
    let ignored = |problem: &str| {
        Annotated::ignored(
            None,
            COOLDOWN_MINUTES,
            text,
            problem,
            "perWorkloadCooldownMinutes".to_string(),
        )
    };
    match text.parse::<i64>() {
        Ok(n) if n < 0 => ignored("is negative"),
        Ok(n) => match u32::try_from(n) {
            Ok(m) => Annotated::ok(Some(m)),
            Err(_) => ignored("is too large"),
        },
        Err(_) => ignored("is not an integer"),
    }
}

/// `alfred.ome.io/tenant-group`: any string; absent or empty ⇒ no group.
pub fn parse_tenant_group(raw: Option<&str>) -> Option<String> {
    raw.filter(|s| !s.is_empty()).map(str::to_string)
}

/// The `alfred.ome.io/spot-policy` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SpotPolicyOverride {
    /// Never target a preemptible node, even with `avoidAsTarget: false`.
    Avoid,
    /// Always apply the 1.25 spot source boost.
    Migrate,
    /// Never apply the spot source boost.
    Ignore,
}

impl SpotPolicyOverride {
    /// The annotation spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            SpotPolicyOverride::Avoid => "avoid",
            SpotPolicyOverride::Migrate => "migrate",
            SpotPolicyOverride::Ignore => "ignore",
        }
    }
}

/// `alfred.ome.io/spot-policy`: `avoid` | `migrate` | `ignore`; anything else behaves like
/// absent (`None`: follow `spotPolicy`). A non-empty unknown value carries a diagnostic.
pub fn parse_spot_policy(raw: Option<&str>) -> Annotated<Option<SpotPolicyOverride>> {
    match raw {
        None | Some("") => Annotated::ok(None),
        Some("avoid") => Annotated::ok(Some(SpotPolicyOverride::Avoid)),
        Some("migrate") => Annotated::ok(Some(SpotPolicyOverride::Migrate)),
        Some("ignore") => Annotated::ok(Some(SpotPolicyOverride::Ignore)),
        Some(text) => Annotated::ignored(
            None,
            SPOT_POLICY,
            text,
            "is not a spot policy (want avoid, migrate or ignore)",
            "spotPolicy".to_string(),
        ),
    }
}

/// Every `alfred.ome.io/*` annotation of one InferenceService, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadAnnotations {
    /// `movable` (default `defaultMovable`).
    pub movable: bool,
    /// `priority` (default 0.5).
    pub priority: f64,
    /// `cooldown-minutes` override (`None` = `perWorkloadCooldownMinutes`).
    pub cooldown_minutes: Option<u32>,
    /// Whether `cooldown-minutes` was present but unusable (dispatch: `InvalidCooldown`).
    pub cooldown_invalid: bool,
    /// `tenant-group`.
    pub tenant_group: Option<String>,
    /// `spot-policy`.
    pub spot_policy: Option<SpotPolicyOverride>,
    /// Every ignored value, in the order movable, priority, cooldown-minutes, spot-policy.
    pub diagnostics: Vec<AnnotationDiagnostic>,
}

impl WorkloadAnnotations {
    /// Parses all annotations through `get` (annotation key → value), e.g.
    /// `|k| annotations.get(k).map(String::as_str)`.
    pub fn parse<'a>(get: impl Fn(&str) -> Option<&'a str>, default_movable: bool) -> Self {
        let movable = parse_movable(get(MOVABLE), default_movable);
        let priority = parse_priority(get(PRIORITY));
        let cooldown = parse_cooldown_minutes(get(COOLDOWN_MINUTES));
        let spot = parse_spot_policy(get(SPOT_POLICY));
        let cooldown_invalid = cooldown.is_invalid();
        let diagnostics = [
            movable.diagnostic,
            priority.diagnostic,
            cooldown.diagnostic,
            spot.diagnostic,
        ]
        .into_iter()
        .flatten()
        .collect();
        WorkloadAnnotations {
            movable: movable.value,
            priority: priority.value,
            cooldown_minutes: cooldown.value,
            cooldown_invalid,
            tenant_group: parse_tenant_group(get(TENANT_GROUP)),
            spot_policy: spot.value,
            diagnostics,
        }
    }

    /// The per-workload cooldown in minutes: the override, else `perWorkloadCooldownMinutes`.
    pub fn cooldown_minutes_or(&self, per_workload_cooldown_minutes: u32) -> u32 {
        self.cooldown_minutes
            .unwrap_or(per_workload_cooldown_minutes)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn movable_accepts_exactly_go_parse_bool() {
        for t in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_movable(Some(t), false), Annotated::ok(true), "{t}");
        }
        for f in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_movable(Some(f), true), Annotated::ok(false), "{f}");
        }
        for bad in ["yes", "no", "tRUE", "", " true", "2", "on"] {
            let got = parse_movable(Some(bad), true);
            assert!(got.value, "{bad}");
            assert!(got.is_invalid(), "{bad}");
            let got = parse_movable(Some(bad), false);
            assert!(!got.value, "{bad}");
        }
        assert_eq!(parse_movable(None, true), Annotated::ok(true));
        assert_eq!(parse_movable(None, false), Annotated::ok(false));
        assert_eq!(
            parse_movable(Some("yes"), true)
                .diagnostic
                .unwrap()
                .to_string(),
            "alfred.ome.io/movable: \"yes\" is not a boolean (want true or false); using defaultMovable (true)"
        );
    }

    #[test]
    fn priority_is_a_float_in_unit_interval() {
        assert_eq!(parse_priority(None), Annotated::ok(0.5));
        for (text, want) in [
            ("0", 0.0),
            ("1", 1.0),
            ("0.9", 0.9),
            ("1e-1", 0.1),
            (".25", 0.25),
        ] {
            assert_eq!(parse_priority(Some(text)), Annotated::ok(want), "{text}");
        }
        for bad in ["1.5", "-0.1", "NaN", "inf", "high", "", "0.5 "] {
            let got = parse_priority(Some(bad));
            assert_eq!(got.value, 0.5, "{bad}");
            assert!(got.is_invalid(), "{bad}");
        }
        assert_eq!(
            parse_priority(Some("1.5")).diagnostic.unwrap().to_string(),
            "alfred.ome.io/priority: \"1.5\" is outside [0, 1]; using 0.5"
        );
    }

    #[test]
    fn cooldown_minutes_is_a_non_negative_integer() {
        assert_eq!(parse_cooldown_minutes(None), Annotated::ok(None));
        assert_eq!(parse_cooldown_minutes(Some("0")), Annotated::ok(Some(0)));
        assert_eq!(parse_cooldown_minutes(Some("45")), Annotated::ok(Some(45)));
        assert_eq!(parse_cooldown_minutes(Some("+5")), Annotated::ok(Some(5)));
        for bad in ["-1", "1.5", "ten", "", "99999999999", " 5"] {
            let got = parse_cooldown_minutes(Some(bad));
            assert_eq!(got.value, None, "{bad}");
            assert!(got.is_invalid(), "{bad}");
        }
    }

    #[test]
    fn spot_policy_and_tenant_group() {
        assert_eq!(
            parse_spot_policy(Some("avoid")).value,
            Some(SpotPolicyOverride::Avoid)
        );
        assert_eq!(
            parse_spot_policy(Some("migrate")).value,
            Some(SpotPolicyOverride::Migrate)
        );
        assert_eq!(
            parse_spot_policy(Some("ignore")).value,
            Some(SpotPolicyOverride::Ignore)
        );
        assert_eq!(parse_spot_policy(Some("")), Annotated::ok(None));
        assert_eq!(parse_spot_policy(None), Annotated::ok(None));
        let other = parse_spot_policy(Some("Avoid"));
        assert_eq!(other.value, None);
        assert!(other.is_invalid());
        assert_eq!(
            parse_tenant_group(Some("team-a")),
            Some("team-a".to_string())
        );
        assert_eq!(parse_tenant_group(Some("")), None);
        assert_eq!(parse_tenant_group(None), None);
    }

    #[test]
    fn all_annotations_at_once() {
        let annotations: BTreeMap<String, String> = [
            (MOVABLE, "false"),
            (PRIORITY, "2"),
            (COOLDOWN_MINUTES, "x"),
            (TENANT_GROUP, "g"),
            (SPOT_POLICY, "migrate"),
            (OPT_OUT_REASON, "whatever"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let parsed = WorkloadAnnotations::parse(|k| annotations.get(k).map(String::as_str), true);
        assert!(!parsed.movable);
        assert_eq!(parsed.priority, 0.5);
        assert_eq!(parsed.cooldown_minutes, None);
        assert!(parsed.cooldown_invalid);
        assert_eq!(parsed.cooldown_minutes_or(30), 30);
        assert_eq!(parsed.tenant_group.as_deref(), Some("g"));
        assert_eq!(parsed.spot_policy, Some(SpotPolicyOverride::Migrate));
        let which: Vec<_> = parsed.diagnostics.iter().map(|d| d.annotation).collect();
        assert_eq!(which, [PRIORITY, COOLDOWN_MINUTES]);

        let none = WorkloadAnnotations::parse(|_| None, false);
        assert!(!none.movable);
        assert_eq!(none.priority, 0.5);
        assert!(none.diagnostics.is_empty());
        assert!(!none.cooldown_invalid);
    }
}
