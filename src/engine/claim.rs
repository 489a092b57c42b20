//! The fabric through DRA (behaviour.md §3.8): where the settings give the pod's fabric a
//! `deviceClaim`, one pod claim made from its `ResourceClaimTemplate` stands for the device
//! requests, GKE's interfaces or the Multus list, and every GPU container names it. Claims cannot
//! change after creation; the policy acts only on CREATE (§2).

use crate::error::Error;
use crate::json::lenient::Entry;
use crate::json::object::{Node, Object};
use crate::json::write::{push_string, render_string};
use crate::k8s::names::is_dns1123_subdomain;
use crate::merge::{Read, append, expect_read, items, names, object_entry};
use crate::profile::{DeviceClaim, Profile, with_count};

use super::container::GpuContainer;

/// What [`Claim::add`] did: the claim it added, the containers it named it in, whether the pod
/// has claims besides the fabric's, and the template its fabric claim is made from, if it is the
/// settings'.
pub(super) struct Claimed {
    /// The pod's claim of the fabric, which every GPU container names.
    pub(super) name: String,
    /// The name, where the pod gained the claim.
    pub(super) pod_claim: Option<String>,
    /// For each GPU container, in order, whether it gained the claim's name.
    pub(super) named_in: Vec<bool>,
    pub(super) others: bool,
    pub(super) template: Option<String>,
}

/// The pod's claim of the fabric, before the pod has it.
pub(super) struct Claim<'c> {
    /// Its name in the pod: the settings', else the fabric's.
    pub(super) name: &'c str,
    pub(super) setting: &'c DeviceClaim<'c>,
}

impl<'c> Claim<'c> {
    pub(super) fn of(profile: &'c Profile<'c>, fabric: &'static str) -> Option<Claim<'c>> {
        let setting = profile.claim.as_ref()?;
        Some(Claim {
            name: setting.name.as_deref().unwrap_or(fabric),
            setting,
        })
    }

    /// The NICs a GCP pod's claim stands for: those its interfaces would list.
    pub(super) fn nics(profile: &Profile<'_>, nics: Option<u64>) -> u64 {
        let listed = profile
            .interfaces
            .as_ref()
            .map_or(0, |i| i.networks.len() as u64);
        nics.map_or(listed, |n| n.min(listed))
    }

    #[cold]
    fn not_a_name(&self, template: &str, count: u64) -> Error {
        Error::ClaimTemplate {
            message: format!(
                "{}.template gives {} for this pod ({count} devices), which is not a ResourceClaimTemplate name (a DNS subdomain of at most 253 characters); shorten the template's name",
                self.setting.setting,
                render_string(template)
            ),
        }
    }

    /// Adds the claim, made from the template for `count` devices, to `spec` unless the pod has a
    /// claim of its name or from that template, and names the pod's claim in every GPU
    /// container. `gpu_claims` are the pod's claims read as holding GPUs and no device of the
    /// fabric (behaviour.md §3.10): never the fabric's, whatever their names. Returns what it
    /// added, whether the pod has claims besides the fabric's, and the template the pod's claim is
    /// made from, where it is this one (for the preflight; a claim of the name the user made
    /// otherwise is theirs); or, where one of `gpu_claims` is made from the template, the
    /// collision, and nothing is added: a claim from that template would bring more GPUs.
    pub(super) fn add(
        &self,
        spec: &mut Object<'_>,
        gpu_containers: &[GpuContainer],
        count: u64,
        gpu_claims: &[String],
    ) -> Result<Result<Claimed, Collision>, Error> {
        let template = with_count(&self.setting.template, count);
        if !is_dns1123_subdomain(&template) {
            return Err(self.not_a_name(&template, count));
        }
        let claims = items::<Entry<'_>>(spec, "resourceClaims").map_err(|e| e.within("spec"))?;
        let holds_gpus = |c: &&Entry<'_>| {
            c.name
                .as_str()
                .is_some_and(|name| gpu_claims.iter().any(|g| g == name))
        };
        if let Some(gpus) = claims
            .iter()
            .filter(holds_gpus)
            .find(|c| c.template.as_str() == Some(&template))
        {
            return Ok(Err(Collision {
                claim: gpus.name.as_str().unwrap_or_default().to_string(),
                template,
            }));
        }
        // A claim of the name, else a named claim from the template, is the fabric's already.
        let fabrics = || claims.iter().filter(|c| !holds_gpus(c));
        let ours = fabrics()
            .find(|c| c.name.as_str() == Some(self.name))
            .or_else(|| {
                fabrics().find(|c| c.name.0.is_some() && c.template.as_str() == Some(&template))
            });
        let others = claims.len() > usize::from(ours.is_some());
        let from_template = ours.is_none_or(|c| c.template.as_str() == Some(&template));
        let name = match ours.and_then(|c| c.name.as_str()) {
            Some(name) => name.to_string(),
            None => {
                let taken: Vec<&str> = claims.iter().filter_map(|c| c.name.as_str()).collect();
                free_name(self.name, &taken, None)
            }
        };
        let mut pod_claim = None;
        if ours.is_none() {
            append(spec, "resourceClaims", pod_claim_item(&name, &template))
                .map_err(|e| e.within("spec"))?;
            pod_claim = Some(name.clone());
        }
        let named_in = name_in_containers(spec, gpu_containers, &name)?;
        Ok(Ok(Claimed {
            name,
            pod_claim,
            named_in,
            others,
            template: from_template.then_some(template),
        }))
    }
}

