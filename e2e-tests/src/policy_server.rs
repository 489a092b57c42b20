//! The real Kubewarden policy server, run as a process on the annotated module: what the
//! real-engine tests (`tests/real_engine.rs`) send their AdmissionReviews to, the cluster's reads
//! going to the API server its kubeconfig names (a stand-in, `kube-standin`).
//!
//! [`PolicyServer::start`] writes `policies.yml` (one policy: the module by `file://`,
//! `allowedToMutate: true`, `hostCapabilities: ["*"]` as the Kubewarden controller grants a
//! ClusterAdmissionPolicy, its `contextAwareResources` and settings) and the kubeconfig into a
//! work folder, starts the binary with `KUBECONFIG` set, on free ports of 127.0.0.1, `--workers 2`
//! and the default `--policy-timeout`, and waits for its readiness probe. [`PolicyServer::validate`]
//! POSTs an AdmissionReview to `/validate/<policy id>` with a client-side deadline, so that a
//! request the server never answers (a host call that never returns holds its worker; the
//! policy timeout does not interrupt a host call) is an error that says so, not a hung test.
//! Dropping the [`PolicyServer`] kills the process, also when a test panics. Its log
//! (`policy-server.log` in the work folder) stays for reading.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

/// How long the server may take to load the module and answer its readiness probe.
const READY_WITHIN: Duration = Duration::from_secs(120);

/// The policy server binary `POLICY_SERVER` names, if it names one that exists.
pub fn binary() -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var_os("POLICY_SERVER")?);
    path.is_file().then_some(path)
}

/// What to run.
pub struct Launch<'a> {
    pub binary: &'a Path,
    /// The annotated module.
    pub module: &'a Path,
    /// The policy's id, in `policies.yml` and the `/validate/<id>` path.
    pub policy_id: &'a str,
    pub settings: &'a Value,
    /// `[{apiVersion, kind}]`, as a ClusterAdmissionPolicy's `spec.contextAwareResources`.
    pub context_aware_resources: &'a Value,
    /// The kubeconfig's text.
    pub kubeconfig: &'a str,
    /// Where `policies.yml`, the kubeconfig, the downloads and the log go (emptied first).
    pub work: &'a Path,
    /// `--log-level`: `debug` logs every host call and its answer.
    pub log_level: &'a str,
}

/// A running policy server; dropping it kills it.
pub struct PolicyServer {
    child: Child,
    port: u16,
    policy_id: String,
    log: PathBuf,
}

/// The AdmissionReview's `response` to one request, and how long it took.
#[derive(Debug, Clone)]
pub struct Review {
    pub response: Value,
    pub elapsed: Duration,
}

impl Review {
    pub fn allowed(&self) -> bool {
        self.response["allowed"] == true
    }

