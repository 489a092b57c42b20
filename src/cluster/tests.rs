use std::cell::RefCell;

use serde_json::Value;

use super::*;

/// The policy server's words for a missing object (kubewarden-controller 1.36), as the guest
/// receives them.
fn missing(kind: &ObjectKind, namespace: &str, name: &str) -> String {
    format!(
        "Callback evaluation failure: Cannot find {}/{} named '{name}' inside of namespace 'Some(\"{namespace}\")'",
        kind.api_version, kind.kind
    )
}

/// A host over `objects`, as the policy server answers `get_resource`: the object of the kind
/// and name asked for (any namespace), or its words for a missing one; each request is kept in
/// `calls`.
pub(crate) fn fixture<'o>(
    objects: &'o [Value],
    calls: &'o RefCell<Vec<Value>>,
) -> impl Fn(&str, &[u8]) -> Result<Vec<u8>, String> + 'o {
    move |operation: &str, request: &[u8]| {
        assert_eq!(operation, GET);
        let request: Value = serde_json::from_slice(request).expect("JSON");
        calls.borrow_mut().push(request.clone());
        let name = request["name"].as_str().expect("a name");
        let found = objects
            .iter()
            .find(|o| o["kind"] == request["kind"] && o["metadata"]["name"] == name);
        match found {
            Some(object) => Ok(object.to_string().into_bytes()),
            None => Err(format!(
                "Callback evaluation failure: Cannot find {}/{} named '{name}' inside of namespace '{:?}'",
                request["api_version"].as_str().unwrap_or_default(),
                request["kind"].as_str().unwrap_or_default(),
                request["namespace"].as_str(),
            )),
        }
    }
}

#[test]
fn the_request_is_the_sdks_get_resource_request() {
    let text = request(&COMPUTE_DOMAIN, Some("team-a"), "llama");
    assert_eq!(
        std::str::from_utf8(&text).unwrap(),
        r#"{"api_version":"resource.nvidia.com/v1beta1","kind":"ComputeDomain","name":"llama","namespace":"team-a","disable_cache":true,"field_masks":["spec.channel.resourceClaimTemplate.name"]}"#
    );
    // A cluster-scoped kind names no namespace, and keeps the server's cache.
    let text = request(&NAMESPACE, None, "team-\"a\"");
    let value: serde_json::Value = serde_json::from_slice(&text).unwrap();
    assert_eq!(value["name"], "team-\"a\"");
    assert_eq!(value.get("namespace"), None);
    assert_eq!(value["disable_cache"], false);
    assert_eq!(value["field_masks"], serde_json::json!(["metadata.labels"]));
}

