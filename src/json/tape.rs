//! The settings as a tape: one pass over their JSON text, in the same pass that reads the
//! request, into one flat vector of slots whose strings borrow from the text.
//!
//! Settings come with every request, so reading them must cost little beside the pod: a tree of
//! `serde_json::Value` allocates a map and a string for every member, and reading members as
//! `&RawValue` text parses each nested object again. The tape is built once, with one growing
//! vector, and read by index. Values at the paths the reader names as lazy (the instance tables,
//! most of a large configuration, of which a pod needs one row) stay text until asked for.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::{JsonType, Name};

/// A JSON document as a tape.
#[derive(Debug, Clone)]
pub struct Tape<'a>(Vec<Slot<'a>>);

/// The empty tape reads as `null`.
impl Default for Tape<'_> {
    fn default() -> Self {
        Tape(vec![Slot {
            key: None,
            value: Scalar::Null,
        }])
    }
}

/// One value of the tape; an object's or list's members follow it, up to `end`.
#[derive(Debug, Clone)]
struct Slot<'a> {
    /// The member's key, where the value is an object's member.
    key: Option<Cow<'a, str>>,
    value: Scalar<'a>,
}

#[derive(Debug, Clone)]
enum Scalar<'a> {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(Cow<'a, str>),
    /// The slots of its items follow, up to (not including) `end`.
    List {
        end: usize,
    },
    Object {
        end: usize,
    },
    /// A value at a lazy path, as its text.
    Text(&'a RawValue),
}

/// A value on a tape.
#[derive(Debug, Clone, Copy)]
pub struct Value<'t, 'a> {
    slots: &'t [Slot<'a>],
    at: usize,
}

impl<'a> Tape<'a> {
    /// The document's value.
    pub fn root(&self) -> Value<'_, 'a> {
        Value {
            slots: &self.0,
            at: 0,
        }
    }
}

impl<'t, 'a> Value<'t, 'a> {
    fn slot(&self) -> &'t Slot<'a> {
        &self.slots[self.at]
    }

    pub fn json_type(&self) -> JsonType {
        match self.slot().value {
            Scalar::Null => JsonType::Null,
            Scalar::Bool(_) => JsonType::Bool,
            Scalar::Number(_) => JsonType::Number,
            Scalar::String(_) => JsonType::String,
            Scalar::List { .. } => JsonType::List,
            Scalar::Object { .. } => JsonType::Object,
            Scalar::Text(raw) => match raw.get().as_bytes().first() {
                Some(b'{') => JsonType::Object,
                Some(b'[') => JsonType::List,
                Some(b'"') => JsonType::String,
                Some(b'n') => JsonType::Null,
                Some(b't' | b'f') => JsonType::Bool,
                _ => JsonType::Number,
            },
        }
    }

