//! The block of a device-plugin cloud (`aws`, `azure`, `oci`) or of the `rdma` kind, from the
//! largest group of GPU nodes: its device, how a pod asks for it (per GPU, per container, per
//! rail, none) and its Multus network, each with a comment saying what it was read from. GKE's
//! block is `gcp.rs`'s.

use serde_yaml::{Mapping, Value};

use crate::count::{per_gpu, per_gpu_text};
use crate::dra;
use crate::fabric::Fabric;
use crate::input::Cluster;
use crate::multus;
use crate::plan::Written;
use crate::shape::Shape;

pub fn aws(out: &mut Written, body: &mut Mapping, cluster: &Cluster, main: &Shape) {
    match &main.fabric {
        Fabric::Dedicated { devices, .. } => {
            body.insert("efaDevicesPerGPU".into(), per_gpu(*devices, main.gpus));
            out.note(
                &["aws", "efaDevicesPerGPU"],
                format!(
                    "{} of {}: {devices} EFA for {} GPUs, for pods that name no instance type.",
                    per_gpu_text(*devices, main.gpus),
                    main.title(),
                    main.gpus
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
            "The largest group advertises no vpc.amazonaws.com/efa: its rows request none (devicesPerNode: 0); a pod that names no instance type still gets efaDevicesPerGPU.".to_owned(),
        ),
    }
}

pub fn azure(out: &mut Written, body: &mut Mapping, main: &Shape) {
    let Some(resource) = main.fabric.resource() else {
        out.note(
            &["azure"],
            "The largest group advertises no rdma/ resource: its rows request none (devicesPerNode: 0); a pod that names no instance type still gets rdma/hca_shared_devices_a, the chart's default.".to_owned(),
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
        Fabric::Dedicated { devices, .. } => {
            body.insert("rdmaDevicesPerGPU".into(), per_gpu(*devices, main.gpus));
            out.note(
                &["azure", "rdmaDeviceName"],
                format!(
                    "{resource}: {devices} per node of {} GPUs, one per InfiniBand NIC (the SR-IOV device plugin).",
                    main.gpus
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

pub fn oci(out: &mut Written, body: &mut Mapping, cluster: &Cluster, main: &Shape) {
    let Fabric::Dedicated { resource, devices } = &main.fabric else {
        out.note(
            &["oci"],
            "The largest group advertises no device (host networking, as Oracle's GB200 nodes): its rows request none (devicesPerNode: 0); a pod that names no shape still gets rdmaDevicesPerGPU of the default resource.".to_owned(),
        );
        return;
    };
    body.insert("resourceName".into(), resource.as_str().into());
    body.insert("rdmaDevicesPerGPU".into(), per_gpu(*devices, main.gpus));
    let network = multus::network_for(out, cluster, resource, "oci", Some("default/rdma-vf"));
    if let Some(network) = network {
        body.insert("network".into(), network.into());
    }
}

pub fn rdma(out: &mut Written, body: &mut Mapping, cluster: &Cluster, main: &Shape) {
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
            if main.key.is_none() && main.gpus <= crate::rows::MAX_GPUS {
                // No row can name these nodes: the block gives their counts.
                body.insert("devicesPerNode".into(), (*devices).into());
                body.insert("gpusPerNode".into(), main.gpus.into());
            } else {
                body.insert("devicesPerGPU".into(), per_gpu(*devices, main.gpus));
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
