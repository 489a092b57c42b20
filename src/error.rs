//! The policy's one error type: why it refuses settings, or a pod. Each kind carries where the
//! problem is (a path, a container, an annotation) and its message says what is wrong there and
//! what to do; `e2e-tests/messages.yaml` holds the messages.

use std::fmt;

use crate::ratio::Ratio;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Settings the policy cannot use (behaviour.md §1.4): every problem found, each naming its
    /// field (`aws.instanceTypes[p5.48xlarge].devicesPerNode: ...`). The policy server refuses
    /// to load them; a row checked only when a pod names it refuses that pod.
    Settings(Vec<String>),
    /// The admission payload is not a request the policy can read.
    Request { reason: String },
    /// A value the policy must read or extend has the wrong JSON type.
    Malformed { path: String, expected: JsonType },
    /// A device quantity that is not a whole number of devices.
    Quantity {
        container: String,
        resource: String,
        value: String,
        problem: &'static str,
    },
    /// G × per-GPU devices does not fit in a count.
    Overflow {
        container: String,
        resource: String,
        gpus: u64,
        per_gpu: Ratio,
    },
    /// More Multus attachments than the policy writes.
    TooManyNetworks {
        network: String,
        resource: String,
        wanted: u64,
    },
    /// The Multus annotation is there but is not a network list.
    UnreadableNetworks { value: String },
    /// The pod is not JSON the policy can read.
    Unreadable { reason: String },
    /// The `deviceClaim` template's name for this pod's device count is no name (behaviour.md
    /// §3.8): the settings checked it for a one-digit count only.
    ClaimTemplate { message: String },
    /// `preflight: reject` and an object the injection refers to is missing (behaviour.md §9).
    Preflight { message: String },
    /// The pod's annotations, with the policy's, would be more than the API server accepts
    /// (behaviour.md §4): their total, and the keys the policy set or extended.
    AnnotationsTooLarge {
        total: usize,
        keys: String,
        /// The API server's limit the total is over.
        limit: usize,
    },
}

pub const MAX_NETWORKS: u64 = 128;

/// Where a value is, for messages: `spec.containers[2].resources`,
/// `aws.instanceTypes[p5.48xlarge].devicesPerNode`. Built on the stack as a reader descends and
/// formatted only when there is something to say, so reading costs no allocation.
#[derive(Debug, Clone, Copy)]
pub enum Path<'p> {
    Root,
    Key(&'p Path<'p>, &'p str),
    Index(&'p Path<'p>, usize),
    /// A map's entry named by its key: `env[NCCL_IB_TC]`.
    Entry(&'p Path<'p>, &'p str),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => f.write_str("the object"),
            Path::Key(Path::Root, key) => f.write_str(key),
            Path::Key(parent, key) => write!(f, "{parent}.{key}"),
            Path::Index(parent, index) => write!(f, "{parent}[{index}]"),
            Path::Entry(parent, key) => write!(f, "{parent}[{key}]"),
        }
    }
}

impl Error {
    /// The same problem, located under `prefix` (a container or the pod spec).
    pub fn within(self, prefix: &str) -> Error {
        match self {
            Error::Malformed { path, expected } => Error::Malformed {
                path: if path.is_empty() {
                    prefix.to_string()
                } else {
                    format!("{prefix}.{path}")
                },
                expected,
            },
            other => other,
        }
    }
}

/// A JSON type mismatch at `path`, relative to whatever the caller is working on.
pub fn malformed(path: &str, expected: JsonType) -> Error {
    Error::Malformed {
        path: path.to_string(),
        expected,
    }
}

/// `items` with `sep` between them, as `[S]::join` writes them. Messages list names of several
/// kinds (`&str`, `String`, `Cow<str>`), and the standard `join` over each kind of slice is its
/// own kilobyte of module; this plain loop costs far less for each.
pub fn join<S: AsRef<str>>(items: &[S], sep: &str) -> String {
    let len = items.iter().map(|item| item.as_ref().len()).sum::<usize>()
        + sep.len() * items.len().saturating_sub(1);
    let mut text = String::with_capacity(len);
    for (at, item) in items.iter().enumerate() {
        if at > 0 {
            text.push_str(sep);
        }
        text.push_str(item.as_ref());
    }
    text
}

impl fmt::Display for Error {
    /// The message: for settings, their problems, as `validate_settings` answers them (a pod they
    /// refuse gets [`Error::refusal`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Settings(problems) => f.write_str(&join(problems, "; ")),
            Error::Request { reason } => write!(f, "cannot read the admission request: {reason}"),
            Error::Malformed { path, expected } => write!(
                f,
                "{path} must be {expected}; multi-node networking cannot be injected into this pod until it is"
            ),
            Error::Quantity {
                container,
                resource,
                value,
                problem,
            } => write!(
                f,
                "container {container:?} requests {resource} {value}, which {problem}; request a whole number of devices"
            ),
            Error::Overflow {
                container,
                resource,
                gpus,
                per_gpu,
            } => write!(
                f,
                "container {container:?}: {gpus} GPUs × {per_gpu} {resource} per GPU is more devices than can be counted; check the GPU request"
            ),
            Error::TooManyNetworks {
                network,
                resource,
                wanted,
            } => write!(
                f,
                "the pod needs {wanted} {network} attachments (one per {resource} device), more than the {MAX_NETWORKS} this policy writes; lower the devices per GPU or the GPUs per pod"
            ),
            Error::UnreadableNetworks { value } => write!(
                f,
                "annotation k8s.v1.cni.cncf.io/networks is {value:?}, which is neither \"ns/name,ns/name\" nor a JSON list of networks; fix it or remove it"
            ),
            Error::Unreadable { reason } => write!(f, "cannot read the pod: {reason}"),
            Error::ClaimTemplate { message } | Error::Preflight { message } => f.write_str(message),
            Error::AnnotationsTooLarge { total, keys, limit } => write!(
                f,
                "multi-node networking: with the annotations the policy adds ({keys}) the pod's annotations would total {total} bytes, keys and values, more than the {limit} the API server accepts; nothing was injected: shorten the pod's own annotations, or opt it out of multi-node networking"
            ),
        }
    }
}

impl Error {
    /// The message of a pod's refusal: settings problems say that they are the settings'.
    pub fn refusal(&self) -> String {
        match self {
            Error::Settings(_) => format!("the policy settings are invalid: {self}"),
            other => other.to_string(),
        }
    }
}
/// The JSON types, as messages name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonType {
    Null,
    Bool,
    Number,
    String,
    List,
    Object,
}

impl JsonType {
    pub fn name(self) -> &'static str {
        match self {
            JsonType::Null => "null",
            JsonType::Bool => "a boolean",
            JsonType::Number => "a number",
            JsonType::String => "a string",
            JsonType::List => "a list",
            JsonType::Object => "an object",
        }
    }
}

impl fmt::Display for JsonType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
