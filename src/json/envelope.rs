//! Reads only what the trigger needs from the admission payload, in one pass and without building
//! the pod as a JSON tree: most pods in a cluster are not opted in, and for them this is all the
//! work done. An opted-in pod is read a second time, by [`crate::json::object`].
//!
//! Every reader here is lenient: a field of the wrong JSON type reads as absent instead of failing
//! the whole decode, because a pod that is not ours must pass untouched whatever it holds.

use std::borrow::Cow;

use serde::de::{self, MapAccess};

use crate::json::lenient::{Entry, Items, Lenient, Loose, Text, each_field, skip};
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
    /// Where the (last) `request` key ends and the key after it starts, as addresses of the
    /// text the keys were read from, for [`Envelope::request_text`].
    request_keys: (Option<usize>, Option<usize>),
}

impl Envelope<'_> {
    /// The text of the `request` value within `payload`, the text this envelope was read from:
    /// an opted-in pod is read a second time from there, without scanning the settings again.
    /// Found from where the keys around it lie, which JSON's grammar makes exact (only blanks, a
    /// colon or a comma, and a quote between a key and a value); `None` where a key was escaped
    /// (not a slice of `payload`), and then the whole payload is read.
    pub fn request_text<'t>(&self, payload: &'t str) -> Option<&'t str> {
        let bytes = payload.as_bytes();
        let base = payload.as_ptr() as usize;
        let offset = |address: usize| {
            address
                .checked_sub(base)
                .filter(|&offset| offset <= bytes.len())
        };
        let blank = |at: usize| matches!(bytes.get(at), Some(b' ' | b'\t' | b'\n' | b'\r'));
        let is = |at: usize, byte: u8| (bytes.get(at) == Some(&byte)).then_some(());
        // After the key: its closing quote, blanks, the colon, blanks.
        let mut from = offset(self.request_keys.0?)?;
        is(from, b'"')?;
        from += 1;
        while blank(from) {
            from += 1;
        }
        is(from, b':')?;
        from += 1;
        while blank(from) {
            from += 1;
        }
        // Before the next key: blanks, the comma, blanks, its opening quote; or, for the last
        // key, blanks, the envelope's closing brace, blanks.
        let (mut to, end) = match self.request_keys.1 {
            Some(next) => {
                let quote = offset(next)?.checked_sub(1)?;
                is(quote, b'"')?;
                (quote, b',')
            }
            None => (bytes.len(), b'}'),
        };
        while to > from && blank(to - 1) {
            to -= 1;
        }
        is(to.checked_sub(1)?, end)?;
        to -= 1;
        while to > from && blank(to - 1) {
            to -= 1;
        }
        let text = payload.get(from..to)?;
        (text.starts_with('{') && text.ends_with('}')).then_some(text)
    }
}

/// The parts of the AdmissionRequest the decision needs; of the object, only its metadata's
/// annotations and owners. `object` is `None` when it is null (DELETE).
#[derive(Default)]
pub struct Request<'a> {
    pub operation: Loose<Text<'a>>,
    pub kind: Loose<Entry<'a>>,
    /// The namespace the pod is created in: where preflight looks (behaviour.md §9).
    pub namespace: Loose<Text<'a>>,
    pub object: Option<Loose<Pod<'a>>>,
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Envelope<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Expect::<Envelope<'a>>::new("an object {\"request\": …}"))
    }
}

impl<'a, 'de: 'a> Expected<'de> for Envelope<'a> {
    fn from_map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut envelope = Envelope::default();
        let mut request = false;
        let mut after_request = false;
        each_field(map, |key, map| {
            if std::mem::take(&mut after_request) {
                envelope.request_keys.1 = Some(key.as_ptr() as usize);
            }
            match key {
                "request" => {
                    envelope.request = map
                        .next_value_seed(Expect::<Request<'a>>::new("`request` to be an object"))?;
                    request = true;
                    envelope.request_keys = (Some(key.as_ptr() as usize + key.len()), None);
                    after_request = true;
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
    fn from_map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut request = Request::default();
        each_field(map, |key, map| {
            match key {
                "operation" => request.operation = map.next_value()?,
                "kind" => request.kind = map.next_value()?,
                "namespace" => request.namespace = map.next_value()?,
                "object" => request.object = map.next_value()?,
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
trait Expected<'de>: Sized {
    fn from_map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error>;
}

struct Expect<T> {
    what: &'static str,
    read: std::marker::PhantomData<T>,
}

impl<T> Expect<T> {
    fn new(what: &'static str) -> Self {
        Expect {
            what,
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
        T::from_map(map)
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
    fn the_request_text_is_found_between_its_keys() {
        let object = r#"{"uid": "u", "object": {"a": "}, \"settings\": {"}}"#;
        for (payload, found) in [
            (
                format!(r#"{{"request":{object},"settings":{{"x":1}}}}"#),
                true,
            ),
            (
                format!("{{\n  \"request\" :\t{object} ,\r\n \"settings\": {{}} }}\n"),
                true,
            ),
            // Last, first, repeated (the last counts, as it does for the decision).
            (
                format!(r#"{{"settings":{{}}, "request": {object} }}"#),
                true,
            ),
            (
                format!(r#"{{"request": {{"uid": "old"}}, "request": {object}}}"#),
                true,
            ),
            (
                format!(r#"{{"x": [1], "request": {object}, "y": "request"}}"#),
                true,
            ),
            // An escaped key is not the payload's own text: the whole payload is read instead.
            (
                format!(r#"{{"requ\u0065st": {object}, "settings": {{}}}}"#),
                false,
            ),
            (
                format!(r#"{{"request": {object}, "s\u0065ttings": {{}}}}"#),
                false,
            ),
        ] {
            let envelope: Envelope<'_> = crate::json::lenient::read(&payload).unwrap();
            let text = envelope.request_text(&payload);
            assert_eq!(text, found.then_some(object), "{payload}");
        }
        // Not the text the envelope was read from.
        let payload = format!(r#"{{"request":{object}}}"#);
        let envelope: Envelope<'_> = crate::json::lenient::read(&payload).unwrap();
        assert_eq!(envelope.request_text(&payload.clone()), None);
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

    /// The payload's reader is written by hand: every wrong shape still gets its reason.
    #[test]
    fn a_payload_of_the_wrong_shape_says_what_was_expected() {
        let reason = |payload: &str| {
            serde_json::from_str::<Envelope<'_>>(payload)
                .err()
                .map(|e| e.to_string())
        };
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
        let envelope: Envelope<'_> = serde_json::from_str(
            r#"{"request": {"operation": "DELETE"}, "request": {"operation": "CREATE", "object": {}}, "settings": null}"#,
        )
        .unwrap();
        assert_eq!(envelope.request.operation.0.as_str(), Some("CREATE"));
        assert!(envelope.request.object.is_some());
        assert!(envelope.settings.unwrap().root().is_null());
    }
}
