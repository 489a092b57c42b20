//! Whole pods: volumes, owners, annotations, DRA claims, the pod security context, and the
//! pod built from them and its containers.

use crate::generators::CUSTOM_TRIGGER;
use crate::generators::containers::ContainerPlan;
use crate::generators::containers::MULTUS_VALUES;
use crate::generators::containers::OUR_VOLUMES;
use crate::generators::containers::POD_NULLS;
use crate::generators::containers::USER_VOLUMES;
use crate::generators::containers::container;
use crate::generators::containers::nulls;
use crate::generators::containers::set_nulls;
use crate::generators::containers::unknown_values;
use crate::generators::containers::volume_sources;
use crate::generators::machines::placement_part;
use fixtures::TRIGGER;
use fixtures::TRIGGERS;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::sample::select;
use proptest::sample::subsequence;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;
use std::collections::BTreeSet;

/// Pod volumes: each name once, with one of the sources.
pub(crate) fn volumes_part() -> impl Strategy<Value = Option<Vec<Value>>> {
    let names: Vec<&str> = OUR_VOLUMES.iter().chain(USER_VOLUMES).copied().collect();
    proptest::option::of(
        subsequence(names, 0..5)
            .prop_flat_map(|names| {
                let n = names.len();
                (
                    Just(names),
                    proptest::collection::vec(select(volume_sources()), n),
                )
            })
            .prop_map(|(names, sources)| {
                names
                    .into_iter()
                    .zip(sources)
                    .map(|(name, source)| {
                        let mut v = source.as_object().cloned().unwrap_or_default();
                        v.insert("name".into(), name.into());
                        Value::Object(v)
                    })
                    .collect()
            }),
    )
}

pub(crate) fn owners_part() -> impl Strategy<Value = Option<Value>> {
    // Mostly the job controllers' owners the default settings name; sometimes others.
    let usual = select(
        &[
            ("batch.volcano.sh/v1alpha1", "Job"),
            ("kubeflow.org/v1", "PyTorchJob"),
            ("batch/v1", "Job"),
        ][..],
    );
    let other = select(
        &[
            ("kubeflow.org/v2beta1", "MPIJob"),
            ("jobset.x-k8s.io/v1alpha2", "JobSet"),
            ("apps/v1", "ReplicaSet"),
            ("v1", "Node"),
        ][..],
    );
    let owners = prop_oneof![
        6 => (usual, proptest::option::weighted(0.2, other.clone()))
            .prop_map(|(a, b)| std::iter::once(a).chain(b).collect::<Vec<_>>()),
        1 => proptest::collection::vec(other, 1..3),
    ];
    prop_oneof![
        8 => owners.prop_map(|owners| Some(Value::Array(
            owners
                .into_iter()
                .map(|(api_version, kind)| json!({
                    "apiVersion": api_version, "kind": kind, "name": "job",
                    "uid": "3b1f9c2e-7d4a-4e8b-9f6c-1a2b3c4d5e6f", "controller": true,
                    "blockOwnerDeletion": true
                }))
                .collect()
        ))),
        1 => Just(None),
    ]
}

