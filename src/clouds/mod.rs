//! The clouds, each described in one place (its file): its fabrics, each with its settings keys,
//! their checks and what each changes, and its injection with every key at its default; and the
//! machines it knows, each with the facts its vendor publishes. Adding a cloud is adding a
//! [`Cloud`] to [`ALL`]; adding a fabric is adding a [`Fabric`] to its cloud; adding a setting is
//! adding a [`Key`]. Nothing else in the crate names a cloud.

mod aws;
mod azure;
mod gcp;
mod oci;
mod rdma;

use std::borrow::Cow;

use crate::cluster::{NETWORK, ObjectKind};
use crate::profile::{
    DeviceClaim, DeviceCount, EnvVar, HostDirectory, Mount, Network, Profile, Rail, Source, Volume,
    mount, var,
};
use crate::ratio::Ratio;

/// Every cloud the policy knows, in the order messages list them.
pub const ALL: [&Cloud; 5] = [&aws::AWS, &azure::AZURE, &gcp::GCP, &oci::OCI, &rdma::RDMA];

/// One cloud: everything the rest of the policy needs to know about it.
#[derive(Debug)]
pub struct Cloud {
    /// The settings block's key.
    pub name: &'static str,
    /// Its fabrics, the default first. A cloud with several has the `fabric` key, which picks one
    /// for the pods whose machine does not.
    pub fabrics: &'static [&'static Fabric],
    /// The device plugin whose resource the built-in machines' device counts are; `None` for a
    /// cloud without a device.
    pub plugin: Option<&'static str>,
    /// The built-in instance rows: the machines the vendor documents.
    pub machines: &'static [Machine],
    /// Values of the node label that names a GPU model ([`ACCELERATOR_LABEL`]) and what each
    /// implies.
    pub accelerators: &'static [Accelerator],
    /// The pod annotations its injection writes; a key ending in `/` stands for every key under
    /// that prefix. The record may not be written under any of them.
    pub writes: &'static [&'static str],
    /// Node labels besides the instance type's that name a machine: the keys of its instance
    /// rows may be their values, as a pod's spec selects them.
    pub machine_labels: &'static [&'static str],
    /// The cloud's block may give the node's counts (`devicesPerNode` with `gpusPerNode`), as a
    /// row does, for every node: a cluster of one kind of machine.
    pub node_counts: bool,
    /// What its Multus networks are, for the preflight's message when one is missing.
    pub networks: &'static ObjectKind,
}

/// One fabric of a cloud: its settings keys and its injection.
#[derive(Debug)]
pub struct Fabric {
    /// The value of `<cloud>.fabric` that names it, and its name in messages.
    pub name: &'static str,
    /// The settings block of its keys under the cloud's: `None` for the cloud's block itself
    /// (the chart's keys, where a cloud had one fabric).
    pub block: Option<&'static str>,
    /// Where its keys are the cloud block's, a block of its own for its `env` only: for what the
    /// cloud's other fabrics must not get (GCP's `gcp.tcpxo`).
    pub env_block: Option<&'static str>,
    /// Its own keys, besides `env` (and, in the cloud's block, those every block has).
    pub keys: &'static [Key],
    /// Keys that cannot be set together.
    pub exclusive: &'static [(&'static str, &'static str)],
    /// The injection with every key at its default (behaviour.md §3).
    pub profile: fn() -> Profile<'static>,
    /// The name its NCCL network plugin registers: the `NCCL_NET` that `pinTransport` sets. NCCL
    /// compares it case-insensitively with each plugin's and fails at init when none matches
    /// (NVIDIA/nccl `src/plugin/net.cc`, `ncclNetInit`).
    pub transport: Option<&'static str>,
}

