//! One request, answered as the API server answers it. In the order the apiserver's handler
//! chain takes it: authentication (the kubeconfig's bearer token is the bound user, no token is
//! `system:anonymous`, another token 401); the request's info from its path
//! (`k8s.io/apiserver/pkg/endpoints/request.RequestInfoFactory`); authorization of a resource
//! request, before the resource is even looked up (403); then discovery, GET, LIST or WATCH.
//! Anything else is a 404 of a path nothing serves (or 405 for a method), logged as unexpected.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};

use crate::Shared;
use crate::kinds::{self, Kind};
use crate::rbac::Attributes;
use crate::selector::Selector;
use crate::status::Status;
use crate::watch::{self, Watch};

pub type Body = BoxBody<Bytes, Infallible>;

/// The user of a request without a token, as the API server names it.
const ANONYMOUS: &str = "system:anonymous";
/// When a watch names no `timeoutSeconds`, the API server ends it after a random time between
/// its `--min-request-timeout` (1800 s) and twice that.
const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);

pub async fn handle(
    shared: Arc<Shared>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let method = request.method().clone();
    let target = request
        .uri()
        .path_and_query()
        .map_or_else(|| request.uri().path().to_string(), |p| p.to_string());
    let (response, unexpected) = answer(&shared, &request);
    shared.log(&method, &target, response.status().as_u16(), unexpected);
    Ok(response)
}

fn json_response(status: u16, body: Vec<u8>) -> Response<Body> {
    Response::builder()
        .status(StatusCode::from_u16(status).expect("a valid status"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)).boxed())
        .expect("a valid response")
}

fn ok(value: &Value) -> Response<Body> {
    let mut body = serde_json::to_vec(value).expect("a value serialises");
    body.push(b'\n');
    json_response(200, body)
}

fn failed(status: &Status) -> Response<Body> {
    json_response(status.code, status.body())
}

