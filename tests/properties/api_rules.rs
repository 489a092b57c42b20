//! The Kubernetes API rules a mutation could break, as a set of violations: a mutated pod may
//! keep the input's own violations, never add one.

use crate::claim_rules;
use multinode_networking_policy::k8s::quantity;
use serde_json::Value;
use std::collections::BTreeMap;
use std::collections::BTreeSet;

pub(crate) fn as_list(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

pub(crate) fn same_capability(a: &str, b: &str) -> bool {
    let bare = |c: &str| {
        let upper = c.to_ascii_uppercase();
        upper.strip_prefix("CAP_").unwrap_or(&upper).to_string()
    };
    bare(a) == bare(b)
}

/// Extended resources: qualified names outside `kubernetes.io`, not `requests.`-prefixed quotas.
pub(crate) fn is_extended(resource: &str) -> bool {
    resource.contains('/')
        && !resource.contains("kubernetes.io/")
        && !resource.starts_with("requests.")
}

/// A quantity in nano-units, for comparing cpu requests with limits.
pub(crate) fn nanos(value: &Value) -> Option<i128> {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let (exp10, binary): (i32, u32) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "Ki" => (0, 1),
        "Mi" => (0, 2),
        "Gi" => (0, 3),
        _ => return None,
    };
    let digits: i128 = format!("{int}{frac}").parse().ok()?;
    let scale = 9 + exp10 - i32::try_from(frac.len()).ok()?;
    let value = digits.checked_mul(1024i128.checked_pow(binary)?)?;
    if scale >= 0 {
        value.checked_mul(10i128.checked_pow(scale.unsigned_abs())?)
    } else {
        Some(value / 10i128.checked_pow(scale.unsigned_abs())?)
    }
}

/// The seccomp profile type a legacy annotation value stands for.
pub(crate) fn annotation_seccomp(value: &str) -> Option<&'static str> {
    match value {
        "runtime/default" | "docker/default" => Some("RuntimeDefault"),
        "unconfined" => Some("Unconfined"),
        v if v.starts_with("localhost/") => Some("Localhost"),
        _ => None,
    }
}

