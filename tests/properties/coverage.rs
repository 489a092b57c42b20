//! The generators and fixtures are what the properties assume: the fixtures' trigger is the
//! policy's default, the generators produce each case the properties are about in a minimum
//! share, and valid settings are valid.

use crate::api_rules::as_list;
use crate::api_rules::typed_pod;
use crate::generators::any::any_settings;
use crate::generators::case;
use crate::generators::host::is_namespace;
use crate::generators::machines::ACCELERATOR_LABEL;
use crate::generators::settings::valid_settings;
use crate::inspect::added_fabric;
use crate::robustness::Fate;
use crate::robustness::fate;
use crate::run::evaluate;
use crate::run::mutated_pod;
use crate::run::opted_in;
use crate::run::payload;
use fixtures::TRIGGERS;
use multinode_networking_policy::admission;
use multinode_networking_policy::admission::Verdict;
use multinode_networking_policy::cluster::NO_HOST;
use multinode_networking_policy::settings;
use proptest::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;

/// The fixtures crate cannot depend on the policy (the policy's tests depend on it), so it holds
/// its own copy of the default trigger key; here the two are held equal, or every fixture pod
/// built with `fixtures::TRIGGER` would stop being opted in without a test saying why.
#[test]
pub(crate) fn the_fixtures_trigger_is_the_policys_default() {
    assert_eq!(TRIGGERS, settings::DEFAULT_TRIGGERS);
}

