//! `make bench`: the cost of one `validate` call, measured against the floor of any Kubewarden
//! policy. Not a test: it times, it asserts nothing about time.
//!
//!     bench [--policy FILE] [--baseline FILE] [--compare FILE]... [--quick] [--rounds N]
//!           [--no-scaling] [--only TEXT] [--dump DIR]
//!
//! The policy and the baseline module (`baseline/`: same SDK, same release profile) are loaded
//! through the same waPC host as the end-to-end tests, one instance each, kept across calls as a
//! policy server keeps them. Every payload goes to three functions:
//!
//! - the policy's `validate`;
//! - the baseline's `validate` ("accept"): decodes the SDK's `ValidationRequest` and accepts;
//! - the baseline's `validate_echo` ("echo"): decodes it and answers the object unchanged as the
//!   mutated object, the decode + encode floor of a mutating policy.
//!
//! The three are interleaved: each round times a batch of calls of each, in a rotating order, so
//! the machine's noise hits all of them alike. A figure is the median over rounds of the time per
//! call; a ratio is the median over rounds of the ratio within the round.
//!
//! `--compare` times other builds of the policy (another opt-level, say) beside `--policy`, on
//! the same cases, interleaved the same way. `--only` keeps the cases whose name contains TEXT
//! (the scaling rows are named `scaling CxE`); `--quick` takes fewer rounds, `--rounds` at least N
//! (15 by default, more while a case has had less than 2.5 s). `--dump` writes each case's payload
//! to DIR (for `kwctl run`, a profiler, or another host) instead of timing.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use e2e_tests::{Instance, Policy, admission_request, pod_kind};
use serde_json::{Map, Value, json};

const TRIGGER: &str = "nmp.nvidia.com/enable-multi-node-networking";

