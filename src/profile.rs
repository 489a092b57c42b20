//! What one cloud injects, as data. The merge engine applies any [`Profile`]; a cloud is a table
//! (see `clouds.rs`), not a loop of its own.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::Value;

/// Everything a cloud adds to an opted-in pod.
#[derive(Debug, Clone)]
pub struct Profile {
    /// The device resource every GPU container gets, G × `per_gpu` of it.
    pub device: Option<Device>,
    /// `requests.cpu` for a GPU container that sets no cpu request or limit.
    pub default_cpu_request: Option<&'static str>,
    /// Appended to each GPU container, in this order: groups of variables, flattened.
    pub env: &'static [&'static [EnvVar]],
    /// Added to each GPU container, in this order.
    pub mounts: &'static [Mount],
    /// Pod volumes, added in this order where something mounts them.
    pub volumes: Vec<Volume>,
    /// Added to each GPU container's `securityContext.capabilities.add`.
    pub capabilities: &'static [&'static str],
    /// Default GPU containers to `allowPrivilegeEscalation: false` and a `RuntimeDefault` seccomp
    /// profile, where that is safe (SPEC section 5).
    pub harden: bool,
    /// A native sidecar appended to `spec.initContainers`.
    pub sidecar: Option<&'static Sidecar>,
    /// Pod annotations set where absent.
    pub annotations: &'static [(&'static str, &'static str)],
    /// A Multus network listed once per device of the whole pod.
    pub network: Option<Network>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub resource: String,
    pub per_gpu: u32,
}

/// An env entry, made with [`var!`] so that its JSON text is written at compile time: GCP adds
/// 24 of them to every GPU container of every opted-in pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EnvVar {
    pub name: &'static str,
    pub value: &'static str,
    /// `{"name":…,"value":…}`
    #[serde(skip)]
    pub json: &'static str,
}

/// A `volumeMounts` entry, made with [`mount!`] (JSON text at compile time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Mount {
    #[serde(rename = "name")]
    pub volume: &'static str,
    #[serde(rename = "mountPath")]
    pub path: &'static str,
    #[serde(rename = "readOnly", skip_serializing_if = "is_false")]
    pub read_only: bool,
    #[serde(skip)]
    pub json: &'static str,
}

/// `var!("NAME", "value")`: an [`EnvVar`]. Name and value are literals that need no JSON escapes
/// (checked for every table by a test).
macro_rules! var {
    ($name:literal, $value:literal) => {
        $crate::profile::EnvVar {
            name: $name,
            value: $value,
            json: concat!(r#"{"name":""#, $name, r#"","value":""#, $value, r#""}"#),
        }
    };
}

/// `mount!("volume", "/path")` and `mount!("volume", "/path", read_only)`: a [`Mount`].
macro_rules! mount {
    ($volume:literal, $path:literal) => {
        $crate::profile::mount!(@ $volume, $path, false, "")
    };
    ($volume:literal, $path:literal, read_only) => {
        $crate::profile::mount!(@ $volume, $path, true, r#","readOnly":true"#)
    };
    (@ $volume:literal, $path:literal, $read_only:literal, $more:literal) => {
        $crate::profile::Mount {
            volume: $volume,
            path: $path,
            read_only: $read_only,
            json: concat!(
                r#"{"name":""#,
                $volume,
                r#"","mountPath":""#,
                $path,
                r#"""#,
                $more,
                "}"
            ),
        }
    };
}

pub(crate) use {mount, var};

fn is_false(value: &bool) -> bool {
    !value
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Volume {
    pub name: &'static str,
    pub source: Source,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `emptyDir: {}`
    Scratch,
    /// `emptyDir: {medium: Memory}`: shared memory for NCCL, larger than the runtime's 64 MiB.
    Memory,
    HostPath {
        path: &'static str,
        kind: Option<&'static str>,
    },
    ConfigMap {
        name: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sidecar {
    pub name: &'static str,
    pub image: &'static str,
    pub command: &'static [&'static str],
    pub args: &'static [&'static str],
    pub env: &'static [EnvVar],
    pub capabilities: &'static [&'static str],
    pub mounts: &'static [Mount],
}

/// A Multus network attachment, `namespace/name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    pub namespace: &'static str,
    pub name: &'static str,
}

impl Profile {
    pub fn env_vars(&self) -> impl Iterator<Item = &'static EnvVar> + use<> {
        self.env.iter().flat_map(|group| group.iter())
    }
}

