//! No payload or settings, however broken, panics; settings are refused as their fate says.

use crate::generators::any::any_settings;
use crate::generators::case;
use crate::run::payload;
use multinode_networking_policy::admission;
use multinode_networking_policy::settings;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;
use serde_json::json;

/// What settings are to the checks (behaviour.md §1.4), and so what a request carrying them may
/// answer: settings accepted at load never refuse a pod; refused ones refuse every Pod CREATE
/// where the keys that decide whether a pod is the policy's are wrong, and otherwise may refuse
/// only the pods that are the policy's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    Valid,
    /// `triggerAnnotation`, `optOutAnnotation`, `ownerKinds` or `ownerApiGroups` is wrong.
    TriggerInvalid,
    /// A cloud block is wrong, beyond its instance rows.
    CloudInvalid,
    /// Only instance rows are wrong: a row is read when a pod names it.
    RowsInvalid,
}

pub(crate) fn fate(settings: &Value) -> Fate {
    if settings::check(&settings.to_string()).is_ok() {
        return Fate::Valid;
    }
    let trigger_valid = settings.as_object().map_or(settings.is_null(), |top| {
        let mut common = json!({"gcp": {"enabled": true}});
        for key in [
            "triggerAnnotation",
            "optOutAnnotation",
            "ownerKinds",
            "ownerApiGroups",
        ] {
            if let Some(value) = top.get(key) {
                common[key] = value.clone();
            }
        }
        settings::check(&common.to_string()).is_ok()
    });
    if !trigger_valid {
        return Fate::TriggerInvalid;
    }
    let mut without_rows = settings.clone();
    if let Some(top) = without_rows.as_object_mut() {
        for block in top.values_mut().filter_map(Value::as_object_mut) {
            block.remove("instanceTypes");
        }
    }
    if settings::check(&without_rows.to_string()).is_ok() {
        Fate::RowsInvalid
    } else {
        Fate::CloudInvalid
    }
}

proptest! {
    #![proptest_config(crate::config())]

    #[test]
    fn no_settings_make_it_panic(settings in any_settings(), (_, pod) in case()) {
        let bytes = payload("CREATE", &pod, &settings);
        let answer: Value = serde_json::from_slice(&admission::validate(&bytes)).unwrap();
        prop_assert!(answer["accepted"].is_boolean());
        let checked: Value = serde_json::from_slice(&admission::validate_settings(
            &serde_json::to_vec(&settings).unwrap(),
        )).unwrap();
        let fate = fate(&settings);
        prop_assert_eq!(checked["valid"].as_bool().unwrap(), fate == Fate::Valid);
        let refused = answer["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("the policy settings are invalid"));
        match fate {
            Fate::Valid => prop_assert!(!refused, "{}", answer),
            Fate::TriggerInvalid => prop_assert!(refused, "{}", answer),
            // Refused only if the pod is the policy's; otherwise it passes unchanged.
            Fate::CloudInvalid => prop_assert!(
                refused || (answer["accepted"] == true && answer["mutated_object"].is_null()),
                "{}",
                answer
            ),
            // Refused only if the pod names a faulty row; anything may happen otherwise.
            Fate::RowsInvalid => {}
        }
    }

    #[test]
    fn no_bytes_make_it_panic(
        (settings, pod) in case(),
        edits in proptest::collection::vec((any::<Index>(), any::<u8>(), 0u8..3), 0..8),
        raw in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut bytes = payload("CREATE", &pod, &settings);
        for (index, byte, kind) in edits {
            let at = index.index(bytes.len() + 1);
            match kind {
                0 if at < bytes.len() => bytes[at] = byte,
                1 => bytes.insert(at, byte),
                _ if at < bytes.len() => { bytes.remove(at); }
                _ => {}
            }
        }
        for input in [&bytes, &raw] {
            let answer: Value = serde_json::from_slice(&admission::validate(input)).unwrap();
            prop_assert!(answer["accepted"].is_boolean());
            let checked: Value = serde_json::from_slice(&admission::validate_settings(input)).unwrap();
            prop_assert!(checked["valid"].is_boolean());
        }
    }
}
