//! What every pod gets: the same answer every time and for every layout of its payload;
//! a pod that did not opt in passes unchanged; a well-typed pod is never refused for a
//! JSON type.

use crate::api_rules::typed_pod;
use crate::generators::case;
use crate::inspect::show;
use crate::run::answer_of;
use crate::run::evaluate;
use crate::run::opted_in;
use crate::run::payload;
use fixtures::admission_request;
use fixtures::pod_kind;
use multinode_networking_policy::admission;
use multinode_networking_policy::admission::Verdict;
use multinode_networking_policy::error::Error;
use multinode_networking_policy::json::envelope::Envelope;
use multinode_networking_policy::json::object::{self, Object};
use multinode_networking_policy::{engine, settings};
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Value, json};

/// An object's JSON text, or its rejection's message.
fn written(object: Result<Object<'_>, Error>) -> Result<String, String> {
    object
        .map(|object| {
            let mut out = Vec::new();
            object.write(&mut out);
            String::from_utf8_lossy(&out).into_owned()
        })
        .map_err(|e| e.to_string())
}

proptest! {
    #![proptest_config(crate::config())]

    #[test]
    fn answers_are_deterministic((settings, pod) in case()) {
        let bytes = payload("CREATE", &pod, &settings);
        prop_assert_eq!(admission::evaluate(&bytes), admission::evaluate(&bytes));
        prop_assert_eq!(admission::validate(&bytes), admission::validate(&bytes));
    }

    #[test]
    fn well_typed_pods_are_never_refused_as_malformed((settings, pod) in case()) {
        // A pod Kubernetes' own types read is never refused for a JSON type: only for what the
        // README lists (a count that is not whole or too large, too many networks, an
        // unreadable network list).
        if typed_pod(&pod).is_ok() {
            if let Verdict::Reject { message } = evaluate(&pod, &settings) {
                prop_assert!(
                    !message.contains(" must be ") && !message.starts_with("cannot read"),
                    "{}\ninput: {}", message, show(&pod)
                );
            }
        }
    }

    #[test]
    fn pods_not_opted_in_pass_unchanged((settings, pod) in case(), operation in select(&["CREATE", "UPDATE", "DELETE", "CONNECT"][..])) {
        let verdict = admission::evaluate(&payload(operation, &pod, &settings));
        if operation != "CREATE" {
            prop_assert_eq!(verdict, Verdict::Accept { warnings: vec![] });
        } else if !opted_in(&pod, &settings) {
            prop_assert!(matches!(verdict, Verdict::Accept { .. }), "{:?}", verdict);
        }
    }

    #[test]
    fn every_layout_of_the_payload_gets_the_same_answer((settings, pod) in case()) {
        // An opted-in pod whose metadata comes first is read in the decision's pass; in any
        // other order of its members it is read a second time. Either way the answer is the one
        // for the compact payload.
        let request = admission_request("CREATE", &pod_kind(), &pod);
        let compact = fixtures::payload(&request, &settings);
        // The pod's members in reverse order (its spec before its metadata), as text: a JSON
        // value of the tests' serde_json writes its members sorted.
        let members: Vec<String> = pod
            .as_object()
            .into_iter()
            .flatten()
            .rev()
            .map(|(key, value)| format!("{}:{value}", Value::String(key.clone())))
            .collect();
        let reversed = serde_json::to_string(&request)
            .unwrap()
            .replacen(&pod.to_string(), &format!("{{{}}}", members.join(",")), 1);
        prop_assert_ne!(&reversed, &serde_json::to_string(&request).unwrap());
        let layouts = [
            serde_json::to_vec_pretty(&json!({"request": request, "settings": settings})).unwrap(),
            format!(" {{ \"settings\" : {settings} ,\n\t\"request\"\r\n:{request} }} ").into_bytes(),
            format!(r#"{{"requ\u0065st":{request},"settings":{settings}}}"#).into_bytes(),
            format!(r#"{{"request":{reversed},"settings":{settings}}}"#).into_bytes(),
        ];
        let expected = answer_of(admission::evaluate(&compact));
        for bytes in layouts {
            let text = std::str::from_utf8(&bytes).unwrap();
            prop_assert_eq!(answer_of(admission::evaluate(&bytes)), expected.clone(), "{}", text);
        }
    }

    #[test]
    fn a_pod_read_in_the_decisions_pass_is_the_pod_read_again((settings, pod) in case()) {
        let payload = fixtures::payload(&admission_request("CREATE", &pod_kind(), &pod), &settings);
        let text = std::str::from_utf8(&payload).unwrap();
        let mut envelope = Envelope::read(text, &engine::POD, &settings::DEFAULT_TRIGGERS).unwrap();
        if let Some(view) = envelope.request.object.as_mut().and_then(|pod| pod.view.take()) {
            prop_assert_eq!(written(view.into_object()), written(object::read_object(text, &engine::POD)));
        }
    }
}
