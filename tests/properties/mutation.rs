//! What a mutation may do: it is the last one (a second pass changes nothing), the
//! policy server's patch only adds, containers without GPUs are untouched, and the
//! mutated pod breaks no Kubernetes API rule that the input kept.

use crate::api_rules::as_list;
use crate::api_rules::typed_pod;
use crate::api_rules::violations;
use crate::generators::case;
use crate::inspect::gpu_resources;
use crate::inspect::gpus;
use crate::inspect::show;
use crate::patch_rule;
use crate::run::evaluate;
use crate::run::mutated_pod;
use crate::run::payload;
use multinode_networking_policy::admission;
use multinode_networking_policy::admission::Verdict;
use proptest::prelude::*;
use serde_json::Value;

proptest! {
    #![proptest_config(crate::config())]

    #[test]
    fn a_second_pass_changes_nothing((settings, pod) in case()) {
        if let Some(mutated) = mutated_pod(evaluate(&pod, &settings)) {
            prop_assert_ne!(&mutated, &pod, "a mutation that changes nothing");
            match evaluate(&mutated, &settings) {
                Verdict::Accept { .. } => {}
                other => prop_assert!(
                    false,
                    "second pass answered {:?}\ninput: {}\nfirst pass: {}",
                    other, show(&pod), show(&mutated)
                ),
            }
        }
    }

    #[test]
    fn the_patch_only_adds((settings, pod) in case()) {
        let bytes = payload("CREATE", &pod, &settings);
        if let Some(mutated) = mutated_pod(admission::evaluate(&bytes)) {
            if let Err(e) = patch_rule::checked_patch(&pod, &mutated, fixtures::record_key(&settings)) {
                prop_assert!(false, "{}\ninput: {}\nmutated: {}", e, show(&pod), show(&mutated));
            }
            // What the policy server reads: the encoded answer, decoded again.
            let answer: Value = serde_json::from_slice(&admission::validate(&bytes)).unwrap();
            prop_assert_eq!(&answer["mutated_object"], &mutated);
        }
    }

    #[test]
    fn containers_without_gpus_are_untouched((settings, pod) in case()) {
        if let Some(mutated) = mutated_pod(evaluate(&pod, &settings)) {
            let before = as_list(pod.pointer("/spec/containers"));
            let after = as_list(mutated.pointer("/spec/containers"));
            prop_assert_eq!(before.len(), after.len());
            let resources = gpu_resources(&settings);
            for (b, a) in before.iter().zip(after) {
                if gpus(b, &resources).is_none() {
                    prop_assert_eq!(b, a, "a container without GPUs changed");
                }
            }
            // Init containers are never changed; the sidecar is appended after them.
            let before = as_list(pod.pointer("/spec/initContainers"));
            let after = as_list(mutated.pointer("/spec/initContainers"));
            prop_assert!(after.len() >= before.len());
            prop_assert_eq!(before, &after[..before.len()]);
        }
    }

    #[test]
    fn mutated_pods_break_no_api_rule((settings, pod) in case()) {
        if let Some(mutated) = mutated_pod(evaluate(&pod, &settings)) {
            let before = violations(&pod);
            let new: Vec<_> = violations(&mutated).difference(&before).cloned().collect();
            prop_assert!(
                new.is_empty(),
                "the mutation broke {:?}\ninput: {}\nmutated: {}",
                new, show(&pod), show(&mutated)
            );
            if typed_pod(&pod).is_ok() {
                if let Err(e) = typed_pod(&mutated) {
                    prop_assert!(false, "k8s-openapi cannot read the mutated pod: {}\nmutated: {}", e, show(&mutated));
                }
            }
        }
    }
}
