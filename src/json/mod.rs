//! JSON, held four ways, each where it pays; every reader and the writer of the policy is here.
//!
//! - **The envelope** ([`envelope`]): the admission payload read in one pass, the trigger's inputs
//!   of the pod, with the settings onto a tape. Most pods are not opted in, and for them this is
//!   all the work done; a pod a default trigger opts in is read on into its object (below) in the
//!   same pass.
//! - **Lenient readers** ([`lenient`]): serde visitors that read a field of the wrong type as
//!   absent. The decision's pass and the lists the merge only reads and extends (env, mounts,
//!   volumes, init containers) use them: a pod that is not the policy's must pass whatever it
//!   holds, and a list item of the wrong shape is simply not one of the policy's.
//! - **The tape** ([`tape`]): the settings, parsed once into a flat vector whose strings borrow
//!   from the request, the instance tables kept as text until a pod names a row. Settings come
//!   with every request; a tree of `serde_json::Value` would allocate for every member.
//! - **The pod's object** ([`object`]): an opted-in pod, parsed into objects only where the
//!   merge reads or writes (its [`object::Shape`]), every other value kept as a slice of the
//!   request's text and copied to the answer byte for byte; read in the decision's pass
//!   ([`object::EarlyObject`]), or a second time for a pod other triggers opt in. A debug-build check
//!   ([`crate::merge::expect_read`]) fails every test that reads a member the shape does not
//!   parse.
//! - **The writer** ([`write`]): what the policy adds, rendered as JSON once per request (the
//!   tables' env and mount entries at compile time) and spliced in.
//!
//! `serde_json::Value` is not in the module: a small value compared whole (a pod volume against
//! the policy's, a quantity) is read onto a tape, and the readers of the module's own answer
//! every JSON type, since serde's "invalid type" message links its float formatting
//! (BENCHMARKS.md). The readers share one notion of a member's [`Name`] and of a [`JsonType`].

pub mod envelope;
pub mod lenient;
pub mod object;
pub mod tape;
pub mod write;

use std::borrow::Cow;
use std::fmt;

/// The JSON types, named as the policy's messages name them; kept with the error type, whose
/// messages are their one use outside this wing.
pub use crate::error::JsonType;

use serde::de::{self, Deserializer, Visitor};

/// An object member's name, borrowed from the request unless it has escapes: the pod's objects
/// and the settings' tape read their members' names with it.
#[derive(Debug)]
pub(crate) struct Name<'a>(pub(crate) Cow<'a, str>);

impl Name<'_> {
    /// The key as a JSON string. One borrowed from the request had no escapes there, so needs
    /// none here.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        match &self.0 {
            Cow::Borrowed(plain) => {
                out.push(b'"');
                out.extend_from_slice(plain.as_bytes());
                out.push(b'"');
            }
            Cow::Owned(text) => {
                // Writing a string into a Vec cannot fail.
                let _ = serde_json::to_writer(&mut *out, text);
            }
        }
    }
}

impl<'de> de::Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NameVisitor;
        impl<'de> Visitor<'de> for NameVisitor {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Owned(v.to_string())))
            }
        }
        deserializer.deserialize_str(NameVisitor)
    }
}
