//! Structured: the fuzzer's bytes become an opted-in pod, so that it spends its time in the merge
//! engine instead of in the envelope and the trigger.
//!
//! Input: the settings as JSON, a NUL byte, then the pod as JSON; the seeds carry every e2e
//! case's settings (the vendor files among them), so the fuzzer varies settings and pod alike.
//! Settings that `validate_settings` refuses are skipped: the policy server never loads them. A
//! pod that is a JSON object gets the trigger annotation and a Volcano owner where its metadata
//! can hold them; it is then sent as a Pod CREATE. Beyond "no panic", a mutation must only add to
//! the pod (the rule of `tests/support/patch_rule.rs`), an interfaces annotation it adds must be
//! one GKE reads, it must break none of the API server's claim rules the input kept
//! (`tests/support/claim_rules.rs`: the DRA claims of `deviceClaim`), its record (behaviour.md
//! §2.1) must parse and say what the pod got, and a second pass over it must change nothing.
//!
//! A second NUL byte and what follows it are the host's answer to every read of the cluster
//! (`get_resource`, behaviour.md §9): a first byte 1 is the policy server's words for a missing
//! object (whichever was asked for), 2 its words for a read RBAC refuses, anything else is the
//! answer's bytes, the object or garbage. An answer that is neither missing nor an object must
//! change nothing but the reason a could-not-read warning gives; a missing object may add the
//! preflight's warning, or, with `preflight: reject`, its rejection. The same bytes answer the
//! read of the pod's namespace (behaviour.md §11): a namespace whose enforced Pod Security level
//! refuses what the policy adds may add that warning or rejection instead; with `computeDomain`,
//! the same bytes answer the read of the pod's ComputeDomain (behaviour.md §3.11), whose channel
//! or fallback may change the answer too, and the reads of the ConfigMaps its GPU containers take
//! env from (behaviour.md §4), whose keys the policy then leaves out of the env it adds (the
//! preflight's rule is held on the pod without `envFrom`). (Without them every read is refused,
//! as for an AdmissionPolicy.) Whatever the host answers, the validate-only answer (behaviour.md
//! §10) agrees with the injector's.
#![no_main]

use fixtures::{TRIGGER, create_payload, volcano_owner};
use libfuzzer_sys::fuzz_target;
use multinode_networking_policy::admission::{self, Verdict};
use multinode_networking_policy::admission::pod_security;
use multinode_networking_policy::cluster::{self, Host};
use serde_json::{Value, json};

#[path = "../../tests/support/patch_rule.rs"]
mod patch_rule;
#[path = "../../tests/support/claim_rules.rs"]
mod claim_rules;

/// Settings the policy server would load.
fn settings(json: &[u8]) -> Option<Value> {
    let answer: Value = serde_json::from_slice(&admission::validate_settings(json)).ok()?;
    if answer["valid"] != true {
        return None;
    }
    serde_json::from_slice(json).ok()
}

/// Opts the pod in where its metadata is an object (or absent); leaves other shapes as they are.
fn opt_in(pod: &mut Value) {
    let Some(pod) = pod.as_object_mut() else {
        return;
    };
    let metadata = pod.entry("metadata").or_insert_with(|| json!({}));
    let Some(metadata) = metadata.as_object_mut() else {
        return;
    };
    let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
    if let Some(annotations) = annotations.as_object_mut() {
        annotations.insert(TRIGGER.into(), "true".into());
    }
    if !metadata.contains_key("ownerReferences") {
        metadata.insert("ownerReferences".into(), json!([volcano_owner()]));
    }
}

/// With `validateOnly: true` the same pod gets the injector's decision without a patch
/// (behaviour.md §10): what it accepts unchanged is accepted alike, what it refuses is refused
/// alike, what it changes is refused in one line.
fn validate_only_agrees(
    pod: &Value,
    settings: &Value,
    injector: &Verdict,
    host: Host<'_>,
) {
    if settings.get("validateOnly") == Some(&Value::Bool(true)) || !settings.is_object() {
        return;
    }
    let mut validating = settings.clone();
    validating["validateOnly"] = Value::Bool(true);
    let answer = admission::evaluate_with(&create_payload(pod, &validating), host);
    match (injector, &answer) {
        (Verdict::Mutate { .. }, Verdict::Reject { message }) => assert!(
            message.starts_with("multi-node networking: this pod lacks the ")
                && !message.chars().any(char::is_control),
            "{message}"
        ),
        (Verdict::Mutate { .. }, other) => panic!("validateOnly answered {other:?} to a change"),
        (injector, answer) => assert_eq!(answer, injector, "validateOnly disagrees"),
    }
}

