//! What an injection added to a pod (behaviour.md §10, §11), as the wire step added it: the
//! validate-only answer names it, and the Pod Security check holds it to the namespace's level.
//! Each merge says what it appended or set, so that what is named here is what the patch holds,
//! and nothing reads the pod again to find it.

use std::borrow::Cow;

use crate::compute_domain::Domain;
use crate::multus::Attached;
use crate::profile::EnvVar;

/// Everything the injection added, in the order the wire step added it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Added<'a> {
    /// The pod's GPU containers that gained something, in the pod's order.
    pub containers: Vec<Container<'a>>,
    /// The fabric's daemon, where the policy added it.
    pub sidecar: Option<Daemon>,
    /// `spec.volumes` the pod gained.
    pub volumes: Vec<NewVolume>,
    /// `spec.resourceClaims` the pod gained, by name.
    pub claims: Vec<String>,
    /// The ComputeDomain whose channel the last of `claims` is, where the pod gained one.
    pub channel: Option<Domain>,
    /// The annotations the pod gained or whose value the policy extended; the record is left
    /// out.
    pub annotations: Vec<Annotation>,
}

/// What one container gained.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Container<'a> {
    pub name: String,
    /// The resources it gained in `requests` or `limits`.
    pub resources: Vec<Resource<'a>>,
    /// `resources.claims`, by name.
    pub claims: Vec<String>,
    /// The `env` entries it gained, with their values: what an MPIJob's launcher passes to the
    /// ranks of workers like it (behaviour.md §3.12).
    pub env: Vec<EnvVar<'a>>,
    /// `volumeMounts`, by volume name.
    pub mounts: Vec<&'static str>,
    /// `securityContext.capabilities.add`, as written.
    pub capabilities: Vec<Cow<'a, str>>,
    /// Other `securityContext` fields set (`allowPrivilegeEscalation`, `seccompProfile`).
    pub security: Vec<&'static str>,
}

/// A resource a container gained, with the quantity it ends up with (the user's, where the
/// policy copied it from the other side).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource<'a> {
    pub name: Cow<'a, str>,
    pub quantity: String,
}

/// The sidecar the pod gained: the fabric's daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Daemon {
    pub name: &'static str,
    pub capabilities: &'static [&'static str],
}

/// A volume the pod gained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewVolume {
    pub name: &'static str,
    /// A `hostPath` volume, which Pod Security's baseline and restricted levels refuse.
    pub host_path: bool,
}

/// An annotation the pod gained, or whose value the policy extended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    pub key: &'static str,
    /// The Multus attachments appended, in their order.
    pub networks: Vec<Attached>,
}

impl Added<'_> {
    /// Nothing was added.
    pub fn is_empty(&self) -> bool {
        self.containers.is_empty()
            && self.sidecar.is_none()
            && self.volumes.is_empty()
            && self.claims.is_empty()
            && self.annotations.is_empty()
    }
}

impl Container<'_> {
    /// A container that has gained nothing yet.
    pub fn named(name: String) -> Self {
        Container {
            name,
            ..Container::default()
        }
    }

    /// Nothing but the name.
    pub fn is_empty(&self) -> bool {
        self.resources.is_empty()
            && self.claims.is_empty()
            && self.env.is_empty()
            && self.mounts.is_empty()
            && self.capabilities.is_empty()
            && self.security.is_empty()
    }
}
