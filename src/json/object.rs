//! An opted-in pod as the merge engine sees it, and the answer written back from it.
//!
//! Only the objects the merge reads or writes (given as a [`Shape`]) are parsed into members;
//! every other value stays a slice of the request's own JSON text. The answer is written by
//! copying those slices and splicing in the policy's additions, so the nine tenths of the pod the
//! policy does not touch are copied, never decoded into a tree nor encoded again, and a number
//! the policy does not read comes back byte for byte.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::{JsonType, Name};
use crate::error::{Error, Path, malformed};

/// Which members of an object are parsed; all others are kept as text.
#[derive(Debug)]
pub struct Shape {
    pub members: &'static [(&'static str, Member)],
}

impl Shape {
    /// An object whose members are all kept as text.
    pub const TEXT: Shape = Shape { members: &[] };

    /// How the view reads `key` in an object of this shape; `None` when it keeps it as text.
    pub fn member(&self, key: &str) -> Option<Member> {
        self.members
            .iter()
            .find(|(name, _)| *name == key)
            .map(|(_, member)| *member)
    }
}

#[derive(Debug, Clone, Copy)]
pub enum Member {
    Object(&'static Shape),
    /// A list of objects of this shape.
    List(&'static Shape),
}

/// A JSON value of the pod.
#[derive(Debug)]
pub enum Node<'a> {
    /// The request's own text, copied to the answer as it is.
    Raw(&'a RawValue),
    /// `null` where the shape expects an object or a list.
    Null,
    Object(Object<'a>),
    List(Vec<Node<'a>>),
    /// JSON text written by the policy (borrowed where it is a table's).
    New(Cow<'a, str>),
    /// A list of the request's (`Raw`) with items appended: their JSON text, comma-separated.
    Extended(&'a RawValue, String),
}

/// An object's members in document order. A repeated key's last value is the one that counts,
/// as in any JSON decoder the API server or the policy server uses.
#[derive(Debug)]
pub struct Object<'a> {
    members: Vec<(Name<'a>, Node<'a>)>,
    /// The shape it was read with, or created for: which members are parsed.
    shape: &'static Shape,
}

impl Default for Object<'_> {
    fn default() -> Self {
        Object::of(&Shape::TEXT)
    }
}

impl<'a> Node<'a> {
    /// `null`, whether parsed or kept as text.
    pub fn is_null(&self) -> bool {
        match self {
            Node::Null => true,
            Node::Raw(raw) => raw.get() == "null",
            _ => false,
        }
    }

    pub fn as_object(&self) -> Option<&Object<'a>> {
        match self {
            Node::Object(object) => Some(object),
            _ => None,
        }
    }

    /// The request's text of a value the shape did not parse.
    pub fn raw(&self) -> Option<&'a RawValue> {
        match self {
            Node::Raw(raw) => Some(raw),
            _ => None,
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Node::Raw(raw) => out.extend_from_slice(raw.get().as_bytes()),
            Node::Null => out.extend_from_slice(b"null"),
            Node::Object(object) => object.write(out),
            Node::List(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.write(out);
                }
                out.push(b']');
            }
            Node::New(text) => out.extend_from_slice(text.as_bytes()),
            Node::Extended(raw, items) => {
                // `merge::append` extends only lists: `[`, items and blanks, then `]`.
                let list = raw.get();
                let head = list.strip_suffix(']').unwrap_or(list);
                out.extend_from_slice(head.as_bytes());
                if !head.get(1..).unwrap_or("").trim().is_empty() {
                    out.push(b',');
                }
                out.extend_from_slice(items.as_bytes());
                out.push(b']');
            }
        }
    }
}

impl<'a> Object<'a> {
    /// An empty object of `shape`.
    pub fn of(shape: &'static Shape) -> Object<'a> {
        Object {
            members: Vec::new(),
            shape,
        }
    }

    pub fn shape(&self) -> &'static Shape {
        self.shape
    }

    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        self.members
            .iter()
            .rev()
            .find(|(k, _)| k.0 == key)
            .map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node<'a>> {
        self.members
            .iter_mut()
            .rev()
            .find(|(k, _)| k.0 == key)
            .map(|(_, v)| v)
    }