/// Annotations other than the trigger: Multus, seccomp, GKE's, and unrelated ones.
#[derive(Debug, Clone)]
pub(crate) struct AnnotationPlan {
    pub(crate) trigger_value: Option<&'static str>,
    pub(crate) trigger_key_other: bool,
    pub(crate) multus: Option<&'static str>,
    pub(crate) pod_seccomp: Option<&'static str>,
    pub(crate) container_seccomp: Option<(Index, &'static str)>,
    pub(crate) gke: Option<(&'static str, &'static str)>,
    pub(crate) others: Vec<(&'static str, &'static str)>,
}

pub(crate) fn annotations_part() -> impl Strategy<Value = AnnotationPlan> {
    let trigger_value = prop_oneof![
        16 => Just(Some("true")),
        1 => Just(Some("True")),
        1 => Just(Some("yes")),
        1 => Just(Some("false")),
        1 => Just(None),
    ];
    let seccomp = select(&["runtime/default", "unconfined", "localhost/nccl.json"][..]);
    (
        trigger_value,
        proptest::bool::weighted(0.05),
        proptest::option::weighted(0.5, select(MULTUS_VALUES)),
        proptest::option::weighted(0.15, seccomp.clone()),
        proptest::option::weighted(0.15, (any::<Index>(), seccomp)),
        proptest::option::weighted(
            0.2,
            select(
                &[
                    ("networking.gke.io/default-interface", "eth1"),
                    (
                        "devices.gke.io/container.tcpxo-daemon",
                        "- path: /dev/nvidia0\n",
                    ),
                    ("networking.gke.io/interfaces", "[]"),
                ][..],
            ),
        ),
        proptest::collection::vec(
            select(
                &[
                    ("scheduling.k8s.io/group-name", "job-3b1f9c2e"),
                    ("volcano.sh/task-spec", "worker"),
                    ("kubectl.kubernetes.io/default-container", "trainer"),
                    ("nmp.nvidia.com/num-nodes", "2"),
                ][..],
            ),
            0..3,
        ),
    )
        .prop_map(
            |(
                trigger_value,
                trigger_key_other,
                multus,
                pod_seccomp,
                container_seccomp,
                gke,
                others,
            )| {
                AnnotationPlan {
                    trigger_value,
                    trigger_key_other,
                    multus,
                    pod_seccomp,
                    container_seccomp,
                    gke,
                    others,
                }
            },
        )
}

/// `spec.resourceClaims`: none, an empty list, or DRA claims (a ComputeDomain channel, DRANET's
/// RDMA NICs); the NVLink warning depends on whether there is one.
pub(crate) fn resource_claims_part() -> impl Strategy<Value = Option<Value>> {
    proptest::option::weighted(
        0.2,
        select(vec![
            json!([]),
            json!([{"name": "channel", "resourceClaimTemplateName": "job-compute-domain-channel"}]),
            json!([{"name": "rdma", "resourceClaimName": "a4x-max-rdma"}, {"name": "channel", "resourceClaimTemplateName": "imex-channel"}]),
            // The fabric claimed already, by the name the settings give it or from their
            // template (behaviour.md §3.8), beside a GPU claim.
            json!([{"name": "efa", "resourceClaimTemplateName": "efa-32"}]),
            json!([{"name": "nics", "resourceClaimTemplateName": "default-rdma"}, {"name": "gpus", "resourceClaimTemplateName": "eight-gpus"}]),
        ]),
    )
}

pub(crate) fn pod_security_part() -> impl Strategy<Value = Option<Value>> {
    proptest::option::of(select(vec![
        json!({}),
        json!({"seccompProfile": {"type": "RuntimeDefault"}}),
        json!({"seccompProfile": null, "runAsNonRoot": true}),
        json!({"fsGroup": 1000, "futurePodSecurityField": [1, 2]}),
    ]))
}

/// A whole pod whose trigger annotation is `trigger`'s, mostly for machines of `cloud`.
pub(crate) fn pod(trigger: String, cloud: &'static str) -> impl Strategy<Value = Value> {
    (
        volumes_part(),
        proptest::collection::vec(container(false), 1..4),
        proptest::collection::vec(container(true), 0..3),
        annotations_part(),
        owners_part(),
        pod_security_part(),
        proptest::option::of(select(unknown_values())),
        proptest::option::of(select(unknown_values())),
        any::<bool>(),
        nulls(POD_NULLS),
        (
            // A Windows pod (`spec.os.name: windows`) now and then.
            proptest::bool::weighted(0.03),
            placement_part(cloud),
            resource_claims_part(),
        ),
    )
        .prop_map(
            move |(
                volumes,
                containers,
                inits,
                annotations,
                owners,
                security,
                spec_unknown,
                meta_unknown,
                status,
                nulls,
                (windows, placement, claims),
            )| {
                let mut pod = build_pod(
                    &trigger,
                    volumes,
                    containers,
                    inits,
                    annotations,
                    owners,
                    security,
                    spec_unknown,
                    meta_unknown,
                    status,
                );
                if let Some((field, value)) = placement {
                    if let Some(spec) = pod["spec"].as_object_mut() {
                        spec.insert(field.into(), value);
                    }
                }
                if let Some(claims) = claims {
                    // The first container names the first claim, as the vendors' pods do.
                    let first = claims.pointer("/0/name").cloned();
                    if let (Some(name), Some(resources)) = (
                        first,
                        pod.pointer_mut("/spec/containers/0/resources")
                            .and_then(Value::as_object_mut),
                    ) {
                        resources.insert("claims".into(), json!([{"name": name}]));
                    }
                    pod["spec"]["resourceClaims"] = claims;
                }
                set_nulls(&mut pod, &nulls);
                if windows {
                    pod["spec"]["os"] = json!({"name": "windows"});
                }
                pod
            },
        )
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn build_pod(
    trigger: &str,
    volumes: Option<Vec<Value>>,
    containers: Vec<ContainerPlan>,
    inits: Vec<ContainerPlan>,
    plan: AnnotationPlan,
    owners: Option<Value>,
    security: Option<Value>,
    spec_unknown: Option<Value>,
    meta_unknown: Option<Value>,
    status: bool,
) -> Value {
    let volume_names: Vec<String> = volumes
        .iter()
        .flatten()
        .filter_map(|v| v["name"].as_str().map(str::to_string))
        .collect();
    // Container names are unique across containers and init containers, as the API requires.
    let mut taken = BTreeSet::new();
    let mut resolve = |plan: ContainerPlan| -> Value {
        let mut body = plan.body;
        let base = body["name"].as_str().unwrap_or("c").to_string();
        let mut name = base.clone();
        let mut i = 1;
        while !taken.insert(name.clone()) {
            name = format!("{base}-{i}");
            i += 1;
        }
        body.insert("name".into(), name.into());
        if let Some(mounts) = plan.mounts {
            let mut paths = BTreeSet::new();
            let list: Vec<Value> = mounts
                .into_iter()
                .filter(|(path, ..)| paths.insert(*path))
                .map(|(path, index, read_only, ours)| {
                    // Mostly one of the pod's volumes; sometimes one of ours the pod lacks.
                    let volume = if ours || volume_names.is_empty() {
                        index.get(OUR_VOLUMES).to_string()
                    } else {
                        index.get(&volume_names).clone()
                    };
                    let mut m = json!({"name": volume, "mountPath": path});
                    if read_only {
                        m["readOnly"] = true.into();
                    }
                    m
                })
                .collect();
            body.insert("volumeMounts".into(), Value::Array(list));
        }
        let mut body = Value::Object(body);
        set_nulls(&mut body, &plan.nulls);
        body
    };
    let containers: Vec<Value> = containers.into_iter().map(&mut resolve).collect();
    let inits: Vec<Value> = inits.into_iter().map(&mut resolve).collect();

    let mut annotations = Map::new();
    if let Some(value) = plan.trigger_value {
        let key = if plan.trigger_key_other {
            if TRIGGERS.contains(&trigger) {
                CUSTOM_TRIGGER
            } else {
                TRIGGER
            }
        } else {
            trigger
        };
        annotations.insert(key.into(), value.into());
    }
    if let Some(multus) = plan.multus {
        annotations.insert("k8s.v1.cni.cncf.io/networks".into(), multus.into());
    }
    if let Some(seccomp) = plan.pod_seccomp {
        annotations.insert(
            "seccomp.security.alpha.kubernetes.io/pod".into(),
            seccomp.into(),
        );
    }
    if let Some((index, seccomp)) = plan.container_seccomp {
        let names: Vec<&str> = containers
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        let name = index.get(&names);
        annotations.insert(
            format!("container.seccomp.security.alpha.kubernetes.io/{name}"),
            seccomp.into(),
        );
    }
    if let Some((key, value)) = plan.gke {
        annotations.insert(key.into(), value.into());
    }
    for (key, value) in plan.others {
        annotations.insert(key.into(), value.into());
    }

    let mut metadata = json!({
        "name": "job-worker-0",
        "namespace": "nemo-jobs",
        "labels": {"app": "nemo-job", "volcano.sh/task-index": "0"},
        "annotations": annotations,
        "creationTimestamp": null,
    });
    if let Some(owners) = owners {
        metadata["ownerReferences"] = owners;
    }
    if let Some(unknown) = meta_unknown {
        metadata["futureMetadataField"] = unknown;
    }
    let mut spec = json!({
        "containers": containers,
        "restartPolicy": "OnFailure",
        "schedulerName": "volcano",
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    });
    if !inits.is_empty() {
        spec["initContainers"] = Value::Array(inits);
    }
    if let Some(volumes) = volumes {
        spec["volumes"] = Value::Array(volumes);
    }
    if let Some(security) = security {
        spec["securityContext"] = security;
    }
    if let Some(unknown) = spec_unknown {
        spec["futureField"] = unknown;
    }
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec});
    if status {
        pod["status"] = json!({});
    }
    pod
}
