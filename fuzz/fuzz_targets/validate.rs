//! Raw bytes as the `validate` payload (`{"request": AdmissionRequest, "settings": {...}}`).
//! Nothing panics, and every answer is JSON text, whatever the bytes. The policy server sends only
//! payloads it has read itself (with serde_json), and for those the answer must also be one it can
//! read back as a value: the policy copies the pod's text it does not change, so a number
//! serde_json refuses (`1e400`) in a payload it could never have sent comes back as it came.
//! The pod read in the decision's pass, where its metadata says it may be opted in, is the pod
//! read a second time from the payload.
#![no_main]

use libfuzzer_sys::fuzz_target;
use multinode_networking_policy::json::{envelope as peek, object as view};
use multinode_networking_policy::{admission, engine, settings};
use serde_json::Value;
use serde_json::value::RawValue;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(mut envelope) = peek::Envelope::read(text, &engine::POD, &settings::DEFAULT_TRIGGERS)
        && let Some(early) = envelope.request.object.as_mut().and_then(|pod| pod.view.take())
    {
        let written = |read: Result<view::Object<'_>, _>| {
            read.map(|pod| {
                let mut out = Vec::new();
                pod.write(&mut out);
                out
            })
        };
        let again = written(view::read_object(text, &engine::POD));
        let early = written(early.into_object());
        assert_eq!(again, early, "the pod of {text}");
    }
    let answer = admission::validate(data);
    serde_json::from_slice::<&RawValue>(&answer)
        .expect("validate answered something that is not JSON text");
    if serde_json::from_slice::<Value>(data).is_err() {
        return;
    }
    let answer: Value =
        serde_json::from_slice(&answer).expect("validate answered something that is not JSON");
    assert!(answer["accepted"].is_boolean(), "no `accepted` in {answer}");
    if answer["accepted"] == false {
        assert!(
            answer["message"].is_string(),
            "a rejection without a message: {answer}"
        );
    }
});
