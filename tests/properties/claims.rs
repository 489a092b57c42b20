//! GPUs through DRA claims (behaviour.md §3.10): no answer of the cluster traps the policy, no
//! object is asked for twice in one request, and GPUs taken through a claim give the device counts
//! the same GPUs as `nvidia.com/gpu` give.

use std::cell::RefCell;

use crate::generators::case;
use crate::generators::claims::{claim_answers, claim_host_answer, object};
use crate::generators::host::{REFUSALS, asked, is_namespace, missing};
use crate::generators::pods::pod;
use crate::generators::settings::valid_settings;
use crate::run::{answer_of, opted_in, payload};
use multinode_networking_policy::admission;
use multinode_networking_policy::k8s::quantity;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// The calls of one evaluation, each a distinct object.
fn distinct(calls: &[Vec<u8>]) -> bool {
    let mut sorted = calls.to_vec();
    sorted.sort();
    sorted.dedup();
    sorted.len() == calls.len()
}

proptest! {
    #![proptest_config(crate::config())]

    #[test]
    fn claim_answers_never_trap_and_no_object_is_read_twice(
        (settings, pod) in case(),
        answer in claim_answers(),
    ) {
        let bytes = payload("CREATE", &pod, &settings);
        let calls = RefCell::new(Vec::new());
        // The namespace's read (behaviour.md §11) is the Pod Security properties' own.
        let host = |_: &str, request: &[u8]| {
            if is_namespace(request) {
                return Err(REFUSALS[0].to_string());
            }
            calls.borrow_mut().push(request.to_vec());
            claim_host_answer(&answer, request)
        };
        let encoded: Value =
            serde_json::from_slice(&admission::validate_with(&bytes, &host)).unwrap();
        prop_assert!(encoded["accepted"].is_boolean());
        let calls = calls.into_inner();
        prop_assert!(distinct(&calls), "{:?}", calls);
        if !opted_in(&pod, &settings) || settings.get("preflight") == Some(&json!("skip")) {
            prop_assert!(calls.is_empty());
        }
    }

    #[test]
    fn a_claim_of_gpus_is_never_the_fabrics((settings, pod) in case()) {
        // The claims that containers name are read (the default device classes, a preflight
        // that reads), and every claim holds 8 GPUs and nothing else, whatever its name or
        // template: the pods' claims are named and made as the settings' `deviceClaim` would
        // make the fabric's.
        let mut settings = settings;
        settings["preflight"] = json!("warn");
        if let Some(settings) = settings.as_object_mut() {
            settings.remove("gpuDeviceClasses");
            settings.remove("fabricDeviceClasses");
        }
        let read = RefCell::new(Vec::new());
        let host = |_: &str, request: &[u8]| {
            if is_namespace(request) {
                return Err(REFUSALS[0].to_string());
            }
            let (request, name) = asked(request);
            read.borrow_mut().push(Value::from(name.as_str()));
            let devices = json!({"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 8}}
            ]});
            let spec = match request["kind"].as_str() {
                Some("ResourceClaimTemplate") => json!({"spec": {"devices": devices}}),
                Some("ResourceClaim") => json!({"devices": devices}),
                _ => return Err(missing(&request)),
            };
            Ok(object(&request, &name, Some(spec)))
        };
        let verdict = admission::evaluate_with(&payload("CREATE", &pod, &settings), &host);
        let (_, mutated, _, record) = answer_of(verdict);
        let (Some(mutated), Some(record)) = (mutated, record) else {
            return Ok(());
        };
        let claims_of = |pod: &Value| -> Vec<(Value, Value, Value)> {
            pod.pointer("/spec/resourceClaims")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|c| (c["name"].clone(), c["resourceClaimTemplateName"].clone(), c["resourceClaimName"].clone()))
                .collect()
        };
        let asked = read.into_inner();
        // The claims some container names were read (behaviour.md §3.10): those hold GPUs.
        let named: Vec<&Value> = pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.pointer("/resources/claims").and_then(Value::as_array))
            .flatten()
            .map(|entry| &entry["name"])
            .collect();
        let before: Vec<(Value, Value, Value)> = claims_of(&pod)
            .into_iter()
            .filter(|(name, template, claim)| {
                named.contains(&name) && (asked.contains(template) || asked.contains(claim))
            })
            .collect();
        let had = claims_of(&pod);
        for (name, template, _) in claims_of(&mutated).iter().filter(|c| !had.contains(c)) {
            prop_assert!(
                template.is_null() || !before.iter().any(|(_, t, _)| t == template),
                "claim {} was added from the template {} of a claim of GPUs", name, template
            );
        }
        let record: Value = serde_json::from_str(&serde_json::from_str::<String>(&record).unwrap()).unwrap();
        for (container, wired) in record["containers"].as_object().into_iter().flatten() {
            prop_assert!(
                !before.iter().any(|(name, _, _)| *name == wired["claim"]),
                "the record names a claim of GPUs as container {}'s fabric claim: {}", container, record
            );
        }
    }

    #[test]
    fn gpus_through_a_claim_count_as_nvidia_gpu(
        (settings, pod) in valid_settings().prop_flat_map(|(settings, trigger, cloud)| {
            (Just(settings), pod(trigger, cloud))
        }),
    ) {
        let mut settings = settings;
        // Both pods' other objects are present: the preflight says nothing of either.
        settings["preflight"] = json!("warn");
        let counts_nvidia = settings
            .get("gpuResources")
            .and_then(Value::as_array)
            .is_none_or(|r| r.contains(&json!("nvidia.com/gpu")));
        prop_assume!(counts_nvidia);
        let Some((resources, claims, templates)) = with_claims(&pod) else {
            return Ok(());
        };
        let host = |_: &str, request: &[u8]| {
            if is_namespace(request) {
                return Err(REFUSALS[0].to_string());
            }
            let (request, name) = asked(request);
            let found = templates.get(&name).filter(|_| request["kind"] == "ResourceClaimTemplate");
            Ok(match found {
                Some(count) => object(&request, &name, Some(json!({"spec": {"devices": {"requests": [
                    {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": count}}
                ]}}}))),
                None => object(&request, &name, None),
            })
        };
        let by_resource = answer_of(admission::evaluate_with(&payload("CREATE", &resources, &settings), &host));
        let by_claim = answer_of(admission::evaluate_with(&payload("CREATE", &claims, &settings), &host));
        let (accepted, pod_r, warnings_r, record_r) = by_resource;
        let (accepted_c, pod_c, warnings_c, record_c) = by_claim;
        prop_assert_eq!(accepted, accepted_c);
        prop_assert_eq!(record_r, record_c);
        prop_assert_eq!(normal_warnings(&warnings_r), normal_warnings(&warnings_c));
        prop_assert_eq!(pod_r.map(without_gpu_sources), pod_c.map(without_gpu_sources));
    }
}

