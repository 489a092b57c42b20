//! The kinds of object the policy reads, as data: one row per use, each with what the API server
//! calls it, the fields the policy reads of it, and how a missing one is made to exist. What
//! `contextAwareResources` lists is [`KINDS`] and the Namespace (a test compares them).

/// A kind of object the policy reads, and what creates it.
#[derive(Debug, PartialEq, Eq)]
pub struct ObjectKind {
    /// As `contextAwareResources` and the host call name it.
    pub api_version: &'static str,
    pub kind: &'static str,
    /// Its resource, as RBAC names it (the plural the API server serves it under).
    pub resource: &'static str,
    /// Namespaced (every kind here but the Namespace).
    pub namespaced: bool,
    /// The fields the policy reads of it, as the host's `field_masks` (dot-separated paths): the
    /// policy server prunes the rest before answering. Kinds of one `api_version` and `kind` share
    /// one list, because one answer stands for every use of an object in a request.
    pub masks: &'static [&'static str],
    /// The policy server may keep the answer 5 s (its cache of `get_resource`, one entry per
    /// object, dropped only when asked for again): only for a kind a cluster holds few of.
    pub cached: bool,
    /// How to make a missing one exist, around the pod's namespace.
    pub creates: (&'static str, &'static str),
}

impl ObjectKind {
    /// The API group, as RBAC names it (`""` for the core group).
    pub fn group(&self) -> &'static str {
        self.api_version
            .rsplit_once('/')
            .map_or("", |(group, _)| group)
    }
}

/// A ConfigMap: a container's `envFrom` source is read for its `data` keys (behaviour.md §4);
/// Azure's topology ConfigMap only for whether it exists.
const CONFIG_MAPS: ObjectKind = ObjectKind {
    api_version: "v1",
    kind: "ConfigMap",
    resource: "configmaps",
    namespaced: true,
    masks: &["data"],
    cached: false,
    creates: ("create it before the pod", ""),
};

/// Azure's NCCL topology: the files of `deploy/azure` are named `nccl-topo` in namespace `nemo`
/// (deploy/README.md, "Azure: the NCCL topology ConfigMap").
pub const TOPOLOGY: ObjectKind = ObjectKind {
    creates: (
        "create it from the file for your VM size (its name is nccl-topo: rename it if azure.ncclTopologyConfigMap says otherwise): sed 's/^  namespace: nemo$/  namespace: ",
        "/' deploy/azure/nccl-topology-ndv5.yaml | kubectl apply -f - (nccl-topology-ndv4.yaml for ND A100 v4)",
    ),
    ..CONFIG_MAPS
};

/// A ConfigMap a container takes env from (`envFrom`, behaviour.md §4): read for its keys, never
/// looked for after the injection.
pub const CONFIG_MAP: ObjectKind = CONFIG_MAPS;

/// OCI's Multus network (k8s.cni.cncf.io/v1, the Network Plumbing Working Group's CRD); the NVIDIA
/// network operator writes one per `SriovNetwork`. Only whether it exists is read.
pub const NETWORK: ObjectKind = ObjectKind {
    api_version: "k8s.cni.cncf.io/v1",
    kind: "NetworkAttachmentDefinition",
    resource: "network-attachment-definitions",
    namespaced: true,
    masks: &["metadata.name"],
    cached: false,
    creates: (
        "create it (the NVIDIA network operator writes one for each SriovNetwork, in its networkNamespace), or set oci.network to one that kubectl get network-attachment-definitions -A lists",
        "",
    ),
};

/// A Multus network of the `rdma` block (behaviour.md §3.9): the Network Operator writes one for
/// each of its network resources, in their `networkNamespace`.
pub const ATTACHMENT: ObjectKind = ObjectKind {
    creates: (
        "create it (the NVIDIA network operator writes one for each SriovNetwork, SriovIBNetwork, HostDeviceNetwork, MacvlanNetwork or IPoIBNetwork, in its networkNamespace), or name in the rdma block one that kubectl get network-attachment-definitions -A lists",
        "",
    ),
    ..NETWORK
};

/// The `ResourceClaimTemplate` of a `deviceClaim` (behaviour.md §3.8), and those a pod's claims
/// are made from, read for their requests (§3.10): `deploy/` ships those the vendor files name,
/// to be applied in every namespace that runs jobs.
pub const CLAIM_TEMPLATE: ObjectKind = ObjectKind {
    api_version: "resource.k8s.io/v1",
    kind: "ResourceClaimTemplate",
    resource: "resourceclaimtemplates",
    namespaced: true,
    masks: &["spec.spec.devices.requests"],
    cached: false,
    creates: (
        "create it in that namespace: kubectl apply -n ",
        " -f deploy/aws/dra/efa-claim-templates.yaml (EKS EFA DRA) or deploy/gcp/dra/default-rdma.yaml (GKE managed DRANET), or a template of that name for your DRA driver",
    ),
};

