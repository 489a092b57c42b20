//! When the policy acts (behaviour.md §2): a Pod CREATE, opted in by the trigger annotation, owned
//! as configured. Decided from the peeked metadata alone.

use std::borrow::Cow;

use crate::json::envelope::{PodPeek, Request};
use crate::json::lenient::Entry;
use crate::settings::Common;

#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Not ours: accept unchanged.
    Pass,
    /// Not ours, but the user probably meant it to be: accept unchanged and say why.
    PassWithWarning(String),
    /// Opted in: read the pod and inject, with a warning where the opt-out is a near miss.
    Inject(Option<String>),
}

/// Whether `request` is a Pod CREATE; pods cannot be changed after creation, and a patch on
/// UPDATE would be refused by the API server on every later update.
pub fn is_pod_create(request: &Request<'_>) -> bool {
    let kind = &request.kind.0;
    request.operation.0.as_str() == Some("CREATE")
        && kind.group.as_str().unwrap_or("").is_empty()
        && kind.version.as_str() == Some("v1")
        && kind.kind.as_str() == Some("Pod")
}

/// How the trigger keys combine (behaviour.md §2): any key exactly `"true"` opts the pod in;
/// otherwise the first key, in the settings' order, whose value is a near miss is warned about.
/// Likewise for the opt-out keys, any `"true"` keeping the pod out.
pub fn decide(pod: &PodPeek<'_>, config: &Common<'_>) -> Decision {
    let mut triggers = values(pod, &config.triggers);
    if !triggers.clone().any(|(_, value)| value == "true") {
        return match triggers.find(|(_, value)| near_miss(value)) {
            Some((key, value)) => Decision::PassWithWarning(format!(
                "annotation {key} is {value:?}; multi-node networking is injected only when it is exactly \"true\""
            )),
            None => Decision::Pass,
        };
    }
    // The opt-out wins over the trigger: a job controller sets the trigger on every worker, and
    // a pod that brings its own wiring (an NCCL test, a debug pod) needs a way to stay untouched.
    let mut opt_outs = values(pod, &config.opt_outs);
    if let Some((key, _)) = opt_outs.clone().find(|(_, value)| value == "true") {
        return Decision::PassWithWarning(format!(
            "multi-node networking not injected: annotation {key} is \"true\", which keeps the policy off this pod"
        ));
    }
    let warning = opt_outs.find(|(_, value)| near_miss(value)).map(|(key, value)| {
        format!(
            "annotation {key} is {value:?}; a pod is kept out of multi-node networking only when it is exactly \"true\""
        )
    });
    let owners = pod.owners();
    if owner_matches(&owners, config) {
        Decision::Inject(warning)
    } else {
        let owner = owners
            .iter()
            .find_map(|o| Some((o.api_version.as_str()?, o.kind.as_str()?)));
        Decision::PassWithWarning(match owner {
            Some((api_version, kind)) => format!(
                "multi-node networking not injected: owner {api_version} {kind} is not in the policy's ownerKinds and ownerApiGroups"
            ),
            None => "multi-node networking not injected: the pod has no owner reference, and the policy's ownerKinds and ownerApiGroups require one".to_string(),
        })
    }
}

/// The string values of `keys` on the pod, in the order of `keys`; a key the pod does not have,
/// or whose value is no string, is left out. An iterator, not a list: every request reads these,
/// and most pods are not opted in.
fn values<'p>(
    pod: &'p PodPeek<'_>,
    keys: &'p [Cow<'_, str>],
) -> impl Iterator<Item = (&'p str, Cow<'p, str>)> + Clone {
    keys.iter()
        .filter_map(|key| Some((key.as_ref(), pod.annotation(key)?)))
}

/// A value someone who meant "true" might have written.
fn near_miss(value: &str) -> bool {
    let value = value.trim();
    ["true", "yes", "y", "on", "1", "enabled", "enable"]
        .iter()
        .any(|meant| value.eq_ignore_ascii_case(meant))
}

