//! The channel a pod gets, from the settings, its labels and claims and the cluster's answer.

use std::cell::RefCell;

use crate::cluster::tests::fixture as cluster;

use serde_json::{Value, json};

use super::*;
use crate::claims::{Counted, Origin, PodClaim};
use crate::cluster::{Host, Refusal};
use crate::engine::POD;

/// A ComputeDomain as the DRA driver's CRD holds it (kubernetes-sigs/dra-driver-nvidia-gpu
/// `demo/specs/imex/`), in namespace `jobs`.
fn domain(name: &str, template: &str) -> Value {
    json!({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
           "metadata": {"name": name, "namespace": "jobs"},
           "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": template}}}})
}

fn pod_text(labels: Value, claims: Value) -> String {
    crate::merge::tests::payload(&json!({
        "metadata": {"name": "w", "namespace": "jobs", "labels": labels},
        "spec": {"resourceClaims": claims, "containers": [{"name": "t"}]}
    }))
}

/// The channel of a pod of `labels` and pod claims `claims` (read as `read`), with `setting`.
fn channel_of(
    setting: &ComputeDomain<'_>,
    mode: Mode,
    (labels, claims, read): (Value, Value, Vec<PodClaim<'static>>),
    host: Option<Host<'_>>,
) -> Result<Channel, Error> {
    let text = pod_text(labels, claims);
    let pod = crate::json::object::read_object(&text, &POD).expect("a pod");
    let spec = crate::merge::object(&pod, "spec").unwrap().unwrap();
    let claims = PodClaims {
        claims: read,
        namespace: Some("jobs".into()),
    };
    let namespace = host.is_some().then_some("jobs");
    let host = host.unwrap_or(&crate::cluster::no_host);
    let cluster = Cluster::new(namespace, mode, host);
    super::channel(setting, &pod, spec, &claims, &cluster)
}

fn job_label() -> ComputeDomain<'static> {
    ComputeDomain::FromLabel(vec!["jobset.sigs.k8s.io/jobset-name".into()])
}

fn bare(labels: Value) -> (Value, Value, Vec<PodClaim<'static>>) {
    (labels, Value::Null, Vec::new())
}

#[test]
fn the_domain_the_label_names_is_read_once_for_its_template() {
    let objects = [domain("llama", "llama-channel"), domain("other", "x")];
    let calls = RefCell::new(Vec::new());
    let host = cluster(&objects, &calls);
    let labels = json!({"jobset.sigs.k8s.io/jobset-name": "llama"});
    let got = channel_of(&job_label(), Mode::Warn, bare(labels), Some(&host));
    assert_eq!(
        got,
        Ok(Channel::Join(Domain {
            object: "jobs/llama".into(),
            template: "llama-channel".into()
        }))
    );
    assert_eq!(
        *calls.borrow(),
        [
            json!({"api_version": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
                "name": "llama", "namespace": "jobs", "disable_cache": true,
                "field_masks": ["spec.channel.resourceClaimTemplate.name"]})
        ]
    );
    // A standing domain by name: no label needed.
    let named = ComputeDomain::Named("other".into());
    let got = channel_of(&named, Mode::Warn, bare(json!({})), Some(&host));
    assert!(matches!(got, Ok(Channel::Join(Domain { template, .. })) if template == "x"));
}

