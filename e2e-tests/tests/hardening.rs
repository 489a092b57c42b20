//! Hardening inside the waPC host (behaviour.md §6): one instance answering thousands of requests keeps
//! its linear memory size, and the worst pods we could think of are answered without a trap.
//!
//! A trap is a policy-server error, and with the default `failurePolicy: Fail` it blocks pod
//! creation: every input here must get an answer. Timings are printed (`--nocapture`), and only
//! bounded loosely, far above the policy server's 2 s budget, to catch a blow-up rather than to
//! benchmark (that is `make bench`).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use e2e_tests::{Instance, Policy, Response, default_module_path, policy};
use fixtures::{TRIGGER, create_payload, volcano_worker};
use serde_json::{Value, json};

/// Far above the policy server's 2 s: a guard against quadratic blow-ups, not a benchmark.
const LOOSE_BOUND: Duration = Duration::from_secs(10);

/// The module on the lean engine, which tells the size of an instance's linear memory.
fn lean_policy() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| {
        Policy::lean(&default_module_path())
            .unwrap_or_else(|e| panic!("{e:#}\n(run `make annotated-policy.wasm` first)"))
    })
}

fn settings(cloud: &str) -> Value {
    match cloud {
        "aws" => json!({"aws": {"enabled": true, "efaDevicesPerGPU": 4}}),
        "azure" => json!({"azure": {"enabled": true, "rdmaDevicesPerGPU": 1}}),
        "gcp" => json!({"gcp": {"enabled": true}}),
        _ => json!({"oci": {"enabled": true, "rdmaDevicesPerGPU": 8}}),
    }
}

fn trainer(name: &str, gpus: &str) -> Value {
    json!({
        "name": name,
        "image": "nvcr.io/nvidia/nemo:25.04",
        "resources": {"limits": {"nvidia.com/gpu": gpus}, "requests": {"nvidia.com/gpu": gpus}},
    })
}

/// A Volcano worker pod of these containers, opted in.
fn worker(containers: Vec<Value>) -> Value {
    volcano_worker(
        json!({TRIGGER: "true"}),
        json!({"containers": containers, "restartPolicy": "OnFailure"}),
    )
}

/// Calls `validate` on the policy-server-like host and reads the answer, timing the call alone.
fn answer(instance: &Instance, name: &str, payload: &[u8]) -> Response {
    let started = Instant::now();
    let bytes = instance
        .call("validate", payload)
        .unwrap_or_else(|e| panic!("{name}: {e:#}"));
    let took = started.elapsed();
    let response: Response = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("{name}: not a ValidationResponse ({e})"));
    eprintln!(
        "{name}: {:.1} MB in, {:.1} MB out, {took:.2?}, accepted={} mutated={} message={:?}",
        payload.len() as f64 / 1e6,
        bytes.len() as f64 / 1e6,
        response.accepted,
        response.mutated_object.is_some(),
        response
            .message
            .as_deref()
            .map(|m| m.chars().take(100).collect::<String>()),
    );
    assert!(
        took < LOOSE_BOUND,
        "{name} took {took:?}, far above the 2 s budget"
    );
    response
}

fn mutated(name: &str, response: &Response) -> Value {
    assert!(
        response.accepted,
        "{name} was rejected: {:?}",
        response.message
    );
    response
        .mutated_object
        .clone()
        .unwrap_or_else(|| panic!("{name} was not mutated"))
}