    /// Sets `key`, replacing the value that counts if there is one.
    pub fn insert(&mut self, key: &str, value: Node<'a>) -> &mut Node<'a> {
        let at = match self.members.iter().rposition(|(k, _)| k.0 == key) {
            Some(at) => {
                self.members[at].1 = value;
                at
            }
            None => {
                self.members
                    .push((Name(Cow::Owned(key.to_string())), value));
                self.members.len() - 1
            }
        };
        &mut self.members[at].1
    }

    /// The members, in document order.
    pub fn members(&self) -> impl Iterator<Item = (&Cow<'a, str>, &Node<'a>)> {
        self.members.iter().map(|(k, v)| (&k.0, v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|(k, _)| k.0.as_ref())
    }

    /// The object as JSON text, with every change made to it.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.push(b'{');
        for (i, (key, value)) in self.members.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            key.write(out);
            out.push(b':');
            value.write(out);
        }
        out.push(b'}');
    }
}

/// Reads `request.object` of an admission payload as an object of `shape`. A value the shape
/// parses that is neither `null` nor of the shape's JSON type is a rejection naming its path.
pub fn read_object<'a>(payload: &'a str, shape: &'static Shape) -> Result<Object<'a>, Error> {
    read_object_at(payload, &["request", "object"], shape)
}

/// `request.object` read within the decision's pass, member by member, for a pod that is likely
/// the policy's, so that an opted-in pod is not read a second time ([`crate::json::envelope`]
/// reads the metadata first, and goes on where a default trigger opts the pod in). A value
/// of the wrong type where the shape parses is recorded, not an error: the pass reads on, since a
/// pod that is not the policy's passes whatever it holds, and an opted-in one gets the rejection
/// its second read would give.
#[derive(Debug)]
pub struct EarlyObject<'a> {
    object: Object<'a>,
    wrong_type: Option<Error>,
}

impl<'a> EarlyObject<'a> {
    pub fn new(shape: &'static Shape) -> EarlyObject<'a> {
        EarlyObject {
            object: Object::of(shape),
            wrong_type: None,
        }
    }

    /// Whether the shape parses the member `key`, rather than keeping it as text.
    pub fn parses(&self, key: &str) -> bool {
        self.object.shape.member(key).is_some()
    }

    /// Reads the value of the member `key` as the shape reads it, and keeps it.
    pub(crate) fn read_member<'de: 'a, A: MapAccess<'de>>(
        &mut self,
        key: Name<'de>,
        map: &mut A,
    ) -> Result<&Node<'a>, A::Error> {
        let shape = self.object.shape;
        let wrong_type = Cell::new(self.wrong_type.take());
        let object = Seed {
            member: Member::Object(shape),
            path: &Path::Root,
            wrong_type: &wrong_type,
            lenient: true,
        };
        let value = object.member(shape, &key.0, map)?;
        self.wrong_type = wrong_type.into_inner();
        self.object.members.push((key, value));
        let (_, value) = &self.object.members[self.object.members.len() - 1];
        Ok(value)
    }

    /// The object, or the rejection of its first value of the wrong type.
    pub fn into_object(self) -> Result<Object<'a>, Error> {
        match self.wrong_type {
            Some(rejection) => Err(rejection),
            None => Ok(self.object),
        }
    }
}

/// Reads the object at `keys` of `text` as an object of `shape`.
fn read_object_at<'a>(
    text: &'a str,
    keys: &[&'static str],
    shape: &'static Shape,
) -> Result<Object<'a>, Error> {
    let wrong_type = Cell::new(None);
    let found = Cell::new(None);
    let seed = Seed {
        member: Member::Object(shape),
        path: &Path::Root,
        wrong_type: &wrong_type,
        lenient: false,
    };
    let read = At {
        keys,
        seed,
        found: &found,
    };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let result = read.deserialize(&mut deserializer);
    if let Some(rejection) = wrong_type.take() {
        return Err(rejection);
    }
    match (found.take(), result) {
        (Some(Node::Object(object)), _) => Ok(object),
        (Some(_), _) | (None, Ok(())) => Err(malformed("the object", JsonType::Object)),
        (None, Err(e)) => Err(Error::Unreadable {
            reason: e.to_string(),
        }),
    }
}

/// Reads the value at a path of keys with `seed` into `found`, skipping everything else. Nothing
/// is found when an object on the way lacks its key; a wrong type is an error (the decision's
/// pass has read it already). A repeated key's last value counts, as in the decision's pass.
///
/// What follows the object (the settings, often as long as the pod) is skipped, not cut off by an
/// error: serde_json gives every error its line and column by counting the lines of the text
/// before it, once for the error and once more for each object it leaves, which costs more than
/// skipping the rest.
struct At<'k, 'p, 'de> {
    keys: &'k [&'static str],
    seed: Seed<'p>,
    found: &'p Cell<Option<Node<'de>>>,
}

