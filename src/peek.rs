//! Reads only what the trigger needs from the admission payload, in one pass and without building
//! the pod as a JSON tree: most pods in a cluster are not opted in, and for them this is all the
//! work done. An opted-in pod is read a second time, by [`crate::view`].
//!
//! Every reader here is lenient: a field of the wrong JSON type reads as absent instead of failing
//! the whole decode, because a pod that is not ours must pass untouched whatever it holds.

use std::borrow::Cow;

use serde::de::MapAccess;

use crate::lenient::{Entry, Items, Lenient, Loose, Text, each_field, skip};
use crate::tape::Tape;

/// The validate payload: `{"request": AdmissionRequest, "settings": {...}}`. The settings are
/// read onto a tape in the same pass.
#[derive(serde::Deserialize)]
pub struct Envelope<'a> {
    #[serde(borrow)]
    pub request: Request<'a>,
    #[serde(borrow, default, deserialize_with = "crate::settings::read_tape")]
    pub settings: Option<Tape<'a>>,
}

/// The parts of the AdmissionRequest the decision needs; of the object, only its metadata's
/// annotations and owners. `object` is `None` when it is null (DELETE).
#[derive(serde::Deserialize)]
pub struct Request<'a> {
    #[serde(borrow, default)]
    pub operation: Loose<Text<'a>>,
    #[serde(borrow, default)]
    pub kind: Loose<Entry<'a>>,
    /// The namespace the pod is created in: where preflight looks (behaviour.md §9).
    #[serde(borrow, default)]
    pub namespace: Loose<Text<'a>>,
    #[serde(borrow, default)]
    pub object: Option<Loose<Pod<'a>>>,
}

/// What the trigger reads from the pod.
#[derive(Debug, Default)]
pub struct PodPeek<'a> {
    /// In document order; a repeated key's last value is the one that counts, as in a full decode.
    pub annotations: Vec<(Cow<'a, str>, Text<'a>)>,
    pub owners: Vec<Entry<'a>>,
}

impl<'a> PodPeek<'a> {
    /// Reads a pod's metadata from its JSON text; invalid JSON reads as an empty pod. (The policy
    /// itself reads it inside the envelope's pass.)
    #[cfg(test)]
    pub fn from_json(object: &'a str) -> PodPeek<'a> {
        serde_json::from_str::<Loose<Pod<'a>>>(object)
            .map(|pod| pod.0.0)
            .unwrap_or_default()
    }

    pub fn annotation(&self, key: &str) -> Option<&Text<'a>> {
        self.annotations
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }
}

/// The pod object, of which only `metadata` is read.
#[derive(Debug, Default)]
pub struct Pod<'a>(pub PodPeek<'a>);

impl<'a, 'de: 'a> Lenient<'de> for Pod<'a> {
    fn from_map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut pod = Pod::default();
        each_field(map, |key, map| match key {
            "metadata" => {
                pod.0 = map.next_value::<Loose<PodPeek<'a>>>()?.0;
                Ok(())
            }
            _ => skip(map),
        })?;
        Ok(pod)
    }
}

/// The pod's metadata.
impl<'a, 'de: 'a> Lenient<'de> for PodPeek<'a> {
    fn from_map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut metadata = PodPeek::default();
        each_field(map, |key, map| {
            match key {
                "annotations" => {
                    metadata.annotations = map.next_value::<Loose<Annotations<'a>>>()?.0.0
                }
                "ownerReferences" => {
                    metadata.owners = map.next_value::<Loose<Items<Entry<'a>>>>()?.0.0
                }
                _ => skip(map)?,
            }
            Ok(())
        })?;
        Ok(metadata)
    }
}

#[derive(Default)]
struct Annotations<'a>(Vec<(Cow<'a, str>, Text<'a>)>);

impl<'a, 'de: 'a> Lenient<'de> for Annotations<'a> {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut annotations = Vec::new();
        while let Some(Loose(Text(Some(key)))) = map.next_key::<Loose<Text<'a>>>()? {
            annotations.push((key, map.next_value::<Loose<Text<'a>>>()?.0));
        }
        Ok(Annotations(annotations))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peek(json: &str) -> PodPeek<'_> {
        PodPeek::from_json(json)
    }

    #[test]
    fn reads_annotations_and_owners() {
        let pod = peek(
            r#"{"spec": {"containers": [{"name": "x"}]}, "metadata": {"name": "w", "annotations": {"a": "1", "esc\"aped": "tr\u0075e"},
               "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "uid": "u"}, 7]}}"#,
        );
        assert_eq!(pod.annotation("a").and_then(Text::as_str), Some("1"));
        assert_eq!(
            pod.annotation("esc\"aped").and_then(Text::as_str),
            Some("true")
        );
        assert_eq!(pod.owners.len(), 2);
        assert_eq!(pod.owners[0].kind.as_str(), Some("Job"));
        assert_eq!(
            pod.owners[0].api_version.as_str(),
            Some("batch.volcano.sh/v1alpha1")
        );
        assert_eq!(pod.owners[1].kind.as_str(), None);
    }

    #[test]
    fn wrong_types_read_as_absent() {
        for json in [
            r#"null"#,
            r#"[]"#,
            r#"{"metadata": null}"#,
            r#"{"metadata": "x"}"#,
            r#"{"metadata": {"annotations": null, "ownerReferences": {"kind": "Job"}}}"#,
            r#"{"metadata": {"annotations": ["a"], "ownerReferences": "x"}}"#,
        ] {
            let pod = peek(json);
            assert!(
                pod.annotations.is_empty() && pod.owners.is_empty(),
                "{json}"
            );
        }
        let pod = peek(r#"{"metadata": {"annotations": {"a": true, "b": {"c": 1}}}}"#);
        assert_eq!(pod.annotation("a"), Some(&Text(None)));
    }

    #[test]
    fn the_last_of_repeated_keys_wins_as_in_a_full_decode() {
        let pod = peek(
            r#"{"metadata": {"annotations": {"a": "1", "a": "2"}}, "metadata": {"annotations": {"a": "3"}}}"#,
        );
        assert_eq!(pod.annotation("a").and_then(Text::as_str), Some("3"));
    }

    #[test]
    fn one_pass_reads_the_decision() {
        let payload = r#"{"request": {"uid": "1", "operation": "CREATE", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                          "object": {"metadata": {"annotations": {"a": "b"}}, "spec": {"x": [1, 2.5]}}, "oldObject": null},
                          "settings": {"gcp": {"enabled": true}}}"#;
        let envelope: Envelope<'_> = serde_json::from_str(payload).unwrap();
        assert_eq!(envelope.request.operation.0.as_str(), Some("CREATE"));
        assert_eq!(envelope.request.kind.0.kind.as_str(), Some("Pod"));
        let pod = &envelope.request.object.as_ref().unwrap().0.0;
        assert_eq!(pod.annotation("a").and_then(Text::as_str), Some("b"));
        let settings = envelope.settings.as_ref().unwrap().root();
        let gcp = settings.get("gcp").unwrap();
        assert_eq!(gcp.get("enabled").and_then(|e| e.as_bool()), Some(true));
        let deleted: Envelope<'_> =
            serde_json::from_str(r#"{"request": {"operation": "DELETE", "object": null}}"#)
                .unwrap();
        assert!(deleted.request.object.is_none() && deleted.settings.is_none());
    }
}
