//! Reads only what the trigger needs from the admission payload, in one pass and without building
//! the pod as a JSON tree: most pods in a cluster are not opted in, and for them this is all the
//! work done. An opted-in pod is read a second time, whole (see [`full_object`]).
//!
//! Every reader here is lenient: a field of the wrong JSON type reads as absent instead of failing
//! the whole decode, because a pod that is not ours must pass untouched whatever it holds.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// The validate payload: `{"request": AdmissionRequest, "settings": {...}}`.
#[derive(serde::Deserialize)]
pub struct Envelope<'a> {
    #[serde(borrow)]
    pub request: Request<'a>,
    #[serde(borrow, default)]
    pub settings: Option<&'a RawValue>,
}

/// The parts of the AdmissionRequest the decision needs; of the object, only its metadata's
/// annotations and owners. `object` is `None` when it is null (DELETE).
#[derive(serde::Deserialize)]
pub struct Request<'a> {
    #[serde(borrow, default)]
    pub operation: Loose<Text<'a>>,
    #[serde(borrow, default)]
    pub kind: Loose<Gvk<'a>>,
    #[serde(borrow, default)]
    pub object: Option<Loose<Pod<'a>>>,
}

/// The request's object as a JSON tree: the second read, for an opted-in pod only.
pub fn full_object(payload: &[u8]) -> serde_json::Result<serde_json::Value> {
    #[derive(serde::Deserialize)]
    struct Envelope {
        request: Request,
    }
    #[derive(serde::Deserialize)]
    struct Request {
        #[serde(default)]
        object: serde_json::Value,
    }
    serde_json::from_slice::<Envelope>(payload).map(|e| e.request.object)
}

/// A value read leniently: the wrong JSON type reads as `T::default()`.
#[derive(Debug, Default)]
pub struct Loose<T>(pub T);

/// A string, if the value was one.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Text<'a>(pub Option<Cow<'a, str>>);

impl Text<'_> {
    pub fn as_str(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

#[derive(Debug, Default)]
pub struct Gvk<'a> {
    pub group: Text<'a>,
    pub version: Text<'a>,
    pub kind: Text<'a>,
}

/// What the trigger reads from the pod.
#[derive(Debug, Default)]
pub struct PodPeek<'a> {
    /// In document order; a repeated key's last value is the one that counts, as in a full decode.
    pub annotations: Vec<(Cow<'a, str>, Text<'a>)>,
    pub owners: Vec<Owner<'a>>,
}

#[derive(Debug, Default)]
pub struct Owner<'a> {
    pub kind: Text<'a>,
    pub api_version: Text<'a>,
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

/// How a lenient type is built from each JSON shape; the shapes it does not implement are skipped.
pub trait Lenient<'de>: Default {
    fn from_str(_text: Cow<'de, str>) -> Self {
        Self::default()
    }
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
}

impl<'de, T: Lenient<'de>> Deserialize<'de> for Loose<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(LenientVisitor(PhantomData))
            .map(Loose)
    }
}

struct LenientVisitor<T>(PhantomData<T>);

impl<'de, T: Lenient<'de>> Visitor<'de> for LenientVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<T, E> {
        Ok(T::from_str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<T, E> {
        Ok(T::from_str(Cow::Owned(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<T, E> {
        Ok(T::from_str(Cow::Owned(v)))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::from_map(map)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::from_seq(seq)
    }
    fn visit_bool<E>(self, _: bool) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_unit<E>(self) -> Result<T, E> {
        Ok(T::default())
    }
}

/// Reads each entry of a JSON object, handing the key to `field`.
fn each_field<'de, A, F>(mut map: A, mut field: F) -> Result<(), A::Error>
where
    A: MapAccess<'de>,
    F: FnMut(&str, &mut A) -> Result<(), A::Error>,
{
    while let Some(Loose(Text(Some(key)))) = map.next_key::<Loose<Text<'de>>>()? {
        field(&key, &mut map)?;
    }
    Ok(())
}

fn skip<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<IgnoredAny>().map(drop)
}

impl<'a, 'de: 'a> Lenient<'de> for Text<'a> {
    fn from_str(text: Cow<'de, str>) -> Self {
        Text(Some(text))
    }
}

impl<'a, 'de: 'a> Lenient<'de> for Gvk<'a> {
    fn from_map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut gvk = Gvk::default();
        text_fields(
            map,
            &mut [
                ("group", &mut gvk.group),
                ("version", &mut gvk.version),
                ("kind", &mut gvk.kind),
            ],
        )?;
        Ok(gvk)
    }
}

/// Reads the named string fields of an object into their slots and skips the rest.
fn text_fields<'a, 'de: 'a, A: MapAccess<'de>>(
    map: A,
    slots: &mut [(&str, &mut Text<'a>)],
) -> Result<(), A::Error> {
    each_field(map, |key, map| {
        match slots.iter_mut().find(|(name, _)| *name == key) {
            Some((_, slot)) => {
                **slot = map.next_value::<Loose<Text<'a>>>()?.0;
                Ok(())
            }
            None => skip(map),
        }
    })
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
                "ownerReferences" => metadata.owners = map.next_value::<Loose<Owners<'a>>>()?.0.0,
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

#[derive(Default)]
struct Owners<'a>(Vec<Owner<'a>>);

impl<'a, 'de: 'a> Lenient<'de> for Owners<'a> {
    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut owners = Vec::new();
        while let Some(Loose(owner)) = seq.next_element::<Loose<Owner<'a>>>()? {
            owners.push(owner);
        }
        Ok(Owners(owners))
    }
}

impl<'a, 'de: 'a> Lenient<'de> for Owner<'a> {
    fn from_map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut owner = Owner::default();
        text_fields(
            map,
            &mut [
                ("kind", &mut owner.kind),
                ("apiVersion", &mut owner.api_version),
            ],
        )?;
        Ok(owner)
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
    fn one_pass_reads_the_decision_and_a_second_the_whole_pod() {
        let payload = r#"{"request": {"uid": "1", "operation": "CREATE", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                          "object": {"metadata": {"annotations": {"a": "b"}}, "spec": {"x": [1, 2.5]}}, "oldObject": null},
                          "settings": {"gcp": {"enabled": true}}}"#;
        let envelope: Envelope<'_> = serde_json::from_str(payload).unwrap();
        assert_eq!(envelope.request.operation.0.as_str(), Some("CREATE"));
        assert_eq!(envelope.request.kind.0.kind.as_str(), Some("Pod"));
        let pod = &envelope.request.object.as_ref().unwrap().0.0;
        assert_eq!(pod.annotation("a").and_then(Text::as_str), Some("b"));
        assert_eq!(
            envelope.settings.map(RawValue::get),
            Some(r#"{"gcp": {"enabled": true}}"#)
        );
        assert_eq!(
            full_object(payload.as_bytes()).unwrap(),
            serde_json::json!({"metadata": {"annotations": {"a": "b"}}, "spec": {"x": [1, 2.5]}})
        );
        let deleted: Envelope<'_> =
            serde_json::from_str(r#"{"request": {"operation": "DELETE", "object": null}}"#)
                .unwrap();
        assert!(deleted.request.object.is_none() && deleted.settings.is_none());
    }
}
