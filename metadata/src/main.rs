//! `policy-metadata annotate` and `inspect`: see [`USAGE`]. The same commands as `publish
//! annotate` and `publish inspect`, in a binary that builds no registry client: what
//! `make annotated-policy.wasm` runs. Messages go to stderr; `inspect` writes the metadata to
//! stdout.

use std::process::ExitCode;

use anyhow::{Result, bail};
use policy_metadata::cli::{annotate_command, inspect_command};

const USAGE: &str = "usage:
  policy-metadata annotate -m <metadata.yml> [-u <usage.md>] -o <out.wasm> <module.wasm>
  policy-metadata inspect [-o yaml|json] <module.wasm>

annotate writes the metadata file, the module's protocol_version answer and the usage text
into the module's io.kubewarden.metadata section, as `kwctl annotate` does (same flags).
inspect shows that metadata and fails if the policy server would refuse it.
`publish` has both commands too, beside push, pull, verify and sbom.";

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Vec<String>) -> Result<()> {
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    let Some((command, rest)) = args.split_first() else {
        bail!("{USAGE}");
    };
    match command.as_str() {
        "annotate" => annotate_command(rest, USAGE),
        "inspect" => inspect_command(rest, USAGE),
        _ => bail!("unknown command {command}\n\n{USAGE}"),
    }
}
