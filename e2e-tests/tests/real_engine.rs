//! The policy on the real engine: the real Kubewarden policy server (`POLICY_SERVER`, 1.36) on
//! the annotated module, its cluster reads answered by a stand-in API server (`kube-standin`)
//! that answers as the API server does, its RBAC the ClusterRole `make manifests` renders.
//! Every other test answers the policy's host calls from fixtures or recorded answers; here the
//! policy server's own Kubernetes client makes them, with its reflectors, its watches and its
//! error words.
//!
//! The settings are the AWS vendor file with `computeDomain` (`fromLabel:
//! training.kubeflow.org/job-name`); the pod is the MPIJob worker on `p6e-gb200.36xlarge` of
//! `e2e-tests/cases/nvlink/compute-domain.yaml`, named for its job. What the tests hold the
//! policy to, whatever the wording of its warnings:
//!
//! - every opted-in pod is answered within 5 s, whatever the cluster refuses or lacks;
//! - a ComputeDomain that exists gives the pod its channel claim; one that does not, or cannot
//!   be read, `NCCL_MNNVL_ENABLE=0` and a warning naming it;
//! - the keys of an `envFrom` ConfigMap stay the user's;
//! - an MPIJob's launcher reads its MPIJob through the policy server (its field masks) and
//!   passes its workers' env to the ranks, or, where the MPIJob cannot be read, is answered at
//!   once with a warning;
//! - reading the cluster leaves no watch behind: 150 jobs, each with its own ComputeDomain and
//!   ConfigMap, leave at most 10 watches open, and grow the server's memory by under 20 MB;
//! - the policy reads objects one by one (`get_resource`) and knows the policy server's words
//!   for a missing one.
//!
//! Without `POLICY_SERVER` (or with a path that does not exist) every test passes at once,
//! saying so on stderr; `make e2e-policy-server` says so too. The tests run one at a time: they
//! measure time and memory on a machine of two cores.

mod common;

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use common::{policy_metadata, read, repo_root};
use e2e_tests::policy_server::{self, Launch, PolicyServer, Review};
use e2e_tests::{admission_request, pod_kind};
use kube_standin::{Config, Kind, PolicyRule, Standin};
use serde::Deserialize;
use serde_json::{Value, json};

/// The namespace of the case's worker.
const NAMESPACE: &str = "training";
const JOB_LABEL: &str = "training.kubeflow.org/job-name";
const POLICY_ID: &str = "multinode-networking";
/// What every opted-in pod must be answered within.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);
/// How long the client waits before it calls a request unanswered: the webhook's timeout, after
/// which the API server gives up on the policy server.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
const EFA: &str = "vpc.amazonaws.com/efa";
const CHANNEL: &str = "compute-domain-channel";

/// The tests measure time and memory: one policy server at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// What `make manifests` renders for the AWS vendor file with `computeDomain`.
struct Rendered {
    settings: Value,
    context_aware_resources: Value,
    rules: Vec<PolicyRule>,
}

fn rendered() -> &'static Rendered {
    static RENDERED: OnceLock<Rendered> = OnceLock::new();
    RENDERED.get_or_init(render)
}

fn render() -> Rendered {
    let vendor = read(&repo_root().join("examples/settings/vendor/aws.yaml"));
    let text = format!("{vendor}\ncomputeDomain:\n  fromLabel: {JOB_LABEL}\n");
    let stream = manifests::render(
        "aws.yaml",
        &text,
        "registry.example/policies/multinode-networking:test",
        &policy_metadata(),
    )
    .expect("the AWS settings render");
    let documents: Vec<Value> = serde_yaml::Deserializer::from_str(&stream)
        .map(|d| Value::deserialize(d).expect("a rendered document is YAML"))
        .filter(|d| !d.is_null())
        .collect();
    let role = documents
        .iter()
        .find(|d| d["kind"] == "ClusterRole")
        .expect("a ClusterRole");
    let injector = documents
        .iter()
        .find(|d| d["kind"] == "ClusterAdmissionPolicy" && d["metadata"]["name"] == POLICY_ID)
        .expect("the injector");
    Rendered {
        settings: injector["spec"]["settings"].clone(),
        context_aware_resources: injector["spec"]["contextAwareResources"].clone(),
        rules: PolicyRule::of_role(role).expect("the role's rules"),
    }
}