impl Volume {
    /// Whether a pod volume of the same name is this volume, reading the API server's defaults
    /// (`hostPath.type: ""`, `configMap.defaultMode: 420`) as equal to their absence.
    pub fn same_as(&self, pod_volume: &Value) -> bool {
        let ours = crate::lenient::read(&crate::fragment::render(self)).ok();
        ours.is_some_and(|ours| normalized(pod_volume) == normalized(&ours))
    }
}

/// Serialised as the pod's `volumes` entry.
impl Serialize for Volume {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Empty {}
        #[derive(Serialize)]
        struct EmptyDir {
            medium: &'static str,
        }
        #[derive(Serialize)]
        struct HostPath {
            path: &'static str,
            #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
            kind: Option<&'static str>,
        }
        #[derive(Serialize)]
        struct ConfigMap<'a> {
            name: &'a str,
            #[serde(rename = "defaultMode")]
            default_mode: u32,
        }
        let mut volume = serializer.serialize_map(Some(2))?;
        volume.serialize_entry("name", self.name)?;
        match &self.source {
            Source::Scratch => volume.serialize_entry("emptyDir", &Empty {})?,
            Source::Memory => volume.serialize_entry("emptyDir", &EmptyDir { medium: "Memory" })?,
            Source::HostPath { path, kind } => {
                volume.serialize_entry("hostPath", &HostPath { path, kind: *kind })?
            }
            // 420 is 0644, the API server's default: written out so a second pass compares equal.
            Source::ConfigMap { name } => volume.serialize_entry(
                "configMap",
                &ConfigMap {
                    name,
                    default_mode: 420,
                },
            )?,
        }
        volume.end()
    }
}

fn normalized(volume: &Value) -> Value {
    let mut volume = volume.clone();
    if let Some(host_path) = volume
        .pointer_mut("/hostPath")
        .and_then(Value::as_object_mut)
    {
        if host_path.get("type").and_then(Value::as_str) == Some("") {
            host_path.remove("type");
        }
    }
    if let Some(config_map) = volume
        .pointer_mut("/configMap")
        .and_then(Value::as_object_mut)
    {
        if config_map.get("defaultMode").and_then(Value::as_u64) == Some(420) {
            config_map.remove("defaultMode");
        }
    }
    volume
}

impl Sidecar {
    /// The container, without the mounts of `skipped` volumes (ones the pod defines differently:
    /// like every other container, the sidecar never mounts a user's volume in place of ours).
    pub fn container<'s>(&'s self, skipped: &[&str]) -> SidecarContainer<'s> {
        SidecarContainer {
            name: self.name,
            image: self.image,
            image_pull_policy: "Always",
            command: self.command,
            args: self.args,
            env: self.env,
            resources: Resources {},
            restart_policy: "Always",
            security_context: SecurityContext {
                capabilities: Capabilities {
                    add: self.capabilities,
                },
            },
            termination_message_path: "/dev/termination-log",
            termination_message_policy: "File",
            volume_mounts: self
                .mounts
                .iter()
                .filter(|m| !skipped.contains(&m.volume))
                .collect(),
        }
    }
}

/// The sidecar as an init container, serialised as the pod's `initContainers` entry.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SidecarContainer<'s> {
    name: &'s str,
    image: &'s str,
    image_pull_policy: &'static str,
    command: &'s [&'s str],
    args: &'s [&'s str],
    env: &'s [EnvVar],
    resources: Resources,
    /// `Always` on an init container makes it a native sidecar (Kubernetes 1.29+): it starts
    /// before the workload and is stopped after it, so the job can complete.
    restart_policy: &'static str,
    security_context: SecurityContext<'s>,
    termination_message_path: &'static str,
    termination_message_policy: &'static str,
    volume_mounts: Vec<&'s Mount>,
}

