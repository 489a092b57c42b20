//! `make settings`: reads what `kubectl get nodes -o json` (and, where the cluster has them,
//! `kubectl get network-attachment-definitions -A -o json`, `kubectl get deviceclasses -o json`
//! and `kubectl get crd -o json`) print, and writes the policy's settings for that cluster, with comments that say what
//! each GPU node shape shows and what the nodes cannot tell. The command line
//! (`src/main.rs`) and the browser playground call [`settings`].
//!
//! The flow: [`input`] reads the objects; [`kind`] tells the cloud from each node; [`shape`]
//! groups the GPU nodes by shape, each with the fabric [`fabric`] reads from its allocatable
//! resources; [`plan`] chooses the block and writes it, with [`fallback`] for what a pod naming
//! neither machine nor pool gets, [`blocks`] and [`gcp`], [`multus`] and [`dra`] (with [`jobs`],
//! the job controllers' labels) for what they know, [`rows`] the instance rows and [`pools`] the
//! node pools; [`write`] holds the document and renders the YAML with its comments.

pub mod blocks;
pub mod count;
pub mod dra;
pub mod fabric;
pub mod fallback;
pub mod gcp;
pub mod input;
pub mod jobs;
pub mod kind;
pub mod multus;
pub mod node;
pub mod plan;
pub mod pools;
pub mod rows;
pub mod shape;
pub mod vendor;
pub mod write;

use anyhow::{Result, bail};

/// The settings read from the cluster: the YAML document, and its value as JSON (what the policy
/// server passes to the policy).
#[derive(Debug)]
pub struct Settings {
    pub yaml: String,
    pub json: serde_json::Value,
}

/// The settings for the cluster whose objects `inputs` hold, each `(name, text)`: a file name (in
/// messages) and its text. An error is one sentence saying what was expected.
pub fn settings(inputs: &[(&str, &str)]) -> Result<Settings> {
    let mut cluster = input::Cluster::default();
    for (name, text) in inputs {
        cluster.add(name, text)?;
    }
    let written = plan::plan(&cluster)?;
    let yaml = write::render(&written)?;
    let json = serde_json::to_value(&written.settings)?;
    // The settings must load as they are: a document the policy refuses is this tool's bug.
    let answer =
        multinode_networking_policy::admission::validate_settings(json.to_string().as_bytes());
    let answer: serde_json::Value = serde_json::from_slice(&answer)?;
    if answer.get("valid") != Some(&serde_json::Value::Bool(true)) {
        bail!(
            "the settings written do not load, which is this tool's bug: {}",
            answer
                .get("message")
                .and_then(|m| m.as_str())
                .unwrap_or("no message")
        );
    }
    Ok(Settings { yaml, json })
}
