//! Settings of any shape, for the no-panic properties.

use crate::generators::corruption::corrupt;
use crate::generators::corruption::corruptions;
use crate::generators::settings::valid_settings;
use crate::generators::settings::validate_only_setting;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::Value;

pub(crate) const SETTINGS_KEYS: &[&str] = &[
    "aws",
    "azure",
    "gcp",
    "oci",
    "enabled",
    "rails",
    "devicesPerContainer",
    "devicesPerGPU",
    "hostDirectories",
    "hostPath",
    "mountPath",
    "namespace",
    "name",
    "efaDevicesPerGPU",
    "efaDevicesPerGpu",
    "rdmaDevicesPerGPU",
    "rdmaDeviceName",
    "ncclTopologyConfigMap",
    "rdmaDevicesPerContainer",
    "efaLibraryPath",
    "cpuRequest",
    "resourceName",
    "network",
    "networks",
    "daemonImage",
    "daemonFlags",
    "env",
    "capabilities",
    "instanceTypes",
    "fabric",
    "tcpx",
    "rdma",
    "tcpxo",
    "gpuResources",
    "devicesPerNode",
    "gpusPerNode",
    "p5.48xlarge",
    "NCCL_IB_TC",
    "triggerAnnotation",
    "optOutAnnotation",
    "ownerKinds",
    "ownerApiGroups",
    "recordAnnotation",
    "daemonStartupProbe",
    "computeDomain",
    "fromLabel",
    "multiNodeNVLink",
    "pools",
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "",
];

/// Any JSON at all, with keys that settings use.
pub(crate) fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e20f64..1e20).prop_map(Value::from),
        select(
            &[
                "",
                "true",
                "4",
                "x/y",
                "Bad_Name",
                "nccl-topo",
                "-1",
                "1.5",
                "/opt/efa",
                "100m",
                "--num_hops=2",
                "rdma",
                "tcpx",
                "amd.com/gpu",
                "a3-ultragpu-8g",
                "\\\"--verbose 128 2 0 \\\""
            ][..]
        )
        .prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec(
                (
                    prop_oneof![select(SETTINGS_KEYS).prop_map(String::from), "\\PC{0,8}"],
                    inner
                ),
                0..6
            )
            .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// Settings of any shape: anything at all, or valid ones with something broken.
pub(crate) fn any_settings() -> impl Strategy<Value = Value> {
    prop_oneof![
        any_json(),
        (valid_settings(), validate_only_setting(), corruptions()).prop_map(
            |((mut settings, ..), validate_only, corruptions)| {
                if let Some(value) = validate_only {
                    settings["validateOnly"] = value;
                }
                corrupt(settings, &corruptions)
            }
        ),
    ]
}
