//! Raw bytes as the `validate` payload (`{"request": AdmissionRequest, "settings": {...}}`).
//! Every input gets an answer the policy server can read; nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use multinode_networking_policy::admission;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let answer: Value = serde_json::from_slice(&admission::validate(data))
        .expect("validate answered something that is not JSON");
    assert!(answer["accepted"].is_boolean(), "no `accepted` in {answer}");
    if answer["accepted"] == false {
        assert!(
            answer["message"].is_string(),
            "a rejection without a message: {answer}"
        );
    }
});
