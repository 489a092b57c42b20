//! The JSON text the policy adds to a pod: rendered once per request (or at compile time, for
//! the tables' env and mount entries) and copied into every container that lacks it.

use std::borrow::Cow;
use std::ops::Range;

use serde::Serialize;

use crate::profile::{EnvVar, Mount, Volume};

/// Something the policy adds, as JSON text.
pub trait Fragment {
    fn json(&self) -> Cow<'_, str>;
}

impl Fragment for EnvVar {
    fn json(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.json)
    }
}

impl Fragment for Mount {
    fn json(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.json)
    }
}

impl Fragment for Volume {
    fn json(&self) -> Cow<'_, str> {
        Cow::Owned(render(self))
    }
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

/// The JSON text of a string.
pub fn render_string(value: &str) -> String {
    render(&value)
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
    use crate::profile::var;

    #[test]
    fn a_block_copies_what_is_kept() {
        let vars = [var!("A", "1"), var!("B", "2"), var!("C", "3")];
        let block = Block::new(&vars);
        let all = r#"{"name":"A","value":"1"},{"name":"B","value":"2"},{"name":"C","value":"3"}"#;
        assert_eq!(block.text_of(|_| true), all);
        assert_eq!(
            block.text_of(|v| v.name != "B"),
            r#"{"name":"A","value":"1"},{"name":"C","value":"3"}"#
        );
        assert_eq!(block.text_of(|_| false), "");
        assert_eq!(
            block.items().map(|v| v.name).collect::<Vec<_>>(),
            ["A", "B", "C"]
        );
        assert_eq!(block.into_text(), all);
    }
}
