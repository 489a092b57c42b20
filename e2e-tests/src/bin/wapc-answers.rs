//! Writes what the waPC module answers, for the playground's browser test to hold the page to:
//!
//!     wapc-answers OUT.json [--module FILE]
//!
//! - `cases`: every case under `e2e-tests/cases` and `e2e-tests/settings-cases`, loaded here so
//!   that a new case is covered without a change to the test: the payload, the module's answer
//!   bytes (the page must give the same bytes), and what the case expects, written by hand: the
//!   verdict, and the JSON Patch from the pod to the expected pod, as the policy server computes
//!   it. A mutated pod is sent again (`second pass`), as the e2e runner does.
//! - `examples`: every example settings file (`examples/settings` at any depth and the charts'
//!   values, NeMo Platform's and NeMo Helix's) with every example pod (`examples/pods`), read
//!   from YAML here with serde_yaml, and
//!   the patch the policy server would compute from the module's answer: the page reads the same
//!   files with another YAML reader and must show the same patch.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use e2e_tests::cases::{self, Case, SettingsCase};
use e2e_tests::{Instance, Policy, admission_request, default_module_path, pod_kind};
use policy_payload::settings_block;
use serde_json::{Value, json};

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(
        args.next()
            .context("usage: wapc-answers OUT.json [--module FILE]")?,
    );
    let module = match (args.next().as_deref(), args.next()) {
        (Some("--module"), Some(file)) => PathBuf::from(file),
        (None, _) => default_module_path(),
        _ => bail!("usage: wapc-answers OUT.json [--module FILE]"),
    };
    let instance = Policy::load(&module)?.instance()?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));

    let mut written = Vec::new();
    for (file, case) in cases::load::<Case>(&root.join("cases"))? {
        let file = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        written.extend(mutation_case(&instance, &file, &case)?);
    }
    for (file, case) in cases::load::<SettingsCase>(&root.join("settings-cases"))? {
        // A case of settings text that is not a JSON object sends that text as it is.
        let payload = case.payload();
        written.push(json!({
            "name": case.name,
            "file": file.strip_prefix(root).unwrap_or(&file).display().to_string(),
            "call": "validate_settings",
            "payload": text(&payload)?,
            "answer": text(&instance.call("validate_settings", &payload)?)?,
            "valid": case.valid,
        }));
    }
    let examples = examples(&instance, &root.join("../examples"))?;
    ensure!(!written.is_empty(), "no cases found");

    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let document =
        json!({"module": module.display().to_string(), "cases": written, "examples": examples});
    std::fs::write(&out, serde_json::to_vec_pretty(&document)?)
        .with_context(|| format!("cannot write {}", out.display()))?;
    println!(
        "{}: {} answers to cases, {} to examples",
        out.display(),
        document["cases"].as_array().map_or(0, Vec::len),
        document["examples"].as_array().map_or(0, Vec::len)
    );
    Ok(())
}

/// The case's request and, when the module mutates, the mutated pod's second pass.
fn mutation_case(instance: &Instance, file: &str, case: &Case) -> Result<Vec<Value>> {
    // A case given as a whole payload (text a request built from a pod cannot be: not JSON, a
    // repeated key) is sent as it is; the page's calls must answer it alike, but it has no pod
    // to type into the page's editors.
    let payload = case.payload();
    let answer = instance.call("validate", &payload)?;
    let response: e2e_tests::Response = serde_json::from_slice(&answer)?;
    // The expected pod with the policy's record, checked against the case (e2e_tests::record).
    let expected = match &case.expect.pod {
        Some(pod) => Some(e2e_tests::record::expected_pod(
            &case.settings,
            pod,
            &response,
        )?),
        None => None,
    };
    if case.payload.is_some() {
        return Ok(vec![json!({
            "name": case.name,
            "file": file,
            "call": "validate",
            "payload": text(&payload)?,
            "answer": text(&answer)?,
            "pod": null,
            "accepted": case.expect.accepted,
        })]);
    }
    // The page builds the request for a pod it is given only as a CREATE of a core/v1 Pod. It
    // has no host, so a case's cluster state (behaviour.md §9) is not something it can be given,
    // nor an audit scanner's request for a stored pod (§10): such a case is only answered byte
    // for byte, the module here being without a cluster too, as for an AdmissionPolicy.
    let page_can_send = case.operation == "CREATE"
        && case.kind == pod_kind()
        && case.cluster.is_none()
        && !case.stored;
    let mut entries = vec![json!({
        "name": case.name,
        "file": file,
        "call": "validate",
        "payload": text(&payload)?,
        "answer": text(&answer)?,
        "pod": page_can_send.then(|| serde_json::to_string(&case.object)).transpose()?,
        "settings": serde_json::to_string(&case.settings)?,
        "accepted": case.expect.accepted,
        "expectedPatch": expected.as_ref().map(|pod| json_patch::diff(&case.object, pod)),
    })];
    let mutated = serde_json::from_slice::<Value>(&answer)?["mutated_object"].take();
    if !mutated.is_null() {
        let again = admission_request(&case.operation, &case.kind, &mutated);
        let payload = fixtures::payload(&again, &case.settings);
        entries.push(json!({
            "name": format!("{} (second pass)", case.name),
            "file": file,
            "call": "validate",
            "payload": text(&payload)?,
            "answer": text(&instance.call("validate", &payload)?)?,
        }));
    }
    Ok(entries)
}

fn examples(instance: &Instance, dir: &Path) -> Result<Vec<Value>> {
    let mut settings_files = e2e_tests::yaml_files(&dir.join("settings"))?;
    settings_files.push(dir.join("chart-values.yaml"));
    settings_files.push(dir.join("helix-values.yaml"));
    let pod_files = e2e_tests::yaml_files(&dir.join("pods"))?;
    ensure!(
        !pod_files.is_empty(),
        "no example pods under {}",
        dir.display()
    );
    let name = |path: &Path| -> String {
        let relative = path.strip_prefix(dir).unwrap_or(path);
        relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/")
    };
    let mut answers = Vec::new();
    for settings_file in &settings_files {
        let settings = settings_block(e2e_tests::read_yaml(settings_file)?);
        for pod_file in &pod_files {
            let pod = e2e_tests::read_yaml(pod_file)?;
            let response =
                instance.validate(&admission_request("CREATE", &pod_kind(), &pod), &settings)?;
            answers.push(json!({
                "settings": name(settings_file),
                "pod": name(pod_file),
                "accepted": response.accepted,
                "message": response.message,
                "warnings": response.warnings,
                "patch": response.mutated_object.map(|mutated| json_patch::diff(&pod, &mutated)),
            }));
        }
    }
    Ok(answers)
}

/// The bytes as text: JSON, and so UTF-8; the test compares the bytes of this text.
fn text(bytes: &[u8]) -> Result<&str> {
    std::str::from_utf8(bytes).context("an answer that is not UTF-8")
}
