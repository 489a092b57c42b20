//! The block of a device-plugin cloud (`aws`, `azure`, `oci`) or of the `rdma` kind, for the pods
//! that name neither machine nor pool ([`crate::fallback`]): its device, how a pod asks for it (per
//! GPU, the fewest of the nodes that offer it; per container; per rail; none) and its Multus
//! network, each with a comment saying what it was read from. GKE's block is `gcp.rs`'s.

use serde_yaml::{Mapping, Value};

use crate::count::{per_gpu, per_gpu_text};
use crate::dra;
use crate::fabric::Fabric;
use crate::fallback;
use crate::input::Cluster;
use crate::multus;
use crate::shape::Shape;
use crate::write::Written;

pub fn aws(
    out: &mut Written,
    body: &mut Mapping,
    cluster: &Cluster,
    shapes: &[Shape],
    main: &Shape,
) {
    let low = fallback::smallest(shapes, main);
    match &low.fabric {
        Fabric::Dedicated { devices, .. } => {
            body.insert("efaDevicesPerGPU".into(), per_gpu(*devices, low.gpus));
            out.note(
                &["aws", "efaDevicesPerGPU"],
                format!(
                    "{} of {}: {devices} EFA for {} GPUs, for pods that name neither instance type nor pool: the fewest per GPU of the nodes with EFA, so that such a pod fits on each.",
                    per_gpu_text(*devices, low.gpus),
                    low.title(),
                    low.gpus
                ),
            );
        }
        _ if cluster.has_class(dra::EFA_CLASS) => {
            let mut claim = Mapping::new();
            claim.insert("template".into(), "efa-{count}".into());
            claim.insert("name".into(), "efa".into());
            body.insert("deviceClaim".into(), Value::Mapping(claim));
            out.note(
                &["aws", "deviceClaim"],
                format!(
                    "The nodes advertise no vpc.amazonaws.com/efa and the DeviceClass {} exists: EFA through the DRA driver (aws-dra.yaml). Create the templates efa-1 ... efa-32 of deploy/aws/dra/ in every training namespace.",
                    dra::EFA_CLASS
                ),
            );
        }
        _ => out.note(
            &["aws"],
            "No GPU node advertises vpc.amazonaws.com/efa: the rows request none (devicesPerNode: 0); a pod that names neither instance type nor pool still gets efaDevicesPerGPU.".to_owned(),
        ),
    }
    // AWS's images carry libfabric and aws-ofi-nccl, and the stock EKS AMIs install EFA with
    // --minimal, without /opt/amazon-efa-ofi (awslabs/amazon-eks-ami install-efa.sh; aws.yaml).
    body.insert("efaLibraryPath".into(), Value::Null);
    out.note(
        &["aws", "efaLibraryPath"],
        "No host directory of EFA libraries: AWS's images carry libfabric and aws-ofi-nccl, and the stock EKS AMIs lack /opt/amazon-efa-ofi, where a pod mounting it stays in ContainerCreating (aws.yaml). Set it where your nodes have that directory and your images do not carry the libraries.".to_owned(),
    );
}

pub fn azure(out: &mut Written, body: &mut Mapping, shapes: &[Shape], main: &Shape) {
    let Some(resource) = main.fabric.resource() else {
        out.note(
            &["azure"],
            "No GPU node advertises an rdma/ resource: the rows request none (devicesPerNode: 0); a pod that names neither instance type nor pool still gets rdma/hca_shared_devices_a, the chart's default.".to_owned(),
        );
        return;
    };
    let name = resource.trim_start_matches("rdma/");
    body.insert("rdmaDeviceName".into(), name.into());
    match &main.fabric {
        Fabric::Shared { count, .. } => {
            body.insert("rdmaDevicesPerContainer".into(), 1.into());
            out.note(
                &["azure", "rdmaDeviceName"],
                format!(
                    "{resource}: {count} per node, the RDMA shared device plugin's pod slots: 1 per container."
                ),
            );
        }
        Fabric::Dedicated { .. } => {
            let low = fallback::smallest(shapes, main);
            let (devices, gpus) = (dedicated(low), low.gpus);
            body.insert("rdmaDevicesPerGPU".into(), per_gpu(devices, gpus));
            out.note(
                &["azure", "rdmaDeviceName"],
                format!(
                    "{resource}: {devices} per node of {gpus} GPUs on {}, one per InfiniBand NIC (the SR-IOV device plugin), the fewest per GPU of the nodes that offer it.",
                    low.title()
                ),
            );
        }
        _ => {}
    }
    out.note(
        &["azure"],
        "ncclTopologyConfigMap is left at nccl-topo: create that ConfigMap with the VM size's topology file in every training namespace, as azure.yaml says (not on the nodes).".to_owned(),
    );
}

