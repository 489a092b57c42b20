//! The named merge operations: each adds one kind of thing to a pod without touching what the
//! user wrote, and says whether it changed anything. "Nothing changed" is how a second pass over
//! the policy's own output accepts the pod as it is.
//!
//! They work on the [`view`](crate::json::object) of the pod: objects the engine descends into are parsed,
//! lists it only reads and extends (`env`, `volumeMounts`, `capabilities.add`, `volumes`,
//! `initContainers`) stay text, read leniently item by item and extended by splicing. Absent and
//! `null` mean the same (Kubernetes omits empty fields); any other wrong JSON type is an error,
//! located relative to the object passed in.

use std::borrow::Cow;

use serde_json::value::RawValue;

use crate::error::{Error, malformed};
use crate::json::JsonType;
use crate::json::lenient::{Entry, Items, Lenient, Loose, Text, read};
use crate::json::object::{Member, Node, Object, Shape};
use crate::json::tape::{Tape, Value};
use crate::json::write::{RenderedItems, joined, render_string};
use crate::profile::{EnvVar, Mount, Volume};

/// How the engine reads a member, which must be how the view's shape reads it: a key read as an
/// object that the shape keeps as text would make every pod that has it "malformed", and a list
/// read as text that the shape parses would never be extended. Checked on every read in debug
/// builds, so every test that reaches a read checks it; release builds (the module) skip it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    Object,
    List,
    Text,
}

pub fn expect_read(parent: &Object<'_>, key: &str, read: Read) {
    let parsed = match parent.shape().member(key) {
        Some(Member::Object(_)) => Read::Object,
        Some(Member::List(_)) => Read::List,
        None => Read::Text,
    };
    debug_assert_eq!(
        parsed, read,
        "the engine reads `{key}` as {read:?}, but the view's shape reads it as {parsed:?}: change the shape in engine/mod.rs"
    );
}

/// The object at `key`, `None` when absent or null.
pub fn object<'o, 'a>(parent: &'o Object<'a>, key: &str) -> Result<Option<&'o Object<'a>>, Error> {
    expect_read(parent, key, Read::Object);
    match parent.get(key) {
        None => Ok(None),
        Some(Node::Object(object)) => Ok(Some(object)),
        Some(node) if node.is_null() => Ok(None),
        Some(_) => Err(malformed(key, JsonType::Object)),
    }
}

/// The object at `key` to change, `None` when absent or null.
pub fn object_mut<'o, 'a>(
    parent: &'o mut Object<'a>,
    key: &str,
) -> Result<Option<&'o mut Object<'a>>, Error> {
    expect_read(parent, key, Read::Object);
    match parent.get_mut(key) {
        None => Ok(None),
        Some(Node::Object(object)) => Ok(Some(object)),
        Some(node) if node.is_null() => Ok(None),
        Some(_) => Err(malformed(key, JsonType::Object)),
    }
}

/// The object at `key`, created when absent or null.
pub fn object_entry<'o, 'a>(
    parent: &'o mut Object<'a>,
    key: &str,
) -> Result<&'o mut Object<'a>, Error> {
    expect_read(parent, key, Read::Object);
    if parent.get(key).is_none_or(Node::is_null) {
        let shape = match parent.shape().member(key) {
            Some(Member::Object(shape)) => shape,
            _ => &Shape::TEXT,
        };
        parent.insert(key, Node::Object(Object::of(shape)));
    }
    match parent.get_mut(key) {
        Some(Node::Object(object)) => Ok(object),
        _ => Err(malformed(key, JsonType::Object)),
    }
}

/// The request's text of the list at `key`, `None` when absent or null.
fn list_text<'a>(parent: &Object<'a>, key: &str) -> Result<Option<&'a RawValue>, Error> {
    expect_read(parent, key, Read::Text);
    match parent.get(key) {
        None => Ok(None),
        Some(node) if node.is_null() => Ok(None),
        Some(Node::Raw(raw) | Node::Extended(raw, _)) if raw.get().starts_with('[') => {
            Ok(Some(raw))
        }
        // The policy's own additions are not read back.
        Some(Node::New(text)) if text.starts_with('[') => Ok(None),
        Some(_) => Err(malformed(key, JsonType::List)),
    }
}

