//! The kinds the stand-in serves, and the discovery documents that name them, as the API server
//! writes them: `/version`, `/api` (`APIVersions`), `/apis` (`APIGroupList`), `/api/v1` and
//! `/apis/GROUP/VERSION` (`APIResourceList`). kube-rs reads a group version's `APIResourceList`
//! to find a kind's plural and scope before any read (`Client::list_api_group_resources`, which
//! the policy server's `build_kube_resource` calls).

use serde_json::{Value, json};

/// One kind the stand-in serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kind {
    /// `""` for the core group.
    pub group: String,
    pub version: String,
    pub kind: String,
    /// The resource name in paths and RBAC rules.
    pub plural: String,
    pub namespaced: bool,
}

impl Kind {
    /// The kind `kind` of `api_version` (`v1` or `GROUP/VERSION`).
    pub fn new(api_version: &str, kind: &str, plural: &str, namespaced: bool) -> Kind {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        Kind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
        }
    }

    pub fn config_map() -> Kind {
        Kind::new("v1", "ConfigMap", "configmaps", true)
    }

    pub fn namespace() -> Kind {
        Kind::new("v1", "Namespace", "namespaces", false)
    }

    /// NVIDIA's DRA driver's ComputeDomain (a CRD).
    pub fn compute_domain() -> Kind {
        Kind::new(
            "resource.nvidia.com/v1beta1",
            "ComputeDomain",
            "computedomains",
            true,
        )
    }

    pub fn resource_claim_template() -> Kind {
        Kind::new(
            "resource.k8s.io/v1",
            "ResourceClaimTemplate",
            "resourceclaimtemplates",
            true,
        )
    }

    pub fn resource_claim() -> Kind {
        Kind::new(
            "resource.k8s.io/v1",
            "ResourceClaim",
            "resourceclaims",
            true,
        )
    }

    /// Multus's NetworkAttachmentDefinition (a CRD).
    pub fn network_attachment_definition() -> Kind {
        Kind::new(
            "k8s.cni.cncf.io/v1",
            "NetworkAttachmentDefinition",
            "network-attachment-definitions",
            true,
        )
    }

    /// Kubeflow's MPIJob (mpi-operator v2, a CRD).
    pub fn mpi_job() -> Kind {
        Kind::new("kubeflow.org/v2beta1", "MPIJob", "mpijobs", true)
    }

    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural.group`, as `schema.GroupResource.String()` writes it (`configmaps` in the core
    /// group): the resource in the API server's NotFound and Forbidden messages.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// A kind defined by a CustomResourceDefinition (any group with a dot but Kubernetes' own
    /// `*.k8s.io`): its objects in a list carry their `apiVersion` and `kind`, built-in ones not.
    pub fn is_custom(&self) -> bool {
        self.group.contains('.') && !self.group.ends_with(".k8s.io")
    }

    /// Its entry in an `APIResourceList`.
    fn api_resource(&self) -> Value {
        json!({
            "name": self.plural,
            "singularName": self.kind.to_lowercase(),
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        })
    }
}

/// `/version`. The stand-in says what it is in `gitVersion`'s build metadata.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "34",
        "emulationMajor": "1",
        "emulationMinor": "34",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "33",
        "gitVersion": "v1.34.0+kube-standin",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-08-27T00:00:00Z",
        "goVersion": "go1.24.6",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// `/api`: the core group's versions.
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

/// `/apis`: every named group of `kinds`, each with its versions in the order first given.
pub fn group_list(kinds: &[Kind]) -> Value {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for kind in kinds.iter().filter(|k| !k.group.is_empty()) {
        match groups.iter_mut().find(|(g, _)| *g == kind.group) {
            Some((_, versions)) if !versions.contains(&kind.version) => {
                versions.push(kind.version.clone())
            }
            Some(_) => {}
            None => groups.push((kind.group.clone(), vec![kind.version.clone()])),
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(group, versions)| {
            let entry = |v: &String| json!({"groupVersion": format!("{group}/{v}"), "version": v});
            json!({
                "name": group,
                "versions": versions.iter().map(entry).collect::<Vec<_>>(),
                "preferredVersion": entry(&versions[0]),
            })
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/GROUP`: one group's `APIGroup`, if any kind of it is served.
pub fn group(kinds: &[Kind], group: &str) -> Option<Value> {
    let list = group_list(kinds);
    list["groups"]
        .as_array()?
        .iter()
        .find(|g| g["name"] == group)
        .map(|g| {
            let mut g = g.clone();
            g["kind"] = json!("APIGroup");
            g["apiVersion"] = json!("v1");
            g
        })
}

/// `/api/v1` (group `""`) or `/apis/GROUP/VERSION`: the kinds served there; `None` where none is
/// (the API server answers 404).
pub fn resource_list(kinds: &[Kind], group: &str, version: &str) -> Option<Value> {
    let resources: Vec<Value> = kinds
        .iter()
        .filter(|k| k.group == group && k.version == version)
        .map(Kind::api_resource)
        .collect();
    if resources.is_empty() {
        return None;
    }
    // The core group's list has no apiVersion; a named group's has (what `kubectl get --raw` shows).
    Some(if group.is_empty() {
        json!({"kind": "APIResourceList", "groupVersion": version, "resources": resources})
    } else {
        json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": format!("{group}/{version}"),
            "resources": resources,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_resources_as_the_api_server_names_them() {
        assert_eq!(Kind::config_map().group_resource(), "configmaps");
        assert_eq!(
            Kind::compute_domain().group_resource(),
            "computedomains.resource.nvidia.com"
        );
        assert!(Kind::compute_domain().is_custom());
        assert!(!Kind::resource_claim().is_custom());
        assert!(!Kind::config_map().is_custom());
    }

    #[test]
    fn a_group_is_listed_once_with_its_versions() {
        let kinds = [
            Kind::config_map(),
            Kind::resource_claim(),
            Kind::resource_claim_template(),
            Kind::compute_domain(),
        ];
        let list = group_list(&kinds);
        let names: Vec<&str> = list["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["resource.k8s.io", "resource.nvidia.com"]);
        assert_eq!(
            list["groups"][0]["preferredVersion"],
            json!({"groupVersion": "resource.k8s.io/v1", "version": "v1"})
        );
        assert!(resource_list(&kinds, "resource.nvidia.com", "v1").is_none());
        let core = resource_list(&kinds, "", "v1").unwrap();
        assert_eq!(core["groupVersion"], "v1");
        assert!(core.get("apiVersion").is_none());
    }
}