/// A `ResourceClaim` made ahead, which a pod's claim names by `resourceClaimName`: read only for
/// the GPUs it holds (behaviour.md §3.10), never for an injection.
pub const RESOURCE_CLAIM: ObjectKind = ObjectKind {
    api_version: "resource.k8s.io/v1",
    kind: "ResourceClaim",
    resource: "resourceclaims",
    namespaced: true,
    masks: &["spec.devices.requests"],
    cached: false,
    creates: (
        "create it in that namespace before the pod: kubectl apply -n ",
        " -f <the claim>",
    ),
};

/// The ComputeDomain a multi-node NVLink pod's IMEX channel comes from (behaviour.md §3.11): read
/// for its channel template, never looked for after the injection.
pub const COMPUTE_DOMAIN: ObjectKind = ObjectKind {
    api_version: "resource.nvidia.com/v1beta1",
    kind: "ComputeDomain",
    resource: "computedomains",
    namespaced: true,
    masks: &["spec.channel.resourceClaimTemplate.name"],
    cached: false,
    creates: (
        "create it before the job's pods: a ComputeDomain (resource.nvidia.com/v1beta1) with numNodes: 0 and spec.channel.resourceClaimTemplate.name, in namespace ",
        " (README, \"Multi-node NVLink\")",
    ),
};

/// The MPIJob (Kubeflow's mpi-operator v2) whose launcher an opted-in pod is (behaviour.md §3.12):
/// read for what its launcher passes to the ranks, never looked for after the injection. Of it the
/// policy reads its MPI, whether its launcher is a rank too, and its Worker's pod template: the
/// labels and annotations that decide whether the workers are the policy's, and the spec the
/// workers' env is read from as the engine reads a worker's (all of it: the engine reads most of
/// a pod spec, and a narrower mask would let the launcher's answer part from the workers' where
/// the engine reads one more field).
pub const MPI_JOB: ObjectKind = ObjectKind {
    api_version: "kubeflow.org/v2beta1",
    kind: "MPIJob",
    resource: "mpijobs",
    namespaced: true,
    masks: &[
        "spec.mpiImplementation",
        "spec.runLauncherAsWorker",
        "spec.mpiReplicaSpecs.Worker.template.metadata.labels",
        "spec.mpiReplicaSpecs.Worker.template.metadata.annotations",
        "spec.mpiReplicaSpecs.Worker.template.spec",
    ],
    cached: false,
    creates: (
        "create the MPIJob: its launcher is made by mpi-operator from it",
        "",
    ),
};

/// The pod's namespace, read for its Pod Security level (behaviour.md §11): cluster-scoped, and
/// few, so the policy server's 5 s cache of it is kept.
pub const NAMESPACE: ObjectKind = ObjectKind {
    api_version: "v1",
    kind: "Namespace",
    resource: "namespaces",
    namespaced: false,
    masks: &["metadata.labels"],
    cached: true,
    creates: ("", ""),
};

/// Every kind the policy reads an object of: what `contextAwareResources` lists.
pub const KINDS: &[&ObjectKind] = &[
    &CONFIG_MAP,
    &NETWORK,
    &CLAIM_TEMPLATE,
    &RESOURCE_CLAIM,
    &COMPUTE_DOMAIN,
    &MPI_JOB,
    &NAMESPACE,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kinds_are_the_metadatas_context_aware_resources() {
        let metadata = include_str!("../../policy-metadata.yml");
        for kind in KINDS {
            let listed = format!(
                "  - apiVersion: {}\n    kind: {}\n",
                kind.api_version, kind.kind
            );
            assert!(metadata.contains(&listed), "{listed}");
        }
        assert_eq!(metadata.matches("\n    kind: ").count(), KINDS.len());
        // The one host call the module makes, as Kubewarden names it.
        assert!(metadata.contains(&format!("\n  - kubernetes/{}\n", super::super::GET)));
    }

    #[test]
    fn one_object_one_answer_whatever_it_is_read_for() {
        // The uses of one apiVersion and kind ask for the same fields: the answer to the first
        // read stands for the others.
        for (a, b) in [(&TOPOLOGY, &CONFIG_MAP), (&NETWORK, &ATTACHMENT)] {
            assert_eq!((a.api_version, a.kind), (b.api_version, b.kind));
            assert_eq!(
                (a.masks, a.cached, a.resource),
                (b.masks, b.cached, b.resource)
            );
        }
        for kind in KINDS {
            assert!(!kind.masks.is_empty(), "{}", kind.kind);
            assert!(kind.namespaced || kind.cached, "{}", kind.kind);
            assert_eq!(kind.resource, kind.resource.to_lowercase());
        }
        assert_eq!(COMPUTE_DOMAIN.group(), "resource.nvidia.com");
        assert_eq!(NAMESPACE.group(), "");
    }

    #[test]
    fn every_namespaced_kind_says_what_creates_it() {
        for kind in KINDS.iter().filter(|k| k.namespaced) {
            assert!(!kind.creates.0.is_empty(), "{}", kind.kind);
        }
        for kind in [&TOPOLOGY, &ATTACHMENT] {
            assert!(!kind.creates.0.is_empty(), "{}", kind.kind);
        }
    }
}
