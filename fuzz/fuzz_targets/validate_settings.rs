//! Raw bytes as the settings (`validate_settings`). Every input gets `{"valid": bool, ...}`, and
//! a refusal always says why.
#![no_main]

use libfuzzer_sys::fuzz_target;
use multinode_networking_policy::admission;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let answer: Value = serde_json::from_slice(&admission::validate_settings(data))
        .expect("validate_settings answered something that is not JSON");
    match answer["valid"].as_bool() {
        Some(true) => {}
        Some(false) => assert!(
            answer["message"].as_str().is_some_and(|m| !m.is_empty()),
            "invalid settings without a message: {answer}"
        ),
        None => panic!("no `valid` in {answer}"),
    }
});
