//! One runner over the cases, generic over what answers a payload ([`Answerer`]): the policy's
//! core called natively, or the compiled module in wasmtime. Each case gets its own fixture
//! cluster to answer the policy's host calls from, and every answer is held to the same checks.

use std::collections::HashSet;
use std::path::PathBuf;

use anyhow::{Result, bail, ensure};
use fixtures::admission_request;
use serde_json::Value;

use crate::cases::{self, Case, Expect, SettingsCase};
use crate::cluster::{HostFn, Recorder};
use crate::{Response, SettingsResponse, checked_claims, checked_patch};

/// What answers the policy's two calls, bytes in and bytes out, as the policy server calls them.
/// An `Err` is what the policy server would report as the policy's failure (a trap, a guest
/// error, a panic).
pub trait Answerer {
    /// `validate` on `payload`, with `host` answering the host calls the policy makes
    /// (`kubewarden`/`kubernetes`/`get_resource` for every read of the cluster).
    fn validate(&self, payload: &[u8], host: &HostFn) -> Result<Vec<u8>>;

    /// `validate_settings` on `payload`.
    fn validate_settings(&self, payload: &[u8]) -> Result<Vec<u8>>;
}

/// `validate` through `policy`, its answer decoded.
fn validate(policy: &impl Answerer, payload: &[u8], host: &HostFn) -> Result<Response> {
    Response::decode(&policy.validate(payload, host)?)
}

/// Runs a case, and feeds any mutated pod back to check that a second pass changes nothing.
pub fn run(policy: &impl Answerer, case: &Case) -> Result<()> {
    ensure!(
        case.expect.accepted == case.expect.message.is_none(),
        "a rejection gives expect.message and an acceptance none"
    );
    let cluster = Recorder::new(case.cluster.clone());
    let host = cluster.host();
    if case.payload.is_some() {
        ensure!(
            case.object.is_null() && case.settings.is_null() && case.expect.pod.is_none(),
            "a case with payload has no object, no settings and expects no mutated pod"
        );
        return check(&case.expect, &validate(policy, &case.payload(), &host)?);
    }
    ensure!(
        !case.settings.is_null(),
        "a case has settings (or settings_file, or payload)"
    );
    ensure!(
        !case.stored || case.expect.pod.is_none(),
        "a stored pod's case expects no mutation: the audit scanner ignores a patch"
    );
    let request = case.request();
    let response = validate(policy, &fixtures::payload(&request, &case.settings), &host)?;
    let calls = cluster.take_calls();
    if let Some(expected) = case.expect.host_calls {
        ensure!(
            calls.len() == expected,
            "expected {expected} host calls, the policy made {}: {:#?}",
            calls.len(),
            calls
                .iter()
                .map(|(_, _, op, payload)| format!("{op} {}", String::from_utf8_lossy(payload)))
                .collect::<Vec<_>>()
        );
    }
    check(&case.expect, &response)?;
    if let (Some(expected), Some(mutated)) = (&case.expect.pod, &response.mutated_object) {
        let expected = &crate::record::expected_pod(&case.settings, expected, &response)?;
        checked_patch(
            &case.object,
            mutated,
            crate::record::key(&case.settings).as_deref(),
        )?;
        checked_claims(&case.object, mutated)?;
        if mutated != expected {
            bail!(
                "mutated pod differs from the expected one:\n{}",
                difference(expected, mutated)
            );
        }
        let again = validate(
            policy,
            &fixtures::payload(
                &admission_request(&case.operation, &case.kind, mutated),
                &case.settings,
            ),
            &host,
        )?;
        ensure!(
            again.accepted,
            "second pass rejected the mutated pod: {:?}",
            again.message
        );
        if let Some(changed) = again.mutated_object {
            bail!(
                "second pass changed the pod again:\n{}",
                difference(mutated, &changed)
            );
        }
    }
    held_to_the_injector(policy, case, &response, &host)
}

