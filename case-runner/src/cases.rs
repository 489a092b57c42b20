//! Data-driven cases: YAML files of `{settings | settings_file, operation, kind, object, expect}`
//! (or `{payload, expect}`), run by [`crate::runner`] against the policy's core and the compiled
//! module alike. The expected pods are written by hand from `docs/behaviour.md`, never copied from
//! output.
//!
//! Every message a case expects (a rejection, a warning, a settings problem) is compared with the
//! policy's answer whole and case-sensitively, and must be one of the templates of
//! `e2e-tests/messages.yaml`, the table of every message the policy answers with
//! (behaviour.md §6): a substring would let a message drift from the contract unnoticed.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use fixtures::{admission_request, pod_kind};
use serde::Deserialize;
use serde_json::Value;

use crate::cluster::Cluster;

/// One mutation case.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Required unless `payload` is given.
    #[serde(default)]
    pub settings: Value,
    #[serde(default = "create")]
    pub operation: String,
    #[serde(default = "pod_kind")]
    pub kind: Value,
    /// The request's object (`null` for a DELETE); absent with `payload`.
    #[serde(default)]
    pub object: Value,
    /// The whole `validate` payload as text, sent as it is, in place of `settings`, `operation`,
    /// `kind` and `object`: for input no YAML object can express (text that is not JSON, a
    /// repeated key, a number beyond the range of a double). Such a case expects no mutation.
    #[serde(default)]
    pub payload: Option<String>,
    /// The object as the API server stores it (`fixtures::stored`), sent as Kubewarden's audit
    /// scanner sends a stored pod (behaviour.md §10): a CREATE whose `resource.resource` is the
    /// Kind, with an empty `userInfo`.
    #[serde(default)]
    pub stored: bool,
    /// The cluster the policy's host calls are answered from (behaviour.md §9); absent, every
    /// host call is an error, as for an `AdmissionPolicy`.
    #[serde(default)]
    pub cluster: Option<Cluster>,
    pub expect: Expect,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub accepted: bool,
    /// The whole pod after mutation; absent means no mutation.
    pub pod: Option<Value>,
    /// Every warning, exactly and in order; absent means no warning at all.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The rejection message, exactly; required when `accepted` is false, absent otherwise.
    #[serde(default)]
    pub message: Option<String>,
    /// How many host calls the first pass makes, when given.
    #[serde(default)]
    pub host_calls: Option<usize>,
}

/// One settings case.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsCase {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Required unless `settings_text` is given.
    #[serde(default)]
    pub settings: Value,
    /// The `validate_settings` payload as text, sent as it is in place of `settings`: for
    /// settings that are not JSON.
    #[serde(default)]
    pub settings_text: Option<String>,
    pub valid: bool,
    /// Every problem, exactly and in the policy's order; the answer is them joined by `"; "`
    /// (behaviour.md §1.4). Absent when `valid`.
    #[serde(default, deserialize_with = "one_or_many")]
    pub message: Vec<String>,
}

impl Case {
    /// The `validate` payload: `payload` as it is, or the request built from the case.
    pub fn payload(&self) -> Vec<u8> {
        match &self.payload {
            Some(text) => text.clone().into_bytes(),
            None => fixtures::payload(&self.request(), &self.settings),
        }
    }

    /// The AdmissionRequest of the case's object: the audit scanner's where it is `stored`.
    pub fn request(&self) -> Value {
        if self.stored {
            fixtures::stored::audit_request(&fixtures::stored::stored(&self.object))
        } else {
            admission_request(&self.operation, &self.kind, &self.object)
        }
    }
}

impl SettingsCase {
    /// The `validate_settings` payload: `settings_text` as it is, or `settings` as JSON.
    pub fn payload(&self) -> Vec<u8> {
        match &self.settings_text {
            Some(text) => text.clone().into_bytes(),
            None => serde_json::to_vec(&self.settings).expect("a JSON value serialises"),
        }
    }
}

