//! The env a container takes through `envFrom` is the user's (behaviour.md §4): no variable a
//! readable ConfigMap gives (each `data` key behind the source's prefix) is added to that
//! container, and a source whose keys cannot be known (a Secret, a missing ConfigMap) that could
//! give a variable the container gained is named in a warning.

use std::collections::BTreeSet;

use crate::generators::case;
use crate::generators::host::{REFUSALS, asked, missing};
use crate::run::{answer_of, payload};
use multinode_networking_policy::admission;
use proptest::prelude::*;
use proptest::sample::subsequence;
use serde_json::{Value, json};

/// Keys ConfigMap `nccl-env` may hold: variables the clouds inject, the same behind the prefixes
/// the generated sources have (`NCCL_`, `FI_`, `UCX_`), and a variable no cloud injects.
const KEYS: &[&str] = &[
    "NCCL_SOCKET_IFNAME",
    "SOCKET_IFNAME",
    "FI_EFA_USE_HUGE_PAGE",
    "EFA_USE_HUGE_PAGE",
    "CUDA_DEVICE_ORDER",
    "NCCL_IB_TC",
    "IB_TC",
    "UCX_TLS",
    "TLS",
    "NCCL_TOPO_FILE",
    "NCCL_NET",
    "NCCL_TUNER_CONFIG_PATH",
    "TUNER_CONFIG_PATH",
    "WANDB_PROJECT",
];

/// The cluster: `nccl-env` with `keys`, `empty-env` without data, no `missing-env`; every other
/// read is refused.
fn host_with<'k>(keys: &'k [&'k str]) -> impl Fn(&str, &[u8]) -> Result<Vec<u8>, String> + 'k {
    move |_: &str, request: &[u8]| {
        let (request, name) = asked(request);
        if request["kind"] != "ConfigMap" {
            return Err(REFUSALS[2].to_string());
        }
        let data: serde_json::Map<String, Value> = keys
            .iter()
            .map(|k| (k.to_string(), json!("user")))
            .collect();
        let object = match name.as_str() {
            "nccl-env" => json!({"metadata": {"name": name}, "data": data}),
            "empty-env" => json!({"metadata": {"name": name}}),
            _ => return Err(missing(&request)),
        };
        Ok(object.to_string().into_bytes())
    }
}

/// The names of a container's `env` entries.
fn env_names(container: &Value) -> BTreeSet<String> {
    container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["name"].as_str().map(str::to_string))
        .collect()
}

/// One `envFrom` item as the policy reads it: a ConfigMap or a Secret (exactly one), its name,
/// whether it is optional, its prefix.
fn source(item: &Value) -> Option<(bool, &str, bool, &str)> {
    let given = |key: &str| item.get(key).filter(|v| !v.is_null());
    let (secret, reference) = match (given("configMapRef"), given("secretRef")) {
        (Some(r), None) => (false, r),
        (None, Some(r)) => (true, r),
        _ => return None,
    };
    let name = reference.get("name")?.as_str().filter(|n| !n.is_empty())?;
    let optional = reference.get("optional") == Some(&json!(true));
    let prefix = item.get("prefix").and_then(Value::as_str).unwrap_or("");
    Some((secret, name, optional, prefix))
}

proptest! {
    #![proptest_config(crate::config())]

    #[test]
    fn env_from_keys_stay_the_users(
        (settings, pod) in case(),
        keys in subsequence(KEYS, 0..KEYS.len()),
    ) {
        let mut settings = settings;
        // A preflight that reads; `skip` is the cases' (every source unknown).
        settings["preflight"] = json!("warn");
        let host = host_with(&keys);
        let verdict = admission::evaluate_with(&payload("CREATE", &pod, &settings), &host);
        let (_, mutated, warnings, _) = answer_of(verdict);
        let Some(mutated) = mutated else {
            return Ok(());
        };
        let before = pod.pointer("/spec/containers").and_then(Value::as_array);
        let after = mutated.pointer("/spec/containers").and_then(Value::as_array);
        let (Some(before), Some(after)) = (before, after) else {
            return Ok(());
        };
        let names: Vec<&str> = before.iter().filter_map(|c| c["name"].as_str()).collect();
        // A request without a namespace (the API server always sends one) reads nothing.
        let readable = pod
            .pointer("/metadata/namespace")
            .map_or(Some("default"), Value::as_str)
            .is_some_and(|namespace| !namespace.is_empty());
        for (container, wired) in before.iter().zip(after) {
            let added: BTreeSet<String> =
                env_names(wired).difference(&env_names(container)).cloned().collect();
            let sources = container["envFrom"].as_array().into_iter().flatten().filter_map(source);
            for (secret, name, optional, prefix) in sources {
                if readable && !secret && name == "nccl-env" {
                    for key in &keys {
                        let variable = format!("{prefix}{key}");
                        prop_assert!(
                            !added.contains(&variable),
                            "{} was added, though ConfigMap nccl-env gives it: {}", variable, container
                        );
                    }
                }
                let unknown = secret || !readable || (name == "missing-env" && !optional);
                let could_give = added.iter().any(|v| v.starts_with(prefix));
                let Some(container_name) = container["name"].as_str() else {
                    continue;
                };
                // Duplicate names are the API server's to refuse.
                if unknown && could_give && names.iter().filter(|n| **n == container_name).count() == 1 {
                    let kind = if secret { "Secret" } else { "ConfigMap" };
                    let said = format!("container {container_name} takes env from {kind} {name}");
                    prop_assert!(
                        warnings.iter().any(|w| w.contains(&said)),
                        "no warning says {:?}: {:?}", said, warnings
                    );
                }
            }
        }
    }
}
