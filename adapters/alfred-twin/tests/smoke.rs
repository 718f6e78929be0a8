//! CI smoke run on the first 500 tasks of the real trace (from `../shared`, located
//! relative to this crate, else `/work/shared`; skipped with a notice when absent, failed when absent in CI): a few
//! simulated hours of churn on the whole GPU cluster with every caretaker, and the trace's
//! own times with alfred.

mod common;

use alfred_model::config::Config;
use alfred_twin::alfred::AlfredCaretaker;
use alfred_twin::arrivals::{ArrivalOptions, Mode, generate};
use alfred_twin::caretakers::{Crude, Descheduler};
use alfred_twin::engine::{Caretaker, MINUTE, NoCaretaker, run};
use alfred_twin::trace::{parse_nodes, parse_pods};
use alfred_twin::world::{Placement, World};
use common::*;

#[test]
fn ci_is_read_as_ci_services_set_it() {
    for on in ["true", "1", "yes", "TRUE"] {
        assert!(is_ci(Some(on)), "{on}");
    }
    for off in [None, Some(""), Some("0"), Some("false"), Some("False")] {
        assert!(!is_ci(off), "{off:?}");
    }
}

#[test]
fn first_500_tasks_of_the_real_trace() {
    let (Some(nodes), Some(pods)) = (
        shared_data("openb_node_list_gpu_node.csv"),
        shared_data("openb_pod_list_default.csv"),
    ) else {
        skip_unless_ci("../shared/data/alibaba-gpu-v2023 not found");
        return;
    };
    let nodes = parse_nodes(&std::fs::read_to_string(nodes).unwrap()).unwrap();
    let mut tasks = parse_pods(&std::fs::read_to_string(pods).unwrap()).unwrap();
    tasks.truncate(500);
    assert_eq!(nodes.len(), 1213);
    let world = World::new(&nodes, Placement::Spread);
    assert_eq!(world.total_gpus(), 6212);
    let mut o = opts(3);
    o.score_every_ms = 60 * MINUTE;
    let churn = generate(
        &tasks,
        world.total_gpus(),
        &ArrivalOptions {
            mode: Mode::Churn,
            horizon_ms: o.horizon_ms,
            target_utilization: 0.3,
            mean_lifetime_ms: 2.0 * 60.0 * MINUTE as f64,
            fill_to: 1.0,
            time_scale: 1.0,
            timed_start: None,
            gang_share: 0.0,
            seed: 1,
        },
    )
    .unwrap();
    assert!(churn.len() > 500, "{}", churn.len());
    let mut caretakers: Vec<Box<dyn Caretaker>> = vec![
        Box::new(NoCaretaker),
        Box::new(Descheduler::default()),
        Box::new(Crude::default()),
    ];
    for c in &mut caretakers {
        let r = run(&churn, &tasks, world.clone(), &o, c.as_mut(), &mut |_| {});
        let s = alfred_twin::report::summary(&c.name(), &r, 0.0, serde_json::json!({}));
        let rate = s["allocationRate"].as_f64().unwrap();
        assert!(rate > 0.05 && rate < 0.5, "{}: {rate}", c.name());
        assert!(s["maxMovesPerHour"].as_u64().unwrap() <= 200);
    }
    // The trace's own times with alfred in the loop (a nearly idle cluster: few passes
    // decide anything, none may move more than the caps allow).
    let timed = generate(
        &tasks,
        world.total_gpus(),
        &ArrivalOptions {
            mode: Mode::Timed,
            horizon_ms: o.horizon_ms,
            target_utilization: 0.0,
            mean_lifetime_ms: 1.0,
            fill_to: 1.0,
            time_scale: 1.0,
            timed_start: None,
            gang_share: 0.0,
            seed: 1,
        },
    )
    .unwrap();
    let mut a = AlfredCaretaker::new(Config::default(), 1, Placement::Spread);
    let r = run(&timed, &tasks, world.clone(), &o, &mut a, &mut |_| {});
    assert!(a.passes >= 30);
    assert!(alfred_twin::report::max_per_hour(&r.sim.move_times) <= 10);
    for line in &a.log {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v["kind"] == "decision" || v["kind"] == "outcome");
    }
}
