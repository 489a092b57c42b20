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
//! A case may give the cluster the policy's preflight host calls are answered from (behaviour.md
//! §9); without one every host call errors, as for an `AdmissionPolicy`. Before timing, each case
//! counts the host calls of one `validate` and refuses to run when a pod that is not opted in
//! makes any, or an opted-in one makes more than one per object it refers to; the table shows
//! the count.
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
use e2e_tests::cluster::Cluster;
use e2e_tests::{Instance, Policy, admission_request, pod_kind};
// The pods live beside the other tests' fixtures (the bench alone uses them), so that a change to
// them is a change to BENCHMARKS.md's figures, made in one place.
use fixtures::realistic::{
    a3_high_worker, a3_ultra_worker, deployment_pod, extra_env, jobset_worker, mi300x_worker,
    mpijob_worker, pytorchjob_worker, stress_pod, volcano_job_worker,
};
use fixtures::without_trigger;
use serde_json::{Value, json};

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
    // The target is the code's size: the annotation adds the metadata and this README's text.
    // 512 KB: the project's limit, clarity before bytes (BENCHMARKS.md, "Module size").
    const MODULE_LIMIT: usize = 512_000;
    let module = policy_metadata::section::size_without_metadata(&std::fs::read(&args.policy)?)?;
    println!(
        "module size target ≤ 512 KB ({MODULE_LIMIT} bytes): {module} bytes without its metadata section: {}",
        if module <= MODULE_LIMIT {
            "met"
        } else {
            "MISSED"
        }
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
        "| case | cloud | payload | host calls | policy | accept floor | echo floor | policy / accept | policy / echo | target |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---|");
    for case in cases()? {
        if !wanted(&case.name) {
            continue;
        }
        let t = bench.measure(&case)?;
        let (ratio, limit) = match case.expect {
            Expect::Accept => (t.ratio_accept, 0.6),
            // An opted-in pod's work, whatever the answer: held to the opted-in target.
            Expect::Mutate | Expect::Unchanged | Expect::Refuse => (t.ratio_echo, 1.25),
        };
        let floor = match case.expect {
            Expect::Accept => "accept",
            Expect::Mutate | Expect::Unchanged | Expect::Refuse => "echo",
        };
        // With a cluster, the time includes the test host's own work of answering the host call
        // (reading its fixture objects, writing the list), which no floor has: such a case is held
        // to its host calls (at most one per object, checked before timing), its ratio shown.
        let target = match &case.cluster {
            Some(_) => "≤ 1 host call per object: met".to_string(),
            None => format!(
                "≤ {limit}× {floor}: {}",
                if ratio <= limit { "met" } else { "MISSED" }
            ),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.2}× | {:.2}× | {target} |",
            case.name,
            case.cloud,
            kib(t.payload),
            t.host_calls,
            micros(t.median[0]),
            micros(t.median[1]),
            micros(t.median[2]),
            t.ratio_accept,
            t.ratio_echo,
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
            cluster: None,
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
        // Each build answered from the case's cluster, as in the first table.
        for instance in &instances {
            instance.set_cluster(case.cluster.clone());
        }
        let runners: Vec<(&Instance, &str)> = instances.iter().map(|i| (i, "validate")).collect();
        let samples = bench.samples(&case.payload(), &runners)?;
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
        std::fs::write(&path, case.payload())
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
    host_calls: usize,
    median: [f64; 3],
    ratio_accept: f64,
    ratio_echo: f64,
}

impl Bench<'_> {
    /// Checks the three answers, then times them.
    fn measure(&self, case: &Case) -> Result<Timing> {
        let payload = case.payload();
        let policy = self.policy.instance()?;
        policy.set_cluster(case.cluster.clone());
        let baseline = self.baseline.instance()?;
        let host_calls = check(&policy, &baseline, case, &payload)?;
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
            host_calls,
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
    /// Not opted in, accepted unchanged: measured against the accept floor.
    Accept,
    /// Mutated: measured against the echo floor.
    Mutate,
    /// Opted in and accepted unchanged, its fabric there already: the injector's whole reading
    /// finds nothing to add, so it is measured, as a mutation is, against the echo floor.
    Unchanged,
    /// Refused by the validate-only answer for what it lacks (behaviour.md §10): the injector's
    /// work and the reading of the mutation, measured against the echo floor.
    Refuse,
}

#[derive(Clone)]
struct Case {
    name: String,
    /// Which settings, as the table shows them.
    cloud: &'static str,
    settings: Value,
    pod: Value,
    expect: Expect,
    /// What the preflight's host calls are answered from; `None`: they error.
    cluster: Option<Cluster>,
}

const SCALING_CLOUD: &str = "gcp";

