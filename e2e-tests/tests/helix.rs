//! NeMo Helix's keys do what NeMo Platform's do (behaviour.md §2): every mutation case whose pod
//! carries `nmp.nvidia.com/enable-multi-node-networking` under the default trigger keys is sent
//! again with the key renamed to `nhx.nvidia.com/…` (and again with the opt-out renamed too), and
//! the two answers must be the same, but for the key's name in the warnings and the pod. The
//! answers are compared with each other, not with copies of expected output, on every cloud.

use std::collections::BTreeMap;
use std::path::Path;

use e2e_tests::cases::{self, Case};
use e2e_tests::{Response, admission_request, policy};
use serde_json::{Map, Value};

const NMP: &str = "nmp.nvidia.com/";
const NHX: &str = "nhx.nvidia.com/";
const KEYS: [&str; 2] = [
    "enable-multi-node-networking",
    "disable-multi-node-networking",
];

/// The pod with its `nmp.` trigger (and, with `opt_out`, its `nmp.` opt-out) renamed to `nhx.`,
/// in place; `None` when it has no `nmp.` trigger.
fn renamed(pod: &Value, opt_out: bool) -> Option<Value> {
    let annotations = pod.pointer("/metadata/annotations")?.as_object()?;
    annotations.get(&format!("{NMP}{}", KEYS[0]))?;
    let renamed: Map<String, Value> = annotations
        .iter()
        .map(|(key, value)| {
            let key = match key.strip_prefix(NMP) {
                Some(name) if name == KEYS[0] || (opt_out && name == KEYS[1]) => {
                    format!("{NHX}{name}")
                }
                _ => key.clone(),
            };
            (key, value.clone())
        })
        .collect();
    let mut pod = pod.clone();
    pod["metadata"]["annotations"] = Value::Object(renamed);
    Some(pod)
}

/// An answer's parts: verdict, message, code, mutated pod, warnings, audit annotations.
type Answer = (
    bool,
    Option<String>,
    Option<u16>,
    Option<Value>,
    Vec<String>,
    Option<BTreeMap<String, String>>,
);

/// The answer with the Helix keys named as NeMo Platform's, to compare.
fn as_nmp(response: &Response) -> Answer {
    let back = |text: &str| {
        KEYS.iter().fold(text.to_string(), |text, key| {
            text.replace(&format!("{NHX}{key}"), &format!("{NMP}{key}"))
        })
    };
    let pod = response.mutated_object.as_ref().map(|pod| {
        let text = back(&pod.to_string());
        serde_json::from_str(&text).expect("renamed keys keep the pod JSON")
    });
    (
        response.accepted,
        response.message.as_deref().map(back),
        response.code,
        pod,
        response
            .warnings
            .iter()
            .flatten()
            .map(|w| back(w))
            .collect(),
        response.audit_annotations.clone(),
    )
}

#[test]
fn a_helix_pod_gets_what_the_same_nemo_platform_pod_gets_on_every_cloud() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let instance = policy().instance().unwrap();
    let mut compared: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    for (file, case) in cases::load::<Case>(&root.join("cases")).unwrap() {
        let Case {
            settings, object, ..
        } = &case;
        let custom = ["triggerAnnotation", "optOutAnnotation"]
            .iter()
            .any(|key| settings.get(key).is_some());
        if case.payload.is_some() || custom || object.to_string().contains(NHX) {
            continue;
        }
        let Some(cloud) = ["aws", "azure", "gcp", "oci"]
            .into_iter()
            .find(|cloud| settings[cloud]["enabled"] == true)
        else {
            continue;
        };
        let answer = |pod: &Value| {
            instance.set_cluster(case.cluster.clone());
            let request = admission_request(&case.operation, &case.kind, pod);
            instance.validate(&request, settings).unwrap()
        };
        let Some(helix) = renamed(object, false) else {
            continue;
        };
        let nmp = as_nmp(&answer(object));
        for (what, pod) in [
            ("the trigger", helix),
            (
                "the trigger and the opt-out",
                renamed(object, true).unwrap(),
            ),
        ] {
            if as_nmp(&answer(&pod)) != nmp {
                failures.push(format!(
                    "{} ({}): with {what} renamed to {NHX}… the answer differs",
                    case.name,
                    file.display()
                ));
            }
        }
        let count = compared.entry(cloud.to_string()).or_default();
        count.0 += 1;
        count.1 += usize::from(nmp.3.is_some());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for cloud in ["aws", "azure", "gcp", "oci"] {
        let (cases, mutated) = compared.get(cloud).copied().unwrap_or_default();
        assert!(
            cases >= 5 && mutated >= 3,
            "{cloud}: only {cases} cases compared, {mutated} of them mutated"
        );
    }
}
