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
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::json;

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
        // The pod is read a second time from the request's own text, found between the
        // envelope's keys (peek::Envelope::request_text); where it is not found, from the whole
        // payload. Either way the answer is the one for the compact payload.
        let request = admission_request("CREATE", &pod_kind(), &pod);
        let compact = fixtures::payload(&request, &settings);
        let layouts = [
            (serde_json::to_vec_pretty(&json!({"request": request, "settings": settings})).unwrap(), true),
            (format!(" {{ \"settings\" : {settings} ,\n\t\"request\"\r\n:{request} }} ").into_bytes(), true),
            (format!(r#"{{"requ\u0065st":{request},"settings":{settings}}}"#).into_bytes(), false),
        ];
        let expected = answer_of(admission::evaluate(&compact));
        for (bytes, found) in layouts {
            let text = std::str::from_utf8(&bytes).unwrap();
            let envelope: multinode_networking_policy::json::envelope::Envelope<'_> =
                multinode_networking_policy::json::lenient::read(text).unwrap();
            prop_assert_eq!(envelope.request_text(text).is_some(), found, "{}", text);
            prop_assert_eq!(answer_of(admission::evaluate(&bytes)), expected.clone(), "{}", text);
        }
    }
}
