use std::cell::RefCell;

use serde_json::{Value, json};

use super::*;
use crate::engine::POD;
use crate::settings::config_of;

fn aws(more: Value) -> Config<'static> {
    let mut settings = json!({"aws": {"enabled": true}});
    if let (Some(settings), Some(more)) = (settings.as_object_mut(), more.as_object()) {
        settings.extend(more.clone());
    }
    config_of(settings)
}

use crate::cluster::tests::fixture as cluster;
use crate::cluster::{Host, Refusal};

fn template(name: &str, requests: Value) -> Value {
    json!({"kind": "ResourceClaimTemplate", "metadata": {"name": name, "namespace": "jobs"},
           "spec": {"spec": {"devices": {"requests": requests}}}})
}

fn gpus(class: &str, count: u64) -> Value {
    json!({"name": "gpu", "exactly": {"deviceClassName": class, "count": count}})
}

fn pod(claims: Value, containers: Value) -> String {
    crate::merge::tests::payload(&json!({"metadata": {"name": "w"},
        "spec": {"resourceClaims": claims, "containers": containers}}))
}

fn read_pod<'t>(text: &'t str, config: &Config<'_>, host: Option<Host<'_>>) -> PodClaims<'t> {
    let view = crate::json::object::read_object(text, &POD).expect("a pod");
    let namespace = host.is_some().then_some("jobs");
    let host = host.unwrap_or(&crate::cluster::no_host);
    read(
        &view,
        config,
        &Cluster::new(namespace, config.preflight, host),
    )
}

#[test]
fn only_the_claims_containers_name_are_read_once_per_object() {
    let objects = [
        template("eight", json!([gpus("gpu.nvidia.com", 8)])),
        template(
            "channel",
            json!([{"name": "channel", "exactly": {"deviceClassName": "compute-domain-default-channel.nvidia.com"}}]),
        ),
    ];
    let calls = RefCell::new(Vec::new());
    let host = cluster(&objects, &calls);
    let text = pod(
        json!([
            {"name": "gpus", "resourceClaimTemplateName": "eight"},
            {"name": "again", "resourceClaimTemplateName": "eight"},
            {"name": "unused", "resourceClaimTemplateName": "channel"},
            {"name": "made", "resourceClaimName": "ahead"},
        ]),
        json!([
            {"name": "a", "resources": {"claims": [{"name": "gpus"}, {"name": "again"}]}},
            {"name": "b", "resources": {"claims": [{"name": "gpus"}, {"name": "made"}]}},
        ]),
    );
    let claims = read_pod(&text, &aws(json!({})), Some(&host));
    let names: Vec<&str> = claims.claims.iter().map(|c| c.name.as_ref()).collect();
    assert_eq!(names, ["gpus", "again", "made"]);
    let eight = Counted {
        gpus: 8,
        class: Some(0),
        ..Counted::default()
    };
    assert_eq!(claims.claims[0].devices, Ok(eight));
    assert_eq!(claims.claims[1].devices, Ok(eight));
    assert_eq!(claims.claims[2].devices, Err(Unread::Missing));
    // eight once, the ResourceClaim ahead once; the unused channel never.
    let asked: Vec<(String, String)> = calls
        .borrow()
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap().to_string(),
                r["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        asked,
        [
            ("ResourceClaimTemplate".to_string(), "eight".to_string()),
            ("ResourceClaim".to_string(), "ahead".to_string()),
        ]
    );
    assert!(
        calls
            .borrow()
            .iter()
            .all(|r| r["namespace"] == "jobs" && r["api_version"] == "resource.k8s.io/v1")
    );
}

#[test]
fn no_read_without_named_claims_without_classes_or_with_skip() {
    let calls = RefCell::new(Vec::new());
    let host = cluster(&[], &calls);
    let named = pod(
        json!([{"name": "gpus", "resourceClaimTemplateName": "eight"}]),
        json!([{"name": "a", "resources": {"claims": [{"name": "gpus"}]}}]),
    );
    let unnamed = pod(
        json!([{"name": "gpus", "resourceClaimTemplateName": "eight"}]),
        json!([{"name": "a"}]),
    );
    assert!(
        read_pod(&unnamed, &aws(json!({})), Some(&host))
            .claims
            .is_empty()
    );
    let none = aws(json!({"gpuDeviceClasses": [], "fabricDeviceClasses": []}));
    assert!(read_pod(&named, &none, Some(&host)).claims.is_empty());
    assert!(calls.borrow().is_empty());
    let skip = read_pod(&named, &aws(json!({"preflight": "skip"})), Some(&host));
    assert_eq!(skip.claims[0].devices, Err(Unread::Skipped));
    let forbidden = |_: &str, _: &[u8]| Err("ApiError: Forbidden".to_string());
    let refused = read_pod(&named, &aws(json!({})), Some(&forbidden));
    assert_eq!(
        refused.claims[0].devices,
        Err(Unread::Refused(Refusal::Forbidden))
    );
    // Without a namespace no call is made.
    let no_namespace = read_pod(&named, &aws(json!({})), None);
    assert_eq!(no_namespace.claims[0].devices, Err(Unread::NoNamespace));
    assert!(calls.borrow().is_empty());
}
