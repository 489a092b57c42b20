//! What one cloud injects, as data: the merge engine applies any [`Profile`]. A cloud's profile
//! with its defaults is a table in `clouds/`; the settings change it (behaviour.md §1, §3.6) by
//! replacing values, which may then borrow from the settings' text (`'a`).

use std::borrow::Cow;

use crate::json::write::{Fragment, push_joined, push_string, push_strings};
use crate::ratio::Ratio;

/// Everything a cloud adds to an opted-in pod.
#[derive(Debug, Clone)]
pub struct Profile<'a> {
    /// The device resource every GPU container gets, and how many (behaviour.md §3.5).
    pub device: Option<Device<'a>>,
    /// `requests.cpu` for a GPU container that sets no cpu request or limit.
    pub default_cpu_request: Option<Cow<'a, str>>,
    /// Appended to each GPU container, in this order.
    pub env: Vec<EnvVar<'a>>,
    /// Added to each GPU container, in this order.
    pub mounts: Vec<Mount<'a>>,
    /// Pod volumes, added in this order where something mounts them.
    pub volumes: Vec<Volume<'a>>,
    /// Added to each GPU container's `securityContext.capabilities.add`.
    pub capabilities: Vec<Cow<'a, str>>,
    /// Default GPU containers to `allowPrivilegeEscalation: false` and a `RuntimeDefault` seccomp
    /// profile, where that is safe (behaviour.md §5).
    pub harden: bool,
    /// A native sidecar appended to `spec.initContainers`.
    pub sidecar: Option<Sidecar<'a>>,
    /// Pod annotations set where absent: the key, and the value as its JSON string text, escaped
    /// at compile time ([`json_string!`](crate::json::write::json_string)): the tables' own.
    pub annotations: Vec<(&'static str, &'static str)>,
    /// GKE's multi-network annotation: the fabric's NICs on their networks.
    pub interfaces: Option<Interfaces<'a>>,
    /// A Multus network listed once per device of the whole pod.
    pub network: Option<Network<'a>>,
    /// Device resources of their own, one per rail of a multi-rail fabric, each with its network
    /// (behaviour.md §3.9).
    pub rails: Vec<Rail<'a>>,
    /// Multus networks listed once per pod, whatever its devices.
    pub networks: Vec<Network<'a>>,
    /// The fabric needs the whole node: pods with fewer GPUs are warned about.
    pub whole_node: Option<WholeNode>,
    /// The fabric's devices through a DRA claim instead of `device`, `interfaces` and `network`
    /// (behaviour.md §3.8).
    pub claim: Option<DeviceClaim<'a>>,
}

/// `template` with each `{count}` replaced by `count`.
pub fn with_count(template: &str, count: u64) -> String {
    template.replace(COUNT, &count.to_string())
}

/// What stands for the pod's device count in a `deviceClaim` template.
pub const COUNT: &str = "{count}";

/// `deviceClaim`: the `ResourceClaimTemplate` the pod's claim of the fabric is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceClaim<'a> {
    /// The template's name; `{count}` stands for the pod's device count.
    pub template: Cow<'a, str>,
    /// The pod claim's name; `None` for the fabric's name.
    pub name: Option<Cow<'a, str>>,
    /// Where the settings set it (`aws.deviceClaim`), for the message when the name it gives a
    /// pod is not one.
    pub setting: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device<'a> {
    pub resource: Cow<'a, str>,
    pub count: DeviceCount,
    /// The settings block and the key of the per-GPU count, named in warnings.
    pub cloud: &'static str,
    pub per_gpu_key: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceCount {
    /// `⌈G × r⌉` devices for G GPUs where the pod's instance type does not say otherwise.
    PerGpu(Ratio),
    /// The same number for every GPU container (a shared device plugin's pod slots).
    PerContainer(u64),
}

/// One entry of a settings `env` map: a value to set, or `None` to not inject the variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvChange<'a> {
    pub name: Cow<'a, str>,
    pub value: Option<Cow<'a, str>>,
}