impl<'de> DeserializeSeed<'de> for At<'_, '_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for At<'_, '_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object with {:?}", self.keys)
    }

    // Any other type holds nothing at the path. (Each has its own answer: serde's defaults would
    // link the "invalid type" message and its float formatting.)
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some((&first, rest)) = self.keys.split_first() else {
            return Ok(());
        };
        while let Some(Name(key)) = map.next_key::<Name<'de>>()? {
            if key != first {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            // A later value of the key replaces what an earlier one held.
            self.found.set(None);
            if rest.is_empty() {
                self.found.set(Some(map.next_value_seed(self.seed)?));
            } else {
                map.next_value_seed(At {
                    keys: rest,
                    seed: self.seed,
                    found: self.found,
                })?;
            }
        }
        Ok(())
    }
}

/// Parses one value the shape names: an object (or list) and, inside it, the members its shape
/// names; every other member is kept as text.
#[derive(Clone, Copy)]
struct Seed<'p> {
    member: Member,
    path: &'p Path<'p>,
    wrong_type: &'p Cell<Option<Error>>,
    /// Reads on past a value of the wrong type (as `null`) instead of stopping the parse.
    lenient: bool,
}

impl<'de, 'p> DeserializeSeed<'de> for Seed<'p> {
    type Value = Node<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Seed<'_> {
    /// Reads the value of the member `key` of this object, of `shape`: as the shape reads it, or
    /// as text.
    fn member<'de, A: MapAccess<'de>>(
        self,
        shape: &Shape,
        key: &str,
        map: &mut A,
    ) -> Result<Node<'de>, A::Error> {
        match shape.member(key) {
            Some(member) => map.next_value_seed(Seed {
                member,
                path: &Path::Key(self.path, key),
                ..self
            }),
            None => map.next_value().map(Node::Raw),
        }
    }

    fn expected(&self) -> JsonType {
        match self.member {
            Member::Object(_) => JsonType::Object,
            Member::List(_) => JsonType::List,
        }
    }

    /// Records where the (first) wrong type is, for the rejection, and stops the parse; a lenient
    /// read goes on, the value read as `null`.
    fn wrong<E: de::Error>(self) -> Result<Node<'static>, E> {
        let first = self
            .wrong_type
            .take()
            .unwrap_or_else(|| malformed(&self.path.to_string(), self.expected()));
        self.wrong_type.set(Some(first));
        match self.lenient {
            true => Ok(Node::Null),
            false => Err(E::custom("wrong JSON type")),
        }
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} as {}", self.path, self.expected())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        let Member::Object(shape) = self.member else {
            let node = self.wrong()?;
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(node);
        };
        // Room for a typical object's members: growing one member at a time copies them again
        // and again (a pod's objects have a handful to a dozen).
        let mut object = Object {
            members: Vec::with_capacity(8),
            shape,
        };
        while let Some(key) = map.next_key::<Name<'de>>()? {
            let value = self.member(shape, &key.0, &mut map)?;
            object.members.push((key, value));
        }
        Ok(Node::Object(object))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
        let Member::List(shape) = self.member else {
            let node = self.wrong()?;
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(node);
        };
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Seed {
            member: Member::Object(shape),
            path: &Path::Index(self.path, items.len()),
            ..self
        })? {
            items.push(item);
        }
        Ok(Node::List(items))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Node<'de>, E> {
        self.wrong()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Node<'de>, E> {
        self.wrong()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Node<'de>, E> {
        self.wrong()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Node<'de>, E> {
        self.wrong()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Node<'de>, E> {
        self.wrong()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const LEAF: Shape = Shape { members: &[] };
    const ITEM: Shape = Shape {
        members: &[("inner", Member::Object(&LEAF))],
    };
    const SHAPE: Shape = Shape {
        members: &[
            ("meta", Member::Object(&LEAF)),
            ("items", Member::List(&ITEM)),
        ],
    };

    fn payload(object: &str) -> String {
        format!(
            r#"{{"request": {{"uid": "u", "object": {object}, "oldObject": null}}, "settings": {{}}}}"#
        )
    }

    fn written(object: &Object<'_>) -> String {
        let mut out = Vec::new();
        object.write(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn what_is_not_changed_comes_back_byte_for_byte() {
        let text = r#"{"a": 4.2000000000000005e+93, "meta": {"x": [1, 2.50]}, "items": [{"inner": null, "b": "\u0041"}], "esc\"aped": 1e400}"#;
        let bytes = payload(text);
        let object = read_object(&bytes, &SHAPE).unwrap();
        assert_eq!(
            written(&object),
            r#"{"a":4.2000000000000005e+93,"meta":{"x":[1, 2.50]},"items":[{"inner":null,"b":"\u0041"}],"esc\"aped":1e400}"#
        );
    }

    #[test]
    fn additions_are_spliced_in() {
        let bytes = payload(r#"{"meta": {}, "items": [{"inner": {"l": [ ], "m": [1 ]}}]}"#);
        let mut object = read_object(&bytes, &SHAPE).unwrap();
        let Some(Node::Object(meta)) = object.get_mut("meta") else {
            panic!("meta is parsed")
        };
        meta.insert("k", Node::New(r#""v""#.into()));
        let Some(Node::List(items)) = object.get_mut("items") else {
            panic!("items are parsed")
        };
        let Node::Object(item) = &mut items[0] else {
            panic!("an item is parsed")
        };
        let Some(Node::Object(inner)) = item.get_mut("inner") else {
            panic!("inner is parsed")
        };
        for key in ["l", "m"] {
            let raw = inner.get(key).and_then(Node::raw).unwrap();
            inner.insert(key, Node::Extended(raw, "2,3".into()));
        }
        let text = written(&object);
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({"meta": {"k": "v"}, "items": [{"inner": {"l": [2, 3], "m": [1, 2, 3]}}]})
        );
    }

    #[test]
    fn the_last_of_repeated_keys_counts() {
        let bytes = payload(r#"{"meta": {"a": 1}, "meta": {"a": 2}}"#);
        let object = read_object(&bytes, &SHAPE).unwrap();
        let Some(Node::Object(meta)) = object.get("meta") else {
            panic!("meta is parsed")
        };
        assert_eq!(meta.get("a").and_then(Node::raw).unwrap().get(), "2");
    }

    #[test]
    fn the_last_object_of_the_last_request_counts() {
        let meta = |payload: &str| {
            let object = read_object(payload, &SHAPE)?;
            let Some(Node::Object(meta)) = object.get("meta") else {
                panic!("meta is parsed")
            };
            Ok::<_, Error>(meta.get("a").and_then(Node::raw).unwrap().get().to_string())
        };
        let twice = r#"{"request": {"object": {"meta": {"a": 1}}, "object": {"meta": {"a": 2}}}}"#;
        assert_eq!(meta(twice).unwrap(), "2");
        let requests = r#"{"request": {"object": {"meta": {"a": 1}}}, "settings": {"x": [1, {"y": "}"}]}, "request": {"object": {"meta": {"a": 3}}}}"#;
        assert_eq!(meta(requests).unwrap(), "3");
        // A later request without an object has none, whatever an earlier one had.
        let gone = r#"{"request": {"object": {"meta": {}}}, "request": {"uid": "u"}}"#;
        assert_eq!(
            meta(gone).unwrap_err(),
            malformed("the object", JsonType::Object)
        );
    }

    #[test]
    fn a_wrong_type_where_the_shape_reads_is_located() {
        for (object, path, expected) in [
            (r#"{"meta": 1.5}"#, "meta", JsonType::Object),
            (r#"{"items": {"a": 1}}"#, "items", JsonType::List),
            (
                r#"{"items": [{}, {"inner": "x"}]}"#,
                "items[1].inner",
                JsonType::Object,
            ),
            (r#"{"items": [true]}"#, "items[0]", JsonType::Object),
            ("7", "the object", JsonType::Object),
        ] {
            let bytes = payload(object);
            assert_eq!(
                read_object(&bytes, &SHAPE).unwrap_err(),
                malformed(path, expected),
                "{object}"
            );
        }
        let bytes = payload("null");
        assert_eq!(
            read_object(&bytes, &SHAPE).unwrap_err(),
            malformed("the object", JsonType::Object)
        );
        // Null where the shape reads is absent; elsewhere it is kept as text.
        let bytes = payload(r#"{"meta": null, "other": null}"#);
        let object = read_object(&bytes, &SHAPE).unwrap();
        assert!(matches!(object.get("meta"), Some(Node::Null)));
        assert!(object.get("other").is_some_and(Node::is_null));
    }
}