fn create() -> String {
    "CREATE".to_string()
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

/// `settings_file: path` (from the repository's root) in place of `settings`: the case runs with
/// a file users copy, such as `examples/settings/vendor/aws.yaml`, as it is in the repository (of
/// a chart's whole values file, its `multinodeNetworking` block).
/// Likewise `object_file` for `object` and `expect.pod_file` for `expect.pod`: pods that several
/// cases share (`e2e-tests/pods/`).
fn settings_from_file(case: &mut serde_yaml::Value) -> Result<()> {
    let Some(map) = case.as_mapping_mut() else {
        return Ok(());
    };
    from_file(map, "settings_file", "settings")?;
    from_file(map, "object_file", "object")?;
    if let Some(expect) = map.get_mut("expect").and_then(|e| e.as_mapping_mut()) {
        from_file(expect, "pod_file", "pod")?;
    }
    Ok(())
}

/// Replaces `key: path` in `map` by `into:` the YAML of that file.
fn from_file(map: &mut serde_yaml::Mapping, key: &str, into: &str) -> Result<()> {
    let Some(path) = map.remove(key) else {
        return Ok(());
    };
    let path = path
        .as_str()
        .with_context(|| format!("{key} must be a path"))?;
    ensure!(
        !map.contains_key(into),
        "a case has {into} or {key}, not both"
    );
    let file = crate::repo_root().join(path);
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let mut value: serde_yaml::Value =
        serde_yaml::from_str(&text).with_context(|| format!("{path} is not YAML"))?;
    if into == "settings" {
        // A whole chart values file (NeMo Platform's or NeMo Helix's) gives its
        // `multinodeNetworking` block, as `make preview` and the playground read it.
        let block = policy_payload::settings_block(serde_json::to_value(&value)?);
        value = serde_yaml::to_value(block)?;
    }
    map.insert(into.into(), value);
    Ok(())
}

/// Every `*.yaml` below `dir`, each a stream of documents of type `T`, in path order.
pub fn load<T: for<'de> Deserialize<'de>>(dir: &Path) -> Result<Vec<(PathBuf, T)>> {
    let mut cases = Vec::new();
    for file in crate::yaml_files(dir)? {
        let text = std::fs::read_to_string(&file)?;
        for document in serde_yaml::Deserializer::from_str(&text) {
            let mut value = serde_yaml::Value::deserialize(document)
                .with_context(|| format!("{}", file.display()))?;
            if value.is_null() {
                continue;
            }
            settings_from_file(&mut value).with_context(|| format!("{}", file.display()))?;
            let case = serde_yaml::from_value(value)
                .with_context(|| format!("a case in {}", file.display()))?;
            cases.push((file.clone(), case));
        }
    }
    Ok(cases)
}

/// What a message is: a `validate` rejection, a `validate` warning, or a `validate_settings`
/// problem (one of the parts the policy joins with `"; "`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Rejection,
    Warning,
    Settings,
}

/// One entry of `e2e-tests/messages.yaml`: a message as the policy writes it, `{name}` standing
/// for each part that depends on the input.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Template {
    pub id: String,
    pub kind: Kind,
    /// The section of docs/behaviour.md that the message answers to (`behaviour.md §3.5`).
    pub section: String,
    pub text: String,
}

/// A piece of a template: text as it is, or a `{name}` that matches a non-empty run of
/// characters (the same run wherever the same name appears again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece<'t> {
    Literal(&'t str),
    Hole(&'t str),
}

/// The pieces of a template. Only `{` + lowercase letters and `_` + `}` is a placeholder: the
/// messages quote YAML such as `{enabled: true}`, which is text.
fn pieces(text: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let (mut literal, mut from) = (0, 0);
    while let Some(open) = text[from..].find('{').map(|at| from + at) {
        let name = &text[open + 1..];
        let len = name
            .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
            .unwrap_or(name.len());
        if len > 0 && name[len..].starts_with('}') {
            if open > literal {
                out.push(Piece::Literal(&text[literal..open]));
            }
            out.push(Piece::Hole(&name[..len]));
            literal = open + len + 2;
            from = literal;
        } else {
            from = open + 1;
        }
    }
    if literal < text.len() {
        out.push(Piece::Literal(&text[literal..]));
    }
    out
}

impl Template {
    /// Whether `text` is this message with some values in its placeholders.
    pub fn matches(&self, text: &str) -> bool {
        self.values(text).is_some()
    }

    /// The value of each placeholder when `text` is this message.
    pub fn values<'s>(&self, text: &'s str) -> Option<Vec<(String, &'s str)>> {
        let pieces = pieces(&self.text);
        let mut bound = Vec::new();
        fill(&pieces, text, &mut bound).then(|| {
            bound
                .into_iter()
                .map(|(name, value)| (name.to_string(), value))
                .collect()
        })
    }

    /// Why the template cannot be used: two placeholders side by side could split a value
    /// anywhere, so that no text would name one template.
    fn problem(&self) -> Option<&'static str> {
        let pieces = pieces(&self.text);
        if pieces.is_empty() {
            return Some("its text is empty");
        }
        let adjacent = pieces
            .windows(2)
            .any(|w| matches!(w, [Piece::Hole(_), Piece::Hole(_)]));
        adjacent.then_some("two placeholders touch; put text between them")
    }
}

