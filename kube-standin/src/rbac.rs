//! Authorization of a resource request from the rules of one `ClusterRole`, bound to one user, as
//! Kubernetes' RBAC authorizer decides it (`k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac`,
//! `RuleAllows`): a rule allows a request when its verbs, API groups and resources each hold the
//! request's (or `*`), and its `resourceNames`, when it has any, the object's name. The refusal's
//! words are the apiserver's (`responsewriters.forbiddenMessage`):
//! `User "…" cannot get resource "configmaps" in API group "" in the namespace "team-a"`, or
//! `… at the cluster scope` for a request without a namespace. Discovery is not a resource
//! request: every user may read it (the `system:discovery` ClusterRole).

use serde::Deserialize;

/// One rule of a `ClusterRole`, as its YAML or JSON writes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    #[serde(default)]
    pub api_groups: Vec<String>,
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// What a resource request asks: the authorizer's attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attributes<'a> {
    pub user: &'a str,
    /// `get`, `list` or `watch`.
    pub verb: &'a str,
    pub group: &'a str,
    pub resource: &'a str,
    /// Empty for a cluster-scoped request.
    pub namespace: &'a str,
    /// Empty for a list or watch without `metadata.name=` in its field selector.
    pub name: &'a str,
}

impl PolicyRule {
    fn allows(&self, request: &Attributes) -> bool {
        let holds = |list: &[String], value: &str| list.iter().any(|v| v == "*" || v == value);
        holds(&self.verbs, request.verb)
            && holds(&self.api_groups, request.group)
            && holds(&self.resources, request.resource)
            && (self.resource_names.is_empty()
                || (!request.name.is_empty()
                    && self.resource_names.iter().any(|n| n == request.name)))
    }
}

/// The one user the rules are bound to, and the rules.
#[derive(Debug, Clone, Default)]
pub struct Authorizer {
    pub user: String,
    pub rules: Vec<PolicyRule>,
}

impl Authorizer {
    /// `Ok` when a rule allows `request`; else the apiserver's forbidden message.
    pub fn authorize(&self, request: &Attributes) -> Result<(), String> {
        if request.user == self.user && self.rules.iter().any(|r| r.allows(request)) {
            return Ok(());
        }
        Err(forbidden_message(request))
    }
}

/// `responsewriters.forbiddenMessage` for a resource request.
pub fn forbidden_message(request: &Attributes) -> String {
    let Attributes {
        user,
        verb,
        group,
        resource,
        namespace,
        ..
    } = request;
    if namespace.is_empty() {
        format!(
            "User {user:?} cannot {verb} resource {resource:?} in API group {group:?} at the cluster scope"
        )
    } else {
        format!(
            "User {user:?} cannot {verb} resource {resource:?} in API group {group:?} in the namespace {namespace:?}"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SA: &str = "system:serviceaccount:kubewarden:policy-server";

    fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
        let owned = |list: &[&str]| list.iter().map(|s| s.to_string()).collect();
        PolicyRule {
            api_groups: owned(groups),
            resources: owned(resources),
            verbs: owned(verbs),
            resource_names: Vec::new(),
        }
    }

    fn get<'a>(group: &'a str, resource: &'a str, namespace: &'a str) -> Attributes<'a> {
        Attributes {
            user: SA,
            verb: "get",
            group,
            resource,
            namespace,
            name: "x",
        }
    }

    #[test]
    fn a_rule_holds_verb_group_and_resource() {
        let authorizer = Authorizer {
            user: SA.into(),
            rules: vec![rule(&[""], &["configmaps"], &["get", "list", "watch"])],
        };
        assert!(
            authorizer
                .authorize(&get("", "configmaps", "team-a"))
                .is_ok()
        );
        assert_eq!(
            authorizer
                .authorize(&get("resource.nvidia.com", "computedomains", "team-a"))
                .unwrap_err(),
            format!(
                "User \"{SA}\" cannot get resource \"computedomains\" in API group \"resource.nvidia.com\" in the namespace \"team-a\""
            )
        );
        assert_eq!(
            authorizer
                .authorize(&get("", "namespaces", ""))
                .unwrap_err(),
            format!(
                "User \"{SA}\" cannot get resource \"namespaces\" in API group \"\" at the cluster scope"
            )
        );
        let other = Attributes {
            user: "system:anonymous",
            ..get("", "configmaps", "team-a")
        };
        assert!(authorizer.authorize(&other).is_err(), "only the bound user");
    }

    #[test]
    fn wildcards_and_resource_names() {
        let all = Authorizer {
            user: SA.into(),
            rules: vec![rule(&["*"], &["*"], &["*"])],
        };
        assert!(all.authorize(&get("x.io", "things", "n")).is_ok());
        let named = Authorizer {
            user: SA.into(),
            rules: vec![PolicyRule {
                resource_names: vec!["x".into()],
                ..rule(&[""], &["configmaps"], &["get", "list"])
            }],
        };
        assert!(named.authorize(&get("", "configmaps", "n")).is_ok());
        let list = Attributes {
            verb: "list",
            name: "",
            ..get("", "configmaps", "n")
        };
        assert!(
            named.authorize(&list).is_err(),
            "a list of every name is not a list of x"
        );
    }
}