struct Args {
    policy: PathBuf,
    baseline: PathBuf,
    compare: Vec<PathBuf>,
    quick: bool,
    rounds: Option<usize>,
    no_scaling: bool,
    only: Option<String>,
    dump: Option<PathBuf>,
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<()> {
    let args = parse_args()?;
    if let Some(dir) = &args.dump {
        return dump(dir);
    }
    let policy = Policy::load(&args.policy)?;
    let baseline = Policy::load(&args.baseline)?;
    let bench = Bench {
        policy: &policy,
        baseline: &baseline,
        budget: if args.quick {
            Duration::from_millis(300)
        } else {
            Duration::from_millis(2500)
        },
        min_rounds: args.rounds.unwrap_or(if args.quick { 3 } else { 15 }),
    };
    let wanted = |name: &str| args.only.as_deref().is_none_or(|only| name.contains(only));

    println!("# make bench\n");
    println!(
        "policy {} ({}), baseline {} ({}); {} CPUs, {}",
        args.policy.display(),
        size_of(&args.policy)?,
        args.baseline.display(),
        size_of(&args.baseline)?,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cpu_model(),
    );
    let module = std::fs::metadata(&args.policy)?.len();
    println!(
        "module size target ≤ 300 KB (300,000 bytes): {}",
        if module <= 300_000 { "met" } else { "MISSED" }
    );
    println!(
        "Median time per `validate` call through waPC, including the host's copy of payload and answer.\n"
    );
    let overhead = bench.samples(b"", &[(&policy.instance()?, "protocol_version")])?;
    println!(
        "waPC call overhead (`protocol_version`, empty payload): {}\n",
        micros(median(overhead[0].clone()))
    );

    println!(
        "| case | cloud | payload | policy | accept floor | echo floor | policy / accept | policy / echo | target |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---|");
    for case in cases()? {
        if !wanted(&case.name) {
            continue;
        }
        let t = bench.measure(&case)?;
        let (ratio, limit) = match case.expect {
            Expect::Accept => (t.ratio_accept, 0.6),
            Expect::Mutate => (t.ratio_echo, 1.25),
        };
        let floor = match case.expect {
            Expect::Accept => "accept",
            Expect::Mutate => "echo",
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {:.2}× | {:.2}× | ≤ {limit}× {floor}: {} |",
            case.name,
            case.cloud,
            kib(t.payload),
            micros(t.median[0]),
            micros(t.median[1]),
            micros(t.median[2]),
            t.ratio_accept,
            t.ratio_echo,
            if ratio <= limit { "met" } else { "MISSED" },
        );
    }

    if !args.compare.is_empty() {
        compare(&bench, &args, &wanted)?;
    }

    let grid: Vec<(usize, usize)> = [1, 10, 100, 1000]
        .into_iter()
        .flat_map(|containers| [0, 20, 200].map(|env| (containers, env)))
        .filter(|(containers, env)| wanted(&format!("scaling {containers}x{env}")))
        .collect();
    if !grid.is_empty() && !args.no_scaling {
        scaling(&bench, &grid)?;
    }
    Ok(())
}

/// Cost against containers × env entries, beside the echo floor's: linear if the ratio stays flat
/// and the cost per container is flat at a fixed env count.
fn scaling(bench: &Bench<'_>, grid: &[(usize, usize)]) -> Result<()> {
    println!(
        "\n## Scaling: C containers of 1 GPU each ({SCALING_CLOUD} settings), E more env entries each\n"
    );
    println!(
        "| C | E | C × E | payload | policy | echo floor | policy / echo | policy per container |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut ratios = Vec::new();
    for &(containers, env) in grid {
        let case = Case {
            name: format!("scaling {containers}x{env}"),
            cloud: SCALING_CLOUD,
            settings: settings(SCALING_CLOUD)?,
            pod: stress_pod(containers, env),
            expect: Expect::Mutate,
        };
        let t = bench.measure(&case)?;
        println!(
            "| {containers} | {env} | {} | {} | {} | {} | {:.2}× | {} |",
            containers * env,
            kib(t.payload),
            micros(t.median[0]),
            micros(t.median[2]),
            t.ratio_echo,
            micros(t.median[0] / containers as f64),
        );
        ratios.push(t.ratio_echo);
    }
    // At a fixed E, a flat ratio over C means the policy's cost grows like the floor's: linearly.
    let mut envs: Vec<usize> = grid.iter().map(|&(_, env)| env).collect();
    envs.sort_unstable();
    envs.dedup();
    let spans: Vec<String> = envs
        .iter()
        .map(|&env| {
            let (low, high) = grid
                .iter()
                .zip(&ratios)
                .filter(|((_, e), _)| *e == env)
                .fold((f64::MAX, 0.0f64), |(lo, hi), (_, r)| {
                    (lo.min(*r), hi.max(*r))
                });
            format!("E = {env}: {low:.2}–{high:.2}×")
        })
        .collect();
    println!(
        "\npolicy / echo floor over C, per E ({}): flat means linear, as the floor is",
        spans.join("; ")
    );
    Ok(())
}

/// The same cases through other builds of the policy, interleaved with `--policy`.
fn compare(bench: &Bench<'_>, args: &Args, wanted: &dyn Fn(&str) -> bool) -> Result<()> {
    let others = args
        .compare
        .iter()
        .map(|path| Policy::load(path))
        .collect::<Result<Vec<_>>>()?;
    let names: Vec<String> = std::iter::once(&args.policy)
        .chain(&args.compare)
        .map(|path| format!("{} ({})", path.display(), size_of(path).unwrap_or_default()))
        .collect();
    println!("\n## Other builds of the policy, relative to the first\n");
    println!("| case | {} |", names.join(" | "));
    println!("|---|{}", "---:|".repeat(names.len()));
    for case in cases()? {
        if !wanted(&case.name) {
            continue;
        }
        let instances = std::iter::once(bench.policy)
            .chain(&others)
            .map(Policy::instance)
            .collect::<Result<Vec<_>>>()?;
        let runners: Vec<(&Instance, &str)> = instances.iter().map(|i| (i, "validate")).collect();
        let samples = bench.samples(&case.payload()?, &runners)?;
        let cells: Vec<String> = samples
            .iter()
            .map(|s| {
                format!(
                    "{} ({:.2}×)",
                    micros(median(s.clone())),
                    paired(s, &samples[0])
                )
            })
            .collect();
        println!("| {} | {} |", case.name, cells.join(" | "));
    }
    Ok(())
}

/// Writes each case's payload to `dir` as `<cloud>-<case name>.json`.
fn dump(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for case in cases()? {
        let slug: String = case
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        let path = dir.join(format!("{}-{}.json", case.cloud, slug.trim_matches('-')));
        std::fs::write(&path, case.payload()?)
            .with_context(|| format!("cannot write {}", path.display()))?;
        println!("{}", path.display());
    }
    Ok(())
}

fn parse_args() -> Result<Args> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut args = Args {
        policy: root.join("annotated-policy.wasm"),
        baseline: root.join("target/wasm32-wasip1/release/baseline_policy.wasm"),
        compare: Vec::new(),
        quick: false,
        rounds: None,
        no_scaling: false,
        only: None,
        dump: None,
    };
    let mut argv = std::env::args().skip(1);
    while let Some(arg) = argv.next() {
        let mut value = || argv.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--policy" => args.policy = value()?.into(),
            "--baseline" => args.baseline = value()?.into(),
            "--compare" => args.compare.push(value()?.into()),
            "--only" => args.only = Some(value()?),
            "--quick" => args.quick = true,
            "--no-scaling" => args.no_scaling = true,
            "--rounds" => args.rounds = Some(value()?.parse().context("--rounds")?),
            "--dump" => args.dump = Some(value()?.into()),
            "-h" | "--help" => {
                println!(
                    "bench [--policy FILE] [--baseline FILE] [--compare FILE]... [--quick] [--rounds N] [--no-scaling] [--only TEXT] [--dump DIR]"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument {other}"),
        }
    }
    Ok(args)
}

// ---------------------------------------------------------------------------------------------
// Timing

struct Bench<'a> {
    /// Each case gets fresh instances, so that no case inherits the heap another left behind.
    policy: &'a Policy,
    baseline: &'a Policy,
    /// Time spent on one payload, all three functions together.
    budget: Duration,
    min_rounds: usize,
}

/// Medians in ns per call, in the order policy, accept, echo; ratios paired within rounds.
struct Timing {
    payload: usize,
    median: [f64; 3],
    ratio_accept: f64,
    ratio_echo: f64,
}

impl Bench<'_> {
    /// Checks the three answers, then times them.
    fn measure(&self, case: &Case) -> Result<Timing> {
        let payload = case.payload()?;
        let policy = self.policy.instance()?;
        let baseline = self.baseline.instance()?;
        check(&policy, &baseline, case, &payload)?;
        let samples = self.samples(
            &payload,
            &[
                (&policy, "validate"),
                (&baseline, "validate"),
                (&baseline, "validate_echo"),
            ],
        )?;
        Ok(Timing {
            payload: payload.len(),
            ratio_accept: paired(&samples[0], &samples[1]),
            ratio_echo: paired(&samples[0], &samples[2]),
            median: [0, 1, 2].map(|i| median(samples[i].clone())),
        })
    }

