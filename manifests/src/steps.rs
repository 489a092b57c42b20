//! The per-namespace steps a render lists in its comments: what the settings need in every
//! namespace where opted-in pods run, which no cluster-wide manifest can give (the namespace's
//! label, ConfigMaps, claim templates, ComputeDomains, networks).

use serde_json::Value;

/// The steps for `settings` of `cloud`, one line each (without the comment marks).
pub fn per_namespace(cloud: &str, settings: &Value) -> Vec<String> {
    let mut steps =
        vec!["kubectl label namespace NS nmp.nvidia.com/multi-node-networking=enabled".to_string()];
    let block = &settings[cloud];
    if cloud == "azure" {
        let name = block["ncclTopologyConfigMap"]
            .as_str()
            .unwrap_or("nccl-topo");
        steps.push(format!(
            "the ConfigMap {name} of the machines' NCCL topology, which the pods mount: \
             kubectl apply -n NS -f deploy/azure/nccl-topology-ndv5.yaml (ND H100 v5; ndv4 for \
             ND A100 v4)"
        ));
    }
    if has_key(block, "deviceClaim") {
        steps.push(
            "the ResourceClaimTemplates the settings' deviceClaim names: kubectl apply -n NS -f \
             deploy/aws/dra/efa-claim-templates.yaml (EKS's EFA DRA driver) or \
             deploy/gcp/dra/default-rdma.yaml (GKE's DRANET)"
                .to_string(),
        );
    }
    if let Some(domain) = settings["computeDomain"].as_object() {
        let by = match (domain.get("fromLabel"), domain.get("name")) {
            (Some(Value::String(label)), _) => format!("named by the pod's label {label}"),
            (Some(Value::Array(labels)), _) => {
                let labels: Vec<&str> = labels.iter().filter_map(Value::as_str).collect();
                format!(
                    "named by the first of the pod's labels {} it carries",
                    labels.join(", ")
                )
            }
            (_, Some(Value::String(name))) => format!("named {name}"),
            _ => "named as computeDomain says".to_string(),
        };
        steps.push(format!(
            "a ComputeDomain per job, {by}, created before its pods \
             (examples/jobs/gb200-pytorchjob.yaml)"
        ));
    }
    if matches!(cloud, "oci" | "rdma") {
        let mut networks = Vec::new();
        strings_of(block, &mut networks);
        if !networks.is_empty() {
            steps.push(format!(
                "the NetworkAttachmentDefinitions the settings name ({}), in the namespace each \
                 names, or NS",
                networks.join(", ")
            ));
        }
    }
    steps
}

/// Whether `key` is a key of `value` at any depth.
fn has_key(value: &Value, key: &str) -> bool {
    match value {
        Value::Object(map) => map.contains_key(key) || map.values().any(|v| has_key(v, key)),
        Value::Array(items) => items.iter().any(|v| has_key(v, key)),
        _ => false,
    }
}

/// The values of every `network` key, and the items of every `networks` list, at any depth.
fn strings_of(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                match (key.as_str(), item) {
                    ("network", Value::String(name)) => out.push(name.clone()),
                    ("networks", Value::Array(names)) => {
                        out.extend(names.iter().filter_map(Value::as_str).map(String::from))
                    }
                    _ => strings_of(item, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| strings_of(item, out)),
        _ => {}
    }
}
