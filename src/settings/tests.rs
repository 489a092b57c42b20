//! The settings' reader, held to behaviour.md §1: defaults, every key's checks and messages, rows
//! over the built-in ones.

use super::*;
use crate::profile::DeviceCount;
use crate::ratio::Ratio;
use serde_json::{Value, json};

fn errors(settings: Value) -> String {
    check(&settings.to_string())
        .expect_err("settings should be invalid")
        .to_string()
}

/// The enabled cloud's profile, described for comparison.
fn with(settings: Value, check: impl FnOnce(&Config<'_>)) {
    let text = settings.to_string();
    let config = Config::read(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
    check(&config);
}

fn count(config: &Config<'_>) -> DeviceCount {
    config
        .cloud
        .default_profile()
        .device
        .expect("a device")
        .count
}

#[test]
fn the_lazy_paths_are_the_instance_tables() {
    assert_eq!(LAZY_SETTINGS, ["*", INSTANCE_TYPES]);
}

#[test]
fn one_cloud_with_defaults() {
    with(json!({"oci": {"enabled": true}}), |config| {
        assert_eq!(config.cloud.cloud.name, "oci");
        assert_eq!(count(config), DeviceCount::PerGpu(Ratio::whole(8)));
        assert_eq!(config.common.triggers, DEFAULT_TRIGGERS);
        assert_eq!(config.common.opt_outs, DEFAULT_OPT_OUTS);
        assert_eq!(config.common.owner_kinds, DEFAULT_OWNER_KINDS);
        assert_eq!(config.common.owner_groups, DEFAULT_OWNER_GROUPS);
    });
    with(json!({"azure": {"enabled": true}}), |config| {
        let device = config.cloud.default_profile().device.unwrap();
        assert_eq!(device.resource, "rdma/hca_shared_devices_a");
        assert_eq!(device.count, DeviceCount::PerGpu(Ratio::whole(1)));
    });
}

#[test]
fn the_charts_values_block_pastes_as_is() {
    let values = json!({
        "aws": {"enabled": true, "efaDevicesPerGPU": 4},
        "azure": {"enabled": false, "rdmaDevicesPerGPU": 1, "rdmaDeviceName": "hca_shared_devices_a"},
        "gcp": {"enabled": false},
        "oci": {"enabled": false, "rdmaDevicesPerGPU": 8}
    });
    with(values, |config| {
        assert_eq!(config.cloud.cloud.name, "aws");
        assert_eq!(count(config), DeviceCount::PerGpu(Ratio::whole(4)));
    });
}

#[test]
fn exactly_one_cloud() {
    assert!(errors(json!({})).contains("no cloud is enabled"));
    assert!(errors(json!(null)).contains("no cloud is enabled"));
    let several = errors(
        json!({"aws": {"enabled": true}, "gcp": {"enabled": true}, "oci": {"enabled": true}}),
    );
    assert!(
        several.contains("aws, gcp, oci are all enabled"),
        "{several}"
    );
    assert_eq!(
        errors(json!("aws")),
        "settings must be an object with one of aws, azure, gcp, oci, rdma, got a string"
    );
    assert!(
        check("{")
            .unwrap_err()
            .to_string()
            .starts_with("settings are not valid JSON")
    );
}

#[test]
fn a_misspelt_key_is_named_with_the_right_spelling() {
    assert_eq!(
        errors(json!({"aws": {"enabled": true, "efaDevicesPerGpu": 4}})),
        "aws.efaDevicesPerGpu: unknown key; the keys allowed under aws are enabled, efaDevicesPerGPU, efaLibraryPath, cpuRequest, deviceClaim, env, capabilities, pinTransport, instanceTypes, pools"
    );
    assert!(
        errors(json!({"gcp": {"enabled": true}, "tigger": "x"}))
            .contains("tigger: unknown key; the keys allowed at the top level are aws, azure, gcp, oci, rdma, triggerAnnotation")
    );
    // A cloud of several fabrics: the fabric, the chart's TCPXO keys, the other fabrics' blocks.
    assert_eq!(
        errors(json!({"gcp": {"enabled": true, "network": []}})),
        "gcp.network: unknown key; the keys allowed under gcp are enabled, fabric, networks, daemonImage, daemonFlags, daemonStartupProbe, tcpxo, tcpx, rdma, env, capabilities, pinTransport, instanceTypes, pools"
    );
}

#[test]
fn per_gpu_counts_are_numbers_above_0_up_to_64() {
    for bad in [
        json!(0),
        json!(65),
        json!(-1),
        json!(64.5),
        json!(0.0000001),
        json!("4"),
        json!(true),
    ] {
        let message = errors(json!({"oci": {"enabled": true, "rdmaDevicesPerGPU": bad}}));
        assert!(
            message.starts_with(
                "oci.rdmaDevicesPerGPU: must be a number greater than 0 and at most 64"
            ),
            "{message}"
        );
    }
    for (good, expected) in [
        (json!(1), Ratio::whole(1)),
        (json!(64), Ratio::whole(64)),
        (json!(0.5), Ratio::new(1, 2).unwrap()),
        (json!(1.5), Ratio::new(3, 2).unwrap()),
    ] {
        with(
            json!({"oci": {"enabled": true, "rdmaDevicesPerGPU": good}}),
            |config| {
                assert_eq!(count(config), DeviceCount::PerGpu(expected));
            },
        );
    }
    // A disabled block is still read.
    assert!(
        errors(json!({"gcp": {"enabled": true}, "aws": {"efaDevicesPerGPU": 0}}))
            .contains("aws.efaDevicesPerGPU")
    );
}

#[test]
fn names_are_kubernetes_names() {
    assert!(
        errors(json!({"azure": {"enabled": true, "rdmaDeviceName": "bad name!"}}))
            .contains("azure.rdmaDeviceName")
    );
    assert!(
        errors(json!({"azure": {"enabled": true, "ncclTopologyConfigMap": "Bad_Name"}}))
            .contains("azure.ncclTopologyConfigMap")
    );
    assert!(
        errors(json!({"gcp": {"enabled": true}, "triggerAnnotation": "a/b/c"}))
            .contains("triggerAnnotation")
    );
    with(
        json!({"gcp": {"enabled": true}, "triggerAnnotation": "example.com/multi-node"}),
        |config| assert_eq!(config.common.triggers, ["example.com/multi-node"]),
    );
}

#[test]
fn annotation_keys_are_one_key_or_a_list() {
    with(
        json!({"gcp": {"enabled": true}, "triggerAnnotation": ["a.io/x", "b.io/y", "a.io/x"], "optOutAnnotation": "a.io/no"}),
        |config| {
            assert_eq!(config.common.triggers, ["a.io/x", "b.io/y"]);
            assert_eq!(config.common.opt_outs, ["a.io/no"]);
        },
    );
    with(
        json!({"gcp": {"enabled": true}, "triggerAnnotation": null, "optOutAnnotation": null}),
        |config| {
            assert_eq!(config.common.triggers, DEFAULT_TRIGGERS);
            assert_eq!(config.common.opt_outs, DEFAULT_OPT_OUTS);
        },
    );
    assert_eq!(
        errors(json!({"gcp": {"enabled": true}, "triggerAnnotation": []})),
        "triggerAnnotation: must have from 1 to 16 items, got 0"
    );
    assert_eq!(
        errors(json!({"gcp": {"enabled": true}, "optOutAnnotation": ["a.io/no", 3]})),
        "optOutAnnotation[1]: must be a valid annotation key ([prefix/]name, the prefix a DNS subdomain, the name at most 63 characters), got 3"
    );
    assert_eq!(
        errors(json!({"gcp": {"enabled": true}, "triggerAnnotation": {"a.io/x": true}})),
        "triggerAnnotation: must be an annotation key or a list of 1 to 16 annotation keys, got an object"
    );
    // The record must differ from every key of both lists.
    assert!(
        errors(json!({"gcp": {"enabled": true}, "recordAnnotation": "nhx.nvidia.com/disable-multi-node-networking"}))
            .starts_with("recordAnnotation: must differ")
    );
}

#[test]
fn owner_lists() {
    with(
        json!({"gcp": {"enabled": true}, "ownerKinds": [], "ownerApiGroups": []}),
        |config| {
            assert!(config.common.owner_kinds.is_empty() && config.common.owner_groups.is_empty())
        },
    );
    assert!(
        errors(json!({"gcp": {"enabled": true}, "ownerKinds": "Job"}))
            .contains("ownerKinds: must be a list")
    );
    assert!(
        errors(json!({"gcp": {"enabled": true}, "ownerApiGroups": [3]}))
            .contains("ownerApiGroups[0]")
    );
}

#[test]
fn env_maps_are_sorted_and_values_must_be_strings() {
    with(
        json!({"aws": {"enabled": true, "env": {"Z": "1", "A": null, "M": "x", "Z2": "2"}}}),
        |config| {
            let env = &config.cloud.overlay.env;
            let names: Vec<_> = env.iter().map(|c| c.name.as_ref()).collect();
            assert_eq!(names, ["A", "M", "Z", "Z2"]);
            assert_eq!(env[0].value, None);
        },
    );
    assert_eq!(
        errors(json!({"oci": {"enabled": true, "env": {"NCCL_IB_TC": 41}}})),
        "oci.env[NCCL_IB_TC]: must be a string or null, got 41; quote it: \"41\""
    );
    assert!(
        errors(json!({"oci": {"enabled": true, "env": {"A=B": "1"}}}))
            .starts_with("oci.env[A=B]: not a variable name")
    );
    assert!(
        errors(json!({"oci": {"enabled": true, "env": ["A"]}}))
            .starts_with("oci.env: must be an object")
    );
}

#[test]
fn instance_rows_merge_over_the_built_in_ones() {
    with(
        json!({"aws": {"enabled": true, "instanceTypes": {
            "p4d.24xlarge": {"devicesPerNode": 2, "env": {"X": "1"}},
            "g6.48xlarge": {"devicesPerNode": 1, "gpusPerNode": 8}
        }}}),
        |config| {
            let settings = &config.cloud;
            // The user's count over the built-in row: its GPUs stay the machine's.
            let t = settings.row("p4d.24xlarge").unwrap().unwrap();
            assert_eq!(
                (t.name.as_ref(), t.devices, t.gpus),
                ("p4d.24xlarge", Some(2), Some(8))
            );
            assert_eq!(t.overlay.env.len(), 1);
            // p5 is a built-in row, counting the EFA plugin's resource only.
            let p5 = settings.row("p5.48xlarge").unwrap().unwrap();
            let efa = Some("vpc.amazonaws.com/efa");
            assert_eq!(p5.devices(efa, settings.cloud.plugin), Some(32));
            assert_eq!(
                p5.devices(Some("example.com/nic"), settings.cloud.plugin),
                None
            );
            assert_eq!(settings.row("g5.48xlarge").unwrap(), None);
            assert_eq!(settings.row("g6.48xlarge").unwrap().unwrap().gpus, Some(8));
        },
    );
    // At request time a row is read when a pod names it, and a wrong one is an error then.
    let text = json!({"aws": {"enabled": true, "instanceTypes": {"x": {"devicesPerNode": "4", "gpusPerNode": 8}, "y": {"devicesPerNode": 4, "gpusPerNode": 8}}}}).to_string();
    let mut de = serde_json::Deserializer::from_str(&text);
    let tape = Tape::read_lazy(&mut de, LAZY_SETTINGS).unwrap();
    let common = Common::from_tape(&tape).unwrap();
    let config =
        Config::from_tape(&tape, common).expect("rows are not read before a pod names them");
    assert_eq!(config.cloud.row("y").unwrap().unwrap().devices, Some(4));
    assert_eq!(
        config.cloud.row("x").unwrap_err().to_string(),
        "aws.instanceTypes[x].devicesPerNode: must be a whole number from 0 to 1024, got \"4\""
    );
    let message = errors(json!({"aws": {"enabled": true, "instanceTypes": {
        "p5.48xlarge": {"devicesPerNode": 1025, "gpusPerNode": 0, "bogus": 1},
        "g6.48xlarge": {"devicesPerNode": 8},
        "bad type!": {"devicesPerNode": 1, "gpusPerNode": 1}
    }}}));
    for part in [
        "aws.instanceTypes[p5.48xlarge].bogus: unknown key; the keys allowed under aws.instanceTypes[p5.48xlarge] are devicesPerNode, gpusPerNode, multiNodeNVLink, efaDevicesPerGPU, efaLibraryPath, cpuRequest, deviceClaim, env, capabilities, pinTransport",
        "aws.instanceTypes[p5.48xlarge].devicesPerNode: must be a whole number from 0 to 1024, got 1025",
        "aws.instanceTypes[p5.48xlarge].gpusPerNode: must be a whole number from 1 to 64, got 0",
        "aws.instanceTypes[g6.48xlarge].gpusPerNode: missing; set the node's GPUs beside devicesPerNode",
        "aws.instanceTypes[bad type!]: not an instance type",
    ] {
        assert!(message.contains(part), "{part}\n{message}");
    }
}

#[test]
fn a_row_may_set_the_clouds_keys_and_a_gcp_fabric() {
    with(
        json!({"gcp": {"enabled": true, "fabric": "rdma", "instanceTypes": {
            "a3-ultragpu-8g": {"rdma": {"networks": ["a", "b"], "env": {"NCCL_IB_TC": "53"}}},
            "a3-megagpu-8g": {"fabric": "tcpx"}
        }}}),
        |config| {
            let settings = &config.cloud;
            assert_eq!(settings.overlay.fabric.map(|f| f.name), Some("rdma"));
            let ultra = settings.row("a3-ultragpu-8g").unwrap().unwrap();
            // The user's keys over the built-in facts: the fabric stays, the env merges.
            assert_eq!(ultra.overlay.fabric.map(|f| f.name), Some("rdma"));
            let env: Vec<_> = ultra.overlay.fabric_env[0]
                .1
                .iter()
                .map(|e| e.name.as_ref())
                .collect();
            assert_eq!(env, ["NCCL_IB_TC", "NCCL_TUNER_CONFIG_PATH"]);
            let profile = settings.profile(settings.fabric(&ultra.overlay), &ultra.overlay);
            assert_eq!(profile.interfaces.unwrap().networks, ["a", "b"]);
            // Only a row the user writes changes a machine's fabric.
            let mega = settings.row("a3-megagpu-8g").unwrap().unwrap();
            assert_eq!(settings.fabric(&mega.overlay).name, "tcpx");
        },
    );
    assert_eq!(
        errors(json!({"gcp": {"enabled": true, "fabric": "tcpxx"}})),
        "gcp.fabric: must be one of tcpxo, tcpx, rdma, got \"tcpxx\""
    );
    assert!(
        errors(json!({"gcp": {"enabled": true, "tcpx": {"networks": ["a"], "daemonFlags": ["a\nb"], "x": 1}}}))
            .contains("gcp.tcpx.x: unknown key; the keys allowed under gcp.tcpx are networks, daemonImage, daemonFlags, env")
    );
    assert!(
        errors(json!({"gcp": {"enabled": true, "rdma": {"networks": []}}}))
            .contains("gcp.rdma.networks: must have from 1 to 16 items, got 0")
    );
}

/// On `rdma` a row's device takes the place of the block's rails, and a row's rails that of the
/// block's device: a pod never gets both (the block refuses both set together).
#[test]
fn a_rows_device_or_rails_replace_the_blocks() {
    let rail = |n: &str| json!({"resourceName": format!("nvidia.com/{n}"), "network": n});
    with(
        json!({"rdma": {"enabled": true, "rails": [rail("rail0")], "instanceTypes": {
            "one": {"resourceName": "nvidia.com/hostdev", "devicesPerNode": 8, "gpusPerNode": 8}
        }}}),
        |config| {
            let settings = &config.cloud;
            let row = settings.row("one").unwrap().unwrap();
            let profile = settings.profile(settings.fabric(&row.overlay), &row.overlay);
            assert_eq!(profile.device.unwrap().resource, "nvidia.com/hostdev");
            assert!(profile.rails.is_empty());
            let block = settings.default_profile();
            assert!(block.device.is_none() && block.rails.len() == 1);
        },
    );
    with(
        json!({"rdma": {"enabled": true, "resourceName": "nvidia.com/hostdev", "instanceTypes": {
            "railed": {"rails": [rail("rail0"), rail("rail1")]}
        }}}),
        |config| {
            let settings = &config.cloud;
            let row = settings.row("railed").unwrap().unwrap();
            let profile = settings.profile(settings.fabric(&row.overlay), &row.overlay);
            assert!(profile.device.is_none());
            assert_eq!(profile.rails.len(), 2);
        },
    );
}

#[test]
fn pin_transport_names_each_fabrics_plugin() {
    let nccl_net = |settings: Value| {
        let profile = profile_of(settings);
        let net: Vec<_> = profile
            .env
            .iter()
            .filter(|e| e.name == "NCCL_NET")
            .collect();
        assert!(net.len() <= 1);
        net.first().map(|e| e.value.to_string())
    };
    for (settings, expected) in [
        (
            json!({"aws": {"enabled": true, "pinTransport": true}}),
            Some("AWS Libfabric"),
        ),
        (
            json!({"azure": {"enabled": true, "pinTransport": true}}),
            Some("IB"),
        ),
        (
            json!({"oci": {"enabled": true, "pinTransport": true}}),
            Some("IB"),
        ),
        (
            json!({"gcp": {"enabled": true, "pinTransport": true}}),
            Some("FasTrak"),
        ),
        (
            json!({"gcp": {"enabled": true, "fabric": "tcpx", "pinTransport": true}}),
            Some("GPUDirectTCPX_v7"),
        ),
        // gIB's values set it anyway.
        (
            json!({"gcp": {"enabled": true, "fabric": "rdma"}}),
            Some("gIB"),
        ),
        (json!({"aws": {"enabled": true}}), None),
        (
            json!({"aws": {"enabled": true, "pinTransport": false}}),
            None,
        ),
        // The settings' env wins: a value, or null for none.
        (
            json!({"aws": {"enabled": true, "pinTransport": true, "env": {"NCCL_NET": "OFI"}}}),
            Some("OFI"),
        ),
        (
            json!({"oci": {"enabled": true, "pinTransport": true, "env": {"NCCL_NET": null}}}),
            None,
        ),
    ] {
        assert_eq!(
            nccl_net(settings.clone()).as_deref(),
            expected,
            "{settings}"
        );
    }
    assert_eq!(
        errors(json!({"aws": {"enabled": true, "pinTransport": "yes"}})),
        "aws.pinTransport: must be true or false, got \"yes\""
    );
}

#[test]
fn gpu_resources_are_extended_resource_names() {
    with(json!({"oci": {"enabled": true}}), |config| {
        assert_eq!(config.gpu_resources, DEFAULT_GPU_RESOURCES);
    });
    with(
        json!({"oci": {"enabled": true}, "gpuResources": ["amd.com/gpu"]}),
        |config| assert_eq!(config.gpu_resources, ["amd.com/gpu"]),
    );
    with(
        json!({"oci": {"enabled": true}, "gpuResources": ["amd.com/gpu", "x.io/gpu", "amd.com/gpu"]}),
        |config| assert_eq!(config.gpu_resources, ["amd.com/gpu", "x.io/gpu"]),
    );
    assert!(
        errors(json!({"oci": {"enabled": true}, "gpuResources": ["gpu"]}))
            .starts_with("gpuResources[0]: must be an extended resource name")
    );
    assert!(
        errors(json!({"oci": {"enabled": true}, "gpuResources": []}))
            .starts_with("gpuResources: must have from 1 to 16 items, got 0")
    );
}

#[test]
fn per_gpu_and_per_container_exclude_each_other() {
    assert_eq!(
        errors(
            json!({"azure": {"enabled": true, "rdmaDevicesPerGPU": 1, "rdmaDevicesPerContainer": 1}})
        ),
        "azure.rdmaDevicesPerGPU and azure.rdmaDevicesPerContainer cannot both be set; keep the one that matches the cluster's device plugin"
    );
    with(
        json!({"azure": {"enabled": true, "rdmaDevicesPerContainer": 1, "rdmaDeviceName": "shared_ib"}}),
        |config| assert_eq!(count(config), DeviceCount::PerContainer(1)),
    );
}

#[test]
fn lists_of_names_are_checked_item_by_item() {
    let seven: Vec<String> = (1..8).map(|i| format!("vpc{i}")).collect();
    assert_eq!(
        errors(json!({"gcp": {"enabled": true, "networks": seven}})),
        "gcp.networks: must have exactly 8 items, got 7"
    );
    let message = errors(
        json!({"gcp": {"enabled": true, "networks": ["vpc1", "vpc2", "vpc3", "VPC_4", "vpc5", "vpc6", "vpc7", "vpc8"], "daemonFlags": ["--a;b"]}}),
    );
    assert!(
        message.contains("gcp.networks[3]: must be a GKE network name"),
        "{message}"
    );
    assert!(
        message.contains("gcp.daemonFlags[0]: must be a flag"),
        "{message}"
    );
    assert!(
        errors(json!({"aws": {"enabled": true, "capabilities": ["IPC LOCK"]}}))
            .starts_with("aws.capabilities[0]: must be a capability name")
    );
    // Added to a container that sets allowPrivilegeEscalation: false, CAP_SYS_ADMIN would make
    // the pod one the API server refuses; every spelling is refused alike.
    assert!(
        errors(json!({"azure": {"enabled": true, "capabilities": ["IPC_LOCK", "cap_sys_admin"]}}))
            .starts_with("azure.capabilities[1]: must be a capability name")
    );
}

#[test]
fn optional_values_turn_off_with_null_or_empty() {
    for off in [json!(null), json!("")] {
        with(
            json!({"aws": {"enabled": true, "efaLibraryPath": off, "cpuRequest": off}}),
            |config| {
                let profile = config.cloud.default_profile();
                assert!(profile.mounts.iter().all(|m| m.volume != "amazon-efa"));
                assert!(profile.volumes.iter().all(|v| v.name != "amazon-efa"));
                assert_eq!(profile.default_cpu_request, None);
            },
        );
    }
    assert!(
        errors(json!({"aws": {"enabled": true, "efaLibraryPath": "opt/efa"}}))
            .starts_with("aws.efaLibraryPath: must be an absolute path")
    );
    assert!(
        errors(json!({"aws": {"enabled": true, "cpuRequest": "lots"}}))
            .starts_with("aws.cpuRequest: must be a Kubernetes quantity")
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let message = errors(json!({"aws": {"enabled": "yes", "efaDevicesPerGPU": 0}, "bogus": 1}));
    assert!(
        message.contains("bogus")
            && message.contains("aws.enabled")
            && message.contains("aws.efaDevicesPerGPU"),
        "{message}"
    );
}

#[test]
fn a_compute_domain_is_named_by_a_label_or_by_name() {
    with(json!({"aws": {"enabled": true}}), |config| {
        assert_eq!(config.compute_domain, None);
    });
    let label = json!({"fromLabel": "jobset.sigs.k8s.io/jobset-name"});
    with(
        json!({"aws": {"enabled": true}, "computeDomain": label}),
        |config| {
            let key = "jobset.sigs.k8s.io/jobset-name";
            assert_eq!(
                config.compute_domain,
                Some(ComputeDomain::FromLabel(vec![key.into()]))
            );
        },
    );
    // Several: the first a pod carries names its domain, the outermost controller's first.
    let labels = [
        "jobset.sigs.k8s.io/jobset-name",
        "batch.kubernetes.io/job-name",
    ];
    with(
        json!({"aws": {"enabled": true}, "computeDomain": {"fromLabel": labels}}),
        |config| {
            let keys = labels.iter().map(|k| (*k).into()).collect();
            assert_eq!(config.compute_domain, Some(ComputeDomain::FromLabel(keys)));
        },
    );
    with(
        json!({"rdma": {"enabled": true}, "computeDomain": {"name": "team-a.nvl72"}, "preflight": "reject"}),
        |config| {
            let named = ComputeDomain::Named("team-a.nvl72".into());
            assert_eq!(config.compute_domain, Some(named));
        },
    );
    with(
        json!({"aws": {"enabled": true}, "computeDomain": null}),
        |config| assert_eq!(config.compute_domain, None),
    );
}

#[test]
fn a_compute_domain_is_refused_unless_it_names_exactly_one_domain_the_policy_can_read() {
    let refused = |block: Value, more: Value| {
        let mut settings = json!({"gcp": {"enabled": true}, "computeDomain": block});
        if let (Some(s), Some(more)) = (settings.as_object_mut(), more.as_object()) {
            s.extend(more.clone());
        }
        errors(settings)
    };
    let none = json!({});
    for (block, more, part) in [
        (
            json!({"fromLabel": "job", "name": "cd"}),
            &none,
            "computeDomain: set one of fromLabel and name, not both",
        ),
        (
            json!({}),
            &none,
            "computeDomain: set one of fromLabel (the pod label",
        ),
        (
            json!({"fromLabel": null}),
            &none,
            "computeDomain: set one of fromLabel (the pod label",
        ),
        (
            json!({"name": "cd", "template": "x"}),
            &none,
            "computeDomain.template: unknown key; the keys allowed under computeDomain are fromLabel, name",
        ),
        (
            json!({"fromLabel": "-bad-/key"}),
            &none,
            "computeDomain.fromLabel: must be a label key",
        ),
        // An empty label names no label: refused, not read as "no block".
        (
            json!({"fromLabel": ""}),
            &none,
            "computeDomain.fromLabel: must be a label key",
        ),
        (
            json!({"fromLabel": []}),
            &none,
            "computeDomain.fromLabel: must have from 1 to 16 items, got 0",
        ),
        (
            json!({"fromLabel": ["jobset.sigs.k8s.io/jobset-name", ""]}),
            &none,
            "computeDomain.fromLabel[1]: must be a label key",
        ),
        (
            json!({"fromLabel": 7}),
            &none,
            "computeDomain.fromLabel: must be a label key ([prefix/]name, the prefix a DNS subdomain, the name at most 63 characters) such as jobset.sigs.k8s.io/jobset-name, or a list of 1 to 16 of them",
        ),
        (
            json!({"name": "Team_A"}),
            &none,
            "computeDomain.name: must be a ComputeDomain name (a DNS subdomain",
        ),
        (
            json!({"name": 7}),
            &none,
            "computeDomain.name: must be a ComputeDomain name",
        ),
        (json!("cd"), &none, "computeDomain: must be an object"),
        (
            json!({"name": "cd"}),
            &json!({"preflight": "skip"}),
            "preflight: skip makes no host call, and computeDomain needs one",
        ),
    ] {
        let message = refused(block.clone(), more.clone());
        assert!(message.contains(part), "{block}: {message}");
    }
}

#[test]
fn a_row_says_whether_its_machine_has_multi_node_nvlink() {
    let settings = json!({"aws": {"enabled": true, "instanceTypes": {
        "p6e-gb200.36xlarge": {"env": {"A": "1"}},
        "p5.48xlarge": {"multiNodeNVLink": true},
        "g7.48xlarge": {"gpusPerNode": 8},
        "g8.48xlarge": {"multiNodeNVLink": false},
    }}});
    with(settings, |config| {
        let nvlink = |name: &str| config.cloud.row(name).unwrap().map(|row| row.nvlink);
        // The built-in rows know their machines; a settings row's word wins; a row without a
        // built-in one and without the key is unknown.
        assert_eq!(nvlink("p6e-gb200.36xlarge"), Some(Some(true)));
        assert_eq!(nvlink("p5.48xlarge"), Some(Some(true)));
        assert_eq!(nvlink("p4d.24xlarge"), Some(Some(false)));
        assert_eq!(nvlink("g7.48xlarge"), Some(None));
        assert_eq!(nvlink("g8.48xlarge"), Some(Some(false)));
    });
    let message = errors(json!({"oci": {"enabled": true, "instanceTypes": {
        "BM.GPU.GB200.4": {"multiNodeNVLink": "yes"}
    }}}));
    assert!(
        message.contains(
            "oci.instanceTypes[BM.GPU.GB200.4].multiNodeNVLink: must be true or false, got \"yes\""
        ),
        "{message}"
    );
}

#[test]
fn pools_map_a_label_and_value_to_the_pool_s_machines() {
    let settings = json!({"aws": {"enabled": true, "pools": {
        "eks.amazonaws.com/nodegroup": {"b200": "p6-b200.48xlarge", "inference": "g5.12xlarge"},
        "karpenter.sh/nodepool": {"gpu-mixed": ["p5.48xlarge", "p5en.48xlarge"]},
        "example.com/pool": {"a": "p5.48xlarge"},
    }}});
    with(settings, |config| {
        let pools = &config.cloud.pools;
        let machines = |label: &str, value: &str| {
            pools
                .machines(label, value)
                .map(|m| m.iter().map(|n| n.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(
            machines("eks.amazonaws.com/nodegroup", "b200"),
            Some(vec!["p6-b200.48xlarge".to_string()])
        );
        assert_eq!(
            machines("karpenter.sh/nodepool", "gpu-mixed"),
            Some(vec!["p5.48xlarge".to_string(), "p5en.48xlarge".to_string()])
        );
        assert_eq!(machines("eks.amazonaws.com/nodegroup", "other"), None);
        // The built-in labels first, then the settings' own.
        let labels = pools.labels();
        assert_eq!(labels[..6], crate::settings::POOL_LABELS);
        assert_eq!(labels[6..], ["example.com/pool"]);
    });
}

#[test]
fn pools_are_checked_naming_each_field() {
    for (pools, part) in [
        (json!([]), "aws.pools: must be an object of node label keys"),
        (
            json!({"-bad-": {"a": "p5.48xlarge"}}),
            "aws.pools[-bad-]: not a label key",
        ),
        (
            json!({"eks.amazonaws.com/nodegroup": "p5.48xlarge"}),
            "aws.pools[eks.amazonaws.com/nodegroup]: must be an object of pool names",
        ),
        (
            json!({"eks.amazonaws.com/nodegroup": {"a b": "p5.48xlarge"}}),
            "aws.pools[eks.amazonaws.com/nodegroup][a b]: not a label value",
        ),
        (
            json!({"eks.amazonaws.com/nodegroup": {"b200": ""}}),
            "aws.pools[eks.amazonaws.com/nodegroup][b200]: must be a row key",
        ),
        (
            json!({"eks.amazonaws.com/nodegroup": {"b200": []}}),
            "aws.pools[eks.amazonaws.com/nodegroup][b200]: must have from 1 to 16 items, got 0",
        ),
        (
            json!({"eks.amazonaws.com/nodegroup": {"b200": ["p5.48xlarge", 7]}}),
            "aws.pools[eks.amazonaws.com/nodegroup][b200][1]: must be a row key",
        ),
        (
            json!({"eks.amazonaws.com/nodegroup": {"b200": {"type": "p5.48xlarge"}}}),
            "aws.pools[eks.amazonaws.com/nodegroup][b200]: must be the pool's machine",
        ),
    ] {
        let message = errors(json!({"aws": {"enabled": true, "pools": pools}}));
        assert!(message.contains(part), "{pools}: {message}");
    }
    let many: serde_json::Map<String, Value> = (0..17)
        .map(|i| (format!("example.com/l{i}"), json!({})))
        .collect();
    let message = errors(json!({"aws": {"enabled": true, "pools": many}}));
    assert!(
        message.contains("aws.pools: must have at most 16 labels, got 17"),
        "{message}"
    );
    // A row has no pools: they are the block's.
    let message =
        errors(json!({"aws": {"enabled": true, "instanceTypes": {"p5.48xlarge": {"pools": {}}}}}));
    assert!(
        message.contains("aws.instanceTypes[p5.48xlarge].pools: unknown key"),
        "{message}"
    );
}
