//! The JSON text the policy adds to a pod: rendered once per request (or at compile time, for
//! the tables' env and mount entries) and copied into every container that lacks it.

use std::borrow::Cow;
use std::ops::Range;

/// Something the policy adds, as JSON text. (The profile's types implement it: this module knows
/// nothing of them, so the two do not import each other.)
pub trait Fragment {
    fn json(&self) -> Cow<'_, str>;
}

/// Items the policy adds to every GPU container, as one JSON text per request. A container that
/// has none of them (the usual case) gets the whole text copied in.
#[derive(Debug)]
pub struct RenderedItems<'p, T> {
    text: String,
    items: Vec<(&'p T, Range<usize>)>,
}

impl<'p, T: Fragment> RenderedItems<'p, T> {
    pub fn new(items: impl IntoIterator<Item = &'p T>) -> Self {
        let items = items.into_iter();
        let count = items.size_hint().0;
        let mut ranges = Vec::with_capacity(count);
        // Room up front for entries of a typical size (`{"name":"NCCL_…","value":"…"}`): growing
        // from nothing was a tenth of an opted-in pod's allocations.
        let mut text = String::with_capacity(64 * count);
        for item in items {
            if !text.is_empty() {
                text.push(',');
            }
            let start = text.len();
            text.push_str(&item.json());
            ranges.push((item, start..text.len()));
        }
        RenderedItems {
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
        self.select(keep).0
    }

    /// The items `keep` selects, each asked once, and their JSON text, comma-separated.
    pub fn select(&self, keep: impl Fn(&T) -> bool) -> (String, Vec<&'p T>) {
        let kept: Vec<&(&'p T, Range<usize>)> =
            self.items.iter().filter(|(item, _)| keep(item)).collect();
        let items = kept.iter().map(|(item, _)| *item).collect();
        if kept.len() == self.items.len() {
            return (self.text.clone(), items);
        }
        let text = joined(
            kept.into_iter()
                .filter_map(|(_, range)| self.text.get(range.clone())),
        );
        (text, items)
    }
}

/// The JSON text of a string, escaped as serde_json escapes it. Written by hand: every added
/// env value, annotation and device count goes through it.
pub fn render_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    push_string(&mut out, value);
    out
}

/// For each byte, what follows the backslash of its escape: `0` for a byte written as it is,
/// `u` for one written `\u00XX`. serde_json's table: one lookup a byte is what makes escaping
/// cheap, and the compile-time escapes ([`json_string!`]) read the same table.
const ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = b'u';
        byte += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends the JSON text of a string.
pub fn push_string(out: &mut String, value: &str) {
    out.reserve(value.len() + 2);
    out.push('"');
    push_escaped(out, value);
    out.push('"');
}

/// Whether a string's JSON text is the string itself between quotes.
pub fn is_plain(value: &str) -> bool {
    value.bytes().all(|byte| ESCAPE[usize::from(byte)] == 0)
}

/// Appends a string as it reads between the quotes of its JSON text.
pub fn push_escaped(out: &mut String, value: &str) {
    let mut plain = 0;
    for (at, &byte) in value.as_bytes().iter().enumerate() {
        let escape = ESCAPE[usize::from(byte)];
        if escape == 0 {
            continue;
        }
        // Every escaped byte is ASCII: `at` is a character boundary.
        out.push_str(value.get(plain..at).unwrap_or_default());
        plain = at + 1;
        out.push('\\');
        out.push(char::from(escape));
        if escape == b'u' {
            out.push_str("00");
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0xf)]));
        }
    }
    out.push_str(value.get(plain..).unwrap_or_default());
}

/// The length of [`string_bytes`]'s text of `value`.
pub const fn string_len(value: &str) -> usize {
    let bytes = value.as_bytes();
    let (mut len, mut at) = (2, 0);
    while at < bytes.len() {
        len += match ESCAPE[bytes[at] as usize] {
            0 => 1,
            b'u' => 6,
            _ => 2,
        };
        at += 1;
    }
    len
}