#[test]
fn thousands_of_evaluations_keep_the_memory_size() {
    // A mix of every kind of answer: mutations for each cloud, passes, rejections, garbage.
    let mut inputs: Vec<(&str, Vec<u8>)> = Vec::new();
    for cloud in ["aws", "azure", "gcp", "oci"] {
        let pod = worker(vec![trainer("trainer", "8"), json!({"name": "logger"})]);
        inputs.push(("validate", create_payload(&pod, &settings(cloud))));
        let mut not_ours = pod.clone();
        not_ours["metadata"]["annotations"] = json!({});
        inputs.push(("validate", create_payload(&not_ours, &settings(cloud))));
        let fractional = worker(vec![trainer("trainer", "1500m")]);
        inputs.push(("validate", create_payload(&fractional, &settings(cloud))));
        inputs.push((
            "validate_settings",
            serde_json::to_vec(&settings(cloud)).unwrap(),
        ));
    }
    inputs.push(("validate", b"{\"request\": ".to_vec()));
    inputs.push((
        "validate_settings",
        br#"{"aws": {"enabled": true, "efaDevicesPerGpu": 4}}"#.to_vec(),
    ));

    let instance = lean_policy().instance().unwrap();
    let memory_size = || instance.memory_size().expect("the lean engine tells it");
    let initial = memory_size();
    // The first round sizes the allocator's heap; later rounds must fit in it.
    let expected: Vec<Vec<u8>> = inputs
        .iter()
        .map(|(function, input)| instance.call(function, input).unwrap())
        .collect();
    for (function, input) in &inputs {
        instance.call(function, input).unwrap();
    }
    let warmed = memory_size();

    let rounds = 5000 / inputs.len() + 1;
    let started = Instant::now();
    for round in 0..rounds {
        for ((function, input), first) in inputs.iter().zip(&expected) {
            let answer = instance.call(function, input).unwrap();
            assert_eq!(
                &answer, first,
                "round {round}: {function} answered differently on the same instance"
            );
        }
    }
    let calls = rounds * inputs.len();
    let after = memory_size();
    eprintln!(
        "linear memory: {initial} bytes after instantiation, {warmed} after two rounds of {} \
         inputs, {after} after {calls} more calls ({:.2?})",
        inputs.len(),
        started.elapsed()
    );
    assert_eq!(
        after, warmed,
        "the module's linear memory grew from {warmed} to {after} bytes over {calls} calls"
    );
}

#[test]
fn a_thousand_gpu_containers() {
    let instance = policy().instance().unwrap();
    let containers: Vec<Value> = (0..1000)
        .map(|i| trainer(&format!("trainer-{i}"), "1"))
        .collect();
    let pod = worker(containers);
    for cloud in ["aws", "azure", "gcp"] {
        let name = format!("1,000 GPU containers ({cloud})");
        let response = answer(&instance, &name, &create_payload(&pod, &settings(cloud)));
        let out = mutated(&name, &response);
        assert_eq!(out["spec"]["containers"].as_array().unwrap().len(), 1000);
        if cloud == "gcp" {
            assert_eq!(out["spec"]["initContainers"].as_array().unwrap().len(), 1);
        }
    }
    // OCI would need 8,000 Multus attachments: a rejection that says so.
    let response = answer(
        &instance,
        "1,000 GPU containers (oci)",
        &create_payload(&pod, &settings("oci")),
    );
    assert!(!response.accepted);
    assert!(response.message.unwrap().contains("8000"));
}

#[test]
fn five_thousand_env_entries() {
    let instance = policy().instance().unwrap();
    let mut container = trainer("trainer", "8");
    // Ours among them, in the middle: they must be kept and not added twice.
    let env: Vec<Value> = (0..5000)
        .map(|i| match i {
            2500 => json!({"name": "NCCL_SOCKET_IFNAME", "value": "ib0"}),
            _ => json!({"name": format!("USER_VAR_{i}"), "value": i.to_string()}),
        })
        .collect();
    container["env"] = Value::Array(env);
    let pod = worker(vec![container]);
    for cloud in ["azure", "gcp"] {
        let name = format!("5,000 env entries ({cloud})");
        let out = mutated(
            &name,
            &answer(&instance, &name, &create_payload(&pod, &settings(cloud))),
        );
        let env = out["spec"]["containers"][0]["env"].as_array().unwrap();
        assert_eq!(
            env[2500],
            json!({"name": "NCCL_SOCKET_IFNAME", "value": "ib0"})
        );
        let names: std::collections::HashSet<_> = env.iter().map(|e| &e["name"]).collect();
        assert_eq!(names.len(), env.len(), "an env name appears twice");
    }
}