/// A fabric that uses all of a node's GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WholeNode {
    /// The node's GPUs where the pod's machine is not known.
    pub gpus: u64,
    /// `GPUDirect-TCPXO uses all ` and ` GPUs and NICs of an A3 Mega node`: the text around the
    /// node's GPUs (the machine's where it is known) in the warning.
    pub why: (&'static str, &'static str),
}

impl WholeNode {
    /// Why, for a node of `gpus` GPUs.
    pub fn why(&self, gpus: u64) -> String {
        format!("{}{gpus}{}", self.why.0, self.why.1)
    }
}

/// `networking.gke.io/interfaces`: eth0 on the default network, then one NIC a network from
/// `eth<first>` on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interfaces<'a> {
    /// The annotation it is written under.
    pub key: &'static str,
    pub first: u64,
    pub networks: Vec<Cow<'a, str>>,
}

impl Interfaces<'_> {
    /// The annotation's value, compact JSON for the first `nics` networks (all of them for
    /// `None`), as the JSON text of that string: written escaped, not escaped afterwards.
    pub fn annotation(&self, nics: Option<u64>) -> String {
        let mut text = String::with_capacity(48 + 48 * self.networks.len());
        text.push_str(r#""[{\"interfaceName\":\"eth0\",\"network\":\"default\"}"#);
        let take = nics.map_or(self.networks.len(), |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        });
        for (eth, network) in (self.first..).zip(self.networks.iter().take(take)) {
            // Network names are DNS subdomains (the settings reader checks them): nothing in
            // them needs escaping, once or twice.
            text.push_str(r#",{\"interfaceName\":\"eth"#);
            text.push_str(&eth.to_string());
            text.push_str(r#"\",\"network\":\""#);
            text.push_str(network);
            text.push_str(r#"\"}"#);
        }
        text.push_str(r#"]""#);
        text
    }

    /// The annotation's value itself, decoded from [`Interfaces::annotation`]'s text.
    #[cfg(test)]
    pub fn json(&self, nics: Option<u64>) -> String {
        serde_json::from_str(&self.annotation(nics)).expect("a JSON string")
    }
}

/// An env entry. The tables' entries are made with [`var!`], so that their JSON text is written
/// at compile time: GCP adds 24 of them to every GPU container of every opted-in pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvVar<'a> {
    pub name: Cow<'a, str>,
    pub value: Cow<'a, str>,
    /// `{"name":…,"value":…}`
    pub json: Cow<'a, str>,
}

impl<'a> EnvVar<'a> {
    /// An entry whose value comes from the settings.
    pub fn new(name: Cow<'a, str>, value: Cow<'a, str>) -> EnvVar<'a> {
        let mut json = String::with_capacity(name.len() + value.len() + 22);
        json.push_str("{\"name\":");
        push_string(&mut json, &name);
        json.push_str(",\"value\":");
        push_string(&mut json, &value);
        json.push('}');
        EnvVar {
            name,
            value,
            json: Cow::Owned(json),
        }
    }
}

/// A `volumeMounts` entry; the tables' are made with [`mount!`] (JSON text at compile time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount<'a> {
    /// `name`
    pub volume: &'static str,
    /// `mountPath`
    pub path: Cow<'a, str>,
    /// `readOnly`, written only when true.
    pub read_only: bool,
    /// `{"name":…,"mountPath":…[,"readOnly":true]}`
    pub json: Cow<'a, str>,
}

impl<'a> Mount<'a> {
    /// A mount whose path comes from the settings.
    pub fn new(volume: &'static str, path: Cow<'a, str>, read_only: bool) -> Mount<'a> {
        let mut json = String::with_capacity(volume.len() + path.len() + 48);
        json.push_str("{\"name\":");
        push_string(&mut json, volume);
        json.push_str(",\"mountPath\":");
        push_string(&mut json, &path);
        if read_only {
            json.push_str(",\"readOnly\":true");
        }
        json.push('}');
        Mount {
            volume,
            path,
            read_only,
            json: Cow::Owned(json),
        }
    }
}