/// [`push_string`] at compile time: the JSON text of `value` in `N` ([`string_len`]) bytes.
pub const fn string_bytes<const N: usize>(value: &str) -> [u8; N] {
    let bytes = value.as_bytes();
    let mut out = [0u8; N];
    out[0] = b'"';
    let (mut from, mut to) = (0, 1);
    while from < bytes.len() {
        let byte = bytes[from];
        match ESCAPE[byte as usize] {
            0 => {
                out[to] = byte;
                to += 1;
            }
            b'u' => {
                let escape = [
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[(byte >> 4) as usize],
                    HEX[(byte & 0xf) as usize],
                ];
                let mut i = 0;
                while i < escape.len() {
                    out[to + i] = escape[i];
                    i += 1;
                }
                to += escape.len();
            }
            escape => {
                out[to] = b'\\';
                out[to + 1] = escape;
                to += 2;
            }
        }
        from += 1;
    }
    out[to] = b'"';
    out
}

/// `json_string!(TEXT)`: the JSON text of a constant string, escaped at compile time, so that a
/// table's value the policy adds as it is (an annotation) costs a request only its copy.
macro_rules! json_string {
    ($value:expr) => {{
        const VALUE: &str = $value;
        const BYTES: [u8; $crate::json::write::string_len(VALUE)] =
            $crate::json::write::string_bytes(VALUE);
        const TEXT: &str = match ::std::str::from_utf8(&BYTES) {
            Ok(text) => text,
            Err(_) => panic!("escaping split a character"),
        };
        TEXT
    }};
}

pub(crate) use json_string;

/// Joins the JSON texts of `items` as list items.
pub fn joined<'r>(items: impl IntoIterator<Item = &'r str>) -> String {
    let mut text = String::new();
    push_joined(&mut text, items);
    text
}

/// Appends the JSON texts of `items`, comma-separated.
pub fn push_joined<'r>(out: &mut String, items: impl IntoIterator<Item = &'r str>) {
    for (at, item) in items.into_iter().enumerate() {
        if at > 0 {
            out.push(',');
        }
        out.push_str(item);
    }
}

/// Appends `["…",…]`, the JSON list of the strings `items`.
pub fn push_strings<'r>(out: &mut String, items: impl IntoIterator<Item = &'r str>) {
    out.push('[');
    for (at, item) in items.into_iter().enumerate() {
        if at > 0 {
            out.push(',');
        }
        push_string(out, item);
    }
    out.push(']');
}

/// JSON text without the whitespace between its tokens, as a compact writer writes it: a value
/// quoted in a message reads the same whatever layout the request had.
pub fn compact(json: &str) -> Cow<'_, str> {
    let is_blank = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r');
    if !json.contains(is_blank) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if is_blank(c) {
            continue;
        }
        out.push(c);
    }
    Cow::Owned(out)
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
    fn compile_time_escapes_are_serde_jsons() {
        // Every escape the table knows, a multi-byte character and the tables' newlines.
        const ODD: &str = "say \"hi\" back\\slash a\nb\rc\td \u{8}\u{c}\u{1}\u{1f}\u{7f} é ∑ 🚀";
        const DEVICES: &str = "- path: /dev/nvidia0\n- path: /dev/nvidiactl\n";
        for (text, value) in [
            (json_string!(""), ""),
            (json_string!("plain"), "plain"),
            (json_string!(ODD), ODD),
            (json_string!(DEVICES), DEVICES),
        ] {
            assert_eq!(text, serde_json::to_string(value).unwrap(), "{value:?}");
        }
    }

    #[test]
    fn a_block_copies_what_is_kept() {
        let vars = [Var("A", "1"), Var("B", "2"), Var("C", "3")];
        let block = RenderedItems::new(&vars);
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

    #[test]
    fn compact_text_drops_the_blanks_between_tokens_only() {
        assert_eq!(compact("[\n  \"x\"\n]"), "[\"x\"]");
        assert_eq!(
            compact(r#"{ "a b" : "c\" d" , "e": [1, 2] }"#),
            r#"{"a b":"c\" d","e":[1,2]}"#
        );
        assert_eq!(compact("\"1500m\""), "\"1500m\"");
    }
}
