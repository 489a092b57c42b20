//! The API server's rules for a pod's DRA claims, which a mutation must keep: kubernetes
//! `pkg/apis/core/validation/validation.go` (master, read 2026-12), `validatePodResourceClaims`,
//! `validatePodResourceClaim`, `validatePodResourceClaimSource` and `validateResourceClaimNames`.
//! Shared by the property tests (`tests/properties/`), the case runner
//! (`case-runner/src/lib.rs`, which holds every case's output to them) and the fuzz target
//! `opted_in`, through `#[path]`.
//!
//! - each `spec.resourceClaims[i]` has a `name`, unique in the pod, a DNS-1123 label; with a
//!   `resourceClaimTemplateName` and a pod name, `<pod name>-<claim name>` is a valid
//!   ResourceClaim name (a DNS-1123 subdomain), the name of the claim made for the pod;
//! - it sets exactly one of `resourceClaimName` and `resourceClaimTemplateName`, each a DNS-1123
//!   subdomain;
//! - each `resources.claims[j]` of a container, init container or ephemeral container has a
//!   `name`, unique in the container, that names one of the pod's claims.

use serde_json::Value;

/// Every rule above that `pod` breaks, one line each.
pub fn violations(pod: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    let pod_name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty());
    let claims = list(spec.get("resourceClaims"));
    let mut names: Vec<&str> = Vec::new();
    for (i, claim) in claims.iter().enumerate() {
        let at = format!("spec.resourceClaims[{i}]");
        let text = |key: &str| claim.get(key).and_then(Value::as_str);
        match text("name").filter(|n| !n.is_empty()) {
            None => found.push(format!("{at}.name: Required value")),
            Some(name) if names.contains(&name) => {
                found.push(format!("{at}.name: Duplicate value: {name:?}"))
            }
            Some(name) => {
                if !is_dns1123_label(name) {
                    found.push(format!("{at}.name: {name:?} is not a DNS-1123 label"));
                } else if let (Some(pod_name), Some(_)) =
                    (pod_name, text("resourceClaimTemplateName"))
                {
                    let claim_name = format!("{pod_name}-{name}");
                    if !is_dns1123_subdomain(&claim_name) {
                        found.push(format!(
                            "{at}.name: final ResourceClaim name {claim_name:?} is not a DNS-1123 subdomain"
                        ));
                    }
                }
                names.push(name);
            }
        }
        let claim_name = claim.get("resourceClaimName").filter(|v| !v.is_null());
        let template = claim
            .get("resourceClaimTemplateName")
            .filter(|v| !v.is_null());
        match (claim_name, template) {
            (Some(_), Some(_)) => found.push(format!(
                "{at}: at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"
            )),
            (None, None) => found.push(format!(
                "{at}: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
            )),
            _ => {}
        }
        for (key, value) in [
            ("resourceClaimName", claim_name),
            ("resourceClaimTemplateName", template),
        ] {
            if let Some(value) = value
                && !value.as_str().is_some_and(is_dns1123_subdomain)
            {
                found.push(format!("{at}.{key}: {value} is not a DNS-1123 subdomain"));
            }
        }
    }
    for kind in ["containers", "initContainers", "ephemeralContainers"] {
        for (i, container) in list(spec.get(kind)).iter().enumerate() {
            let mut seen: Vec<&str> = Vec::new();
            let claims = list(container.pointer("/resources/claims"));
            for (j, claim) in claims.iter().enumerate() {
                let at = format!("spec.{kind}[{i}].resources.claims[{j}]");
                match claim
                    .get("name")
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty())
                {
                    None => found.push(format!("{at}: Required value")),
                    Some(name) => {
                        if seen.contains(&name) {
                            found.push(format!("{at}: Duplicate value: {name:?}"));
                        }
                        seen.push(name);
                        if !names.contains(&name) {
                            found.push(format!(
                                "{at}: Not found: {name:?}: must be one of the names in pod.spec.resourceClaims"
                            ));
                        }
                    }
                }
            }
        }
    }
    found
}

fn list(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// `k8s.io/apimachinery` `IsDNS1123Label`: at most 63 characters of lowercase letters, digits and
/// `-`, starting and ending with a letter or digit.
pub fn is_dns1123_label(s: &str) -> bool {
    s.len() <= 63 && is_label(s)
}

/// `IsDNS1123Subdomain`: at most 253 characters, dot-separated labels as above (of any length).
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_label)
}

