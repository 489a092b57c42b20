//! The profile a pod gets, built in one place (behaviour.md §1.2, §1.3, §3.6): the fabric's
//! table, then the cloud block's [`Overlay`], then the overlay of the pod's machine (the
//! settings' row laid over the built-in one's [`Facts`]), with the fabric's NCCL transport pinned
//! where a layer asks for it. An overlay is what a block or a row sets: the fabric it picks, keys
//! of the cloud's fabrics, env, capabilities.

use std::borrow::Cow;

use crate::clouds::{Cloud, Fabric, Facts, Key, Param};
use crate::merge::same_capability;
use crate::profile::{EnvChange, EnvVar, Profile};

/// NCCL's choice of network plugin: with it set, NCCL fails at init when that plugin cannot load,
/// instead of running over sockets.
const NCCL_NET: &str = "NCCL_NET";

/// The fabric a pod gets: its machine's, else the block's, else the cloud's default.
pub fn fabric(cloud: &Cloud, block: &Overlay<'_>, machine: &Overlay<'_>) -> &'static Fabric {
    machine
        .fabric
        .or(block.fabric)
        .unwrap_or_else(|| cloud.default_fabric())
}

/// The injection of `fabric`: its table, changed by the cloud's `block`, then by the pod's
/// `machine`.
pub fn build<'a>(
    fabric: &'static Fabric,
    block: &Overlay<'a>,
    machine: &Overlay<'a>,
) -> Profile<'a> {
    let mut profile = (fabric.profile)();
    // Pinned before the layers' env, so that an `NCCL_NET` of the settings wins.
    let pin = machine.pin_transport.or(block.pin_transport);
    if let (Some(true), Some(transport)) = (pin, fabric.transport) {
        let present = profile.env.iter().any(|e| e.name == NCCL_NET);
        if !present {
            profile.env.push(EnvVar::new(
                Cow::Borrowed(NCCL_NET),
                Cow::Borrowed(transport),
            ));
        }
    }
    block.apply(fabric, &mut profile);
    machine.apply(fabric, &mut profile);
    profile
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overlay<'a> {
    /// `fabric`: the fabric it picks.
    pub fabric: Option<&'static Fabric>,
    /// The fabrics' keys it sets, each with its fabric.
    pub set: Vec<Set<'a>>,
    /// `env`, sorted by name, one entry a name: for whichever fabric.
    pub env: Vec<EnvChange<'a>>,
    /// The `env` of each fabric's own block, sorted likewise.
    pub fabric_env: Vec<(&'static Fabric, Vec<EnvChange<'a>>)>,
    pub capabilities: Vec<Cow<'a, str>>,
    /// `pinTransport`: set `NCCL_NET` to the fabric's NCCL plugin.
    pub pin_transport: Option<bool>,
}

/// One key of one fabric, set.
#[derive(Debug, Clone, PartialEq)]
pub struct Set<'a> {
    pub fabric: &'static Fabric,
    pub key: &'static Key,
    pub param: Param<'a>,
}

impl<'a> Overlay<'a> {
    /// Changes `profile`, the table of `fabric`, by what this layer sets for it: its keys, then its
    /// env and the fabric block's env (behaviour.md §3.6), then its capabilities after those the
    /// profile has.
    fn apply(&self, fabric: &'static Fabric, profile: &mut Profile<'a>) {
        for set in self.set.iter().filter(|s| s.fabric == fabric) {
            set.key.apply(profile, set.param.clone());
        }
        apply_env(&mut profile.env, &self.env);
        if let Some((_, env)) = self.fabric_env.iter().find(|(f, _)| *f == fabric) {
            apply_env(&mut profile.env, env);
        }
        for capability in &self.capabilities {
            let present = profile
                .capabilities
                .iter()
                .any(|c| same_capability(c, capability));
            if !present {
                profile.capabilities.push(capability.clone());
            }
        }
    }

    /// Whether this layer gives `fabric` a `deviceClaim` (behaviour.md §3.8).
    pub fn claims(&self, fabric: &'static Fabric) -> bool {
        self.set
            .iter()
            .any(|s| s.fabric == fabric && matches!(s.param, Param::Claim(_)))
    }