#[derive(Debug, Serialize)]
struct Resources {}

#[derive(Debug, Serialize)]
struct SecurityContext<'s> {
    capabilities: Capabilities<'s>,
}

#[derive(Debug, Serialize)]
struct Capabilities<'s> {
    add: &'s [&'s str],
}

impl Network {
    pub fn qualified(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn volumes_serialise_as_the_pod_declares_them() {
        let volume = |name, source| json!(Volume { name, source });
        assert_eq!(
            volume("scratch", Source::Scratch),
            json!({"name": "scratch", "emptyDir": {}})
        );
        assert_eq!(
            volume("shm", Source::Memory),
            json!({"name": "shm", "emptyDir": {"medium": "Memory"}})
        );
        assert_eq!(
            volume(
                "sys",
                Source::HostPath {
                    path: "/sys",
                    kind: None
                }
            ),
            json!({"name": "sys", "hostPath": {"path": "/sys"}})
        );
        assert_eq!(
            volume(
                "dev",
                Source::HostPath {
                    path: "/dev",
                    kind: Some("Directory")
                }
            ),
            json!({"name": "dev", "hostPath": {"path": "/dev", "type": "Directory"}})
        );
        assert_eq!(
            volume(
                "topo",
                Source::ConfigMap {
                    name: "nccl-topo".into()
                }
            ),
            json!({"name": "topo", "configMap": {"name": "nccl-topo", "defaultMode": 420}})
        );
    }

    #[test]
    fn the_sidecar_is_a_native_sidecar_without_skipped_mounts() {
        const SIDECAR: Sidecar = Sidecar {
            name: "daemon",
            image: "registry/daemon:1",
            command: &["/run"],
            args: &["--x"],
            env: &[var!("A", "1")],
            capabilities: &["NET_ADMIN"],
            mounts: &[mount!("lib", "/lib", read_only), mount!("sys", "/sys")],
        };
        assert_eq!(
            json!(SIDECAR.container(&["sys"])),
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
    fn defaults_the_api_server_fills_in_compare_equal() {
        let topo = Volume {
            name: "nccl-topo",
            source: Source::ConfigMap {
                name: "nccl-topo".into(),
            },
        };
        assert!(topo.same_as(&json!({"name": "nccl-topo", "configMap": {"name": "nccl-topo"}})));
        assert!(topo.same_as(
            &json!({"name": "nccl-topo", "configMap": {"name": "nccl-topo", "defaultMode": 420}})
        ));
        assert!(!topo.same_as(&json!({"name": "nccl-topo", "configMap": {"name": "other"}})));
        assert!(!topo.same_as(
            &json!({"name": "nccl-topo", "configMap": {"name": "nccl-topo", "defaultMode": 256}})
        ));

        let sys = Volume {
            name: "nvtcpxo-sys",
            source: Source::HostPath {
                path: "/sys",
                kind: None,
            },
        };
        assert!(
            sys.same_as(&json!({"name": "nvtcpxo-sys", "hostPath": {"path": "/sys", "type": ""}}))
        );
        assert!(!sys.same_as(
            &json!({"name": "nvtcpxo-sys", "hostPath": {"path": "/sys", "type": "Directory"}})
        ));
        let shm = Volume {
            name: "nv-shared-memory",
            source: Source::Memory,
        };
        assert!(!shm.same_as(&json!({"name": "nv-shared-memory", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}})));
    }

    #[test]
    fn read_only_is_written_only_when_true() {
        assert_eq!(
            json!(mount!("a", "/a")),
            json!({"name": "a", "mountPath": "/a"})
        );
        assert_eq!(
            json!(mount!("a", "/a", read_only)),
            json!({"name": "a", "mountPath": "/a", "readOnly": true})
        );
    }
}