/// The rendered rules without the one for `resource`.
fn without(rules: &[PolicyRule], resource: &str) -> Vec<PolicyRule> {
    let kept: Vec<PolicyRule> = rules
        .iter()
        .filter(|r| !r.resources.iter().any(|r| r == resource))
        .cloned()
        .collect();
    assert_eq!(kept.len() + 1, rules.len(), "one rule for {resource}");
    kept
}

/// The kinds a cluster with NVIDIA's DRA driver serves of those the policy may read on AWS.
fn kinds() -> Vec<Kind> {
    vec![
        Kind::config_map(),
        Kind::namespace(),
        Kind::resource_claim_template(),
        Kind::resource_claim(),
        Kind::compute_domain(),
        Kind::mpi_job(),
    ]
}

fn namespace() -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
           "metadata": {"name": NAMESPACE, "labels": {"nmp.nvidia.com/multi-node-networking": "enabled"}}})
}

/// Job `job`'s ComputeDomain, its channel's template `<job>-channel`.
fn compute_domain(job: &str) -> Value {
    json!({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
           "metadata": {"name": job, "namespace": NAMESPACE},
           "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": format!("{job}-channel")}}}})
}

/// A ConfigMap a worker takes env from: it sets `FI_PROVIDER`, which the settings' env also sets.
fn env_config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": NAMESPACE},
           "data": {"FI_PROVIDER": "efa", "NCCL_DEBUG": "INFO"}})
}

/// The GB200 MPIJob worker of `cases/nvlink/compute-domain.yaml`, of job `job`, taking env from
/// ConfigMap `env_from` if given.
fn worker(job: &str, env_from: Option<&str>) -> Value {
    #[derive(Deserialize)]
    struct Case {
        name: String,
        object: Value,
    }
    let path = repo_root().join("e2e-tests/cases/nvlink/compute-domain.yaml");
    let mut pod = serde_yaml::Deserializer::from_str(&read(&path))
        .filter_map(|d| Case::deserialize(d).ok())
        .find(|c| c.name == "nvlink-aws-gb200-joins-its-jobs-compute-domain")
        .expect("the GB200 worker's case")
        .object;
    assert_eq!(pod["metadata"]["namespace"], NAMESPACE);
    pod["metadata"]["name"] = json!(format!("{job}-worker-0"));
    pod["metadata"]["labels"][JOB_LABEL] = json!(job);
    pod["metadata"]["ownerReferences"][0]["name"] = json!(job);
    if let Some(name) = env_from {
        pod["spec"]["containers"][0]["envFrom"] = json!([{"configMapRef": {"name": name}}]);
    }
    pod
}

/// A stand-in and the policy server reading it; `None` (and a line on stderr) without a
/// policy server binary.
struct Bed {
    // Dropped first: the server, then the cluster it reads.
    server: PolicyServer,
    cluster: Standin,
    _one_at_a_time: std::sync::MutexGuard<'static, ()>,
}

