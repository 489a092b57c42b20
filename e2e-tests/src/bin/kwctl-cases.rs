//! Runs every case under `e2e-tests/cases` (and every settings case of `e2e-tests/settings-cases`,
//! with a pod) through a real `kwctl run` and compares what it
//! prints with the AdmissionResponse the module's answer gives in the waPC host
//! (`e2e_tests::admission_response`, which the e2e tests hold to the cases):
//!
//!     kwctl-cases --kwctl KWCTL --module annotated-policy.wasm --work DIR [--jobs N]
//!
//! Each case gets a directory under DIR with `request.json` (the AdmissionRequest), `settings.json`,
//! `expected.json` and what kwctl printed (`kwctl.out`, `kwctl.err`). Settings the module refuses
//! must make kwctl refuse to run, with the module's message. The patches are compared as the
//! operations they hold, in any order (kwctl's JSON maps may keep another key order), and
//! kwctl's patch must turn the request's pod into the module's.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result, bail, ensure};
use e2e_tests::Policy;
use e2e_tests::admission_response::{admission_response, decoded_patch};
use e2e_tests::cases::{self, Case, SettingsCase};
use serde_json::Value;

const USAGE: &str = "usage: kwctl-cases --kwctl KWCTL --module FILE --work DIR [--jobs N]";

/// kwctl runs at once by default. A run spends most of its second waiting: without a network
/// it first tries to fetch Sigstore's trust root, and goes on without it (its CPU time is about
/// a tenth of that), so that one at a time the 600 cases took 12 minutes on 2 cores.
const JOBS: usize = 8;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
            .with_context(|| format!("{name} is missing\n{USAGE}"))
    };
    let kwctl = value("--kwctl")?;
    let module = std::fs::canonicalize(value("--module")?).context("--module")?;
    let work = PathBuf::from(value("--work")?);
    let jobs = match value("--jobs") {
        Ok(n) => n.parse::<usize>().context("--jobs")?.max(1),
        Err(_) => JOBS,
    };
    let instance = Policy::load(&module)?.instance()?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));

    // The module's answers first, one at a time on the one instance; then kwctl's runs, at once.
    let mut failures = Vec::new();
    let mut prepared = Vec::new();
    let mut count = 0;
    for (_, case) in cases::load::<Case>(&root.join("cases"))? {
        if case.payload.is_some() {
            continue; // no request kwctl could read
        }
        if case.cluster.is_some() {
            // A case with cluster state: kwctl would need `--allow-context-aware` and a replay
            // file of its host calls (`--replay-host-capabilities-interactions`), whose format
            // was not checked against a kwctl here. Every other case runs without a cluster, where
            // kwctl errors every host call as the test host does.
            continue;
        }
        count += 1;
        match prepare(&instance, &work, &case) {
            Ok(run) => prepared.push(run),
            Err(e) => failures.push(format!("{}: {e:#}", case.name)),
        }
    }
    // Settings cases: kwctl validates the settings before it runs the request.
    let pod =
        fixtures::volcano_worker(serde_json::json!({}), serde_json::json!({"containers": []}));
    for (_, case) in cases::load::<SettingsCase>(&root.join("settings-cases"))? {
        if case.settings_text.is_some() {
            continue; // not JSON: no settings file kwctl could read
        }
        count += 1;
        let as_case = Case {
            name: format!("settings-{}", case.name),
            description: case.description.clone(),
            settings: case.settings.clone(),
            operation: "CREATE".into(),
            kind: e2e_tests::pod_kind(),
            object: pod.clone(),
            payload: None,
            stored: false,
            cluster: None,
            expect: cases::Expect {
                accepted: true,
                pod: None,
                warnings: Vec::new(),
                message: None,
                host_calls: None,
            },
        };
        match prepare(&instance, &work, &as_case) {
            Ok(run) => prepared.push(run),
            Err(e) => failures.push(format!("{}: {e:#}", as_case.name)),
        }
    }
    ensure!(count > 0, "no cases found");
    failures.extend(run_all(&prepared, &kwctl, &module, jobs));
    if !failures.is_empty() {
        bail!(
            "{} of {count} cases differ between kwctl and the module (files under {}):\n{}",
            failures.len(),
            work.display(),
            failures.join("\n")
        );
    }
    println!("kwctl run answers all {count} cases as the module does");
    Ok(())
}

