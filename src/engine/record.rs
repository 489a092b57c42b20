//! The last step, record: on a pod the policy changed, the record of what was injected
//! (behaviour.md §2.1), written under the settings' annotation over any stale one, and sent as
//! the answer's audit annotation [`AUDIT_KEY`]. Last, and only on a changed pod, so that a second
//! pass changes nothing. The record is one compact JSON object, its keys in a fixed order,
//! written by hand, as the rest of the policy's text is.

use std::borrow::Cow;

use crate::error::Error;
use crate::json::object::{Node, Object};
use crate::json::write::{is_plain, push_escaped, push_string, render_string};
use crate::merge::object_entry;
use crate::placement::LabelSource;
use crate::profile::EnvVar;
use crate::settings::Config;

use super::read::Reading;
use super::wire::{Wired, Wiring};

/// The record of a changed pod, as a JSON string, written under `config`'s annotation; with
/// `launched`, what its first container gained as an MPIJob's launcher. With `insert` false the
/// pod is left as it is (validate-only: the record is what the pod would carry).
pub(super) fn write(
    pod: &mut Object<'_>,
    config: &Config<'_>,
    (facts, wiring): (&Reading<'_>, &Wiring<'_, '_>),
    launched: Option<Launched<'_>>,
    insert: bool,
) -> Result<Option<String>, Error> {
    if wiring.added.is_empty() && launched.is_none() {
        return Ok(None);
    }
    let gpus = Gpus {
        device: facts.profile.device.as_ref().map(|d| d.resource.as_ref()),
        rails: facts
            .profile
            .rails
            .iter()
            .map(|r| r.resource.as_ref())
            .collect(),
        machine: facts
            .node
            .named
            .as_ref()
            .map(|(name, from)| (name.as_ref(), from.clone())),
        containers: &wiring.containers,
    };
    let record = Record {
        cloud: config.cloud.cloud.name,
        fabric: facts.fabric.name,
        gpus: Some(gpus),
        launcher: launched,
    };
    annotate(pod, config, record.annotation(), insert)
}

/// The record of an MPIJob's launcher that runs no rank, which gained `launched` alone.
pub(super) fn write_launcher(
    pod: &mut Object<'_>,
    config: &Config<'_>,
    fabric: &str,
    launched: Launched<'_>,
    insert: bool,
) -> Result<Option<String>, Error> {
    let record = Record {
        cloud: config.cloud.cloud.name,
        fabric,
        gpus: None,
        launcher: Some(launched),
    };
    annotate(pod, config, record.annotation(), insert)
}

/// `record` under `config`'s annotation, where `insert`; the record, as a JSON string.
fn annotate(
    pod: &mut Object<'_>,
    config: &Config<'_>,
    record: String,
    insert: bool,
) -> Result<Option<String>, Error> {
    // The policy's own statement: the one annotation it overwrites.
    if let Some(key) = config.record.as_ref().filter(|_| insert) {
        let metadata = object_entry(pod, "metadata")?;
        let annotations =
            object_entry(metadata, "annotations").map_err(|e| e.within("metadata"))?;
        annotations.insert(key, Node::New(record.clone().into()));
    }
    Ok(Some(record))
}

/// The audit annotation's key: without a domain, since the API server stores it as
/// `<webhook name>/injected` (AdmissionResponse API docs).
pub const AUDIT_KEY: &str = "injected";

/// What the record says: the fabric, its device resource, the machine the injection followed and
/// the containers wired, and what an MPIJob's launcher passes to its ranks.
pub struct Record<'r> {
    pub cloud: &'r str,
    pub fabric: &'r str,
    /// What the pod's GPU containers got; `None` for an MPIJob's launcher that runs no rank.
    pub gpus: Option<Gpus<'r>>,
    pub launcher: Option<Launched<'r>>,
}

/// What a pod's GPU containers got.
pub struct Gpus<'r> {
    pub device: Option<&'r str>,
    /// The rails' resources, in order (behaviour.md §3.9); written only where there are some.
    pub rails: Vec<&'r str>,
    pub machine: Option<(&'r str, LabelSource<'r>)>,
    pub containers: &'r [Wired],
}

/// What an MPIJob's launcher passes to its ranks (behaviour.md §3.12): its job, MPI and first
/// container, the entries that container gained, and the variables its launch agents carry
/// (none where it gained no agent).
pub struct Launched<'r> {
    pub job: &'r str,
    pub mpi: &'r str,
    pub container: &'r str,
    pub env: &'r [EnvVar<'r>],
    pub agent: &'r [Cow<'r, str>],
}