/// A machine (instance type) the cloud's vendor documents: a built-in instance row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Machine {
    /// Its `node.kubernetes.io/instance-type` value.
    pub name: &'static str,
    pub gpus: u64,
    /// The devices the cloud's device plugin ([`Cloud::plugin`]) advertises on one node (on GCP,
    /// the fabric's NICs); `None` where the vendor publishes no count.
    pub devices: Option<u64>,
    /// What else the machine implies: what a settings row for it would set.
    pub facts: Facts,
    /// Its GPUs form a multi-node NVLink domain: a job needs a ComputeDomain's channel claim.
    pub nvlink_domain: bool,
    /// The machine gets its fabric only through DRA: without a `deviceClaim`, nothing the policy
    /// injects can wire it.
    pub dra_only: Option<&'static str>,
    /// The volumes (and their mounts) of the fabric that a pod of a DRA-only machine does without.
    pub dra_without: &'static [&'static str],
}

/// What a built-in machine implies besides its counts, as typed data: the fabric it runs, keys of
/// the cloud's fabrics, env and capabilities, exactly what an instance row of the settings can
/// set (behaviour.md §3.6). A settings row of the same type is laid over it key by key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    pub fabric: Option<&'static Fabric>,
    /// Keys of the cloud's fabrics, each with its fabric and value.
    pub set: &'static [(&'static Fabric, &'static Key, Param<'static>)],
    /// Env values for whichever fabric, `(name, value)` sorted by name.
    pub env: &'static [(&'static str, &'static str)],
    /// Env values of one fabric's own block, sorted likewise.
    pub fabric_env: Option<(&'static Fabric, &'static [(&'static str, &'static str)])>,
    pub capabilities: &'static [&'static str],
}

impl Facts {
    /// A machine that implies nothing beyond its counts.
    pub const NONE: Facts = Facts {
        fabric: None,
        set: &[],
        env: &[],
        fabric_env: None,
        capabilities: &[],
    };

    /// The machine runs `fabric`.
    pub const fn runs(fabric: &'static Fabric) -> Facts {
        Facts {
            fabric: Some(fabric),
            ..Facts::NONE
        }
    }
}

impl Machine {
    /// A machine of `gpus` GPUs with `devices` of the plugin's devices.
    pub const fn new(name: &'static str, gpus: u64, devices: u64) -> Machine {
        Machine {
            name,
            gpus,
            devices: Some(devices),
            facts: Facts::NONE,
            nvlink_domain: false,
            dra_only: None,
            dra_without: &[],
        }
    }

    /// A machine of 8 GPUs, as most are.
    pub const fn eight_gpus(name: &'static str, devices: u64) -> Machine {
        Machine::new(name, 8, devices)
    }

    /// A machine whose device count the vendor does not publish.
    pub const fn uncounted(name: &'static str, gpus: u64) -> Machine {
        Machine {
            devices: None,
            ..Machine::new(name, gpus, 0)
        }
    }

    /// With what else it implies.
    pub const fn with(self, facts: Facts) -> Machine {
        Machine { facts, ..self }
    }

    /// Part of a multi-node NVLink domain.
    pub const fn nvlink(self) -> Machine {
        Machine {
            nvlink_domain: true,
            ..self
        }
    }

    /// Wired only through DRA, for the reason `why`; its pods do `without` these volumes of the
    /// fabric.
    pub const fn dra_only(self, why: &'static str, without: &'static [&'static str]) -> Machine {
        Machine {
            dra_only: Some(why),
            dra_without: without,
            ..self
        }
    }
}

/// The node label that names a node's GPU model on GKE.
pub const ACCELERATOR_LABEL: &str = "cloud.google.com/gke-accelerator";

/// A value of [`ACCELERATOR_LABEL`]: the machine it belongs to, or only the fabric where it
/// labels several machine types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accelerator {
    pub label: &'static str,
    pub machine: Option<&'static Machine>,
    pub fabric: &'static Fabric,
}

/// Whether some cloud's injection writes the annotation `key`.
pub fn writes_annotation(key: &str) -> bool {
    let writes = |written: &&str| match written.strip_suffix('/') {
        Some(_) => key.starts_with(written),
        None => key == *written,
    };
    ALL.iter().any(|cloud| cloud.writes.iter().any(writes))
}