/// Matches `text` against `pieces`, binding each placeholder to a non-empty run; `bound` holds
/// the values of the placeholders met so far.
fn fill<'t, 's>(pieces: &[Piece<'t>], text: &'s str, bound: &mut Vec<(&'t str, &'s str)>) -> bool {
    let Some((first, rest)) = pieces.split_first() else {
        return text.is_empty();
    };
    let name = match first {
        Piece::Literal(literal) => {
            return text
                .strip_prefix(literal)
                .is_some_and(|text| fill(rest, text, bound));
        }
        Piece::Hole(name) => *name,
    };
    if let Some(&(_, value)) = bound.iter().find(|(n, _)| *n == name) {
        return text
            .strip_prefix(value)
            .is_some_and(|text| fill(rest, text, bound));
    }
    // Only the ends after which the next piece can start are worth trying.
    let ends: Vec<usize> = match rest.first() {
        None => vec![text.len()],
        Some(Piece::Literal(next)) => (1..=text.len())
            .filter(|&end| text.is_char_boundary(end) && text[end..].starts_with(next))
            .collect(),
        Some(Piece::Hole(_)) => (1..=text.len())
            .filter(|&end| text.is_char_boundary(end))
            .collect(),
    };
    for end in ends.into_iter().filter(|&end| end > 0) {
        bound.push((name, &text[..end]));
        if fill(rest, &text[end..], bound) {
            return true;
        }
        bound.pop();
    }
    false
}

/// The table of every message the policy answers with, checked for use: unique ids, a kind, a
/// section of behaviour.md, no template that could split a value two ways.
pub fn load_messages(path: &Path) -> Result<Vec<Template>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let table: Vec<Template> =
        serde_yaml::from_str(&text).with_context(|| format!("{} is not YAML", path.display()))?;
    let mut ids = HashSet::new();
    for template in &table {
        ensure!(
            ids.insert(template.id.as_str()),
            "{}: the id {} is used twice",
            path.display(),
            template.id
        );
        ensure!(
            is_section(&template.section),
            "{}: {}: section must be `behaviour.md §N` or `behaviour.md §N.M`, not {:?}",
            path.display(),
            template.id,
            template.section
        );
        if let Some(problem) = template.problem() {
            bail!("{}: {}: {problem}", path.display(), template.id);
        }
    }
    Ok(table)
}

fn is_section(section: &str) -> bool {
    let Some(number) = section.strip_prefix("behaviour.md §") else {
        return false;
    };
    let mut parts = number.split('.');
    let whole = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    parts.next().is_some_and(whole) && parts.all(whole) && number.split('.').count() <= 2
}

/// A message a case expects, with where it comes from for reports.
#[derive(Debug, Clone)]
pub struct Expected {
    pub kind: Kind,
    pub text: String,
    pub case: String,
}

/// Every message the mutation cases expect: rejections and warnings.
pub fn expected_messages(cases: &[(PathBuf, Case)]) -> Vec<Expected> {
    let mut out = Vec::new();
    for (file, case) in cases {
        let at = format!("{} ({})", case.name, file.display());
        out.extend(case.expect.message.iter().map(|text| Expected {
            kind: Kind::Rejection,
            text: text.clone(),
            case: at.clone(),
        }));
        out.extend(case.expect.warnings.iter().map(|text| Expected {
            kind: Kind::Warning,
            text: text.clone(),
            case: at.clone(),
        }));
    }
    out
}

/// Every problem the settings cases expect.
pub fn expected_problems(cases: &[(PathBuf, SettingsCase)]) -> Vec<Expected> {
    let mut out = Vec::new();
    for (file, case) in cases {
        out.extend(case.message.iter().map(|text| Expected {
            kind: Kind::Settings,
            text: text.clone(),
            case: format!("{} ({})", case.name, file.display()),
        }));
    }
    out
}