    /// The text of a value at a lazy path.
    pub fn as_text(&self) -> Option<&'a RawValue> {
        match self.slot().value {
            Scalar::Text(raw) => Some(raw),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        self.json_type() == JsonType::Null
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self.slot().value {
            Scalar::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&'t Cow<'a, str>> {
        match &self.slot().value {
            Scalar::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_number(&self) -> Option<&'t serde_json::Number> {
        match &self.slot().value {
            Scalar::Number(n) => Some(n),
            _ => None,
        }
    }

    /// The values an object's members or a list's items, in document order; none for a scalar.
    fn children(&self) -> Children<'t, 'a> {
        let end = match self.slot().value {
            Scalar::List { end } | Scalar::Object { end } => end,
            _ => self.at + 1,
        };
        Children {
            slots: self.slots,
            next: self.at + 1,
            end,
        }
    }

    /// An object's members in document order; none for any other value.
    pub fn members(&self) -> impl Iterator<Item = (&'t Cow<'a, str>, Value<'t, 'a>)> + use<'t, 'a> {
        let object = self.json_type() == JsonType::Object;
        self.children()
            .filter(move |_| object)
            .filter_map(|v| v.slot().key.as_ref().map(|k| (k, v)))
    }

    /// A list's items; none for any other value.
    pub fn items(&self) -> impl Iterator<Item = Value<'t, 'a>> + use<'t, 'a> {
        let list = self.json_type() == JsonType::List;
        self.children().filter(move |_| list)
    }

    /// An object's member; the last of a repeated key, as in any JSON decoder.
    pub fn get(&self, key: &str) -> Option<Value<'t, 'a>> {
        self.members()
            .filter(|(k, _)| *k == key)
            .map(|(_, v)| v)
            .last()
    }

    /// How many members or items it has.
    pub fn count(&self) -> usize {
        self.children().count()
    }

    /// Whether two values are the same JSON, as two decoded trees compare: objects by their
    /// members in any order (the last of a repeated key), lists item by item.
    pub fn same(&self, other: &Value<'_, '_>) -> bool {
        match (&self.slot().value, &other.slot().value) {
            (Scalar::Object { .. }, Scalar::Object { .. }) => {
                self.same_members(other, &|_, ours, theirs| match (ours, theirs) {
                    (Some(ours), Some(theirs)) => ours.same(&theirs),
                    _ => false,
                })
            }
            (Scalar::List { .. }, Scalar::List { .. }) => {
                self.count() == other.count()
                    && self.items().zip(other.items()).all(|(a, b)| a.same(&b))
            }
            (Scalar::Null, Scalar::Null) => true,
            (Scalar::Bool(a), Scalar::Bool(b)) => a == b,
            (Scalar::Number(a), Scalar::Number(b)) => a == b,
            (Scalar::String(a), Scalar::String(b)) => a == b,
            // Text kept lazily is compared as text.
            (Scalar::Text(a), Scalar::Text(b)) => a.get() == b.get(),
            _ => false,
        }
    }

    /// Whether two objects have the same members, `member` judging each key of either (with the
    /// value each has for it, if any). Not objects: false.
    pub fn same_members<'s, 'o>(
        &self,
        other: &Value<'s, 'o>,
        member: &SameMember<'_, 't, 'a, 's, 'o>,
    ) -> bool {
        let objects = self.json_type() == JsonType::Object && other.json_type() == JsonType::Object;
        objects
            && self
                .members()
                .all(|(key, _)| member(key, self.get(key), other.get(key)))
            && other
                .members()
                .all(|(key, _)| member(key, self.get(key), other.get(key)))
    }
}

/// Judges one key's members of two objects (either may lack it): see [`Value::same_members`].
pub type SameMember<'f, 't, 'a, 's, 'o> =
    dyn Fn(&str, Option<Value<'t, 'a>>, Option<Value<'s, 'o>>) -> bool + 'f;

/// Walks the direct children of a value, skipping each child's own members.
struct Children<'t, 'a> {
    slots: &'t [Slot<'a>],
    next: usize,
    end: usize,
}

impl<'t, 'a> Iterator for Children<'t, 'a> {
    type Item = Value<'t, 'a>;

    fn next(&mut self) -> Option<Value<'t, 'a>> {
        if self.next >= self.end {
            return None;
        }
        let value = Value {
            slots: self.slots,
            at: self.next,
        };
        self.next = match value.slot().value {
            Scalar::List { end } | Scalar::Object { end } => end,
            _ => self.next + 1,
        };
        Some(value)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Tape<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Tape::read_lazy(deserializer, &[])
    }
}

impl<'a> Tape<'a> {
    /// Reads a document, keeping as text the values at `lazy`: a path of keys from the root,
    /// `*` standing for any key (`["*", "instanceTypes"]`).
    pub fn read_lazy<'de: 'a, D: Deserializer<'de>>(
        deserializer: D,
        lazy: &'static [&'static str],
    ) -> Result<Tape<'a>, D::Error> {
        // Room for typical settings (a block, a few keys and an env map): the tape grows by
        // copying every node.
        let mut slots = Vec::with_capacity(64);
        Push {
            slots: &mut slots,
            key: None,
            lazy: Some(lazy).filter(|lazy| !lazy.is_empty()),
        }
        .deserialize(deserializer)?;
        Ok(Tape(slots))
    }
}

