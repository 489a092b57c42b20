//! What one cloud injects, as data. The merge engine applies any [`Profile`]; a cloud is a table
//! (see `clouds.rs`), not a loop of its own.

use serde::Serialize;
use serde_json::{Value, json};

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EnvVar {
    pub name: &'static str,
    pub value: &'static str,
}

/// Serialised as the container's `volumeMounts` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Mount {
    #[serde(rename = "name")]
    pub volume: &'static str,
    #[serde(rename = "mountPath")]
    pub path: &'static str,
    #[serde(rename = "readOnly", skip_serializing_if = "is_false")]
    pub read_only: bool,
}

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
    pub fn to_json(&self) -> Value {
        let (key, source) = match &self.source {
            Source::Scratch => ("emptyDir", json!({})),
            Source::Memory => ("emptyDir", json!({"medium": "Memory"})),
            Source::HostPath { path, kind: None } => ("hostPath", json!({"path": path})),
            Source::HostPath {
                path,
                kind: Some(kind),
            } => ("hostPath", json!({"path": path, "type": kind})),
            // 420 is 0644, the API server's default: written out so a second pass compares equal.
            Source::ConfigMap { name } => ("configMap", json!({"name": name, "defaultMode": 420})),
        };
        json!({"name": self.name, key: source})
    }

    /// Whether a pod volume of the same name is this volume, reading the API server's defaults
    /// (`hostPath.type: ""`, `configMap.defaultMode: 420`) as equal to their absence.
    pub fn same_as(&self, pod_volume: &Value) -> bool {
        normalized(pod_volume) == normalized(&self.to_json())
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
    pub fn to_json(&self, skipped: &[&str]) -> Value {
        let mounts: Vec<&Mount> = self
            .mounts
            .iter()
            .filter(|m| !skipped.contains(&m.volume))
            .collect();
        json!({
            "name": self.name,
            "image": self.image,
            "imagePullPolicy": "Always",
            "command": self.command,
            "args": self.args,
            "env": self.env,
            "resources": {},
            // `Always` on an init container makes it a native sidecar (Kubernetes 1.29+): it starts
            // before the workload and is stopped after it, so the job can complete.
            "restartPolicy": "Always",
            "securityContext": {"capabilities": {"add": self.capabilities}},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "volumeMounts": mounts,
        })
    }
}

impl Network {
    pub fn qualified(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let rw = json!(Mount {
            volume: "a",
            path: "/a",
            read_only: false,
        });
        assert_eq!(rw, json!({"name": "a", "mountPath": "/a"}));
        let ro = json!(Mount {
            volume: "a",
            path: "/a",
            read_only: true,
        });
        assert_eq!(
            ro,
            json!({"name": "a", "mountPath": "/a", "readOnly": true})
        );
    }
}