/// The validate-only answer (behaviour.md §10) held to the injector's, for a case whose
/// settings are an object without `validateOnly`: on the case's request, and on the audit
/// scanner's requests for the case's pod and for the injector's output, each as the API server
/// stores it. A wired pod, stored, is one the injector leaves alone.
fn held_to_the_injector(
    policy: &impl Answerer,
    case: &Case,
    response: &Response,
    host: &HostFn,
) -> Result<()> {
    let Some(top) = case.settings.as_object() else {
        return Ok(());
    };
    if top.contains_key("validateOnly") {
        return Ok(());
    }
    let mut validate_only = case.settings.clone();
    validate_only["validateOnly"] = Value::Bool(true);
    let answer = validate(
        policy,
        &fixtures::payload(&case.request(), &validate_only),
        host,
    )?;
    agrees(response, &answer).map_err(|e| e.context("validateOnly on the case's request"))?;
    if case.operation != "CREATE" || !case.object.is_object() {
        return Ok(());
    }
    let mut pods = vec![(
        "the case's pod, stored",
        fixtures::stored::stored(&case.object),
    )];
    if let Some(mutated) = &response.mutated_object {
        pods.push((
            "the injector's pod, stored",
            fixtures::stored::stored(mutated),
        ));
    }
    for (what, stored) in pods {
        let audit = fixtures::stored::audit_request(&stored);
        let injector = validate(policy, &fixtures::payload(&audit, &case.settings), host)?;
        let answer = validate(policy, &fixtures::payload(&audit, &validate_only), host)?;
        agrees(&injector, &answer).map_err(|e| e.context(format!("validateOnly on {what}")))?;
        if let (true, Some(changed)) = (
            what == "the injector's pod, stored",
            injector.mutated_object,
        ) {
            bail!(
                "the injector changes its own pod once stored:\n{}",
                difference(&stored, &changed)
            );
        }
    }
    Ok(())
}

/// The validate-only answer `answer` to a request the injector answered `injector`: the same
/// acceptance and warnings where it changes nothing, the same refusal where it refuses, and a
/// refusal saying what the pod lacks where it would change the pod.
fn agrees(injector: &Response, answer: &Response) -> Result<()> {
    ensure!(
        answer.mutated_object.is_none() && answer.audit_annotations.is_none(),
        "validateOnly answered a mutation"
    );
    match (injector.accepted, &injector.mutated_object) {
        (true, None) => {
            ensure!(
                answer.accepted,
                "validateOnly refused a pod the injector accepts unchanged: {:?}",
                answer.message
            );
            ensure!(
                answer.warnings == injector.warnings,
                "validateOnly warned {:?}, the injector {:?}",
                answer.warnings,
                injector.warnings
            );
        }
        (true, Some(_)) => {
            let message = answer.message.as_deref().unwrap_or_default();
            ensure!(
                !answer.accepted
                    && message.starts_with("multi-node networking: this pod lacks the ")
                    && message.ends_with(" (validateOnly)")
                    && !message.contains('\n'),
                "validateOnly answered {:?} to a pod the injector changes",
                answer.message
            );
        }
        (false, _) => ensure!(
            !answer.accepted && answer.message == injector.message,
            "validateOnly answered {:?} to a pod the injector refuses with {:?}",
            answer.message,
            injector.message
        ),
    }
    Ok(())
}

fn check(expect: &Expect, response: &Response) -> Result<()> {
    ensure!(
        response.accepted == expect.accepted,
        "accepted = {}, expected {} (message: {:?})",
        response.accepted,
        expect.accepted,
        response.message
    );
    match (&expect.pod, &response.mutated_object) {
        (Some(_), None) => bail!("expected a mutation, the policy returned none"),
        (None, Some(pod)) => bail!(
            "expected no mutation, the policy returned {}",
            serde_json::to_string_pretty(pod)?
        ),
        _ => {}
    }
    ensure!(
        response.mutated_object.is_some() || response.audit_annotations.is_none(),
        "audit annotations {:?} without a mutation",
        response.audit_annotations
    );
    let warnings = response.warnings.clone().unwrap_or_default();
    ensure!(
        warnings == expect.warnings,
        "expected the warnings {:#?}\ngot {:#?}",
        expect.warnings,
        warnings
    );
    ensure!(
        response.message == expect.message,
        "expected the message {:?}\ngot {:?}",
        expect.message,
        response.message
    );
    Ok(())
}

