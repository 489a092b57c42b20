//! Reads what the trigger needs from the admission payload, in one pass and without building the
//! pod as a JSON tree: most pods in a cluster are not opted in, and for them the pod's metadata is
//! all that is read of it. A pod whose metadata opts it in by a default trigger is read on, in the
//! same pass, into the view the merge works on ([`crate::json::object::EarlyObject`]).
//!
//! Every reader here is lenient: a field of the wrong JSON type reads as absent instead of failing
//! the whole decode, because a pod that is not ours must pass untouched whatever it holds.

use std::borrow::Cow;

use serde::de::{self, DeserializeSeed, MapAccess};

use crate::json::Name;
use serde_json::value::RawValue;

use crate::json::lenient::{self, Entry, Items, Loose, Text, each_field, skip};
use crate::json::object::{EarlyObject, Node, Object, Shape};
use crate::json::tape::Tape;

/// The validate payload: `{"request": AdmissionRequest, "settings": {...}}`. The settings are
/// read onto a tape in the same pass.
///
/// Read by hand rather than derived: a derived reader answers a value of the wrong type with
/// serde's "invalid type" message, whose float formatting alone is about 16 KB of module.
#[derive(Default)]
pub struct Envelope<'a> {
    pub request: Request<'a>,
    pub settings: Option<Tape<'a>>,
}

impl<'a> Envelope<'a> {
    /// Reads a payload's envelope and, where the pod is opted in by one of `triggers`, the pod as
    /// an object of `view` ([`Pod::view`]), whose shape parses the metadata and its annotations.
    ///
    /// The view parses numbers the decision's pass otherwise skips: one no double holds fails
    /// this read, and the payload is then read again without the view, so that the pod's second
    /// read names the number, as it would for any pod read a second time.
    pub fn read(
        payload: &'a str,
        view: &'static Shape,
        triggers: &'static [&'static str],
    ) -> serde_json::Result<Envelope<'a>> {
        let read = |early: bool| {
            let mut deserializer = serde_json::Deserializer::from_str(payload);
            let triggers = if early { triggers } else { &[] };
            let view = PodView {
                shape: view,
                triggers,
            };
            let envelope =
                Expect::<Envelope<'a>>::new(ENVELOPE, view).deserialize(&mut deserializer)?;
            deserializer.end().map(|()| envelope)
        };
        read(true).or_else(|_| read(false))
    }
}

/// The parts of the AdmissionRequest the decision needs; of the object, its metadata's
/// annotations and owners, and the pod itself where it may be opted in. `object` is `None` when it
/// is null (DELETE); any other value that is not an object reads as an empty pod.
#[derive(Default)]
pub struct Request<'a> {
    pub operation: Loose<Text<'a>>,
    pub kind: Loose<Entry<'a>>,
    /// The namespace the pod is created in: where preflight looks (behaviour.md §9).
    pub namespace: Loose<Text<'a>>,
    pub object: Option<Pod<'a>>,
}

const ENVELOPE: &str = "an object {\"request\": …}";

impl<'a, 'de: 'a> Expected<'de> for Envelope<'a> {
    fn from_map<A: MapAccess<'de>>(map: A, view: PodView) -> Result<Self, A::Error> {
        let mut envelope = Envelope::default();
        let mut request = false;
        each_field(map, |key, map| {
            match key {
                "request" => {
                    envelope.request = map.next_value_seed(Expect::<Request<'a>>::new(
                        "`request` to be an object",
                        view,
                    ))?;
                    request = true;
                }
                "settings" => envelope.settings = Some(map.next_value::<Settings<'a>>()?.0),
                _ => skip(map)?,
            }
            Ok(())
        })?;
        match request {
            true => Ok(envelope),
            false => Err(de::Error::missing_field("request")),
        }
    }
}

