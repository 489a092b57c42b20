//! What one claim holds, read from the object the host answered (behaviour.md §3.10): a
//! `ResourceClaimTemplate` (the claim's spec at `spec.spec`) or a `ResourceClaim` (at `spec`), in
//! `resource.k8s.io/v1`'s shape. Read leniently, without a tree: the answer comes from the
//! cluster, and no answer, however malformed, may trap the module.

use std::borrow::Cow;

use serde_json::value::RawValue;

use crate::json::lenient::{Members, items, members, read_members, string};

/// The DeviceClass of a ComputeDomain's channel (kubernetes-sigs/dra-driver-nvidia-gpu,
/// `templates/compute-domain-workload-claim-template.tmpl.yaml`): always IMEX channel 0. A claim
/// that requests it is a pod's channel (behaviour.md §3.11).
pub const CHANNEL_CLASS: &str = "compute-domain-default-channel.nvidia.com";

/// The devices of a claim that the policy counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counted {
    /// GPUs of `ExactCount` requests (of the largest alternative, for `firstAvailable`).
    pub gpus: u64,
    /// Requests of GPUs with `allocationMode: All`: each the node's GPUs.
    pub all: u64,
    /// Some request is of a fabric class: the claim brings the fabric's NICs.
    pub fabric: bool,
    /// The GPU class (its index among the settings') of the first request counted.
    pub class: Option<usize>,
    /// Some request is of a ComputeDomain's channel class: the claim is the pod's IMEX channel
    /// (behaviour.md §3.11).
    pub channel: bool,
}

impl Counted {
    /// The claim asks for GPUs.
    pub fn has_gpus(&self) -> bool {
        self.gpus > 0 || self.all > 0
    }
}

/// How a kind holds the claim's spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// A `ResourceClaimTemplate`: `spec.spec`.
    Template,
    /// A `ResourceClaim`: `spec`.
    Claim,
}

/// The device classes the counts are read by.
pub struct Classes<'c> {
    pub gpu: &'c [Cow<'c, str>],
    pub fabric: &'c [Cow<'c, str>],
}

/// The devices of the claim `object` (its JSON text) holds as `holder`; `None` where its spec is
/// not one the policy can read.
pub fn read_answer(object: &str, holder: Holder, classes: &Classes<'_>) -> Option<Counted> {
    let object = read_members(object).ok()?;
    let mut spec = object.get("spec");
    if holder == Holder::Template {
        spec = spec.and_then(|spec| members(spec).get("spec"));
    }
    devices(spec?, classes)
}

/// The devices of a claim's spec (`{devices: {requests: [...]}}`); `None` where a field the count
/// depends on has the wrong form. A spec without requests asks for nothing.
fn devices(spec: &RawValue, classes: &Classes<'_>) -> Option<Counted> {
    let mut found = Counted::default();
    let Some(requests) = object(spec)?.get("devices").filter(|d| !is_null(d)) else {
        return Some(found);
    };
    let Some(requests) = object(requests)?.get("requests").filter(|r| !is_null(r)) else {
        return Some(found);
    };
    for request in list(requests)? {
        let request = object(request)?;
        if let Some(exactly) = request.get("exactly").filter(|e| !is_null(e)) {
            let wanted = wanted(exactly, classes)?;
            found.fabric |= wanted.fabric;
            found.channel |= wanted.channel;
            found.class = found.class.or(wanted.class);
            match wanted.gpus {
                Some(Count::Exact(n)) => found.gpus = found.gpus.saturating_add(n),
                Some(Count::All) => found.all = found.all.saturating_add(1),
                None => {}
            }
        } else if let Some(alternatives) = request.get("firstAvailable").filter(|f| !is_null(f)) {
            // The scheduler picks one: the largest GPU alternative is the most the pod gets.
            let mut largest: Option<Count> = None;
            for alternative in list(alternatives)? {
                let wanted = wanted(alternative, classes)?;
                found.fabric |= wanted.fabric;
                found.channel |= wanted.channel;
                if wanted.gpus > largest {
                    largest = wanted.gpus;
                    found.class = found.class.or(wanted.class);
                }
            }
            match largest {
                Some(Count::Exact(n)) => found.gpus = found.gpus.saturating_add(n),
                Some(Count::All) => found.all = found.all.saturating_add(1),
                None => {}
            }
        }
    }
    Some(found)
}

/// A GPU request's count; `All` is more than any number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Count {
    Exact(u64),
    All,
}

struct Wanted {
    gpus: Option<Count>,
    fabric: bool,
    channel: bool,
    class: Option<usize>,
}

/// One request's class and count (`exactly`, or one alternative of `firstAvailable`).
fn wanted(request: &RawValue, classes: &Classes<'_>) -> Option<Wanted> {
    let request = object(request)?;
    let class = match request.get("deviceClassName").filter(|c| !is_null(c)) {
        Some(class) => Some(string(class)?),
        None => None,
    };
    let class = class.as_deref().unwrap_or("");
    let fabric = classes.fabric.iter().any(|c| c == class);
    let channel = class == CHANNEL_CLASS;
    let Some(index) = classes.gpu.iter().position(|c| c == class) else {
        return Some(Wanted {
            gpus: None,
            fabric,
            channel,
            class: None,
        });
    };
    let mode = match request.get("allocationMode").filter(|m| !is_null(m)) {
        Some(mode) => Some(string(mode)?),
        None => None,
    };
    let gpus = match mode.as_deref().unwrap_or("ExactCount") {
        "ExactCount" => Count::Exact(match request.get("count").filter(|c| !is_null(c)) {
            Some(count) => count.get().parse::<u64>().ok()?,
            None => 1,
        }),
        "All" => Count::All,
        _ => return None,
    };
    Some(Wanted {
        gpus: Some(gpus),
        fabric,
        channel,
        class: Some(index),
    })
}

