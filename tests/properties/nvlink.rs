//! Multi-node NVLink (behaviour.md §3.11): with `computeDomain` set, whatever the cluster answers
//! for the domain, the policy adds at most the channel's claim or `NCCL_MNNVL_ENABLE=0` and its
//! warning, or refuses a pod whose domain or label is missing with `preflight: reject`: everything
//! else of the answer is the one without the block, the claims stay valid for the API server, and
//! a second pass changes nothing.

use crate::claim_rules;
use crate::generators::case;
use crate::generators::host::{Answer, REFUSALS, answers, asked, missing};
use crate::run::{answer_of, payload};
use multinode_networking_policy::admission;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Value, json};

/// The pod label the block names the domain by, in the pod or not.
const LABEL: &str = "jobset.sigs.k8s.io/jobset-name";
const CHANNEL: &str = "compute-domain-channel";
const MNNVL: &str = "NCCL_MNNVL_ENABLE";

/// The block, and the pod's label value where it has one.
fn blocks() -> impl Strategy<Value = (Value, Option<&'static str>)> {
    (
        select(vec![
            json!({"fromLabel": LABEL}),
            // Several labels: the pod carries the second, the first it carries.
            json!({"fromLabel": ["trainer.kubeflow.org/trainjob-name", LABEL, "batch.kubernetes.io/job-name"]}),
            json!({"name": "nvl72"}),
        ]),
        select(vec![Some("llama"), Some("Llama_3"), None]),
    )
}

/// The cluster's answer to the domain's read: the domain with its channel template, where the
/// answer is present; the other reads (claims, preflight, namespace) are refused.
fn host(answer: &Answer) -> impl Fn(&str, &[u8]) -> Result<Vec<u8>, String> + '_ {
    move |_: &str, request: &[u8]| {
        let (request, name) = asked(request);
        if request["kind"] != "ComputeDomain" {
            return Err(REFUSALS[2].to_string());
        }
        match answer {
            Answer::Present => Ok(json!({"metadata": {"name": name},
                    "spec": {"channel": {"resourceClaimTemplate": {"name": format!("{name}-channel")}}}})
            .to_string()
            .into_bytes()),
            Answer::Missing => Err(missing(&request)),
            Answer::Error(words) => Err(words.to_string()),
            Answer::Garbage(bytes) => Ok(bytes.clone()),
        }
    }
}

/// `pod` without what the channel adds: the claims named `compute-domain-channel…` that `input`
/// lacks (in the pod and its containers), the `NCCL_MNNVL_ENABLE` entries `input`'s containers
/// lack, and the record, which the pod gains where the channel is all that changed.
fn without_channel(mut pod: Value, input: &Value, record: &str) -> Value {
    let had: Vec<Value> = input["spec"]["resourceClaims"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["name"].clone())
        .collect();
    let added = |c: &Value| {
        c["name"].as_str().is_some_and(|n| n.starts_with(CHANNEL)) && !had.contains(&c["name"])
    };
    drop_items(&mut pod["spec"], &input["spec"], "resourceClaims", &added);
    let containers = pod["spec"]["containers"].as_array_mut();
    for (at, container) in containers.into_iter().flatten().enumerate() {
        let before = &input["spec"]["containers"][at];
        drop_items(
            &mut container["resources"],
            &before["resources"],
            "claims",
            &added,
        );
        let had_mnnvl = before["env"]
            .as_array()
            .is_some_and(|env| env.iter().any(|e| e["name"] == MNNVL));
        if !had_mnnvl {
            drop_items(container, before, "env", &|e: &Value| e["name"] == MNNVL);
        }
    }
    if let Some(annotations) = pod["metadata"]["annotations"].as_object_mut() {
        annotations.remove(record);
    }
    pod
}

/// Drops the items `dropped` picks from the list `key` of `object`; a list they alone made is
/// put back as `before` had it (absent, or null).
fn drop_items(object: &mut Value, before: &Value, key: &str, dropped: &dyn Fn(&Value) -> bool) {
    let Some(items) = object.get_mut(key).and_then(Value::as_array_mut) else {
        return;
    };
    items.retain(|item| !dropped(item));
    if !items.is_empty() || before[key].is_array() {
        return;
    }
    let Some(members) = object.as_object_mut() else {
        return;
    };
    match before.get(key) {
        Some(was) => members.insert(key.to_string(), was.clone()),
        None => members.remove(key),
    };
}