pub(crate) fn violations(pod: &Value) -> BTreeSet<String> {
    // The API server's rules for DRA claims (`support/claim_rules.rs`, shared with the case runner).
    let mut found: BTreeSet<String> = claim_rules::violations(pod).into_iter().collect();
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    let annotations = pod
        .pointer("/metadata/annotations")
        .and_then(Value::as_object);
    let annotation = |key: &str| annotations.and_then(|a| a.get(key)).and_then(Value::as_str);

    // Linux-only security fields are refused in a pod whose `spec.os.name` is `windows`.
    let windows = spec.pointer("/os/name").and_then(Value::as_str) == Some("windows");
    let mut names = BTreeMap::<&str, usize>::new();
    let mut volumes = BTreeSet::new();
    for v in as_list(spec.get("volumes")) {
        if let Some(name) = v.get("name").and_then(Value::as_str) {
            if !volumes.insert(name) {
                found.insert(format!("volume {name} is declared twice"));
            }
        }
    }
    if let (Some(field), Some(value)) = (
        spec.pointer("/securityContext/seccompProfile/type")
            .and_then(Value::as_str),
        annotation("seccomp.security.alpha.kubernetes.io/pod"),
    ) {
        if annotation_seccomp(value) != Some(field) {
            found.insert("the pod's seccomp field and annotation differ".into());
        }
    }

    // GKE reads its interfaces annotation as a JSON list of interfaces, each named once.
    if let Some(text) = annotation("networking.gke.io/interfaces") {
        match serde_json::from_str::<Vec<Value>>(text) {
            Ok(list) => {
                let mut seen = BTreeSet::new();
                for i in &list {
                    let name = i["interfaceName"].as_str().unwrap_or("");
                    if !seen.insert(name.to_string()) || i["network"].as_str().is_none() {
                        found.insert(format!(
                            "GKE interface {name:?} is named twice or has no network"
                        ));
                    }
                }
            }
            Err(_) => {
                found.insert("the GKE interfaces annotation is not a JSON list".into());
            }
        }
    }

    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for (i, c) in as_list(spec.get(list)).iter().enumerate() {
            let at = format!("{list}[{i}]");
            if let Some(name) = c.get("name").and_then(Value::as_str) {
                *names.entry(name).or_default() += 1;
                if let (Some(field), Some(value)) = (
                    c.pointer("/securityContext/seccompProfile/type")
                        .and_then(Value::as_str),
                    annotation(&format!(
                        "container.seccomp.security.alpha.kubernetes.io/{name}"
                    )),
                ) {
                    if annotation_seccomp(value) != Some(field) {
                        found.insert(format!("{at}: seccomp field and annotation differ"));
                    }
                }
            }
            let mut env = BTreeSet::new();
            for e in as_list(c.get("env")) {
                let name = e.get("name").and_then(Value::as_str).unwrap_or("");
                if !env.insert(name) {
                    found.insert(format!("{at}: env {name} appears twice"));
                }
                if e.get("value").is_some_and(|v| !v.is_null())
                    && e.get("valueFrom").is_some_and(|v| !v.is_null())
                {
                    found.insert(format!("{at}: env {name} has value and valueFrom"));
                }
            }
            let mut paths = BTreeSet::new();
            for m in as_list(c.get("volumeMounts")) {
                let path = m.get("mountPath").and_then(Value::as_str).unwrap_or("");
                if !paths.insert(path) {
                    found.insert(format!("{at}: mountPath {path} appears twice"));
                }
                let volume = m.get("name").and_then(Value::as_str).unwrap_or("");
                if !volumes.contains(volume) {
                    found.insert(format!("{at}: mount {path} names no volume ({volume})"));
                }
            }
            let requests = c.pointer("/resources/requests").and_then(Value::as_object);
            let limits = c.pointer("/resources/limits").and_then(Value::as_object);
            let keys: BTreeSet<&String> = requests
                .iter()
                .chain(limits.iter())
                .flat_map(|m| m.keys())
                .collect();
            for key in keys {
                let request = requests.and_then(|r| r.get(key)).filter(|v| !v.is_null());
                let limit = limits.and_then(|l| l.get(key)).filter(|v| !v.is_null());
                if is_extended(key) {
                    for v in request.iter().chain(limit.iter()) {
                        if quantity::whole(&v.to_string()).is_err() {
                            found.insert(format!("{at}: {key} {v} is not a whole number"));
                        }
                    }
                    let same = match (request, limit) {
                        (Some(r), Some(l)) => {
                            quantity::whole(&r.to_string()).ok()
                                == quantity::whole(&l.to_string()).ok()
                        }
                        (Some(_), None) => false,
                        _ => true,
                    };
                    if !same {
                        found.insert(format!("{at}: {key} differs in requests and limits"));
                    }
                } else if let (Some(r), Some(l)) = (request.and_then(nanos), limit.and_then(nanos))
                {
                    if r > l {
                        found.insert(format!("{at}: {key} request is above its limit"));
                    }
                }
            }
            let security = c.get("securityContext");
            let add = as_list(security.and_then(|s| s.pointer("/capabilities/add")));
            let add: Vec<&str> = add.iter().filter_map(Value::as_str).collect();
            for (j, a) in add.iter().enumerate() {
                if add[..j].iter().any(|b| same_capability(a, b)) {
                    found.insert(format!("{at}: capability {a} is added twice"));
                }
            }
            let no_escalation = security
                .and_then(|s| s.get("allowPrivilegeEscalation"))
                .and_then(Value::as_bool)
                == Some(false);
            let privileged = security
                .and_then(|s| s.get("privileged"))
                .and_then(Value::as_bool)
                == Some(true);
            let sys_admin = add.iter().any(|a| same_capability(a, "SYS_ADMIN"));
            if no_escalation && (privileged || sys_admin) {
                found.insert(format!(
                    "{at}: allowPrivilegeEscalation false with privileged or SYS_ADMIN"
                ));
            }
            if windows {
                for field in [
                    "seccompProfile",
                    "allowPrivilegeEscalation",
                    "capabilities",
                    "privileged",
                ] {
                    if security
                        .and_then(|s| s.get(field))
                        .is_some_and(|v| !v.is_null())
                    {
                        found.insert(format!("{at}: {field} is forbidden in a Windows pod"));
                    }
                }
            }
        }
    }
    for (name, count) in names {
        if count > 1 {
            found.insert(format!("container name {name} is used {count} times"));
        }
    }
    found
}

/// Whether `k8s-openapi` reads the value as a Pod: every known field of the right JSON type.
pub(crate) fn typed_pod(value: &Value) -> Result<(), String> {
    serde_json::from_value::<k8s_openapi::api::core::v1::Pod>(value.clone())
        .map(drop)
        .map_err(|e| e.to_string())
}
