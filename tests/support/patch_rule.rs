//! The rule every mutation must keep, shared by the property tests (`tests/properties/`) and the
//! case runner (`case-runner/src/lib.rs`, through `#[path]`): the JSON Patch the policy server
//! computes with `json_patch::diff(request.object, mutated_object)` only adds. A `replace` is
//! allowed only where the input held `null`, or where it extends the user's string (the Multus
//! network list) keeping all of its text, or where it is the policy's record under its key
//! `record` (behaviour.md §2.1, the policy's own statement, which replaces a stale one); a
//! `remove`, `move` or `copy` never is.

use serde_json::Value;

/// The patch from `original` to `mutated`, or why the policy server's patch would lose something
/// of the user's.
pub fn checked_patch(
    original: &Value,
    mutated: &Value,
    record: Option<&str>,
) -> Result<json_patch::Patch, String> {
    let record = record.map(|key| {
        let key = key.replace('~', "~0").replace('/', "~1");
        format!("/metadata/annotations/{key}")
    });
    let patch = json_patch::diff(original, mutated);
    for operation in &patch.0 {
        match operation {
            json_patch::PatchOperation::Add(_) => {}
            json_patch::PatchOperation::Replace(r) => {
                let before = original.pointer(r.path.as_str());
                let allowed = match before {
                    _ if record.as_deref() == Some(r.path.as_str()) => true,
                    Some(Value::Null) => true,
                    Some(Value::String(old)) => {
                        r.value.as_str().is_some_and(|new| extends(old, new))
                    }
                    _ => false,
                };
                if !allowed {
                    return Err(format!(
                        "the patch replaces {} (was {:?}, becomes {}): the user's value was lost",
                        r.path, before, r.value
                    ));
                }
            }
            other => return Err(format!("the patch does more than add: {other:?}")),
        }
    }
    let mut patched = original.clone();
    json_patch::patch(&mut patched, &patch)
        .map_err(|e| format!("the patch does not apply to the original: {e}"))?;
    if &patched != mutated {
        return Err("the patched object differs from the mutated object".to_string());
    }
    Ok(patch)
}

/// Whether `new` is `old` with something appended: all of `old`'s text, trailing blanks and a
/// closing `]` (the JSON list form of the Multus annotation) aside, is where it was.
pub fn extends(old: &str, new: &str) -> bool {
    let kept = old.trim_end();
    let kept = kept.strip_suffix(']').unwrap_or(kept);
    new.len() > old.len() && new.starts_with(kept)
}
