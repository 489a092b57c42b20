//! The stand-in over plain HTTP/1.1, held to what the API server answers: the discovery
//! documents, GET, LIST and WATCH as kube-rs's watcher asks for them, and the `Status` bodies of
//! `k8s.io/apimachinery/pkg/api/errors` and the RBAC authorizer, byte for byte.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use kube_standin::{Config, Kind, POLICY_SERVER_USER, PolicyRule, Standin};
use serde_json::{Value, json};

const SA: &str = POLICY_SERVER_USER;

fn kinds() -> Vec<Kind> {
    vec![
        Kind::config_map(),
        Kind::namespace(),
        Kind::compute_domain(),
    ]
}

fn config_map(namespace: &str, name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": namespace, "labels": labels},
           "data": {"FI_PROVIDER": "efa"}})
}

fn domain(namespace: &str, name: &str) -> Value {
    json!({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
           "metadata": {"name": name, "namespace": namespace},
           "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": format!("{name}-channel")}}}})
}

fn rule(groups: &[&str], resources: &[&str]) -> PolicyRule {
    PolicyRule::of_role(&json!({"rules": [{
        "apiGroups": groups, "resources": resources, "verbs": ["get", "list", "watch"]
    }]}))
    .unwrap()
    .remove(0)
}

/// A stand-in with two ConfigMaps, a Namespace and a ComputeDomain, the policy server allowed
/// `rules`.
fn standin(rules: Vec<PolicyRule>) -> Standin {
    Standin::start(
        Config::new(kinds())
            .objects(vec![
                config_map("team-a", "nccl-env", json!({"job": "llama"})),
                config_map("team-a", "other", json!({"job": "gpt"})),
                config_map("team-b", "nccl-env", json!({})),
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}),
                domain("team-a", "llama"),
            ])
            .rules(rules),
    )
    .unwrap()
}

fn everything() -> Vec<PolicyRule> {
    vec![rule(&["*"], &["*"])]
}

/// An answer: status, headers (lower-case names), body (de-chunked).
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }

    fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn send(standin: &Standin, method: &str, target: &str, token: Option<&str>) -> TcpStream {
    let mut stream = TcpStream::connect(standin.addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "{method} {target} HTTP/1.1\r\nHost: {}\r\n{auth}Accept: application/json\r\nConnection: close\r\n\r\n",
        standin.addr()
    )
    .unwrap();
    stream
}

fn head(reader: &mut BufReader<TcpStream>) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            return (status, headers);
        }
        let (name, value) = line.split_once(':').unwrap();
        headers.push((name.to_lowercase(), value.trim().to_string()));
    }
}

/// The next chunk of a chunked body; `None` at its end.
fn chunk(reader: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut size = String::new();
    reader.read_line(&mut size).ok()?;
    let size = usize::from_str_radix(size.trim(), 16).ok()?;
    let mut data = vec![0; size + 2];
    reader.read_exact(&mut data).ok()?;
    data.truncate(size);
    (size > 0).then_some(data)
}

fn request(standin: &Standin, method: &str, target: &str, token: Option<&str>) -> Answer {
    let mut reader = BufReader::new(send(standin, method, target, token));
    let (status, headers) = head(&mut reader);
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v == "chunked");
    let mut body = Vec::new();
    if chunked {
        while let Some(data) = chunk(&mut reader) {
            body.extend(data);
        }
    } else {
        reader.read_to_end(&mut body).unwrap();
    }
    Answer {
        status,
        headers,
        body,
    }
}

fn get(standin: &Standin, target: &str) -> Answer {
    request(standin, "GET", target, Some(standin.token()))
}

/// A watch being read, one event at a time.
struct Events(BufReader<TcpStream>, Vec<u8>);

impl Events {
    fn open(standin: &Standin, target: &str) -> Events {
        let mut reader = BufReader::new(send(standin, "GET", target, Some(standin.token())));
        let (status, headers) = head(&mut reader);
        assert_eq!(status, 200, "{target}");
        assert!(headers.contains(&("transfer-encoding".into(), "chunked".into())));
        Events(reader, Vec::new())
    }

