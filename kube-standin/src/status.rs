//! The `Status` objects the API server answers a failed request with, in the fields and order
//! its JSON serializer writes them (`k8s.io/apimachinery/pkg/apis/meta/v1.Status`), and the
//! messages of `k8s.io/apimachinery/pkg/api/errors`:
//!
//! - `NewNotFound(qualifiedResource, name)`: `configmaps "nccl-env" not found`, reason `NotFound`,
//!   details `{name, group, kind: <resource>}` (empty fields left out);
//! - `NewForbidden(qualifiedResource, name, err)`: `<resource> "<name>" is forbidden: <err>`, or
//!   `<resource> is forbidden: <err>` without a name (a list or watch);
//! - the apiserver's not-found handler for a path nothing serves (a group version not installed):
//!   `the server could not find the requested resource`, reason `NotFound`, no details
//!   (`k8s.io/apiserver/pkg/util/notfoundhandler`);
//! - `NewBadRequest(reason)`: the reason as the message, reason `BadRequest`.

use serde::Serialize;

use crate::kinds::Kind;

/// A failed request's answer: its HTTP status code and its `Status` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    kind: &'static str,
    api_version: &'static str,
    metadata: Metadata,
    status: &'static str,
    pub message: String,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Details>,
    pub code: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
struct Metadata {}

/// `metav1.StatusDetails`: Go's `omitempty` leaves out the empty fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct Details {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The resource (plural), not the kind, as `NewNotFound` and `NewForbidden` fill it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
}

impl Status {
    fn failure(code: u16, reason: &str, message: String, details: Option<Details>) -> Status {
        Status {
            kind: "Status",
            api_version: "v1",
            metadata: Metadata {},
            status: "Failure",
            message,
            reason: reason.into(),
            details,
            code,
        }
    }

    /// `errors.NewNotFound` for the object `name` of `kind`.
    pub fn not_found(kind: &Kind, name: &str) -> Status {
        Status::failure(
            404,
            "NotFound",
            format!("{} {name:?} not found", kind.group_resource()),
            Some(details(kind, name)),
        )
    }

    /// `errors.NewForbidden` for `kind` (and `name`, empty for a list or watch), `why` being
    /// the authorizer's message (`User "…" cannot get resource …`).
    pub fn forbidden(kind: &Kind, name: &str, why: &str) -> Status {
        let resource = kind.group_resource();
        let message = if name.is_empty() {
            format!("{resource} is forbidden: {why}")
        } else {
            format!("{resource} {name:?} is forbidden: {why}")
        };
        Status::failure(403, "Forbidden", message, Some(details(kind, name)))
    }

    /// What the apiserver's not-found handler answers for a path nothing serves.
    pub fn path_not_found() -> Status {
        Status::failure(
            404,
            "NotFound",
            "the server could not find the requested resource".into(),
            None,
        )
    }

    /// `errors.NewUnauthorized("Unauthorized")`, what the authentication filter answers a token it
    /// does not know.
    pub fn unauthorized() -> Status {
        Status::failure(401, "Unauthorized", "Unauthorized".into(), None)
    }

    /// `errors.NewBadRequest`.
    pub fn bad_request(message: String) -> Status {
        Status::failure(400, "BadRequest", message, None)
    }

    /// `errors.NewMethodNotSupported`: a verb the stand-in does not serve on a resource.
    pub fn method_not_supported(kind: &Kind, action: &str) -> Status {
        Status::failure(
            405,
            "MethodNotAllowed",
            format!(
                "{action} is not supported on resources of kind {:?}",
                kind.group_resource()
            ),
            Some(Details {
                group: kind.group.clone(),
                kind: kind.plural.clone(),
                ..Details::default()
            }),
        )
    }

    /// The JSON text the API server writes, with its trailing newline (Go's `json.Encoder`).
    pub fn body(&self) -> Vec<u8> {
        let mut body = serde_json::to_vec(self).expect("a Status serialises");
        body.push(b'\n');
        body
    }
}

fn details(kind: &Kind, name: &str) -> Details {
    Details {
        name: name.into(),
        group: kind.group.clone(),
        kind: kind.plural.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(status: &Status) -> String {
        String::from_utf8(status.body()).unwrap()
    }

    #[test]
    fn not_found_as_the_api_server_writes_it() {
        assert_eq!(
            text(&Status::not_found(&Kind::config_map(), "nccl-env")),
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
             \"message\":\"configmaps \\\"nccl-env\\\" not found\",\"reason\":\"NotFound\",\
             \"details\":{\"name\":\"nccl-env\",\"kind\":\"configmaps\"},\"code\":404}\n"
        );
        let domain = Status::not_found(&Kind::compute_domain(), "llama");
        assert_eq!(
            domain.message,
            "computedomains.resource.nvidia.com \"llama\" not found"
        );
        assert!(text(&domain).contains(
            "\"details\":{\"name\":\"llama\",\"group\":\"resource.nvidia.com\",\"kind\":\"computedomains\"}"
        ));
    }

    #[test]
    fn forbidden_with_and_without_a_name() {
        let why = "User \"u\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"team-a\"";
        let list = Status::forbidden(&Kind::config_map(), "", why);
        assert_eq!(list.message, format!("configmaps is forbidden: {why}"));
        assert!(text(&list).contains("\"details\":{\"kind\":\"configmaps\"},\"code\":403}"));
        let get = Status::forbidden(&Kind::config_map(), "nccl-env", why);
        assert_eq!(
            get.message,
            format!("configmaps \"nccl-env\" is forbidden: {why}")
        );
    }

    #[test]
    fn a_path_nothing_serves() {
        assert_eq!(
            text(&Status::path_not_found()),
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
             \"message\":\"the server could not find the requested resource\",\"reason\":\"NotFound\",\
             \"code\":404}\n"
        );
    }
}