/// The answer, and whether it is a 404 or 405 of something the stand-in does not serve.
fn answer(shared: &Arc<Shared>, request: &Request<Incoming>) -> (Response<Body>, bool) {
    let user = match request
        .headers()
        .get("authorization")
        .and_then(|h| h.to_str().ok())
    {
        None => ANONYMOUS,
        Some(header) if header.strip_prefix("Bearer ") == Some(shared.token.as_str()) => {
            shared.user.as_str()
        }
        Some(_) => return (failed(&Status::unauthorized()), false),
    };
    let path = request.uri().path();
    let query: HashMap<String, String> = request
        .uri()
        .query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let get = request.method() == Method::GET;
    let store = shared.store();
    let discovery = match segments.as_slice() {
        ["version"] => Some(kinds::version()),
        ["api"] => Some(kinds::api_versions(&shared.address)),
        ["api", "v1"] => Some(kinds::resource_list(&store.kinds, "", "v1").unwrap_or_else(
            || json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": []}),
        )),
        ["apis"] => Some(kinds::group_list(&store.kinds)),
        ["apis", group] => kinds::group(&store.kinds, group),
        ["apis", group, version] => kinds::resource_list(&store.kinds, group, version),
        _ => None,
    };
    if let Some(document) = discovery {
        return if get {
            (ok(&document), false)
        } else {
            (failed(&Status::path_not_found()), true)
        };
    }
    let (group, version, rest) = match segments.as_slice() {
        ["api", "v1", rest @ ..] if !rest.is_empty() => ("", "v1", rest),
        ["apis", group, version, rest @ ..] if !rest.is_empty() => (*group, *version, rest),
        // `/apis/GROUP[/VERSION]` of a group not served, and every other path.
        _ => return (failed(&Status::path_not_found()), true),
    };
    let info = ResourcePath::parse(rest);
    let watching = query
        .get("watch")
        .is_some_and(|w| matches!(w.as_str(), "1" | "t" | "T" | "true" | "TRUE" | "True"));
    let verb = match *request.method() {
        Method::GET if info.name.is_some() => "get",
        Method::GET if watching => "watch",
        Method::GET => "list",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if info.name.is_some() => "delete",
        Method::DELETE => "deletecollection",
        _ => "unknown",
    };
    let selector = Selector::parse(
        query.get("fieldSelector").map(String::as_str),
        query.get("labelSelector").map(String::as_str),
    );
    // A list or watch narrowed to one name is authorized for that name (RBAC's resourceNames).
    let name = info.name.unwrap_or_else(|| {
        selector
            .as_ref()
            .ok()
            .and_then(Selector::name)
            .unwrap_or_default()
    });
    let attributes = Attributes {
        user,
        verb,
        group,
        resource: info.resource,
        namespace: info.namespace.unwrap_or_default(),
        name,
    };
    let kind = store.kind_at(group, version, info.resource);
    let counted = kind.map(|k| store.kinds[k].kind.clone());
    if let Some(kind) = &counted {
        let mut counters = shared.counters();
        let counts = counters.of(kind);
        match verb {
            "get" => counts.gets += 1,
            "list" => counts.lists += 1,
            "watch" => counts.watches += 1,
            _ => {}
        }
    }
    if let Err(why) = shared.authorizer.authorize(&attributes) {
        if let Some(kind) = &counted {
            shared.counters().of(kind).forbidden += 1;
        }
        let status = match kind {
            Some(k) => Status::forbidden(&store.kinds[k], info.name.unwrap_or_default(), &why),
            None => Status::forbidden(
                &Kind::new(
                    &format!("{group}/{version}"),
                    "",
                    info.resource,
                    info.namespace.is_some(),
                ),
                info.name.unwrap_or_default(),
                &why,
            ),
        };
        return (failed(&status), false);
    }
    let Some(kind) = kind else {
        return (failed(&Status::path_not_found()), true);
    };
    let definition = store.kinds[kind].clone();
    // A subresource, or a namespace in the path of a cluster-scoped kind (but a Namespace's own
    // path): nothing serves it.
    let namespace_itself = definition.kind == "Namespace" && info.namespace == info.name;
    let misplaced = info.namespace.is_some() && !definition.namespaced && !namespace_itself;
    if info.subresource.is_some() || misplaced {
        return (failed(&Status::path_not_found()), true);
    }
    match verb {
        "get" => {
            let name = info.name.unwrap_or_default();
            let namespace = if definition.namespaced {
                info.namespace.unwrap_or_default()
            } else {
                ""
            };
            match store.get(kind, namespace, name) {
                Some(object) => (ok(object), false),
                None => {
                    shared.counters().of(&definition.kind).not_found += 1;
                    (failed(&Status::not_found(&definition, name)), false)
                }
            }
        }
        "list" | "watch" => {
            let selector = match selector {
                Ok(s) => s,
                Err(message) => return (failed(&Status::bad_request(message)), false),
            };
            let namespace = info.namespace.filter(|_| definition.namespaced);
            if verb == "list" {
                return (list(&store, kind, namespace, &selector, &query), false);
            }
            let since = query
                .get("resourceVersion")
                .filter(|v| !v.is_empty() && *v != "0")
                .map(|v| v.parse::<u64>());
            let since = match since {
                None => None,
                Some(Ok(v)) => Some(v),
                Some(Err(_)) => {
                    let message =
                        format!("invalid resource version: {:?}", query["resourceVersion"]);
                    return (failed(&Status::bad_request(message)), false);
                }
            };
            let timeout = query
                .get("timeoutSeconds")
                .and_then(|t| t.parse::<u64>().ok())
                .map_or(DEFAULT_WATCH_TIMEOUT, Duration::from_secs);
            let flag = |name: &str| query.get(name).is_some_and(|v| v == "true" || v == "1");
            let watch = Watch {
                kind,
                namespace: namespace.map(String::from),
                selector,
                since,
                initial_events: flag("sendInitialEvents"),
                bookmarks: flag("allowWatchBookmarks"),
                timeout,
            };
            drop(store);
            let body = watch::start(Arc::clone(shared), watch);
            let response = Response::builder()
                .status(StatusCode::OK)
                .header("content-type", "application/json")
                .body(body.boxed())
                .expect("a valid response");
            (response, false)
        }
        other => (
            failed(&Status::method_not_supported(&definition, other)),
            true,
        ),
    }
}