impl<'a, 'de: 'a> Expected<'de> for Request<'a> {
    fn from_map<A: MapAccess<'de>>(map: A, view: PodView) -> Result<Self, A::Error> {
        let mut request = Request::default();
        each_field(map, |key, map| {
            match key {
                "operation" => request.operation = map.next_value()?,
                "kind" => request.kind = map.next_value()?,
                "namespace" => request.namespace = map.next_value()?,
                "object" => request.object = map.next_value_seed(PodSeed(view))?,
                _ => skip(map)?,
            }
            Ok(())
        })?;
        Ok(request)
    }
}

/// The paths of the settings kept as text on their tape: the instance tables
/// (`<cloud>.instanceTypes`), most of a large configuration, of which a pod needs one row.
pub const LAZY_SETTINGS: &[&str] = &["*", "instanceTypes"];

/// The request's settings, on a tape with the instance tables kept as text.
struct Settings<'a>(Tape<'a>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Settings<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Tape::read_lazy(deserializer, LAZY_SETTINGS).map(Settings)
    }
}

/// A value that must be a JSON object; any other type is an error saying what was expected.
/// `view` is how the pod is read.
trait Expected<'de>: Sized {
    fn from_map<A: MapAccess<'de>>(map: A, view: PodView) -> Result<Self, A::Error>;
}

struct Expect<T> {
    what: &'static str,
    view: PodView,
    read: std::marker::PhantomData<T>,
}

impl<T> Expect<T> {
    fn new(what: &'static str, view: PodView) -> Self {
        Expect {
            what,
            view,
            read: std::marker::PhantomData,
        }
    }

    fn wrong<E: de::Error>(self) -> Result<T, E> {
        Err(E::custom(format_args!("expected {}", self.what)))
    }
}

impl<'de, T: Expected<'de>> de::DeserializeSeed<'de> for Expect<T> {
    type Value = T;
    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// Every JSON type has its own answer here: serde's defaults would format the wrong value.
