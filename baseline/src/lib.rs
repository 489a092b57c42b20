//! The floor of a Kubewarden policy, for `make bench`: what any policy written like the Kubewarden
//! Rust template pays before it does any work of its own. Built with the policy's SDK and release
//! profile. One module, two modes, so both floors come from the same compiled code:
//!
//! - `validate` ("accept"): decodes the payload as the SDK's `ValidationRequest<Settings>`, which
//!   builds the whole object as a JSON tree, and answers `accept_request()`.
//! - `validate_echo` ("echo"): decodes the same way and answers `mutate_request(object)`, the
//!   object unchanged as the mutated object: the decode + encode floor of any mutating policy.

use kubewarden_policy_sdk::request::ValidationRequest;
use kubewarden_policy_sdk::settings::Validatable;
use kubewarden_policy_sdk::wapc_guest::{CallResult, register_function};
use kubewarden_policy_sdk::{accept_request, mutate_request, protocol_version_guest};
use serde::Deserialize;

/// The template's settings: none; unknown keys (the policy's settings) are ignored.
#[derive(Deserialize, Default, Debug)]
#[serde(default)]
pub struct Settings {}

impl Validatable for Settings {
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    register_function("validate", validate);
    register_function("validate_echo", validate_echo);
    register_function(
        "validate_settings",
        kubewarden_policy_sdk::validate_settings::<Settings>,
    );
    register_function("protocol_version", protocol_version_guest);
}

fn validate(payload: &[u8]) -> CallResult {
    let _request: ValidationRequest<Settings> = ValidationRequest::new(payload)?;
    accept_request()
}

fn validate_echo(payload: &[u8]) -> CallResult {
    let request: ValidationRequest<Settings> = ValidationRequest::new(payload)?;
    mutate_request(request.request.object)
}