/// Pushes one value (and its members) onto the tape.
struct Push<'v, 'a> {
    slots: &'v mut Vec<Slot<'a>>,
    key: Option<Cow<'a, str>>,
    /// The rest of the lazy path below this value, if this value is on it.
    lazy: Option<&'static [&'static str]>,
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for Push<'_, 'a> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'a> Push<'_, 'a> {
    fn scalar<E>(self, value: Scalar<'a>) -> Result<(), E> {
        self.slots.push(Slot {
            key: self.key,
            value,
        });
        Ok(())
    }

    /// Pushes a container's node, then its members with `each`, then records where it ends.
    fn container<E>(
        self,
        object: bool,
        each: impl FnOnce(&mut Vec<Slot<'a>>) -> Result<(), E>,
    ) -> Result<(), E> {
        let at = self.slots.len();
        self.slots.push(Slot {
            key: self.key,
            value: Scalar::Null,
        });
        each(self.slots)?;
        let end = self.slots.len();
        self.slots[at].value = if object {
            Scalar::Object { end }
        } else {
            Scalar::List { end }
        };
        Ok(())
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Push<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.scalar(Scalar::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.scalar(Scalar::Bool(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.scalar(Scalar::Number(v.into()))
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.scalar(Scalar::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        let number = serde_json::Number::from_f64(v).ok_or_else(|| E::custom("not a number"))?;
        self.scalar(Scalar::Number(number))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<(), E> {
        self.scalar(Scalar::String(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.scalar(Scalar::String(Cow::Owned(v.to_string())))
    }

    fn visit_string<E>(self, v: String) -> Result<(), E> {
        self.scalar(Scalar::String(Cow::Owned(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.container(false, |slots| {
            while seq
                .next_element_seed(Push {
                    slots,
                    key: None,
                    lazy: None,
                })?
                .is_some()
            {}
            Ok(())
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let lazy = self.lazy;
        self.container(true, |slots| {
            while let Some(Name(key)) = map.next_key::<Name<'de>>()? {
                let below = lazy
                    .and_then(|path| path.split_first())
                    .filter(|(first, _)| **first == "*" || **first == key)
                    .map(|(_, rest)| rest);
                match below {
                    Some([]) => {
                        let text: &'de RawValue = map.next_value()?;
                        slots.push(Slot {
                            key: Some(key),
                            value: Scalar::Text(text),
                        });
                    }
                    _ => map.next_value_seed(Push {
                        slots,
                        key: Some(key),
                        lazy: below,
                    })?,
                }
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value as Json;

    fn tape(text: &str) -> Tape<'_> {
        crate::json::lenient::read(text).expect("JSON")
    }

    /// JSON values with few distinct keys and scalars, so that equal pairs are common.
    fn json() -> impl Strategy<Value = Json> {
        let leaf = prop_oneof![
            Just(Json::Null),
            any::<bool>().prop_map(Json::from),
            (-2i64..3).prop_map(Json::from),
            prop_oneof![Just(0.5), Just(2.0), Just(-0.0)].prop_map(Json::from),
            prop_oneof![Just(""), Just("a"), Just("é\"")].prop_map(Json::from),
        ];
        leaf.prop_recursive(3, 24, 3, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Json::Array),
                proptest::collection::vec(
                    (prop_oneof![Just("a"), Just("b"), Just("c")], inner),
                    0..3
                )
                .prop_map(|members| {
                    Json::Object(
                        members
                            .into_iter()
                            .map(|(k, v)| (k.to_string(), v))
                            .collect(),
                    )
                }),
            ]
        })
    }

    /// The text of a value with every object's members in reverse order and its first member
    /// repeated before them with another value (which the last of the key overrides).
    fn shuffled(value: &Json) -> String {
        match value {
            Json::Object(members) => {
                let mut parts: Vec<String> = members
                    .iter()
                    .rev()
                    .map(|(k, v)| format!("{}:{}", Json::from(k.as_str()), shuffled(v)))
                    .collect();
                if let Some((k, _)) = members.iter().next() {
                    parts.insert(0, format!("{}:[\"overridden\"]", Json::from(k.as_str())));
                }
                format!("{{{}}}", parts.join(","))
            }
            Json::Array(items) => {
                let items: Vec<String> = items.iter().map(shuffled).collect();
                format!("[{}]", items.join(","))
            }
            scalar => scalar.to_string(),
        }
    }

    proptest! {
        /// `same` is the equality of decoded trees, whatever the member order or repeats.
        #[test]
        fn same_is_the_equality_of_decoded_values(a in json(), b in json()) {
            let (a_text, b_text) = (shuffled(&a), shuffled(&b));
            let (ta, tb) = (tape(&a_text), tape(&b_text));
            prop_assert!(ta.root().same(&tape(&a.to_string()).root()));
            prop_assert_eq!(ta.root().same(&tb.root()), a == b, "{} vs {}", a_text, b_text);
        }
    }

    #[test]
    fn members_and_items_skip_nested_values() {
        let t =
            tape(r#"{"a": {"x": [1, {"y": 2}]}, "b": [true, null, "s"], "a": 3, "c\u0041": "é"}"#);
        let root = t.root();
        let keys: Vec<_> = root.members().map(|(k, _)| k.as_ref()).collect();
        assert_eq!(keys, ["a", "b", "a", "cA"]);
        assert_eq!(
            root.get("a")
                .and_then(|v| v.as_number())
                .map(ToString::to_string),
            Some("3".into())
        );
        let b: Vec<_> = root
            .get("b")
            .unwrap()
            .items()
            .map(|v| v.json_type())
            .collect();
        assert_eq!(b, [JsonType::Bool, JsonType::Null, JsonType::String]);
        let first_a = root.members().next().unwrap().1;
        assert_eq!(first_a.get("x").unwrap().count(), 2);
        assert_eq!(
            first_a
                .get("x")
                .unwrap()
                .items()
                .nth(1)
                .unwrap()
                .get("y")
                .unwrap()
                .as_number()
                .unwrap()
                .as_u64(),
            Some(2)
        );
        assert!(
            matches!(root.get("cA").unwrap().as_str(), Some(Cow::Owned(s)) if s == "é")
                || root.get("cA").unwrap().as_str().is_some()
        );
        // A scalar has no members or items; an object no items.
        assert_eq!(
            root.get("b")
                .unwrap()
                .items()
                .next()
                .unwrap()
                .members()
                .count(),
            0
        );
        assert_eq!(root.items().count(), 0);
    }

    #[test]
    fn strings_borrow_from_the_text_unless_escaped() {
        let t = tape(r#"{"plain": "abc", "escaped": "a\"b"}"#);
        assert!(matches!(
            t.root().get("plain").unwrap().as_str(),
            Some(Cow::Borrowed("abc"))
        ));
        assert!(
            matches!(t.root().get("escaped").unwrap().as_str(), Some(Cow::Owned(s)) if s == "a\"b")
        );
    }

    #[test]
    fn lazy_paths_stay_text() {
        let text = r#"{"aws": {"instanceTypes": {"p5": {"devicesPerNode": 32}}, "env": {"A": "1"}}, "instanceTypes": 1}"#;
        let mut de = serde_json::Deserializer::from_str(text);
        let t = Tape::read_lazy(&mut de, &["*", "instanceTypes"]).unwrap();
        let aws = t.root().get("aws").unwrap();
        let types = aws.get("instanceTypes").unwrap();
        assert_eq!(
            types.as_text().map(RawValue::get),
            Some(r#"{"p5": {"devicesPerNode": 32}}"#)
        );
        assert_eq!(types.json_type(), JsonType::Object);
        assert_eq!(types.members().count(), 0);
        assert_eq!(
            aws.get("env")
                .unwrap()
                .get("A")
                .unwrap()
                .as_str()
                .map(|s| s.as_ref()),
            Some("1")
        );
        // Only at the path's depth.
        assert!(t.root().get("instanceTypes").unwrap().as_number().is_some());
    }

    #[test]
    fn numbers_keep_their_kind() {
        let t = tape(r#"[0.5, -1, 18446744073709551615, 1e-6]"#);
        let shown: Vec<String> = t
            .root()
            .items()
            .map(|v| v.as_number().unwrap().to_string())
            .collect();
        assert_eq!(shown, ["0.5", "-1", "18446744073709551615", "1e-6"]);
    }
}