pub fn oci(
    out: &mut Written,
    body: &mut Mapping,
    cluster: &Cluster,
    shapes: &[Shape],
    main: &Shape,
) {
    let Fabric::Dedicated { resource, .. } = &main.fabric else {
        out.note(
            &["oci"],
            "No GPU node advertises a device (host networking, as Oracle's GB200 nodes): the rows request none (devicesPerNode: 0); a pod that names neither shape nor pool still gets rdmaDevicesPerGPU of the default resource.".to_owned(),
        );
        return;
    };
    let low = fallback::smallest(shapes, main);
    body.insert("resourceName".into(), resource.as_str().into());
    body.insert(
        "rdmaDevicesPerGPU".into(),
        per_gpu(dedicated(low), low.gpus),
    );
    let network = multus::network_for(out, cluster, resource, "oci", Some("default/rdma-vf"));
    if let Some(network) = network {
        body.insert("network".into(), network.into());
    }
}

pub fn rdma(
    out: &mut Written,
    body: &mut Mapping,
    cluster: &Cluster,
    shapes: &[Shape],
    main: &Shape,
) {
    match &main.fabric {
        Fabric::None => {
            body.insert("resourceName".into(), Value::Null);
            out.note(
                &["rdma", "resourceName"],
                format!(
                    "{} advertises no fabric device: no device is requested (the HCAs are in every container already, as on Nebius, or the nodes use host networking).",
                    main.title()
                ),
            );
        }
        Fabric::Dedicated { resource, devices } => {
            body.insert("resourceName".into(), resource.as_str().into());
            if main.key.is_none() && main.gpus <= crate::count::MAX_GPUS {
                // No row can name these nodes: the block gives their counts.
                body.insert("devicesPerNode".into(), (*devices).into());
                body.insert("gpusPerNode".into(), main.gpus.into());
            } else {
                let low = fallback::smallest(shapes, main);
                body.insert("devicesPerGPU".into(), per_gpu(dedicated(low), low.gpus));
            }
            out.note(
                &["rdma", "resourceName"],
                format!(
                    "{devices} per node of {} GPUs: dedicated devices, requested per GPU.",
                    main.gpus
                ),
            );
            if let Some(n) = multus::network_for(out, cluster, resource, "rdma", None) {
                body.insert("network".into(), n.into());
            }
        }
        Fabric::Shared { resource, count } => {
            body.insert("resourceName".into(), resource.as_str().into());
            body.insert("devicesPerContainer".into(), 1.into());
            out.note(
                &["rdma", "resourceName"],
                format!(
                    "{count} per node of {} GPUs: a shared pool, or a count that says only \"has the fabric\": 1 per container.",
                    main.gpus
                ),
            );
            if let Some(n) = multus::network_for(out, cluster, resource, "rdma", None) {
                body.insert("network".into(), n.into());
            }
        }
        Fabric::Rails(rails) => {
            body.insert("rails".into(), multus::rails(out, cluster, rails));
        }
    }
}

/// A shape's dedicated devices per node (0 for another fabric).
fn dedicated(s: &Shape) -> u64 {
    match s.fabric {
        Fabric::Dedicated { devices, .. } => devices,
        _ => 0,
    }
}
