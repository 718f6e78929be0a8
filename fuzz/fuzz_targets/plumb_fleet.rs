//! `plumb replay` of a fleet: a policy, then (after a line `#fleet`) a `fleet.json` timeline.
//! With no policy part, the shortage story's policy is used. Every error is one short line
//! naming the field; whatever reads replays without a panic, deterministically, and prints
//! one JSON object a line of kind `decision` or `outcome`.
#![no_main]

use std::collections::BTreeMap;

use alfred_fuzz::{assert_error_line, split_once};
use libfuzzer_sys::fuzz_target;
use plumb_kube::fleet::{FleetInput, Timeline, render_json, render_table, replay};

const STORY_POLICY: &str = include_str!("../../fixtures/plumb/fleets/shortage-story/policy.json");

fuzz_target!(|data: &[u8]| {
    let (first, second) = split_once(data, b"\n#fleet\n");
    let (policy_text, fleet_text) = if second.is_empty() {
        (STORY_POLICY.as_bytes(), first)
    } else {
        (first, second)
    };
    let (Ok(policy_text), Ok(fleet_text)) = (
        std::str::from_utf8(policy_text),
        std::str::from_utf8(fleet_text),
    ) else {
        return;
    };
    let (policy, checked) = plumb_kube::policy::check_text(policy_text);
    let Some(policy) = policy.filter(|_| checked.problems.is_empty()) else {
        return;
    };
    let timeline = match Timeline::parse(fleet_text, &policy) {
        Ok(t) => t,
        Err(e) => {
            assert_error_line("fleet timeline", &plumb_kube::one_line(&e));
            return;
        }
    };
    let input = FleetInput {
        policy,
        timeline,
        recorded: BTreeMap::new(),
    };
    match replay(&input) {
        Ok(steps) => {
            let log = render_json(&steps);
            for line in log.lines() {
                let value: serde_json::Value = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("a log line does not parse: {e}\n{line}"));
                let kind = value["kind"].as_str().unwrap_or_default();
                assert!(kind == "decision" || kind == "outcome", "kind {kind}");
            }
            let again = replay(&input).expect("a second replay of the same input fails");
            assert_eq!(log, render_json(&again), "the replay is not deterministic");
            let _ = render_table(&steps);
        }
        Err(e) => assert_error_line("fleet replay", &plumb_kube::one_line(&e.to_string())),
    }
});
