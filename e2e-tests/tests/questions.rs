//! `questions-ui.yml`, the settings form Rancher's Kubewarden UI draws from the policy's
//! Artifact Hub package, held to the compiled module: every question's variable is a settings
//! path the module's `validate_settings` accepts, with the question's default and with another
//! value; every default is the module's own (the answer to a pod is the same with the default
//! written out as without it), and every variable matters (another value changes the answer).
//! `artifacthub-pkg.yml` carries the file in its `kubewarden/questions-ui` annotation, as
//! `kwctl scaffold artifacthub --questions-path questions-ui.yml` writes it.

mod common;

use common::{artifacthub_pkg, read, repo_root, yaml};
use e2e_tests::{Instance, admission_request, pod_kind, policy};
use serde_json::{Map, Value, json};

const CLOUDS: [&str; 5] = ["aws", "azure", "gcp", "oci", "rdma"];

/// The types of Rancher's questions format that this form uses, with the JSON type a value of
/// each has in the settings.
fn json_type_fits(kind: &str, value: &Value) -> bool {
    match kind {
        "boolean" => value.is_boolean(),
        "int" => value.is_i64() || value.is_u64(),
        "string" => value.is_string(),
        "array[" => value
            .as_array()
            .is_some_and(|items| items.iter().all(Value::is_string)),
        _ => false,
    }
}

/// Another value for each variable, one that should change what the module does to
/// [`pod`]. A question added to the form needs a row here, which the test asks for.
fn other_value(variable: &str) -> Option<Value> {
    Some(match variable {
        "validateOnly" => json!(true),
        "aws.efaDevicesPerGPU" => json!(2),
        "aws.efaLibraryPath" => json!(""),
        "aws.cpuRequest" => json!("250m"),
        "azure.rdmaDevicesPerGPU" => json!(2),
        "azure.rdmaDeviceName" => json!("ib"),
        "azure.ncclTopologyConfigMap" => json!("nccl-topo-ndv5"),
        "gcp.networks" => json!([
            "vpc1", "vpc2", "vpc3", "vpc4", "vpc5", "vpc6", "vpc7", "vpc8"
        ]),
        "gcp.daemonImage" => {
            json!("us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21")
        }
        "gcp.daemonFlags" => json!(["--num_hops=2"]),
        "gcp.daemonStartupProbe" => json!(true),
        "aws.pinTransport" | "azure.pinTransport" | "gcp.pinTransport" | "oci.pinTransport"
        | "rdma.pinTransport" => json!(true),
        "rdma.resourceName" => json!("nvidia.com/hostdev"),
        "rdma.devicesPerContainer" => json!(2),
        "rdma.network" => json!("hostdevice-net"),
        "oci.rdmaDevicesPerGPU" => json!(4),
        "oci.resourceName" => json!("nvidia.com/rdma-vf"),
        "oci.network" => json!("default/rdma-vf"),
        "triggerAnnotation" => json!(["example.com/multi-node-networking"]),
        "ownerKinds" => json!(["PyTorchJob"]),
        "ownerApiGroups" => json!(["kubeflow.org"]),
        // The example pod carries this annotation set to "true" (see `pod`).
        "optOutAnnotation" => json!([OTHER_OPT_OUT]),
        // The example pod asks for nvidia.com/gpu only.
        "gpuResources" => json!(["amd.com/gpu"]),
        "recordAnnotation" => json!(""),
        _ => return None,
    })
}

/// One question, subquestions flattened into the list.
struct Question {
    variable: String,
    kind: String,
    default: Value,
    raw: Value,
}

fn questions() -> Vec<Question> {
    let form = yaml(&repo_root().join("questions-ui.yml"));
    let mut out = Vec::new();
    fn walk(list: &Value, out: &mut Vec<Question>) {
        for question in list.as_array().expect("questions is a list") {
            out.push(Question {
                variable: question["variable"]
                    .as_str()
                    .unwrap_or_else(|| panic!("a question without variable: {question}"))
                    .to_string(),
                kind: question["type"].as_str().unwrap_or_default().to_string(),
                default: question["default"].clone(),
                raw: question.clone(),
            });
            if let Some(sub) = question.get("subquestions") {
                walk(sub, out);
            }
        }
    }
    walk(&form["questions"], &mut out);
    assert!(!out.is_empty(), "questions-ui.yml has no questions");
    out
}

/// `settings` with `value` at the dotted `path`, as Rancher's form writes a variable.
fn with(mut settings: Value, path: &str, value: &Value) -> Value {
    let mut at = &mut settings;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        let object = at
            .as_object_mut()
            .unwrap_or_else(|| panic!("{path}: a parent is not an object"));
        if parts.peek().is_none() {
            object.insert(part.to_string(), value.clone());
            break;
        }
        at = object
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    settings
}

/// The cloud a variable belongs to, or `aws` for the ones outside the cloud blocks.
fn cloud_of(variable: &str) -> &'static str {
    CLOUDS
        .into_iter()
        .find(|cloud| variable.starts_with(&format!("{cloud}.")))
        .unwrap_or("aws")
}

/// An annotation the example pod carries, set to "true", which opts it out only when the
/// settings name it.
const OTHER_OPT_OUT: &str = "example.com/no-multi-node-networking";