fn write(path: &Path, value: &Value) -> Result<()> {
    std::fs::write(path, serde_json::to_vec_pretty(value)?)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// One case for kwctl: its folder, holding the request and settings, and what the module says.
struct Prepared {
    name: String,
    dir: PathBuf,
    object: Value,
    verdict: Verdict,
}

enum Verdict {
    /// The module refuses the settings, with this message; `object`: they are an object (or
    /// null), which kwctl hands to the module.
    Refused { message: String, object: bool },
    /// The AdmissionResponse the module's answer gives.
    Answered(Value),
}

/// Writes the case's request and settings under `work`, and asks the module.
fn prepare(instance: &e2e_tests::Instance, work: &Path, case: &Case) -> Result<Prepared> {
    let dir = work.join(&case.name);
    std::fs::create_dir_all(&dir)?;
    let request = case.request();
    write(&dir.join("request.json"), &request)?;
    write(&dir.join("settings.json"), &case.settings)?;
    let verdict = instance.validate_settings(&case.settings)?;
    let verdict = if verdict.valid {
        let expected = admission_response(&request, &instance.validate(&request, &case.settings)?);
        write(&dir.join("expected.json"), &expected)?;
        Verdict::Answered(expected)
    } else {
        Verdict::Refused {
            message: verdict.message.unwrap_or_default(),
            object: case.settings.is_object() || case.settings.is_null(),
        }
    };
    Ok(Prepared {
        name: case.name.clone(),
        dir,
        object: case.object.clone(),
        verdict,
    })
}

/// Every prepared case through kwctl, `jobs` at a time: the failures, in the cases' order.
fn run_all(prepared: &[Prepared], kwctl: &str, module: &Path, jobs: usize) -> Vec<String> {
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(prepared.len()) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(case) = prepared.get(index) else {
                        break;
                    };
                    if let Err(e) = run_case(kwctl, module, case) {
                        failures
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((index, format!("{}: {e:#}", case.name)));
                    }
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    failures.sort();
    failures.into_iter().map(|(_, failure)| failure).collect()
}

fn run_case(kwctl: &str, module: &Path, case: &Prepared) -> Result<()> {
    let dir = &case.dir;
    let output = Command::new(kwctl)
        .arg("run")
        .arg("--request-path")
        .arg(dir.join("request.json"))
        .arg("--settings-path")
        .arg(dir.join("settings.json"))
        .arg(module)
        .output()
        .with_context(|| format!("cannot run {kwctl}"))?;
    std::fs::write(dir.join("kwctl.out"), &output.stdout)?;
    std::fs::write(dir.join("kwctl.err"), &output.stderr)?;
    let stderr = String::from_utf8_lossy(&output.stderr);

    let expected = match &case.verdict {
        Verdict::Refused { message, object } => {
            ensure!(
                !output.status.success(),
                "kwctl ran with settings the module refuses ({message})"
            );
            // Settings that are neither an object nor null never reach the module: kwctl's policy
            // evaluator refuses them itself (kubewarden-controller `crates/policy-evaluator/src/
            // policy_evaluator.rs`, `PolicySettings::try_from`, at 3460bb71), as the policy server
            // does, and a ClusterAdmissionPolicy's `settings` is an object in its CRD anyway.
            if !object {
                ensure!(
                    stderr.contains("Invalid settings in CRD, not an object"),
                    "kwctl refused settings that are not an object, but not as its evaluator does: {stderr}"
                );
                return Ok(());
            }
            // kwctl prints it with Rust's Debug quoting: "Provided settings are not valid: \"…\"".
            ensure!(
                stderr.contains(message.as_str()) || stderr.contains(&format!("{message:?}")),
                "kwctl refused the settings without the module's message {message:?}: {stderr}"
            );
            return Ok(());
        }
        Verdict::Answered(expected) => expected,
    };
    ensure!(output.status.success(), "kwctl run failed: {stderr}");
    // kwctl logs on stderr; its answer is the one JSON line on stdout.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let got: Value = stdout
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str(line).ok())
        .with_context(|| format!("kwctl printed no JSON: {stdout}"))?;
    compare(&case.object, expected, &got)
}

/// `got` is `expected`, with the patch compared as operations.
fn compare(object: &Value, expected: &Value, got: &Value) -> Result<()> {
    let without_patch = |v: &Value| {
        let mut v = v.clone();
        if let Some(map) = v.as_object_mut() {
            map.remove("patch");
        }
        v
    };
    ensure!(
        without_patch(expected) == without_patch(got),
        "kwctl answered {}\nthe module's response is {}",
        without_patch(got),
        without_patch(expected)
    );
    let operations = |patch: Option<json_patch::Patch>| -> Vec<String> {
        let mut ops: Vec<String> = patch
            .map(|p| {
                p.0.iter()
                    .map(|op| serde_json::to_string(op).unwrap())
                    .collect()
            })
            .unwrap_or_default();
        ops.sort();
        ops
    };
    let (want, have) = (decoded_patch(expected)?, decoded_patch(got)?);
    if let Some(patch) = &have {
        let mut pod = object.clone();
        json_patch::patch(&mut pod, patch).context("kwctl's patch does not apply to the pod")?;
        let mut expected_pod = object.clone();
        if let Some(want) = &want {
            json_patch::patch(&mut expected_pod, want)?;
        }
        ensure!(
            pod == expected_pod,
            "kwctl's patch gives another pod than the module's"
        );
    }
    ensure!(
        operations(want) == operations(have),
        "kwctl's patch holds other operations than the module's"
    );
    Ok(())
}
