//! What a cloud block, or an instance row, sets (behaviour.md §1.2, §3.6): the layers a pod's
//! profile is built from. The cloud's block is the first layer over the fabric's table; the row of
//! the pod's machine, the settings' row over the built-in one, is the second.

use std::borrow::Cow;

use crate::clouds::{Fabric, Key, Param, apply_env};
use crate::merge::same_capability;
use crate::profile::{EnvChange, Profile};

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

impl PartialEq for Fabric {
    fn eq(&self, other: &Fabric) -> bool {
        std::ptr::eq(self, other)
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        std::ptr::eq(self, other)
    }
}

impl<'a> Overlay<'a> {
    /// Changes `profile`, the table of `fabric`, by what this layer sets for it: its keys, then its
    /// env and the fabric block's env (behaviour.md §3.6), then its capabilities after those the
    /// profile has.
    pub fn apply(&self, fabric: &'static Fabric, profile: &mut Profile<'a>) {
        for set in self.set.iter().filter(|s| s.fabric == fabric) {
            (set.key.apply)(profile, set.param.clone());
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

/// Two sorted env maps as one, sorted: `over`'s entry wins where both name a variable. (A merge of
/// the two, not a sort: a sort would add its code to the module for lists this short.)
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