impl Bed {
    fn start(case: &str, config: Config) -> Option<Bed> {
        let lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let Some(binary) = policy_server::binary() else {
            eprintln!(
                "real-engine test {case} skipped: POLICY_SERVER is unset or names no file (make e2e-policy-server)"
            );
            return None;
        };
        let rendered = rendered();
        let cluster = Standin::start(config).expect("the stand-in starts");
        let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("real-engine")
            .join(case);
        let module = e2e_tests::default_module_path();
        let server = PolicyServer::start(&Launch {
            binary: &binary,
            module: &module,
            policy_id: POLICY_ID,
            settings: &rendered.settings,
            context_aware_resources: &rendered.context_aware_resources,
            kubeconfig: &cluster.kubeconfig(),
            work: &work,
            log_level: &std::env::var("POLICY_SERVER_LOG_LEVEL").unwrap_or_else(|_| "info".into()),
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
        Some(Bed {
            server,
            cluster,
            _one_at_a_time: lock,
        })
    }

    /// The answer to the CREATE of `pod`, which must come within [`ANSWER_WITHIN`] and allow it.
    fn create(&self, pod: &Value) -> Review {
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        let review = self
            .server
            .validate(
                &admission_request("CREATE", &pod_kind(), pod),
                CLIENT_TIMEOUT,
            )
            .unwrap_or_else(|e| {
                panic!(
                    "{name}: {e:#}; the stand-in saw {:?}; the server's log: {}",
                    self.cluster.counters(),
                    self.server.log_path().display()
                )
            });
        assert!(
            review.elapsed < ANSWER_WITHIN,
            "{name} answered in {:?}, over {ANSWER_WITHIN:?}",
            review.elapsed
        );
        assert!(review.allowed(), "{name} refused: {}", review.response);
        review
    }

    /// The policy server asked the stand-in only for what a cluster serves.
    fn assert_all_served(&self) {
        assert_eq!(
            self.cluster.unexpected(),
            Vec::<String>::new(),
            "paths the stand-in does not serve"
        );
    }
}

/// The full rendered RBAC.
fn full(rendered: &Rendered) -> Config {
    Config::new(kinds()).rules(rendered.rules.clone())
}

/// The worker container of a patched pod.
fn container(pod: &Value) -> &Value {
    &pod["spec"]["containers"][0]
}

fn env_names(pod: &Value) -> Vec<&str> {
    container(pod)["env"]
        .as_array()
        .map(|env| env.iter().filter_map(|e| e["name"].as_str()).collect())
        .unwrap_or_default()
}

fn env_value<'a>(pod: &'a Value, name: &str) -> Option<&'a str> {
    container(pod)["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)?["value"]
        .as_str()
}

/// The pod asks for EFA devices: it is wired.
fn assert_wired(pod: &Value) {
    let resources = &container(pod)["resources"];
    assert_eq!(resources["limits"][EFA], "4", "{pod}");
    assert_eq!(resources["requests"][EFA], "4", "{pod}");
}

fn assert_channel(pod: &Value, template: &str) {
    assert_eq!(
        pod["spec"]["resourceClaims"],
        json!([{"name": CHANNEL, "resourceClaimTemplateName": template}]),
        "{pod}"
    );
    assert_eq!(
        container(pod)["resources"]["claims"],
        json!([{"name": CHANNEL}]),
        "{pod}"
    );
    assert_eq!(env_value(pod, "NCCL_MNNVL_ENABLE"), None, "{pod}");
}

fn assert_no_channel(pod: &Value) {
    assert!(pod["spec"].get("resourceClaims").is_none(), "{pod}");
    assert_eq!(env_value(pod, "NCCL_MNNVL_ENABLE"), Some("0"), "{pod}");
}

/// The first warning that names all of `words`.
fn warning_with(review: &Review, words: &[&str]) -> Option<String> {
    review
        .warnings()
        .into_iter()
        .find(|w| words.iter().all(|word| w.contains(word)))
}

/// A warning that says `object` (kind and name) could not be read, and `why`: the reason the
/// policy took from the policy server's words (behaviour.md §9).
fn assert_unreadable(review: &Review, kind: &str, name: &str, why: &str) {
    let found = review
        .warnings()
        .into_iter()
        .any(|w| w.contains(kind) && w.contains(name) && w.contains(why));
    assert!(
        found,
        "no warning saying {kind} {name} could not be read because {why}: {:?}",
        review.warnings()
    );
}

#[test]
fn a_gb200_worker_gets_the_channel_of_its_jobs_compute_domain() {
    let rendered = rendered();
    let config = full(rendered).objects(vec![namespace(), compute_domain("llama")]);
    let Some(bed) = Bed::start("channel", config) else {
        return;
    };
    let pod = worker("llama", None);
    let review = bed.create(&pod);
    let patched = review.patched(&pod).unwrap();
    assert_wired(&patched);
    assert_channel(&patched, "llama-channel");
    assert_eq!(
        warning_with(&review, &["ComputeDomain"]),
        None,
        "{:?}",
        review.warnings()
    );
    bed.assert_all_served();
}

#[test]
fn a_gb200_worker_whose_compute_domain_is_missing_runs_over_the_network() {
    let rendered = rendered();
    let config = full(rendered).objects(vec![namespace(), compute_domain("llama")]);
    let Some(bed) = Bed::start("missing-domain", config) else {
        return;
    };
    let pod = worker("gpt", None);
    let review = bed.create(&pod);
    let patched = review.patched(&pod).unwrap();
    assert_wired(&patched);
    assert_no_channel(&patched);
    assert!(
        warning_with(&review, &["ComputeDomain", "gpt", "does not exist"]).is_some(),
        "{:?}",
        review.warnings()
    );
    bed.assert_all_served();
}

#[test]
fn the_keys_of_an_env_from_config_map_stay_the_users() {
    let rendered = rendered();
    let config = full(rendered).objects(vec![
        namespace(),
        compute_domain("llama"),
        env_config_map("nccl-env"),
    ]);
    let Some(bed) = Bed::start("env-from", config) else {
        return;
    };
    let pod = worker("llama", Some("nccl-env"));
    let review = bed.create(&pod);
    let patched = review.patched(&pod).unwrap();
    assert_wired(&patched);
    assert_channel(&patched, "llama-channel");
    let names = env_names(&patched);
    assert!(
        !names.contains(&"FI_PROVIDER"),
        "FI_PROVIDER is the ConfigMap's: {names:?}"
    );
    assert!(
        names.contains(&"FI_EFA_USE_HUGE_PAGE") && names.contains(&"FI_EFA_FORK_SAFE"),
        "{names:?}"
    );
    assert_eq!(
        warning_with(&review, &["nccl-env"]),
        None,
        "the ConfigMap was read: {:?}",
        review.warnings()
    );
    bed.assert_all_served();
}

#[test]
fn a_config_map_the_policy_server_may_not_read_is_warned_about_at_once() {
    let rendered = rendered();
    let config = Config::new(kinds())
        .rules(without(&rendered.rules, "configmaps"))
        .objects(vec![
            namespace(),
            compute_domain("llama"),
            env_config_map("nccl-env"),
        ]);
    let Some(bed) = Bed::start("config-map-forbidden", config) else {
        return;
    };
    let pod = worker("llama", Some("nccl-env"));
    let review = bed.create(&pod);
    let patched = review.patched(&pod).unwrap();
    assert_wired(&patched);
    assert_channel(&patched, "llama-channel");
    // The API server's 403, in the policy server's words: RBAC.
    let why = "the policy server's ServiceAccount may not get configmaps";
    assert_unreadable(&review, "ConfigMap", "nccl-env", why);
    assert!(bed.cluster.counters().kind("ConfigMap").forbidden > 0);
}

#[test]
fn a_compute_domain_the_policy_server_may_not_read_is_warned_about_at_once() {
    let rendered = rendered();
    let config = Config::new(kinds())
        .rules(without(&rendered.rules, "computedomains"))
        .objects(vec![namespace(), compute_domain("llama")]);
    let Some(bed) = Bed::start("domain-forbidden", config) else {
        return;
    };
    let pod = worker("llama", None);
    let review = bed.create(&pod);
    let patched = review.patched(&pod).unwrap();
    assert_wired(&patched);
    assert_no_channel(&patched);
    let why = "the policy server's ServiceAccount may not get computedomains";
    assert_unreadable(&review, "ComputeDomain", "llama", why);
    assert!(bed.cluster.counters().kind("ComputeDomain").forbidden > 0);
}

#[test]
fn a_cluster_that_serves_no_compute_domains_gets_an_answer_at_once() {
    let rendered = rendered();
    let served: Vec<Kind> = kinds()
        .into_iter()
        .filter(|k| k.kind != "ComputeDomain")
        .collect();
    let config = Config::new(served)
        .rules(rendered.rules.clone())
        .objects(vec![namespace()]);
    let Some(bed) = Bed::start("domain-not-served", config) else {
        return;
    };
    let pod = worker("llama", None);
    let review = bed.create(&pod);
    let patched = review.patched(&pod).unwrap();
    assert_wired(&patched);
    assert_no_channel(&patched);
    let why = "the cluster does not serve resource.nvidia.com/v1beta1 ComputeDomain";
    assert_unreadable(&review, "ComputeDomain", "llama", why);
    // The policy server asked discovery, which has no such group version.
    assert!(
        bed.cluster
            .unexpected()
            .iter()
            .any(|r| r.contains("/apis/resource.nvidia.com/v1beta1")),
        "{:?}",
        bed.cluster.requests()
    );
}

#[test]
fn a_missing_compute_domain_is_told_apart_from_one_that_could_not_be_read() {
    let rendered = rendered();
    let config = full(rendered).objects(vec![namespace()]);
    let Some(bed) = Bed::start("missing-domain-words", config) else {
        return;
    };
    let review = bed.create(&worker("llama", None));
    let said: Vec<String> = review
        .warnings()
        .into_iter()
        .filter(|w| w.contains("ComputeDomain"))
        .collect();
    assert!(
        said.iter().any(|w| w.contains("does not exist"))
            && !said.iter().any(|w| w.contains("could not read")),
        "the policy server's answer for a missing object must read as missing: {said:?}"
    );
    // It was a GET of the one object, which the API server answered 404 and the policy server
    // passed on in its own words ("Cannot find … named 'llama' …"): no list, no watch.
    let domains = bed.cluster.counters().kind("ComputeDomain");
    assert!(
        domains.gets >= 1 && domains.not_found >= 1,
        "the ComputeDomain was not read by GET: {domains:?}"
    );
    assert_eq!(
        (domains.lists, domains.watches),
        (0, 0),
        "the ComputeDomain was listed or watched: {domains:?}"
    );
}

#[test]
fn a_hundred_and_fifty_jobs_leave_no_watches_and_little_memory_behind() {
    const WARM_UP: usize = 10;
    const JOBS: usize = 150;
    // A reflector's watch starts a moment after its first list, which is all the policy server
    // waits for before it answers: the counts and the memory are read after a pause.
    const SETTLE: Duration = Duration::from_secs(1);
    let rendered = rendered();
    let jobs: Vec<String> = (0..WARM_UP + JOBS).map(|i| format!("job-{i:03}")).collect();
    let mut objects = vec![namespace()];
    for job in &jobs {
        objects.push(compute_domain(job));
        objects.push(env_config_map(&format!("{job}-env")));
    }
    let Some(bed) = Bed::start("many-jobs", full(rendered).objects(objects)) else {
        return;
    };
    let mut slowest = Duration::ZERO;
    let mut total = Duration::ZERO;
    let mut rss_after_warm_up = 0;
    for (i, job) in jobs.iter().enumerate() {
        let pod = worker(job, Some(&format!("{job}-env")));
        let review = bed.create(&pod);
        let patched = review.patched(&pod).unwrap();
        assert_wired(&patched);
        assert_channel(&patched, &format!("{job}-channel"));
        assert!(!env_names(&patched).contains(&"FI_PROVIDER"));
        if i + 1 == WARM_UP {
            std::thread::sleep(SETTLE);
            rss_after_warm_up = bed.server.rss().unwrap();
        }
        if i >= WARM_UP {
            slowest = slowest.max(review.elapsed);
            total += review.elapsed;
        }
    }
    std::thread::sleep(SETTLE);
    let rss_after = bed.server.rss().unwrap();
    let counters = bed.cluster.counters();
    let grown = rss_after as i64 - rss_after_warm_up as i64;
    let summary = format!(
        "{JOBS} jobs after {WARM_UP}: slowest answer {slowest:?}, mean {:?}; watches open {} (at most {}); \
         RSS {:.1} MB after warm-up, {:.1} MB after, grown {:.1} MB; ConfigMap {:?}; ComputeDomain {:?}",
        total / JOBS as u32,
        counters.watches_open,
        counters.watches_max,
        rss_after_warm_up as f64 / 1e6,
        rss_after as f64 / 1e6,
        grown as f64 / 1e6,
        counters.kind("ConfigMap"),
        counters.kind("ComputeDomain"),
    );
    eprintln!("real-engine: {summary}");
    let mut failures = Vec::new();
    if counters.watches_open > 10 {
        failures.push(format!(
            "{} watches open at the end (at most 10)",
            counters.watches_open
        ));
    }
    if counters.watches_max > 10 {
        failures.push(format!(
            "{} watches open at once (at most 10)",
            counters.watches_max
        ));
    }
    let unexpected = bed.cluster.unexpected();
    if !unexpected.is_empty() {
        failures.push(format!("paths the stand-in does not serve: {unexpected:?}"));
    }
    if grown >= 20_000_000 {
        failures.push(format!(
            "RSS grew by {:.1} MB (under 20 MB)",
            grown as f64 / 1e6
        ));
    }
    assert!(failures.is_empty(), "{}\n{summary}", failures.join("; "));
}

/// The launcher of `cases/mpi/launcher.yaml`'s GB200 MPIJob (its workers on
/// `p6e-gb200.36xlarge`, their ComputeDomain not created), and that MPIJob, as mpi-operator v2
/// makes and stores them.
fn mpi_launcher() -> (Value, Value) {
    let case = e2e_tests::case_named("mpi-launcher-aws-p6e-gb200-without-compute-domain");
    let job = case
        .cluster
        .iter()
        .flat_map(|c| c.objects.iter())
        .find(|o| o["kind"] == "MPIJob")
        .expect("the case's MPIJob")
        .clone();
    assert_eq!(case.object["metadata"]["namespace"], NAMESPACE);
    (case.object, job)
}

/// The words of the launch agent `variable` on the launcher's first container.
fn agent<'a>(pod: &'a Value, variable: &str) -> &'a str {
    env_value(pod, variable).unwrap_or_else(|| panic!("no {variable}: {pod}"))
}