fn is_null(raw: &RawValue) -> bool {
    raw.get() == "null"
}

/// An object's members; `None` for any other value.
fn object(raw: &RawValue) -> Option<Members<'_>> {
    raw.get().starts_with('{').then(|| members(raw))
}

/// A list's items; `None` for any other value.
fn list(raw: &RawValue) -> Option<Vec<&RawValue>> {
    raw.get().starts_with('[').then(|| items(raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classes() -> (Vec<Cow<'static, str>>, Vec<Cow<'static, str>>) {
        (
            vec!["gpu.nvidia.com".into(), "gpu.amd.com".into()],
            vec!["efa.networking.k8s.aws".into()],
        )
    }

    fn template(name: &str, requests: &str) -> String {
        format!(
            r#"{{"metadata":{{"name":"{name}"}},"spec":{{"spec":{{"devices":{{"requests":{requests}}}}}}}}}"#
        )
    }

    fn devices_of(requests: &str) -> Option<Counted> {
        let (gpu, fabric) = classes();
        let classes = Classes {
            gpu: &gpu,
            fabric: &fabric,
        };
        read_answer(&template("t", requests), Holder::Template, &classes)
    }

    fn found(gpus: u64, all: u64, fabric: bool) -> Option<Counted> {
        let class = (gpus > 0 || all > 0).then_some(0);
        Some(Counted {
            gpus,
            all,
            fabric,
            class,
            channel: false,
        })
    }

    #[test]
    fn exact_counts_default_to_one_and_add_up() {
        // NVIDIA's quickstart single-gpu, and gpu-test5's two requests of one GPU each.
        let one = r#"[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com"}}]"#;
        assert_eq!(devices_of(one), found(1, 0, false));
        let two = r#"[{"name":"ts-gpu","exactly":{"deviceClassName":"gpu.nvidia.com"}},{"name":"mps-gpu","exactly":{"deviceClassName":"gpu.nvidia.com","allocationMode":"ExactCount","count":3}}]"#;
        assert_eq!(devices_of(two), found(4, 0, false));
    }

    #[test]
    fn all_first_available_and_other_classes() {
        let all = r#"[{"name":"gpus","exactly":{"deviceClassName":"gpu.amd.com","allocationMode":"All"}}]"#;
        let amd = Counted {
            class: Some(1),
            ..Counted::default()
        };
        assert_eq!(devices_of(all), Some(Counted { all: 1, ..amd }));
        let first = r#"[{"name":"gpus","firstAvailable":[{"name":"big","deviceClassName":"gpu.nvidia.com","count":8},{"name":"mig","deviceClassName":"mig.nvidia.com","count":16},{"name":"small","deviceClassName":"gpu.nvidia.com","count":4}]}]"#;
        assert_eq!(devices_of(first), found(8, 0, false));
        let first_all = r#"[{"name":"gpus","firstAvailable":[{"name":"a","deviceClassName":"gpu.nvidia.com","count":2},{"name":"b","deviceClassName":"gpu.nvidia.com","allocationMode":"All"}]}]"#;
        assert_eq!(devices_of(first_all), found(0, 1, false));
        // A ComputeDomain channel, as the driver's controller writes its template: no GPUs, the
        // pod's IMEX channel.
        let channel = r#"[{"name":"channel","exactly":{"deviceClassName":"compute-domain-default-channel.nvidia.com"}}]"#;
        let is_channel = Some(Counted {
            channel: true,
            ..Counted::default()
        });
        assert_eq!(devices_of(channel), is_channel);
        // dranet's gpu-efa-aligned: a GPU and its EFA NIC.
        let aligned = r#"[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":1}},{"name":"efa","exactly":{"deviceClassName":"efa.networking.k8s.aws","count":1}}]"#;
        assert_eq!(devices_of(aligned), found(1, 0, true));
        assert_eq!(devices_of("[]"), found(0, 0, false));
        assert_eq!(devices_of("null"), found(0, 0, false));
    }

    #[test]
    fn a_claim_holds_its_spec_one_level_up() {
        let (gpu, fabric) = classes();
        let classes = Classes {
            gpu: &gpu,
            fabric: &fabric,
        };
        let claim = r#"{"metadata":{"name":"c"},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":2}}]}}}"#;
        assert_eq!(
            read_answer(claim, Holder::Claim, &classes),
            found(2, 0, false)
        );
        // Read as a template, the same object has no spec.spec: unreadable, not no GPUs.
        assert_eq!(read_answer(claim, Holder::Template, &classes), None);
    }

    #[test]
    fn garbage_is_unreadable_never_a_guess() {
        for requests in [
            r#"[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":-1}}]"#,
            r#"[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":"2"}}]"#,
            r#"[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":1.5}}]"#,
            r#"[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","allocationMode":"Some"}}]"#,
            r#"[{"name":"gpu","exactly":{"deviceClassName":7}}]"#,
            r#"[{"name":"gpu","exactly":[]}]"#,
            r#"[{"name":"gpu","firstAvailable":{}}]"#,
            r#"[3]"#,
            r#"{}"#,
        ] {
            assert_eq!(devices_of(requests), None, "{requests}");
        }
        let (gpu, fabric) = classes();
        let classes = Classes {
            gpu: &gpu,
            fabric: &fabric,
        };
        for text in [
            "",
            "null",
            "{}",
            "[]",
            r#"{"spec":null}"#,
            r#"{"spec":{"spec":3}}"#,
            "{",
        ] {
            assert_eq!(
                read_answer(text, Holder::Template, &classes),
                None,
                "{text}"
            );
        }
    }
}
