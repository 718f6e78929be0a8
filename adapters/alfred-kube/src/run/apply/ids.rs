//! Random identifiers: RFC 4122 version 4 UUIDs in lower-case canonical form.

/// A fresh version 4 UUID, e.g. `6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f`.
pub fn uuid_v4() -> String {
    let mut b = [0u8; 16];
    if let Err(e) = getrandom::fill(&mut b) {
        // No entropy source is fatal for request identity: never reuse a UUID.
        panic!("no random source for UUIDs: {e}");
    }
    format_v4(b)
}

pub use alfred_dispatch::format_v4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_and_variant_bits() {
        assert_eq!(
            format_v4([0xff; 16]),
            "ffffffff-ffff-4fff-bfff-ffffffffffff"
        );
        assert_eq!(format_v4([0; 16]), "00000000-0000-4000-8000-000000000000");
        let a = uuid_v4();
        assert_eq!(a.len(), 36);
        assert_ne!(a, uuid_v4());
    }
}