/// The items the request has in the list at `key`, each read leniently (an item of the wrong
/// shape reads as `T::default()`); empty when absent or null.
pub fn items<'a, T: Lenient<'a>>(parent: &Object<'a>, key: &str) -> Result<Vec<T>, Error> {
    let Some(list) = list_text(parent, key)? else {
        return Ok(Vec::new());
    };
    read::<Loose<Items<T>>>(list.get())
        .map(|items| items.0.0)
        .map_err(|_| malformed(key, JsonType::List))
}

/// The items the request has in the list at `key`, as text.
pub fn raw_items<'a>(parent: &Object<'a>, key: &str) -> Result<Vec<&'a RawValue>, Error> {
    let Some(list) = list_text(parent, key)? else {
        return Ok(Vec::new());
    };
    crate::json::lenient::list(list.get())
        .ok()
        .flatten()
        .ok_or_else(|| malformed(key, JsonType::List))
}

/// A value's string, if it is one.
pub fn text<'a>(node: &Node<'a>) -> Option<Cow<'a, str>> {
    read::<Loose<Text<'a>>>(node.raw()?.get())
        .ok()
        .and_then(|text| text.0.0)
}

/// The JSON text of a value, the request's or the policy's.
pub fn json_text<'n>(node: &'n Node<'_>) -> Option<&'n str> {
    match node {
        Node::Raw(raw) => Some(raw.get()),
        Node::New(text) => Some(text),
        _ => None,
    }
}

/// The `name` of each item of the list at `key`, where it has one.
pub fn names<'a>(parent: &Object<'a>, key: &str) -> Result<Vec<Cow<'a, str>>, Error> {
    Ok(items::<Entry<'a>>(parent, key)?
        .into_iter()
        .filter_map(|named| named.name.0)
        .collect())
}

/// Appends JSON items (comma-separated text) to the list at `key`, creating it if absent.
pub fn append(parent: &mut Object<'_>, key: &str, new_items: String) -> Result<bool, Error> {
    expect_read(parent, key, Read::Text);
    if new_items.is_empty() {
        return Ok(false);
    }
    let node = match parent.get_mut(key) {
        Some(node) if !node.is_null() => node,
        _ => {
            parent.insert(key, Node::New(Cow::Owned(format!("[{new_items}]"))));
            return Ok(true);
        }
    };
    match node {
        Node::Raw(raw) if raw.get().starts_with('[') => *node = Node::Extended(raw, new_items),
        Node::Extended(_, appended) => {
            appended.push(',');
            appended.push_str(&new_items);
        }
        // A list the policy wrote in this request (the fabric's claim, then the channel's).
        Node::New(list) if list.ends_with(']') => {
            let list = list.to_mut();
            list.pop();
            if list.len() > 1 {
                list.push(',');
            }
            list.push_str(&new_items);
            list.push(']');
        }
        _ => return Err(malformed(key, JsonType::List)),
    }
    Ok(true)
}

/// Adds each variable the container has no entry of that name for (by `value` or `valueFrom`).
/// Returns the entries it added.
pub fn add_env<'a>(
    container: &mut Object<'_>,
    vars: &RenderedItems<'_, EnvVar<'a>>,
    leave_out: &[&str],
) -> Result<Vec<EnvVar<'a>>, Error> {
    // Names read once: a container may have hundreds of entries.
    let existing = names(container, "env")?;
    let (text, missing) =
        vars.select(|var| !existing.contains(&var.name) && !leave_out.contains(&var.name.as_ref()));
    append(container, "env", text)?;
    Ok(missing.into_iter().cloned().collect())
}

