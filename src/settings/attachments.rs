//! The values that attach a pod to a cluster's own fabric (behaviour.md §1.4, §3.9): a Multus
//! network in either of the forms Multus reads, a rail (its resource and its network), a host
//! directory mounted read-only.

use std::borrow::Cow;

use super::reader::Reader;
use crate::error::Path;
use crate::json::JsonType;
use crate::json::tape::Value;
use crate::k8s::names::{clean_path, is_absolute_path, is_dns1123_label, is_extended_resource};
use crate::profile::{HostDirectory, Network, Rail};

const NETWORK: &str = "a network attachment as name, namespace/name or {name, namespace} (lowercase letters, digits and '-')";
const RAIL: &str = "an object such as {resourceName: nvidia.com/rail0, network: rail0}";
const DIRECTORY: &str =
    "an object such as {hostPath: /etc/crusoe/nccl_topo, mountPath: /opt/nccl_topo}";
const NAME: &str = "a DNS label (at most 63 lowercase letters, digits and '-')";
const PATH: &str = "an absolute path without a .. segment";
const SHARED_MEMORY: &str = "/dev/shm";

impl Reader {
    /// A network as `name`, `namespace/name` or Multus's JSON form `{name, namespace}`; the same
    /// attachment whichever form names it.
    pub(super) fn network<'a>(
        &mut self,
        path: &Path<'_>,
        raw: Value<'_, 'a>,
    ) -> Option<Network<'a>> {
        if raw.json_type() == JsonType::String {
            let valid = crate::k8s::names::is_network_reference;
            return self.text(path, Some(raw), valid, NETWORK).map(Network);
        }
        let raw = self.object(path, raw, NETWORK, &["name", "namespace"])?;
        let name = self.required(path, raw, "name", is_dns1123_label, NAME);
        let namespace = raw.get("namespace");
        let namespace = self.text(
            &Path::Key(path, "namespace"),
            namespace,
            is_dns1123_label,
            NAME,
        );
        Some(Network(match namespace {
            Some(namespace) => Cow::Owned(format!("{namespace}/{}", name?)),
            None => name?,
        }))
    }

    /// A rail: its device resource and its network, both required.
    pub(super) fn rail<'a>(&mut self, path: &Path<'_>, raw: Value<'_, 'a>) -> Option<Rail<'a>> {
        let raw = self.object(path, raw, RAIL, &["resourceName", "network"])?;
        let what = "an extended resource name with a domain prefix that does not start with requests. (the API server keeps it for quotas), such as nvidia.com/rail0";
        let resource = self.required(path, raw, "resourceName", is_extended_resource, what);
        let at = Path::Key(path, "network");
        let network = match raw.get("network").filter(|n| !n.is_null()) {
            Some(network) => self.network(&at, network),
            None => {
                self.errors
                    .push(format!("{at}: missing; name the rail's network attachment"));
                None
            }
        };
        Some(Rail {
            resource: resource?,
            network: network?,
        })
    }

    /// From `len.0` to `len.1` networks, each as [`Reader::network`] reads it, each once: the
    /// Multus list is extended to hold each the times wanted (behaviour.md §3.9), so a second
    /// entry of one network would find the first and add nothing.
    pub(super) fn networks<'a>(
        &mut self,
        path: &Path<'_>,
        raw: Value<'_, 'a>,
        len: (usize, usize),
    ) -> Option<Vec<Network<'a>>> {
        let networks = self.items(path, raw, Some(len), NETWORK, Reader::network)?;
        for (at, network) in networks.iter().enumerate() {
            if networks[..at].iter().any(|n| n.same_attachment(network)) {
                self.errors.push(format!(
                    "{}: {} is listed already; each network is attached once per pod, list it once",
                    Path::Index(path, at),
                    network.0
                ));
                return None;
            }
        }
        Some(networks)
    }

    /// From `len.0` to `len.1` rails, each of its own resource and network: a resource twice
    /// asks twice for one device, and the sandbox never starts with two attachments for one VF;
    /// two rails on one network make one pool of attachments, which the Multus list counts once
    /// (behaviour.md §1.4).
    pub(super) fn rails<'a>(
        &mut self,
        path: &Path<'_>,
        raw: Value<'_, 'a>,
        len: (usize, usize),
    ) -> Option<Vec<Rail<'a>>> {
        let rails = self.items(path, raw, Some(len), RAIL, Reader::rail)?;
        for (at, rail) in rails.iter().enumerate() {
            let earlier = &rails[..at];
            if earlier.iter().any(|r| r.resource == rail.resource) {
                self.errors.push(format!(
                    "{}: {} is the resource of an earlier rail; give each rail its own resource",
                    Path::Key(&Path::Index(path, at), "resourceName"),
                    rail.resource
                ));
                return None;
            }
            if earlier
                .iter()
                .any(|r| r.network.same_attachment(&rail.network))
            {
                self.errors.push(format!(
                    "{}: {} is the network of an earlier rail; a network names one device pool, give each rail its own",
                    Path::Key(&Path::Index(path, at), "network"),
                    rail.network.0
                ));
                return None;
            }
        }
        Some(rails)
    }

    /// From `len.0` to `len.1` host directories, each mounted at a path of its own.
    pub(super) fn directories<'a>(
        &mut self,
        path: &Path<'_>,
        raw: Value<'_, 'a>,
        len: (usize, usize),
    ) -> Option<Vec<HostDirectory<'a>>> {
        let directories = self.items(path, raw, Some(len), DIRECTORY, Reader::directory)?;
        for (at, directory) in directories.iter().enumerate() {
            let mount = clean_path(&directory.mount);
            if directories[..at]
                .iter()
                .any(|d| clean_path(&d.mount) == mount)
            {
                self.errors.push(format!(
                    "{}: {} is the mount path of an earlier directory; give each its own",
                    Path::Key(&Path::Index(path, at), "mountPath"),
                    directory.mount
                ));
                return None;
            }
        }
        Some(directories)
    }

    /// A host directory and where it is mounted, both absolute paths.
    pub(super) fn directory<'a>(
        &mut self,
        path: &Path<'_>,
        raw: Value<'_, 'a>,
    ) -> Option<HostDirectory<'a>> {
        let raw = self.object(path, raw, DIRECTORY, &["hostPath", "mountPath"])?;
        let host = self.required(path, raw, "hostPath", is_absolute_path, PATH);
        let mount = self.required(path, raw, "mountPath", is_absolute_path, PATH);
        // `/dev/shm` is the fabric's own shared memory (behaviour.md §3.9), in any spelling the
        // kernel resolves to it.
        if mount.as_deref().map(clean_path).as_deref() == Some(SHARED_MEMORY) {
            self.errors.push(format!(
                "{}: {SHARED_MEMORY} is the shared memory the fabric mounts; mount the directory elsewhere",
                Path::Key(path, "mountPath")
            ));
            return None;
        }
        Some(HostDirectory {
            host: host?,
            mount: mount?,
        })
    }

    /// An object of `keys` only; a `null` is none, and anything else is named as wrong.
    fn object<'t, 'a>(
        &mut self,
        path: &Path<'_>,
        raw: Value<'t, 'a>,
        what: &str,
        keys: &[&str],
    ) -> Option<Value<'t, 'a>> {
        if raw.is_null() {
            self.errors
                .push(format!("{path}: must be {what}, got null"));
            return None;
        }
        let raw = self.of_type(path, raw, JsonType::Object, &what)?;
        for (key, _) in raw.members() {
            if !keys.contains(&key.as_ref()) {
                self.unknown_key(path, key, keys);
            }
        }
        Some(raw)
    }

    /// The string `key` of `object`, which must be there.
    fn required<'a>(
        &mut self,
        path: &Path<'_>,
        object: Value<'_, 'a>,
        key: &str,
        valid: fn(&str) -> bool,
        what: &str,
    ) -> Option<Cow<'a, str>> {
        let at = Path::Key(path, key);
        let value = object.get(key).filter(|v| !v.is_null());
        if value.is_none() {
            self.errors
                .push(format!("{at}: missing; it must be {what}"));
        }
        self.text(&at, value, valid, what)
    }
}