impl Cloud {
    /// The fabric named `name`.
    pub fn fabric(&self, name: &str) -> Option<&'static Fabric> {
        self.fabrics.iter().copied().find(|f| f.name == name)
    }

    /// The fabric whose keys sit in the cloud's own block.
    pub fn own_fabric(&self) -> Option<&'static Fabric> {
        self.fabrics.iter().copied().find(|f| f.block.is_none())
    }

    /// The fabric pods get when neither their machine nor the settings pick one.
    pub fn default_fabric(&self) -> &'static Fabric {
        self.fabrics[0]
    }

    /// The built-in row of `name`.
    pub fn machine(&self, name: &str) -> Option<&'static Machine> {
        self.machines.iter().find(|m| m.name == name)
    }

    /// The cloud's own keys in its block, besides those every block has.
    pub fn own_keys(&self) -> &'static [Key] {
        self.own_fabric().map_or(&[], |f| f.keys)
    }
}

/// A fabric is one `static` of its cloud's table: told apart by address.
impl PartialEq for Fabric {
    fn eq(&self, other: &Fabric) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for Fabric {}

impl Fabric {
    pub fn key(&self, name: &str) -> Option<&'static Key> {
        self.keys.iter().find(|key| key.name == name)
    }
}

/// A settings key of one fabric: how its value is read and checked, and what it changes.
#[derive(Debug)]
pub struct Key {
    pub name: &'static str,
    pub kind: Kind,
}

/// Keys are told apart by name: a fabric's are unique (a test holds them), and a machine's
/// facts name the same key as the settings' reader finds in the fabric's list.
impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.name == other.name
    }
}

impl Eq for Key {}

