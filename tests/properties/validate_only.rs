//! `validateOnly` (behaviour.md §10): the injector's decision, answered without a patch. For every
//! drawn pod, namespace and preflight answer: a pod the injector leaves alone is accepted with the
//! same warnings, a pod it refuses is refused with the same message, a pod it changes is refused
//! in one line saying what it lacks; and the injector's output, as the API server stores it and
//! the audit scanner sends it, is left alone by the injector and accepted as it is by the
//! validate-only answer.

use crate::api_rules::typed_pod;
use crate::generators::case;
use crate::generators::host::{
    Answer, NamespaceAnswer, answers, host_answer, is_namespace, namespace_answer,
    namespace_answers,
};
use crate::generators::settings::validate_only_setting;
use crate::run::payload;
use fixtures::stored::{audit_request, stored};
use multinode_networking_policy::admission::{self, Verdict};
use proptest::prelude::*;
use serde_json::Value;

/// The host: `object` answers the reads of the objects an injection refers to, `namespace` the
/// namespace's read.
fn answering<'a>(
    object: &'a Answer,
    namespace: &'a NamespaceAnswer,
) -> impl Fn(&str, &[u8]) -> Result<Vec<u8>, String> + 'a {
    move |_: &str, request: &[u8]| {
        if is_namespace(request) {
            namespace_answer(namespace, request)
        } else {
            host_answer(object, request)
        }
    }
}

/// `validate_only` agrees with `injector` (behaviour.md §10).
fn agrees(injector: &Verdict, validate_only: &Verdict) -> Result<(), TestCaseError> {
    match (injector, validate_only) {
        (Verdict::Accept { .. }, _) | (Verdict::Reject { .. }, _) => {
            prop_assert_eq!(validate_only, injector);
        }
        (Verdict::Mutate { .. }, Verdict::Reject { message }) => {
            prop_assert!(
                message.starts_with("multi-node networking: this pod lacks the ")
                    && message.ends_with(" (validateOnly)")
                    && !message.chars().any(char::is_control),
                "{}",
                message
            );
        }
        _ => prop_assert!(
            false,
            "injector {:?}, validateOnly {:?}",
            injector,
            validate_only
        ),
    }
    Ok(())
}

proptest! {
    #![proptest_config(crate::config())]

    #[test]
    fn validate_only_agrees_with_the_injector_on_every_pod(
        (settings, pod) in case(),
        list in answers(),
        namespace in namespace_answers(),
        off in validate_only_setting(),
    ) {
        // The injector: validateOnly absent, false or null.
        let mut injecting = settings.clone();
        if let Some(value) = off.filter(|v| v != &Value::Bool(true)) {
            injecting["validateOnly"] = value;
        }
        let mut validating = settings.clone();
        validating["validateOnly"] = Value::Bool(true);
        let host = answering(&list, &namespace);
        let injector = admission::evaluate_with(&payload("CREATE", &pod, &injecting), &host);
        let validate_only = admission::evaluate_with(&payload("CREATE", &pod, &validating), &host);
        agrees(&injector, &validate_only)?;
        let encoded: Value =
            serde_json::from_slice(&admission::validate_with(&payload("CREATE", &pod, &validating), &host))
                .unwrap();
        prop_assert!(encoded["mutated_object"].is_null());
        // The wired pod as the API server stores it: the injector leaves it alone, and the
        // validate-only answer accepts what the injector accepts. (A pod the API server would not
        // have stored, with a field of the wrong type, is no stored pod.)
        if let Verdict::Mutate { pod: wired, .. } = &injector {
            let wired: Value = serde_json::from_slice(wired).unwrap();
            if typed_pod(&pod).is_ok() {
                let audit = audit_request(&stored(&wired));
                let payload_of = |settings: &Value| {
                    fixtures::payload(&audit, settings)
                };
                let again = admission::evaluate_with(&payload_of(&injecting), &host);
                prop_assert!(!matches!(again, Verdict::Mutate { .. }), "{:?}", again);
                let checked = admission::evaluate_with(&payload_of(&validating), &host);
                agrees(&again, &checked)?;
            }
        }
    }
}
