//! Why the policy left a pod unchanged, said in the preview where the module's answer does not:
//! a pod that is not opted in gets no warning from the policy (it is no business of the policy),
//! but a user who previews it meant it to be.

// The trigger annotations when the settings name none (behaviour.md §2).
use fixtures::TRIGGERS as DEFAULT_TRIGGERS;
use serde_json::Value;

/// The trigger annotation keys of `settings`.
pub fn triggers(settings: &Value) -> Vec<String> {
    match &settings["triggerAnnotation"] {
        Value::String(key) => vec![key.clone()],
        Value::Array(keys) => keys
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        _ => DEFAULT_TRIGGERS.iter().map(|k| k.to_string()).collect(),
    }
}

/// Why `pod` came back unchanged, given the module's `warnings` (which, when there are any, say
/// why themselves).
pub fn unchanged(pod: &Value, settings: &Value, warnings: &[String]) -> String {
    let keys = triggers(settings);
    let annotations = &pod["metadata"]["annotations"];
    let opted_in = keys.iter().any(|key| annotations[key.as_str()] == "true");
    if opted_in {
        return if warnings.is_empty() {
            "the pod is opted in, and the policy had nothing to add: it is already wired (its \
             resources, env and mounts are there)"
                .into()
        } else {
            "the pod is opted in, but the policy did not wire it: see the warnings".into()
        };
    }
    let named = keys
        .iter()
        .map(|k| format!("{k}: \"true\""))
        .collect::<Vec<_>>()
        .join(" or ");
    // A value that is no string: YAML reads an unquoted `true` as a boolean, and Kubernetes
    // annotations are strings (the API server refuses the pod before any webhook sees it).
    if let Some((key, value)) = keys.iter().find_map(|key| {
        let value = &annotations[key.as_str()];
        (!value.is_null() && !value.is_string()).then_some((key, value))
    }) {
        return format!(
            "not opted in: annotation {key} is the {} {value}, not the string \"true\" (YAML reads \
             an unquoted `true` as a boolean; the API server refuses an annotation that is no \
             string): write {key}: \"true\", quoted",
            json_type(value)
        );
    }
    if let Some((key, value)) = keys
        .iter()
        .find_map(|key| Some((key, annotations[key.as_str()].as_str()?)))
    {
        return format!(
            "not opted in: annotation {key} is {value:?}; the policy acts only on a pod with {named}"
        );
    }
    format!(
        "not opted in: the pod has no trigger annotation; the policy acts only on a pod with \
         {named} in metadata.annotations (for a job, on the worker's pod template)"
    )
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
        _ => "value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(annotations: Value) -> Value {
        json!({"metadata": {"annotations": annotations}})
    }

    #[test]
    fn an_unquoted_true_is_a_boolean() {
        let pod: Value = serde_yaml::from_str(
            "metadata:\n  annotations:\n    nmp.nvidia.com/enable-multi-node-networking: true\n",
        )
        .unwrap();
        let why = unchanged(&pod, &json!({}), &[]);
        assert!(why.contains("is the boolean true"), "{why}");
        assert!(why.contains("quoted"), "{why}");
    }

    #[test]
    fn no_trigger_names_the_keys() {
        let why = unchanged(&pod(json!({})), &json!({}), &[]);
        for key in DEFAULT_TRIGGERS {
            assert!(why.contains(key), "{why}");
        }
        let why = unchanged(&pod(json!({})), &json!({"triggerAnnotation": "a/b"}), &[]);
        assert!(why.contains("a/b: \"true\""), "{why}");
    }

    #[test]
    fn an_opted_in_pod_without_warnings_is_already_wired() {
        let why = unchanged(&pod(json!({DEFAULT_TRIGGERS[1]: "true"})), &json!({}), &[]);
        assert!(why.contains("already wired"), "{why}");
        let why = unchanged(
            &pod(json!({DEFAULT_TRIGGERS[0]: "true"})),
            &json!({}),
            &["x".into()],
        );
        assert!(why.contains("see the warnings"), "{why}");
    }

    #[test]
    fn another_string_is_named() {
        let why = unchanged(&pod(json!({DEFAULT_TRIGGERS[0]: "yes"})), &json!({}), &[]);
        assert!(why.contains("is \"yes\""), "{why}");
    }
}