/// Checks that every expected message is one template of the table, of its kind, and that every
/// template is some case's message. A `{problems}` placeholder (the settings' problems inside a
/// rejection) must hold settings problems joined by `"; "`, each one template. Returns every
/// failure.
pub fn check_table(table: &[Template], expected: &[Expected]) -> Vec<String> {
    let mut failures = Vec::new();
    let mut used = HashSet::new();
    for message in expected {
        let matched: Vec<(&Template, Vec<(String, &str)>)> = table
            .iter()
            .filter(|t| t.kind == message.kind)
            .filter_map(|t| t.values(&message.text).map(|values| (t, values)))
            .collect();
        match matched.as_slice() {
            [(one, values)] => {
                used.insert(one.id.as_str());
                let problems = values.iter().find(|(name, _)| name == "problems");
                if let Some((_, problems)) = problems {
                    match settings_problems(table, problems) {
                        Some(ids) => used.extend(ids),
                        None => failures.push(format!(
                            "{}: {problems:?} is not settings problems of messages.yaml joined by \"; \"",
                            message.case
                        )),
                    }
                }
            }
            [] => failures.push(format!(
                "{}: {:?} matches no {:?} template of messages.yaml; check it against the code and behaviour.md",
                message.case, message.text, message.kind
            )),
            several => failures.push(format!(
                "{}: {:?} matches the templates {}; make them distinct",
                message.case,
                message.text,
                several
                    .iter()
                    .map(|(t, _)| t.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
    for template in table {
        if !used.contains(template.id.as_str()) {
            failures.push(format!(
                "messages.yaml: no case expects {} ({:?}); add a case that gets this answer",
                template.id, template.text
            ));
        }
    }
    failures
}

/// The ids of the settings templates that `text` joins with `"; "`, each part exactly one of
/// them; `None` when it cannot be read so. A problem may itself contain `"; "`, so every split
/// is tried.
fn settings_problems<'t>(table: &'t [Template], text: &str) -> Option<Vec<&'t str>> {
    let one = |part: &str| {
        let matched: Vec<&Template> = table
            .iter()
            .filter(|t| t.kind == Kind::Settings && t.matches(part))
            .collect();
        match matched.as_slice() {
            [one] => Some(one.id.as_str()),
            _ => None,
        }
    };
    let ends = text
        .match_indices("; ")
        .map(|(at, _)| at)
        .chain([text.len()]);
    for end in ends {
        let Some(id) = one(&text[..end]) else {
            continue;
        };
        if end == text.len() {
            return Some(vec![id]);
        }
        if let Some(mut rest) = settings_problems(table, &text[end + 2..]) {
            rest.insert(0, id);
            return Some(rest);
        }
    }
    None
}

/// A README example, read as text in which `…` stands for values the policy fills in: the
/// whole or a part of the text of some placeholders. `Rest` stands for the rest of a message
/// whose start the example gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    Char(char),
    Elided,
    Rest,
}

/// A template as text, a placeholder standing for any run of characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    Char(char),
    Hole,
}

fn written(template: &Template) -> Vec<Written> {
    let mut out = Vec::new();
    for piece in pieces(&template.text) {
        match piece {
            Piece::Literal(text) => out.extend(text.chars().map(Written::Char)),
            Piece::Hole(_) => out.push(Written::Hole),
        }
    }
    out
}

fn shown(example: &str, prefix: bool) -> Vec<Shown> {
    let mut out: Vec<Shown> = example
        .chars()
        .map(|c| {
            if c == '…' {
                Shown::Elided
            } else {
                Shown::Char(c)
            }
        })
        .collect();
    if prefix {
        out.push(Shown::Rest);
    }
    out
}

/// Whether some message of the template reads as the example: the template's text where the
/// example shows text, a placeholder's value wherever the example shows `…`.
fn reads_as(example: &[Shown], template: &[Written]) -> bool {
    fn go(
        a: &[Shown],
        b: &[Written],
        i: usize,
        j: usize,
        seen: &mut HashSet<(usize, usize)>,
    ) -> bool {
        // A pair met before did not lead to a match, or the search would have stopped.
        if !seen.insert((i, j)) {
            return false;
        }
        match (a.get(i), b.get(j)) {
            (None, None) => true,
            (Some(Shown::Rest), _) => {
                go(a, b, i + 1, j, seen) || (j < b.len() && go(a, b, i, j + 1, seen))
            }
            // A placeholder takes the example's characters or its `…`, or ends.
            (Some(_), Some(Written::Hole)) => go(a, b, i + 1, j, seen) || go(a, b, i, j + 1, seen),
            (None, Some(Written::Hole)) => go(a, b, i, j + 1, seen),
            // A `…` outside any placeholder stands for no text.
            (Some(Shown::Elided), _) => go(a, b, i + 1, j, seen),
            (Some(Shown::Char(x)), Some(Written::Char(y))) => {
                x == y && go(a, b, i + 1, j + 1, seen)
            }
            _ => false,
        }
    }
    go(example, template, 0, 0, &mut HashSet::new())
}

/// The templates a README example can stand for: whole messages, or, with `prefix`, messages
/// that start with it.
pub fn readme_matches<'t>(table: &'t [Template], example: &str, prefix: bool) -> Vec<&'t Template> {
    let example = shown(example, prefix);
    table
        .iter()
        .filter(|t| reads_as(&example, &written(t)))
        .collect()
}

