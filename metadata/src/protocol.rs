//! Asks a module for its waPC protocol version, as `kwctl annotate` does: the module runs in
//! wasmtime with WASI, behind the same waPC host crates as the end-to-end tests, and answers its
//! `protocol_version` function. What it answers is what the policy server is told, so the
//! version in the metadata can never disagree with the module it describes.

use anyhow::{Context, Result, anyhow, bail};
use wapc::WapcHost;
use wasmtime_provider::WasmtimeEngineProviderBuilder;

use crate::metadata::ProtocolVersion;

/// The protocol version `module` answers.
pub fn protocol_version(module: &[u8]) -> Result<ProtocolVersion> {
    let engine = WasmtimeEngineProviderBuilder::new()
        .module_bytes(module)
        .build()
        .context("wasmtime cannot load the module")?;
    let host = WapcHost::new(Box::new(engine), None)
        .context("the module does not start as a waPC guest; is it a Kubewarden waPC policy?")?;
    let answer = host.call("protocol_version", b"").map_err(|e| {
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
