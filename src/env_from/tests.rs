//! What a container's `envFrom` gives of the policy's variables, from the cluster's answers.

use std::cell::RefCell;

use serde_json::{Value, json};

use super::*;
use crate::cluster::tests::fixture as cluster;
use crate::cluster::{Host, Mode, Refusal};
use crate::json::object::{Shape, read_object};

/// A ConfigMap in namespace `jobs`.
fn config_map(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "jobs"}, "data": data})
}

/// What a container of `env_from` gives of `wanted`, and the requests the host was sent.
fn given_by(env_from: Value, wanted: &[&str], mode: Mode, host: Option<Host<'_>>) -> EnvFrom {
    let text = crate::merge::tests::payload(&json!({"name": "t", "envFrom": env_from}));
    let container = read_object(&text, &Shape::TEXT).expect("a container");
    let namespace = host.is_some().then_some("jobs");
    let host = host.unwrap_or(&crate::cluster::no_host);
    read(&container, wanted, &Cluster::new(namespace, mode, host))
}

const WANTED: &[&str] = &["FI_PROVIDER", "NCCL_DEBUG", "NCCL_SOCKET_IFNAME", "UCX_TLS"];

#[test]
fn a_config_maps_data_keys_behind_its_prefix_are_the_users() {
    let objects = [
        config_map("nccl", json!({"NCCL_DEBUG": "INFO", "OTHER": "x"})),
        // Behind prefix NCCL_: SOCKET_IFNAME gives NCCL_SOCKET_IFNAME; binaryData is no env.
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "sockets", "namespace": "jobs"},
               "data": {"SOCKET_IFNAME": "eth0"}, "binaryData": {"UCX_TLS": "cmM="}}),
    ];
    let calls = RefCell::new(Vec::new());
    let host = cluster(&objects, &calls);
    let env_from = json!([
        {"configMapRef": {"name": "nccl"}},
        {"prefix": "NCCL_", "configMapRef": {"name": "sockets"}},
        // A source that can give none of the policy's variables is not read.
        {"prefix": "WANDB_", "configMapRef": {"name": "wandb"}},
    ]);
    let found = given_by(env_from, WANTED, Mode::Warn, Some(&host));
    assert_eq!(found.given, ["NCCL_DEBUG", "NCCL_SOCKET_IFNAME"]);
    assert!(found.unknown.is_empty(), "{found:?}");
    let calls = calls.borrow();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0]["kind"], "ConfigMap");
    assert_eq!(calls[0]["api_version"], "v1");
    assert_eq!(calls[0]["namespace"], "jobs");
    assert_eq!(calls[1]["name"], "sockets");
    assert_eq!(calls[1]["field_masks"], json!(["data"]));
}

#[test]
fn a_source_is_not_read_for_what_an_earlier_one_gave() {
    let objects = [
        config_map("first", json!({"NCCL_DEBUG": "INFO"})),
        config_map("second", json!({"NCCL_DEBUG": "WARN"})),
    ];
    let calls = RefCell::new(Vec::new());
    let host = cluster(&objects, &calls);
    let env_from =
        json!([{"configMapRef": {"name": "first"}}, {"configMapRef": {"name": "second"}}]);
    let found = given_by(env_from, &["NCCL_DEBUG"], Mode::Warn, Some(&host));
    assert_eq!(found.given, ["NCCL_DEBUG"]);
    assert_eq!(calls.borrow().len(), 1);
    // Nothing wanted: nothing read.
    let found = given_by(
        json!([{"configMapRef": {"name": "first"}}]),
        &[],
        Mode::Warn,
        Some(&host),
    );
    assert_eq!(found, EnvFrom::default());
    assert_eq!(calls.borrow().len(), 1);
}