    pub fn warnings(&self) -> Vec<String> {
        self.response["warnings"]
            .as_array()
            .map(|w| {
                w.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The JSON Patch, decoded; empty without one.
    pub fn patch(&self) -> Result<Vec<Value>> {
        let Some(patch) = self.response["patch"].as_str() else {
            return Ok(Vec::new());
        };
        let text = BASE64.decode(patch).context("the patch is not base64")?;
        serde_json::from_slice(&text).context("the patch is not a JSON array")
    }

    /// `pod` with the patch applied, as the API server applies it.
    pub fn patched(&self, pod: &Value) -> Result<Value> {
        let patch: json_patch::Patch = serde_json::from_value(Value::Array(self.patch()?))?;
        let mut pod = pod.clone();
        json_patch::patch(&mut pod, &patch).context("the patch does not apply to the pod")?;
        Ok(pod)
    }
}

/// A free TCP port of 127.0.0.1 (free when asked: the server binds it a moment later).
fn free_port() -> Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

impl PolicyServer {
    pub fn start(launch: &Launch) -> Result<PolicyServer> {
        let work = launch.work;
        if work.exists() {
            std::fs::remove_dir_all(work)
                .with_context(|| format!("cannot empty {}", work.display()))?;
        }
        std::fs::create_dir_all(work)?;
        let module = std::fs::canonicalize(launch.module)
            .with_context(|| format!("no module at {}", launch.module.display()))?;
        let policies = json!({
            launch.policy_id: {
                "module": format!("file://{}", module.display()),
                "allowedToMutate": true,
                "contextAwareResources": launch.context_aware_resources,
                "hostCapabilities": ["*"],
                "settings": launch.settings,
            }
        });
        // JSON is YAML: the server reads policies.yml with serde_yaml.
        std::fs::write(
            work.join("policies.yml"),
            serde_json::to_string_pretty(&policies)?,
        )?;
        std::fs::write(work.join("kubeconfig"), launch.kubeconfig)?;
        let log = work.join("policy-server.log");
        let out = std::fs::File::create(&log)?;
        let port = free_port()?;
        let readiness = free_port()?;
        let child = Command::new(launch.binary)
            .current_dir(work)
            .env("KUBECONFIG", work.join("kubeconfig"))
            // Not in a pod: the kubeconfig, not the in-cluster config, is the cluster.
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env_remove("KUBERNETES_SERVICE_PORT")
            // Plain text in the log, for reading and searching. policy-server 1.36 colours its
            // log when asked not to (`--log-no-color`, or NO_COLOR set: `tracing.rs` passes the
            // flag to `with_ansi`), so neither is given.
            .env_remove("NO_COLOR")
            .args(["--policies", "policies.yml"])
            .args(["--policies-download-dir", "downloads"])
            .args(["--sigstore-cache-dir", "sigstore"])
            .args(["--addr", "127.0.0.1"])
            .args(["--port", &port.to_string()])
            .args(["--readiness-probe-port", &readiness.to_string()])
            .args(["--workers", "2"])
            .args(["--log-level", launch.log_level])
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("cannot run {}", launch.binary.display()))?;
        let mut server = PolicyServer {
            child,
            port,
            policy_id: launch.policy_id.to_string(),
            log,
        };
        server.wait_ready(readiness)?;
        Ok(server)
    }

    fn wait_ready(&mut self, readiness: u16) -> Result<()> {
        let deadline = Instant::now() + READY_WITHIN;
        let probe = SocketAddr::from((Ipv4Addr::LOCALHOST, readiness));
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "the policy server exited ({status}) before it was ready:\n{}",
                    self.log_tail(40)
                );
            }
            if let Ok((200, _)) = http(probe, "GET", "/readiness", None, Duration::from_secs(2)) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "the policy server was not ready within {READY_WITHIN:?}:\n{}",
                    self.log_tail(40)
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// POSTs `request` (an AdmissionRequest) in an AdmissionReview; an error when no answer came
    /// within `timeout`, or the answer is not an AdmissionReview.
    pub fn validate(&self, request: &Value, timeout: Duration) -> Result<Review> {
        let review = json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": request,
        });
        let body = serde_json::to_vec(&review)?;
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let started = Instant::now();
        let (status, answer) = http(
            address,
            "POST",
            &format!("/validate/{}", self.policy_id),
            Some(&body),
            timeout,
        )
        .with_context(|| format!("validating {}", request["name"]))?;
        let elapsed = started.elapsed();
        if status != 200 {
            bail!(
                "the policy server answered {status}: {}",
                String::from_utf8_lossy(&answer)
            );
        }
        let mut review: Value =
            serde_json::from_slice(&answer).context("the answer is not JSON")?;
        Ok(Review {
            response: review["response"].take(),
            elapsed,
        })
    }

    /// The server's resident memory now, in bytes (`VmRSS` of /proc/PID/status).
    pub fn rss(&self) -> Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))?;
        let kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().strip_suffix("kB"))
            .context("no VmRSS in /proc/PID/status")?
            .trim()
            .parse()?;
        Ok(kib * 1024)
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn log_path(&self) -> &Path {
        &self.log
    }

    fn log_tail(&self, lines: usize) -> String {
        let log = self.log();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for PolicyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request over a new connection, its answer read until `timeout` after it was
/// sent: the status and the body.
fn http(
    address: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
    timeout: Duration,
) -> Result<(u16, Vec<u8>)> {
    let deadline = Instant::now() + timeout;
    let mut stream = TcpStream::connect_timeout(&address, timeout)?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
    if let Some(body) = body {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.unwrap_or_default())?;
    let mut answer = Vec::new();
    let mut buffer = [0; 64 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            bail!("no answer within {timeout:?}: the policy server holds the request");
        }
        stream.set_read_timeout(Some(left))?;
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buffer[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                bail!("no answer within {timeout:?}: the policy server holds the request")
            }
            Err(e) => return Err(e.into()),
        }
    }
    parse_response(&answer)
}

/// The status and body of a whole HTTP/1.1 response (with `Content-Length`, chunked, or ended
/// by the connection's close).
fn parse_response(raw: &[u8]) -> Result<(u16, Vec<u8>)> {
    let mut reader = BufReader::new(raw);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("not an HTTP response: {line:?}"))?;
    let (mut length, mut chunked) = (None, false);
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse::<usize>().ok(),
                "transfer-encoding" => chunked = value.trim().eq_ignore_ascii_case("chunked"),
                _ => {}
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim(), 16)
                .with_context(|| format!("a bad chunk size {line:?}"))?;
            if size == 0 {
                break;
            }
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk)?;
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        reader.read_to_end(&mut body)?;
        if let Some(length) = length {
            body.truncate(length);
        }
    }
    Ok((status, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_with_a_length_chunked_or_closed() {
        let sized = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(parse_response(sized).unwrap(), (200, b"{}".to_vec()));
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n";
        assert_eq!(
            parse_response(chunked).unwrap(),
            (200, b"{\"a\":1}".to_vec())
        );
        let closed = b"HTTP/1.1 503 Service Unavailable\r\n\r\nno";
        assert_eq!(parse_response(closed).unwrap(), (503, b"no".to_vec()));
    }
}