impl Case {
    fn payload(&self) -> Vec<u8> {
        let mut request = admission_request("CREATE", &pod_kind(), &self.pod);
        // The API server omits an empty name (`generateName` pods are named after admission).
        if let Some(request) = request.as_object_mut()
            && request.get("name").is_some_and(Value::is_null)
        {
            request.remove("name");
        }
        fixtures::payload(&request, &self.settings)
    }
}

/// The example settings of `cloud` (`examples/settings/<cloud>.yaml`).
fn settings(cloud: &str) -> Result<Value> {
    example(&format!("{cloud}.yaml"))
}

fn example(file: &str) -> Result<Value> {
    e2e_tests::read_yaml(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/settings")
            .join(file),
    )
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
            cluster: None,
        })
    };
    // The object the pod refers to exists, in the namespace it is looked for in.
    let present = |mut case: Case, api_version: &str, kind: &str, namespace: Option<&str>| {
        let namespace = namespace
            .or(case.pod["metadata"]["namespace"].as_str())
            .unwrap_or("default")
            .to_string();
        let name = match kind {
            "ConfigMap" => "nccl-topo",
            _ => "sriov-net",
        };
        case.name = format!("{}, preflight: {kind} present", case.name);
        case.cluster = Some(Cluster {
            objects: vec![json!({"apiVersion": api_version, "kind": kind,
                                 "metadata": {"namespace": namespace, "name": name}})],
            ..Cluster::default()
        });
        case
    };
    let largest = |name: &str, pod, expect| -> Result<Case> {
        Ok(Case {
            name: name.to_string(),
            cloud: "oci, largest",
            settings: largest_settings()?,
            pod,
            expect,
            cluster: None,
        })
    };
    // Pods as the API server stores them, under the settings of e2e-tests/pods' cases.
    let read_pod = |file: &str| {
        e2e_tests::read_yaml(&Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(file))
    };
    let stored = |pod: Value| fixtures::stored::stored(&pod);
    let validate_only = |name: &str, pod, expect| -> Result<Case> {
        Ok(Case {
            name: name.to_string(),
            cloud: "oci, validateOnly",
            settings: json!({"oci": {"enabled": true}, "validateOnly": true}),
            pod,
            expect,
            cluster: None,
        })
    };
    let mpijob = case(
        "8-GPU worker (Kubeflow MPIJob)",
        "azure",
        mpijob_worker(),
        Expect::Mutate,
    )?;
    let topology_present = present(mpijob.clone(), "v1", "ConfigMap", None);
    // A container that takes env from a ConfigMap (behaviour.md §4): one more read, whose keys
    // (Azure/aks-rdma-infiniband's nccl-env-vars) stay the user's.
    let mut env_from = topology_present.clone();
    env_from.name = format!("{}, env from a ConfigMap", env_from.name);
    let namespace = env_from.pod["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
        .to_string();
    if let Some(container) = env_from.pod.pointer_mut("/spec/containers/0") {
        container["envFrom"] = json!([{"configMapRef": {"name": "nccl-env-vars"}}]);
    }
    if let Some(cluster) = &mut env_from.cluster {
        cluster
            .objects
            .push(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"namespace": namespace, "name": "nccl-env-vars"},
            "data": {"NCCL_NET_GDR_LEVEL": "SYS", "NCCL_IB_DISABLE": "0"}}));
    }
    let mut many_env = jobset_worker();
    let trainer = &mut many_env["spec"]["containers"][0];
    let env = trainer["env"].as_array_mut().context("env")?;
    let more = 200 - env.len();
    env.extend(extra_env(more));
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
            without_trigger(pytorchjob_worker()),
            Expect::Accept,
        )?,
        case(
            "not opted in: 1,000 containers",
            SCALING_CLOUD,
            without_trigger(stress_pod(1000, 0)),
            Expect::Accept,
        )?,
        case(
            "8-GPU worker (Kubeflow PyTorchJob)",
            "aws",
            pytorchjob_worker(),
            Expect::Mutate,
        )?,
        mpijob,
        case(
            "8-GPU worker (JobSet)",
            "gcp",
            jobset_worker(),
            Expect::Mutate,
        )?,
        case(
            "8-GPU worker (Volcano Job)",
            "oci",
            volcano_job_worker(),
            Expect::Mutate,
        )?,
        // As a ClusterAdmissionPolicy with the RBAC: one host call per object (behaviour.md §9).
        topology_present,
        present(
            case(
                "8-GPU worker (Volcano Job)",
                "oci",
                volcano_job_worker(),
                Expect::Mutate,
            )?,
            "k8s.cni.cncf.io/v1",
            "NetworkAttachmentDefinition",
            Some("network-operator"),
        ),
        env_from,
        mpijob_launcher()?,
        // The GCP fabrics and AMD GPUs, through the same example settings as their cloud's worker
        // above: the chart's GCP block, whose A3 Ultra pod gets RDMA by its machine.
        case(
            "8-GPU worker on A3 Ultra, GPUDirect-RDMA (JobSet)",
            "gcp",
            a3_ultra_worker(),
            Expect::Mutate,
        )?,
        case(
            "8-GPU worker on A3 High, GPUDirect-TCPX (JobSet)",
            "gcp",
            a3_high_worker(),
            Expect::Mutate,
        )?,
        case(
            "8 AMD GPUs on ND MI300X v5 (Kubeflow MPIJob)",
            "azure",
            mi300x_worker(),
            Expect::Mutate,
        )?,
        // The fabric through a DRA claim, with the vendor files that name one.
        Case {
            name: "8-GPU worker, EFA through a DRA claim (Kubeflow PyTorchJob)".to_string(),
            cloud: "aws, DRA",
            settings: example("vendor/aws-dra.yaml")?,
            pod: pytorchjob_worker(),
            expect: Expect::Mutate,
            cluster: None,
        },
        Case {
            name: "8-GPU worker on A3 Ultra, managed DRANET (JobSet)".to_string(),
            cloud: "gcp, DRANET",
            settings: example("vendor/gcp-dranet.yaml")?,
            pod: a3_ultra_worker(),
            expect: Expect::Mutate,
            cluster: None,
        },
        // Beyond the four clouds (behaviour.md §3.9): a resource and a network per rail, and
        // CoreWeave's boolean InfiniBand resource with its env.
        Case {
            name: "8-GPU worker, Network Operator SR-IOV rails (JobSet)".to_string(),
            cloud: "rdma, rails",
            settings: example("vendor/network-operator-rails.yaml")?,
            pod: jobset_worker(),
            expect: Expect::Mutate,
            cluster: None,
        },
        Case {
            name: "8-GPU worker on CoreWeave InfiniBand (Kubeflow MPIJob)".to_string(),
            cloud: "rdma, CoreWeave",
            settings: example("vendor/coreweave.yaml")?,
            pod: mpijob_worker(),
            expect: Expect::Mutate,
            cluster: None,
        },
        // GPUs through a DRA claim: its template read with one host call (behaviour.md §3.10).
        Case {
            name: "8-GPU worker, GPUs through a DRA claim (Kubeflow PyTorchJob)".to_string(),
            cloud: "aws",
            settings: settings("aws")?,
            pod: gpus_through_a_claim(pytorchjob_worker())?,
            expect: Expect::Mutate,
            cluster: Some(Cluster {
                objects: vec![json!({
                    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                    "metadata": {"namespace": "default", "name": "eight-gpus"},
                    "spec": {"spec": {"devices": {"requests": [
                        {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 8}}
                    ]}}},
                })],
                ..Cluster::default()
            }),
        },
        // Multi-node NVLink (behaviour.md §3.11): a GB200 worker whose job's ComputeDomain is
        // read, one more object for opted-in pods on such machines only.
        Case {
            name: "4-GPU worker on p6e-gb200, its ComputeDomain's channel (Kubeflow PyTorchJob)"
                .to_string(),
            cloud: "aws, NVLink",
            settings: example("aws-gb200.yaml")?,
            pod: read_pod("examples/pods/aws-gb200-worker.yaml")?,
            expect: Expect::Mutate,
            cluster: Some(Cluster {
                objects: vec![json!({
                    "apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
                    "metadata": {"namespace": "training", "name": "llama-gb200"},
                    "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "llama-gb200-channel"}}},
                })],
                ..Cluster::default()
            }),
        },
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
        // validateOnly (behaviour.md §10) on pods as the API server stores them
        // (`fixtures::stored`), as the audit scanner sends them: a pod not opted in is accepted
        // at once (the not-opted-in target); an opted-in one is decided by the injector's whole
        // reading, whether it is wired already (accepted) or lacks its fabric (refused for what
        // it lacks), so both are held to the opted-in target. A pod the injector would change
        // looks for its network (§9), here an erring host call; OCI adds nothing a Pod Security
        // level refuses, so its namespace is not read (§11).
        validate_only(
            "validateOnly: Deployment pod, not opted in, stored",
            stored(deployment_pod()),
            Expect::Accept,
        )?,
        validate_only(
            "validateOnly: 8-GPU worker (Volcano Job), wired and stored",
            stored(read_pod("e2e-tests/pods/oci-worker-wired.yaml")?),
            Expect::Unchanged,
        )?,
        validate_only(
            "validateOnly: 8-GPU worker (Volcano Job), stored without its fabric",
            stored(read_pod("e2e-tests/pods/oci-worker.yaml")?),
            Expect::Refuse,
        )?,
        largest(
            "not opted in: 8-GPU worker, largest settings",
            without_trigger(volcano_job_worker()),
            Expect::Accept,
        )?,
        largest(
            "8-GPU worker (Volcano Job), largest settings",
            volcano_job_worker(),
            Expect::Mutate,
        )?,
    ])
}

