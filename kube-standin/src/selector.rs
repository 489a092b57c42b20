//! Field and label selectors of a list or watch, as the API server reads them.
//!
//! Field selectors: comma-separated `field=value`, `field==value`, `field!=value`; the fields every
//! kind supports are `metadata.name` and `metadata.namespace` (all a CustomResourceDefinition's
//! kinds support without `selectableFields`), and any other is refused with the API server's
//! 400 `field label not supported: <field>`. Label selectors: `key=value`, `key==value`,
//! `key!=value`, `key`, `!key`, `key in (a,b)`, `key notin (a,b)`.

use serde_json::Value;

/// A parsed selector: every requirement must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    fields: Vec<(Field, bool, String)>,
    labels: Vec<Label>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Name,
    Namespace,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Label {
    /// The key has (or, `false`, has not) one of the values.
    In(String, bool, Vec<String>),
    /// The key is (or, `false`, is not) present.
    Exists(String, bool),
}

impl Selector {
    /// The selector of a request's `fieldSelector` and `labelSelector`; `Err` the 400 message.
    pub fn parse(fields: Option<&str>, labels: Option<&str>) -> Result<Selector, String> {
        let mut selector = Selector::default();
        for term in fields.unwrap_or_default().split(',').map(str::trim) {
            if term.is_empty() {
                continue;
            }
            let (key, equal, value) = if let Some((k, v)) = term.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = term.split_once("==") {
                (k, true, v)
            } else if let Some((k, v)) = term.split_once('=') {
                (k, true, v)
            } else {
                return Err(format!(
                    "invalid selector: '{}'; can't understand '{term}'",
                    fields.unwrap_or_default()
                ));
            };
            let field = match key.trim() {
                "metadata.name" => Field::Name,
                "metadata.namespace" => Field::Namespace,
                other => return Err(format!("field label not supported: {other}")),
            };
            selector
                .fields
                .push((field, equal, value.trim().to_string()));
        }
        for term in split_outside_parentheses(labels.unwrap_or_default()) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            selector.labels.push(label(term).ok_or_else(|| {
                format!(
                    "unable to parse requirement: {term:?} in label selector {:?}",
                    labels.unwrap_or_default()
                )
            })?);
        }
        Ok(selector)
    }

    /// The name a `metadata.name=` term asks for: what RBAC's `resourceNames` are held to.
    pub fn name(&self) -> Option<&str> {
        self.fields
            .iter()
            .find(|(f, equal, _)| *f == Field::Name && *equal)
            .map(|(_, _, v)| v.as_str())
    }

    pub fn matches(&self, object: &Value) -> bool {
        let meta = &object["metadata"];
        let fields = self.fields.iter().all(|(field, equal, value)| {
            let actual = match field {
                Field::Name => meta["name"].as_str(),
                Field::Namespace => meta["namespace"].as_str(),
            }
            .unwrap_or_default();
            (actual == value) == *equal
        });
        let label = |key: &str| meta["labels"][key].as_str();
        fields
            && self.labels.iter().all(|requirement| match requirement {
                Label::In(key, inside, values) => match label(key) {
                    Some(v) => values.iter().any(|x| x == v) == *inside,
                    // `!=` and `notin` hold for an object without the label.
                    None => !*inside,
                },
                Label::Exists(key, present) => label(key).is_some() == *present,
            })
    }
}

fn split_outside_parentheses(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn label(term: &str) -> Option<Label> {
    let set = |rest: &str| -> Option<Vec<String>> {
        let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
        Some(inner.split(',').map(|v| v.trim().to_string()).collect())
    };
    if let Some((key, rest)) = term.split_once(" notin ") {
        return Some(Label::In(key.trim().into(), false, set(rest)?));
    }
    if let Some((key, rest)) = term.split_once(" in ") {
        return Some(Label::In(key.trim().into(), true, set(rest)?));
    }
    if let Some((key, value)) = term.split_once("!=") {
        return Some(Label::In(
            key.trim().into(),
            false,
            vec![value.trim().into()],
        ));
    }
    if let Some((key, value)) = term.split_once("==").or_else(|| term.split_once('=')) {
        return Some(Label::In(
            key.trim().into(),
            true,
            vec![value.trim().into()],
        ));
    }
    if let Some(key) = term.strip_prefix('!') {
        return Some(Label::Exists(key.trim().into(), false));
    }
    if term.contains(|c: char| c.is_whitespace() || "()".contains(c)) {
        return None;
    }
    Some(Label::Exists(term.into(), true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(name: &str, labels: Value) -> Value {
        json!({"metadata": {"name": name, "namespace": "team-a", "labels": labels}})
    }

    #[test]
    fn field_selectors() {
        let s = Selector::parse(Some("metadata.name=llama"), None).unwrap();
        assert_eq!(s.name(), Some("llama"));
        assert!(s.matches(&object("llama", json!({}))));
        assert!(!s.matches(&object("other", json!({}))));
        let s = Selector::parse(
            Some("metadata.namespace==team-a,metadata.name!=llama"),
            None,
        )
        .unwrap();
        assert_eq!(s.name(), None);
        assert!(s.matches(&object("other", json!({}))));
        assert!(!s.matches(&object("llama", json!({}))));
        assert_eq!(
            Selector::parse(Some("spec.channel=x"), None).unwrap_err(),
            "field label not supported: spec.channel"
        );
    }

    #[test]
    fn label_selectors() {
        let job = object("a", json!({"job": "llama", "role": "worker"}));
        let holds = |text: &str| Selector::parse(None, Some(text)).unwrap().matches(&job);
        assert!(holds("job=llama"));
        assert!(holds("job==llama,role"));
        assert!(!holds("job!=llama"));
        assert!(holds("!missing"));
        assert!(holds("role in (launcher, worker)"));
        assert!(!holds("role notin (worker)"));
        assert!(holds("missing!=x"));
        assert!(Selector::parse(None, Some("a b")).is_err());
    }
}