    /// The next event; `None` when the server ends the watch.
    fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.1.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.1.drain(..=end).collect();
                return Some(serde_json::from_slice(&line).unwrap());
            }
            let data = chunk(&mut self.0)?;
            self.1.extend(data);
        }
    }
}

#[test]
fn discovery_names_the_kinds_and_refuses_a_group_version_not_served() {
    let standin = standin(Vec::new());
    // Discovery needs no token and no rule.
    let version = request(&standin, "GET", "/version", None);
    assert_eq!(version.status, 200);
    assert_eq!(version.json()["major"], "1");
    assert_eq!(
        request(&standin, "GET", "/api", None).json(),
        json!({"kind": "APIVersions", "versions": ["v1"],
               "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": standin.addr().to_string()}]})
    );
    let core = get(&standin, "/api/v1").json();
    assert_eq!(core["kind"], "APIResourceList");
    assert_eq!(core["groupVersion"], "v1");
    let names: Vec<&str> = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["configmaps", "namespaces"]);
    assert_eq!(core["resources"][1]["namespaced"], false);
    assert_eq!(core["resources"][0]["singularName"], "configmap");
    let groups = get(&standin, "/apis").json();
    assert_eq!(
        groups["groups"],
        json!([{"name": "resource.nvidia.com",
                "versions": [{"groupVersion": "resource.nvidia.com/v1beta1", "version": "v1beta1"}],
                "preferredVersion": {"groupVersion": "resource.nvidia.com/v1beta1", "version": "v1beta1"}}])
    );
    let nvidia = get(&standin, "/apis/resource.nvidia.com/v1beta1").json();
    assert_eq!(
        nvidia["resources"],
        json!([{"name": "computedomains", "singularName": "computedomain", "namespaced": true,
                "kind": "ComputeDomain",
                "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]}])
    );
    // A version not served: the apiserver's not-found handler.
    let missing = get(&standin, "/apis/resource.nvidia.com/v1");
    assert_eq!(missing.status, 404);
    assert_eq!(missing.header("content-type"), Some("application/json"));
    assert_eq!(
        missing.text(),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
         \"message\":\"the server could not find the requested resource\",\"reason\":\"NotFound\",\
         \"code\":404}\n"
    );
    assert_eq!(get(&standin, "/healthz").status, 404);
    assert_eq!(
        standin.unexpected(),
        ["GET /apis/resource.nvidia.com/v1", "GET /healthz"]
    );
}

#[test]
fn get_answers_the_object_or_the_api_servers_not_found() {
    let standin = standin(everything());
    let found = get(&standin, "/api/v1/namespaces/team-a/configmaps/nccl-env");
    assert_eq!(found.status, 200);
    let object = found.json();
    assert_eq!(object["data"], json!({"FI_PROVIDER": "efa"}));
    assert_eq!(object["kind"], "ConfigMap");
    assert!(
        object["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .is_ok()
    );
    assert!(object["metadata"]["uid"].is_string());
    let missing = get(&standin, "/api/v1/namespaces/team-a/configmaps/absent");
    assert_eq!(missing.status, 404);
    assert_eq!(
        missing.text(),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
         \"message\":\"configmaps \\\"absent\\\" not found\",\"reason\":\"NotFound\",\
         \"details\":{\"name\":\"absent\",\"kind\":\"configmaps\"},\"code\":404}\n"
    );
    let domain = get(
        &standin,
        "/apis/resource.nvidia.com/v1beta1/namespaces/team-a/computedomains/llama",
    );
    assert_eq!(domain.status, 200);
    assert_eq!(
        domain.json()["spec"]["channel"]["resourceClaimTemplate"]["name"],
        "llama-channel"
    );
    let other_namespace = get(
        &standin,
        "/apis/resource.nvidia.com/v1beta1/namespaces/team-b/computedomains/llama",
    );
    assert_eq!(
        other_namespace.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "computedomains.resource.nvidia.com \"llama\" not found", "reason": "NotFound",
               "details": {"name": "llama", "group": "resource.nvidia.com", "kind": "computedomains"},
               "code": 404})
    );
    // A cluster-scoped kind: a Namespace is at /api/v1/namespaces/NAME.
    assert_eq!(
        get(&standin, "/api/v1/namespaces/team-a").json()["metadata"]["name"],
        "team-a"
    );
    assert_eq!(
        get(&standin, "/api/v1/namespaces/team-z").json()["message"],
        "namespaces \"team-z\" not found"
    );
    let counts = standin.counters();
    assert_eq!(counts.kind("ConfigMap").gets, 2);
    assert_eq!(counts.kind("ConfigMap").not_found, 1);
    assert_eq!(counts.kind("ComputeDomain").gets, 2);
    assert_eq!(counts.kind("Namespace").not_found, 1);
    assert!(standin.unexpected().is_empty());
}

#[test]
fn what_the_role_does_not_allow_is_forbidden_in_the_rbac_authorizers_words() {
    let standin = standin(vec![rule(&[""], &["configmaps"])]);
    assert_eq!(
        get(&standin, "/api/v1/namespaces/team-a/configmaps/nccl-env").status,
        200
    );
    let domain = get(
        &standin,
        "/apis/resource.nvidia.com/v1beta1/namespaces/team-a/computedomains/llama",
    );
    assert_eq!(domain.status, 403);
    assert_eq!(
        domain.text(),
        format!(
            "{{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{{}},\"status\":\"Failure\",\
             \"message\":\"computedomains.resource.nvidia.com \\\"llama\\\" is forbidden: User \\\"{SA}\\\" \
             cannot get resource \\\"computedomains\\\" in API group \\\"resource.nvidia.com\\\" in the \
             namespace \\\"team-a\\\"\",\"reason\":\"Forbidden\",\"details\":{{\"name\":\"llama\",\
             \"group\":\"resource.nvidia.com\",\"kind\":\"computedomains\"}},\"code\":403}}\n"
        )
    );
    // A list has no name, and its message none.
    let list = get(
        &standin,
        "/apis/resource.nvidia.com/v1beta1/namespaces/team-a/computedomains?fieldSelector=metadata.name%3Dllama",
    );
    assert_eq!(list.status, 403);
    assert_eq!(
        list.json()["message"],
        format!(
            "computedomains.resource.nvidia.com is forbidden: User \"{SA}\" cannot list resource \"computedomains\" in API group \"resource.nvidia.com\" in the namespace \"team-a\""
        )
    );
    let watch = get(
        &standin,
        "/apis/resource.nvidia.com/v1beta1/namespaces/team-a/computedomains?watch=true&resourceVersion=1",
    );
    assert_eq!(watch.status, 403);
    assert!(
        watch.json()["message"]
            .as_str()
            .unwrap()
            .contains("cannot watch resource \"computedomains\"")
    );
    // A Namespace's path names its namespace, and the message says so.
    assert_eq!(
        get(&standin, "/api/v1/namespaces/team-a").json()["message"],
        format!(
            "namespaces \"team-a\" is forbidden: User \"{SA}\" cannot get resource \"namespaces\" in API group \"\" in the namespace \"team-a\""
        )
    );
    assert_eq!(
        get(&standin, "/api/v1/namespaces").json()["message"],
        format!(
            "namespaces is forbidden: User \"{SA}\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
        )
    );
    // Without a token, the anonymous user; with a wrong one, 401.
    let anonymous = request(
        &standin,
        "GET",
        "/api/v1/namespaces/team-a/configmaps/nccl-env",
        None,
    );
    assert_eq!(anonymous.status, 403);
    assert!(
        anonymous.json()["message"]
            .as_str()
            .unwrap()
            .contains("User \"system:anonymous\" cannot get")
    );
    let wrong = request(&standin, "GET", "/api/v1/namespaces", Some("nope"));
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.json()["message"], "Unauthorized");
    let counts = standin.counters();
    assert_eq!(counts.kind("ComputeDomain").forbidden, 3);
    assert_eq!(counts.kind("ComputeDomain").gets, 1);
    assert_eq!(counts.kind("ComputeDomain").lists, 1);
    assert_eq!(counts.kind("ComputeDomain").watches, 1);
    assert_eq!(counts.watches_max, 0, "a forbidden watch is never opened");
    assert_eq!(counts.kind("Namespace").forbidden, 2);
    assert_eq!(counts.kind("ConfigMap").forbidden, 1);
}