/// A verdict without the warnings of a pod that cannot get its IMEX channel, which say why.
fn without_channel_warnings(verdict: &Verdict) -> Verdict {
    // The channel's, and those whose reason depends on how a read failed.
    let kept = |warnings: &[String]| -> Vec<String> {
        let unread = |w: &String| {
            w.contains("IMEX channel") || w.contains("could not read") || w.contains("cannot know")
        };
        warnings.iter().filter(|w| !unread(w)).cloned().collect()
    };
    match verdict {
        Verdict::Accept { warnings } => Verdict::Accept { warnings: kept(warnings) },
        Verdict::Mutate { pod, warnings, record } => Verdict::Mutate {
            pod: pod.clone(),
            warnings: kept(warnings),
            record: record.clone(),
        },
        Verdict::Reject { message } => Verdict::Reject { message: message.clone() },
    }
}

/// The pod without its containers' `envFrom`, where some container has one.
fn without_env_from(pod: &Value) -> Option<Value> {
    let mut stripped = pod.clone();
    let containers = stripped.pointer_mut("/spec/containers")?.as_array_mut()?;
    let mut had = false;
    for container in containers.iter_mut().filter_map(Value::as_object_mut) {
        had |= container.remove("envFrom").is_some();
    }
    had.then_some(stripped)
}

/// How many mounts of the volume `name` the pod's containers and init containers make.
fn mounts_of(pod: &Value, name: &str) -> usize {
    ["/spec/containers", "/spec/initContainers"]
        .into_iter()
        .filter_map(|list| pod.pointer(list).and_then(Value::as_array))
        .flatten()
        .filter_map(|container| container.get("volumeMounts").and_then(Value::as_array))
        .flatten()
        .filter(|mount| mount["name"] == name)
        .count()
}