/// Two independent conditions, as in the reference: some owner has a listed kind, and some owner
/// has a listed API group. An empty list accepts any owner, or none.
fn owner_matches(owners: &[Entry<'_>], config: &Common<'_>) -> bool {
    let kind_ok = config.owner_kinds.is_empty()
        || owners.iter().any(|o| {
            o.kind
                .as_str()
                .is_some_and(|k| config.owner_kinds.iter().any(|want| want == k))
        });
    let group_ok = config.owner_groups.is_empty()
        || owners.iter().any(|o| {
            o.api_version.as_str().is_some_and(|v| {
                let group = v.rsplit_once('/').map_or("", |(group, _)| group);
                config.owner_groups.iter().any(|want| want == group)
            })
        });
    kind_ok && group_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(extra: serde_json::Value) -> Common<'static> {
        let mut settings = json!({"gcp": {"enabled": true}});
        settings
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        // The configuration borrows from its text, which these tests keep for good.
        crate::settings::Config::read(Box::leak(settings.to_string().into_boxed_str()))
            .unwrap()
            .common
    }

    fn decide_on(metadata: serde_json::Value, config: &Common) -> Decision {
        let text = json!({"metadata": metadata}).to_string();
        decide(&PodPeek::from_json(&text), config)
    }

    const OPTED_IN: &str = "nmp.nvidia.com/enable-multi-node-networking";
    const OPTED_OUT: &str = "nmp.nvidia.com/disable-multi-node-networking";
    const HELIX_IN: &str = "nhx.nvidia.com/enable-multi-node-networking";
    const HELIX_OUT: &str = "nhx.nvidia.com/disable-multi-node-networking";

    #[test]
    fn nemo_helix_pods_opt_in_and_out_by_default() {
        let defaults = config(json!({}));
        let owner = json!([{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}]);
        let pod = |annotations: serde_json::Value| json!({"annotations": annotations, "ownerReferences": owner});
        assert_eq!(
            decide_on(pod(json!({HELIX_IN: "true"})), &defaults),
            Decision::Inject(None)
        );
        // Any trigger key "true" opts in, whatever the others say.
        assert_eq!(
            decide_on(pod(json!({OPTED_IN: "false", HELIX_IN: "true"})), &defaults),
            Decision::Inject(None)
        );
        assert_eq!(
            decide_on(pod(json!({OPTED_IN: "yes", HELIX_IN: "true"})), &defaults),
            Decision::Inject(None)
        );
        // None "true": the first near miss in the settings' order is named.
        let Decision::PassWithWarning(warning) =
            decide_on(pod(json!({HELIX_IN: "True", OPTED_IN: "yes"})), &defaults)
        else {
            panic!("a near miss")
        };
        assert!(
            warning.starts_with(&format!("annotation {OPTED_IN} is \"yes\"")),
            "{warning}"
        );
        let Decision::PassWithWarning(warning) =
            decide_on(pod(json!({OPTED_IN: "no", HELIX_IN: "True"})), &defaults)
        else {
            panic!("a near miss")
        };
        assert!(
            warning.starts_with(&format!("annotation {HELIX_IN} is \"True\"")),
            "{warning}"
        );
        // Any opt-out key "true" keeps the pod out, whichever trigger opted it in.
        for (trigger, opt_out) in [
            (OPTED_IN, HELIX_OUT),
            (HELIX_IN, OPTED_OUT),
            (HELIX_IN, HELIX_OUT),
        ] {
            let Decision::PassWithWarning(warning) =
                decide_on(pod(json!({trigger: "true", opt_out: "true"})), &defaults)
            else {
                panic!("{trigger} {opt_out}")
            };
            assert!(warning.contains(opt_out), "{warning}");
        }
        let Decision::Inject(Some(warning)) = decide_on(
            pod(json!({HELIX_IN: "true", HELIX_OUT: "yes", OPTED_OUT: "no"})),
            &defaults,
        ) else {
            panic!("a near-miss opt-out is wired as usual")
        };
        assert!(
            warning.starts_with(&format!("annotation {HELIX_OUT} is \"yes\"")),
            "{warning}"
        );
    }

    #[test]
    fn a_list_of_keys_replaces_the_default_keys() {
        let custom = config(json!({
            "triggerAnnotation": ["example.com/a", "example.com/b"],
            "optOutAnnotation": ["example.com/no"],
            "ownerKinds": [], "ownerApiGroups": []
        }));
        assert_eq!(custom.triggers, ["example.com/a", "example.com/b"]);
        assert_eq!(
            decide_on(json!({"annotations": {"example.com/b": "true"}}), &custom),
            Decision::Inject(None)
        );
        assert_eq!(
            decide_on(json!({"annotations": {HELIX_IN: "true"}}), &custom),
            Decision::Pass
        );
        assert!(matches!(
            decide_on(
                json!({"annotations": {"example.com/a": "true", HELIX_OUT: "true"}}),
                &custom
            ),
            Decision::Inject(None)
        ));
        assert!(matches!(
            decide_on(
                json!({"annotations": {"example.com/a": "true", "example.com/no": "true"}}),
                &custom
            ),
            Decision::PassWithWarning(_)
        ));
    }

    #[test]
    fn volcano_pytorchjob_and_jobset_pods_are_ours() {
        let defaults = config(json!({}));
        for (api_version, kind) in [
            ("batch.volcano.sh/v1alpha1", "Job"),
            ("kubeflow.org/v1", "PyTorchJob"),
            ("batch/v1", "Job"),
            ("run.ai/v2alpha1", "RunaiJob"),
        ] {
            let metadata = json!({"annotations": {OPTED_IN: "true"}, "ownerReferences": [{"apiVersion": api_version, "kind": kind}]});
            assert_eq!(
                decide_on(metadata, &defaults),
                Decision::Inject(None),
                "{api_version} {kind}"
            );
        }
    }

    #[test]
    fn only_the_exact_string_true_opts_in() {
        let owner = json!([{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"}]);
        let defaults = config(json!({}));
        for value in ["false", "", "maybe"] {
            let metadata = json!({"annotations": {OPTED_IN: value}, "ownerReferences": owner});
            assert_eq!(decide_on(metadata, &defaults), Decision::Pass, "{value}");
        }
        for value in ["True", "TRUE", " true", "yes", "1", "on"] {
            let metadata = json!({"annotations": {OPTED_IN: value}, "ownerReferences": owner});
            let Decision::PassWithWarning(warning) = decide_on(metadata, &defaults) else {
                panic!("{value}")
            };
            assert!(warning.contains(&format!("{value:?}")), "{warning}");
        }
        assert_eq!(
            decide_on(json!({"ownerReferences": owner}), &defaults),
            Decision::Pass
        );
        assert_eq!(
            decide_on(
                json!({"annotations": {OPTED_IN: true}, "ownerReferences": owner}),
                &defaults
            ),
            Decision::Pass
        );
    }

    #[test]
    fn kind_and_group_are_separate_conditions() {
        let defaults = config(json!({}));
        let wrong_group = json!({"annotations": {OPTED_IN: "true"}, "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Job"}]});
        assert!(
            matches!(decide_on(wrong_group, &defaults), Decision::PassWithWarning(w) if w.contains("owner"))
        );
        let wrong_kind = json!({"annotations": {OPTED_IN: "true"}, "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob"}]});
        assert!(matches!(
            decide_on(wrong_kind, &defaults),
            Decision::PassWithWarning(_)
        ));
        // Each condition may be met by a different owner.
        let split = json!({"annotations": {OPTED_IN: "true"}, "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "Job"}, {"apiVersion": "batch/v1", "kind": "CronJob"}]});
        assert_eq!(decide_on(split, &defaults), Decision::Inject(None));
        let orphan = json!({"annotations": {OPTED_IN: "true"}});
        assert!(matches!(
            decide_on(orphan.clone(), &defaults),
            Decision::PassWithWarning(_)
        ));
        let anyone = config(json!({"ownerKinds": [], "ownerApiGroups": []}));
        assert_eq!(decide_on(orphan, &anyone), Decision::Inject(None));
    }

    #[test]
    fn the_opt_out_keeps_an_opted_in_pod_untouched() {
        let defaults = config(json!({}));
        let owner = json!([{"apiVersion": "batch/v1", "kind": "Job"}]);
        let with = |value: &str| json!({"annotations": {OPTED_IN: "true", OPTED_OUT: value}, "ownerReferences": owner});
        let Decision::PassWithWarning(warning) = decide_on(with("true"), &defaults) else {
            panic!("opted out")
        };
        assert!(warning.contains(OPTED_OUT), "{warning}");
        for near in ["True", "yes", " 1"] {
            let Decision::Inject(Some(warning)) = decide_on(with(near), &defaults) else {
                panic!("{near}: a near miss is wired as usual")
            };
            assert!(warning.contains(&format!("{near:?}")), "{warning}");
        }
        for other in ["false", "", "later"] {
            assert_eq!(
                decide_on(with(other), &defaults),
                Decision::Inject(None),
                "{other}"
            );
        }
        // Without the trigger the opt-out changes nothing.
        let alone = json!({"annotations": {OPTED_OUT: "true"}, "ownerReferences": owner});
        assert_eq!(decide_on(alone, &defaults), Decision::Pass);
        let custom = config(json!({"optOutAnnotation": "example.com/own-wiring"}));
        let custom_out = json!({"annotations": {OPTED_IN: "true", "example.com/own-wiring": "true"}, "ownerReferences": owner});
        assert!(matches!(
            decide_on(custom_out, &custom),
            Decision::PassWithWarning(_)
        ));
    }

    #[test]
    fn the_trigger_key_is_configurable() {
        let custom = config(
            json!({"triggerAnnotation": "example.com/fast-net", "ownerKinds": [], "ownerApiGroups": []}),
        );
        assert_eq!(
            decide_on(
                json!({"annotations": {"example.com/fast-net": "true"}}),
                &custom
            ),
            Decision::Inject(None)
        );
        assert_eq!(
            decide_on(json!({"annotations": {OPTED_IN: "true"}}), &custom),
            Decision::Pass
        );
    }
}
