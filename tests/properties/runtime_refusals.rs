//! Settings the API server or the container runtime would refuse, or turn into something else,
//! once written into every pod, are refused at load, naming the field (behaviour.md §1.4):
//! whatever valid settings they are dropped into.

use crate::generators::settings::valid_settings;
use multinode_networking_policy::settings;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Value, json};

/// One edit that makes valid settings refusable, and the field the refusal must name.
#[derive(Debug, Clone)]
enum Edit {
    /// `ALL` in some spelling appended to the block's capabilities.
    CapabilityAll(&'static str),
    /// `gpuResources` with the quota's prefix.
    QuotaPrefix,
    /// `aws.efaLibraryPath` at the shared memory's path, or with a `..` segment.
    LibraryPath(&'static str),
    /// An `rdma` host directory mounted at the shared memory's path in another spelling, at
    /// an earlier one's, or with a `..` segment.
    Directories(Value, &'static str),
    /// Two `rdma` rails of one resource, or on one network.
    Rails(Value, &'static str),
    /// `rdma.networks` holding `rdma.network`.
    NetworkTwice,
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        select(vec!["ALL", "all", "CAP_ALL", "cap_all", "Cap_All"]).prop_map(Edit::CapabilityAll),
        Just(Edit::QuotaPrefix),
        select(vec!["/dev/shm", "/dev/shm/", "//dev/shm", "/dev/./shm", "/opt/../etc"])
            .prop_map(Edit::LibraryPath),
        select(vec![
            (json!([{"hostPath": "/etc/a", "mountPath": "/dev/shm/"}]), "hostDirectories[0].mountPath"),
            (json!([{"hostPath": "/etc/a", "mountPath": "/opt/t"}, {"hostPath": "/etc/b", "mountPath": "/opt/t/"}]), "hostDirectories[1].mountPath"),
            (json!([{"hostPath": "/etc/../a", "mountPath": "/opt/t"}]), "hostDirectories[0].hostPath"),
        ])
        .prop_map(|(d, at)| Edit::Directories(d, at)),
        select(vec![
            (json!([{"resourceName": "nvidia.com/rail0", "network": "rail0"}, {"resourceName": "nvidia.com/rail0", "network": "rail1"}]), "rails[1].resourceName"),
            (json!([{"resourceName": "nvidia.com/rail0", "network": "rail0"}, {"resourceName": "nvidia.com/rail1", "network": {"name": "rail0"}}]), "rails[1].network"),
        ])
        .prop_map(|(r, at)| Edit::Rails(r, at)),
        Just(Edit::NetworkTwice),
    ]
}

/// The settings with the edit made, and the path of the field the refusal names; `None` where
/// the edit is about another kind of cluster than the one drawn.
fn apply(mut settings: Value, block: &str, edit: &Edit) -> Option<(Value, String)> {
    let target = &mut settings[block];
    let at = match edit {
        Edit::CapabilityAll(all) => {
            let mut caps = target["capabilities"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            caps.push(json!(all));
            let at = format!("{block}.capabilities[{}]", caps.len() - 1);
            target["capabilities"] = json!(caps);
            at
        }
        Edit::QuotaPrefix => {
            settings["gpuResources"] = json!(["nvidia.com/gpu", "requests.nvidia.com/gpu"]);
            "gpuResources[1]".to_string()
        }
        Edit::LibraryPath(path) if block == "aws" => {
            target["efaLibraryPath"] = json!(path);
            "aws.efaLibraryPath".to_string()
        }
        Edit::Directories(directories, at) if block == "rdma" => {
            target["hostDirectories"] = directories.clone();
            format!("rdma.{at}")
        }
        Edit::Rails(rails, at) if block == "rdma" => {
            let object = target.as_object_mut()?;
            for key in [
                "resourceName",
                "devicesPerGPU",
                "devicesPerContainer",
                "network",
            ] {
                object.remove(key);
            }
            object.remove("devicesPerNode");
            object.remove("gpusPerNode");
            object.insert("networks".into(), json!([]));
            object.insert("rails".into(), rails.clone());
            format!("rdma.{at}")
        }
        Edit::NetworkTwice if block == "rdma" => {
            let object = target.as_object_mut()?;
            object.remove("rails");
            object.insert("network".into(), json!("sriov-net"));
            object.insert("networks".into(), json!(["network-operator/sriov-net"]));
            "rdma.networks[0]".to_string()
        }
        _ => return None,
    };
    Some((settings, at))
}

proptest! {
    #![proptest_config(crate::config())]

    #[test]
    fn runtime_refusals_are_refused_at_load((settings, _, block) in valid_settings(), edit in edit()) {
        let Some((settings, at)) = apply(settings, block, &edit) else {
            return Ok(());
        };
        let refused = settings::check(&settings.to_string());
        let message = format!("{refused:?}");
        prop_assert!(refused.is_err(), "{:?} accepted: {}", edit, settings);
        prop_assert!(message.contains(&format!("{at}:")), "{:?}: {} does not name {}", edit, message, at);
    }
}
