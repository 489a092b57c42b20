//! The short summary `make preview` leads with: what the policy added where, read from the pod
//! before and after, in words a reader takes in at a glance (the JSON Patch that follows is for
//! checking, not reading). Anything the named parts do not cover is listed by its path, so that
//! the summary never hides a change.

use serde_json::{Map, Value};

/// The summary's lines: per container, then for the pod.
pub fn changes(before: &Value, after: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    for list in ["initContainers", "containers"] {
        let old = named(&before["spec"][list]);
        for container in after["spec"][list].as_array().into_iter().flatten() {
            let name = container["name"].as_str().unwrap_or("?");
            let Some(was) = old.iter().find(|(n, _)| *n == name).map(|(_, c)| *c) else {
                let kind = if list == "initContainers" {
                    "init container (sidecar)"
                } else {
                    "container (sidecar)"
                };
                lines.push(format!("pod: new {kind} {name}"));
                continue;
            };
            let mut parts = Vec::new();
            for (field, label) in [("limits", "limits"), ("requests", "requests")] {
                let added = added_entries(&was["resources"][field], &container["resources"][field]);
                if !added.is_empty() {
                    parts.push(format!("{label} {}", added.join(", ")));
                }
            }
            let claims = added_names(
                &was["resources"]["claims"],
                &container["resources"]["claims"],
                "name",
            );
            if !claims.is_empty() {
                parts.push(format!("claims {}", claims.join(", ")));
            }
            let env = added_names(&was["env"], &container["env"], "name");
            if !env.is_empty() {
                parts.push(format!("env {}", env.join(", ")));
            }
            let mounts = added_mounts(&was["volumeMounts"], &container["volumeMounts"]);
            if !mounts.is_empty() {
                parts.push(format!("mounts {}", mounts.join(", ")));
            }
            let capabilities = added_names(
                &was["securityContext"]["capabilities"]["add"],
                &container["securityContext"]["capabilities"]["add"],
                "",
            );
            if !capabilities.is_empty() {
                parts.push(format!("capabilities {}", capabilities.join(", ")));
            }
            if !parts.is_empty() {
                lines.push(format!("container {name}: {}", parts.join("; ")));
            }
        }
    }
    let spec = (&before["spec"], &after["spec"]);
    for (field, label, key) in [
        ("volumes", "volumes", "name"),
        ("resourceClaims", "resource claims", "name"),
    ] {
        let added = added_names(&spec.0[field], &spec.1[field], key);
        if !added.is_empty() {
            lines.push(format!("pod: {label} {}", added.join(", ")));
        }
    }
    for (field, label) in [("annotations", "annotations"), ("labels", "labels")] {
        let added = added_entries(&before["metadata"][field], &after["metadata"][field]);
        if !added.is_empty() {
            lines.push(format!("pod: {label} {}", added.join(", ")));
        }
    }
    // Any other field of the spec the policy set (hostNetwork, dnsPolicy, ...).
    let covered = ["containers", "initContainers", "volumes", "resourceClaims"];
    let empty = Map::new();
    let old_spec = spec.0.as_object().unwrap_or(&empty);
    for (key, value) in spec.1.as_object().unwrap_or(&empty) {
        if !covered.contains(&key.as_str()) && old_spec.get(key) != Some(value) {
            lines.push(format!("pod: spec.{key} set to {}", short(value)));
        }
    }
    lines
}

/// The containers (or anything with a name) of a list, by name.
fn named(list: &Value) -> Vec<(&str, &Value)> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| Some((c["name"].as_str()?, c)))
        .collect()
}

/// The entries of `after` (a map) that `before` lacks or holds with another value, as `key=value`.
fn added_entries(before: &Value, after: &Value) -> Vec<String> {
    let Some(after) = after.as_object() else {
        return Vec::new();
    };
    after
        .iter()
        .filter(|(key, value)| before.get(key.as_str()) != Some(*value))
        .map(|(key, value)| format!("{key}={}", short(value)))
        .collect()
}

/// The items of `after` (a list) that `before` lacks, by their `key` field (or, for a list of
/// strings, `key` empty, themselves).
fn added_names(before: &Value, after: &Value, key: &str) -> Vec<String> {
    let name = |item: &Value| {
        if key.is_empty() {
            item.as_str().map(String::from)
        } else {
            item[key].as_str().map(String::from)
        }
    };
    let old: Vec<String> = before
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(name)
        .collect();
    after
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(name)
        .filter(|n| !old.contains(n))
        .collect()
}

/// The mounts of `after` that `before` lacks, as `volume at path`.
fn added_mounts(before: &Value, after: &Value) -> Vec<String> {
    let old = before.as_array().cloned().unwrap_or_default();
    after
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| !old.contains(m))
        .map(|m| {
            format!(
                "{} at {}",
                m["name"].as_str().unwrap_or("?"),
                m["mountPath"].as_str().unwrap_or("?")
            )
        })
        .collect()
}

/// A value in a line: a string as it is, anything else as compact JSON, cut short.
fn short(value: &Value) -> String {
    // One line each: a multi-line value (a YAML list in an annotation) is folded.
    let text = match value {
        Value::String(s) => s.split_whitespace().collect::<Vec<_>>().join(" "),
        other => other.to_string(),
    };
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_what_was_added_where() {
        let before = json!({"metadata": {}, "spec": {"containers": [
            {"name": "trainer", "env": [{"name": "A", "value": "1"}], "resources": {"limits": {"nvidia.com/gpu": "8"}}}
        ]}});
        let after = json!({"metadata": {"annotations": {"k": "v"}}, "spec": {"containers": [
            {"name": "trainer", "env": [{"name": "A", "value": "1"}, {"name": "NCCL_X", "value": "y"}],
             "resources": {"limits": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}},
             "volumeMounts": [{"name": "efa", "mountPath": "/opt/efa"}]},
            {"name": "tcpxo-daemon"}
        ], "volumes": [{"name": "efa"}], "hostNetwork": true}});
        let lines = changes(&before, &after);
        assert_eq!(
            lines,
            [
                "container trainer: limits vpc.amazonaws.com/efa=32; env NCCL_X; mounts efa at /opt/efa",
                "pod: new container (sidecar) tcpxo-daemon",
                "pod: volumes efa",
                "pod: annotations k=v",
                "pod: spec.hostNetwork set to true",
            ]
        );
    }

    #[test]
    fn no_change_no_line() {
        let pod = json!({"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c"}]}});
        assert!(changes(&pod, &pod).is_empty());
    }
}