    /// Nanoseconds per call of each runner, one sample per round.
    fn samples(&self, payload: &[u8], runners: &[(&Instance, &str)]) -> Result<Vec<Vec<f64>>> {
        // Warm up (the instances' memories grow to size here), then size the batches so that
        // one batch takes about 2 ms and the clock's resolution does not matter.
        let mut batch = Vec::with_capacity(runners.len());
        for &(instance, function) in runners {
            for _ in 0..3 {
                instance.call(function, payload)?;
            }
            let start = Instant::now();
            instance.call(function, payload)?;
            let ns = start.elapsed().as_nanos() as f64;
            batch.push(((2e6 / ns.max(1.0)) as usize).clamp(1, 10_000));
        }

        let mut samples = vec![Vec::new(); runners.len()];
        let started = Instant::now();
        let mut round = 0;
        while round < self.min_rounds || (started.elapsed() < self.budget && round < 1000) {
            for k in 0..runners.len() {
                let which = (round + k) % runners.len();
                let (instance, function) = runners[which];
                let start = Instant::now();
                for _ in 0..batch[which] {
                    std::hint::black_box(instance.call(function, payload)?);
                }
                samples[which].push(start.elapsed().as_nanos() as f64 / batch[which] as f64);
            }
            round += 1;
        }
        Ok(samples)
    }
}

