//! The preflight's reads of the cluster: no answer traps, and only a missing object changes the
//! answer (behaviour.md §9).

use crate::generators::case;
use crate::generators::host::Answer;
use crate::generators::host::answers;
use crate::generators::host::host_answer;
use crate::generators::host::is_namespace;
use crate::generators::host::namespace_answer;
use crate::generators::host::namespace_answers;
use crate::generators::host::refusing;
use crate::run::opted_in;
use crate::run::payload;
use multinode_networking_policy::admission;
use multinode_networking_policy::admission::Verdict;
use multinode_networking_policy::cluster::NO_HOST;
use proptest::prelude::*;
use serde_json::Value;

/// `after` is `before` and the preflight's warning about one missing object.
/// `after` is `before` and then one preflight warning for each of the `missing` objects
/// (behaviour.md §9: one more warning per missing object, after the others).
pub(crate) fn warnings_for_missing(before: &[String], after: &[String], missing: usize) -> bool {
    after.len() == before.len() + missing
        && after.starts_with(before)
        && after[before.len()..]
            .iter()
            .all(|w| w.contains("does not exist, and this pod refers to it"))
}

/// Whether `after` has what the restricted level refuses and `before` had not (Pod Security
/// Standards: any capability added but NET_BIND_SERVICE, any hostPath volume), read off the two
/// pods: a container's capability it lacked, a container it lacked with one, a hostPath volume.
fn adds_refusable(before: &Value, after: &Value) -> bool {
    let capabilities = |pod: &Value, name: &Value| -> Vec<Value> {
        ["containers", "initContainers"]
            .iter()
            .filter_map(|list| pod["spec"][list].as_array())
            .flatten()
            .filter(|c| &c["name"] == name)
            .filter_map(|c| c["securityContext"]["capabilities"]["add"].as_array())
            .flatten()
            .cloned()
            .collect()
    };
    let containers = ["containers", "initContainers"]
        .iter()
        .filter_map(|list| after["spec"][list].as_array())
        .flatten();
    let gained_capability = containers.into_iter().any(|c| {
        let had = capabilities(before, &c["name"]);
        capabilities(after, &c["name"])
            .iter()
            .any(|cap| cap != "NET_BIND_SERVICE" && !had.contains(cap))
    });
    let host_paths = |pod: &Value| -> Vec<Value> {
        pod["spec"]["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| v.get("hostPath").is_some())
            .map(|v| v["name"].clone())
            .collect()
    };
    let had = host_paths(before);
    gained_capability || host_paths(after).iter().any(|v| !had.contains(v))
}

/// The Multus networks named anywhere in an `rdma` block (its own, its rails', its rows'): the
/// most objects one of its pods can refer to.
fn networks_named(block: &Value) -> usize {
    match block {
        Value::Object(members) => members
            .iter()
            .map(|(key, value)| match (key.as_str(), value) {
                ("network", _) => 1,
                ("networks", Value::Array(list)) => list.len(),
                _ => networks_named(value),
            })
            .sum(),
        Value::Array(items) => items.iter().map(networks_named).sum(),
        _ => 0,
    }
}

proptest! {
    #![proptest_config(crate::config())]

    #[test]
    fn preflight_answers_never_trap_and_only_a_missing_object_speaks(
        (settings, pod) in case(),
        answer in answers(),
    ) {
        // The ConfigMaps containers take env from are read too (behaviour.md §4, the property of
        // `env_from.rs`), and a multi-node NVLink pod's ComputeDomain (§3.11, `nvlink.rs`'s):
        // what this answer means for them is theirs.
        let (mut pod, mut settings) = (pod, settings);
        without_env_from(&mut pod);
        if let Some(settings) = settings.as_object_mut() {
            settings.remove("computeDomain");
        }
        let bytes = payload("CREATE", &pod, &settings);
        let without = admission::evaluate(&bytes);
        let calls = std::cell::RefCell::new(Vec::new());
        let host = |_: &str, request: &[u8]| {
            if is_namespace(request) {
                // The namespace says nothing here: the next property is about it.
                return Err(NO_HOST.to_string());
            }
            calls.borrow_mut().push(request.to_vec());
            host_answer(&answer, request)
        };
        let with = admission::evaluate_with(&bytes, &host);
        let encoded: Value = serde_json::from_slice(&admission::validate_with(&bytes, &host)).unwrap();
        prop_assert!(encoded["accepted"].is_boolean());
        let calls = calls.into_inner();
        // A pod whose containers name claims has them read too (behaviour.md §3.10, the
        // properties of `claims.rs`): what this answer means for them is theirs.
        if names_claims(&pod) {
            prop_assume!(false);
        }
        // Each call looks for one object: at most one per object, two evaluations here.
        let mut objects = calls.clone();
        objects.sort();
        objects.dedup();
        // Azure's topology and a claim's template are the most one pod of the four clouds refers
        // to; an `rdma` pod refers to networks the settings name, each once.
        let most = 2.max(networks_named(&settings["rdma"]));
        prop_assert!(objects.len() <= most && calls.len() <= 2 * objects.len(), "{:?}", calls);
        let mode = settings.get("preflight").and_then(Value::as_str).unwrap_or("warn");
        if mode == "skip" || !opted_in(&pod, &settings) {
            prop_assert!(calls.is_empty());
        }
        let missing = matches!(answer, Answer::Missing) && !calls.is_empty();
        match (&without, &with) {
            _ if !missing => prop_assert_eq!(&with, &without),
            (_, Verdict::Reject { message }) if mode == "reject" => {
                prop_assert!(message.contains("does not exist, and this pod refers to it"), "{}", message);
            }
            (
                Verdict::Mutate { pod: a, warnings: w, record: r },
                Verdict::Mutate { pod: b, warnings: v, record: q },
            ) if mode != "reject" => {
                prop_assert_eq!(a, b);
                prop_assert_eq!(r, q);
                prop_assert!(warnings_for_missing(w, v, objects.len()), "{:?} then {:?}", w, v);
            }
            (Verdict::Accept { warnings: w }, Verdict::Accept { warnings: v }) if mode != "reject" => {
                prop_assert!(warnings_for_missing(w, v, objects.len()), "{:?} then {:?}", w, v);
            }
            _ => prop_assert!(false, "without a host {:?}, with {:?}", without, with),
        }
    }
}

/// `pod` without its containers' `envFrom`.
fn without_env_from(pod: &mut Value) {
    let containers = pod
        .pointer_mut("/spec/containers")
        .and_then(Value::as_array_mut);
    for container in containers.into_iter().flatten() {
        if let Some(container) = container.as_object_mut() {
            container.remove("envFrom");
        }
    }
}

/// Whether some container of `pod` names a claim in `resources.claims`.
fn names_claims(pod: &Value) -> bool {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| {
            c.pointer("/resources/claims")
                .and_then(Value::as_array)
                .is_some_and(|claims| !claims.is_empty())
        })
}