/// A claim of the pod's GPUs made from the template the fabric's claim would be made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Collision {
    /// The pod's claim of GPUs.
    pub(super) claim: String,
    pub(super) template: String,
}

/// `base`, else the first of `<base>-2`, `-3`, … that no claim of `taken` has and that is not
/// `also`: one of the first `taken.len() + 2` names is free. A pod claim's name is a DNS label of
/// at most 63 characters: where `base` is a label, so is each name, `base` shortened to fit.
pub(super) fn free_name(base: &str, taken: &[&str], also: Option<&str>) -> String {
    let free = |name: &str| also != Some(name) && !taken.contains(&name);
    if free(base) {
        return base.to_string();
    }
    (2..)
        .map(|n: usize| {
            let suffix = format!("-{n}");
            let fits = MAX_LABEL.saturating_sub(suffix.len());
            let stem = base.get(..fits).unwrap_or(base);
            format!("{stem}{suffix}")
        })
        .find(|name| free(name))
        .unwrap_or_default()
}

/// The longest DNS label (RFC 1123), which a pod claim's name must be.
const MAX_LABEL: usize = 63;

/// A `spec.resourceClaims` item: the claim `name`, made from `template`.
pub(super) fn pod_claim_item(name: &str, template: &str) -> String {
    let mut item = String::from("{\"name\":");
    push_string(&mut item, name);
    item.push_str(",\"resourceClaimTemplateName\":");
    push_string(&mut item, template);
    item.push('}');
    item
}

/// Names the pod claim `name` in every one of `gpu_containers` that does not name it yet; says,
/// for each, whether it gained the name.
pub(super) fn name_in_containers(
    spec: &mut Object<'_>,
    gpu_containers: &[GpuContainer],
    name: &str,
) -> Result<Vec<bool>, Error> {
    let mut entry = String::from("{\"name\":");
    push_string(&mut entry, name);
    entry.push('}');
    expect_read(spec, "containers", Read::List);
    let mut named_in = vec![false; gpu_containers.len()];
    let Some(Node::List(containers)) = spec.get_mut("containers") else {
        return Ok(named_in);
    };
    for (gpu, named) in gpu_containers.iter().zip(&mut named_in) {
        let Some(Node::Object(container)) = containers.get_mut(gpu.index) else {
            continue;
        };
        let at = |e: Error| e.within(&format!("spec.containers[{}]", gpu.index));
        let resources = object_entry(container, "resources").map_err(at)?;
        let within = |e: Error| at(e.within("resources"));
        if !names(resources, "claims")
            .map_err(within)?
            .contains(&name.into())
        {
            *named = append(resources, "claims", entry.clone()).map_err(within)?;
        }
    }
    Ok(named_in)
}

