//! What the policy may read in a cluster, per cloud: the rows of policy-metadata.yml's
//! `contextAwareResources` a cloud's injection refers to, with the API group and resource name
//! RBAC needs for each (which the metadata does not hold). A kind the metadata lists and this
//! table does not know is an error, so that a new read never ships without its RBAC.

/// One kind the policy may read: `(apiVersion, kind, API group, resource)`, and the clouds whose
/// injection refers to it (empty: every cloud).
pub struct Readable {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub group: &'static str,
    pub resource: &'static str,
    pub clouds: &'static [&'static str],
    /// Why the policy reads it, for the RBAC's comment.
    pub why: &'static str,
}

/// In the order the manifests list them.
pub const READABLE: &[Readable] = &[
    Readable {
        api_version: "v1",
        kind: "ConfigMap",
        group: "",
        resource: "configmaps",
        clouds: &[],
        why: "The ConfigMaps GPU containers take env from (envFrom), whose keys stay the user's; on Azure also the NCCL topology ConfigMap (README \"The user's pod wins\", \"Preflight\")",
    },
    Readable {
        api_version: "k8s.cni.cncf.io/v1",
        kind: "NetworkAttachmentDefinition",
        group: "k8s.cni.cncf.io",
        resource: "network-attachment-definitions",
        clouds: &["oci", "rdma"],
        why: "The Multus networks the pod is attached to (README \"Preflight\")",
    },
    Readable {
        api_version: "resource.k8s.io/v1",
        kind: "ResourceClaimTemplate",
        group: "resource.k8s.io",
        resource: "resourceclaimtemplates",
        clouds: &[],
        why: "A deviceClaim's template, and those pods take their GPUs by (README \"Preflight\", \"GPUs through DRA\")",
    },
    Readable {
        api_version: "resource.k8s.io/v1",
        kind: "ResourceClaim",
        group: "resource.k8s.io",
        resource: "resourceclaims",
        clouds: &[],
        why: "The claims made ahead that pods take their GPUs by (README \"GPUs through DRA\")",
    },
    Readable {
        api_version: "resource.nvidia.com/v1beta1",
        kind: "ComputeDomain",
        group: "resource.nvidia.com",
        resource: "computedomains",
        clouds: &[],
        why: "A multi-node NVLink pod's ComputeDomain, for its IMEX channel (README \"Multi-node NVLink\")",
    },
    Readable {
        api_version: "kubeflow.org/v2beta1",
        kind: "MPIJob",
        group: "kubeflow.org",
        resource: "mpijobs",
        clouds: &[],
        why: "An opted-in MPIJob launcher's job, for what it passes to its ranks (README \"MPI jobs\")",
    },
    Readable {
        api_version: "v1",
        kind: "Namespace",
        group: "",
        resource: "namespaces",
        clouds: &[],
        why: "The pod's namespace, for its Pod Security level (README \"Pod Security\")",
    },
];

impl Readable {
    pub fn serves(&self, cloud: &str) -> bool {
        self.clouds.is_empty() || self.clouds.contains(&cloud)
    }
}