proptest! {
    #![proptest_config(crate::config())]

    /// The namespace's Pod Security level (behaviour.md §11): read once, only for a pod the
    /// policy changes and not with `preflight: skip`; only an enforced baseline or restricted
    /// level speaks, with a warning after the others or, with `reject`, a refusal; every other
    /// answer leaves the answer as it was.
    #[test]
    fn only_a_refusing_level_speaks_and_only_for_a_changed_pod(
        (settings, pod) in case(),
        answer in namespace_answers(),
    ) {
        let bytes = payload("CREATE", &pod, &settings);
        let without = admission::evaluate(&bytes);
        let reads = std::cell::Cell::new(0);
        let host = |_: &str, request: &[u8]| {
            if !is_namespace(request) {
                return Err(NO_HOST.to_string());
            }
            reads.set(reads.get() + 1);
            namespace_answer(&answer, request)
        };
        let with = admission::evaluate_with(&bytes, &host);
        let mode = settings.get("preflight").and_then(Value::as_str).unwrap_or("warn");
        // Read only where the mutation adds what some level refuses (behaviour.md §11).
        let refusable = match &without {
            Verdict::Mutate { pod: mutated, .. } => {
                adds_refusable(&pod, &serde_json::from_slice(mutated).unwrap())
            }
            _ => false,
        };
        // A request without a namespace is not looked at (behaviour.md §9).
        let namespaced = pod["metadata"]["namespace"].as_str().is_some_and(|ns| !ns.is_empty());
        prop_assert_eq!(reads.get(), usize::from(refusable && mode != "skip" && namespaced));
        let speaks = |said: &str| said.contains("enforces the Pod Security level");
        match (&without, &with) {
            _ if !refusing(&answer) || reads.get() == 0 => prop_assert_eq!(&with, &without),
            (Verdict::Mutate { .. }, Verdict::Reject { message }) if mode == "reject" => {
                prop_assert!(speaks(message), "{}", message);
            }
            (
                Verdict::Mutate { pod: a, warnings: w, record: r },
                Verdict::Mutate { pod: b, warnings: v, record: q },
            ) => {
                prop_assert_eq!(a, b);
                prop_assert_eq!(r, q);
                prop_assert!(v.len() <= w.len() + 1 && v.starts_with(w), "{:?} then {:?}", w, v);
                prop_assert!(v[w.len()..].iter().all(|s| speaks(s)), "{:?}", v);
                prop_assert!(mode != "reject" || v.len() == w.len());
            }
            _ => prop_assert!(false, "without a host {:?}, with {:?}", without, with),
        }
    }
}