impl<'de, T: Expected<'de>> de::Visitor<'de> for Expect<T> {
    type Value = T;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.what)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::from_map(map, self.view)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<T, A::Error> {
        self.wrong()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<T, E> {
        self.wrong()
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<T, E> {
        self.wrong()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<T, E> {
        self.wrong()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<T, E> {
        self.wrong()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<T, E> {
        self.wrong()
    }
    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        self.wrong()
    }
}

/// What the trigger reads from the pod: its annotations and owner references, as the request's
/// text, each decoded when the decision asks for it. Most pods are not opted in, and for them
/// only the trigger and opt-out keys are decoded, and no owner reference.
#[derive(Debug, Default)]
pub struct PodPeek<'a> {
    /// In document order; a repeated key's last value is the one that counts, as in a full decode.
    annotations: Vec<(Cow<'a, str>, &'a RawValue)>,
    owners: Option<&'a RawValue>,
}

impl<'a> PodPeek<'a> {
    /// Reads a pod's metadata from its JSON text; invalid JSON reads as an empty pod. (The policy
    /// itself reads it inside the envelope's pass.)
    #[cfg(test)]
    pub fn from_json(object: &'a str) -> PodPeek<'a> {
        let mut deserializer = serde_json::Deserializer::from_str(object);
        PodSeed(PodView {
            shape: &tests::POD,
            triggers: &[],
        })
        .deserialize(&mut deserializer)
        .ok()
        .flatten()
        .map(|pod| pod.peek)
        .unwrap_or_default()
    }

    /// The decision's inputs of a pod read into a view of the engine's shape: an MPIJob's worker
    /// as its operator makes it, for whether the policy wires it.
    pub fn of_pod(pod: &Object<'a>) -> PodPeek<'a> {
        pod.get("metadata")
            .map_or_else(PodPeek::default, PodPeek::of)
    }

    /// The decision's inputs in the metadata as the pod's view read it: the view's shape parses
    /// the metadata and its annotations, and keeps their values and the owner references as text.
    fn of(metadata: &Node<'a>) -> PodPeek<'a> {
        let Some(metadata) = metadata.as_object() else {
            return PodPeek::default();
        };
        let annotations = match metadata.get("annotations") {
            Some(Node::Object(annotations)) => annotations
                .members()
                .filter_map(|(key, value)| Some((key.clone(), value.raw()?)))
                .collect(),
            _ => Vec::new(),
        };
        PodPeek {
            annotations,
            owners: metadata.get("ownerReferences").and_then(Node::raw),
        }
    }

    /// Whether one of `triggers` is `"true"` (behaviour.md §2).
    fn opted_in_by(&self, triggers: &[&str]) -> bool {
        triggers
            .iter()
            .any(|key| self.annotation(key).is_some_and(|value| value == "true"))
    }

    /// The string value of the annotation `key`; `None` where the pod lacks it or its value is not
    /// a string.
    pub fn annotation(&self, key: &str) -> Option<Cow<'a, str>> {
        let (_, value) = self.annotations.iter().rev().find(|(k, _)| k == key)?;
        lenient::string(value)
    }

    /// The owner references, each read leniently; none where they are not a list.
    pub fn owners(&self) -> Vec<Entry<'a>> {
        self.owners.map_or_else(Vec::new, |raw| {
            lenient::read::<Loose<Items<Entry<'a>>>>(raw.get())
                .map(|owners| owners.0.0)
                .unwrap_or_default()
        })
    }
}

/// The pod object: its metadata for the decision and, where the pod may be opted in, the pod as
/// the merge reads it.
#[derive(Debug, Default)]
pub struct Pod<'a> {
    pub peek: PodPeek<'a>,
    /// The pod read in this pass as an object of the view's shape, where the metadata came before
    /// every member the shape parses and one of the triggers the pass was given (the default ones)
    /// is `"true"` in it: it is then not read a second time. `None` for most pods, which are read
    /// no further than their metadata, and for a pod opted in by other triggers or whose members
    /// come in another order.
    pub view: Option<EarlyObject<'a>>,
}

impl<'a> Pod<'a> {
    fn read<'de: 'a, A: MapAccess<'de>>(mut map: A, reading: PodView) -> Result<Self, A::Error> {
        let shape = reading.shape;
        let mut pod = Pod {
            peek: PodPeek::default(),
            view: (!reading.triggers.is_empty()).then(|| EarlyObject::new(shape)),
        };
        let mut may_opt_in = false;
        while let Some(key) = map.next_key::<Name<'de>>()? {
            if key.0 == "metadata" {
                // A repeated metadata, after the view was given up, is read into one of its own.
                let mut own = None;
                let view = match pod.view.as_mut() {
                    Some(view) => view,
                    None => own.insert(EarlyObject::new(shape)),
                };
                pod.peek = PodPeek::of(view.read_member(key, &mut map)?);
                may_opt_in = pod.peek.opted_in_by(reading.triggers);
                if !may_opt_in {
                    pod.view = None;
                }
                continue;
            }
            // The view is kept while the pod may be opted in: up to the metadata, each member
            // the shape keeps as text; after it, every member.
            match pod.view.as_mut() {
                Some(view) if may_opt_in || !view.parses(&key.0) => {
                    view.read_member(key, &mut map)?;
                }
                _ => {
                    pod.view = None;
                    skip(&mut map)?;
                }
            }
        }
        Ok(pod)
    }
}

/// How the pass reads the pod: its metadata as an object of `shape`, and the pod too while one of
/// `triggers` may opt it in.
#[derive(Clone, Copy)]
struct PodView {
    shape: &'static Shape,
    triggers: &'static [&'static str],
}

/// Reads `request.object`: `null` as `None`, any other value that is not an object as an empty
/// pod.
struct PodSeed(PodView);

impl<'de> de::DeserializeSeed<'de> for PodSeed {
    type Value = Option<Pod<'de>>;
    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Option<Pod<'de>>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> de::Visitor<'de> for PodSeed {
    type Value = Option<Pod<'de>>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<Pod<'de>>, A::Error> {
        Pod::read(map, self.0).map(Some)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Pod<'de>>, A::Error> {
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        Ok(Some(Pod::default()))
    }
    fn visit_str<E>(self, _: &str) -> Result<Option<Pod<'de>>, E> {
        Ok(Some(Pod::default()))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Option<Pod<'de>>, E> {
        Ok(Some(Pod::default()))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Option<Pod<'de>>, E> {
        Ok(Some(Pod::default()))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Option<Pod<'de>>, E> {
        Ok(Some(Pod::default()))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Option<Pod<'de>>, E> {
        Ok(Some(Pod::default()))
    }
    fn visit_unit<E>(self) -> Result<Option<Pod<'de>>, E> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::object::{Member, Object, read_object};