/// The median over rounds of the ratio within each round.
fn paired(numerator: &[f64], denominator: &[f64]) -> f64 {
    median(
        numerator
            .iter()
            .zip(denominator)
            .map(|(n, d)| n / d)
            .collect(),
    )
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn micros(ns: f64) -> String {
    if ns >= 100_000.0 {
        format!("{:.0} µs", ns / 1000.0)
    } else {
        format!("{:.1} µs", ns / 1000.0)
    }
}

fn kib(bytes: usize) -> String {
    if bytes >= 100 * 1024 {
        format!("{:.0} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

fn size_of(path: &Path) -> Result<String> {
    let bytes = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    Ok(format!("{bytes} bytes, {:.0} KiB", bytes as f64 / 1024.0))
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, model)| model.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

// ---------------------------------------------------------------------------------------------
// Cases

#[derive(Clone, Copy, PartialEq)]
enum Expect {
    /// Accepted unchanged: measured against the accept floor.
    Accept,
    /// Mutated: measured against the echo floor.
    Mutate,
}

struct Case {
    name: String,
    /// Which settings, as the table shows them.
    cloud: &'static str,
    settings: Value,
    pod: Value,
    expect: Expect,
}

const SCALING_CLOUD: &str = "gcp";

impl Case {
    fn payload(&self) -> Result<Vec<u8>> {
        let mut request = admission_request("CREATE", &pod_kind(), &self.pod);
        // The API server omits an empty name (`generateName` pods are named after admission).
        if let Some(request) = request.as_object_mut()
            && request.get("name").is_some_and(Value::is_null)
        {
            request.remove("name");
        }
        Ok(serde_json::to_vec(
            &json!({"request": request, "settings": self.settings}),
        )?)
    }
}

/// The example settings of `cloud` (`examples/settings/<cloud>.yaml`).
fn settings(cloud: &str) -> Result<Value> {
    example(&format!("{cloud}.yaml"))
}

fn example(file: &str) -> Result<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/settings")
        .join(file);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(serde_yaml::from_str(&text)?)
}

/// The largest settings a cluster is likely to have: OCI's vendor file (seven shapes with their
/// env) grown to 20 instance types, each with env, and ten more env changes.
fn largest_settings() -> Result<Value> {
    let mut settings = example("vendor/oci.yaml")?;
    let oci = &mut settings["oci"];
    let types = oci["instanceTypes"]
        .as_object_mut()
        .context("instanceTypes")?;
    for i in types.len()..20 {
        types.insert(
            format!("BM.GPU.X{i}.8"),
            json!({"devicesPerNode": 16, "gpusPerNode": 8,
                   "env": {"NCCL_IB_QPS_PER_CONNECTION": "2", "NCCL_SOCKET_IFNAME": "eth0"}}),
        );
    }
    let env = oci["env"].as_object_mut().context("env")?;
    for i in 0..10 {
        env.insert(format!("TRAINING_SETTING_{i}"), json!(format!("value-{i}")));
    }
    Ok(settings)
}

fn cases() -> Result<Vec<Case>> {
    let case = |name: &str, cloud: &'static str, pod, expect| -> Result<Case> {
        Ok(Case {
            name: name.to_string(),
            cloud,
            settings: settings(cloud)?,
            pod,
            expect,
        })
    };
    let largest = |name: &str, pod, expect| -> Result<Case> {
        Ok(Case {
            name: name.to_string(),
            cloud: "oci, largest",
            settings: largest_settings()?,
            pod,
            expect,
        })
    };
    let mut not_opted_in_worker = pytorchjob_worker();
    not_opted_in_worker["metadata"]["annotations"]
        .as_object_mut()
        .context("annotations")?
        .remove(TRIGGER);
    let mut many_env = jobset_worker();
    let trainer = &mut many_env["spec"]["containers"][0];
    let env = trainer["env"].as_array_mut().context("env")?;
    let more = 200 - env.len();
    env.extend(extra_env(more));
    let mut idle_1000 = stress_pod(1000, 0);
    idle_1000["metadata"]["annotations"]
        .as_object_mut()
        .context("annotations")?
        .remove(TRIGGER);

    let mut not_opted_in_volcano = volcano_worker();
    not_opted_in_volcano["metadata"]["annotations"]
        .as_object_mut()
        .context("annotations")?
        .remove(TRIGGER);
    Ok(vec![
        case(
            "not opted in: Deployment pod",
            "aws",
            deployment_pod(),
            Expect::Accept,
        )?,
        case(
            "not opted in: 8-GPU worker without the annotation",
            "aws",
            not_opted_in_worker,
            Expect::Accept,
        )?,
        case(
            "not opted in: 1,000 containers",
            SCALING_CLOUD,
            idle_1000,
            Expect::Accept,
        )?,
        case(
            "8-GPU worker (Kubeflow PyTorchJob)",
            "aws",
            pytorchjob_worker(),
            Expect::Mutate,
        )?,
        case(
            "8-GPU worker (Kubeflow MPIJob)",
            "azure",
            mpijob_worker(),
            Expect::Mutate,
        )?,
        case(
            "8-GPU worker (JobSet)",
            "gcp",
            jobset_worker(),
            Expect::Mutate,
        )?,
        case(
            "8-GPU worker (Volcano Job)",
            "oci",
            volcano_worker(),
            Expect::Mutate,
        )?,
        case(
            "30 containers, 1 GPU each",
            SCALING_CLOUD,
            stress_pod(30, 0),
            Expect::Mutate,
        )?,
        case(
            "8-GPU worker, 200 env entries",
            "gcp",
            many_env,
            Expect::Mutate,
        )?,
        case(
            "1,000 containers, 1 GPU each",
            SCALING_CLOUD,
            stress_pod(1000, 0),
            Expect::Mutate,
        )?,
        largest(
            "not opted in: 8-GPU worker, largest settings",
            not_opted_in_volcano,
            Expect::Accept,
        )?,
        largest(
            "8-GPU worker (Volcano Job), largest settings",
            volcano_worker(),
            Expect::Mutate,
        )?,
    ])
}

/// Checks that the three functions answer what the case expects, so that the timings are of the
/// work they claim to be.
fn check(policy: &Instance, baseline: &Instance, case: &Case, payload: &[u8]) -> Result<()> {
    let answer = |instance: &Instance, function: &str| -> Result<Value> {
        Ok(serde_json::from_slice(&instance.call(function, payload)?)?)
    };
    let ours = answer(policy, "validate")?;
    let accepted = answer(baseline, "validate")?;
    let echoed = answer(baseline, "validate_echo")?;
    let mutated = !ours["mutated_object"].is_null();
    if ours["accepted"] != true || mutated != (case.expect == Expect::Mutate) {
        bail!("{}: the policy answered {ours}", case.name);
    }
    if accepted["accepted"] != true || !accepted["mutated_object"].is_null() {
        bail!("{}: the accept baseline answered {accepted}", case.name);
    }
    if echoed["mutated_object"] != case.pod {
        bail!("{}: the echo baseline did not echo the pod", case.name);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Pods, as the API server sends them to admission webhooks: defaulted, with the service account
// token volume and the default tolerations the built-in admission plugins add before webhooks
// run, and without uid or creationTimestamp, which are set after admission.

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("an object literal"),
    }
}

/// A container as the API server has defaulted it.
fn container(mut fields: Value) -> Value {
    let defaults = json!({
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    });
    let map = fields.as_object_mut().expect("a container object");
    for (key, value) in object(defaults) {
        map.entry(key).or_insert(value);
    }
    let mounts = map
        .entry("volumeMounts")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .expect("volumeMounts");
    mounts.push(json!({
        "name": "kube-api-access-7xk2p",
        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
        "readOnly": true,
    }));
    fields
}

/// A pod as the API server has defaulted it.
fn pod(metadata: Value, mut spec: Value) -> Value {
    let defaults = json!({
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "securityContext": {},
        "schedulerName": "default-scheduler",
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        ],
        "priority": 0,
        "enableServiceLinks": true,
        "preemptionPolicy": "PreemptLowerPriority",
    });
    let map = spec.as_object_mut().expect("a spec object");
    for (key, value) in object(defaults) {
        match (map.get_mut(&key), value) {
            (Some(Value::Array(mine)), Value::Array(more)) => mine.extend(more),
            (Some(_), _) => {}
            (None, value) => {
                map.insert(key, value);
            }
        }
    }
    map.entry("volumes")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .expect("volumes")
        .push(json!({
            "name": "kube-api-access-7xk2p",
            "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                ],
            },
        }));
    let mut metadata = metadata;
    metadata
        .as_object_mut()
        .expect("a metadata object")
        .insert("creationTimestamp".into(), Value::Null);
    json!({"kind": "Pod", "apiVersion": "v1", "metadata": metadata, "spec": spec, "status": {}})
}