fn is_label(label: &str) -> bool {
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = label.as_bytes();
    bytes.first().is_some_and(alnum)
        && bytes.last().is_some_and(alnum)
        && bytes.iter().all(|b| alnum(b) || *b == b'-')
}

#[cfg(test)]
mod tests {
    use super::violations;
    use serde_json::json;

    fn pod(claims: serde_json::Value, container_claims: serde_json::Value) -> serde_json::Value {
        json!({"metadata": {"name": "worker-0"}, "spec": {
            "resourceClaims": claims,
            "containers": [{"name": "t", "resources": {"claims": container_claims}}]
        }})
    }

    #[test]
    fn vendor_pods_keep_the_rules() {
        // GKE's A4X Max pod (CEA `gpudirect-rdma/nccl-test-a4x-max.yaml`).
        let ok = pod(
            json!([{"name": "compute-domain-channel", "resourceClaimTemplateName": "nccl-test-compute-domain-channel"},
                   {"name": "rdma", "resourceClaimTemplateName": "nccl-test-all-mrdma"}]),
            json!([{"name": "compute-domain-channel"}, {"name": "rdma"}]),
        );
        assert_eq!(violations(&ok), Vec::<String>::new());
        assert!(violations(&json!({"spec": {"containers": [{"name": "t"}]}})).is_empty());
    }

    #[test]
    fn each_rule_is_found() {
        for (claims, container_claims, expected) in [
            (
                json!([{"resourceClaimName": "a"}]),
                json!([]),
                "spec.resourceClaims[0].name: Required value",
            ),
            (
                json!([{"name": "a", "resourceClaimName": "x"}, {"name": "a", "resourceClaimName": "y"}]),
                json!([]),
                "spec.resourceClaims[1].name: Duplicate value: \"a\"",
            ),
            (
                json!([{"name": "A_b", "resourceClaimName": "x"}]),
                json!([]),
                "spec.resourceClaims[0].name: \"A_b\" is not a DNS-1123 label",
            ),
            (
                json!([{"name": "a"}]),
                json!([]),
                "spec.resourceClaims[0]: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
            ),
            (
                json!([{"name": "a", "resourceClaimName": "x", "resourceClaimTemplateName": "y"}]),
                json!([]),
                "spec.resourceClaims[0]: at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
            ),
            (
                json!([{"name": "a", "resourceClaimTemplateName": "Bad"}]),
                json!([]),
                "spec.resourceClaims[0].resourceClaimTemplateName: \"Bad\" is not a DNS-1123 subdomain",
            ),
            (
                json!([{"name": "a", "resourceClaimTemplateName": "x".repeat(254)}]),
                json!([]),
                "is not a DNS-1123 subdomain",
            ),
            (
                json!([{"name": "a".repeat(63), "resourceClaimTemplateName": "t"}]),
                json!([{"name": "a".repeat(63)}]),
                "",
            ),
            (
                json!([{"name": "a", "resourceClaimName": "x"}]),
                json!([{"name": "b"}]),
                "spec.containers[0].resources.claims[0]: Not found: \"b\": must be one of the names in pod.spec.resourceClaims",
            ),
            (
                json!([{"name": "a", "resourceClaimName": "x"}]),
                json!([{"name": "a"}, {"name": "a"}]),
                "spec.containers[0].resources.claims[1]: Duplicate value: \"a\"",
            ),
            (
                json!([{"name": "a", "resourceClaimName": "x"}]),
                json!([{}]),
                "spec.containers[0].resources.claims[0]: Required value",
            ),
        ] {
            let found = violations(&pod(claims, container_claims));
            if expected.is_empty() {
                assert!(found.is_empty(), "{found:?}");
            } else {
                assert!(
                    found.iter().any(|v| v.contains(expected)),
                    "{expected}\n{found:?}"
                );
            }
        }
        // The claim made from a template is named <pod>-<claim>: a long pod name can break it.
        let mut long = pod(
            json!([{"name": "rdma", "resourceClaimTemplateName": "t"}]),
            json!([]),
        );
        long["metadata"]["name"] = json!("p".repeat(250));
        assert_eq!(violations(&long).len(), 1);
    }
}
