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

/// A DNS-1123 label (namespaces, network attachment names): at most 63 characters of lowercase
/// letters, digits and `-`, starting and ending with a letter or digit.
pub fn is_dns1123_label(s: &str) -> bool {
    s.len() <= 63 && is_label(s)
}

/// An extended resource name: a qualified name with a domain prefix outside `kubernetes.io`,
/// not starting with `requests.` and such that `requests.<name>` is a qualified name too
/// (kubernetes `pkg/apis/core/helper.IsExtendedResourceName`, which `validateExtendedResourceName`
/// in `pkg/apis/core/validation/validation.go` holds every container resource to: the prefix is
/// the quota's, `requests.nvidia.com/gpu`).
pub fn is_extended_resource(s: &str) -> bool {
    const QUOTA: &str = "requests.";
    match s.split_once('/') {
        Some((domain, _)) if domain == "kubernetes.io" || domain.ends_with(".kubernetes.io") => {
            false
        }
        Some((domain, _)) => {
            !s.starts_with(QUOTA) && QUOTA.len() + domain.len() <= 253 && is_qualified_name(s)
        }
        None => false,
    }
}

/// A Multus network as the pod annotation names it: `name`, or `namespace/name`.
pub fn is_network_reference(s: &str) -> bool {
    match s.split_once('/') {
        Some((namespace, name)) => is_dns1123_label(namespace) && is_dns1123_label(name),
        None => is_dns1123_label(s),
    }
}

/// An absolute path without blanks or control characters (a hostPath and a mount path), and
/// without a `..` segment: the API server refuses one in a hostPath (`validatePathNoBacksteps`
/// in kubernetes `pkg/apis/core/validation/validation.go`), and in a mount path it names
/// another directory than the text says.
pub fn is_absolute_path(s: &str) -> bool {
    s.starts_with('/')
        && s.len() <= 4096
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
        && !s.split('/').any(|segment| segment == "..")
}

/// An absolute path as the kernel resolves it when mounting: `//` as `/`, no `.` segments, no
/// trailing `/`. The API server compares mount paths as strings (`ValidateVolumeMounts`), so
/// `/dev/shm/` beside `/dev/shm` passes it and one mount shadows the other at run time.
pub fn clean_path(s: &str) -> String {
    let mut clean = String::with_capacity(s.len());
    for segment in s.split('/').filter(|seg| !seg.is_empty() && *seg != ".") {
        clean.push('/');
        clean.push_str(segment);
    }
    if clean.is_empty() {
        clean.push('/');
    }
    clean
}

/// A container image reference, checked only for what would make it unusable: empty, blanks,
/// control characters. The registry decides the rest.
pub fn is_image_reference(s: &str) -> bool {
    !s.is_empty() && s.len() <= 4096 && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// One item of an exec-form `command`: any text without control characters (no shell reads it,
/// so blanks and quotes are the argument's own), at most 4096 bytes.
pub fn is_argv_item(s: &str) -> bool {
    s.len() <= 4096 && !s.chars().any(char::is_control)
}

/// An environment variable name as the API server accepts it from Kubernetes 1.32 (KEP-4369,
/// RelaxedEnvironmentVariableValidation, on by default from then): printable ASCII without `=`.
/// Older API servers accept only letters, digits, `_`, `-` and `.`, not starting with a digit.
pub fn is_env_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic() && b != b'=')
}

/// A Linux capability as `securityContext.capabilities.add` takes it (`IPC_LOCK`, `CAP_SYS_NICE`).
pub fn is_capability(s: &str) -> bool {
    s.len() <= 64
        && s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
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
    fn settings_values() {
        assert!(is_extended_resource("nvidia.com/rdma-vf") && is_extended_resource("rdma/ib"));
        for bad in [
            "mlnxnics",
            "kubernetes.io/x",
            "a.kubernetes.io/x",
            "nvidia.com/",
            "a b/c",
        ] {
            assert!(!is_extended_resource(bad), "{bad}");
        }
        assert!(is_network_reference("rdma-vf") && is_network_reference("default/rdma-vf"));
        for bad in ["a/b/c", "", "/x", "Default/x", "x.y", "a_b"] {
            assert!(!is_network_reference(bad), "{bad}");
        }
        assert!(is_absolute_path("/opt/amazon-efa-ofi") && !is_absolute_path("opt/x"));
        assert!(!is_absolute_path("/a b") && !is_absolute_path(""));
        assert!(!is_absolute_path("/opt/../etc") && !is_absolute_path("/.."));
        assert!(is_absolute_path("/opt/..x") && is_absolute_path("/opt/./x"));
        for (path, clean) in [
            ("/dev/shm/", "/dev/shm"),
            ("//dev//shm", "/dev/shm"),
            ("/dev/./shm/.", "/dev/shm"),
            ("/", "/"),
            ("//", "/"),
        ] {
            assert_eq!(clean_path(path), clean, "{path}");
        }
        // The quota's prefix (kubernetes `helper.IsExtendedResourceName`).
        assert!(!is_extended_resource("requests.nvidia.com/gpu"));
        assert!(is_extended_resource("nvidia.com/gpu"));
        let long = format!("{0}.{0}.{0}.{0}.io/x", "a".repeat(60));
        assert!(is_qualified_name(&long) && !is_extended_resource(&long));
        assert!(is_image_reference("us-docker.pkg.dev/x/y:v1.0.21") && !is_image_reference("a b"));
        assert!(is_env_name("NCCL_IB_TC") && is_env_name("my.var-1") && !is_env_name("A=B"));
        assert!(!is_env_name("") && !is_env_name("A B"));
        assert!(is_capability("IPC_LOCK") && is_capability("cap_sys_nice"));
        assert!(!is_capability("IPC LOCK") && !is_capability("_X") && !is_capability(""));
    }

    #[test]
    fn kinds() {
        assert!(is_kind("PyTorchJob") && is_kind("Job") && is_kind("V1"));
        assert!(!is_kind("") && !is_kind("1Job") && !is_kind("batch/Job") && !is_kind("My Job"));
    }
}
