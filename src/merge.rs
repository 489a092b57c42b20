//! The named merge operations: each adds one kind of thing to a pod's JSON without touching what
//! the user wrote, and says whether it changed anything. "Nothing changed" is how a second pass
//! over the policy's own output accepts the pod as it is.
//!
//! Absent and `null` mean the same (Kubernetes omits empty fields); any other wrong JSON type is
//! an error, located relative to the object passed in.

use serde_json::{Map, Value};

use crate::error::{Rejection, malformed};
use crate::profile::{EnvVar, Mount};

pub type Object = Map<String, Value>;

/// The object at `key`, `None` when absent or null.
pub fn object<'a>(parent: &'a Object, key: &str) -> Result<Option<&'a Object>, Rejection> {
    match parent.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(_) => Err(malformed(key, "an object")),
    }
}

/// The list at `key`, empty when absent or null.
pub fn list<'a>(parent: &'a Object, key: &str) -> Result<&'a [Value], Rejection> {
    match parent.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(malformed(key, "a list")),
    }
}

/// The object at `key`, created when absent or null.
pub fn object_mut<'a>(parent: &'a mut Object, key: &str) -> Result<&'a mut Object, Rejection> {
    let slot = parent.entry(key).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut()
        .ok_or_else(|| malformed(key, "an object"))
}

/// The list at `key`, created when absent or null.
pub fn list_mut<'a>(parent: &'a mut Object, key: &str) -> Result<&'a mut Vec<Value>, Rejection> {
    let slot = parent.entry(key).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Array(Vec::new());
    }
    slot.as_array_mut().ok_or_else(|| malformed(key, "a list"))
}

/// The `name` of a list entry, if it has one.
pub fn name_of(entry: &Value) -> Option<&str> {
    entry.get("name").and_then(Value::as_str)
}

/// Appends `additions` to the list at `key`, creating it only if there is something to add.
fn append(parent: &mut Object, key: &str, additions: Vec<Value>) -> Result<bool, Rejection> {
    if additions.is_empty() {
        return Ok(false);
    }
    list_mut(parent, key)?.extend(additions);
    Ok(true)
}

/// Adds each variable the container has no entry of that name for (by `value` or `valueFrom`).
pub fn add_env<'v>(
    container: &mut Object,
    vars: impl IntoIterator<Item = &'v EnvVar>,
) -> Result<bool, Rejection> {
    // Names read once: a container may have hundreds of entries.
    let existing: Vec<&str> = list(container, "env")?.iter().filter_map(name_of).collect();
    let missing = vars
        .into_iter()
        .filter(|var| !existing.contains(&var.name))
        .map(|var| var.to_json())
        .collect();
    append(container, "env", missing)
}

/// Adds each mount whose path and volume are both unused in the container: a user's own
/// `/dev/shm` stays, whatever volume backs it.
pub fn add_mounts<'m>(
    container: &mut Object,
    mounts: impl IntoIterator<Item = &'m Mount>,
) -> Result<bool, Rejection> {
    let existing = list(container, "volumeMounts")?;
    let names: Vec<&str> = existing.iter().filter_map(name_of).collect();
    let paths: Vec<&str> = existing
        .iter()
        .filter_map(|e| e.get("mountPath").and_then(Value::as_str))
        .collect();
    let missing = mounts
        .into_iter()
        .filter(|m| !names.contains(&m.volume) && !paths.contains(&m.path))
        .map(|m| m.to_json())
        .collect();
    append(container, "volumeMounts", missing)
}

/// A capability as the kubelet reads it: case-insensitive, with or without `CAP_`.
pub fn same_capability(a: &str, b: &str) -> bool {
    fn bare(c: &str) -> &str {
        match c.get(..4) {
            Some(prefix) if prefix.eq_ignore_ascii_case("CAP_") => &c[4..],
            _ => c,
        }
    }
    bare(a).eq_ignore_ascii_case(bare(b))
}

/// The container's `securityContext.capabilities.add`, empty when any level is absent.
pub fn added_capabilities(container: &Object) -> Result<&[Value], Rejection> {
    let Some(security) = object(container, "securityContext")? else {
        return Ok(&[]);
    };
    let Some(capabilities) =
        object(security, "capabilities").map_err(|e| e.within("securityContext"))?
    else {
        return Ok(&[]);
    };
    list(capabilities, "add").map_err(|e| e.within("securityContext.capabilities"))
}