#[test]
fn a_pod_that_has_its_channel_gets_none_and_one_that_may_have_it_none_either() {
    let objects = [domain("llama", "llama-channel")];
    let calls = RefCell::new(Vec::new());
    let host = cluster(&objects, &calls);
    let labels = json!({"jobset.sigs.k8s.io/jobset-name": "llama"});
    // Its own claim from the domain's template (the vendors' workers): found after the read.
    let own = json!([{"name": "cd", "resourceClaimTemplateName": "llama-channel"}]);
    let got = channel_of(
        &job_label(),
        Mode::Warn,
        (labels.clone(), own, Vec::new()),
        Some(&host),
    );
    assert_eq!(got, Ok(Channel::Untouched));
    assert_eq!(calls.borrow().len(), 1);
    // A claim of the channel's class (Grove's mnnvl-claim), or one that could not be read: no
    // read at all.
    let claim = |devices| PodClaim {
        name: "mnnvl-claim".into(),
        source: Origin::Template("pcs-0-g".into()),
        devices,
    };
    let channel = Counted {
        channel: true,
        ..Counted::default()
    };
    let refused = Err(Unread::Refused(Refusal::Forbidden));
    for devices in [Ok(channel), refused, Err(Unread::Missing)] {
        let claims = json!([{"name": "mnnvl-claim", "resourceClaimTemplateName": "pcs-0-g"}]);
        let read = vec![claim(devices)];
        let got = channel_of(
            &job_label(),
            Mode::Reject,
            (labels.clone(), claims, read),
            Some(&host),
        );
        assert_eq!(got, Ok(Channel::Untouched), "{devices:?}");
    }
    assert_eq!(calls.borrow().len(), 1);
}

/// The warning of a pod without its channel, which says what it lacks and what happens.
fn warned(got: Result<Channel, Error>) -> String {
    match got {
        Ok(Channel::Without(warning)) => {
            assert!(
                warning.contains("NCCL_MNNVL_ENABLE=0")
                    && warning.contains("mpirun -x NCCL_MNNVL_ENABLE=1"),
                "{warning}"
            );
            warning
        }
        other => panic!("no warning: {other:?}"),
    }
}

#[test]
fn a_missing_domain_or_label_warns_or_refuses_by_preflight() {
    let objects = [domain("llama", "llama-channel")];
    let calls = RefCell::new(Vec::new());
    let host = cluster(&objects, &calls);
    let missing = json!({"jobset.sigs.k8s.io/jobset-name": "gpt"});
    let warning = warned(channel_of(
        &job_label(),
        Mode::Warn,
        bare(missing.clone()),
        Some(&host),
    ));
    assert!(
        warning.starts_with("multi-node networking: ComputeDomain jobs/gpt (named by the pod's label jobset.sigs.k8s.io/jobset-name) does not exist"),
        "{warning}"
    );
    assert!(warning.contains("in namespace jobs"), "{warning}");
    let refused = channel_of(&job_label(), Mode::Reject, bare(missing), Some(&host))
        .unwrap_err()
        .to_string();
    assert!(
        refused.starts_with("multi-node networking: ComputeDomain jobs/gpt")
            && refused.ends_with("(preflight: reject refuses such a pod)"),
        "{refused}"
    );
    assert_eq!(calls.borrow().len(), 2);
    // No label, or one that names no object: no read.
    let warning = warned(channel_of(
        &job_label(),
        Mode::Warn,
        bare(json!({"app": "x"})),
        Some(&host),
    ));
    assert!(
        warning.starts_with(
            "multi-node networking: the pod has no label jobset.sigs.k8s.io/jobset-name"
        ),
        "{warning}"
    );
    let odd = json!({"jobset.sigs.k8s.io/jobset-name": "Llama_3"});
    let warning = warned(channel_of(
        &job_label(),
        Mode::Warn,
        bare(odd.clone()),
        Some(&host),
    ));
    assert!(
        warning.contains("is \"Llama_3\", which is no ComputeDomain name"),
        "{warning}"
    );
    for labels in [json!({}), odd, json!("not an object")] {
        let got = channel_of(&job_label(), Mode::Reject, bare(labels), Some(&host));
        assert!(got.is_err());
    }
    assert_eq!(calls.borrow().len(), 2);
}

