//! `plumb policy check`'s reader and validation (an AdaptivePolicy in YAML or JSON): every
//! problem is one short line naming a field, and a valid policy's effective spec (every
//! default filled in) is valid too, prints as YAML that reads back, and hashes as the policy
//! does for each of its members.
#![no_main]

use alfred_fuzz::assert_error_line;
use libfuzzer_sys::fuzz_target;
use plumb_model::AdaptivePolicy;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (policy, checked) = plumb_kube::policy::check_text(text);
    for problem in &checked.problems {
        assert!(
            !problem.path.is_empty(),
            "a problem without a field: {problem}"
        );
        assert_error_line(
            "policy problem",
            &plumb_kube::one_line(&problem.to_string()),
        );
        assert!(!problem.to_string().contains('\n'), "{problem:?}");
    }
    let Some(policy) = policy else {
        assert!(!checked.is_valid(), "no policy read, yet no problem");
        return;
    };
    if !checked.is_valid() {
        return;
    }
    let namespace = policy.metadata.namespace.as_deref();
    let effective = policy.spec.effective(namespace);
    assert!(
        effective.check().is_valid(),
        "the effective spec of a valid policy is refused: {:?}",
        effective.check().problems
    );
    let yaml = plumb_kube::policy::effective_yaml(&policy);
    let back = AdaptivePolicy::from_yaml(&yaml)
        .unwrap_or_else(|e| panic!("the effective YAML does not read back: {e}\n{yaml}"));
    assert_eq!(
        back.spec, effective,
        "the effective YAML changed the spec\n{yaml}"
    );
    for cluster in policy.spec.clusters.iter().flatten() {
        let name = cluster.name.as_deref().unwrap_or_default();
        assert_eq!(
            plumb_model::hash::member_spec_hash(&policy.spec, namespace, name),
            plumb_model::hash::member_spec_hash(&effective, namespace, name),
            "filling in defaults changed {name}'s spec hash"
        );
    }
});
