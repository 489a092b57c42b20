//! The Kubernetes name rules that settings are checked against, so that a bad name fails when the
//! policy server loads the policy instead of on every pod the API server would then reject.

/// A DNS-1123 subdomain (ConfigMap names, API groups, annotation-key prefixes): at most 253
/// characters, dot-separated labels of lowercase letters, digits and `-`, each starting and ending
/// with a letter or digit.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_label)
}

fn is_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            is_lower_alnum(*first)
                && is_lower_alnum(*last)
                && bytes.iter().all(|&b| is_lower_alnum(b) || b == b'-')
        }
        _ => false,
    }
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// The name part of a qualified name (annotation keys, extended-resource names): at most 63
/// characters of letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit.
pub fn is_qualified_name_part(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            s.len() <= 63
                && first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// A qualified name such as an annotation key: `[prefix/]name`, the prefix a DNS-1123 subdomain.
pub fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, name)) => is_dns1123_subdomain(prefix) && is_qualified_name_part(name),
        None => is_qualified_name_part(s),
    }
}

/// A Kubernetes kind as written in `ownerReferences[].kind`: a letter, then letters and digits.
pub fn is_kind(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subdomains() {
        for ok in [
            "nccl-topo",
            "a",
            "batch.volcano.sh",
            "x1.y-2",
            &"a".repeat(253),
        ] {
            assert!(is_dns1123_subdomain(ok), "{ok}");
        }
        for bad in [
            "",
            "Bad_Name",
            "-a",
            "a-",
            "a..b",
            ".a",
            "UPPER",
            "a_b",
            &"a".repeat(254),
        ] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
        }
    }

    #[test]
    fn qualified_names() {
        for ok in [
            "nmp.nvidia.com/enable-multi-node-networking",
            "hca_shared_devices_a",
            "A.b_c-D",
            &"a".repeat(63),
        ] {
            assert!(is_qualified_name(ok), "{ok}");
        }
        for bad in [
            "",
            "has space",
            "/x",
            "a/b/c",
            "x/",
            "_a",
            "a_",
            "UP.example.com/x",
            &"a".repeat(64),
        ] {
            assert!(!is_qualified_name(bad), "{bad}");
        }
    }

    #[test]
    fn kinds() {
        assert!(is_kind("PyTorchJob") && is_kind("Job") && is_kind("V1"));
        assert!(!is_kind("") && !is_kind("1Job") && !is_kind("batch/Job") && !is_kind("My Job"));
    }
}