/// `var!("NAME", "value")`: an [`EnvVar`]. Name and value are literals that need no JSON escapes
/// (checked for every table by a test). Only the entry's JSON text is stored: name and value are
/// slices of it, cut at compile time.
macro_rules! var {
    ($name:literal, $value:literal) => {{
        const JSON: &str = concat!(r#"{"name":""#, $name, r#"","value":""#, $value, r#""}"#);
        const NAME: usize = r#"{"name":""#.len();
        const VALUE: usize = NAME + $name.len() + r#"","value":""#.len();
        // Constants, so that the cuts are made by the compiler wherever the macro is used.
        const NAME_TEXT: &str = $crate::profile::cut(JSON, NAME, $name.len());
        const VALUE_TEXT: &str = $crate::profile::cut(JSON, VALUE, $value.len());
        $crate::profile::EnvVar {
            name: ::std::borrow::Cow::Borrowed(NAME_TEXT),
            value: ::std::borrow::Cow::Borrowed(VALUE_TEXT),
            json: ::std::borrow::Cow::Borrowed(JSON),
        }
    }};
}

/// `mount!("volume", "/path")` and `mount!("volume", "/path", read_only)`: a [`Mount`], stored
/// as its JSON text like [`var!`]'s entries.
macro_rules! mount {
    ($volume:literal, $path:literal) => {
        $crate::profile::mount!(@ $volume, $path, false, "")
    };
    ($volume:literal, $path:literal, read_only) => {
        $crate::profile::mount!(@ $volume, $path, true, r#","readOnly":true"#)
    };
    (@ $volume:literal, $path:literal, $read_only:literal, $more:literal) => {{
        const JSON: &str = concat!(
            r#"{"name":""#,
            $volume,
            r#"","mountPath":""#,
            $path,
            r#"""#,
            $more,
            "}"
        );
        const VOLUME: usize = r#"{"name":""#.len();
        const PATH: usize = VOLUME + $volume.len() + r#"","mountPath":""#.len();
        const VOLUME_TEXT: &str = $crate::profile::cut(JSON, VOLUME, $volume.len());
        const PATH_TEXT: &str = $crate::profile::cut(JSON, PATH, $path.len());
        $crate::profile::Mount {
            volume: VOLUME_TEXT,
            path: ::std::borrow::Cow::Borrowed(PATH_TEXT),
            read_only: $read_only,
            json: ::std::borrow::Cow::Borrowed(JSON),
        }
    }};
}

/// `len` bytes of `text` from `start`, at compile time (the tables' macros cut names and values
/// out of their JSON text, so that each is stored once).
pub const fn cut(text: &'static str, start: usize, len: usize) -> &'static str {
    let (_, rest) = text.as_bytes().split_at(start);
    let (part, _) = rest.split_at(len);
    match std::str::from_utf8(part) {
        Ok(part) => part,
        Err(_) => panic!("cut inside a character"),
    }
}

pub(crate) use {mount, var};

impl Fragment for EnvVar<'_> {
    fn json(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.json)
    }
}

impl Fragment for Mount<'_> {
    fn json(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.json)
    }
}

impl Fragment for Volume<'_> {
    fn json(&self) -> Cow<'_, str> {
        Cow::Owned(self.text())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Volume<'a> {
    pub name: &'static str,
    pub source: Source<'a>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source<'a> {
    /// `emptyDir: {}`
    Scratch,
    /// `emptyDir: {medium: Memory}`: shared memory for NCCL, larger than the runtime's 64 MiB.
    Memory,
    HostPath {
        path: Cow<'a, str>,
        kind: Option<&'static str>,
    },
    ConfigMap {
        name: Cow<'a, str>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sidecar<'a> {
    pub name: &'static str,
    pub image: Cow<'a, str>,
    /// The entrypoint as an argv list (exec form: no shell reads it).
    pub command: Vec<Cow<'a, str>>,
    /// The one argument of a shell `command`: its script.
    pub script: Option<Cow<'a, str>>,
    pub env: &'static [EnvVar<'static>],
    pub capabilities: &'static [&'static str],
    pub mounts: &'static [Mount<'static>],
    /// The startup probe, where the settings ask for it.
    pub startup_probe: Option<StartupProbe>,
}