/// A LIST's answer: `<Kind>List` with the store's resource version, `limit` objects at most and a
/// `continue` token for the rest.
fn list(
    store: &crate::store::Store,
    kind: usize,
    namespace: Option<&str>,
    selector: &Selector,
    query: &HashMap<String, String>,
) -> Response<Body> {
    let definition = &store.kinds[kind];
    let all = store.list(kind, namespace, selector);
    let start = query
        .get("continue")
        .and_then(|c| c.split_once('/'))
        .and_then(|(_, offset)| offset.parse::<usize>().ok())
        .unwrap_or(0)
        .min(all.len());
    let limit = query
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0)
        .unwrap_or(usize::MAX);
    let end = start.saturating_add(limit).min(all.len());
    // The items of a built-in kind's list carry no apiVersion and kind; a custom resource's do.
    let items: Vec<Value> = all[start..end]
        .iter()
        .map(|object| {
            let mut object = (*object).clone();
            if !definition.is_custom()
                && let Some(map) = object.as_object_mut()
            {
                map.remove("apiVersion");
                map.remove("kind");
            }
            object
        })
        .collect();
    let mut metadata = json!({"resourceVersion": store.revision().to_string()});
    if end < all.len() {
        metadata["continue"] = json!(format!("{}/{end}", store.revision()));
        metadata["remainingItemCount"] = json!(all.len() - end);
    }
    ok(&json!({
        "kind": format!("{}List", definition.kind),
        "apiVersion": definition.api_version(),
        "metadata": metadata,
        "items": items,
    }))
}

/// The resource part of a path after its group version, as `RequestInfoFactory` reads it:
/// `namespaces/NS/RESOURCE[/NAME[/SUBRESOURCE]]`, `RESOURCE[/NAME[/SUBRESOURCE]]`, and
/// `namespaces/NAME`, which is the Namespace NAME, in namespace NAME.
#[derive(Debug, PartialEq, Eq)]
struct ResourcePath<'a> {
    namespace: Option<&'a str>,
    resource: &'a str,
    name: Option<&'a str>,
    subresource: Option<&'a str>,
}

impl<'a> ResourcePath<'a> {
    fn parse(rest: &[&'a str]) -> ResourcePath<'a> {
        let (namespace, parts) = match rest {
            ["namespaces", ns, more @ ..] if !more.is_empty() => (Some(*ns), more),
            ["namespaces", ns] => (Some(*ns), rest),
            _ => (None, rest),
        };
        ResourcePath {
            namespace,
            resource: parts.first().copied().unwrap_or_default(),
            name: parts.get(1).copied(),
            subresource: parts.get(2).copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_as_the_request_info_factory_reads_them() {
        assert_eq!(
            ResourcePath::parse(&["namespaces", "team-a", "configmaps", "nccl-env"]),
            ResourcePath {
                namespace: Some("team-a"),
                resource: "configmaps",
                name: Some("nccl-env"),
                subresource: None
            }
        );
        assert_eq!(
            ResourcePath::parse(&["namespaces", "team-a"]),
            ResourcePath {
                namespace: Some("team-a"),
                resource: "namespaces",
                name: Some("team-a"),
                subresource: None
            }
        );
        assert_eq!(
            ResourcePath::parse(&["namespaces"]),
            ResourcePath {
                namespace: None,
                resource: "namespaces",
                name: None,
                subresource: None
            }
        );
        assert_eq!(
            ResourcePath::parse(&["computedomains"]).resource,
            "computedomains"
        );
    }
}