/// The JSON Patch from `want` to `got`: the shortest readable account of a difference.
pub fn difference(want: &Value, got: &Value) -> String {
    serde_json::to_string_pretty(&json_patch::diff(want, got)).unwrap_or_default()
}

/// Runs a settings case.
pub fn run_settings(policy: &impl Answerer, case: &SettingsCase) -> Result<()> {
    ensure!(
        case.valid == case.message.is_empty(),
        "invalid settings give their message and valid ones none"
    );
    ensure!(
        case.settings_text.is_none() || case.settings.is_null(),
        "a case has settings or settings_text, not both"
    );
    let response = SettingsResponse::decode(&policy.validate_settings(&case.payload())?)?;
    ensure!(
        response.valid == case.valid,
        "valid = {}, expected {} (message: {:?})",
        response.valid,
        case.valid,
        response.message
    );
    let expected = (!case.valid).then(|| case.message.join("; "));
    ensure!(
        response.message == expected,
        "expected the message {expected:?}\ngot {:?}",
        response.message
    );
    Ok(())
}

/// How a set of cases went: how many ran, and every failure, each naming its case and file.
#[derive(Debug)]
pub struct Report {
    pub kind: &'static str,
    pub total: usize,
    pub failures: Vec<String>,
}

impl Report {
    /// Panics, listing every failure at once, unless cases were found and all passed; returns how
    /// many ran.
    pub fn assert_passed(&self) -> usize {
        let Report {
            kind,
            total,
            failures,
        } = self;
        assert!(*total > 0, "no {kind} cases found");
        assert!(
            failures.is_empty(),
            "{} of {total} {kind} cases failed:\n\n{}",
            failures.len(),
            failures.join("\n\n")
        );
        *total
    }
}

/// Every mutation case under `e2e-tests/cases`, run through `policy`. Panics when the cases
/// cannot be loaded or two share a name.
pub fn run_mutation_cases(policy: &impl Answerer) -> Report {
    let all = cases::load::<Case>(&crate::cases_dir()).unwrap_or_else(|e| panic!("{e:#}"));
    run_all("mutation", &all, |case| run(policy, case))
}

/// Every settings case under `e2e-tests/settings-cases`, run through `policy`. Panics when the
/// cases cannot be loaded or two share a name.
pub fn run_settings_cases(policy: &impl Answerer) -> Report {
    let all = cases::load::<SettingsCase>(&crate::settings_cases_dir())
        .unwrap_or_else(|e| panic!("{e:#}"));
    run_all("settings", &all, |case| run_settings(policy, case))
}

/// A named case.
trait Named {
    fn name(&self) -> &str;
}

impl Named for Case {
    fn name(&self) -> &str {
        &self.name
    }
}

impl Named for SettingsCase {
    fn name(&self) -> &str {
        &self.name
    }
}

fn run_all<T: Named>(
    kind: &'static str,
    all: &[(PathBuf, T)],
    run: impl Fn(&T) -> Result<()>,
) -> Report {
    let mut seen = HashSet::new();
    for (_, case) in all {
        assert!(
            seen.insert(case.name()),
            "case name {} is used twice",
            case.name()
        );
    }
    let failures = all
        .iter()
        .filter_map(|(file, case)| {
            run(case)
                .err()
                .map(|e| format!("{} ({}): {e:#}", case.name(), file.display()))
        })
        .collect();
    Report {
        kind,
        total: all.len(),
        failures,
    }
}
