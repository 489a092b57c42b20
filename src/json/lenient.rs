//! Readers that never fail on the wrong JSON type: a field of the wrong type reads as absent.
//!
//! A pod that is not opted in must pass untouched whatever it holds, and inside an opted-in pod a
//! list entry of the wrong shape (an env entry without a name) is simply not one of ours; so these
//! readers skip what they do not expect instead of failing the whole decode.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// Reads JSON text. The module reads all its JSON through this one reader (text: the payload is
/// checked as UTF-8 once, then no string needs checking again), because every reader type gets
/// its own copy of serde_json's parser for every kind of input it reads.
pub fn read<'a, T: Deserialize<'a>>(json: &'a str) -> serde_json::Result<T> {
    serde_json::from_str(json)
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

/// How a lenient type is built from each JSON shape; the shapes it does not implement are skipped.
pub trait Lenient<'de>: Default {
    fn from_str(_text: Cow<'de, str>) -> Self {
        Self::default()
    }
    /// A string that the parser unescaped into its own buffer, so not borrowed from the input:
    /// a type that keeps strings copies it, and the others drop it without a copy being made.
    fn from_copied(_text: &str) -> Self {
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
        Ok(T::from_copied(v))
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
pub fn each_field<'de, A, F>(mut map: A, mut field: F) -> Result<(), A::Error>
where
    A: MapAccess<'de>,
    F: FnMut(&str, &mut A) -> Result<(), A::Error>,
{
    while let Some(Loose(Text(Some(key)))) = map.next_key::<Loose<Text<'de>>>()? {
        field(&key, &mut map)?;
    }
    Ok(())
}

pub fn skip<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<IgnoredAny>().map(drop)
}

impl<'a, 'de: 'a> Lenient<'de> for Text<'a> {
    fn from_str(text: Cow<'de, str>) -> Self {
        Text(Some(text))
    }
    fn from_copied(text: &str) -> Self {
        Text(Some(Cow::Owned(text.to_string())))
    }
}

/// A list read leniently: `T` reads each item, whatever its type.
#[derive(Debug)]
pub struct Items<T>(pub Vec<T>);

impl<T> Default for Items<T> {
    fn default() -> Self {
        Items(Vec::new())
    }
}

impl<'de, T: Lenient<'de>> Lenient<'de> for Items<T> {
    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut items = Vec::new();
        while let Some(Loose(item)) = seq.next_element::<Loose<T>>()? {
            items.push(item);
        }
        Ok(Items(items))
    }
}

/// The identifying string fields of a small Kubernetes object: an env entry, a mount, a volume,
/// an init container, an owner reference, the request's kind. One type reads them all because
/// every reader type costs the module its own copy of the JSON parser; each reader uses the fields
/// that its object has, and the others stay empty.
#[derive(Debug, Default)]
pub struct Entry<'a> {
    pub name: Text<'a>,
    pub kind: Text<'a>,
    pub api_version: Text<'a>,
    pub group: Text<'a>,
    pub version: Text<'a>,
    pub mount_path: Text<'a>,
    /// A pod claim's `resourceClaimTemplateName`.
    pub template: Text<'a>,
    /// A container's `volumeMounts`.
    pub mounts: Items<Entry<'a>>,
}

impl<'a, 'de: 'a> Lenient<'de> for Entry<'a> {
    fn from_map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut entry = Entry::default();
        each_field(map, |key, map| {
            let slot = match key {
                "name" => &mut entry.name,
                "kind" => &mut entry.kind,
                "apiVersion" => &mut entry.api_version,
                "group" => &mut entry.group,
                "version" => &mut entry.version,
                "mountPath" => &mut entry.mount_path,
                "resourceClaimTemplateName" => &mut entry.template,
                "volumeMounts" => {
                    entry.mounts = map.next_value::<Loose<Items<Entry<'a>>>>()?.0;
                    return Ok(());
                }
                _ => return skip(map),
            };
            *slot = map.next_value::<Loose<Text<'a>>>()?.0;
            Ok(())
        })?;
        Ok(entry)
    }
}

/// An object's members in document order: keys decoded, values as their JSON text. A repeated
/// key's last value is the one that counts, as in any JSON decoder. Settings and the few pod
/// fields read outside the view are read through it, so that a tree is never built.
#[derive(Debug, Default)]
pub struct Members<'a>(pub Vec<(Cow<'a, str>, &'a RawValue)>);

/// A value's parts as JSON text: an object's members or a list's items. Objects and lists are
/// read by this one type because every reader type costs the module its own copy of the parser.
#[derive(Default)]
enum Parts<'a> {
    Members(Members<'a>),
    Items(Vec<&'a RawValue>),
    #[default]
    Neither,
}

impl<'a> Members<'a> {
    pub fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

impl<'a, 'de: 'a> Lenient<'de> for Parts<'a> {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut members = Vec::new();
        while let Some(Loose(Text(key))) = map.next_key::<Loose<Text<'de>>>()? {
            let value: &'de RawValue = map.next_value()?;
            members.push((key.unwrap_or_default(), value));
        }
        Ok(Parts::Members(Members(members)))
    }
    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<&'de RawValue>()? {
            items.push(item);
        }
        Ok(Parts::Items(items))
    }
}

/// The members of the object `json` is; none for any other value, an error for text that is
/// not JSON.
pub fn read_members(json: &str) -> serde_json::Result<Members<'_>> {
    read::<Loose<Parts<'_>>>(json).map(|parts| match parts.0 {
        Parts::Members(members) => members,
        _ => Members::default(),
    })
}

/// The members of an object; none for any other value.
pub fn members(raw: &RawValue) -> Members<'_> {
    read_members(raw.get()).unwrap_or_default()
}

/// The items of a list; none for any other value.
pub fn items(raw: &RawValue) -> Vec<&RawValue> {
    list(raw.get()).ok().flatten().unwrap_or_default()
}

/// The items of a list as their JSON text; `None` for any other value, an error for text that is
/// not JSON. (Read through [`Loose`], not as a `Vec`: serde's own list reader would link its
/// "invalid type" message, and with it about 16 KB of float formatting.)
pub fn list(json: &str) -> serde_json::Result<Option<Vec<&RawValue>>> {
    read::<Loose<Parts<'_>>>(json).map(|parts| match parts.0 {
        Parts::Items(items) => Some(items),
        _ => None,
    })
}

/// The item of a list of Kubernetes objects (a list's `items`) whose `metadata.name` is `name`:
/// a host that ignores a field selector answers others too.
pub fn item_named<'a>(list: &'a RawValue, name: &str) -> Option<&'a RawValue> {
    items(list).into_iter().find(|item| {
        members(item)
            .get("metadata")
            .map(members)
            .and_then(|metadata| metadata.get("name"))
            .and_then(string)
            .is_some_and(|found| found == name)
    })
}

/// A string value, decoded; `None` for any other value.
pub fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    read::<Loose<Text<'_>>>(raw.get())
        .ok()
        .and_then(|text| text.0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_tells_a_list_from_other_values_and_from_text_that_is_not_json() {
        let items = list(r#"[{"name": "a"}, 7, "x"]"#).unwrap().unwrap();
        let texts: Vec<&str> = items.iter().map(|item| item.get()).collect();
        assert_eq!(texts, [r#"{"name": "a"}"#, "7", r#""x""#]);
        assert_eq!(list("[]").unwrap().map(|items| items.len()), Some(0));
        for other in [r#"{"a": []}"#, r#""[]""#, "null", "3"] {
            assert!(list(other).unwrap().is_none(), "{other}");
        }
        assert!(list("[1,").is_err());
    }
}