proptest! {
    #![proptest_config(crate::config())]

    #[test]
    fn the_channel_or_its_fallback_is_all_the_block_changes(
        (settings, pod) in case(),
        (block, label) in blocks(),
        answer in answers(),
    ) {
        let mut pod = pod;
        if let (Some(value), Some(labels)) = (label, pod.pointer_mut("/metadata")) {
            if let Some(metadata) = labels.as_object_mut() {
                let labels = metadata.entry("labels").or_insert_with(|| json!({}));
                if let Some(labels) = labels.as_object_mut() {
                    labels.insert(LABEL.into(), value.into());
                }
            }
        }
        let mut with_block = settings.clone();
        with_block["computeDomain"] = block;
        if with_block["preflight"] == "skip" {
            with_block["preflight"] = json!("warn");
        }
        let host = host(&answer);
        let plain = admission::evaluate_with(&payload("CREATE", &pod, &with_block_off(&with_block)), &host);
        let joined = admission::evaluate_with(&payload("CREATE", &pod, &with_block), &host);
        let (accepted, mutated, warnings, _) = answer_of(joined);
        let (was_accepted, was_mutated, was_warned, _) = answer_of(plain);
        if !accepted {
            // Refused where the pod was not: for a missing domain or label, by preflight; or for a
            // claims list of the wrong JSON type, which the channel would extend (behaviour.md §6).
            if was_accepted {
                let message = &warnings[0];
                let malformed = message.ends_with("cannot be injected into this pod until it is")
                    && (message.contains("resourceClaims must be a list")
                        || message.contains("resources.claims must be a list"));
                let refused = message.ends_with("(preflight: reject refuses such a pod)")
                    && message.contains("IMEX channel");
                prop_assert!(malformed || refused, "{}", message);
            }
            return Ok(());
        }
        prop_assert!(was_accepted, "the block admitted a pod refused without it");
        // The fallback's NCCL_MNNVL_ENABLE=0 is among the variables an `envFrom` warning names.
        let channel = |w: &String| w.contains("IMEX channel") || w.contains("(envFrom), whose keys");
        let said: Vec<&String> = warnings.iter().filter(|w| !channel(w)).collect();
        let was: Vec<&String> = was_warned.iter().filter(|w| !channel(w)).collect();
        prop_assert_eq!(said, was);
        let record = fixtures::record_key(&with_block).unwrap_or("").to_string();
        let Some(mutated) = mutated else {
            prop_assert!(was_mutated.is_none(), "the block took a mutation away");
            return Ok(());
        };
        let before = was_mutated.clone().unwrap_or_else(|| pod.clone());
        prop_assert_eq!(
            without_channel(mutated.clone(), &pod, &record),
            without_channel(before, &pod, &record)
        );
        for violation in claim_rules::violations(&mutated) {
            prop_assert!(claim_rules::violations(&pod).contains(&violation), "{}", violation);
        }
        let again = admission::evaluate_with(&payload("CREATE", &mutated, &with_block), &host);
        prop_assert!(answer_of(again).1.is_none(), "a second pass changed {}", mutated);
    }
}

/// The settings without the block.
fn with_block_off(settings: &Value) -> Value {
    let mut settings = settings.clone();
    if let Some(top) = settings.as_object_mut() {
        top.remove("computeDomain");
    }
    settings
}

/// The property above is about pods that join a domain and pods that get the fallback: the
/// generators produce both, in a minimum share of a fixed sample.
#[test]
fn the_generators_produce_joins_and_fallbacks() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    const SAMPLE: usize = 1000;
    let mut runner = TestRunner::deterministic();
    let strategy = (case(), blocks(), answers());
    let (mut joined, mut fallback) = (0, 0);
    for _ in 0..SAMPLE {
        let ((settings, mut pod), (block, label), answer) =
            strategy.new_tree(&mut runner).unwrap().current();
        if let Some(labels) = pod
            .pointer_mut("/metadata/labels")
            .and_then(Value::as_object_mut)
        {
            labels.insert(LABEL.into(), label.unwrap_or("llama").into());
        }
        let mut settings = settings;
        settings["computeDomain"] = block;
        settings["preflight"] = json!("warn");
        let host = host(&answer);
        let verdict = admission::evaluate_with(&payload("CREATE", &pod, &settings), &host);
        let (_, mutated, warnings, _) = answer_of(verdict);
        let claims = mutated
            .as_ref()
            .map(|pod| pod["spec"]["resourceClaims"].to_string())
            .unwrap_or_default();
        if claims.contains("-channel\"") && claims.contains(CHANNEL) {
            joined += 1;
        }
        if warnings.iter().any(|w| w.contains("NCCL_MNNVL_ENABLE=0")) {
            fallback += 1;
        }
    }
    assert!(
        joined * 100 >= SAMPLE * 3,
        "{joined} of {SAMPLE} joined a domain"
    );
    assert!(
        fallback * 100 >= SAMPLE * 5,
        "{fallback} of {SAMPLE} got the fallback"
    );
}