#[test]
fn a_list_with_selectors_pages_and_a_resource_version() {
    let standin = standin(everything());
    let list = get(
        &standin,
        "/api/v1/namespaces/team-a/configmaps?fieldSelector=metadata.name%3Dnccl-env&resourceVersion=0&resourceVersionMatch=NotOlderThan&limit=500",
    )
    .json();
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["apiVersion"], "v1");
    let revision: u64 = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(revision > 0);
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["metadata"]["name"], "nccl-env");
    assert!(
        items[0].get("kind").is_none(),
        "a built-in kind's items carry no kind"
    );
    let by_label = get(
        &standin,
        "/api/v1/namespaces/team-a/configmaps?labelSelector=job%3Dgpt",
    )
    .json();
    assert_eq!(by_label["items"][0]["metadata"]["name"], "other");
    let everywhere = get(
        &standin,
        "/api/v1/configmaps?fieldSelector=metadata.name%3Dnccl-env",
    )
    .json();
    assert_eq!(everywhere["items"].as_array().unwrap().len(), 2);
    let domains = get(
        &standin,
        "/apis/resource.nvidia.com/v1beta1/namespaces/team-a/computedomains",
    )
    .json();
    assert_eq!(domains["kind"], "ComputeDomainList");
    assert_eq!(
        domains["items"][0]["kind"], "ComputeDomain",
        "a custom resource's items carry their kind"
    );
    let unsupported = get(
        &standin,
        "/apis/resource.nvidia.com/v1beta1/namespaces/team-a/computedomains?fieldSelector=spec.numNodes%3D0",
    );
    assert_eq!(unsupported.status, 400);
    assert_eq!(
        unsupported.json()["message"],
        "field label not supported: spec.numNodes"
    );
    // Pages of one.
    let first = get(&standin, "/api/v1/namespaces/team-a/configmaps?limit=1").json();
    assert_eq!(first["items"].as_array().unwrap().len(), 1);
    assert_eq!(first["metadata"]["remainingItemCount"], 1);
    let token = first["metadata"]["continue"].as_str().unwrap();
    let second = get(
        &standin,
        &format!("/api/v1/namespaces/team-a/configmaps?limit=1&continue={token}"),
    )
    .json();
    assert_eq!(second["items"][0]["metadata"]["name"], "other");
    assert!(second["metadata"].get("continue").is_none());
    assert_eq!(standin.counters().kind("ConfigMap").lists, 5);
}