/// `spec.futureField` nested `depth` levels deep, as raw JSON text (built as text: the payload
/// is as deep as serde_json allows, and this keeps the test's own recursion out of it).
fn deep_payload(depth: usize, opted_in: bool, open: &str, close: &str) -> Vec<u8> {
    let mut pod = worker(vec![trainer("trainer", "8")]);
    if !opted_in {
        pod["metadata"]["annotations"] = json!({});
    }
    pod["spec"]["futureField"] = json!("DEEP");
    let text = String::from_utf8(create_payload(&pod, &settings("aws"))).unwrap();
    let nested = format!("{}0{}", open.repeat(depth), close.repeat(depth));
    text.replacen("\"DEEP\"", &nested, 1).into_bytes()
}

#[test]
fn nesting_as_deep_as_serde_json_reads() {
    let instance = policy().instance().unwrap();
    for (kind, open, close) in [("lists", "[", "]"), ("objects", "{\"a\":", "}")] {
        // The deepest payload serde_json reads whole, as the policy server reads the request.
        let deepest = (1..1000)
            .take_while(|&d| {
                serde_json::from_slice::<Value>(&deep_payload(d, true, open, close)).is_ok()
            })
            .last()
            .unwrap();
        let name = format!("unknown field of {deepest} nested {kind}");
        let out = mutated(
            &name,
            &answer(&instance, &name, &deep_payload(deepest, true, open, close)),
        );
        assert!(!out["spec"]["futureField"].is_null());
        let name = format!("{name}, not opted in");
        let response = answer(&instance, &name, &deep_payload(deepest, false, open, close));
        assert!(response.accepted && response.mutated_object.is_none());
        // Deeper than any policy server can send (it reads the request with the same limit):
        // the policy never parses fields it does not touch, so it copies them as text at any
        // depth, a hundred thousand levels down included, without a stack overflow.
        for depth in [deepest + 1, 100_000] {
            let nested = format!("{}0{}", open.repeat(depth), close.repeat(depth));
            let response = instance
                .call("validate", &deep_payload(depth, true, open, close))
                .unwrap();
            assert!(
                response.starts_with(br#"{"accepted":true"#),
                "{depth} nested {kind}"
            );
            let text = String::from_utf8(response).unwrap();
            assert!(text.contains(&nested), "{depth} nested {kind} kept as sent");
            // Not opted in, the pod is not read beyond its metadata: it passes, however deep.
            let name = format!("unknown field of {depth} nested {kind}, not opted in");
            let response = answer(&instance, &name, &deep_payload(depth, false, open, close));
            assert!(response.accepted && response.mutated_object.is_none());
        }
    }
}

#[test]
fn very_long_strings_and_very_many_annotations() {
    let instance = policy().instance().unwrap();

    // Annotations are limited to 256 KiB, keys and values (behaviour.md §4): an 8 MiB one is
    // read, and the pod refused, saying why, since the API server would refuse it.
    let mut pod = worker(vec![trainer("trainer", "8")]);
    pod["metadata"]["annotations"]["example.com/huge"] = json!("x".repeat(8 << 20));
    let name = "8 MiB annotation";
    let response = answer(&instance, name, &create_payload(&pod, &settings("gcp")));
    assert!(!response.accepted, "{name} was accepted");
    assert!(
        response
            .message
            .as_deref()
            .is_some_and(|m| m.contains("more than the 262144 the API server accepts")),
        "{name}: {:?}",
        response.message
    );

    let mut pod = worker(vec![trainer("trainer", "8")]);
    pod["metadata"]["annotations"]["example.com/huge"] = json!("x".repeat(200 << 10));
    pod["spec"]["containers"][0]["image"] = json!(format!("registry/{}", "i".repeat(1 << 20)));
    pod["spec"]["containers"][0]["env"] = json!([{"name": "BIG", "value": "v".repeat(1 << 20)}]);
    let name = "200 KiB annotation, 1 MiB image and env value";
    let out = mutated(
        name,
        &answer(&instance, name, &create_payload(&pod, &settings("gcp"))),
    );
    assert_eq!(
        out["metadata"]["annotations"]["example.com/huge"]
            .as_str()
            .unwrap()
            .len(),
        200 << 10
    );

    // As many annotations as fit under the limit with GCP's and the record (about 31 bytes each).
    let mut pod = worker(vec![trainer("trainer", "8")]);
    for i in 0..7_000 {
        pod["metadata"]["annotations"][format!("example.com/annotation-{i}")] =
            json!(i.to_string());
    }
    let name = "7,000 annotations";
    let out = mutated(
        name,
        &answer(&instance, name, &create_payload(&pod, &settings("gcp"))),
    );
    assert_eq!(
        out["metadata"]["annotations"].as_object().unwrap().len(),
        // The pod's, the trigger, GCP's three and the record of what was injected.
        7_000 + 1 + 3 + 1
    );

    // The trigger key as the last of 10,000 ownerReferences and 10,000 volumes.
    let mut pod = worker(vec![trainer("trainer", "8")]);
    let mut owners: Vec<Value> = (0..10_000)
        .map(|i| json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("rs-{i}"), "uid": "u"}))
        .collect();
    owners.push(
        json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "j", "uid": "u"}),
    );
    pod["metadata"]["ownerReferences"] = Value::Array(owners);
    pod["spec"]["volumes"] = Value::Array(
        (0..10_000)
            .map(|i| json!({"name": format!("data-{i}"), "emptyDir": {}}))
            .collect(),
    );
    let name = "10,000 owners and 10,000 volumes";
    let out = mutated(
        name,
        &answer(&instance, name, &create_payload(&pod, &settings("aws"))),
    );
    assert_eq!(out["spec"]["volumes"].as_array().unwrap().len(), 10_002);

    // A Multus list of 10,000 user networks: kept, ours appended.
    let mut pod = worker(vec![trainer("trainer", "2")]);
    let users: Vec<String> = (0..10_000).map(|i| format!("default/net-{i}")).collect();
    pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] = json!(users.join(","));
    let name = "10,000 user Multus networks";
    let out = mutated(
        name,
        &answer(&instance, name, &create_payload(&pod, &settings("oci"))),
    );
    let networks = out["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"]
        .as_str()
        .unwrap();
    assert_eq!(networks.split(',').count(), 10_000 + 16);
}