    /// The first fabric this layer gives a `deviceClaim`.
    pub fn claimed(&self) -> Option<&'static Fabric> {
        self.set
            .iter()
            .find(|s| matches!(s.param, Param::Claim(_)))
            .map(|s| s.fabric)
    }

    /// This layer over `base`, key by key: what this one sets wins, env entries merge by name.
    pub fn over(self, base: Overlay<'a>) -> Overlay<'a> {
        let mut set: Vec<Set<'a>> = base
            .set
            .into_iter()
            .filter(|b| {
                !self
                    .set
                    .iter()
                    .any(|s| s.fabric == b.fabric && s.key == b.key)
            })
            .collect();
        set.extend(self.set);
        let mut fabric_env = base.fabric_env;
        for (fabric, env) in self.fabric_env {
            match fabric_env.iter_mut().find(|(f, _)| *f == fabric) {
                Some((_, under)) => *under = merged(env, std::mem::take(under)),
                None => fabric_env.push((fabric, env)),
            }
        }
        let mut capabilities = base.capabilities;
        for capability in self.capabilities {
            if !capabilities.iter().any(|c| same_capability(c, &capability)) {
                capabilities.push(capability);
            }
        }
        Overlay {
            fabric: self.fabric.or(base.fabric),
            pin_transport: self.pin_transport.or(base.pin_transport),
            set,
            env: merged(self.env, base.env),
            fabric_env,
            capabilities,
        }
    }

    /// What every one of `layers` sets alike: the layer of a pod that may run on any of several
    /// machines (behaviour.md §3.6). Nothing for no layers.
    pub fn agreed(layers: &[&Overlay<'a>]) -> Overlay<'a> {
        let Some((first, others)) = layers.split_first() else {
            return Overlay::default();
        };
        let everywhere = |f: &dyn Fn(&Overlay<'a>) -> bool| others.iter().all(|o| f(o));
        Overlay {
            fabric: first
                .fabric
                .filter(|fabric| everywhere(&|o| o.fabric == Some(*fabric))),
            pin_transport: first
                .pin_transport
                .filter(|pin| everywhere(&|o| o.pin_transport == Some(*pin))),
            set: first
                .set
                .iter()
                .filter(|s| everywhere(&|o| o.set.contains(s)))
                .cloned()
                .collect(),
            env: first
                .env
                .iter()
                .filter(|e| everywhere(&|o| o.env.contains(e)))
                .cloned()
                .collect(),
            fabric_env: first
                .fabric_env
                .iter()
                .map(|(fabric, env)| {
                    let has = |o: &Overlay<'a>, e: &EnvChange<'a>| {
                        o.fabric_env
                            .iter()
                            .find(|(f, _)| f == fabric)
                            .is_some_and(|(_, env)| env.contains(e))
                    };
                    let shared = env
                        .iter()
                        .filter(|e| everywhere(&|o| has(o, e)))
                        .cloned()
                        .collect();
                    (*fabric, shared)
                })
                .collect(),
            capabilities: first
                .capabilities
                .iter()
                .filter(|c| everywhere(&|o| o.capabilities.iter().any(|d| same_capability(c, d))))
                .cloned()
                .collect(),
        }
    }
}

/// What a built-in machine implies, as the overlay a settings row for it would read into.
impl From<&Facts> for Overlay<'static> {
    fn from(facts: &Facts) -> Overlay<'static> {
        Overlay {
            fabric: facts.fabric,
            set: facts
                .set
                .iter()
                .map(|(fabric, key, param)| Set {
                    fabric,
                    key,
                    param: param.clone(),
                })
                .collect(),
            env: changes(facts.env),
            fabric_env: facts
                .fabric_env
                .iter()
                .map(|(fabric, env)| (*fabric, changes(env)))
                .collect(),
            capabilities: facts
                .capabilities
                .iter()
                .copied()
                .map(Cow::Borrowed)
                .collect(),
            pin_transport: None,
        }
    }
}

/// Changes a list of variables by a settings `env` map (behaviour.md §3.6): a name the list has
/// gets the new value in place, `None` removes it, new names are appended in `changes`' order.
/// `changes` is sorted by name (as the settings' reader leaves it), so one pass does it.
pub fn apply_env<'a>(env: &mut Vec<EnvVar<'a>>, changes: &[EnvChange<'a>]) {
    if changes.is_empty() {
        return;
    }
    let find = |name: &str| changes.binary_search_by(|c| c.name.as_ref().cmp(name)).ok();
    let mut used = vec![false; changes.len()];
    let mut changed = Vec::with_capacity(env.len() + changes.len());
    for var in env.drain(..) {
        match find(&var.name) {
            None => changed.push(var),
            Some(at) => {
                used[at] = true;
                if let Some(value) = &changes[at].value {
                    changed.push(EnvVar::new(changes[at].name.clone(), value.clone()));
                }
            }
        }
    }
    for (change, used) in changes.iter().zip(used) {
        if let (false, Some(value)) = (used, &change.value) {
            changed.push(EnvVar::new(change.name.clone(), value.clone()));
        }
    }
    *env = changed;
}

/// A machine's env values as the changes a settings `env` map reads into.
fn changes(env: &'static [(&'static str, &'static str)]) -> Vec<EnvChange<'static>> {
    env.iter()
        .map(|(name, value)| EnvChange {
            name: Cow::Borrowed(*name),
            value: Some(Cow::Borrowed(*value)),
        })
        .collect()
}

/// Two sorted env maps as one, sorted: `over`'s entry wins where both name a variable. Both are
/// sorted by name already, so one pass merges them.
fn merged<'a>(over: Vec<EnvChange<'a>>, under: Vec<EnvChange<'a>>) -> Vec<EnvChange<'a>> {
    if under.is_empty() {
        return over;
    }
    let mut out = Vec::with_capacity(over.len() + under.len());
    let mut under = under.into_iter().peekable();
    for o in over {
        while let Some(u) = under.next_if(|u| u.name < o.name) {
            out.push(u);
        }
        under.next_if(|u| u.name == o.name);
        out.push(o);
    }
    out.extend(under);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::var;

    #[test]
    fn settings_env_replaces_in_place_removes_and_appends() {
        let mut env = vec![var!("A", "1"), var!("B", "2"), var!("C", "3")];
        let change = |name: &'static str, value: Option<&'static str>| EnvChange {
            name: Cow::Borrowed(name),
            value: value.map(Cow::Borrowed),
        };
        apply_env(
            &mut env,
            &[
                change("B", Some("two")),
                change("C", None),
                change("D", Some("4")),
                change("Z", None),
            ],
        );
        let names: Vec<_> = env
            .iter()
            .map(|v| format!("{}={}", v.name, v.value))
            .collect();
        assert_eq!(names, ["A=1", "B=two", "D=4"]);
        assert_eq!(env[1].json, r#"{"name":"B","value":"two"}"#);
    }
}
