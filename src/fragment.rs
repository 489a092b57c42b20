//! The JSON text the policy adds to a pod: rendered once per request (or at compile time, for
//! the tables' env and mount entries) and copied into every container that lacks it.

use std::borrow::Cow;
use std::ops::Range;

use serde::Serialize;

/// Something the policy adds, as JSON text. (The profile's types implement it: this module knows
/// nothing of them, so the two do not import each other.)
pub trait Fragment {
    fn json(&self) -> Cow<'_, str>;
}

/// Items the policy adds to every GPU container, as one JSON text per request. A container that
/// has none of them (the usual case) gets the whole block copied in.
#[derive(Debug)]
pub struct Block<'p, T> {
    text: String,
    items: Vec<(&'p T, Range<usize>)>,
}

impl<'p, T: Fragment> Block<'p, T> {
    pub fn new(items: impl IntoIterator<Item = &'p T>) -> Self {
        let mut text = String::new();
        let mut ranges = Vec::new();
        for item in items {
            if !text.is_empty() {
                text.push(',');
            }
            let start = text.len();
            text.push_str(&item.json());
            ranges.push((item, start..text.len()));
        }
        Block {
            text,
            items: ranges,
        }
    }

    pub fn items(&self) -> impl Iterator<Item = &'p T> + '_ {
        self.items.iter().map(|(item, _)| *item)
    }

    /// All the items' JSON text, comma-separated.
    pub fn into_text(self) -> String {
        self.text
    }

    /// The JSON text of the items `keep` selects, comma-separated; empty if none.
    pub fn text_of(&self, keep: impl Fn(&T) -> bool) -> String {
        let kept: Vec<&Range<usize>> = self
            .items
            .iter()
            .filter(|(item, _)| keep(item))
            .map(|(_, range)| range)
            .collect();
        if kept.len() == self.items.len() {
            return self.text.clone();
        }
        joined(
            kept.into_iter()
                .filter_map(|range| self.text.get(range.clone())),
        )
    }
}

/// The JSON text of one of the policy's own values.
pub fn render(value: &impl Serialize) -> String {
    // The profile's types are plain structs of strings and lists: serialising them cannot fail.
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_string())
}

/// The JSON text of a string, escaped as serde_json escapes it. Written by hand: every added
/// env value, annotation and device count goes through it.
pub fn render_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    push_string(&mut out, value);
    out
}

/// Appends the JSON text of a string.
pub fn push_string(out: &mut String, value: &str) {
    out.push('"');
    let mut plain = 0;
    for (at, byte) in value.bytes().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&value[plain..at]);
        plain = at + 1;
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0xf)]));
        } else {
            out.push_str(escape);
        }
    }
    out.push_str(&value[plain..]);
    out.push('"');
}

/// Joins the JSON texts of `items` as list items.
pub fn joined<'r>(items: impl IntoIterator<Item = &'r str>) -> String {
    let mut text = String::new();
    for item in items {
        if !text.is_empty() {
            text.push(',');
        }
        text.push_str(item);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Var(&'static str, &'static str);

    impl Fragment for Var {
        fn json(&self) -> Cow<'_, str> {
            Cow::Owned(format!(r#"{{"name":"{}","value":"{}"}}"#, self.0, self.1))
        }
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        for s in [
            "",
            "plain",
            "say \"hi\"",
            "back\\slash",
            "a\nb\rc\td",
            "\u{8}\u{c}\u{1}\u{1f}\u{7f}",
            "é ∑ 🚀",
            "</script>",
        ] {
            assert_eq!(render_string(s), serde_json::to_string(s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn a_block_copies_what_is_kept() {
        let vars = [Var("A", "1"), Var("B", "2"), Var("C", "3")];
        let block = Block::new(&vars);
        let all = r#"{"name":"A","value":"1"},{"name":"B","value":"2"},{"name":"C","value":"3"}"#;
        assert_eq!(block.text_of(|_| true), all);
        assert_eq!(
            block.text_of(|v| v.0 != "B"),
            r#"{"name":"A","value":"1"},{"name":"C","value":"3"}"#
        );
        assert_eq!(block.text_of(|_| false), "");
        assert_eq!(
            block.items().map(|v| v.0).collect::<Vec<_>>(),
            ["A", "B", "C"]
        );
        assert_eq!(block.into_text(), all);
    }
}
