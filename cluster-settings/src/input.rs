//! What `kubectl get ... -o json` prints, read into the kinds of object the settings come
//! from: nodes, NetworkAttachmentDefinitions, DeviceClasses, and the CustomResourceDefinitions
//! that say which job controllers run. A file may hold one object, a
//! `v1` `List` of any of them (what kubectl prints), or a typed list (`NodeList`, whose items the
//! API server sends without their own `kind`). Anything else is refused in one sentence that says
//! what was expected, since a wrong file is the common mistake.

use anyhow::{Result, bail};
use serde_json::Value;

use crate::node::{Nad, Node};

/// What the command reads, in one sentence, for every refusal.
pub const EXPECTED: &str = "expected the JSON that `kubectl get nodes -o json` prints (and optionally `kubectl get network-attachment-definitions -A -o json`, `kubectl get deviceclasses -o json`, `kubectl get crd -o json`)";

/// The objects read from every input.
#[derive(Debug, Default)]
pub struct Cluster {
    pub nodes: Vec<Node>,
    pub nads: Vec<Nad>,
    /// The names of the DeviceClasses.
    pub device_classes: Vec<String>,
    /// Whether any input was a list of NetworkAttachmentDefinitions (an empty one too): then a
    /// resource no NAD names has none, rather than none known.
    pub nads_read: bool,
    pub device_classes_read: bool,
    /// The names of the CustomResourceDefinitions (`jobsets.jobset.x-k8s.io`): the job
    /// controllers the cluster runs.
    pub crds: Vec<String>,
    pub crds_read: bool,
}

impl Cluster {
    /// Reads the input named `name` (a file name, or `-`) whose text is `text`: one JSON document,
    /// or several one after the other (`cat nodes.json nads.json`, or the three pasted together).
    pub fn add(&mut self, name: &str, text: &str) -> Result<()> {
        let mut documents = 0;
        for value in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
            match value {
                Ok(value) => self.document(name, &value)?,
                Err(e) => bail!("{name}: not JSON ({e}); {EXPECTED}"),
            }
            documents += 1;
        }
        if documents == 0 {
            bail!("{name}: empty, not JSON; {EXPECTED}");
        }
        Ok(())
    }

    fn document(&mut self, name: &str, value: &Value) -> Result<()> {
        let Some(kind) = value.get("kind").and_then(Value::as_str) else {
            bail!("{name}: a JSON document without a kind; {EXPECTED}");
        };
        match value.get("items") {
            Some(Value::Array(items)) => {
                // A typed list's items carry no kind of their own; a `v1` `List`'s do.
                let item_kind = kind.strip_suffix("List").filter(|k| !k.is_empty());
                for (i, item) in items.iter().enumerate() {
                    let kind = item.get("kind").and_then(Value::as_str).or(item_kind);
                    self.object(kind, item)
                        .map_err(|e| anyhow::anyhow!("{name}: items[{i}]: {e}; {EXPECTED}"))?;
                }
                match item_kind {
                    Some("NetworkAttachmentDefinition") => self.nads_read = true,
                    Some("DeviceClass") => self.device_classes_read = true,
                    Some("CustomResourceDefinition") => self.crds_read = true,
                    _ => {}
                }
                Ok(())
            }
            Some(_) => bail!("{name}: a {kind} whose items are not a list; {EXPECTED}"),
            None => self
                .object(Some(kind), value)
                .map_err(|e| anyhow::anyhow!("{name}: {e}; {EXPECTED}")),
        }
    }

    fn object(&mut self, kind: Option<&str>, item: &Value) -> Result<()> {
        match kind {
            Some("Node") => self.nodes.push(Node::read(item)),
            Some("NetworkAttachmentDefinition") => {
                self.nads_read = true;
                self.nads.extend(Nad::read(item));
            }
            Some("DeviceClass") => {
                self.device_classes_read = true;
                let name = item.pointer("/metadata/name").and_then(Value::as_str);
                self.device_classes.extend(name.map(str::to_owned));
            }
            Some("CustomResourceDefinition") => {
                self.crds_read = true;
                let name = item.pointer("/metadata/name").and_then(Value::as_str);
                self.crds.extend(name.map(str::to_owned));
            }
            Some(other) => {
                bail!(
                    "a {other}, not a Node, NetworkAttachmentDefinition, DeviceClass or CustomResourceDefinition"
                )
            }
            None => bail!("an object without a kind"),
        }
        Ok(())
    }

    /// Whether the cluster has the DeviceClass `name`.
    pub fn has_class(&self, name: &str) -> bool {
        self.device_classes.iter().any(|c| c == name)
    }
}
