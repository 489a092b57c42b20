//! What a mutation injects: the fabric blocks' values as the user wrote them, and the
//! record of what was injected.

use crate::api_rules::as_list;
use crate::generators::case;
use crate::inspect::added_fabric;
use crate::inspect::gpu_resources;
use crate::inspect::gpus;
use crate::inspect::interface_networks;
use crate::run::evaluate;
use crate::run::mutated_pod;
use crate::run::payload;
use multinode_networking_policy::admission;
use multinode_networking_policy::k8s::quantity;
use proptest::prelude::*;
use serde_json::Value;
use serde_json::json;

proptest! {
    #![proptest_config(crate::config())]

    #[test]
    fn the_fabric_blocks_values_reach_the_pod((settings, pod) in case()) {
        // The user's settings are kept as written: the TCPX daemon's flags are its argv items
        // verbatim after the entrypoint (no shell splits their blanks and quotes), its image is
        // the setting's, and the RDMA interfaces are the first networks of `gcp.rdma.networks`.
        // Only where no row of the pod's machine may have set them instead.
        let Some(gcp) = settings.get("gcp").filter(|b| b["enabled"] == true) else {
            return Ok(());
        };
        let row_sets = |fabric: &str| {
            gcp.get("instanceTypes")
                .and_then(Value::as_object)
                .is_some_and(|rows| rows.values().any(|row| row.get(fabric).is_some()))
        };
        let Some(mutated) = mutated_pod(evaluate(&pod, &settings)) else {
            return Ok(());
        };
        match added_fabric(&pod, &mutated) {
            Some("mutated: TCPX") if !row_sets("tcpx") => {
                let inits = as_list(mutated.pointer("/spec/initContainers"));
                let daemon = inits.iter().rev().find(|c| c["name"] == "tcpx-daemon").unwrap();
                let command = as_list(daemon.get("command"));
                prop_assert!(!command.is_empty(), "the daemon has no command: {}", daemon);
                if let Some(flags) = gcp.pointer("/tcpx/daemonFlags") {
                    prop_assert_eq!(&command[1..], as_list(Some(flags)), "{}", daemon);
                }
                if let Some(image) = gcp.pointer("/tcpx/daemonImage") {
                    prop_assert_eq!(&daemon["image"], image);
                }
            }
            Some("mutated: RDMA") if !row_sets("rdma") => {
                if let Some(networks) = gcp.pointer("/rdma/networks") {
                    let wanted: Vec<String> = as_list(Some(networks))
                        .iter()
                        .filter_map(|n| n.as_str().map(String::from))
                        .collect();
                    let got = interface_networks(&mutated).unwrap_or_default();
                    prop_assert!(
                        !got.is_empty() && wanted.starts_with(&got),
                        "interfaces {:?} are not the first of {:?}", got, wanted
                    );
                }
            }
            _ => {}
        }
    }

    #[test]
    fn the_record_says_what_was_injected((settings, pod) in case()) {
        let bytes = payload("CREATE", &pod, &settings);
        let answer: Value = serde_json::from_slice(&admission::validate(&bytes)).unwrap();
        let mutated = &answer["mutated_object"];
        let audit = &answer["audit_annotations"];
        if mutated.is_null() {
            prop_assert!(audit.is_null(), "audit annotations without a mutation: {}", audit);
            return Ok(());
        }
        let text = audit["injected"].as_str().unwrap_or_default();
        let record: Value = match serde_json::from_str(text) {
            Ok(record) => record,
            Err(e) => return Err(TestCaseError::fail(format!("the record {text:?}: {e}"))),
        };
        let key = fixtures::record_key(&settings);
        let annotations = &mutated["metadata"]["annotations"];
        if let Some(key) = key {
            prop_assert_eq!(annotations[key].as_str(), Some(text));
        }
        let cloud = ["aws", "azure", "gcp", "oci", "rdma"]
            .into_iter()
            .find(|c| settings[*c]["enabled"] == true)
            .unwrap();
        prop_assert_eq!(&record["cloud"], cloud);
        prop_assert_eq!(&record["policy"], env!("CARGO_PKG_VERSION"));
        let fabrics: &[&str] = match cloud {
            "aws" => &["efa"],
            "azure" => &["infiniband"],
            "oci" => &["sriov"],
            "rdma" => &["rdma"],
            _ => &["tcpxo", "tcpx", "rdma"],
        };
        prop_assert!(fabrics.contains(&record["fabric"].as_str().unwrap_or_default()), "{}", text);
        // GCP has no device; the `rdma` block may have none, or rails in its place.
        match cloud {
            "gcp" => prop_assert!(record["device"].is_null(), "{}", text),
            "rdma" => prop_assert!(record["rails"].is_null() || record["device"].is_null(), "{}", text),
            _ => prop_assert!(!record["device"].is_null(), "{}", text),
        }
        let rails: Vec<&str> = as_list(record.get("rails")).iter().filter_map(Value::as_str).collect();
        let listed = record["containers"].as_object().cloned().unwrap_or_default();
        let resources = gpu_resources(&settings);
        let containers = as_list(mutated.pointer("/spec/containers"));
        // A container without a name is listed by its index.
        let name_of = |(at, c): (usize, &Value)| {
            c["name"].as_str().map_or_else(|| format!("#{at}"), str::to_string)
        };
        let mut want: Vec<String> = containers
            .iter()
            .enumerate()
            .filter(|(_, c)| gpus(c, &resources).is_some())
            .map(name_of)
            .collect();
        want.sort_unstable();
        want.dedup();
        let mut names: Vec<String> = listed.keys().cloned().collect();
        names.sort_unstable();
        prop_assert_eq!(names, want, "{}", text);
        for (at, container) in containers.iter().enumerate() {
            let Some(entry) = listed.get(&name_of((at, container))) else {
                continue;
            };
            // A DRA claim of the fabric stands for the count (behaviour.md §2.1, §3.8): the
            // container names it, and so does the pod.
            if let Some(claim) = entry.get("claim") {
                let named = |list: Option<&Value>| {
                    as_list(list).iter().any(|c| c["name"] == *claim)
                };
                prop_assert!(named(container.pointer("/resources/claims")), "{}", text);
                prop_assert!(named(mutated.pointer("/spec/resourceClaims")), "{}", text);
                prop_assert_eq!(entry.as_object().map(|e| e.len()), Some(1), "{}", text);
                continue;
            }
            for rail in &rails {
                let path = format!("/resources/requests/{}", rail.replace('/', "~1"));
                prop_assert!(container.pointer(&path).is_some(), "{} lacks {}: {}", text, rail, container);
            }
            match record["device"].as_str() {
                Some(device) => {
                    let requested = container
                        .pointer(&format!("/resources/requests/{}", device.replace('/', "~1")))
                        .map_or(Ok(0), |v| quantity::whole(&v.to_string()));
                    prop_assert_eq!(entry, &json!({"devices": requested.unwrap_or(0)}), "{}", text);
                }
                None => prop_assert_eq!(entry, &json!({}), "{}", text),
            }
        }
        // A stale record does not change the answer: the policy's replaces it.
        if let Some(key) = key.filter(|_| pod["metadata"]["annotations"].is_object()) {
            let mut stale = pod.clone();
            stale["metadata"]["annotations"][key] = json!("{\"policy\":\"0.0.0\"}");
            let again: Value = serde_json::from_slice(&admission::validate(&payload("CREATE", &stale, &settings))).unwrap();
            prop_assert_eq!(&again["mutated_object"], mutated);
        }
    }
}

