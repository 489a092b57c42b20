//! The DeviceClasses a pod's DRA claims are read by (behaviour.md §1.3, §3.10): those whose devices
//! are GPUs, counted like `gpuResources`, and those whose devices are the fabric's NICs, which
//! mean that the pod brings its fabric itself. Top-level keys beside `gpuResources`.

use std::borrow::Cow;

use super::common::first_of_each;
use super::reader::Reader;
use crate::error::Path;
use crate::json::tape::Value;
use crate::k8s::names::is_dns1123_subdomain;

pub const GPU_DEVICE_CLASSES: &str = "gpuDeviceClasses";
pub const FABRIC_DEVICE_CLASSES: &str = "fabricDeviceClasses";

/// The GPU classes of NVIDIA's DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu) and AMD's.
pub const DEFAULT_GPU_DEVICE_CLASSES: [&str; 2] = ["gpu.nvidia.com", "gpu.amd.com"];
/// The fabric classes the vendor files and `deploy/*/dra` name: EKS's EFA DRA driver and GKE
/// managed DRANET.
pub const DEFAULT_FABRIC_DEVICE_CLASSES: [&str; 2] = ["efa.networking.k8s.aws", "mrdma.google.com"];
/// How many classes each list may hold: each is looked up in every claim of a pod.
const MAX_CLASSES: usize = 16;

/// The two lists, each without repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceClasses<'a> {
    pub gpu: Vec<Cow<'a, str>>,
    pub fabric: Vec<Cow<'a, str>>,
}

impl Default for DeviceClasses<'_> {
    fn default() -> Self {
        DeviceClasses {
            gpu: DEFAULT_GPU_DEVICE_CLASSES.map(Cow::Borrowed).to_vec(),
            fabric: DEFAULT_FABRIC_DEVICE_CLASSES.map(Cow::Borrowed).to_vec(),
        }
    }
}

impl Reader {
    /// `gpuDeviceClasses` and `fabricDeviceClasses`: lists of 0 to 16 DeviceClass names (DNS
    /// subdomains); absent or `null`, the defaults.
    pub(super) fn device_classes<'a>(&mut self, top: Value<'_, 'a>) -> DeviceClasses<'a> {
        DeviceClasses {
            gpu: self.classes(top, GPU_DEVICE_CLASSES, &DEFAULT_GPU_DEVICE_CLASSES),
            fabric: self.classes(top, FABRIC_DEVICE_CLASSES, &DEFAULT_FABRIC_DEVICE_CLASSES),
        }
    }

    fn classes<'a>(
        &mut self,
        top: Value<'_, 'a>,
        key: &str,
        default: &[&'static str],
    ) -> Vec<Cow<'a, str>> {
        let defaults = || default.iter().map(|c| Cow::Borrowed(*c)).collect();
        let Some(raw) = top.get(key).filter(|raw| !raw.is_null()) else {
            return defaults();
        };
        let mut classes = self
            .strings(
                &Path::Key(&Path::Root, key),
                raw,
                Some((0, MAX_CLASSES)),
                is_dns1123_subdomain,
                "a DeviceClass name (a DNS subdomain) such as gpu.nvidia.com",
            )
            .unwrap_or_else(defaults);
        first_of_each(&mut classes);
        classes
    }
}