/// Appends each capability not already added in some spelling; never drops or reorders the list.
pub fn add_capabilities(container: &mut Object, wanted: &[&str]) -> Result<bool, Rejection> {
    let existing = added_capabilities(container)?;
    let missing: Vec<Value> = wanted
        .iter()
        .filter(|cap| {
            !existing
                .iter()
                .any(|e| e.as_str().is_some_and(|e| same_capability(e, cap)))
        })
        .map(|cap| Value::from(*cap))
        .collect();
    if missing.is_empty() {
        return Ok(false);
    }
    let security = object_mut(container, "securityContext")?;
    let capabilities =
        object_mut(security, "capabilities").map_err(|e| e.within("securityContext"))?;
    append(capabilities, "add", missing).map_err(|e| e.within("securityContext.capabilities"))
}

/// Sets `key` to `value` unless it is already set (to anything, `null` aside).
pub fn set_if_absent(map: &mut Object, key: &str, value: impl FnOnce() -> Value) -> bool {
    match map.get(key) {
        Some(v) if !v.is_null() => false,
        _ => {
            map.insert(key.to_string(), value());
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    const VARS: &[EnvVar] = &[
        EnvVar {
            name: "A",
            value: "ours",
        },
        EnvVar {
            name: "B",
            value: "ours",
        },
    ];

    #[test]
    fn env_keeps_the_users_entries_and_order() {
        let mut c = obj(
            json!({"env": [{"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}, {"name": "Z", "value": "1"}]}),
        );
        assert!(add_env(&mut c, VARS).unwrap());
        assert_eq!(
            c["env"],
            json!([{"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}, {"name": "Z", "value": "1"}, {"name": "A", "value": "ours"}])
        );
        assert!(!add_env(&mut c, VARS).unwrap());
    }

    #[test]
    fn nothing_to_add_creates_nothing() {
        let mut c = obj(json!({"env": null}));
        assert!(!add_mounts(&mut c, []).unwrap());
        assert!(!add_capabilities(&mut c, &[]).unwrap());
        assert_eq!(c, obj(json!({"env": null})));
        assert!(add_env(&mut c, VARS).unwrap());
        assert_eq!(c["env"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn mounts_skip_a_taken_path_or_name() {
        let shm = Mount {
            volume: "nv-shared-memory",
            path: "/dev/shm",
            read_only: false,
        };
        let topo = Mount {
            volume: "nccl-topo",
            path: "/etc/nccl",
            read_only: true,
        };
        let mut c = obj(
            json!({"volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}, {"name": "nccl-topo", "mountPath": "/topo"}]}),
        );
        assert!(!add_mounts(&mut c, [&shm, &topo]).unwrap());
    }

    #[test]
    fn capabilities_compare_without_prefix_or_case() {
        assert!(
            same_capability("CAP_IPC_LOCK", "IPC_LOCK") && same_capability("ipc_lock", "IPC_LOCK")
        );
        assert!(!same_capability("IPC_LOCKED", "IPC_LOCK"));
        let mut c = obj(
            json!({"securityContext": {"capabilities": {"add": ["cap_ipc_lock"], "drop": ["ALL"]}}}),
        );
        assert!(!add_capabilities(&mut c, &["IPC_LOCK"]).unwrap());
        let mut c = obj(json!({"securityContext": {"capabilities": {"add": ["NET_RAW"]}}}));
        assert!(add_capabilities(&mut c, &["IPC_LOCK"]).unwrap());
        assert_eq!(
            c["securityContext"]["capabilities"]["add"],
            json!(["NET_RAW", "IPC_LOCK"])
        );
        let mut c = obj(json!({"securityContext": null}));
        assert!(add_capabilities(&mut c, &["IPC_LOCK"]).unwrap());
        assert_eq!(
            c["securityContext"],
            json!({"capabilities": {"add": ["IPC_LOCK"]}})
        );
    }

    #[test]
    fn wrong_types_are_located() {
        let mut c = obj(json!({"securityContext": {"capabilities": {"add": "IPC_LOCK"}}}));
        let error = add_capabilities(&mut c, &["IPC_LOCK"])
            .unwrap_err()
            .within("spec.containers[0]");
        assert_eq!(
            error,
            malformed(
                "spec.containers[0].securityContext.capabilities.add",
                "a list"
            )
        );
        let mut c = obj(json!({"env": {"A": "1"}}));
        assert_eq!(
            add_env(&mut c, VARS).unwrap_err(),
            malformed("env", "a list")
        );
    }

    #[test]
    fn set_if_absent_treats_null_as_absent() {
        let mut m = obj(json!({"a": 1, "b": null}));
        assert!(!set_if_absent(&mut m, "a", || json!(2)));
        assert!(set_if_absent(&mut m, "b", || json!(2)));
        assert_eq!(m, obj(json!({"a": 1, "b": 2})));
    }
}
