//! The API server's limit on a pod's annotations (behaviour.md §4): the policy adds its own
//! (the record, GKE's, the Multus list) and must not be the one that takes a pod over it, for
//! then the API server refuses the pod as if its author had.

use crate::error::Error;
use crate::json::lenient::{Loose, Text, read};
use crate::json::object::Object;
use crate::k8s::limits::MAX_ANNOTATIONS_SIZE;
use crate::merge::{json_text, object};

/// Refuses a pod whose annotations, now that the policy set or extended `keys`, total more than
/// [`MAX_ANNOTATIONS_SIZE`]; `unwritten` is an annotation the pod would carry besides, as its key
/// and JSON text (the record, where the validate-only answer writes none). The policy cannot leave out only its annotations: a GCP pod with
/// the fabric's env and daemon but without its interface list would be half-wired, and a record
/// left out would hide what was done; so the pod gets nothing, and the answer says why.
pub(super) fn check(
    pod: &Object<'_>,
    keys: &[&str],
    unwritten: Option<(&str, &str)>,
) -> Result<(), Error> {
    if keys.is_empty() {
        return Ok(());
    }
    let Some(annotations) = object(pod, "metadata")
        .ok()
        .flatten()
        .and_then(|metadata| object(metadata, "annotations").ok().flatten())
    else {
        return Ok(());
    };
    // A value's JSON text is never shorter than the string it stands for: most pods are far
    // below the limit, and only those near it have their values decoded.
    let extra = |len: fn(&str) -> usize| unwritten.map_or(0, |(key, text)| key.len() + len(text));
    let bound: usize = annotations
        .members()
        .map(|(key, value)| key.len() + json_text(value).map_or(0, str::len))
        .sum::<usize>()
        + extra(str::len);
    if bound <= MAX_ANNOTATIONS_SIZE {
        return Ok(());
    }
    let total: usize = annotations
        .members()
        .map(|(key, value)| key.len() + json_text(value).map_or(0, decoded_len))
        .sum::<usize>()
        + extra(decoded_len);
    if total <= MAX_ANNOTATIONS_SIZE {
        return Ok(());
    }
    Err(Error::AnnotationsTooLarge {
        total,
        keys: keys.join(", "),
        limit: MAX_ANNOTATIONS_SIZE,
    })
}

/// The length of the string a value's JSON text stands for; 0 for one that is no string, which
/// the API server refuses by itself.
fn decoded_len(text: &str) -> usize {
    read::<Loose<Text<'_>>>(text)
        .ok()
        .and_then(|text| text.0.0)
        .map_or(0, |text| text.len())
}
