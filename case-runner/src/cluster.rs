//! The cluster the test host answers the policy's context-aware host calls from, as the policy
//! server does (behaviour.md §9, §11; kubewarden-controller 1.36,
//! `crates/policy-evaluator/src/callback_handler/kubernetes/client.rs` and
//! `runtimes/callback.rs`): `kubewarden/kubernetes/get_resource` answers the one fixture object of
//! that apiVersion, kind and name (and namespace, for a namespaced kind), pruned to the request's
//! `field_masks` as the server prunes it (everything but `apiVersion`, `kind` and `metadata`), or
//! the server's own words for a missing one. A kind listed under `notGranted` gets its words for a
//! kind the policy was not granted (an `AdmissionPolicy`, `contextAwareResources` without it),
//! one under `forbidden` the API server's RBAC refusal as the server hands it on, one under
//! `unserved` its words for a kind the API server does not serve, and one under `garbage` that
//! text as its answer. Without a cluster every host call gets the words for a policy that may read
//! nothing.
//!
//! The host reads the request strictly (unknown fields are errors), and serves no list: the policy
//! reads every object by name, and the server's lists would keep a watch per selector.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::{Map, Value};

/// The state of the fixture cluster.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Cluster {
    /// Objects that exist, each with `apiVersion`, `kind`, `metadata.name` and, for a namespaced
    /// kind, `metadata.namespace`.
    #[serde(default)]
    pub objects: Vec<Value>,
    /// Kinds the API server refuses the policy server's ServiceAccount (RBAC).
    #[serde(default)]
    pub forbidden: Vec<String>,
    /// Kinds the policy was not granted (`contextAwareResources`).
    #[serde(default)]
    pub not_granted: Vec<String>,
    /// Kinds the API server does not serve (a CRD not installed).
    #[serde(default)]
    pub unserved: Vec<String>,
    /// Kinds the host answers with this text, which is not the object.
    #[serde(default)]
    pub garbage: BTreeMap<String, String>,
}

/// `GetResourceRequest` of kubewarden-policy-sdk 0.17.3, as the host reads it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GetRequest {
    api_version: String,
    kind: String,
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    disable_cache: bool,
    #[serde(default)]
    field_masks: Option<Vec<String>>,
}

/// What the policy server answers a policy that may read nothing (kubewarden-controller 1.36,
/// `runtimes/callback.rs`, for a host capability not granted).
pub const NOT_GRANTED_CAPABILITY: &str = "Policy has not been granted access to the 'kubernetes/get_resource' host capability. The violation has been reported.";

/// The error a host answers a call with.
pub type HostError = Box<dyn std::error::Error + Send + Sync>;

/// A host call as the policy makes it: binding, namespace, operation, payload.
pub type HostCall = (String, String, String, Vec<u8>);

/// What answers the policy's host calls: binding, namespace, operation and payload in, the
/// answer or the host's error out. Shared and `'static`, as a waPC host's callback must be.
pub type HostFn =
    Arc<dyn Fn(&str, &str, &str, &[u8]) -> Result<Vec<u8>, HostError> + Send + Sync + 'static>;

/// The fixture cluster as a host: answers every call with [`answer`], and keeps each call made.
#[derive(Debug, Default)]
pub struct Recorder {
    cluster: Option<Cluster>,
    calls: Mutex<Vec<HostCall>>,
}

impl Recorder {
    /// A host over `cluster`; `None`: every host call is an error, as for an `AdmissionPolicy`.
    pub fn new(cluster: Option<Cluster>) -> Arc<Recorder> {
        Arc::new(Recorder {
            cluster,
            calls: Mutex::default(),
        })
    }

    /// The host function that answers from this cluster and records the calls here.
    pub fn host(self: &Arc<Self>) -> HostFn {
        let recorder = Arc::clone(self);
        Arc::new(move |binding, namespace, operation, payload| {
            recorder.call(binding, namespace, operation, payload)
        })
    }

