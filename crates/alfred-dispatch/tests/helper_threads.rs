//! `RuntimeOptions::helper_threads`: a pass that may use a helper thread (the walk shared
//! in chunks, the report's rows in halves, the second ending made beside the first) returns
//! exactly what the one-thread pass returns.

use alfred_dispatch::PassOutput;

mod common;

use common::{World, requests};

/// The dispatch harness's execute-mode world, once per setting: its first pass requests a
/// move and saves the journal after it (the pass has its second ending); the next passes
/// follow it.
#[test]
fn a_requested_move_is_the_same_with_a_helper_thread() {
    let mut one = World::execute();
    let mut two = World::execute();
    one.runtime.helper_threads = false;
    two.runtime.helper_threads = true;
    let mut endings = 0;
    for pass in 0..3 {
        let (a, b): (PassOutput, PassOutput) = (one.pass(), two.pass());
        if pass == 0 {
            assert_eq!(requests(&a), 1);
        }
        endings += usize::from(a.if_final_save_fails.is_some());
        assert_eq!(a, b, "pass {pass}");
        one.advance_minutes(5);
        two.advance_minutes(5);
    }
    assert!(endings > 0, "no pass had a second ending");
}