fn env_value(name: &str, value: &str) -> Value {
    json!({"name": name, "value": value})
}

fn extra_env(count: usize) -> Vec<Value> {
    (0..count)
        .map(|i| env_value(&format!("APP_SETTING_{i:03}"), &format!("value-{i:03}")))
        .collect()
}

fn gpu_resources(gpus: u32, cpu: &str, memory: &str) -> Value {
    json!({
        "requests": {"cpu": cpu, "memory": memory, "nvidia.com/gpu": gpus.to_string()},
        "limits": {"memory": memory, "nvidia.com/gpu": gpus.to_string()},
    })
}

fn gpu_toleration() -> Value {
    json!({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"})
}

/// The common case: a web service's pod, created by a ReplicaSet; not opted in.
fn deployment_pod() -> Value {
    pod(
        json!({
            "generateName": "checkout-7d9f8b6c5d-",
            "namespace": "shop",
            "labels": {"app.kubernetes.io/name": "checkout", "app.kubernetes.io/part-of": "shop", "pod-template-hash": "7d9f8b6c5d"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2025-11-20T09:12:44Z", "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "checkout-7d9f8b6c5d", "uid": "0b7a4c1e-2f4d-4e8a-9c3b-5d6e7f8a9b0c", "controller": true, "blockOwnerDeletion": true}],
        }),
        json!({
            "containers": [container(json!({
                "name": "checkout",
                "image": "registry.example.com/shop/checkout:1.42.3",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}, {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
                "env": [
                    env_value("LOG_LEVEL", "info"),
                    env_value("DATABASE_HOST", "postgres.shop.svc.cluster.local"),
                    {"name": "DATABASE_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "checkout-db", "key": "password"}}},
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                ],
                "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
                "readinessProbe": {"httpGet": {"path": "/ready", "port": "http", "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 5, "successThreshold": 1, "failureThreshold": 3},
                "securityContext": {"runAsNonRoot": true, "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true},
            }))],
        }),
    )
}

/// AWS: a worker of a Kubeflow PyTorchJob on p5.48xlarge.
fn pytorchjob_worker() -> Value {
    let env = vec![
        env_value("NCCL_DEBUG", "WARN"),
        env_value("HF_HOME", "/data/hf"),
        env_value("PYTHONUNBUFFERED", "1"),
        env_value("MASTER_PORT", "23456"),
        env_value("PET_MASTER_PORT", "23456"),
        env_value("MASTER_ADDR", "llama-70b-sft-master-0"),
        env_value("PET_MASTER_ADDR", "llama-70b-sft-master-0"),
        env_value("WORLD_SIZE", "4"),
        env_value("RANK", "1"),
        env_value("PET_NPROC_PER_NODE", "8"),
        env_value("PET_NODE_RANK", "1"),
        env_value("PET_NNODES", "4"),
    ];
    pod(
        json!({
            "name": "llama-70b-sft-worker-0",
            "namespace": "nemo",
            "labels": {
                "training.kubeflow.org/job-name": "llama-70b-sft",
                "training.kubeflow.org/operator-name": "pytorchjob-controller",
                "training.kubeflow.org/replica-index": "0",
                "training.kubeflow.org/replica-type": "worker",
            },
            "annotations": {TRIGGER: "true", "sidecar.istio.io/inject": "false"},
            "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "llama-70b-sft", "uid": "5c2e1f0a-7b3d-4c9e-8f1a-2b3c4d5e6f70", "controller": true, "blockOwnerDeletion": true}],
        }),
        json!({
            "restartPolicy": "OnFailure",
            "containers": [container(json!({
                "name": "pytorch",
                "image": "nvcr.io/nvidia/nemo:25.09",
                "command": ["torchrun"],
                "args": ["--nnodes=4", "--nproc-per-node=8", "/workspace/train.py", "--config=/config/sft.yaml"],
                "ports": [{"name": "pytorchjob-port", "containerPort": 23456, "protocol": "TCP"}],
                "env": env,
                "resources": gpu_resources(8, "96", "1600Gi"),
                "volumeMounts": [
                    {"name": "data", "mountPath": "/data"},
                    {"name": "config", "mountPath": "/config", "readOnly": true},
                ],
            }))],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "fsx-training-data"}},
                {"name": "config", "configMap": {"name": "llama-70b-sft-config", "defaultMode": 420}},
            ],
            "nodeSelector": {"node.kubernetes.io/instance-type": "p5.48xlarge"},
            "tolerations": [gpu_toleration()],
        }),
    )
}

/// Azure: a worker of a Kubeflow MPIJob on ND H100 v5.
fn mpijob_worker() -> Value {
    pod(
        json!({
            "name": "gpt-pretrain-worker-1",
            "namespace": "nemo",
            "labels": {
                "training.kubeflow.org/job-name": "gpt-pretrain",
                "training.kubeflow.org/job-role": "worker",
                "training.kubeflow.org/operator-name": "mpi-operator",
                "training.kubeflow.org/replica-index": "1",
            },
            "annotations": {TRIGGER: "true"},
            "ownerReferences": [{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "name": "gpt-pretrain", "uid": "9e8d7c6b-5a49-4382-a1b0-c9d8e7f6a5b4", "controller": true, "blockOwnerDeletion": true}],
        }),
        json!({
            "hostname": "gpt-pretrain-worker-1",
            "subdomain": "gpt-pretrain",
            "containers": [container(json!({
                "name": "worker",
                "image": "nvcr.io/nvidia/nemo:25.09",
                "command": ["/usr/sbin/sshd", "-De"],
                "env": [
                    env_value("K_MPI_JOB_ROLE", "worker"),
                    env_value("NCCL_DEBUG", "WARN"),
                    env_value("HF_HOME", "/data/hf"),
                ],
                "resources": gpu_resources(8, "80", "1800Gi"),
                "volumeMounts": [
                    {"name": "ssh-auth", "mountPath": "/root/.ssh"},
                    {"name": "data", "mountPath": "/data"},
                ],
            }))],
            "volumes": [
                {"name": "ssh-auth", "secret": {"secretName": "gpt-pretrain-ssh", "defaultMode": 384, "items": [{"key": "ssh-privatekey", "path": "id_rsa"}, {"key": "ssh-publickey", "path": "id_rsa.pub"}, {"key": "ssh-publickey", "path": "authorized_keys"}]}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "azurelustre-data"}},
            ],
            "nodeSelector": {"kubernetes.azure.com/agentpool": "ndh100v5"},
            "tolerations": [gpu_toleration(), {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
        }),
    )
}

/// GCP: a pod of a JobSet's indexed Job on A3 Mega.
fn jobset_worker() -> Value {
    pod(jobset_metadata(), jobset_spec(1, 8, 0))
}

fn jobset_metadata() -> Value {
    json!({
        "generateName": "mixtral-ft-workers-0-1-",
        "namespace": "nemo",
        "labels": {
            "batch.kubernetes.io/controller-uid": "d1c2b3a4-9f8e-4d7c-b6a5-948372615a0b",
            "batch.kubernetes.io/job-completion-index": "1",
            "batch.kubernetes.io/job-name": "mixtral-ft-workers-0",
            "controller-uid": "d1c2b3a4-9f8e-4d7c-b6a5-948372615a0b",
            "job-name": "mixtral-ft-workers-0",
            "jobset.sigs.k8s.io/job-index": "0",
            "jobset.sigs.k8s.io/jobset-name": "mixtral-ft",
            "jobset.sigs.k8s.io/replicatedjob-name": "workers",
            "jobset.sigs.k8s.io/restart-attempt": "0",
        },
        "annotations": {
            TRIGGER: "true",
            "batch.kubernetes.io/job-completion-index": "1",
            "jobset.sigs.k8s.io/job-index": "0",
            "jobset.sigs.k8s.io/jobset-name": "mixtral-ft",
            "jobset.sigs.k8s.io/replicatedjob-name": "workers",
            "jobset.sigs.k8s.io/replicatedjob-replicas": "1",
            "jobset.sigs.k8s.io/restart-attempt": "0",
        },
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "mixtral-ft-workers-0", "uid": "d1c2b3a4-9f8e-4d7c-b6a5-948372615a0b", "controller": true, "blockOwnerDeletion": true}],
    })
}

/// `containers` trainer containers with `gpus` GPUs and `extra` more env entries each.
fn jobset_spec(containers: usize, gpus: u32, extra: usize) -> Value {
    let trainers: Vec<Value> = (0..containers)
        .map(|i| {
            let mut env = vec![
                {
                    json!({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}})
                },
                env_value("NCCL_DEBUG", "WARN"),
                env_value("MASTER_ADDR", "mixtral-ft-workers-0-0.mixtral-ft"),
                env_value("MASTER_PORT", "29500"),
                env_value("NNODES", "8"),
            ];
            env.extend(extra_env(extra));
            let name = if containers == 1 {
                "trainer".to_string()
            } else {
                format!("trainer-{i}")
            };
            container(json!({
                "name": name,
                "image": "us-docker.pkg.dev/example/training/nemo:25.09",
                "command": ["bash", "-c", "torchrun --nnodes=8 --nproc-per-node=8 --node-rank=$JOB_COMPLETION_INDEX train.py"],
                "env": env,
                "resources": gpu_resources(gpus, "200", "1800Gi"),
                "volumeMounts": [{"name": "checkpoints", "mountPath": "/checkpoints"}],
            }))
        })
        .collect();
    json!({
        "restartPolicy": "Never",
        "hostname": "mixtral-ft-workers-0-1",
        "subdomain": "mixtral-ft",
        "containers": trainers,
        "volumes": [{"name": "checkpoints", "csi": {"driver": "gcsfuse.csi.storage.gke.io", "volumeAttributes": {"bucketName": "example-checkpoints"}}}],
        "nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-h100-mega-80gb"},
        "tolerations": [gpu_toleration()],
    })
}