    /// One host call, recorded and answered.
    pub fn call(
        &self,
        binding: &str,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, HostError> {
        self.calls.lock().map_err(|_| "host state poisoned")?.push((
            binding.to_string(),
            namespace.to_string(),
            operation.to_string(),
            payload.to_vec(),
        ));
        answer(
            self.cluster.as_ref(),
            binding,
            namespace,
            operation,
            payload,
        )
    }

    /// The calls made since the last time this was asked, in order.
    pub fn take_calls(&self) -> Vec<HostCall> {
        self.calls
            .lock()
            .map(|mut calls| std::mem::take(&mut *calls))
            .unwrap_or_default()
    }
}

/// The host's answer to one call.
pub fn answer(
    cluster: Option<&Cluster>,
    binding: &str,
    namespace: &str,
    operation: &str,
    payload: &[u8],
) -> Result<Vec<u8>, HostError> {
    let Some(cluster) = cluster else {
        return Err(NOT_GRANTED_CAPABILITY.into());
    };
    if (binding, namespace, operation) != ("kubewarden", "kubernetes", "get_resource") {
        return Err(format!("this test host serves no {binding}/{namespace}/{operation}").into());
    }
    let request: GetRequest =
        serde_json::from_slice(payload).map_err(|e| format!("cannot read the get request: {e}"))?;
    let _ = request.disable_cache;
    if let Some(answer) = refused_or_garbage(cluster, &request) {
        return answer;
    }
    let namespace = request
        .namespace
        .as_deref()
        .map_or(Value::Null, Value::from);
    let found = cluster.objects.iter().find(|o| {
        o["apiVersion"] == request.api_version.as_str()
            && o["kind"] == request.kind.as_str()
            && o["metadata"]["name"] == request.name.as_str()
            && o["metadata"]["namespace"] == namespace
    });
    match found {
        Some(object) => Ok(serde_json::to_vec(&masked(
            object,
            request.field_masks.as_deref(),
        ))?),
        None => Err(missing(
            &request.api_version,
            &request.kind,
            &request.name,
            request.namespace.as_deref(),
        )
        .into()),
    }
}

/// The policy server's words for a missing object (`client.rs`, `get_resource`), as its host
/// hands them to the guest (`runtimes/callback.rs`: "Callback evaluation failure: {e:?}").
pub fn missing(api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> String {
    format!(
        "Callback evaluation failure: Cannot find {api_version}/{kind} named '{name}' inside of namespace '{namespace:?}'"
    )
}

/// The answer for a kind the cluster may not be read for (an error) or answers with text that is
/// not the object; `None` for a kind it answers as it holds it.
fn refused_or_garbage(
    cluster: &Cluster,
    request: &GetRequest,
) -> Option<Result<Vec<u8>, HostError>> {
    let (api_version, kind, name) = (&request.api_version, &request.kind, &request.name);
    let listed = |kinds: &[String]| kinds.iter().any(|k| k == kind);
    if listed(&cluster.not_granted) {
        return Some(Err(format!(
            "Policy has not been granted access to Kubernetes {api_version}/{kind} resources. The violation has been reported."
        )
        .into()));
    }
    if listed(&cluster.forbidden) {
        let resource = format!("{}s", kind.to_lowercase());
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        let at = match &request.namespace {
            Some(namespace) => format!(" in the namespace \"{namespace}\""),
            None => String::new(),
        };
        let message = format!(
            "{resource} \"{name}\" is forbidden: User \"system:serviceaccount:kubewarden:policy-server\" cannot get resource \"{resource}\" in API group \"{group}\"{at}"
        );
        // kube 3.1's `Error::Api` as the server's `{e:?}` shows it (seen on policy-server 1.36).
        return Some(Err(format!(
            "Callback evaluation failure: ApiError: {message}: Forbidden (Status {{ status: Some(Failure), code: 403, message: {message:?}, metadata: None, reason: \"Forbidden\", details: Some(StatusDetails {{ name: {name:?}, group: {group:?}, kind: {resource:?}, uid: \"\", causes: [], retry_after_seconds: 0 }}) }})"
        )
        .into()));
    }
    if listed(&cluster.unserved) {
        // Discovery of the kind's API group fails before any read (`build_kube_resource`).
        let message = "the server could not find the requested resource";
        return Some(Err(format!(
            "Callback evaluation failure: error finding resource {api_version} / {kind}: ApiError: {message}: NotFound (Status {{ status: Some(Failure), code: 404, message: {message:?}, metadata: None, reason: \"NotFound\", details: None }})"
        )
        .into()));
    }
    let text = cluster.garbage.get(kind)?;
    Some(Ok(text.clone().into_bytes()))
}

/// `object` as the policy server answers it under `masks`: it prunes the object's data (all but
/// `apiVersion`, `kind` and `metadata`) to the dot-separated paths, each through lists
/// (`callback_handler/kubernetes/field_mask.rs`); no masks, or none given, keep it whole.
fn masked(object: &Value, masks: Option<&[String]>) -> Value {
    let Some(masks) = masks.filter(|m| !m.is_empty()) else {
        return object.clone();
    };
    let Some(members) = object.as_object() else {
        return object.clone();
    };
    let paths: Vec<Vec<&str>> = masks.iter().map(|m| m.split('.').collect()).collect();
    let mut kept = Map::new();
    for (key, value) in members {
        if matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
            kept.insert(key.clone(), value.clone());
            continue;
        }
        let below: Vec<&[&str]> = paths
            .iter()
            .filter(|p| p.first() == Some(&key.as_str()))
            .map(|p| &p[1..])
            .collect();
        if !below.is_empty() {
            kept.insert(key.clone(), prune(value, &below));
        }
    }
    Value::Object(kept)
}

/// `value` pruned to `paths` (each relative to it): an empty path keeps all below it.
fn prune(value: &Value, paths: &[&[&str]]) -> Value {
    if paths.iter().any(|p| p.is_empty()) {
        return value.clone();
    }
    match value {
        Value::Object(members) => Value::Object(
            members
                .iter()
                .filter_map(|(key, value)| {
                    let below: Vec<&[&str]> = paths
                        .iter()
                        .filter(|p| p.first() == Some(&key.as_str()))
                        .map(|p| &p[1..])
                        .collect();
                    (!below.is_empty()).then(|| (key.clone(), prune(value, &below)))
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|item| prune(item, paths)).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn get(cluster: &Cluster, request: Value) -> Result<Value, String> {
        answer(
            Some(cluster),
            "kubewarden",
            "kubernetes",
            "get_resource",
            request.to_string().as_bytes(),
        )
        .map(|bytes| serde_json::from_slice(&bytes).unwrap())
        .map_err(|e| e.to_string())
    }

    fn domain() -> Value {
        json!({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
               "metadata": {"name": "llama", "namespace": "jobs", "uid": "u"},
               "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "llama-channel"}, "allocationMode": "Single"}},
               "status": {"status": "Ready"}})
    }

    fn request(name: &str, masks: Value) -> Value {
        json!({"api_version": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
               "name": name, "namespace": "jobs", "disable_cache": true, "field_masks": masks})
    }

    #[test]
    fn an_object_pruned_to_its_masks_or_the_servers_words_for_a_missing_one() {
        let cluster = Cluster {
            objects: vec![domain()],
            ..Cluster::default()
        };
        let masks = json!(["spec.channel.resourceClaimTemplate.name"]);
        assert_eq!(
            get(&cluster, request("llama", masks)),
            Ok(
                json!({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
                "metadata": {"name": "llama", "namespace": "jobs", "uid": "u"},
                "spec": {"channel": {"resourceClaimTemplate": {"name": "llama-channel"}}}})
            )
        );
        assert_eq!(get(&cluster, request("llama", Value::Null)), Ok(domain()));
        assert_eq!(
            get(&cluster, request("gpt", json!([]))),
            Err("Callback evaluation failure: Cannot find resource.nvidia.com/v1beta1/ComputeDomain named 'gpt' inside of namespace 'Some(\"jobs\")'".to_string())
        );
        // Through lists, as the server's mask does.
        let list = json!({"a": [{"b": 1, "c": 2}, {"b": 3}], "d": 4});
        assert_eq!(
            prune(&list, &[&["a", "b"]]),
            json!({"a": [{"b": 1}, {"b": 3}]})
        );
    }

    #[test]
    fn refusals_in_the_servers_words_and_strict_requests() {
        let cluster = Cluster {
            forbidden: vec!["ComputeDomain".into()],
            ..Cluster::default()
        };
        let refused = get(&cluster, request("llama", json!([]))).unwrap_err();
        assert!(
            refused.contains(r#"computedomains "llama" is forbidden"#),
            "{refused}"
        );
        assert!(
            refused.contains(r#"in API group "resource.nvidia.com" in the namespace "jobs""#),
            "{refused}"
        );
        let cluster = Cluster {
            not_granted: vec!["ComputeDomain".into()],
            ..Cluster::default()
        };
        let refused = get(&cluster, request("llama", json!([]))).unwrap_err();
        assert!(refused.starts_with("Policy has not been granted access to Kubernetes resource.nvidia.com/v1beta1/ComputeDomain"));
        let cluster = Cluster {
            unserved: vec!["ComputeDomain".into()],
            ..Cluster::default()
        };
        let refused = get(&cluster, request("llama", json!([]))).unwrap_err();
        assert!(
            refused.contains("error finding resource resource.nvidia.com/v1beta1 / ComputeDomain")
        );
        // An unknown field, a list: errors, never an answer.
        let mut odd = request("llama", json!([]));
        odd["label_selector"] = json!("a=b");
        assert!(get(&Cluster::default(), odd).is_err());
        let list = answer(
            Some(&Cluster::default()),
            "kubewarden",
            "kubernetes",
            "list_resources_by_namespace",
            b"{}",
        );
        assert!(list.is_err());
        let none = answer(None, "kubewarden", "kubernetes", "get_resource", b"{}");
        assert_eq!(none.unwrap_err().to_string(), NOT_GRANTED_CAPABILITY);
    }
}
