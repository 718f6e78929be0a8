//! Kubernetes name rules (apimachinery `validation`): DNS-1123 subdomains, qualified
//! names (label keys, condition types) and label values.

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`, at most 253 characters.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns1123_label_like)
}

/// One dot-free part of a DNS-1123 subdomain (no 63-character limit, as upstream).
fn is_dns1123_label_like(part: &str) -> bool {
    let b = part.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            alnum(first) && alnum(last) && b.iter().all(|c| alnum(c) || *c == b'-')
        }
        _ => false,
    }
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, at most 63 characters, non-empty.
fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            b.len() <= 63
                && first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// A Kubernetes qualified name: `[prefix/]name`, the prefix a DNS-1123 subdomain and the
/// name at most 63 characters of `[-A-Za-z0-9_.]` starting and ending alphanumeric.
pub fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        None => is_qualified_name_part(s),
        Some((prefix, name)) => is_dns1123_subdomain(prefix) && is_qualified_name_part(name),
    }
}

/// A Kubernetes label value: empty, or a qualified-name part (at most 63 characters).
pub fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_qualified_name_part(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns1123_subdomains() {
        for ok in [
            "a",
            "alfred-recommendations",
            "default-scheduler",
            "ome.scheduler",
            "a1",
            "1a",
            &"a".repeat(253),
        ] {
            assert!(is_dns1123_subdomain(ok), "{ok}");
        }
        for bad in [
            "",
            "A",
            "-a",
            "a-",
            "a..b",
            ".a",
            "a.",
            "a_b",
            "a b",
            &"a".repeat(254),
            "ome/scheduler",
        ] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
        }
    }

    #[test]
    fn qualified_names() {
        for ok in [
            "GpuUnhealthy",
            "node.kubernetes.io/preemptible",
            "maintenance.example.com/state",
            "a",
            "A_b.c-d",
            &"x".repeat(63),
        ] {
            assert!(is_qualified_name(ok), "{ok}");
        }
        for bad in [
            "",
            "/a",
            "a/",
            "a/b/c",
            "-a",
            "a-",
            "Example.com/a",
            "bad name",
            &"x".repeat(64),
            "a/-b",
        ] {
            assert!(!is_qualified_name(bad), "{bad}");
        }
    }

    #[test]
    fn label_values() {
        for ok in ["", "patching", "true", "A.b_c-1"] {
            assert!(is_label_value(ok), "{ok}");
        }
        for bad in ["-x", "x-", "a/b", "a b", &"v".repeat(64)] {
            assert!(!is_label_value(bad), "{bad}");
        }
    }
}