/// The code spans of the rows of the first table after the line containing `marker`, from
/// column `column` (0 for the first).
pub fn readme_table_spans(readme: &str, marker: &str, column: usize) -> Vec<String> {
    let Some(start) = readme.find(marker) else {
        return Vec::new();
    };
    let rows = readme[start..]
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        // The header and the `|---|` line.
        .skip(2);
    let mut spans = Vec::new();
    for row in rows {
        let Some(cell) = row.split('|').nth(column + 1) else {
            continue;
        };
        spans.extend(cell.split('`').skip(1).step_by(2).map(str::to_string));
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(text: &str) -> Template {
        Template {
            id: "t".into(),
            kind: Kind::Rejection,
            section: "behaviour.md §6".into(),
            text: text.into(),
        }
    }

    #[test]
    fn placeholders_are_lowercase_names_in_braces() {
        assert_eq!(
            pieces("{cloud}: must be an object such as {enabled: true}, got {type}"),
            [
                Piece::Hole("cloud"),
                Piece::Literal(": must be an object such as {enabled: true}, got "),
                Piece::Hole("type"),
            ]
        );
        assert_eq!(pieces("{}{X}"), [Piece::Literal("{}{X}")]);
    }

    #[test]
    fn a_placeholder_is_a_non_empty_run_and_the_same_run_when_repeated() {
        let t = template("{path}[{name}]: got {value}; quote it: \"{value}\"");
        assert!(t.matches("aws.env[A]: got 41; quote it: \"41\""));
        assert!(!t.matches("aws.env[A]: got 41; quote it: \"42\""));
        assert!(!t.matches("aws.env[]: got 41; quote it: \"41\""));
        assert!(!t.matches("aws.env[A]: got 41; quote it: \"41\" and more"));
        let whole = template("container {container} requests {value}");
        assert!(whole.matches("container \"a\" requests \"b\" requests 1"));
        assert!(!whole.matches("container \"a\" requests "));
    }

    #[test]
    fn adjacent_placeholders_are_refused() {
        assert!(template("{a}{b}").problem().is_some());
        assert!(template("{a} {b}").problem().is_none());
    }

    #[test]
    fn readme_ellipses_stand_for_values() {
        let table = [template(
            "annotation {key} is {value}; multi-node networking is injected",
        )];
        let one = |example, prefix| readme_matches(&table, example, prefix).len() == 1;
        assert!(one(
            "annotation … is \"True\"; multi-node networking is injected",
            false
        ));
        assert!(one(
            "annotation a/b is \"…\"; multi-node networking is injected",
            false
        ));
        assert!(one("annotation … is", true));
        assert!(!one("annotation … is", false));
        // `…` stands for values, not for the template's own text.
        assert!(!one("annotation … is \"True\"; … injected", false));
        assert!(!one("owner …", true));
    }

    #[test]
    fn sections_name_behaviour_md() {
        assert!(is_section("behaviour.md §6") && is_section("behaviour.md §3.5"));
        assert!(
            !is_section("SPEC §6")
                && !is_section("behaviour.md §")
                && !is_section("behaviour.md §1.2.3")
        );
    }
}