/// A pod whose containers that ask for `nvidia.com/gpu` without claims of their own: the pod
/// with no claims (the resource version), the pod with each such container's GPUs through a
/// claim of its own (`gpus-<i>`, template `t-<i>`) instead, and the templates' counts. `None`
/// where no container asks for a whole number of them.
fn with_claims(pod: &Value) -> Option<(Value, Value, Map<String, Value>)> {
    let mut resources = pod.clone();
    let spec = resources.get_mut("spec")?.as_object_mut()?;
    spec.remove("resourceClaims");
    let containers = spec.get_mut("containers")?.as_array_mut()?;
    for container in containers.iter_mut() {
        if let Some(r) = container
            .get_mut("resources")
            .and_then(Value::as_object_mut)
        {
            r.remove("claims");
        }
    }
    let mut claims = resources.clone();
    let mut templates = Map::new();
    let mut pod_claims = Vec::new();
    let containers = claims.pointer_mut("/spec/containers")?.as_array_mut()?;
    for (i, container) in containers.iter_mut().enumerate() {
        let Some(r) = container
            .get_mut("resources")
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        let asked = ["requests", "limits"].iter().find_map(|side| {
            r.get(*side)?
                .get("nvidia.com/gpu")
                .filter(|v| !v.is_null())
                .cloned()
        });
        let Some(asked) = asked else { continue };
        let count = quantity::whole(&asked.to_string()).ok()?;
        for side in ["requests", "limits"] {
            if let Some(q) = r.get_mut(side).and_then(Value::as_object_mut) {
                q.remove("nvidia.com/gpu");
            }
        }
        r.insert("claims".into(), json!([{"name": format!("gpus-{i}")}]));
        pod_claims.push(
            json!({"name": format!("gpus-{i}"), "resourceClaimTemplateName": format!("t-{i}")}),
        );
        templates.insert(format!("t-{i}"), count.into());
    }
    if templates.is_empty() {
        return None;
    }
    claims["spec"]["resourceClaims"] = Value::Array(pod_claims);
    Some((resources, claims, templates))
}

/// A mutated pod without what tells the two versions apart: `nvidia.com/gpu`, the pod's GPU
/// claims and the containers' entries for them (lists and maps left empty removed).
fn without_gpu_sources(mut pod: Value) -> Value {
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        if let Some(claims) = spec.get_mut("resourceClaims").and_then(Value::as_array_mut) {
            claims.retain(|c| !c["name"].as_str().is_some_and(|n| n.starts_with("gpus-")));
            if claims.is_empty() {
                spec.remove("resourceClaims");
            }
        }
        for container in spec
            .get_mut("containers")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let Some(r) = container
                .get_mut("resources")
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            for side in ["requests", "limits"] {
                if let Some(q) = r.get_mut(side).and_then(Value::as_object_mut) {
                    q.remove("nvidia.com/gpu");
                }
            }
            if let Some(claims) = r.get_mut("claims").and_then(Value::as_array_mut) {
                claims.retain(|c| !c["name"].as_str().is_some_and(|n| n.starts_with("gpus-")));
                if claims.is_empty() {
                    r.remove("claims");
                }
            }
        }
    }
    pod
}

/// Warnings without what tells the two versions apart: the GPU resource a whole-node warning
/// names, the NVLink warning about a pod without claims, and the claims a pod without GPUs names.
fn normal_warnings(warnings: &[String]) -> Vec<String> {
    warnings
        .iter()
        .filter(|w| !w.contains("and the pod has no spec.resourceClaims"))
        .map(|w| {
            w.replace(
                "but none of its claims asks for a device of class gpu.nvidia.com or gpu.amd.com, and",
                "but",
            )
        })
        .map(
            |w| match (w.find("this pod requests "), w.find(" in all")) {
                (Some(at), Some(end)) if at < end => {
                    let count: String = w[at + 18..end].split(' ').next().unwrap_or("").to_string();
                    format!("{}{count} GPUs{}", &w[..at + 18], &w[end..])
                }
                _ => w,
            },
        )
        .collect()
}
