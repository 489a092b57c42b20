//! `cluster-settings FILE...`: the settings for the cluster whose `kubectl get ... -o json`
//! output the files hold (`-`: standard input). The settings go to standard output and nothing
//! else does; a refusal is one line on standard error, and a non-zero exit.

use std::io::Read;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

fn main() -> ExitCode {
    match run() {
        Ok(yaml) => {
            print!("{yaml}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            // One line: the cause chain joined, newlines of a parser's message folded.
            let message = format!("{e:#}").replace('\n', " ");
            eprintln!("cluster-settings: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<String> {
    let names: Vec<String> = std::env::args().skip(1).collect();
    if names.is_empty() {
        bail!(
            "no input; usage: make -s settings CLUSTER=\"nodes.json [nads.json] [deviceclasses.json] [crds.json]\" (- for standard input); {}",
            cluster_settings::input::EXPECTED
        );
    }
    let mut texts = Vec::with_capacity(names.len());
    for name in &names {
        let text = if name == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("standard input")?;
            text
        } else {
            std::fs::read_to_string(name).with_context(|| format!("cannot read {name}"))?
        };
        texts.push(text);
    }
    let inputs: Vec<(&str, &str)> = names
        .iter()
        .map(String::as_str)
        .zip(texts.iter().map(String::as_str))
        .collect();
    Ok(cluster_settings::settings(&inputs)?.yaml)
}