/// The example worker pod, without a cpu request, so that AWS's cpuRequest applies to it, and
/// with [`OTHER_OPT_OUT`].
fn pod() -> Value {
    let mut pod = yaml(&repo_root().join("examples/pod.yaml"));
    pod["metadata"]["annotations"][OTHER_OPT_OUT] = json!("true");
    pod["spec"]["containers"][0]["resources"]["requests"]
        .as_object_mut()
        .expect("the example pod has requests")
        .remove("cpu");
    pod
}

/// The module's whole answer to the example pod with these settings, or why the settings
/// are refused.
fn answer(instance: &Instance, settings: &Value) -> Result<String, String> {
    let verdict = instance.validate_settings(settings).unwrap();
    if !verdict.valid {
        return Err(verdict.message.unwrap_or_default());
    }
    let request = admission_request("CREATE", &pod_kind(), &pod());
    let answer = instance.validate(&request, settings).unwrap();
    Ok(format!("{answer:?}"))
}

#[test]
fn every_question_is_a_setting_the_module_accepts_with_its_default_and_another_value() {
    let instance = policy().instance().unwrap();
    let mut failures = Vec::new();
    for question in questions() {
        let variable = question.variable.as_str();
        let cloud = cloud_of(variable);
        let base = json!({ cloud: {"enabled": true} });
        let Ok(plain) = answer(&instance, &base) else {
            panic!("the module refuses {base}");
        };
        for field in ["label", "group", "description"] {
            if !question.raw[field].is_string() {
                failures.push(format!("{variable}: no {field}"));
            }
        }
        if !json_type_fits(&question.kind, &question.default) {
            failures.push(format!(
                "{variable}: default {} is not of type {:?}",
                question.default, question.kind
            ));
            continue;
        }
        if variable == format!("{cloud}.enabled") {
            // The flags: false by default (the module's `enabled: false`), and checking one
            // gives the base settings, which the module accepts.
            if question.default != false {
                failures.push(format!("{variable}: default is not false"));
            }
            continue;
        }
        // The default, written out, is what the module does without it.
        match answer(&instance, &with(base.clone(), variable, &question.default)) {
            Err(message) => failures.push(format!(
                "{variable} = {}: validate_settings refuses it: {message}",
                question.default
            )),
            Ok(answer) if answer != plain => failures.push(format!(
                "{variable}: default {} is not the module's (the answer to the example pod \
                 differs from the one without it)",
                question.default
            )),
            Ok(_) => {}
        }
        // Another value is accepted and matters.
        let Some(other) = other_value(variable) else {
            failures.push(format!(
                "{variable}: give it another value in other_value()"
            ));
            continue;
        };
        match answer(&instance, &with(base.clone(), variable, &other)) {
            Err(message) => failures.push(format!(
                "{variable} = {other}: validate_settings refuses it: {message}"
            )),
            Ok(answer) if answer == plain => failures.push(format!(
                "{variable} = {other} changes nothing the module does to the example pod"
            )),
            Ok(_) => {}
        }
    }
    assert!(
        failures.is_empty(),
        "{} problems with questions-ui.yml:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_form_left_at_its_defaults_with_one_cloud_checked_is_the_module_defaults() {
    let instance = policy().instance().unwrap();
    let mut defaults = json!({});
    for question in questions() {
        defaults = with(defaults, &question.variable, &question.default);
    }
    // Every flag false: the module refuses it, as the form should not be sent so.
    assert!(
        answer(&instance, &defaults).is_err(),
        "the module accepted settings with no cloud enabled"
    );
    for cloud in CLOUDS {
        let form = with(defaults.clone(), &format!("{cloud}.enabled"), &json!(true));
        let plain = answer(&instance, &json!({ cloud: {"enabled": true} }));
        let filled = answer(&instance, &form);
        assert!(
            filled == plain,
            "the form's defaults with {cloud} checked differ from the module's defaults: {}",
            filled
                .err()
                .unwrap_or_else(|| "the answers to the example pod differ".into())
        );
    }
}

#[test]
fn every_cloud_has_its_flag_and_every_cloud_question_hides_behind_it() {
    let form = yaml(&repo_root().join("questions-ui.yml"));
    for cloud in CLOUDS {
        let flag = format!("{cloud}.enabled");
        let question = form["questions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["variable"] == flag.as_str())
            .unwrap_or_else(|| panic!("no question {flag}"));
        assert_eq!(question["type"], "boolean", "{flag}");
        assert_eq!(question["show_subquestion_if"], true, "{flag}");
        for sub in question["subquestions"].as_array().unwrap() {
            let variable = sub["variable"].as_str().unwrap();
            assert!(
                variable.starts_with(&format!("{cloud}.")),
                "{variable} is under {flag}"
            );
        }
    }
}

#[test]
fn artifacthub_pkg_carries_the_form_as_kwctl_scaffold_writes_it() {
    let text = read(&repo_root().join("questions-ui.yml"));
    // Compared without printing both: each is the whole form.
    assert!(
        artifacthub_pkg()["annotations"]["kubewarden/questions-ui"] == text.as_str(),
        "artifacthub-pkg.yml's kubewarden/questions-ui annotation is not questions-ui.yml: copy \
         the file into it, indented, as `kwctl scaffold artifacthub --questions-path \
         questions-ui.yml` writes it"
    );
}