/// Adds each mount whose path and volume are both unused in the container: a user's own
/// `/dev/shm` stays, whatever volume backs it. Returns the volumes it mounted.
pub fn add_mounts<'m, 'a>(
    container: &mut Object<'_>,
    mounts: &RenderedItems<'m, Mount<'a>>,
) -> Result<Mounted<'m, 'a>, Error> {
    let existing = items::<Entry<'_>>(container, "volumeMounts")?;
    add_mounts_beside(container, mounts, &existing)
}

/// [`add_mounts`], the container's `volumeMounts` read already (`existing`).
pub fn add_mounts_beside<'m, 'a>(
    container: &mut Object<'_>,
    mounts: &RenderedItems<'m, Mount<'a>>,
    existing: &[Entry<'_>],
) -> Result<Mounted<'m, 'a>, Error> {
    let free = |mount: &Mount| {
        !existing.iter().any(|m| {
            m.name.as_str() == Some(mount.volume) || m.mount_path.as_str() == Some(&mount.path)
        })
    };
    let mut done = Mounted::default();
    for mount in mounts.items() {
        if free(mount) {
            done.volumes.push(mount.volume);
            continue;
        }
        // The container's own mount at our path, of another volume (one of our volume's name is
        // ours, wherever the user put it).
        let theirs = existing.iter().find(|m| {
            m.mount_path.as_str() == Some(&mount.path) && m.name.as_str() != Some(mount.volume)
        });
        if let Some(theirs) = theirs {
            let name = theirs.name.as_str().unwrap_or("a volume without a name");
            done.shadowed.push((name.to_string(), mount));
        }
    }
    append(container, "volumeMounts", mounts.text_of(free))?;
    Ok(done)
}

/// What [`add_mounts`] did to a container.
#[derive(Debug, Default)]
pub struct Mounted<'m, 'a> {
    /// The volumes it mounted.
    pub volumes: Vec<&'static str>,
    /// Each mount it left out because the container mounts another volume at its path: that
    /// volume's name, and ours.
    pub shadowed: Vec<(String, &'m Mount<'a>)>,
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
pub fn added_capabilities<'a>(container: &Object<'a>) -> Result<Vec<Text<'a>>, Error> {
    let Some(security) = object(container, "securityContext")? else {
        return Ok(Vec::new());
    };
    let Some(capabilities) =
        object(security, "capabilities").map_err(|e| e.within("securityContext"))?
    else {
        return Ok(Vec::new());
    };
    items(capabilities, "add").map_err(|e| e.within("securityContext.capabilities"))
}

/// Appends each capability not already added in some spelling; never drops or reorders the list.
/// Returns those it appended.
pub fn add_capabilities<'a>(
    container: &mut Object<'_>,
    wanted: &[Cow<'a, str>],
) -> Result<Vec<Cow<'a, str>>, Error> {
    let existing = added_capabilities(container)?;
    let missing: Vec<Cow<'a, str>> = wanted
        .iter()
        .filter(|cap| {
            !existing
                .iter()
                .any(|e| e.as_str().is_some_and(|e| same_capability(e, cap)))
        })
        .cloned()
        .collect();
    if missing.is_empty() {
        return Ok(missing);
    }
    let security = object_entry(container, "securityContext")?;
    let capabilities =
        object_entry(security, "capabilities").map_err(|e| e.within("securityContext"))?;
    let rendered: Vec<String> = missing.iter().map(|cap| render_string(cap)).collect();
    append(
        capabilities,
        "add",
        joined(rendered.iter().map(String::as_str)),
    )
    .map_err(|e| e.within("securityContext.capabilities"))?;
    Ok(missing)
}

/// Sets `key` to the JSON text `value` unless it is already set (to anything, `null` aside).
pub fn set_if_absent<'a>(
    map: &mut Object<'a>,
    key: &str,
    value: impl FnOnce() -> Cow<'a, str>,
) -> bool {
    match map.get(key) {
        Some(v) if !v.is_null() => false,
        _ => {
            map.insert(key, Node::New(value()));
            true
        }
    }
}