/// How many mounts of the volume `name` the pod's containers and init containers make.
fn mounts_of(pod: &Value, name: &str) -> usize {
    ["/spec/containers", "/spec/initContainers"]
        .into_iter()
        .flat_map(|list| as_list(pod.pointer(list)))
        .flat_map(|container| as_list(container.get("volumeMounts")))
        .filter(|mount| mount["name"] == name)
        .count()
}

proptest! {
    #![proptest_config(crate::config())]

    #[test]
    fn a_host_volume_is_declared_only_for_the_policys_mounts((settings, pod) in case()) {
        // behaviour.md §4: a host directory the policy declares is one some mount it added
        // needs; a container's own mount of one of its names (a helper's, writable) is the
        // user's to declare.
        let Some(mutated) = mutated_pod(evaluate(&pod, &settings)) else {
            return Ok(());
        };
        let before: Vec<&Value> = as_list(pod.pointer("/spec/volumes")).iter().map(|v| &v["name"]).collect();
        for volume in as_list(mutated.pointer("/spec/volumes")) {
            let name = volume["name"].as_str().unwrap_or_default();
            if volume.get("hostPath").is_none() || before.contains(&&volume["name"]) {
                continue;
            }
            prop_assert!(
                mounts_of(&mutated, name) > mounts_of(&pod, name),
                "host volume {} declared for the user's mounts only: {}", name, mutated
            );
        }
    }
}

proptest! {
    #![proptest_config(crate::config())]

    #[test]
    fn the_topology_file_is_set_only_with_its_mount((settings, mut pod) in case(), conflict in any::<bool>()) {
        // behaviour.md §4: an env entry naming a file in one of the fabric's mounts is added
        // only to a container that has a mount at that path once wired: Azure's
        // NCCL_TOPO_FILE=/etc/nccl/nccl-topo.xml where the pod's own nccl-topo volume differs
        // and the container mounts nothing at /etc/nccl would name a file that is not there.
        // Half the pods get such a volume: drawn at random it is rare.
        if conflict {
            if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
                let mut volumes: Vec<Value> = spec
                    .get("volumes")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                volumes.retain(|v| v["name"] != "nccl-topo");
                volumes.push(json!({"name": "nccl-topo", "configMap": {"name": "my-topology"}}));
                spec.insert("volumes".into(), Value::Array(volumes));
            }
        }
        let Some(mutated) = mutated_pod(evaluate(&pod, &settings)) else {
            return Ok(());
        };
        let before = as_list(pod.pointer("/spec/containers"));
        for (at, container) in as_list(mutated.pointer("/spec/containers")).iter().enumerate() {
            let has = |c: Option<&Value>| {
                c.map(|c| as_list(c.get("env")))
                    .unwrap_or_default()
                    .iter()
                    .any(|e| e["name"] == "NCCL_TOPO_FILE")
            };
            if !has(Some(container)) || has(before.get(at)) {
                continue;
            }
            let value = as_list(container.get("env"))
                .iter()
                .find(|e| e["name"] == "NCCL_TOPO_FILE")
                .and_then(|e| e["value"].as_str().map(str::to_string))
                .unwrap_or_default();
            let mounted = as_list(container.get("volumeMounts")).iter().any(|m| {
                m["mountPath"].as_str().is_some_and(|p| {
                    value.strip_prefix(p).is_some_and(|rest| rest.starts_with('/'))
                })
            });
            prop_assert!(mounted, "NCCL_TOPO_FILE={} without a mount there: {}", value, container);
        }
    }
}
