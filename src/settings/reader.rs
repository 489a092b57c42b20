//! The settings reader's primitives: each reads one value of the settings' tape, checks it, and
//! records a message naming its full path when it is wrong, so that one answer lists every
//! problem. Paths are built on the stack and formatted only into a message: settings are read with
//! every request.

use std::borrow::Cow;
use std::fmt::Display;

use crate::clouds::{Kind, Param};
use crate::error::{Path, join};
use crate::json::JsonType;
use crate::json::tape::Value;
use crate::json::write::render_string;
use crate::k8s::names::{is_dns1123_label, is_dns1123_subdomain, is_env_name};
use crate::profile::{DeviceClaim, EnvChange, with_count};
use crate::ratio::{MAX_DECIMALS, Ratio};

use super::MAX_PER_GPU;

/// A value as it appears in a message: short, and typed, so `"4"` and `4` read differently.
pub(super) fn show(value: Value<'_, '_>) -> String {
    let text = match (value.as_str(), value.as_number(), value.as_bool()) {
        (Some(s), _, _) => render_string(s),
        (_, Some(n), _) => n.to_string(),
        (_, _, Some(b)) => b.to_string(),
        _ => return value.json_type().name().to_string(),
    };
    if text.len() > 80 {
        format!("{}…", text.chars().take(80).collect::<String>())
    } else {
        text
    }
}

/// Collects errors while reading.
#[derive(Default)]
pub(super) struct Reader {
    pub(super) errors: Vec<String>,
}

impl Reader {
    pub(super) fn unknown_key(&mut self, path: &Path<'_>, key: &str, allowed: &[&str]) {
        let place = match path {
            Path::Root => "at the top level".to_string(),
            _ => format!("under {path}"),
        };
        self.errors.push(format!(
            "{}: unknown key; the keys allowed {place} are {}",
            Path::Key(path, key),
            join(allowed, ", ")
        ));
    }

    pub(super) fn of_type<'t, 'a>(
        &mut self,
        path: &dyn Display,
        raw: Value<'t, 'a>,
        want: JsonType,
        must_be: &dyn Display,
    ) -> Option<Value<'t, 'a>> {
        match raw.json_type() {
            JsonType::Null => None,
            found if found == want => Some(raw),
            other => {
                self.errors
                    .push(format!("{path}: must be {must_be}, got {}", other.name()));
                None
            }
        }
    }

    pub(super) fn enabled(&mut self, path: &Path<'_>, block: Value<'_, '_>) -> bool {
        self.switch(path, block, "enabled").unwrap_or(false)
    }

    /// `true` or `false` under `key`; `None` when absent or `null`, or wrong.
    pub(super) fn switch(
        &mut self,
        path: &Path<'_>,
        block: Value<'_, '_>,
        key: &str,
    ) -> Option<bool> {
        let raw = block.get(key)?;
        match raw.as_bool() {
            Some(on) => Some(on),
            None if raw.is_null() => None,
            None => {
                self.errors.push(format!(
                    "{}: must be true or false, got {}",
                    Path::Key(path, key),
                    show(raw)
                ));
                None
            }
        }
    }

