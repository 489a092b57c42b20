//! Wrong JSON types and nulls, anywhere.

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::sample::select;
use serde_json::Value;
use serde_json::json;

pub(crate) fn corruption_values() -> Vec<Option<Value>> {
    vec![
        None, // the field removed
        Some(Value::Null),
        Some(json!(0)),
        Some(json!(-1)),
        Some(json!(1.5)),
        Some(json!("")),
        Some(json!("x")),
        Some(json!("true")),
        Some(json!(true)),
        Some(json!([])),
        Some(json!({})),
        Some(json!(["x"])),
        Some(json!({"x": 1})),
    ]
}

pub(crate) type Corruptions = Vec<(Index, Option<Value>)>;

pub(crate) fn corruptions() -> impl Strategy<Value = Corruptions> {
    prop_oneof![
        3 => Just(Vec::new()),
        2 => proptest::collection::vec((any::<Index>(), select(corruption_values())), 1..4),
    ]
}

/// Every JSON pointer in `value` but the root, in document order.
pub(crate) fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                out.push(p.clone());
                pointers(v, p, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                let p = format!("{at}/{i}");
                out.push(p.clone());
                pointers(v, p, out);
            }
        }
        _ => {}
    }
}

pub(crate) fn corrupt(mut pod: Value, corruptions: &Corruptions) -> Value {
    for (index, replacement) in corruptions {
        let mut all = Vec::new();
        pointers(&pod, String::new(), &mut all);
        if all.is_empty() {
            break;
        }
        let target = index.get(&all).clone();
        match replacement {
            Some(v) => {
                if let Some(slot) = pod.pointer_mut(&target) {
                    *slot = v.clone();
                }
            }
            None => {
                let (parent, last) = target.rsplit_once('/').unwrap_or(("", ""));
                let key = last.replace("~1", "/").replace("~0", "~");
                match pod.pointer_mut(parent) {
                    Some(Value::Object(map)) => {
                        map.remove(&key);
                    }
                    Some(Value::Array(items)) => {
                        if let Ok(i) = key.parse::<usize>() {
                            if i < items.len() {
                                items.remove(i);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    pod
}