/// Whether a pod volume (its JSON text) is `ours` under the same name, reading the API server's
/// defaults (`hostPath.type: ""`, `configMap.defaultMode: 420`) as equal to their absence.
pub fn same_volume(ours: &Volume<'_>, pod_volume: &str) -> bool {
    let ours = ours.text();
    let (Ok(theirs), Ok(ours)) = (read::<Tape<'_>>(pod_volume), read::<Tape<'_>>(&ours)) else {
        return false;
    };
    theirs
        .root()
        .same_members(&ours.root(), &|source, theirs, ours| match (theirs, ours) {
            (Some(theirs), Some(ours)) => {
                theirs.same_members(&ours, &|field, a, b| {
                    let defaulted = |v: &Value<'_, '_>| is_default(source, field, v);
                    same_member(a.filter(|v| !defaulted(v)), b.filter(|v| !defaulted(v)))
                }) || theirs.same(&ours)
            }
            _ => false,
        })
}

/// The API server's defaults for a volume source's fields, which read as their absence.
fn is_default(source: &str, field: &str, value: &Value<'_, '_>) -> bool {
    match (source, field) {
        ("hostPath", "type") => value.as_str().is_some_and(|t| t.is_empty()),
        ("configMap", "defaultMode") => value.as_number().and_then(|n| n.as_u64()) == Some(420),
        _ => false,
    }
}