#[test]
fn a_watch_after_a_list_as_kube_rs_watcher_asks_streams_changes_until_its_timeout() {
    let standin = Standin::start(Config {
        bookmark_interval: Duration::from_millis(300),
        ..Config::new(kinds())
            .objects(vec![domain("team-a", "llama")])
            .rules(everything())
    })
    .unwrap();
    let base = "/apis/resource.nvidia.com/v1beta1/namespaces/team-a/computedomains";
    // kube-rs 3.1's watcher (ListWatch): a LIST from any version, then a WATCH from the list's.
    let list = get(
        &standin,
        &format!("{base}?fieldSelector=metadata.name%3Dgpt&resourceVersion=0&resourceVersionMatch=NotOlderThan&limit=500"),
    )
    .json();
    assert_eq!(list["items"], json!([]));
    let revision = list["metadata"]["resourceVersion"].as_str().unwrap();
    let started = Instant::now();
    let mut events = Events::open(
        &standin,
        &format!(
            "{base}?watch=true&timeoutSeconds=2&fieldSelector=metadata.name%3Dgpt&allowWatchBookmarks=true&resourceVersion={revision}"
        ),
    );
    assert_eq!(standin.counters().watches_open, 1);
    standin.put(domain("team-a", "other")).unwrap();
    standin.put(domain("team-a", "gpt")).unwrap();
    let mut seen = Vec::new();
    while let Some(event) = events.next() {
        seen.push(event);
    }
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_secs(2) && elapsed < Duration::from_secs(4),
        "closed at timeoutSeconds: {elapsed:?}"
    );
    assert_eq!(seen[0]["type"], "ADDED");
    assert_eq!(seen[0]["object"]["metadata"]["name"], "gpt");
    assert_eq!(seen[0]["object"]["kind"], "ComputeDomain");
    let bookmarks: Vec<&Value> = seen[1..].iter().collect();
    assert!(!bookmarks.is_empty());
    for bookmark in bookmarks {
        assert_eq!(bookmark["type"], "BOOKMARK");
        assert_eq!(bookmark["object"]["kind"], "ComputeDomain");
        assert_eq!(
            bookmark["object"]["apiVersion"],
            "resource.nvidia.com/v1beta1"
        );
        assert!(bookmark["object"]["metadata"]["resourceVersion"].is_string());
    }
    let counts = standin.counters();
    assert_eq!(counts.watches_open, 0);
    assert_eq!(counts.watches_max, 1);
    assert_eq!(counts.kind("ComputeDomain").watches, 1);
    assert_eq!(counts.kind("ComputeDomain").watches_max, 1);
    assert_eq!(counts.kind("ComputeDomain").lists, 1);
}

