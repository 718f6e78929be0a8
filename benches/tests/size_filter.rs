//! `ALFRED_BENCH_SIZES` selects sizes by name, never by substring.

use alfred_benches::size_selected;

fn filter(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

#[test]
fn sizes_are_selected_by_their_exact_name() {
    assert!(size_selected(&[], "score", "XL"), "no filter: every size");
    let l = filter(&["L"]);
    assert!(size_selected(&l, "score", "L"));
    assert!(!size_selected(&l, "score", "XL"), "L is not XL");
    let grouped = filter(&["score/L", "M"]);
    assert!(size_selected(&grouped, "score", "L"));
    assert!(size_selected(&grouped, "score", "M"));
    assert!(!size_selected(&grouped, "score", "XL"));
    assert!(
        !size_selected(&grouped, "pass", "L"),
        "another bench's group"
    );
    assert!(!size_selected(&filter(&["scoreL"]), "score", "L"));
}
