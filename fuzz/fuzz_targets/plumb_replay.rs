//! `plumb replay`'s inputs: a Kubernetes List of a recorded member, then (after a line
//! `#signals`) its signal answers. Every error is one short line naming the file; whatever
//! reads is reported on without a panic, deterministically, in both output forms.
#![no_main]

use std::path::Path;

use alfred_fuzz::{assert_error_line, split_once};
use libfuzzer_sys::fuzz_target;
use plumb_kube::objects::MemberObjects;
use plumb_kube::replay::{Recorded, render_json, render_table, replay};
use plumb_model::Timestamp;

fuzz_target!(|data: &[u8]| {
    let (objects, signals) = split_once(data, b"\n#signals\n");
    let (Ok(objects), Ok(signals)) = (std::str::from_utf8(objects), std::str::from_utf8(signals))
    else {
        return;
    };
    let mut recorded = Recorded {
        dir: "member".into(),
        ..Recorded::default()
    };
    let mut read = MemberObjects::default();
    if let Err(e) = read.add_text(Path::new("member/objects.json"), objects) {
        let line = e.to_string();
        assert!(line.starts_with("member/objects.json: "), "{line}");
        assert_error_line("replay objects", &plumb_kube::one_line(&line));
        return;
    }
    recorded.objects = read;
    if !signals.is_empty() {
        match plumb_kube::signals::parse_signals(signals) {
            Ok(answers) => recorded.signals = answers,
            Err(e) => {
                assert_error_line("replay signals", &plumb_kube::one_line(&e));
                return;
            }
        }
    }
    let now = Timestamp::from_unix_secs(1_796_126_400);
    let cluster = recorded
        .objects
        .policies
        .first()
        .and_then(|p| p.object.pointer("/spec/clusters/0/name"))
        .and_then(|n| n.as_str())
        .unwrap_or("us-east")
        .to_owned();
    let wanted = recorded.objects.policies.first().map(|p| p.key());
    match replay(&recorded, &cluster, now, wanted.as_deref()) {
        Ok(output) => {
            let json = render_json(&output);
            serde_json::from_str::<serde_json::Value>(&json)
                .unwrap_or_else(|e| panic!("the JSON output does not parse: {e}\n{json}"));
            let again = replay(&recorded, &cluster, now, wanted.as_deref())
                .expect("a second replay of the same input fails");
            assert_eq!(json, render_json(&again), "the replay is not deterministic");
            assert!(render_table(&output).contains("neededReplicas") || output.report.is_none());
        }
        Err(e) => assert_error_line("replay", &plumb_kube::one_line(&e.to_string())),
    }
});