/// `pod` with its first container's `nvidia.com/gpu` taken through a claim of the template
/// `eight-gpus` instead, in namespace `default`.
/// The launcher of the MPIJob whose workers are the MPIJob row's (behaviour.md §3.12): one more
/// read, the MPIJob's, and its workers' pod sent through the decision and the engine once more,
/// whose env the launcher gains in Open MPI's forms. Measured against the echo floor of its own
/// pod, which is smaller than a worker's.
fn mpijob_launcher() -> Result<Case> {
    let worker = mpijob_worker();
    let template = json!({"metadata": {"labels": {}, "annotations": worker["metadata"]["annotations"]},
                          "spec": worker["spec"]});
    let job = fixtures::mpi::mpi_job("gpt-pretrain", "nemo", "OpenMPI", false, Some(template));
    Ok(Case {
        name: "MPIJob launcher: the workers' env to the ranks, its MPIJob read".to_string(),
        cloud: "azure",
        settings: settings("azure")?,
        pod: fixtures::mpi::mpi_launcher("gpt-pretrain", "nemo", "OpenMPI", false, 0),
        expect: Expect::Mutate,
        cluster: Some(Cluster {
            objects: vec![job],
            ..Cluster::default()
        }),
    })
}

fn gpus_through_a_claim(mut pod: Value) -> Result<Value> {
    pod["metadata"]["namespace"] = json!("default");
    let resources = pod["spec"]["containers"][0]["resources"]
        .as_object_mut()
        .context("the first container's resources")?;
    for side in ["requests", "limits"] {
        if let Some(quantities) = resources.get_mut(side).and_then(Value::as_object_mut) {
            quantities.remove("nvidia.com/gpu");
        }
    }
    resources.insert("claims".into(), json!([{"name": "gpus"}]));
    pod["spec"]["resourceClaims"] =
        json!([{"name": "gpus", "resourceClaimTemplateName": "eight-gpus"}]);
    Ok(pod)
}

