//! What `make preview POD=FILE` accepts: a Pod, a job manifest (its first worker pod, as its
//! controller would make it: [`crate::controllers`]), or a `kind: List` of them, in one YAML or
//! JSON file of one or more documents. Anything else is refused with a message that names it.

use anyhow::{Result, bail};
use serde::Deserialize;
use serde_json::Value;

use crate::controllers::{describe, is_job, known_kinds, worker_pod};

/// A pod to run the policy on, and where it came from (for the output's headings).
#[derive(Debug)]
pub struct Input {
    pub origin: String,
    pub pod: Value,
}

/// What a file held: the pods to run, and the documents left aside (a ComputeDomain beside its
/// job), each described, for a note.
#[derive(Debug, Default)]
pub struct Inputs {
    pub pods: Vec<Input>,
    pub skipped: Vec<String>,
}

/// The pods in `text` (the file `name`), or why there are none.
pub fn pods(name: &str, text: &str) -> Result<Inputs> {
    let mut documents = Vec::new();
    for document in serde_yaml::Deserializer::from_str(text) {
        let value = match Value::deserialize(document) {
            Ok(value) => value,
            Err(e) => bail!("{name} is not YAML or JSON: {e}"),
        };
        // `---` with nothing after it, or a file of comments: no document.
        if !value.is_null() {
            documents.push(value);
        }
    }
    if documents.is_empty() {
        bail!(
            "{name} holds no YAML document: give a Pod, a job ({}), or a List of them",
            known_kinds()
        );
    }
    let mut inputs = Inputs::default();
    for document in &documents {
        collect(name, document, &mut inputs)?;
    }
    if inputs.pods.is_empty() {
        bail!(
            "{name} holds no Pod and no job the preview knows ({}), but: {}",
            known_kinds(),
            inputs.skipped.join(", ")
        );
    }
    Ok(inputs)
}

fn collect(name: &str, document: &Value, inputs: &mut Inputs) -> Result<()> {
    let Some(kind) = document["kind"].as_str() else {
        bail!(
            "{name}: a document without `kind:` (is it a pod spec without its apiVersion, kind and metadata?); give a Pod, a job ({}), or a List of them",
            known_kinds()
        );
    };
    match kind {
        "Pod" => inputs.pods.push(Input {
            origin: describe(document),
            pod: document.clone(),
        }),
        "List" => {
            let Some(items) = document["items"].as_array() else {
                bail!("{name}: a List without items");
            };
            for item in items {
                collect(name, item, inputs)?;
            }
        }
        _ if is_job(document) => inputs.pods.push(Input {
            origin: format!(
                "the first worker pod of {}, as its controller would create it",
                describe(document)
            ),
            pod: worker_pod(document).map_err(|e| e.context(name.to_string()))?,
        }),
        _ => inputs.skipped.push(describe(document)),
    }
    Ok(())
}