#[test]
fn what_each_answer_means() {
    let read = |answer: Result<&str, String>| {
        let host = move |_: &str, _: &[u8]| answer.clone().map(|a| a.as_bytes().to_vec());
        Cluster::new(Some("jobs"), Mode::Warn, &host)
            .get(&CONFIG_MAP, None, "nccl-env")
            .map(|text| text.to_string())
    };
    let object =
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"nccl-env"},"data":{"A":"1"}}"#;
    assert_eq!(read(Ok(object)), Ok(object.to_string()));
    // Without a name the object is taken as the one asked for.
    assert_eq!(read(Ok(r#"{"data":{}}"#)), Ok(r#"{"data":{}}"#.to_string()));
    assert_eq!(
        read(Err(missing(&CONFIG_MAP, "jobs", "nccl-env"))),
        Err(Unread::Missing)
    );
    // The missing words of another object, or of another kind, are not this one's.
    assert_eq!(
        read(Err(missing(&CONFIG_MAP, "jobs", "nccl-env-2"))),
        Err(Unread::Refused(Refusal::Failed))
    );
    assert_eq!(
        read(Err(missing(&NAMESPACE, "jobs", "nccl-env"))),
        Err(Unread::Refused(Refusal::Failed))
    );
    for garbage in [
        r#"{"metadata":{"name":"other"}}"#,
        "[]",
        "null",
        "3",
        "",
        "not json",
        r#"{"a":1"#,
    ] {
        assert_eq!(read(Ok(garbage)), Err(Unread::Unreadable), "{garbage}");
    }
    let host = |_: &str, _: &[u8]| Ok(vec![0xff, b'{']);
    let cluster = Cluster::new(Some("jobs"), Mode::Warn, &host);
    assert_eq!(cluster.get(&CONFIG_MAP, None, "x"), Err(Unread::Unreadable));
}

#[test]
fn the_hosts_errors_say_why_it_could_not_look() {
    for (text, why) in [
        (
            "Policy has not been granted access to Kubernetes v1/ConfigMap resources. The violation has been reported.",
            Refusal::NotGranted,
        ),
        (
            "Policy has not been granted access to the 'kubernetes/get_resource' host capability. The violation has been reported.",
            Refusal::NotGranted,
        ),
        (NO_HOST, Refusal::NotGranted),
        (
            r#"Callback evaluation failure: ApiError: configmaps "x" is forbidden: User "system:serviceaccount:kubewarden:policy-server" cannot get resource "configmaps" in API group "" in the namespace "jobs": Forbidden (ErrorResponse { status: "Failure", reason: "Forbidden", code: 403 })"#,
            Refusal::Forbidden,
        ),
        (
            "Callback evaluation failure: error finding resource resource.nvidia.com/v1beta1 / ComputeDomain: ApiError: 404 page not found",
            Refusal::NotServed,
        ),
        (
            "Callback evaluation failure: Cannot find resource v1/Frobnicator",
            Refusal::NotServed,
        ),
        (
            "Callback evaluation failure: connection refused",
            Refusal::Failed,
        ),
        ("", Refusal::Failed),
    ] {
        assert_eq!(Refusal::of(text), why, "{text}");
    }
    // Each reason has words of its own.
    let mut said: Vec<String> = [
        Unread::Skipped,
        Unread::NoNamespace,
        Unread::Missing,
        Unread::Refused(Refusal::NotGranted),
        Unread::Refused(Refusal::Forbidden),
        Unread::Refused(Refusal::NotServed),
        Unread::Refused(Refusal::Failed),
        Unread::Unreadable,
    ]
    .iter()
    .map(|why| why.why(&COMPUTE_DOMAIN))
    .collect();
    assert!(said[4].contains("may not get computedomains"));
    assert!(said[5].contains("resource.nvidia.com/v1beta1 ComputeDomain"));
    said.dedup();
    assert_eq!(said.len(), 8);
}

#[test]
fn one_call_per_object_and_none_without_a_namespace_or_with_skip() {
    let calls = RefCell::new(Vec::new());
    let host = |operation: &str, request: &[u8]| {
        assert_eq!(operation, GET);
        calls
            .borrow_mut()
            .push(String::from_utf8_lossy(request).into_owned());
        Err(missing(&CONFIG_MAP, "jobs", "a"))
    };
    let cluster = Cluster::new(Some("jobs"), Mode::Reject, &host);
    assert_eq!(cluster.namespace(), Some("jobs"));
    assert_eq!(cluster.mode(), Mode::Reject);
    for _ in 0..3 {
        assert_eq!(cluster.get(&CONFIG_MAP, None, "a"), Err(Unread::Missing));
        // The topology's read of the same ConfigMap is the same read.
        assert_eq!(
            cluster.get(&TOPOLOGY, Some("jobs"), "a"),
            Err(Unread::Missing)
        );
    }
    assert_eq!(calls.borrow().len(), 1);
    // Another namespace is another object.
    assert_eq!(
        cluster.get(&CONFIG_MAP, Some("other"), "a"),
        Err(Unread::Missing)
    );
    assert_eq!(calls.borrow().len(), 2);
    assert!(calls.borrow()[1].contains(r#""namespace":"other""#));

    for namespace in [None, Some("")] {
        let cluster = Cluster::new(namespace, Mode::Warn, &host);
        assert_eq!(
            cluster.get(&CONFIG_MAP, None, "a"),
            Err(Unread::NoNamespace)
        );
        // A cluster-scoped object needs none.
        assert!(matches!(
            cluster.get(&NAMESPACE, None, "jobs"),
            Err(Unread::Refused(_))
        ));
    }
    assert_eq!(calls.borrow().len(), 4);
    let skip = Cluster::new(Some("jobs"), Mode::Skip, &host);
    assert_eq!(skip.get(&CONFIG_MAP, None, "a"), Err(Unread::Skipped));
    assert_eq!(skip.get(&NAMESPACE, None, "jobs"), Err(Unread::Skipped));
    assert_eq!(calls.borrow().len(), 4);
    assert_eq!(no_host(GET, b"{}"), Err(NO_HOST.to_string()));
}

#[test]
fn modes_are_named_as_the_settings_write_them() {
    for (name, mode) in Mode::NAMES
        .iter()
        .zip([Mode::Warn, Mode::Reject, Mode::Skip])
    {
        assert_eq!(Mode::named(name), Some(mode));
    }
    assert_eq!(Mode::named("off"), None);
    assert_eq!(Mode::named("Warn"), None);
    assert_eq!(Mode::default(), Mode::Warn);
}