/// The share of generated cases that each property is about, measured over a fixed sample: a
/// property over mutations checks nothing if the generator stops producing opted-in pods.
#[test]
pub(crate) fn the_generators_produce_the_cases_the_properties_are_about() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    const SAMPLE: usize = 1500;
    let mut runner = TestRunner::deterministic();
    let strategy = case();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut count = |what| *counts.entry(what).or_default() += 1;
    for _ in 0..SAMPLE {
        let (settings, pod) = strategy.new_tree(&mut runner).unwrap().current();
        let verdict = evaluate(&pod, &settings);
        let warnings = match &verdict {
            Verdict::Mutate { warnings, .. } | Verdict::Accept { warnings } => warnings.clone(),
            Verdict::Reject { .. } => Vec::new(),
        };
        match &verdict {
            Verdict::Mutate { .. } => count("mutated"),
            Verdict::Accept { .. } if !opted_in(&pod, &settings) => count("not opted in"),
            Verdict::Accept { .. } => count("opted in, accepted unchanged"),
            Verdict::Reject { .. } => count("rejected"),
        }
        let looked = std::cell::Cell::new(0);
        let host = |_: &str, request: &[u8]| {
            if !is_namespace(request) {
                looked.set(looked.get() + 1);
            }
            Err(NO_HOST.to_string())
        };
        admission::evaluate_with(&payload("CREATE", &pod, &settings), &host);
        if looked.get() > 0 {
            count("looks for an object");
        }
        let text = pod.to_string();
        if text.contains("amd.com/gpu") {
            count("asks for amd.com/gpu");
        }
        if settings.get("gpuResources").is_some() {
            count("gpuResources");
        }
        if pod["spec"].to_string().contains(ACCELERATOR_LABEL) {
            count("names a GKE accelerator");
        }
        if pod["spec"].get("resourceClaims").is_some() {
            count("resourceClaims");
        }
        if let Some(gcp) = settings.get("gcp").filter(|b| b["enabled"] == true) {
            if ["fabric", "tcpx", "rdma"]
                .iter()
                .any(|k| gcp.get(*k).is_some())
            {
                count("gcp fabric keys");
            }
        }
        let rows_with_keys = settings
            .as_object()
            .into_iter()
            .flat_map(|top| top.values())
            .filter_map(|block| block.get("instanceTypes").and_then(Value::as_object))
            .flat_map(|rows| rows.values())
            .filter_map(Value::as_object)
            .any(|row| {
                row.keys()
                    .any(|k| k != "devicesPerNode" && k != "gpusPerNode")
            });
        if rows_with_keys {
            count("rows as overlays");
        }
        let mutated: Option<Value> = match &verdict {
            Verdict::Mutate { pod, .. } => serde_json::from_slice(pod).ok(),
            _ => None,
        };
        let mutated_rdma = mutated.clone();
        match settings.get("recordAnnotation").and_then(Value::as_str) {
            Some("") => count("record off"),
            Some(_) => count("record elsewhere"),
            None => {}
        }
        let probed = mutated.as_ref().is_some_and(|m| {
            as_list(m.pointer("/spec/initContainers"))
                .iter()
                .any(|c| c.get("startupProbe").is_some())
        });
        if probed {
            count("mutated: startup probe");
        }
        if let Some(fabric) = mutated.and_then(|m| added_fabric(&pod, &m)) {
            count(fabric);
        }
        for (what, words) in [
            ("warned: fabrics differ", "machines of different fabrics"),
            ("warned: DRA only", "managed DRANET"),
            ("warned: NVLink claim", "multi-node NVLink domain"),
            ("warned: envFrom", "(envFrom), whose keys"),
            (
                "warned: whole node",
                "so it cannot use the node as intended",
            ),
        ] {
            if warnings.iter().any(|w| w.contains(words)) {
                count(what);
            }
        }
        if typed_pod(&pod).is_ok() {
            count("well-typed");
        }
        // The fifth kind of cluster (behaviour.md §3.9): its rails and its fixed networks.
        let rdma = &settings["rdma"];
        if rdma["enabled"] == true {
            if let Some(mutated) = &mutated_rdma {
                count("mutated: rdma block");
                let record = mutated["metadata"]["annotations"]
                    .as_object()
                    .and_then(|a| {
                        a.values()
                            .find_map(|v| v.as_str().filter(|v| v.contains("\"cloud\":\"rdma\"")))
                    });
                if record.is_some_and(|r| r.contains("\"rails\":")) {
                    count("mutated: rails");
                }
                if mutated["metadata"]["annotations"]
                    .get("k8s.v1.cni.cncf.io/networks")
                    .is_some()
                {
                    count("mutated: Multus list");
                }
            }
        }
        let spec = &pod["spec"];
        if spec.get("nodeSelector").is_some() || spec.get("affinity").is_some() {
            count("names where it runs");
        }
        let block = settings
            .as_object()
            .and_then(|top| top.values().find(|block| block["enabled"] == true));
        for key in ["env", "instanceTypes", "capabilities"] {
            if block.is_some_and(|block| block.get(key).is_some()) {
                count(key);
            }
        }
        // The fabric through DRA (behaviour.md §3.8).
        if block.is_some_and(|b| {
            b.get("deviceClaim").is_some() || b.pointer("/rdma/deviceClaim").is_some()
        }) {
            count("DRA settings");
            let claims = |pod: &Value| as_list(pod.pointer("/spec/resourceClaims")).len();
            if let Some(mutated) = mutated_pod(evaluate(&pod, &settings)) {
                if claims(&mutated) > claims(&pod) {
                    count("mutated: claim added");
                } else if claims(&pod) > 0 {
                    count("mutated: fabric claimed already");
                }
            }
        }
    }
    // Lower bounds well under what the generators produce today (mutated 34%, not opted in 25%,
    // opted in and accepted 36%, rejected 5%, well-typed 42%, naming where it runs 71%, env 39%,
    // instanceTypes 40%, capabilities 29%), so that only a generator gone wrong fails here.
    for (what, at_least) in [
        ("mutated", 30),
        ("not opted in", 5),
        ("opted in, accepted unchanged", 3),
        ("rejected", 1),
        ("well-typed", 20),
        ("names where it runs", 30),
        ("env", 10),
        ("instanceTypes", 10),
        ("capabilities", 5),
        // The preflight property's answers matter only where the policy looks.
        ("looks for an object", 5),
    ] {
        at_least_share(&counts, SAMPLE, what, at_least);
    }
    // The fabrics' and machines' inputs and outcomes, in per mille, bounds well under today's: pods asking for
    // amd.com/gpu 557‰, settings with gpuResources 309‰, pods naming a GKE accelerator 212‰,
    // with spec.resourceClaims 216‰, GCP blocks with fabric keys 341‰, rows setting more than
    // counts 372‰; each GCP fabric injected (TCPXO 45‰, TCPX 20‰, RDMA 49‰); the warnings of
    // candidates of different fabrics 14‰, of A4X Max 14‰, of an NVLink machine without a
    // claim 9‰, of a pod smaller than its whole-node fabric 79‰. DRA claims: settings with a
    // deviceClaim 296‰, a claim added 76‰, the fabric claimed by the pod already 5‰ (the A4X Max
    // warning fell to 4‰: a GCP claim for RDMA wires that machine). The record's: settings with the
    // record off 88‰, under another key 102‰; TCPXO daemons with the startup probe 7‰. The
    // `rdma` block's pods mutated 92‰, with rails 17‰, pods given a Multus list (OCI's and the
    // `rdma` block's) 76‰. A GPU container's `envFrom` source warned about (no host here: every
    // ConfigMap unread) 62‰. (Measured on each branch before they were merged.)
    for (what, at_least) in [
        ("asks for amd.com/gpu", 150),
        ("gpuResources", 100),
        ("names a GKE accelerator", 60),
        ("resourceClaims", 60),
        ("gcp fabric keys", 100),
        ("rows as overlays", 100),
        ("mutated: TCPXO", 15),
        ("mutated: TCPX", 7),
        ("mutated: RDMA", 15),
        ("warned: fabrics differ", 4),
        ("warned: DRA only", 4),
        ("warned: NVLink claim", 3),
        ("warned: whole node", 25),
        ("DRA settings", 100),
        ("mutated: claim added", 20),
        ("mutated: fabric claimed already", 2),
        ("record off", 30),
        ("record elsewhere", 30),
        ("mutated: startup probe", 3),
        ("mutated: rdma block", 40),
        ("mutated: rails", 8),
        ("mutated: Multus list", 20),
        ("warned: envFrom", 25),
    ] {
        at_least_per_mille(&counts, SAMPLE, what, at_least);
    }

    // `no_settings_make_it_panic` asserts something different for each fate of the settings
    // (today: valid 31%, trigger keys wrong 31%, a cloud block wrong 36%; rows only 2%, about
    // which it asserts nothing).
    let strategy = any_settings();
    let mut fates: BTreeMap<&str, usize> = BTreeMap::new();
    for _ in 0..SAMPLE {
        let settings = strategy.new_tree(&mut runner).unwrap().current();
        let what = match fate(&settings) {
            Fate::Valid => "valid",
            Fate::TriggerInvalid => "trigger keys wrong",
            Fate::CloudInvalid => "a cloud block wrong",
            Fate::RowsInvalid => "instance rows wrong",
        };
        *fates.entry(what).or_default() += 1;
    }
    for what in ["valid", "trigger keys wrong", "a cloud block wrong"] {
        at_least_share(&fates, SAMPLE, what, 15);
    }
}