#[test]
fn a_read_that_fails_warns_and_never_refuses() {
    let named = ComputeDomain::Named("llama".into());
    let refused = |_: &str, _: &[u8]| {
        Err("Policy has not been granted access to Kubernetes resource.nvidia.com/v1beta1/ComputeDomain resources. The violation has been reported.".to_string())
    };
    let forbidden = |_: &str, _: &[u8]| {
        Err(r#"Callback evaluation failure: ApiError: computedomains.resource.nvidia.com "llama" is forbidden: Forbidden"#.to_string())
    };
    let unserved = |_: &str, _: &[u8]| {
        Err("Callback evaluation failure: error finding resource resource.nvidia.com/v1beta1 / ComputeDomain: 404 page not found".to_string())
    };
    let garbage = |_: &str, _: &[u8]| Ok(b"{\"items\": 3}".to_vec());
    let no_template = |_: &str, _: &[u8]| {
        let domain = json!({"metadata": {"name": "llama"}, "spec": {"numNodes": 0}});
        Ok(domain.to_string().into_bytes())
    };
    for mode in [Mode::Warn, Mode::Reject] {
        for (host, why, then) in [
            (
                &refused as Host<'_>,
                "the policy may not read ComputeDomains (an AdmissionPolicy, or a ClusterAdmissionPolicy whose contextAwareResources lack resource.nvidia.com/v1beta1 ComputeDomain)",
                "deploy the policy as a ClusterAdmissionPolicy listing resource.nvidia.com/v1beta1 ComputeDomain in its contextAwareResources",
            ),
            (
                &forbidden,
                "the policy server's ServiceAccount may not get computedomains",
                "let the policy server's ServiceAccount get computedomains",
            ),
            (
                &unserved,
                "the cluster does not serve resource.nvidia.com/v1beta1 ComputeDomain",
                "install what serves resource.nvidia.com/v1beta1 ComputeDomain",
            ),
        ] {
            let warning = warned(channel_of(&named, mode, bare(json!({})), Some(host)));
            let read =
                format!("multi-node networking: could not read ComputeDomain jobs/llama: {why}");
            assert!(warning.starts_with(&read), "{warning}");
            assert!(warning.contains(then), "{warning}");
        }
        for host in [&garbage as Host<'_>, &no_template] {
            let warning = warned(channel_of(&named, mode, bare(json!({})), Some(host)));
            assert!(
                warning.contains("could not read ComputeDomain jobs/llama"),
                "{warning}"
            );
        }
        // No namespace, no host: nothing to read from.
        let warning = warned(channel_of(&named, mode, bare(json!({})), None));
        assert!(
            warning.contains("the request names no namespace"),
            "{warning}"
        );
    }
}

#[test]
fn of_several_labels_the_first_the_pod_carries_names_the_domain() {
    let objects = [
        domain("trainer", "t-channel"),
        domain("child-0", "c-channel"),
    ];
    let calls = RefCell::new(Vec::new());
    let host = cluster(&objects, &calls);
    let setting = ComputeDomain::FromLabel(vec![
        "jobset.sigs.k8s.io/jobset-name".into(),
        "batch.kubernetes.io/job-name".into(),
    ]);
    // A JobSet's pod carries both: its child Job's name too, which names no domain of the job.
    let both = json!({"jobset.sigs.k8s.io/jobset-name": "trainer",
                      "batch.kubernetes.io/job-name": "child-0"});
    let got = channel_of(&setting, Mode::Warn, bare(both), Some(&host));
    assert!(matches!(got, Ok(Channel::Join(Domain { template, .. })) if template == "t-channel"));
    // A plain Job's pod carries the last.
    let plain = json!({"batch.kubernetes.io/job-name": "child-0"});
    let got = channel_of(&setting, Mode::Warn, bare(plain), Some(&host));
    assert!(matches!(got, Ok(Channel::Join(Domain { template, .. })) if template == "c-channel"));
    // Neither: the warning names them all.
    let warning = warned(channel_of(
        &setting,
        Mode::Warn,
        bare(json!({})),
        Some(&host),
    ));
    assert!(
        warning.starts_with("multi-node networking: the pod has none of the labels jobset.sigs.k8s.io/jobset-name, batch.kubernetes.io/job-name, whose first the pod carries names its job's ComputeDomain (computeDomain.fromLabel)"),
        "{warning}"
    );
}