/// A sidecar's `startupProbe`, which passes only on a daemon that writes the file it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartupProbe {
    /// The `startupProbe` object as JSON text.
    pub json: &'static str,
    /// The oldest daemon version known to write the file (`v1.0.8`).
    pub since: &'static str,
}

impl Sidecar<'_> {
    /// The sidecar as an init container, as JSON text, without the mounts of `skipped` volumes.
    ///
    /// `restartPolicy: Always` on an init container makes it a native sidecar (Kubernetes
    /// 1.29+): it starts before the workload and is stopped after it, so the job can complete.
    /// The env, mounts and probe are the tables' JSON text, copied.
    pub fn container_text(&self, skipped: &[&str]) -> String {
        let mut text = String::with_capacity(1024);
        text.push_str(r#"{"name":"#);
        push_string(&mut text, self.name);
        text.push_str(r#","image":"#);
        push_string(&mut text, &self.image);
        text.push_str(r#","imagePullPolicy":"Always","command":"#);
        push_strings(&mut text, self.command.iter().map(|c| c.as_ref()));
        if let Some(script) = &self.script {
            text.push_str(r#","args":"#);
            push_strings(&mut text, [script.as_ref()]);
        }
        text.push_str(r#","env":["#);
        push_joined(&mut text, self.env.iter().map(|var| var.json.as_ref()));
        text.push_str(r#"],"resources":{},"restartPolicy":"Always","securityContext":{"capabilities":{"add":"#);
        push_strings(&mut text, self.capabilities.iter().copied());
        text.push_str(concat!(
            r#"}},"terminationMessagePath":"/dev/termination-log","#,
            r#""terminationMessagePolicy":"File","volumeMounts":["#
        ));
        push_joined(
            &mut text,
            self.mounts
                .iter()
                .filter(|m| !skipped.contains(&m.volume))
                .map(|m| m.json.as_ref()),
        );
        text.push(']');
        if let Some(probe) = self.startup_probe {
            text.push_str(r#","startupProbe":"#);
            text.push_str(probe.json);
        }
        text.push('}');
        text
    }

    /// The warning for a startup probe on a daemon whose image tag is a version older than the
    /// probe's: that daemon may never write the file, and the pod would never start. A tag that
    /// is no version says nothing: the policy cannot tell.
    pub fn outdated_probe(&self) -> Option<String> {
        let probe = self.startup_probe?;
        let tag = tag_version(&self.image)?;
        (tag < version(probe.since)?).then(|| {
            format!(
                "multi-node networking: the {} sidecar gets a startup probe that waits for a file the daemon writes from {} on, and its image {} is older, so the pod may never start; set a newer daemonImage, or daemonStartupProbe: false",
                self.name, probe.since, self.image
            )
        })
    }
}

/// The version an image's tag names (`v1.0.8` or `1.0.8`, `name:tag` with or without
/// `@digest`); `None` for another tag or none.
fn tag_version(image: &str) -> Option<[u64; 3]> {
    let name = image.split('@').next()?;
    let (_, tag) = name.rsplit('/').next()?.split_once(':')?;
    version(tag)
}

/// The version `v1.0.8` or `1.0.8` names: three numbers of up to 9 digits, dot-separated.
fn version(tag: &str) -> Option<[u64; 3]> {
    let tag = tag.strip_prefix('v').unwrap_or(tag);
    let mut numbers = tag.split('.').map(|part| {
        let digits = (1..=9).contains(&part.len()) && part.bytes().all(|b| b.is_ascii_digit());
        if digits { part.parse().ok() } else { None }
    });
    let version = [numbers.next()??, numbers.next()??, numbers.next()??];
    numbers.next().is_none().then_some(version)
}

/// One rail of a multi-rail fabric: a device resource of its own, of which every GPU container
/// gets one, and the network each of its devices is attached to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rail<'a> {
    pub resource: Cow<'a, str>,
    pub network: Network<'a>,
}

/// A directory of the node mounted read-only into every GPU container: files the node's vendor
/// puts there (an NCCL topology file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostDirectory<'a> {
    pub host: Cow<'a, str>,
    pub mount: Cow<'a, str>,
}

/// A Multus network attachment: `namespace/name`, or `name` for the pod's own namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Network<'a>(pub Cow<'a, str>);

impl Volume<'static> {
    /// A `hostPath` volume of one of the tables.
    pub fn host_path(name: &'static str, path: &'static str, kind: Option<&'static str>) -> Self {
        Volume {
            name,
            source: Source::HostPath {
                path: Cow::Borrowed(path),
                kind,
            },
        }
    }
}

impl Volume<'_> {
    /// The pod's `volumes` entry, as JSON text.
    pub fn text(&self) -> String {
        let mut text = String::with_capacity(96);
        text.push_str(r#"{"name":"#);
        push_string(&mut text, self.name);
        match &self.source {
            Source::Scratch => text.push_str(r#","emptyDir":{}"#),
            Source::Memory => text.push_str(r#","emptyDir":{"medium":"Memory"}"#),
            Source::HostPath { path, kind } => {
                text.push_str(r#","hostPath":{"path":"#);
                push_string(&mut text, path);
                if let Some(kind) = kind {
                    text.push_str(r#","type":"#);
                    push_string(&mut text, kind);
                }
                text.push('}');
            }
            // 420 is 0644, the API server's default: written out so a second pass compares equal.
            Source::ConfigMap { name } => {
                text.push_str(r#","configMap":{"name":"#);
                push_string(&mut text, name);
                text.push_str(r#","defaultMode":420}"#);
            }
        }
        text.push('}');
        text
    }
}

impl Network<'_> {
    /// `(namespace, name)`; no namespace means the pod's own.
    pub fn parts(&self) -> (Option<&str>, &str) {
        Network::split(&self.0)
    }

    /// `namespace/name` or `name` as `(namespace, name)`.
    pub fn split(text: &str) -> (Option<&str>, &str) {
        match text.split_once('/') {
            Some((namespace, name)) => (Some(namespace), name),
            None => (None, text),
        }
    }

    /// As Multus's short form writes it.
    pub fn qualified(&self) -> &str {
        &self.0
    }

    /// Whether the two may name one attachment in some pod: the same name, and the same
    /// namespace or one of them none (the pod's, which may be the other's).
    pub fn same_attachment(&self, other: &Network<'_>) -> bool {
        let ((a_space, a), (b_space, b)) = (self.parts(), other.parts());
        a == b && (a_space == b_space || a_space.is_none() || b_space.is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tag_names_a_version_or_nothing() {
        for (image, version) in [
            ("r.io/d/tcpgpudmarxd-dev:v1.0.8", Some([1, 0, 8])),
            ("localhost:5000/d:1.0.23@sha256:ab", Some([1, 0, 23])),
            ("localhost:5000/d", None),
            ("d:latest", None),
            ("d:v1.0", None),
            ("d:v1.0.8-rc1", None),
            ("d@sha256:ab", None),
            ("d:v1..8", None),
            ("d:v1.0.8.", None),
            ("d:v1.0.1234567890", None),
        ] {
            assert_eq!(tag_version(image), version, "{image}");
        }
        let probe = StartupProbe {
            json: "{}",
            since: "v1.0.8",
        };
        let daemon = |image: &'static str| Sidecar {
            name: "d",
            image: Cow::Borrowed(image),
            command: Vec::new(),
            script: None,
            env: &[],
            capabilities: &[],
            mounts: &[],
            startup_probe: Some(probe),
        };
        assert!(daemon("r/d:v1.0.7").outdated_probe().is_some());
        for newer in ["r/d:v1.0.8", "r/d:1.0.10", "r/d:latest"] {
            assert_eq!(daemon(newer).outdated_probe(), None, "{newer}");
        }
    }

    fn config_map(name: &'static str, config_map: &'static str) -> Volume<'static> {
        Volume {
            name,
            source: Source::ConfigMap {
                name: Cow::Borrowed(config_map),
            },
        }
    }

    #[test]
    fn volumes_serialise_as_the_pod_declares_them() {
        let parsed = |volume: Volume<'_>| -> serde_json::Value {
            serde_json::from_str(&volume.text()).unwrap()
        };
        let volume = |name, source| parsed(Volume { name, source });
        assert_eq!(
            volume("scratch", Source::Scratch),
            json!({"name": "scratch", "emptyDir": {}})
        );
        assert_eq!(
            volume("shm", Source::Memory),
            json!({"name": "shm", "emptyDir": {"medium": "Memory"}})
        );
        assert_eq!(
            parsed(Volume::host_path("sys", "/sys", None)),
            json!({"name": "sys", "hostPath": {"path": "/sys"}})
        );
        assert_eq!(
            parsed(Volume::host_path("dev", "/dev", Some("Directory"))),
            json!({"name": "dev", "hostPath": {"path": "/dev", "type": "Directory"}})
        );
        assert_eq!(
            parsed(config_map("topo", "nccl-topo")),
            json!({"name": "topo", "configMap": {"name": "nccl-topo", "defaultMode": 420}})
        );
    }

    #[test]
    fn the_sidecar_is_a_native_sidecar_without_skipped_mounts() {
        const ENV: &[EnvVar<'static>] = &[var!("A", "1")];
        const MOUNTS: &[Mount<'static>] =
            &[mount!("lib", "/lib", read_only), mount!("sys", "/sys")];
        let sidecar = Sidecar {
            name: "daemon",
            image: Cow::Borrowed("registry/daemon:1"),
            command: vec![Cow::Borrowed("/run")],
            script: Some(Cow::Borrowed("--x")),
            env: ENV,
            capabilities: &["NET_ADMIN"],
            mounts: MOUNTS,
            startup_probe: None,
        };
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&sidecar.container_text(&["sys"])).unwrap(),
            json!({
                "name": "daemon",
                "image": "registry/daemon:1",
                "imagePullPolicy": "Always",
                "command": ["/run"],
                "args": ["--x"],
                "env": [{"name": "A", "value": "1"}],
                "resources": {},
                "restartPolicy": "Always",
                "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "volumeMounts": [{"name": "lib", "mountPath": "/lib", "readOnly": true}],
            })
        );
    }

    #[test]
    fn entries_from_the_settings_carry_their_json() {
        let var = EnvVar::new(Cow::Borrowed("A"), Cow::Borrowed("say \"hi\""));
        assert_eq!(var.json, r#"{"name":"A","value":"say \"hi\""}"#);
        let mount = Mount::new("lib", Cow::Borrowed("/opt/lib"), true);
        assert_eq!(mount.json, mount!("lib", "/opt/lib", read_only).json);
    }

    #[test]
    fn read_only_is_written_only_when_true() {
        let parsed =
            |mount: Mount<'_>| -> serde_json::Value { serde_json::from_str(&mount.json).unwrap() };
        for read_only in [false, true] {
            let table = match read_only {
                false => mount!("a", "/a"),
                true => mount!("a", "/a", read_only),
            };
            let mut expected = json!({"name": "a", "mountPath": "/a"});
            if read_only {
                expected["readOnly"] = json!(true);
            }
            assert_eq!(parsed(table), expected);
            // From the settings, a path that needs escaping.
            let settings = Mount::new("a", Cow::Borrowed("/a \"b\""), read_only);
            expected["mountPath"] = json!("/a \"b\"");
            assert_eq!(parsed(settings), expected);
        }
    }

    #[test]
    fn a_network_without_namespace_is_the_pods_own() {
        assert_eq!(
            Network(Cow::Borrowed("default/rdma-vf")).parts(),
            (Some("default"), "rdma-vf")
        );
        assert_eq!(Network(Cow::Borrowed("rdma-vf")).parts(), (None, "rdma-vf"));
    }
}