/// Checks that the three functions answer what the case expects, so that the timings are of the
/// work they claim to be, and answers the host calls of one `validate`: none for a pod that is
/// not opted in, at most one per object for one that is.
fn check(policy: &Instance, baseline: &Instance, case: &Case, payload: &[u8]) -> Result<usize> {
    let answer = |instance: &Instance, function: &str| -> Result<Value> {
        Ok(serde_json::from_slice(&instance.call(function, payload)?)?)
    };
    policy.take_host_calls();
    let ours = answer(policy, "validate")?;
    let calls = policy.take_host_calls();
    let mut objects: Vec<&[u8]> = calls.iter().map(|(_, _, _, p)| p.as_slice()).collect();
    objects.sort_unstable();
    objects.dedup();
    // A wired pod the validate-only answer accepts is opted in (`Unchanged`): its preflight
    // still looks.
    if case.expect == Expect::Accept && !calls.is_empty() {
        bail!(
            "{}: a pod that is not opted in made {} host calls",
            case.name,
            calls.len()
        );
    }
    if objects.len() != calls.len() {
        bail!("{}: an object was looked for twice: {calls:?}", case.name);
    }
    // The object the case's cluster holds is found: no preflight warning.
    if ours
        .to_string()
        .contains("does not exist, and this pod refers to it")
    {
        bail!(
            "{}: the preflight found an object missing: {ours}",
            case.name
        );
    }
    let accepted = answer(baseline, "validate")?;
    let echoed = answer(baseline, "validate_echo")?;
    let mutated = !ours["mutated_object"].is_null();
    let lacks = ours["message"]
        .as_str()
        .is_some_and(|m| m.starts_with("multi-node networking: this pod lacks the "));
    let as_expected = match case.expect {
        Expect::Refuse => ours["accepted"] == false && lacks,
        other => ours["accepted"] == true && mutated == (other == Expect::Mutate),
    };
    if !as_expected {
        bail!("{}: the policy answered {ours}", case.name);
    }
    if accepted["accepted"] != true || !accepted["mutated_object"].is_null() {
        bail!("{}: the accept baseline answered {accepted}", case.name);
    }
    if echoed["mutated_object"] != case.pod {
        bail!("{}: the echo baseline did not echo the pod", case.name);
    }
    Ok(calls.len())
}