/// A hostPath volume the mutation declares is one a mount it added needs (behaviour.md §4): a
/// mount the user wrote of one of the policy's volume names is the user's to declare.
fn host_volumes_for_own_mounts(before: &Value, after: &Value) -> Result<(), String> {
    let volumes = |pod: &Value| {
        pod.pointer("/spec/volumes")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let had = volumes(before);
    for volume in volumes(after) {
        let name = volume["name"].as_str().unwrap_or_default();
        if volume.get("hostPath").is_none() || had.iter().any(|v| v["name"] == volume["name"]) {
            continue;
        }
        if mounts_of(after, name) <= mounts_of(before, name) {
            return Err(format!("host volume {name} declared for the user's mounts only"));
        }
    }
    Ok(())
}

/// The mutated pod of a mutation, decoded from the text the policy writes.
fn mutated_pod(verdict: Verdict) -> Option<Value> {
    match verdict {
        Verdict::Mutate { pod, .. } => {
            Some(serde_json::from_slice(&pod).expect("the policy writes JSON"))
        }
        _ => None,
    }
}

/// GKE's interfaces annotation, where the mutation added it (a GCP fabric: eth0, then the
/// fabric's NICs from eth1 or eth2), is what GKE reads: a JSON list of interfaces, each with a
/// network, no interface named twice.
fn added_interfaces(before: &Value, after: &Value) -> Result<(), String> {
    const KEY: &str = "/metadata/annotations/networking.gke.io~1interfaces";
    if before.pointer(KEY).is_some() {
        return Ok(());
    }
    let Some(text) = after.pointer(KEY) else {
        return Ok(());
    };
    let list: Vec<Value> = text
        .as_str()
        .and_then(|t| serde_json::from_str(t).ok())
        .ok_or_else(|| format!("the interfaces annotation is not a JSON list: {text}"))?;
    let mut names = std::collections::BTreeSet::new();
    for interface in &list {
        let name = interface["interfaceName"].as_str().unwrap_or("");
        if !names.insert(name) || !interface["network"].is_string() {
            return Err(format!(
                "interface {name:?} twice or without a network: {text}"
            ));
        }
    }
    if list.first().map(|i| &i["interfaceName"]) != Some(&json!("eth0")) {
        return Err(format!("the interfaces do not start at eth0: {text}"));
    }
    Ok(())
}

/// The record, in the answer's audit annotations and on the pod under the settings' key, is
/// compact JSON in the contract's key order, and each container it lists is one of the pod's with
/// the device count it gives.
fn record(settings: &Value, answer: &Value, after: &Value) -> Result<(), String> {
    let text = answer["audit_annotations"]["injected"]
        .as_str()
        .ok_or_else(|| format!("a mutation without the audit record: {answer}"))?;
    let record: Value =
        serde_json::from_str(text).map_err(|e| format!("the record {text:?}: {e}"))?;
    // An MPIJob launcher's record ends with its part; one that runs no rank has no GPU part
    // (behaviour.md §3.12).
    let mut keys = match record.get("containers") {
        Some(_) => fixtures::RECORD_KEYS.to_vec(),
        None => fixtures::RECORD_KEYS[..3].to_vec(),
    };
    if record.get("launcher").is_some() {
        keys.push("launcher");
    }
    let mut at = 0;
    for key in keys {
        at += text[at..]
            .find(&format!("\"{key}\":"))
            .ok_or_else(|| format!("{key} missing or out of order in {text}"))?;
    }
    if let Some(key) = fixtures::record_key(settings)
        && after["metadata"]["annotations"][key].as_str() != Some(text)
    {
        return Err(format!("the pod's {key} is not the audit record {text}"));
    }
    let containers = after["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (name, entry) in record["containers"].as_object().into_iter().flatten() {
        let container = containers
            .iter()
            .enumerate()
            .find(|(at, c)| c["name"].as_str().map_or(format!("#{at}"), str::to_string) == *name)
            .map(|(_, c)| c)
            .ok_or_else(|| format!("the record lists {name}, not a container: {text}"))?;
        if let Some(claim) = entry.get("claim") {
            // A DRA claim of the fabric stands for the count: the container and the pod name it.
            let named = |list: &Value| list.as_array().into_iter().flatten().any(|c| c["name"] == *claim);
            if !named(&container["resources"]["claims"]) || !named(&after["spec"]["resourceClaims"]) {
                return Err(format!("{name}: the record's claim {claim} is not the pod's: {text}"));
            }
        } else if let Some(device) = record["device"].as_str() {
            let requested = &container["resources"]["requests"][device];
            let count = requested
                .as_u64()
                .or_else(|| requested.as_str().and_then(|s| s.parse().ok()));
            if entry["devices"].as_u64() != count.or(Some(0)) && count.is_some() {
                return Err(format!("{name}: the record {entry}, the pod {requested}"));
            }
        }
    }
    Ok(())
}

/// The host's answer to a `get_resource` `request`, as the fuzzer's `bytes` say (see above).
fn answered(bytes: &[u8], request: &[u8]) -> Result<Vec<u8>, String> {
    let asked: Value = serde_json::from_slice(request).expect("the policy writes JSON");
    let text = |key: &str| asked[key].as_str().unwrap_or_default().to_string();
    match bytes.first() {
        Some(1) => Err(format!(
            "Callback evaluation failure: Cannot find {}/{} named '{}' inside of namespace '{:?}'",
            text("api_version"),
            text("kind"),
            text("name"),
            asked["namespace"].as_str()
        )),
        Some(2) => Err(format!(
            "Callback evaluation failure: ApiError: {} \"{}\" is forbidden: Forbidden",
            text("kind"),
            text("name")
        )),
        _ => Ok(bytes.to_vec()),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(split) = data.iter().position(|b| *b == 0) else {
        return;
    };
    let Some(settings) = settings(&data[..split]) else {
        return;
    };
    let rest = &data[split + 1..];
    // JSON text holds no NUL byte: a second one ends the pod.
    let (pod, host_answer) = match rest.iter().position(|b| *b == 0) {
        Some(end) => (&rest[..end], Some(&rest[end + 1..])),
        None => (rest, None),
    };
    let Ok(mut pod) = serde_json::from_slice::<Value>(pod) else {
        return;
    };
    opt_in(&mut pod);
    let bytes = create_payload(&pod, &settings);
    let verdict = admission::evaluate(&bytes);
    let answer: Value = serde_json::from_slice(&admission::validate(&bytes)).expect("JSON answer");
    assert!(answer["accepted"].is_boolean());
    if let Some(host_answer) = host_answer {
        // The same bytes answer every read, the namespace's among them.
        let host = |_: &str, request: &[u8]| answered(host_answer, request);
        let with = admission::evaluate_with(&bytes, &host);
        let encoded: Value =
            serde_json::from_slice(&admission::validate_with(&bytes, &host)).expect("JSON answer");
        assert!(encoded["accepted"].is_boolean());
        let namespace = pod
            .pointer("/metadata/namespace")
            .map_or(Some("default"), Value::as_str);
        let level = namespace.and_then(|ns| pod_security::level(host_answer, ns));
        // With computeDomain the answer is the domain's too (behaviour.md §3.11): the channel's
        // claim, or its fallback with a warning that differs as the read fails differently.
        let channel = settings.get("computeDomain").is_some_and(|b| !b.is_null());
        // A ConfigMap a container takes env from may give keys, and fewer variables are added:
        // the preflight alone is held to speaking only of what is missing on the pod without
        // `envFrom`.
        let stripped = without_env_from(&pod).map(|stripped| {
            let bytes = create_payload(&stripped, &settings);
            (admission::evaluate_with(&bytes, &host), admission::evaluate(&bytes))
        });
        let (held, without_host) = match &stripped {
            Some((with, verdict)) => (with, verdict),
            None => (&with, &verdict),
        };
        let (held, without_host) = (without_channel_warnings(held), without_channel_warnings(without_host));
        // An object read changes what is read of it (the claims' and envFrom properties hold
        // that); every other answer but a missing object and a namespace's level changes nothing.
        let object = serde_json::from_slice::<serde_json::Map<String, Value>>(host_answer).is_ok();
        let missing = host_answer.first() == Some(&1);
        if !missing && !object && level.is_none() {
            assert_eq!(
                held, without_host,
                "an answer that is neither a missing object, an object nor a namespace with a level changed the answer"
            );
        } else if missing && held != without_host && !channel {
            let said = match &held {
                Verdict::Reject { message } => message.clone(),
                Verdict::Accept { warnings } | Verdict::Mutate { warnings, .. } => {
                    warnings.last().cloned().unwrap_or_default()
                }
            };
            assert!(
                said.contains("does not exist, and this pod refers to it")
                    || said.contains("enforces the Pod Security level"),
                "the preflight changed the answer from {without_host:?} to {held:?}"
            );
        }
        validate_only_agrees(&pod, &settings, &with, &host);
    }
    validate_only_agrees(&pod, &settings, &verdict, &cluster::no_host);
    if let Some(mutated) = mutated_pod(verdict) {
        assert_ne!(mutated, pod, "a mutation that changes nothing");
        if let Err(e) = patch_rule::checked_patch(&pod, &mutated, fixtures::record_key(&settings)) {
            panic!("{e}\ninput: {pod}\nmutated: {mutated}");
        }
        if let Err(e) = added_interfaces(&pod, &mutated) {
            panic!("{e}\ninput: {pod}\nmutated: {mutated}");
        }
        if let Err(e) = host_volumes_for_own_mounts(&pod, &mutated) {
            panic!("{e}\ninput: {pod}\nmutated: {mutated}");
        }
        let before = claim_rules::violations(&pod);
        for violation in claim_rules::violations(&mutated) {
            if !before.contains(&violation) {
                panic!("{violation}\ninput: {pod}\nmutated: {mutated}");
            }
        }
        if let Err(e) = record(&settings, &answer, &mutated) {
            panic!("{e}\ninput: {pod}\nmutated: {mutated}");
        }
        match admission::evaluate(&create_payload(&mutated, &settings)) {
            Verdict::Accept { .. } => {}
            other => panic!("second pass answered {other:?}\ninput: {pod}\nmutated: {mutated}"),
        }
    }
});