#[test]
fn a_watch_from_nothing_or_a_streaming_list_starts_with_the_objects() {
    let standin = standin(everything());
    let base = "/api/v1/namespaces/team-a/configmaps";
    let mut from_zero = Events::open(
        &standin,
        &format!("{base}?watch=1&resourceVersion=0&timeoutSeconds=1"),
    );
    let names: Vec<Value> = std::iter::from_fn(|| from_zero.next())
        .map(|e| {
            assert_eq!(e["type"], "ADDED");
            e["object"]["metadata"]["name"].clone()
        })
        .collect();
    assert_eq!(names, [json!("nccl-env"), json!("other")]);
    let mut streaming = Events::open(
        &standin,
        &format!(
            "{base}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1&labelSelector=job%3Dllama"
        ),
    );
    let first = streaming.next().unwrap();
    assert_eq!(first["type"], "ADDED");
    assert_eq!(first["object"]["metadata"]["name"], "nccl-env");
    let end = streaming.next().unwrap();
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(
        end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    // A deletion reaches a watch that selects the object.
    let mut live = Events::open(
        &standin,
        &format!(
            "{base}?watch=true&resourceVersion={}&timeoutSeconds=1",
            end["object"]["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
        ),
    );
    assert!(standin.delete(&Kind::config_map(), "team-a", "other"));
    let deleted = live.next().unwrap();
    assert_eq!(deleted["type"], "DELETED");
    assert_eq!(deleted["object"]["metadata"]["name"], "other");
}

#[test]
fn a_watch_the_client_drops_is_closed() {
    let standin = Standin::start(Config {
        bookmark_interval: Duration::from_millis(100),
        ..Config::new(kinds()).rules(everything())
    })
    .unwrap();
    let events = Events::open(
        &standin,
        "/api/v1/namespaces/team-a/configmaps?watch=true&resourceVersion=5&allowWatchBookmarks=true",
    );
    assert_eq!(standin.counters().watches_open, 1);
    drop(events);
    let deadline = Instant::now() + Duration::from_secs(5);
    while standin.counters().watches_open > 0 {
        assert!(Instant::now() < deadline, "the watch stayed open");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(standin.counters().watches_max, 1);
}
