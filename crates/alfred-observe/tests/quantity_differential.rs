//! The two Kubernetes quantity parsers agree: alfred-observe's (`resource_units`, which builds
//! the snapshot's node and pod resources) and scheduler-model's (`parse_resource`, which the
//! simulations and Plumb's room use) give the same scheduler units — milli-cores for `cpu`,
//! whole units rounded up for everything else — for every well-formed quantity, and never
//! disagree when both accept a string. Where they differ by design is checked by example:
//! alfred-observe trims surrounding spaces and keeps negative values (the validator reports
//! them), scheduler-model refuses both.

use alfred_observe::quantity::resource_units;
use proptest::prelude::*;
use scheduler_model::quantity::parse_resource;

const RESOURCES: [&str; 4] = ["cpu", "memory", "nvidia.com/gpu", "ephemeral-storage"];

/// A well-formed, non-negative quantity: digits with an optional fraction and a suffix of
/// every kind the grammar has (binary, decimal SI, exponent), within both parsers' range.
fn quantity() -> impl Strategy<Value = String> {
    let mantissa =
        (0u64..1_000_000_000_000, prop::option::of(0u32..1_000_000)).prop_map(|(int, frac)| {
            match frac {
                Some(f) => format!("{int}.{f}"),
                None => int.to_string(),
            }
        });
    let suffix = prop_oneof![
        Just(String::new()),
        prop::sample::select(vec![
            "Ki", "Mi", "Gi", "Ti", "n", "u", "m", "k", "M", "G", "T"
        ])
        .prop_map(str::to_owned),
        (-9i32..=9, any::<bool>())
            .prop_map(|(e, upper)| format!("{}{e}", if upper { 'E' } else { 'e' })),
    ];
    (mantissa, suffix, any::<bool>())
        .prop_map(|(m, s, plus)| format!("{}{m}{s}", if plus { "+" } else { "" }))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn both_parsers_give_the_same_units_for_well_formed_quantities(
        text in quantity(),
        resource in prop::sample::select(RESOURCES.to_vec()),
    ) {
        let observe = resource_units(resource, &text);
        let model = parse_resource(resource, &text, "f");
        match (&observe, &model) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b, "{} of {:?}", resource, text),
            // Both may refuse a value beyond i64 units; they must agree that it is too large.
            (Err(_), Err(_)) => {}
            _ => prop_assert!(false, "{resource} of {text:?}: observe {observe:?}, model {model:?}"),
        }
    }

    #[test]
    fn when_both_accept_any_string_they_agree(
        text in "[+-]?[0-9]{0,8}(\\.[0-9]{0,4})?([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,2})?",
        resource in prop::sample::select(RESOURCES.to_vec()),
    ) {
        if let (Ok(a), Ok(b)) = (resource_units(resource, &text), parse_resource(resource, &text, "f")) {
            prop_assert_eq!(a, b, "{} of {:?}", resource, text);
        }
    }
}

#[test]
fn where_they_differ_by_design() {
    // alfred-observe trims, scheduler-model refuses padding.
    assert_eq!(resource_units("cpu", " 2 "), Ok(2000));
    assert!(parse_resource("cpu", " 2 ", "f").is_err());
    // alfred-observe keeps the sign (the snapshot validator names the field), scheduler-model
    // refuses a negative request.
    assert_eq!(resource_units("memory", "-1Ki"), Ok(-1024));
    assert!(parse_resource("memory", "-1Ki", "f").is_err());
    // Rounding up agrees on a fraction of a unit and of a milli-core.
    assert_eq!(resource_units("nvidia.com/gpu", "0.5"), Ok(1));
    assert_eq!(parse_resource("nvidia.com/gpu", "0.5", "f"), Ok(1));
    assert_eq!(resource_units("cpu", "1.0001"), Ok(1001));
    assert_eq!(parse_resource("cpu", "1.0001", "f"), Ok(1001));
}