/// How a key's value is read and checked (behaviour.md §1.4), and the change it makes, typed by
/// the value its reader gives: a key and its value cannot disagree.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// Devices per GPU: a number greater than 0 and at most 64.
    PerGpu { set: fn(&mut Profile<'_>, Ratio) },
    /// A whole number from `min` to `max`.
    Whole {
        min: u64,
        max: u64,
        set: fn(&mut Profile<'_>, u64),
    },
    /// A string that `valid` accepts, `what` saying what it must be.
    Text {
        valid: fn(&str) -> bool,
        what: &'static str,
        set: for<'a> fn(&mut Profile<'a>, Cow<'a, str>),
    },
    /// Like `Text`, but `null` or `""` turn the thing off (`None`).
    Optional {
        valid: fn(&str) -> bool,
        what: &'static str,
        set: for<'a> fn(&mut Profile<'a>, Option<Cow<'a, str>>),
    },
    /// `true` or `false`.
    Switch { set: fn(&mut Profile<'_>, bool) },
    /// A list of from `len.0` to `len.1` strings (any number when `None`), each one `valid`
    /// accepts.
    Texts {
        len: Option<(usize, usize)>,
        valid: fn(&str) -> bool,
        what: &'static str,
        set: for<'a> fn(&mut Profile<'a>, Vec<Cow<'a, str>>),
    },
    /// `{template, name}`: the fabric's devices through a DRA claim.
    Claim,
    /// A Multus network: `name`, `namespace/name`, or `{name, namespace}` as Multus's JSON form
    /// writes it.
    Network {
        set: for<'a> fn(&mut Profile<'a>, Network<'a>),
    },
    /// A list of from `len.0` to `len.1` networks, each as [`Kind::Network`] reads it.
    Networks {
        len: (usize, usize),
        set: for<'a> fn(&mut Profile<'a>, Vec<Network<'a>>),
    },
    /// A list of from `len.0` to `len.1` rails, `{resourceName, network}`.
    Rails {
        len: (usize, usize),
        set: for<'a> fn(&mut Profile<'a>, Vec<Rail<'a>>),
    },
    /// A list of from `len.0` to `len.1` host directories, `{hostPath, mountPath}`.
    Directories {
        len: (usize, usize),
        set: for<'a> fn(&mut Profile<'a>, Vec<HostDirectory<'a>>),
    },
}

/// A key's value, read and checked by its [`Kind`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Param<'a> {
    PerGpu(Ratio),
    Whole(u64),
    Text(Cow<'a, str>),
    Off,
    Switch(bool),
    Texts(Vec<Cow<'a, str>>),
    Claim(DeviceClaim<'a>),
    Network(Network<'a>),
    Networks(Vec<Network<'a>>),
    Rails(Vec<Rail<'a>>),
    Directories(Vec<HostDirectory<'a>>),
}

impl Key {
    /// Changes `profile` by `param`, the value this key's kind read.
    pub fn apply<'a>(&self, profile: &mut Profile<'a>, param: Param<'a>) {
        match (self.kind, param) {
            (Kind::PerGpu { set }, Param::PerGpu(ratio)) => set(profile, ratio),
            (Kind::Whole { set, .. }, Param::Whole(n)) => set(profile, n),
            (Kind::Text { set, .. }, Param::Text(text)) => set(profile, text),
            (Kind::Optional { set, .. }, Param::Text(text)) => set(profile, Some(text)),
            (Kind::Optional { set, .. }, Param::Off) => set(profile, None),
            (Kind::Switch { set }, Param::Switch(on)) => set(profile, on),
            (Kind::Texts { set, .. }, Param::Texts(texts)) => set(profile, texts),
            (Kind::Claim, Param::Claim(claim)) => profile.claim = Some(claim),
            (Kind::Network { set }, Param::Network(network)) => set(profile, network),
            (Kind::Networks { set, .. }, Param::Networks(networks)) => set(profile, networks),
            (Kind::Rails { set, .. }, Param::Rails(rails)) => set(profile, rails),
            (Kind::Directories { set, .. }, Param::Directories(dirs)) => set(profile, dirs),
            // The settings' reader reads a value by the key's kind, and a test gives every key
            // of the tables a value of its kind: no other pair is made.
            (kind, param) => debug_assert!(false, "{}: {param:?} for {kind:?}", self.name),
        }
    }
}

// What several clouds share.

const SHARED_MEMORY_MOUNT: Mount<'static> = mount!("nv-shared-memory", "/dev/shm");
const SHARED_MEMORY: &str = SHARED_MEMORY_MOUNT.volume;

fn shared_memory() -> Volume<'static> {
    Volume {
        name: SHARED_MEMORY,
        source: Source::Memory,
    }
}

/// The profile every table starts from: nothing.
fn empty() -> Profile<'static> {
    Profile {
        device: None,
        default_cpu_request: None,
        env: Vec::new(),
        mounts: Vec::new(),
        volumes: Vec::new(),
        capabilities: Vec::new(),
        harden: false,
        sidecar: None,
        annotations: Vec::new(),
        interfaces: None,
        network: None,
        rails: Vec::new(),
        networks: Vec::new(),
        whole_node: None,
        claim: None,
    }
}

// Azure and OCI share the InfiniBand base of NCCL, Open MPI and UCX settings (the chart's); Azure
// adds its topology file in the middle, OCI its InfiniBand tuning at the end.
const RDMA_BASE_HEAD: &[EnvVar<'static>] = &[
    var!("CUDA_DEVICE_ORDER", "PCI_BUS_ID"),
    var!("NCCL_IB_PCI_RELAXED_ORDERING", "1"),
    var!("NCCL_SOCKET_IFNAME", "eth0"),
];
const RDMA_BASE_TAIL: &[EnvVar<'static>] = &[
    var!("OMPI_MCA_coll_hcoll_enable", "0"),
    var!("OMPI_MCA_orte_keep_fqdn_hostnames", "t"),
    var!("UCX_IB_PCI_RELAXED_ORDERING", "on"),
    var!("UCX_MEM_EVENTS", "n"),
    var!("UCX_NET_DEVICES", "eth0"),
    var!("UCX_TLS", "tcp"),
    var!("KUBE_NODE_TYPE", "kube-gpu-node"),
];

/// Sets the per-GPU count of the profile's device.
fn set_per_gpu(profile: &mut Profile<'_>, ratio: Ratio) {
    if let Some(device) = &mut profile.device {
        device.count = DeviceCount::PerGpu(ratio);
    }
}

/// The per-GPU count of the cloud's device, under the key `name`.
const fn per_gpu_key(name: &'static str) -> Key {
    Key {
        name,
        kind: Kind::PerGpu { set: set_per_gpu },
    }
}

/// `deviceClaim`: the fabric's devices through a DRA claim (behaviour.md §3.8). The key of
/// every fabric a DRA driver serves.
const DEVICE_CLAIM: Key = Key {
    name: DEVICE_CLAIM_KEY,
    kind: Kind::Claim,
};

/// The name of [`DEVICE_CLAIM`], which the settings' reader names where no fabric has it.
pub const DEVICE_CLAIM_KEY: &str = "deviceClaim";

/// Sets the device's resource name.
fn set_resource<'a>(profile: &mut Profile<'a>, resource: Cow<'a, str>) {
    if let Some(device) = &mut profile.device {
        device.resource = resource;
    }
}

/// The device count of a cloud whose default is `n` devices per GPU.
fn per_gpu(n: u64) -> DeviceCount {
    DeviceCount::PerGpu(Ratio::whole(n))
}

#[cfg(test)]
mod tests {
    //! The tables themselves: names unique, every mount backed by a declared volume, every string
    //! one the API server accepts, every key's change visible.
    use super::*;
    use crate::k8s::names::{is_dns1123_subdomain, is_qualified_name, is_qualified_name_part};
    use crate::settings::profile_of;
    use serde_json::json;
    use std::collections::HashSet;

    fn fabrics() -> impl Iterator<Item = (&'static Cloud, &'static Fabric)> {
        ALL.iter()
            .flat_map(|cloud| cloud.fabrics.iter().map(move |fabric| (*cloud, *fabric)))
    }

    fn defaults() -> Vec<Profile<'static>> {
        fabrics().map(|(_, fabric)| (fabric.profile)()).collect()
    }

    fn unique<'a>(what: &str, items: impl IntoIterator<Item = &'a str>) {
        let mut seen = HashSet::new();
        for item in items {
            assert!(seen.insert(item), "{what} {item} appears twice");
        }
    }

    #[test]
    fn the_json_written_at_compile_time_is_what_serde_writes() {
        // The members in the API's order, each value as serde_json writes it.
        let text = |s: &str| serde_json::to_string(s).unwrap();
        for p in defaults() {
            let sidecar = p.sidecar.iter().flat_map(|s| s.env);
            for var in p.env.iter().chain(sidecar) {
                let entry = format!(
                    r#"{{"name":{},"value":{}}}"#,
                    text(&var.name),
                    text(&var.value)
                );
                assert_eq!(var.json, entry);
            }
            let sidecar = p.sidecar.iter().flat_map(|s| s.mounts);
            for mount in p.mounts.iter().chain(sidecar) {
                let read_only = if mount.read_only {
                    r#","readOnly":true"#
                } else {
                    ""
                };
                let entry = format!(
                    r#"{{"name":{},"mountPath":{}{read_only}}}"#,
                    text(mount.volume),
                    text(&mount.path)
                );
                assert_eq!(mount.json, entry);
            }
            for (key, value) in &p.annotations {
                let parsed: String = serde_json::from_str(value).unwrap();
                assert_eq!(*value, text(&parsed), "{key}");
            }
        }
    }

    #[test]
    fn names_and_paths_are_unique() {
        for p in defaults() {
            unique("env", p.env.iter().map(|e| e.name.as_ref()));
            unique("mount name", p.mounts.iter().map(|m| m.volume));
            unique("mount path", p.mounts.iter().map(|m| m.path.as_ref()));
            unique("volume", p.volumes.iter().map(|v| v.name));
            unique("annotation", p.annotations.iter().map(|a| a.0));
            if let Some(sidecar) = &p.sidecar {
                unique(
                    "sidecar mount path",
                    sidecar.mounts.iter().map(|m| m.path.as_ref()),
                );
            }
        }
        for (_, fabric) in fabrics() {
            unique("key", fabric.keys.iter().map(|k| k.name));
        }
        for cloud in ALL {
            unique("fabric", cloud.fabrics.iter().map(|f| f.name));
            unique("built-in row", cloud.machines.iter().map(|m| m.name));
            unique("accelerator", cloud.accelerators.iter().map(|a| a.label));
            let own = cloud.fabrics.iter().filter(|f| f.block.is_none()).count();
            assert!(
                own <= 1,
                "{}: one fabric at most has its keys in the block",
                cloud.name
            );
        }
        unique("cloud", ALL.iter().map(|c| c.name));
    }

    #[test]
    fn every_mount_names_a_declared_volume_and_every_volume_is_mounted() {
        for p in defaults() {
            let sidecar_mounts = p.sidecar.as_ref().map(|s| s.mounts).unwrap_or(&[]);
            let mounted: HashSet<_> = p
                .mounts
                .iter()
                .chain(sidecar_mounts)
                .map(|m| m.volume)
                .collect();
            let declared: HashSet<_> = p.volumes.iter().map(|v| v.name).collect();
            assert_eq!(mounted, declared);
        }
    }

    /// The tables' entries are stored as JSON text, their names and values cut out of it.
    #[test]
    fn every_entry_text_is_the_json_of_its_fields() {
        let value = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
        for p in defaults() {
            for e in &p.env {
                let fields = serde_json::json!({"name": e.name, "value": e.value});
                assert_eq!(value(&e.json), fields, "{}", e.json);
            }
            let sidecar_mounts = p.sidecar.as_ref().map(|s| s.mounts).unwrap_or(&[]);
            for m in p.mounts.iter().chain(sidecar_mounts) {
                let mut fields = serde_json::json!({"name": m.volume, "mountPath": m.path});
                if m.read_only {
                    fields["readOnly"] = true.into();
                }
                assert_eq!(value(&m.json), fields, "{}", m.json);
            }
        }
    }

    #[test]
    fn every_string_is_valid_kubernetes() {
        for p in defaults() {
            for e in &p.env {
                let c_identifier = e
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_');
                assert!(
                    c_identifier && !e.name.starts_with(|c: char| c.is_ascii_digit()),
                    "{}",
                    e.name
                );
            }
            for v in &p.volumes {
                assert!(
                    is_dns1123_subdomain(v.name) && v.name.len() <= 63,
                    "{}",
                    v.name
                );
            }
            for m in &p.mounts {
                assert!(m.path.starts_with('/'), "{}", m.path);
            }
            for (key, _) in &p.annotations {
                assert!(is_qualified_name(key), "{key}");
            }
            if let Some(device) = &p.device {
                assert!(is_qualified_name(&device.resource) && device.resource.contains('/'));
            }
            let sidecar = p.sidecar.as_ref().map(|s| s.capabilities).unwrap_or(&[]);
            for cap in p
                .capabilities
                .iter()
                .map(|c| c.as_ref())
                .chain(sidecar.iter().copied())
            {
                assert!(
                    !cap.starts_with("CAP_")
                        && cap.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'),
                    "{cap}"
                );
            }
        }
        for cloud in ALL {
            for machine in cloud.machines {
                assert!(is_qualified_name_part(machine.name), "{}", machine.name);
                assert!(
                    machine.gpus > 0 && machine.devices.is_none_or(|d| d <= 1024),
                    "{}",
                    machine.name
                );
            }
            for accelerator in cloud.accelerators {
                assert!(is_qualified_name_part(accelerator.label));
                assert!(
                    cloud.fabrics.contains(&accelerator.fabric),
                    "{}",
                    accelerator.label
                );
                if let Some(machine) = accelerator.machine {
                    assert_eq!(cloud.machine(machine.name), Some(machine));
                    assert!(
                        machine.dra_only.is_some()
                            || machine.facts.fabric == Some(accelerator.fabric),
                        "{}: the label's fabric is its machine's",
                        accelerator.label
                    );
                }
            }
        }
    }

    /// Every built-in row's facts are what a settings row of its cloud may set: the cloud's
    /// fabrics and keys, env sorted by name (the order the layers merge in) with valid names,
    /// capabilities a settings row would accept.
    #[test]
    fn every_built_in_rows_facts_are_a_settings_rows() {
        let sorted = |env: &[(&str, &str)]| env.windows(2).all(|w| w[0].0 < w[1].0);
        for cloud in ALL {
            for machine in cloud.machines {
                let facts = machine.facts;
                let name = machine.name;
                assert!(
                    facts.fabric.is_none_or(|f| cloud.fabrics.contains(&f)),
                    "{name}"
                );
                for (fabric, key, param) in facts.set {
                    assert!(cloud.fabrics.contains(fabric), "{name}");
                    assert_eq!(fabric.key(key.name), Some(*key), "{name}");
                    let mut profile = (fabric.profile)();
                    key.apply(&mut profile, param.clone());
                }
                assert!(sorted(facts.env), "{name}: env sorted by name");
                if let Some((fabric, env)) = facts.fabric_env {
                    assert!(cloud.fabrics.contains(&fabric), "{name}");
                    assert!(sorted(env), "{name}: env sorted by name");
                }
                let env = facts
                    .env
                    .iter()
                    .chain(facts.fabric_env.iter().flat_map(|f| f.1));
                for (variable, _) in env {
                    assert!(crate::k8s::names::is_env_name(variable), "{name}");
                }
                for capability in facts.capabilities {
                    assert!(crate::k8s::names::is_capability(capability), "{name}");
                }
            }
        }
    }

    /// MNNVL needs cuMem: `NCCL_CUMEM_ENABLE=0` turns it off silently (NVIDIA/nccl), so no row of
    /// a multi-node NVLink machine sets it, built in or in a vendor file (behaviour.md §3.11).
    #[test]
    fn no_multi_node_nvlink_row_turns_cumem_off() {
        let off = |env: &[(&str, &str)]| env.contains(&("NCCL_CUMEM_ENABLE", "0"));
        let nvlink: Vec<&str> = ALL
            .iter()
            .flat_map(|cloud| cloud.machines)
            .filter(|m| m.nvlink_domain)
            .map(|m| m.name)
            .collect();
        assert!(nvlink.len() >= 8, "{nvlink:?}");
        for machine in ALL.iter().flat_map(|cloud| cloud.machines) {
            let facts = machine.facts;
            let fabric_env = facts.fabric_env.map_or(&[][..], |(_, env)| env);
            let turns_off = off(facts.env) || off(fabric_env);
            assert!(!(machine.nvlink_domain && turns_off), "{}", machine.name);
        }
        let vendor = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/settings/vendor");
        for file in case_runner::yaml_files(std::path::Path::new(vendor)).unwrap() {
            let settings = case_runner::read_yaml(&file).unwrap();
            for (_, block) in settings.as_object().into_iter().flatten() {
                let rows = block["instanceTypes"].as_object().into_iter().flatten();
                for (name, row) in rows {
                    let mnnvl = match row["multiNodeNVLink"].as_bool() {
                        Some(said) => said,
                        None => nvlink.contains(&name.as_str()),
                    };
                    let envs = [&row["env"], &row["rdma"]["env"], &row["tcpx"]["env"]];
                    let turns_off = envs.iter().any(|env| env["NCCL_CUMEM_ENABLE"] == "0");
                    assert!(!(mnnvl && turns_off), "{}: {name}", file.display());
                }
            }
        }
    }

    /// A settings row laid over a built-in one reads the row's machine and facts.
    #[test]
    fn every_built_in_row_is_a_row_of_the_settings() {
        for cloud in ALL {
            for machine in cloud.machines {
                let settings = json!({cloud.name: {"enabled": true}}).to_string();
                let config = crate::settings::Config::read(&settings).unwrap();
                let row = config
                    .cloud
                    .row(machine.name)
                    .unwrap_or_else(|e| panic!("{}: {e}", machine.name))
                    .expect("a built-in row");
                assert_eq!(row.gpus, Some(machine.gpus));
                assert_eq!(row.machine, Some(machine));
                assert_eq!(
                    row.overlay,
                    crate::layers::Overlay::from(&machine.facts),
                    "{}",
                    machine.name
                );
            }
        }
    }

    #[test]
    fn clouds_with_a_device_have_a_plugin_and_a_per_gpu_key() {
        for (cloud, fabric) in fabrics() {
            let device = (fabric.profile)().device;
            assert_eq!(device.is_some(), cloud.plugin.is_some(), "{}", cloud.name);
            if let Some(device) = device {
                let key = fabric.key(device.per_gpu_key);
                assert!(
                    matches!(key.map(|k| k.kind), Some(Kind::PerGpu { .. })),
                    "{}",
                    cloud.name
                );
                assert_eq!(device.cloud, cloud.name);
            }
        }
    }

    /// Every key, set to a value its kind accepts, changes the cloud's profile: a key whose
    /// `apply` expected another kind of value would silently do nothing.
    #[test]
    fn every_key_changes_the_profile() {
        for (cloud, fabric) in fabrics() {
            for key in fabric.keys {
                let value = match key.kind {
                    Kind::PerGpu { .. } => json!(0.5),
                    Kind::Whole { max, .. } => json!(max),
                    Kind::Text { .. } | Kind::Optional { .. } => match key.name {
                        "rdmaDeviceName" => json!("ib"),
                        "ncclTopologyConfigMap" => json!("nccl-topo-ndv5"),
                        "resourceName" => json!("nvidia.com/rdma-vf"),
                        "network" => json!("default/rdma-vf"),
                        "daemonImage" => json!("registry.example/daemon:2"),
                        "efaLibraryPath" => json!("/opt/efa"),
                        "cpuRequest" => json!("250m"),
                        other => panic!("give {other} a test value"),
                    },
                    Kind::Texts { len, .. } => json!(vec!["vpc1"; len.map_or(1, |(min, _)| min)]),
                    Kind::Claim => json!({"template": "nics-{count}"}),
                    Kind::Switch { .. } => json!(true),
                    Kind::Network { .. } => json!({"name": "rail0", "namespace": "net"}),
                    Kind::Networks { .. } => json!(["net/a", {"name": "b"}]),
                    Kind::Rails { .. } => {
                        json!([{"resourceName": "nvidia.com/rail0", "network": "rail0"}])
                    }
                    Kind::Directories { .. } => json!([{"hostPath": "/etc/t", "mountPath": "/t"}]),
                };
                let settings = match fabric.block {
                    None => json!({cloud.name: {"enabled": true, key.name: value}}),
                    Some(block) => json!({cloud.name: {
                        "enabled": true, "fabric": fabric.name, block: {key.name: value}
                    }}),
                };
                let changed = format!("{:?}", profile_of(settings));
                assert_ne!(
                    changed,
                    format!("{:?}", (fabric.profile)()),
                    "{}.{}",
                    cloud.name,
                    key.name
                );
            }
        }
    }
}