    /// A cloud key's value; `None` when it is `null` (the default stays) or wrong.
    pub(super) fn param<'a>(
        &mut self,
        path: &Path<'_>,
        kind: Kind,
        raw: Value<'_, 'a>,
    ) -> Option<Param<'a>> {
        match kind {
            Kind::PerGpu { .. } => self.per_gpu(path, raw).map(Param::PerGpu),
            Kind::Whole { min, max, .. } => self.whole(path, raw, min, max).map(Param::Whole),
            Kind::Text { valid, what, .. } => {
                self.text(path, Some(raw), valid, what).map(Param::Text)
            }
            Kind::Optional { valid, what, .. } => match raw.as_str() {
                _ if raw.is_null() => Some(Param::Off),
                Some(s) if s.is_empty() => Some(Param::Off),
                _ => self.text(path, Some(raw), valid, what).map(Param::Text),
            },
            Kind::Texts {
                len, valid, what, ..
            } => self.strings(path, raw, len, valid, what).map(Param::Texts),
            Kind::Claim => self.claim(path, raw).map(Param::Claim),
            // As a form leaves it: no network.
            Kind::Network { .. } if raw.is_null() || raw.as_str().is_some_and(|s| s.is_empty()) => {
                None
            }
            Kind::Network { .. } => self.network(path, raw).map(Param::Network),
            Kind::Networks { len, .. } => self.networks(path, raw, len).map(Param::Networks),
            Kind::Rails { len, .. } => self.rails(path, raw, len).map(Param::Rails),
            Kind::Directories { len, .. } => {
                self.directories(path, raw, len).map(Param::Directories)
            }
            Kind::Switch { .. } => {
                let on = raw.as_bool();
                if on.is_none() && !raw.is_null() {
                    self.errors
                        .push(format!("{path}: must be true or false, got {}", show(raw)));
                }
                on.map(Param::Switch)
            }
        }
    }

    /// A `deviceClaim` (behaviour.md §3.8): `{template, name}`, the template a DNS subdomain once
    /// `{count}` is a number, the name a DNS label.
    fn claim<'a>(&mut self, path: &Path<'_>, raw: Value<'_, 'a>) -> Option<DeviceClaim<'a>> {
        let must_be = &"an object such as {template: efa-{count}}";
        let raw = self.of_type(path, raw, JsonType::Object, must_be)?;
        const KEYS: [&str; 2] = ["template", "name"];
        for (key, _) in raw.members() {
            if !KEYS.contains(&key.as_ref()) {
                self.unknown_key(path, key, &KEYS);
            }
        }
        let at = Path::Key(path, "template");
        let template = self.text(
            &at,
            raw.get("template"),
            |t| is_dns1123_subdomain(&with_count(t, 1)),
            "a ResourceClaimTemplate name (a DNS subdomain: lowercase letters, digits, '-' and '.'), in which {count} stands for the pod's device count",
        );
        if raw.get("template").is_none_or(|t| t.is_null()) {
            self.errors.push(format!(
                "{at}: missing; name the ResourceClaimTemplate of the pod's claim"
            ));
        }
        let name = self.text(
            &Path::Key(path, "name"),
            raw.get("name"),
            is_dns1123_label,
            "a claim name (a DNS label: at most 63 lowercase letters, digits and '-')",
        );
        Some(DeviceClaim {
            template: template?,
            name,
            setting: path.to_string(),
        })
    }

    pub(super) fn per_gpu(&mut self, path: &Path<'_>, raw: Value<'_, '_>) -> Option<Ratio> {
        if raw.is_null() {
            return None;
        }
        // serde_json writes a number as the shortest text that reads back to it: `0.5`, `1e-6`.
        let ratio = raw
            .as_number()
            .and_then(|n| Ratio::parse_decimal(&n.to_string()))
            .filter(|r| !r.is_zero() && r.at_most(MAX_PER_GPU));
        if ratio.is_none() {
            self.errors.push(format!(
                "{path}: must be a number greater than 0 and at most {MAX_PER_GPU} with at most {MAX_DECIMALS} decimal places, the node's devices divided by its GPUs (0.5 for 4 per 8 GPUs), got {}",
                show(raw)
            ));
        }
        ratio
    }

    pub(super) fn whole(
        &mut self,
        path: &Path<'_>,
        raw: Value<'_, '_>,
        min: u64,
        max: u64,
    ) -> Option<u64> {
        if raw.is_null() {
            return None;
        }
        let n = raw
            .as_number()
            .and_then(serde_json::Number::as_u64)
            .filter(|n| (min..=max).contains(n));
        if n.is_none() {
            self.errors.push(format!(
                "{path}: must be a whole number from {min} to {max}, got {}",
                show(raw)
            ));
        }
        n
    }

    /// A string that `valid` accepts; `None` when absent, `null` or wrong.
    pub(super) fn text<'a>(
        &mut self,
        path: &Path<'_>,
        raw: Option<Value<'_, 'a>>,
        valid: fn(&str) -> bool,
        what: &str,
    ) -> Option<Cow<'a, str>> {
        let raw = raw.filter(|raw| !raw.is_null())?;
        match raw.as_str() {
            Some(s) if valid(s) => Some(s.clone()),
            _ => {
                self.errors
                    .push(format!("{path}: must be {what}, got {}", show(raw)));
                None
            }
        }
    }

    /// A list of strings `valid` accepts, of from `len.0` to `len.1` items when given; `None` when
    /// `null` or wrong.
    pub(super) fn strings<'a>(
        &mut self,
        path: &Path<'_>,
        raw: Value<'_, 'a>,
        len: Option<(usize, usize)>,
        valid: fn(&str) -> bool,
        what: &str,
    ) -> Option<Vec<Cow<'a, str>>> {
        self.items(path, raw, len, what, |r, at, item| {
            r.text(at, Some(item), valid, what)
        })
    }

    /// A list of from `len.0` to `len.1` items when given, each read by `one` (which says what is
    /// wrong with it); `None` when `null` or wrong.
    pub(super) fn items<'a, T>(
        &mut self,
        path: &Path<'_>,
        raw: Value<'_, 'a>,
        len: Option<(usize, usize)>,
        what: &str,
        mut one: impl FnMut(&mut Reader, &Path<'_>, Value<'_, 'a>) -> Option<T>,
    ) -> Option<Vec<T>> {
        let raw = self.of_type(
            path,
            raw,
            JsonType::List,
            &format_args!("a list, each item {what}"),
        )?;
        let errors = self.errors.len();
        let count = raw.count();
        match len {
            Some((min, max)) if min == max && count != min => self.errors.push(format!(
                "{path}: must have exactly {min} items, got {count}"
            )),
            Some((min, max)) if !(min..=max).contains(&count) => self.errors.push(format!(
                "{path}: must have from {min} to {max} items, got {count}"
            )),
            _ => {}
        }
        let mut out = Vec::with_capacity(count);
        for (i, item) in raw.items().enumerate() {
            out.extend(one(self, &Path::Index(path, i), item));
        }
        (self.errors.len() == errors).then_some(out)
    }

    pub(super) fn list<'a>(
        &mut self,
        key: &str,
        top: Value<'_, 'a>,
        default: &[&'static str],
        valid: fn(&str) -> bool,
        what: &str,
    ) -> Vec<Cow<'a, str>> {
        let raw = top.get(key).filter(|raw| !raw.is_null());
        let Some(raw) = raw else {
            return default.iter().map(|s| Cow::Borrowed(*s)).collect();
        };
        let list_of_any = &"a list (an empty list means any owner)";
        let Some(raw) = self.of_type(&key, raw, JsonType::List, list_of_any) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in raw.items().enumerate() {
            match item.as_str().filter(|s| valid(s)) {
                Some(s) => out.push(s.clone()),
                None => self
                    .errors
                    .push(format!("{key}[{i}]: must be {what}, got {}", show(item))),
            }
        }
        out
    }

    /// An `env` map (behaviour.md §1.2), sorted by name, the last of a repeated name counting.
    pub(super) fn env<'a>(&mut self, path: &Path<'_>, raw: Value<'_, 'a>) -> Vec<EnvChange<'a>> {
        let must_be = &"an object of NAME: \"value\", or NAME: null to not inject NAME";
        let Some(raw) = self.of_type(path, raw, JsonType::Object, must_be) else {
            return Vec::new();
        };
        let mut changes: Vec<EnvChange<'a>> = Vec::new();
        for (name, value) in raw.members() {
            if !is_env_name(name) {
                self.errors.push(format!(
                    "{}: not a variable name; names are printable ASCII without '='",
                    Path::Entry(path, name)
                ));
                continue;
            }
            let value = match value.json_type() {
                JsonType::Null => None,
                JsonType::String => value.as_str().cloned(),
                JsonType::Number | JsonType::Bool => {
                    self.errors.push(format!(
                        "{}: must be a string or null, got {}; quote it: \"{}\"",
                        Path::Entry(path, name),
                        show(value),
                        show(value)
                    ));
                    continue;
                }
                other => {
                    self.errors.push(format!(
                        "{}: must be a string or null, got {}",
                        Path::Entry(path, name),
                        other.name()
                    ));
                    continue;
                }
            };
            // Kept sorted as it is built; a repeated name replaces the earlier value. Names
            // usually come sorted already (a serde_json map writes its keys so): one comparison.
            let change = EnvChange {
                name: name.clone(),
                value,
            };
            match changes.last() {
                Some(last) if last.name >= change.name => {
                    match changes.binary_search_by(|c| c.name.cmp(&change.name)) {
                        Ok(at) => changes[at] = change,
                        Err(at) => changes.insert(at, change),
                    }
                }
                _ => changes.push(change),
            }
        }
        changes
    }
}