    const TEXT: Shape = Shape::TEXT;
    const METADATA: Shape = Shape {
        members: &[("annotations", Member::Object(&TEXT))],
    };
    const SPEC: Shape = Shape {
        members: &[("containers", Member::List(&TEXT))],
    };
    /// A pod's shape as the engine's reads the metadata: its annotations parsed.
    pub(super) const POD: Shape = Shape {
        members: &[
            ("metadata", Member::Object(&METADATA)),
            ("spec", Member::Object(&SPEC)),
        ],
    };

    fn peek(json: &str) -> PodPeek<'_> {
        PodPeek::from_json(json)
    }

    fn read(payload: &str) -> serde_json::Result<Envelope<'_>> {
        Envelope::read(payload, &POD, &["x"])
    }

    fn payload(object: &str) -> String {
        format!(
            r#"{{"request": {{"operation": "CREATE", "object": {object}, "oldObject": null}}, "settings": {{}}}}"#
        )
    }

    fn written(object: Result<Object<'_>, crate::error::Error>) -> Result<String, String> {
        object
            .map(|object| {
                let mut out = Vec::new();
                object.write(&mut out);
                String::from_utf8(out).unwrap()
            })
            .map_err(|e| e.to_string())
    }

    /// The view read in the decision's pass, if it was.
    fn early(payload: &str) -> Option<Result<String, String>> {
        let mut envelope = read(payload).unwrap();
        let view = envelope.request.object.as_mut()?.view.take()?;
        Some(written(view.into_object()))
    }

    #[test]
    fn a_pod_that_may_be_opted_in_is_read_once_as_a_second_read_would() {
        for object in [
            r#"{"apiVersion": "v1", "metadata": {"annotations": {"x": "true"}}, "spec": {"containers": [{"name": "a"}], "b": 2.50}, "status": {}}"#,
            r#"{"metadata": {"annotations": {"x": "tr\u0075e", "y": "1"}, "name": "w"}, "spec": {"containers": null}}"#,
            // A wrong type where the shape parses: the second read's rejection, the pass read on.
            r#"{"metadata": {"annotations": {"x": "true"}}, "spec": {"containers": 5, "after": [1]}}"#,
            r#"{"metadata": {"annotations": {"x": "true"}}, "spec": {"containers": [{}, "a", {}]}}"#,
        ] {
            let payload = payload(object);
            let early = early(&payload).unwrap_or_else(|| panic!("not read early: {object}"));
            assert_eq!(early, written(read_object(&payload, &POD)), "{object}");
        }
    }

    #[test]
    fn other_pods_are_read_no_further_than_their_metadata() {
        for object in [
            // The trigger not "true": the policy's only if the settings name other triggers.
            r#"{"metadata": {"annotations": {"x": "yes"}}, "spec": {"containers": []}}"#,
            r#"{"metadata": {"annotations": {"x": "true", "x": "no", "y": "true"}}, "spec": {}}"#,
            r#"{"metadata": {"annotations": ["true"]}, "spec": {"containers": []}}"#,
            // A member the shape parses before the metadata: read again if it is the policy's.
            r#"{"spec": {"containers": []}, "metadata": {"annotations": {"x": "true"}}}"#,
            // The last metadata counts; the view was given up at the first.
            r#"{"metadata": {}, "spec": {}, "metadata": {"annotations": {"x": "true"}}}"#,
        ] {
            let payload = payload(object);
            assert_eq!(early(&payload), None, "{object}");
        }
        let repeated =
            payload(r#"{"metadata": {}, "spec": {}, "metadata": {"annotations": {"x": "true"}}}"#);
        let envelope = read(&repeated).unwrap();
        let pod = &envelope.request.object.unwrap().peek;
        assert_eq!(pod.annotation("x").as_deref(), Some("true"));
    }

    #[test]
    fn reads_annotations_and_owners() {
        let pod = peek(
            r#"{"spec": {"containers": [{"name": "x"}]}, "metadata": {"name": "w", "annotations": {"a": "1", "esc\"aped": "tr\u0075e"},
               "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "uid": "u"}, 7]}}"#,
        );
        assert_eq!(pod.annotation("a").as_deref(), Some("1"));
        assert_eq!(pod.annotation("esc\"aped").as_deref(), Some("true"));
        let owners = pod.owners();
        assert_eq!(owners.len(), 2);
        assert_eq!(owners[0].kind.as_str(), Some("Job"));
        assert_eq!(
            owners[0].api_version.as_str(),
            Some("batch.volcano.sh/v1alpha1")
        );
        assert_eq!(owners[1].kind.as_str(), None);
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
                pod.annotations.is_empty() && pod.owners().is_empty(),
                "{json}"
            );
        }
        let pod = peek(r#"{"metadata": {"annotations": {"a": true, "b": {"c": 1}}}}"#);
        assert_eq!(pod.annotation("a"), None);
        assert_eq!(pod.annotations.len(), 2);
    }

    #[test]
    fn the_last_of_repeated_keys_wins_as_in_a_full_decode() {
        let pod = peek(
            r#"{"metadata": {"annotations": {"a": "1", "a": "2"}}, "metadata": {"annotations": {"a": "3"}}}"#,
        );
        assert_eq!(pod.annotation("a").as_deref(), Some("3"));
    }

    #[test]
    fn one_pass_reads_the_decision() {
        let payload = r#"{"request": {"uid": "1", "operation": "CREATE", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                          "object": {"metadata": {"annotations": {"a": "b"}}, "spec": {"x": [1, 2.5]}}, "oldObject": null},
                          "settings": {"gcp": {"enabled": true}}}"#;
        let envelope = read(payload).unwrap();
        assert_eq!(envelope.request.operation.0.as_str(), Some("CREATE"));
        assert_eq!(envelope.request.kind.0.kind.as_str(), Some("Pod"));
        let pod = &envelope.request.object.as_ref().unwrap().peek;
        assert_eq!(pod.annotation("a").as_deref(), Some("b"));
        let settings = envelope.settings.as_ref().unwrap().root();
        let gcp = settings.get("gcp").unwrap();
        assert_eq!(gcp.get("enabled").and_then(|e| e.as_bool()), Some(true));
        let deleted = read(r#"{"request": {"operation": "DELETE", "object": null}}"#).unwrap();
        assert!(deleted.request.object.is_none() && deleted.settings.is_none());
    }

    /// The payload's reader is written by hand: every wrong shape still gets its reason.
    #[test]
    fn a_payload_of_the_wrong_shape_says_what_was_expected() {
        let reason = |payload: &str| read(payload).err().map(|e| e.to_string());
        assert_eq!(
            reason(r#"{"settings": {}}"#).as_deref(),
            Some("missing field `request` at line 1 column 16")
        );
        assert_eq!(
            reason("[1]").as_deref(),
            Some(r#"expected an object {"request": …} at line 1 column 1"#)
        );
        assert_eq!(
            reason(r#"{"request": 1.5}"#).as_deref(),
            Some("expected `request` to be an object at line 1 column 15")
        );
        // As in any JSON decoder, the last of repeated keys counts.
        let envelope = read(
            r#"{"request": {"operation": "DELETE"}, "request": {"operation": "CREATE", "object": {}}, "settings": null}"#,
        )
        .unwrap();
        assert_eq!(envelope.request.operation.0.as_str(), Some("CREATE"));
        assert!(envelope.request.object.is_some());
        assert!(envelope.settings.unwrap().root().is_null());
    }
}