/// A pod of `containers` containers with 1 GPU and `extra` more env entries each (JobSet-made).
fn stress_pod(containers: usize, extra: usize) -> Value {
    pod(jobset_metadata(), jobset_spec(containers, 1, extra))
}

/// OCI: a worker of a Volcano Job on BM.GPU.H100.8 (examples/pod.yaml, defaulted).
fn volcano_worker() -> Value {
    pod(
        json!({
            "name": "llama-sft-worker-1",
            "namespace": "nemo",
            "labels": {"volcano.sh/job-name": "llama-sft", "volcano.sh/job-namespace": "nemo", "volcano.sh/queue-name": "default", "volcano.sh/task-spec": "worker"},
            "annotations": {
                TRIGGER: "true",
                "scheduling.k8s.io/group-name": "llama-sft-9c1e2f",
                "volcano.sh/job-name": "llama-sft",
                "volcano.sh/job-version": "0",
                "volcano.sh/queue-name": "default",
                "volcano.sh/task-spec": "worker",
                "volcano.sh/template-uid": "llama-sft-worker",
            },
            "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "llama-sft", "uid": "3f6c2d9e-8a41-4b7e-9e0f-2c5d7a1b9e44", "controller": true, "blockOwnerDeletion": true}],
        }),
        json!({
            "schedulerName": "volcano",
            "restartPolicy": "Never",
            "hostname": "llama-sft-worker-1",
            "subdomain": "llama-sft",
            "containers": [container(json!({
                "name": "trainer",
                "image": "nvcr.io/nvidia/nemo:25.09",
                "command": ["torchrun"],
                "args": ["--nnodes=2", "--nproc-per-node=8", "train.py"],
                "env": [
                    env_value("NCCL_DEBUG", "INFO"),
                    env_value("VC_WORKER_HOSTS", "llama-sft-worker-0.llama-sft,llama-sft-worker-1.llama-sft"),
                    env_value("VC_WORKER_NUM", "2"),
                    env_value("VK_TASK_INDEX", "1"),
                    env_value("VC_TASK_INDEX", "1"),
                ],
                "resources": {
                    "requests": {"cpu": "32", "memory": "512Gi", "nvidia.com/gpu": "8"},
                    "limits": {"memory": "512Gi", "nvidia.com/gpu": "8"},
                },
                "volumeMounts": [{"name": "svc-llama-sft", "mountPath": "/etc/volcano"}],
            }))],
            "volumes": [{"name": "svc-llama-sft", "configMap": {"name": "llama-sft-svc", "defaultMode": 420}}],
            "tolerations": [gpu_toleration()],
        }),
    )
}