impl Record<'_> {
    /// `{"policy":…,"cloud":…,"fabric":…,"device":…|null,"machine":{"name":…,"from":"<field>
    /// <label>"}|null,"containers":{"<name>":{"devices":N}|{},…}[,"launcher":{…}]}`. The tests
    /// read it; the policy writes only [`Record::annotation`].
    #[cfg(test)]
    pub fn json(&self) -> String {
        let mut text = RecordText {
            out: String::with_capacity(256),
            nested: false,
        };
        self.write(&mut text);
        text.out
    }

    /// The JSON text of a string holding [`Record::json`]: the annotation's value and the audit
    /// annotation's, escaped as it is written rather than afterwards.
    pub fn annotation(&self) -> String {
        let mut text = RecordText {
            out: String::with_capacity(320),
            nested: true,
        };
        text.out.push('"');
        self.write(&mut text);
        text.out.push('"');
        text.out
    }

    fn write(&self, text: &mut RecordText) {
        text.raw(concat!(r#"{"policy":""#, env!("CARGO_PKG_VERSION"), "\""));
        for (key, value) in [(r#","cloud":"#, self.cloud), (r#","fabric":"#, self.fabric)] {
            text.raw(key);
            text.string(value);
        }
        if let Some(gpus) = &self.gpus {
            gpus.write(text);
        }
        if let Some(launched) = &self.launcher {
            launched.write(text);
        }
        text.raw("}");
    }
}

impl Gpus<'_> {
    fn write(&self, text: &mut RecordText) {
        text.raw(r#","device":"#);
        match self.device {
            Some(device) => text.string(device),
            None => text.raw("null"),
        }
        if !self.rails.is_empty() {
            text.raw(r#","rails":"#);
            text.strings(&mut self.rails.iter().copied());
        }
        match &self.machine {
            Some((name, from)) => {
                text.raw(r#","machine":{"name":"#);
                text.string(name);
                // The field and label are the policy's own, plain text.
                for part in [r#","from":""#, from.field, " ", &from.label, "\"}"] {
                    text.raw(part);
                }
            }
            None => text.raw(r#","machine":null"#),
        }
        text.raw(r#","containers":{"#);
        for (at, wired) in self.containers.iter().enumerate() {
            if at > 0 {
                text.raw(",");
            }
            text.string(&wired.name);
            text.raw(":{");
            match (&wired.claim, wired.devices) {
                (Some(claim), _) => {
                    text.raw(r#""claim":"#);
                    text.string(claim);
                }
                (None, Some(devices)) => {
                    text.raw(r#""devices":"#);
                    text.raw(&devices.to_string());
                }
                (None, None) => {}
            }
            text.raw("}");
        }
        text.raw("}");
    }
}

impl Launched<'_> {
    fn write(&self, text: &mut RecordText) {
        text.raw(r#","launcher":{"mpiJob":"#);
        text.string(self.job);
        text.raw(r#","mpi":"#);
        text.string(self.mpi);
        text.raw(r#","container":"#);
        text.string(self.container);
        text.raw(r#","env":"#);
        text.strings(&mut self.env.iter().map(|var| var.name.as_ref()));
        if !self.agent.is_empty() {
            text.raw(r#","agent":"#);
            text.strings(&mut self.agent.iter().map(|name| name.as_ref()));
        }
        text.raw("}");
    }
}

/// The record's text as it is written: JSON, or JSON inside a JSON string (`nested`), where
/// every quote and backslash of the JSON is escaped once more.
struct RecordText {
    out: String,
    nested: bool,
}

impl RecordText {
    /// JSON text of the policy's own: punctuation, keys, numbers.
    fn raw(&mut self, json: &str) {
        match self.nested {
            true => push_escaped(&mut self.out, json),
            false => self.out.push_str(json),
        }
    }

    /// A JSON list of strings.
    fn strings(&mut self, values: &mut dyn Iterator<Item = &str>) {
        self.raw("[");
        for (at, value) in values.enumerate() {
            if at > 0 {
                self.raw(",");
            }
            self.string(value);
        }
        self.raw("]");
    }

    /// A JSON string: the pod's names are the user's, escaped once (twice when nested).
    fn string(&mut self, value: &str) {
        match (self.nested, is_plain(value)) {
            (false, _) => push_string(&mut self.out, value),
            (true, true) => {
                for part in ["\\\"", value, "\\\""] {
                    self.out.push_str(part);
                }
            }
            (true, false) => push_escaped(&mut self.out, &render_string(value)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// The record's JSON text, once it is checked that the annotation's value is that text as a
    /// JSON string, as serde_json writes it.
    fn written(record: &Record<'_>) -> String {
        let text = record.json();
        assert_eq!(record.annotation(), serde_json::to_string(&text).unwrap());
        text
    }

    /// One container named `t`.
    fn t(devices: Option<u64>, claim: Option<&str>) -> [Wired; 1] {
        [Wired {
            name: "t".into(),
            devices,
            claim: claim.map(str::to_string),
        }]
    }

    /// What GPU containers got, for a record.
    fn gpus<'r>(device: Option<&'r str>, rails: Vec<&'r str>, containers: &'r [Wired]) -> Gpus<'r> {
        Gpus {
            device,
            rails,
            machine: None,
            containers,
        }
    }

    fn record<'r>(cloud: &'r str, fabric: &'r str, gpus: Gpus<'r>) -> Record<'r> {
        Record {
            cloud,
            fabric,
            gpus: Some(gpus),
            launcher: None,
        }
    }

    #[test]
    fn the_record_is_compact_json_in_a_fixed_order() {
        let containers = [
            Wired {
                name: "trainer".into(),
                devices: Some(32),
                claim: None,
            },
            Wired {
                name: "o\"dd".into(),
                devices: Some(0),
                claim: None,
            },
        ];
        let from = LabelSource {
            field: "nodeSelector",
            label: "node.kubernetes.io/instance-type".into(),
        };
        let mut wired = gpus(Some("vpc.amazonaws.com/efa"), Vec::new(), &containers);
        wired.machine = Some(("p5.48xlarge", from));
        let text = written(&record("aws", "efa", wired));
        assert_eq!(
            text,
            r#"{"policy":"0.1.0","cloud":"aws","fabric":"efa","device":"vpc.amazonaws.com/efa","machine":{"name":"p5.48xlarge","from":"nodeSelector node.kubernetes.io/instance-type"},"containers":{"trainer":{"devices":32},"o\"dd":{"devices":0}}}"#
        );
        let parsed: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed["containers"]["o\"dd"], json!({"devices": 0}));
    }

    #[test]
    fn no_device_rails_and_claims() {
        let t_none = t(None, None);
        assert_eq!(
            written(&record("gcp", "tcpxo", gpus(None, Vec::new(), &t_none))),
            r#"{"policy":"0.1.0","cloud":"gcp","fabric":"tcpxo","device":null,"machine":null,"containers":{"t":{}}}"#
        );
        // Rails stand in the device's place, listed after it.
        let rails = gpus(None, vec!["nvidia.com/rail0", "nvidia.com/rail1"], &t_none);
        assert_eq!(
            written(&record("rdma", "rdma", rails)),
            r#"{"policy":"0.1.0","cloud":"rdma","fabric":"rdma","device":null,"rails":["nvidia.com/rail0","nvidia.com/rail1"],"machine":null,"containers":{"t":{}}}"#
        );
        // A DRA claim stands for the devices: the container's entry names it instead.
        let t_claim = t(Some(32), Some("efa"));
        let claimed = gpus(Some("vpc.amazonaws.com/efa"), Vec::new(), &t_claim);
        assert_eq!(
            written(&record("aws", "efa", claimed)),
            r#"{"policy":"0.1.0","cloud":"aws","fabric":"efa","device":"vpc.amazonaws.com/efa","machine":null,"containers":{"t":{"claim":"efa"}}}"#
        );
    }

    #[test]
    fn a_launcher_says_what_it_passes_to_its_ranks() {
        use crate::profile::var;
        let env = [
            var!(
                "OMPI_MCA_orte_launch_agent",
                "env NCCL_IB_HCA=mlx5 UCX_TLS=tcp orted"
            ),
            var!(
                "PRTE_MCA_prte_launch_agent",
                "env NCCL_IB_HCA=mlx5 UCX_TLS=tcp prted"
            ),
        ];
        let agent = [Cow::Borrowed("NCCL_IB_HCA"), Cow::Borrowed("UCX_TLS")];
        let launched = || Launched {
            job: "jobs/nccl",
            mpi: "OpenMPI",
            container: "launcher",
            env: &env,
            agent: &agent,
        };
        let alone = Record {
            cloud: "azure",
            fabric: "infiniband",
            gpus: None,
            launcher: Some(launched()),
        };
        assert_eq!(
            written(&alone),
            r#"{"policy":"0.1.0","cloud":"azure","fabric":"infiniband","launcher":{"mpiJob":"jobs/nccl","mpi":"OpenMPI","container":"launcher","env":["OMPI_MCA_orte_launch_agent","PRTE_MCA_prte_launch_agent"],"agent":["NCCL_IB_HCA","UCX_TLS"]}}"#
        );
        // A launcher that is a rank too: its GPU containers' part first; no agent, no key.
        let t_devices = t(Some(8), None);
        let mut rank = record(
            "azure",
            "infiniband",
            gpus(Some("rdma/ib"), Vec::new(), &t_devices),
        );
        let hca = [var!("NCCL_IB_HCA", "mlx5")];
        rank.launcher = Some(Launched {
            mpi: "Intel",
            env: &hca,
            agent: &[],
            ..launched()
        });
        assert_eq!(
            written(&rank),
            r#"{"policy":"0.1.0","cloud":"azure","fabric":"infiniband","device":"rdma/ib","machine":null,"containers":{"t":{"devices":8}},"launcher":{"mpiJob":"jobs/nccl","mpi":"Intel","container":"launcher","env":["NCCL_IB_HCA"]}}"#
        );
    }
}