#[cfg(test)]
mod tests {
    use super::free_name;
    use crate::engine::tests::{gpu_container, inject, inject_twice, pod};
    use crate::settings::config_of;
    use serde_json::json;

    #[test]
    fn a_claims_name_is_its_base_unless_a_claim_has_it() {
        let base = "compute-domain-channel";
        assert_eq!(free_name(base, &["efa"], None), base);
        assert_eq!(free_name(base, &[base], None), "compute-domain-channel-2");
        assert_eq!(
            free_name(base, &["compute-domain-channel-2"], Some(base)),
            "compute-domain-channel-3"
        );
        assert_eq!(free_name("efa", &["efa", "efa-2", "efa-3"], None), "efa-4");
        let long = "a".repeat(63);
        let second = free_name(&long, &[&long], None);
        assert_eq!(second, format!("{}-2", "a".repeat(61)));
        assert!(crate::k8s::names::is_dns1123_label(&second));
    }

    #[test]
    fn the_claim_replaces_the_device_and_names_the_count() {
        let config = config_of(
            json!({"aws": {"enabled": true, "deviceClaim": {"template": "efa-{count}"}}}),
        );
        let mut p = pod(vec![gpu_container("t", json!(8)), json!({"name": "cpu"})]);
        p["spec"]["nodeSelector"] = json!({"node.kubernetes.io/instance-type": "p5.48xlarge"});
        p["spec"]["resourceClaims"] =
            json!([{"name": "channel", "resourceClaimTemplateName": "cd"}]);
        let outcome = inject_twice(&mut p, &config);
        assert!(
            outcome.changed() && outcome.warnings.is_empty(),
            "{outcome:?}"
        );
        assert_eq!(
            p["spec"]["resourceClaims"],
            json!([{"name": "channel", "resourceClaimTemplateName": "cd"}, {"name": "efa", "resourceClaimTemplateName": "efa-32"}])
        );
        let resources = &p["spec"]["containers"][0]["resources"];
        assert_eq!(resources["claims"], json!([{"name": "efa"}]));
        assert!(resources["limits"].get("vpc.amazonaws.com/efa").is_none());
        assert!(resources["requests"].get("vpc.amazonaws.com/efa").is_none());
        assert!(p["spec"]["containers"][1].get("resources").is_none());
        // The rest of the fabric stays.
        assert_eq!(resources["requests"]["cpu"], json!("100m"));
        assert!(p["spec"]["containers"][0]["env"].is_array());
    }

    #[test]
    fn a_pod_that_claims_the_fabric_gets_no_second_claim() {
        let config = config_of(
            json!({"oci": {"enabled": true, "deviceClaim": {"template": "vfs", "name": "nics"}}}),
        );
        for claims in [
            json!([{"name": "nics", "resourceClaimName": "mine"}]),
            json!([{"name": "mine", "resourceClaimTemplateName": "vfs"}]),
        ] {
            let mut p = pod(vec![gpu_container("t", json!(8))]);
            p["spec"]["resourceClaims"] = claims.clone();
            inject_twice(&mut p, &config);
            assert_eq!(p["spec"]["resourceClaims"], claims);
            let name = &claims[0]["name"];
            assert_eq!(
                p["spec"]["containers"][0]["resources"]["claims"],
                json!([{"name": name}])
            );
            // No Multus list without VFs (the record is the pod's one annotation).
            let annotations = p["metadata"]["annotations"].as_object().unwrap();
            assert!(
                !annotations.contains_key("k8s.v1.cni.cncf.io/networks"),
                "{p}"
            );
            assert_eq!(annotations.len(), 1, "{p}");
        }
    }

    #[test]
    fn a_name_that_is_not_one_is_refused_naming_the_setting() {
        let long = format!("{}-{{count}}", "a".repeat(251));
        let config = config_of(
            json!({"azure": {"enabled": true, "rdmaDevicesPerGPU": 2, "deviceClaim": {"template": long}}}),
        );
        let mut p = pod(vec![gpu_container("t", json!(8))]);
        let error = inject(&mut p, &config).unwrap_err().to_string();
        assert!(
            error.starts_with("azure.deviceClaim.template gives"),
            "{error}"
        );
    }
}