#[test]
fn an_mpijob_launcher_passes_its_workers_env_read_through_the_policy_server() {
    let rendered = rendered();
    let (launcher, job) = mpi_launcher();
    let config = full(rendered).objects(vec![namespace(), job]);
    let Some(bed) = Bed::start("mpi-launcher", config) else {
        return;
    };
    let review = bed.create(&launcher);
    let patched = review.patched(&launcher).unwrap();
    // Its workers run GB200 without their ComputeDomain: the ranks run over the network, and
    // every rank gets what the workers get, through Open MPI 4's agent and Open MPI 5's.
    for (variable, daemon) in [
        ("OMPI_MCA_orte_launch_agent", "orted"),
        ("PRTE_MCA_prte_launch_agent", "prted"),
    ] {
        let words = agent(&patched, variable);
        assert!(
            words.starts_with("env ") && words.ends_with(&format!(" {daemon}")),
            "{words}"
        );
        for wanted in [
            "FI_PROVIDER=efa",
            "FI_EFA_USE_HUGE_PAGE=0",
            "NCCL_MNNVL_ENABLE=0",
        ] {
            assert!(
                words.split(' ').any(|w| w == wanted),
                "{wanted} not in {words}"
            );
        }
    }
    // Only env: no device, claim or volume for a launcher that runs no rank.
    assert_eq!(patched["spec"]["volumes"], launcher["spec"]["volumes"]);
    assert!(patched["spec"].get("resourceClaims").is_none(), "{patched}");
    assert_eq!(
        container(&patched)["resources"],
        container(&launcher)["resources"]
    );
    assert_eq!(
        warning_with(&review, &["MPIJob"]),
        None,
        "{:?}",
        review.warnings()
    );
    let jobs = bed.cluster.counters().kind("MPIJob");
    assert_eq!((jobs.gets, jobs.lists, jobs.watches), (1, 0, 0), "{jobs:?}");
    bed.assert_all_served();
}

#[test]
fn an_mpijob_the_policy_server_may_not_read_is_warned_about_at_once() {
    let rendered = rendered();
    let (launcher, job) = mpi_launcher();
    let config = Config::new(kinds())
        .rules(without(&rendered.rules, "mpijobs"))
        .objects(vec![namespace(), job]);
    let Some(bed) = Bed::start("mpi-job-forbidden", config) else {
        return;
    };
    let review = bed.create(&launcher);
    let why = "the policy server's ServiceAccount may not get mpijobs";
    assert_unreadable(&review, "MPIJob", "nccl-allreduce", why);
    assert!(bed.cluster.counters().kind("MPIJob").forbidden > 0);
}