#[test]
fn a_bad_quantity_in_a_huge_pod_is_named() {
    let instance = policy().instance().unwrap();
    let mut containers: Vec<Value> = (0..999)
        .map(|i| trainer(&format!("trainer-{i}"), "1"))
        .collect();
    containers.push(trainer("the-odd-one", "1.5"));
    let response = answer(
        &instance,
        "999 good GPU containers and one fractional",
        &create_payload(&worker(containers), &settings("aws")),
    );
    assert!(!response.accepted);
    let message = response.message.unwrap();
    assert!(
        message.contains("the-odd-one") && message.contains("1.5"),
        "{message}"
    );
}

/// What the policy does not change comes back as the request's own text: numbers in any notation,
/// escapes, key order and blanks inside untouched values, so the policy server's patch holds only
/// the additions whatever its JSON reader makes of a number.
#[test]
fn untouched_values_come_back_byte_for_byte() {
    let instance = policy().instance().unwrap();
    let mut pod = worker(vec![trainer("trainer", "8")]);
    pod["spec"]["futureField"] = json!("FUTURE");
    pod["spec"]["containers"][0]["futureField"] = json!("CONTAINER");
    let text = String::from_utf8(create_payload(&pod, &settings("gcp"))).unwrap();
    let future = r#"{"z": 1.50, "a": [4.2e93, -0.0, 12345678901234567890123, 1E-7],  "s": "caf\u00e9 \ud83d\ude80"}"#;
    let container = r#"[ {"b":true} , null ]"#;
    let text = text
        .replacen("\"FUTURE\"", future, 1)
        .replacen("\"CONTAINER\"", container, 1);
    let bytes = instance.call("validate", text.as_bytes()).unwrap();
    let answer = String::from_utf8(bytes).unwrap();
    assert!(answer.starts_with(r#"{"accepted":true"#), "{answer}");
    assert!(
        answer.contains(&format!(r#""futureField":{future}"#)),
        "{answer}"
    );
    assert!(
        answer.contains(&format!(r#""futureField":{container}"#)),
        "{answer}"
    );
}