/// The generators of valid settings make only settings the policy accepts: otherwise every case
/// drawn from them would test the refusal, not the injection.
#[test]
pub(crate) fn generated_valid_settings_are_accepted() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    let mut runner = TestRunner::deterministic();
    let strategy = valid_settings();
    for _ in 0..500 {
        let (settings, ..) = strategy.new_tree(&mut runner).unwrap().current();
        if let Err(e) = settings::check(&settings.to_string()) {
            panic!("{e:?}\nsettings: {settings}");
        }
    }
}

/// Fails unless `what` is at least `at_least` per mille of the `sample` cases `counts` tallies.
pub(crate) fn at_least_per_mille(
    counts: &BTreeMap<&str, usize>,
    sample: usize,
    what: &str,
    at_least: usize,
) {
    let share = counts.get(what).copied().unwrap_or(0) * 1000 / sample;
    assert!(
        share >= at_least,
        "only {share}‰ of generated cases are {what:?} (at least {at_least}‰ wanted): {counts:?}"
    );
}

/// Fails unless `what` is at least `at_least` percent of the `sample` cases `counts` tallies.
pub(crate) fn at_least_share(
    counts: &BTreeMap<&str, usize>,
    sample: usize,
    what: &str,
    at_least: usize,
) {
    let share = counts.get(what).copied().unwrap_or(0) * 100 / sample;
    assert!(
        share >= at_least,
        "only {share}% of generated cases are {what:?} (at least {at_least}% wanted): {counts:?}"
    );
}