/// One key's members of two objects: equal, or both absent.
fn same_member(a: Option<Value<'_, '_>>, b: Option<Value<'_, '_>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.same(&b),
        (a, b) => a.is_none() && b.is_none(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::json::object::{Member, Shape};
    use crate::profile::{mount, var};
    use serde_json::{Value, json};

    const LEAF: Shape = Shape { members: &[] };
    const SECURITY: Shape = Shape {
        members: &[("capabilities", Member::Object(&LEAF))],
    };
    const CONTAINER: Shape = Shape {
        members: &[("securityContext", Member::Object(&SECURITY))],
    };

    /// The payload of a request whose object is `container`, for `crate::json::object::read_object`.
    pub fn payload(object: &Value) -> String {
        json!({"request": {"object": object}}).to_string()
    }

    /// Runs `change` on `container` and returns its result and the container written back.
    fn changed<R>(container: Value, change: impl FnOnce(&mut Object<'_>) -> R) -> (R, Value) {
        let bytes = payload(&container);
        let mut object = crate::json::object::read_object(&bytes, &CONTAINER).unwrap();
        let result = change(&mut object);
        let mut out = Vec::new();
        object.write(&mut out);
        (result, serde_json::from_slice(&out).unwrap())
    }

    #[test]
    fn a_list_appends_to_the_users_and_to_one_the_policy_wrote() {
        for (before, after) in [
            (json!({}), json!({"l": [1, 2, 3]})),
            (json!({"l": null}), json!({"l": [1, 2, 3]})),
            (json!({"l": [0]}), json!({"l": [0, 1, 2, 3]})),
            (json!({"l": []}), json!({"l": [1, 2, 3]})),
        ] {
            let ((), got) = changed(before, |c| {
                assert!(append(c, "l", "1".into()).unwrap());
                assert!(append(c, "l", "2,3".into()).unwrap());
                assert!(!append(c, "l", String::new()).unwrap());
            });
            assert_eq!(got, after);
        }
        let (refused, _) = changed(json!({"l": {}}), |c| append(c, "l", "1".into()));
        assert!(refused.is_err());
    }

    const VARS: &[EnvVar] = &[var!("A", "ours"), var!("B", "ours")];

    fn add_vars(c: &mut Object<'_>) -> Result<Vec<Cow<'static, str>>, Error> {
        let added = add_env(c, &RenderedItems::new(VARS), &[])?;
        Ok(added.into_iter().map(|var| var.name).collect())
    }

    #[test]
    fn env_keeps_the_users_entries_and_order() {
        let user = json!([{"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}, {"name": "Z", "value": "1"}]);
        let (added, c) = changed(json!({"env": user}), |c| add_vars(c).unwrap());
        assert_eq!(added, ["A"]);
        assert_eq!(
            c["env"],
            json!([{"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}, {"name": "Z", "value": "1"}, {"name": "A", "value": "ours"}])
        );
        let (again, _) = changed(c, |c| add_vars(c).unwrap());
        assert!(again.is_empty());
    }

    #[test]
    fn nothing_to_add_creates_nothing() {
        let (results, c) = changed(json!({"env": null}), |c| {
            (
                add_mounts(c, &RenderedItems::new([])).unwrap().volumes,
                add_capabilities(c, &[]).unwrap(),
            )
        });
        assert_eq!(results, (vec![], vec![]));
        assert_eq!(c, json!({"env": null}));
        let (added, c) = changed(c, |c| add_vars(c).unwrap());
        assert_eq!(added, ["A", "B"]);
        assert_eq!(c["env"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn mounts_skip_a_taken_path_or_name() {
        let shm = mount!("nv-shared-memory", "/dev/shm");
        let topo = mount!("nccl-topo", "/etc/nccl", read_only);
        let ours = RenderedItems::new([&shm, &topo]);
        let user = json!({"volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}, {"name": "nccl-topo", "mountPath": "/topo"}]});
        let (mounted, c) = changed(user.clone(), |c| add_mounts(c, &ours).unwrap());
        assert!(mounted.volumes.is_empty());
        // Another volume at our path is told; our volume at another path is the user's choice.
        let shadowed: Vec<_> = mounted
            .shadowed
            .iter()
            .map(|(theirs, ours)| (theirs.as_str(), ours.volume))
            .collect();
        assert_eq!(shadowed, [("dshm", "nv-shared-memory")]);
        assert_eq!(c, user);
        let (mounted, c) = changed(json!({"volumeMounts": []}), |c| {
            add_mounts(c, &ours).unwrap()
        });
        assert_eq!(mounted.volumes, ["nv-shared-memory", "nccl-topo"]);
        assert!(mounted.shadowed.is_empty());
        assert_eq!(
            c["volumeMounts"],
            json!([{"name": "nv-shared-memory", "mountPath": "/dev/shm"}, {"name": "nccl-topo", "mountPath": "/etc/nccl", "readOnly": true}])
        );
    }

    #[test]
    fn capabilities_compare_without_prefix_or_case() {
        assert!(
            same_capability("CAP_IPC_LOCK", "IPC_LOCK") && same_capability("ipc_lock", "IPC_LOCK")
        );
        assert!(!same_capability("IPC_LOCKED", "IPC_LOCK"));
        let add = |c: &mut Object<'_>| add_capabilities(c, &[Cow::Borrowed("IPC_LOCK")]).unwrap();
        let user = json!({"securityContext": {"capabilities": {"add": ["cap_ipc_lock"], "drop": ["ALL"]}}});
        assert_eq!(changed(user.clone(), add), (vec![], user));
        let (added, c) = changed(
            json!({"securityContext": {"capabilities": {"add": ["NET_RAW"]}}}),
            add,
        );
        assert_eq!(added, ["IPC_LOCK"]);
        assert_eq!(
            c["securityContext"]["capabilities"]["add"],
            json!(["NET_RAW", "IPC_LOCK"])
        );
        let (added, c) = changed(json!({"securityContext": null}), add);
        assert_eq!(added, ["IPC_LOCK"]);
        assert_eq!(
            c["securityContext"],
            json!({"capabilities": {"add": ["IPC_LOCK"]}})
        );
    }

    #[test]
    fn wrong_types_are_located() {
        let (error, _) = changed(
            json!({"securityContext": {"capabilities": {"add": "IPC_LOCK"}}}),
            |c| add_capabilities(c, &[Cow::Borrowed("IPC_LOCK")]).unwrap_err(),
        );
        assert_eq!(
            error.within("spec.containers[0]"),
            malformed(
                "spec.containers[0].securityContext.capabilities.add",
                JsonType::List
            )
        );
        let (error, _) = changed(json!({"env": {"A": "1"}}), |c| add_vars(c).unwrap_err());
        assert_eq!(error, malformed("env", JsonType::List));
    }

    /// The check that keeps the engine's reads and the view's shape in step, seen failing.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(
        expected = "the engine reads `env` as Object, but the view's shape reads it as Text"
    )]
    fn a_read_the_shape_does_not_parse_is_caught() {
        changed(json!({"env": {}}), |c| object(c, "env").map(drop))
            .0
            .ok();
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "the engine reads `securityContext` as Text")]
    fn a_text_read_of_a_parsed_member_is_caught() {
        changed(json!({}), |c| append(c, "securityContext", "1".into()))
            .0
            .ok();
    }

    #[test]
    fn set_if_absent_treats_null_as_absent() {
        let (results, m) = changed(json!({"a": 1, "b": null}), |m| {
            (
                set_if_absent(m, "a", || "2".into()),
                set_if_absent(m, "b", || "2".into()),
            )
        });
        assert_eq!(results, (false, true));
        assert_eq!(m, json!({"a": 1, "b": 2}));
    }

    fn config_map(name: &'static str, config_map: &'static str) -> Volume<'static> {
        Volume {
            name,
            source: crate::profile::Source::ConfigMap {
                name: Cow::Borrowed(config_map),
            },
        }
    }

    #[test]
    fn defaults_the_api_server_fills_in_compare_equal() {
        let topo = config_map("nccl-topo", "nccl-topo");
        assert!(same_volume(
            &topo,
            &json!({"name": "nccl-topo", "configMap": {"name": "nccl-topo"}}).to_string()
        ));
        assert!(same_volume(
            &topo,
            &json!({"name": "nccl-topo", "configMap": {"name": "nccl-topo", "defaultMode": 420}})
                .to_string()
        ));
        assert!(!same_volume(
            &topo,
            &json!({"name": "nccl-topo", "configMap": {"name": "other"}}).to_string()
        ));
        assert!(!same_volume(
            &topo,
            &json!({"name": "nccl-topo", "configMap": {"name": "nccl-topo", "defaultMode": 256}})
                .to_string()
        ));

        let sys = Volume::host_path("nvtcpxo-sys", "/sys", None);
        assert!(same_volume(
            &sys,
            &json!({"name": "nvtcpxo-sys", "hostPath": {"path": "/sys", "type": ""}}).to_string()
        ));
        assert!(!same_volume(
            &sys,
            &json!({"name": "nvtcpxo-sys", "hostPath": {"path": "/sys", "type": "Directory"}})
                .to_string()
        ));
        let shm = Volume {
            name: "nv-shared-memory",
            source: crate::profile::Source::Memory,
        };
        assert!(!same_volume(&shm, &json!({"name": "nv-shared-memory", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}).to_string()));
        // The pod's text, as the request has it: any member order, repeated keys (the last
        // counts), and nothing more or less than ours.
        assert!(same_volume(
            &sys,
            r#"{"hostPath": {"type": "", "path": "/sys"}, "name": "nvtcpxo-sys"}"#
        ));
        assert!(same_volume(
            &sys,
            r#"{"name": "x", "hostPath": {"path": "/tmp"}, "name": "nvtcpxo-sys", "hostPath": {"path": "/sys"}}"#
        ));
        assert!(!same_volume(
            &sys,
            r#"{"name": "nvtcpxo-sys", "hostPath": {"path": "/sys"}, "x": 1}"#
        ));
        assert!(!same_volume(&sys, r#"{"name": "nvtcpxo-sys"}"#));
        assert!(!same_volume(&sys, "not json"));
        let empty = Volume::host_path("e", "", None);
        assert!(same_volume(
            &empty,
            r#"{"name": "e", "hostPath": {"path": ""}}"#
        ));
    }
}
