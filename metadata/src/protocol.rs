//! Asks a module for its waPC protocol version, as `kwctl annotate` does: the module runs in
//! wasmtime on `policy-host`'s lean waPC engine (the one `make preview` runs, held by the
//! end-to-end tests to the policy server's answers), and answers its `protocol_version` function. What it answers is what the policy server is told, so the
//! version in the metadata can never disagree with the module it describes.

use anyhow::{Context, Result, anyhow, bail};
use std::sync::Arc;

use policy_host::{HostFn, Policy};

use crate::metadata::ProtocolVersion;

/// The protocol version `module` answers.
pub fn protocol_version(module: &[u8]) -> Result<ProtocolVersion> {
    let policy = Policy::from_bytes(module)?;
    // protocol_version makes no host call; one would be refused.
    let refused: HostFn = Arc::new(|_: &str, _: &str, _: &str, _: &[u8]| {
        Err("the annotator answers no host calls".into())
    });
    let instance = policy
        .instance(refused)
        .context("the module does not start as a waPC guest; is it a Kubewarden waPC policy?")?;
    let answer = instance.call("protocol_version", b"").map_err(|e| {
        anyhow!("the module's protocol_version call failed ({e}); a Kubewarden waPC policy registers it with the SDK's protocol_version_guest")
    })?;
    match serde_json::from_slice(&answer) {
        Ok(ProtocolVersion::V1) => Ok(ProtocolVersion::V1),
        _ => bail!(
            "the module answers protocol_version with {:?}, and the policy server loads only \"v1\"; build it with the Kubewarden SDK",
            String::from_utf8_lossy(&answer)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_that_is_no_wapc_guest_is_refused() {
        let empty = wasm_encoder::Module::new().finish();
        let message = format!("{:#}", protocol_version(&empty).unwrap_err());
        assert!(message.contains("waPC"), "{message}");
        let garbage = format!("{:#}", protocol_version(b"\0asm junk").unwrap_err());
        assert!(
            garbage.contains("wasmtime cannot load the module"),
            "{garbage}"
        );
    }
}
