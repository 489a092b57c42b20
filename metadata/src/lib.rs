//! A Kubewarden policy module's metadata, without kwctl: `policy-metadata.yml` read and checked
//! as kwctl reads it ([`metadata`]), the module's own waPC protocol version asked through
//! wasmtime ([`protocol`]), the `io.kubewarden.metadata` custom section written and found
//! ([`section`]), and the annotation that joins them ([`annotate`]). [`cli`] holds the
//! `annotate` and `inspect` commands that this crate's binary and `publish` both offer.
//!
//! A crate of its own, apart from `publish`, so that annotating the module (and `make preview`,
//! which needs the annotated module) builds no signing, SBOM or registry client. Only
//! annotating runs the module, so only the `annotate` feature (on by default) builds wasmtime:
//! `publish`, which reads and checks annotations but writes none, goes without it.

pub mod annotate;
pub mod cli;
pub mod metadata;
#[cfg(feature = "annotate")]
pub mod protocol;
pub mod section;