#[test]
fn sources_whose_keys_cannot_be_known_are_named_with_why() {
    let calls = RefCell::new(Vec::new());
    let host = cluster(&[], &calls);
    let env_from = json!([
        {"secretRef": {"name": "hf-token"}},
        {"prefix": "NCCL_", "configMapRef": {"name": "missing"}},
        {"configMapRef": {"name": "maybe", "optional": true}},
    ]);
    let found = given_by(env_from.clone(), WANTED, Mode::Warn, Some(&host));
    assert!(found.given.is_empty());
    assert_eq!(
        found.unknown,
        [
            Unknown {
                source: "Secret hf-token".into(),
                prefix: String::new(),
                why: Why::Secret,
            },
            Unknown {
                source: "ConfigMap missing (prefix NCCL_)".into(),
                prefix: "NCCL_".into(),
                why: Why::Unread(Unread::Missing),
            },
        ]
    );
    // The Secret is never asked for; both ConfigMaps are.
    assert_eq!(calls.borrow().len(), 2);
    assert_eq!(Why::Secret.text(), "the policy does not read Secrets");
    assert_eq!(
        Why::Unread(Unread::Refused(Refusal::Forbidden)).text(),
        "the policy server's ServiceAccount may not get configmaps (RBAC: the ClusterRole that make manifests renders)"
    );
    // `skip` and no host: no call, and every ConfigMap is unknown, optional or not.
    calls.borrow_mut().clear();
    let skipped = given_by(env_from.clone(), WANTED, Mode::Skip, Some(&host));
    let whys: Vec<Why> = skipped.unknown.iter().map(|u| u.why).collect();
    let skip = Why::Unread(Unread::Skipped);
    assert_eq!(whys, [Why::Secret, skip, skip]);
    assert!(calls.borrow().is_empty());
    let unread = given_by(env_from.clone(), WANTED, Mode::Warn, None);
    let whys: Vec<Why> = unread.unknown.iter().map(|u| u.why).collect();
    let unread_why = Why::Unread(Unread::NoNamespace);
    assert_eq!(whys, [Why::Secret, unread_why, unread_why]);
    let forbidden = |_: &str, _: &[u8]| Err("ApiError: Forbidden".to_string());
    let refused = given_by(env_from, WANTED, Mode::Warn, Some(&forbidden));
    let whys: Vec<Why> = refused.unknown.iter().map(|u| u.why).collect();
    let refused_why = Why::Unread(Unread::Refused(Refusal::Forbidden));
    assert_eq!(whys, [Why::Secret, refused_why, refused_why]);
}

#[test]
fn no_answer_of_the_host_is_taken_for_keys() {
    let env_from = json!([{"configMapRef": {"name": "nccl"}}]);
    for answer in [
        "",
        "null",
        "[]",
        r#"{"items": [}"#,
        r#"{"metadata": {"name": "other"}, "data": {"NCCL_DEBUG": "1"}}"#,
        r#"{"metadata": {"name": "nccl"}, "data": ["NCCL_DEBUG"]}"#,
        r#"{"metadata": {"name": "nccl"}, "data": "NCCL_DEBUG"}"#,
    ] {
        let host = |_: &str, _: &[u8]| Ok(answer.as_bytes().to_vec());
        let found = given_by(env_from.clone(), WANTED, Mode::Warn, Some(&host));
        assert!(found.given.is_empty(), "{answer}");
        assert_eq!(found.unknown.len(), 1, "{answer}");
        assert_eq!(
            found.unknown[0].why,
            Why::Unread(Unread::Unreadable),
            "{answer}"
        );
    }
    let invalid = |_: &str, _: &[u8]| Ok(vec![0xff, b'{']);
    let found = given_by(env_from.clone(), WANTED, Mode::Warn, Some(&invalid));
    assert_eq!(found.unknown[0].why, Why::Unread(Unread::Unreadable));
    // A ConfigMap without data, or with `data: null`, gives nothing, and is known to.
    for data in ["", r#", "data": null"#] {
        let answer = format!(r#"{{"metadata": {{"name": "nccl"}}{data}}}"#);
        let host = |_: &str, _: &[u8]| Ok(answer.as_bytes().to_vec());
        let found = given_by(env_from.clone(), WANTED, Mode::Warn, Some(&host));
        assert_eq!(found, EnvFrom::default(), "{answer}");
    }
}

#[test]
fn items_of_the_wrong_shape_give_nothing_and_cost_no_call() {
    let calls = RefCell::new(Vec::new());
    let objects = [config_map("nccl", json!({"NCCL_DEBUG": "INFO"}))];
    let host = cluster(&objects, &calls);
    for env_from in [
        json!(null),
        json!({}),
        json!("nccl"),
        json!([7, null, "x", []]),
        json!([{}]),
        json!([{"configMapRef": {}}]),
        json!([{"configMapRef": {"name": ""}}]),
        json!([{"configMapRef": {"name": 3}}]),
        json!([{"configMapRef": "nccl"}]),
        json!([{"configMapRef": {"name": "nccl"}, "secretRef": {"name": "nccl"}}]),
        json!([{"configMapRef": {"name": "nccl"}, "prefix": "NCCL_DEBUG_"}]),
    ] {
        let found = given_by(env_from.clone(), WANTED, Mode::Warn, Some(&host));
        assert_eq!(found, EnvFrom::default(), "{env_from}");
    }
    assert!(calls.borrow().is_empty());
    // A null reference beside the other is no reference; a prefix of the wrong type is none.
    for env_from in [
        json!([{"configMapRef": {"name": "nccl"}, "secretRef": null}]),
        json!([{"configMapRef": {"name": "nccl"}, "prefix": 7}]),
    ] {
        let found = given_by(env_from.clone(), WANTED, Mode::Warn, Some(&host));
        assert_eq!(found.given, ["NCCL_DEBUG"], "{env_from}");
    }
}
