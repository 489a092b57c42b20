//! A module's annotation, written without kwctl and read back as the policy server reads it.
//! Annotating refuses whatever would make the policy server refuse the result.

use anyhow::{Result, bail};

use crate::metadata::Metadata;
use crate::section;

/// `module` annotated with the metadata file's `text` (`file` names it in messages), the
/// module's own protocol version, and `usage` as `io.kubewarden.policy.usage`.
#[cfg(feature = "annotate")]
pub fn annotate(module: &[u8], file: &str, text: &str, usage: Option<&str>) -> Result<Vec<u8>> {
    use crate::metadata::ExecutionMode;
    use crate::protocol;

    let mut metadata = Metadata::from_file_text(file, text)?;
    if metadata.execution_mode != ExecutionMode::KubewardenWapc {
        bail!(
            "{file}: executionMode is {}, but this tool annotates waPC policies, whose protocol version it asks the module for; set executionMode to kubewarden-wapc",
            serde_json::to_string(&metadata.execution_mode)?
        );
    }
    // Before running the module: an annotated one is refused without its code being run.
    section::ensure_not_annotated(module)?;
    metadata.protocol_version = Some(protocol::protocol_version(module)?);
    if let Some(usage) = usage {
        metadata.set_usage(usage);
    }
    metadata.check()?;
    section::with_metadata_section(module, &metadata.to_section()?)
}

/// The module's metadata and the section's exact JSON, after the checks the policy server makes
/// when it loads the module.
pub fn annotation(module: &[u8]) -> Result<(Metadata, &[u8])> {
    let Some(data) = section::metadata_section(module)? else {
        bail!(
            "the module has no {} section, and the policy server refuses a waPC module without one; annotate it (`make annotated-policy.wasm`, or `policy-metadata annotate`)",
            section::METADATA_SECTION
        );
    };
    let metadata = Metadata::from_section(data)?;
    metadata.check()?;
    Ok((metadata, data))
}
