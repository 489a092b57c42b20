//! The cluster the test host answers the policy's context-aware host calls from, as a policy
//! server does (behaviour.md §9, §11): `kubewarden/kubernetes/list_resources_by_namespace` lists
//! the fixture objects of one apiVersion and kind in one namespace, narrowed by a
//! `metadata.name=<name>` field selector, and `kubewarden/kubernetes/get_resource` answers the
//! one object of that apiVersion, kind and name (a Namespace: cluster-scoped, no namespace), or
//! an error where there is none, as the policy server does. Without a cluster every host call is an error, which is
//! what a policy server answers a policy deployed as an `AdmissionPolicy`; a kind listed under
//! `forbidden` gets an error too (no RBAC, not in `contextAwareResources`), and one under
//! `garbage` gets that text as its answer.
//!
//! The host reads the request strictly (unknown fields, a label selector or a field selector
//! other than by name are errors), so that a request the policy server would read differently
//! fails the test instead of listing everything.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::{Value, json};

/// The state of the fixture cluster.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// Objects that exist, each with `apiVersion`, `kind`, `metadata.namespace`, `metadata.name`.
    #[serde(default)]
    pub objects: Vec<Value>,
    /// Kinds the host answers with an error.
    #[serde(default)]
    pub forbidden: Vec<String>,
    /// Kinds the host answers with this text, which is not a list.
    #[serde(default)]
    pub garbage: BTreeMap<String, String>,
}

/// `ListResourcesByNamespaceRequest` of kubewarden-policy-sdk 0.17.3, as the host reads it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListRequest {
    api_version: String,
    kind: String,
    namespace: String,
    #[serde(default)]
    label_selector: Option<String>,
    #[serde(default)]
    field_selector: Option<String>,
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
}

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
        // What policy-server answers a policy that may not read the cluster.
        return Err("policy is not allowed to access context-aware resources".into());
    };
    if (binding, namespace, operation) == ("kubewarden", "kubernetes", "get_resource") {
        return get(cluster, payload);
    }
    if (binding, namespace, operation)
        != ("kubewarden", "kubernetes", "list_resources_by_namespace")
    {
        return Err(format!("this test host serves no {binding}/{namespace}/{operation}").into());
    }
    let request: ListRequest = serde_json::from_slice(payload)
        .map_err(|e| format!("cannot read the list request: {e}"))?;
    if request.label_selector.is_some() {
        return Err("this test host serves no label selector".into());
    }
    let name = match &request.field_selector {
        None => None,
        Some(selector) => Some(
            selector
                .strip_prefix("metadata.name=")
                .filter(|name| !name.contains(','))
                .ok_or_else(|| format!("this test host serves no field selector {selector:?}"))?,
        ),
    };
    if let Some(answer) = refused_or_garbage(cluster, &request.api_version, &request.kind) {
        return answer;
    }
    let items: Vec<&Value> = cluster
        .objects
        .iter()
        .filter(|o| o["apiVersion"] == request.api_version.as_str())
        .filter(|o| o["kind"] == request.kind.as_str())
        .filter(|o| o["metadata"]["namespace"] == request.namespace.as_str())
        .filter(|o| name.is_none_or(|name| o["metadata"]["name"] == name))
        .collect();
    // A list as kube-rs serialises its ObjectList.
    let list = json!({
        "apiVersion": request.api_version,
        "kind": format!("{}List", request.kind),
        "metadata": {"resourceVersion": "1"},
        "items": items,
    });
    Ok(serde_json::to_vec(&list)?)
}

/// `get_resource`: the object of that apiVersion, kind and name (and namespace, where the request
/// gives one), or the error the policy server answers for a missing one.
/// The answer for a kind the cluster may not be read for (an error) or answers with text that is
/// not an object; `None` for a kind it answers as it holds it.
fn refused_or_garbage(
    cluster: &Cluster,
    api_version: &str,
    kind: &str,
) -> Option<Result<Vec<u8>, HostError>> {
    if cluster.forbidden.iter().any(|k| k == kind) {
        return Some(Err(format!(
            "kind {api_version} {kind} is not allowed: it is not among the policy's contextAwareResources"
        )
        .into()));
    }
    let text = cluster.garbage.get(kind)?;
    Some(Ok(text.clone().into_bytes()))
}

fn get(cluster: &Cluster, payload: &[u8]) -> Result<Vec<u8>, HostError> {
    let request: GetRequest =
        serde_json::from_slice(payload).map_err(|e| format!("cannot read the get request: {e}"))?;
    let _ = request.disable_cache;
    if let Some(answer) = refused_or_garbage(cluster, &request.api_version, &request.kind) {
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
        Some(object) => Ok(serde_json::to_vec(object)?),
        None => Err(format!(
            "{} {} {} not found",
            request.api_version, request.kind, request.name
        )
        .into()),
    }
}
