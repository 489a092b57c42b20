//! A document checked against a CRD's structural OpenAPI v3 schema, as the API server checks a
//! custom resource, and stricter in one way: a field the schema does not know is a problem here
//! (the server would drop it silently, as `kubectl apply --validate=strict` reports it), so that
//! a misspelt field never ships. What Kubernetes' structural schemas use: `type`, `properties`,
//! `required`, `items`, `additionalProperties`, `enum`, `nullable`, `format` (not checked),
//! `x-kubernetes-preserve-unknown-fields`, `x-kubernetes-int-or-string`, `minimum`, `maximum`.

use serde_json::Value;

/// The problems of `value` at `path` against `schema`, one line each.
pub fn check(schema: &Value, value: &Value, path: &str, problems: &mut Vec<String>) {
    if value.is_null() {
        if schema["nullable"] != true {
            problems.push(format!("{path}: null, and the schema does not allow it"));
        }
        return;
    }
    if schema["x-kubernetes-int-or-string"] == true {
        if !(value.is_string() || value.is_i64() || value.is_u64()) {
            problems.push(format!(
                "{path}: {value} is neither an integer nor a string"
            ));
        }
        return;
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(value)
    {
        problems.push(format!("{path}: {value} is not one of {}", schema["enum"]));
    }
    let Some(kind) = schema["type"].as_str() else {
        // No type: only preserve-unknown-fields schemas (any value) come here.
        return;
    };
    let fits = match kind {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        _ => true,
    };
    if !fits {
        problems.push(format!("{path}: {value} is not of type {kind}"));
        return;
    }
    if let Some(n) = value.as_f64() {
        if schema["minimum"].as_f64().is_some_and(|min| n < min) {
            problems.push(format!(
                "{path}: {n} is below the minimum {}",
                schema["minimum"]
            ));
        }
        if schema["maximum"].as_f64().is_some_and(|max| n > max) {
            problems.push(format!(
                "{path}: {n} is above the maximum {}",
                schema["maximum"]
            ));
        }
    }
    match value {
        Value::Object(map) => {
            for required in schema["required"].as_array().into_iter().flatten() {
                if let Some(key) = required.as_str()
                    && !map.contains_key(key)
                {
                    problems.push(format!("{path}: {key} is required"));
                }
            }
            let preserve = schema["x-kubernetes-preserve-unknown-fields"] == true;
            for (key, item) in map {
                let here = format!("{path}.{key}");
                if let Some(property) = schema["properties"].get(key) {
                    check(property, item, &here, problems);
                } else if schema["additionalProperties"].is_object() {
                    check(&schema["additionalProperties"], item, &here, problems);
                } else if !preserve && schema["additionalProperties"] != true {
                    problems.push(format!("{here}: no such field in the schema"));
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                check(&schema["items"], item, &format!("{path}[{i}]"), problems);
            }
        }
        _ => {}
    }
}
