//! A stand-in Kubernetes API server for the tests that run the real Kubewarden policy server:
//! plain HTTP on 127.0.0.1 (kube-rs, the policy server's client, connects with
//! `https_or_http()`, so a kubeconfig naming `http://` is read as it is), serving the kinds and
//! objects it is given as the API server serves them:
//!
//! - discovery: `/version`, `/api`, `/api/v1`, `/apis`, `/apis/GROUP`, `/apis/GROUP/VERSION`
//!   ([`kinds`]), open to every user; a group version not served is a 404;
//! - GET of one object, namespaced or cluster-scoped; 404 and 403 as the API server's `Status`
//!   ([`status`]);
//! - LIST with `fieldSelector` and `labelSelector` ([`selector`]), `limit` and `continue`, a
//!   `…List` with `metadata.resourceVersion`;
//! - WATCH held open as the API server holds one ([`watch`]): what kube-rs's `watcher` needs to
//!   become ready after its LIST (kube 3.1, the policy server's: `InitialListStrategy::ListWatch`,
//!   a LIST with `resourceVersion=0` and `limit=500`, then a WATCH from the list's resource
//!   version with `allowWatchBookmarks=true` and `timeoutSeconds=290`), or a streaming list;
//! - authorization of every other request from one `ClusterRole`'s rules, bound to one user
//!   ([`rbac`]), the policy server's ServiceAccount by default, which the kubeconfig's token is;
//! - counters of what was asked ([`Counters`]) and a log of every request ([`Logged`]), the 404s
//!   of paths nothing serves marked unexpected.
//!
//! It runs on its own tokio runtime, so that a test's thread drives it through [`Standin`] and
//! needs no runtime of its own; dropping the [`Standin`] stops it.

pub mod counters;
pub mod kinds;
pub mod rbac;
pub mod selector;
mod server;
pub mod status;
mod store;
mod watch;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hyper::Method;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;

pub use counters::{Counters, KindCounters, Logged};
pub use kinds::Kind;
pub use rbac::PolicyRule;

/// The policy server's ServiceAccount, as the RBAC of `make manifests` binds it
/// (`kubewarden/policy-server`).
pub const POLICY_SERVER_USER: &str = "system:serviceaccount:kubewarden:policy-server";

/// What the stand-in serves.
#[derive(Debug, Clone)]
pub struct Config {
    pub kinds: Vec<Kind>,
    pub objects: Vec<Value>,
    /// The user the kubeconfig's token authenticates as, and the rules bound to it.
    pub user: String,
    pub rules: Vec<PolicyRule>,
    /// How often an open watch that allows bookmarks gets one.
    pub bookmark_interval: Duration,
}

impl Config {
    /// `kinds`, no objects, the policy server's ServiceAccount with no rules (every resource
    /// request refused), a bookmark a minute (the API server's watch cache sends one about that
    /// often).
    pub fn new(kinds: Vec<Kind>) -> Config {
        Config {
            kinds,
            objects: Vec::new(),
            user: POLICY_SERVER_USER.into(),
            rules: Vec::new(),
            bookmark_interval: Duration::from_secs(60),
        }
    }

    pub fn objects(mut self, objects: Vec<Value>) -> Config {
        self.objects = objects;
        self
    }

    pub fn rules(mut self, rules: Vec<PolicyRule>) -> Config {
        self.rules = rules;
        self
    }
}

impl PolicyRule {
    /// The rules of a `ClusterRole` (or `Role`) object.
    pub fn of_role(role: &Value) -> Result<Vec<PolicyRule>, String> {
        serde_json::from_value(role["rules"].clone())
            .map_err(|e| format!("the role's rules cannot be read: {e}"))
    }
}

/// What the request handlers share.
pub(crate) struct Shared {
    store: Mutex<store::Store>,
    counters: Mutex<Counters>,
    log: Mutex<Vec<Logged>>,
    authorizer: rbac::Authorizer,
    token: String,
    user: String,
    /// `127.0.0.1:PORT`, for `/api`'s server address.
    address: String,
    bookmark_interval: Duration,
}

impl Shared {
    fn store(&self) -> MutexGuard<'_, store::Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn counters(&self) -> MutexGuard<'_, Counters> {
        self.counters.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn log(&self, method: &Method, target: &str, status: u16, unexpected: bool) {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Logged {
                method: method.to_string(),
                target: target.to_string(),
                status,
                unexpected,
            });
    }
}

/// A running stand-in; dropping it stops it (and ends every watch).
pub struct Standin {
    addr: SocketAddr,
    shared: Arc<Shared>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Standin {
    /// Starts serving `config` on a free port of 127.0.0.1. An object of a kind not served is
    /// an error.
    pub fn start(config: Config) -> Result<Standin, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("kube-standin")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the stand-in's runtime: {e}"))?;
        let listener = runtime
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("no local address: {e}"))?;
        let mut store = store::Store::new(config.kinds);
        for object in config.objects {
            store.put(object)?;
        }
        let shared = Arc::new(Shared {
            store: Mutex::new(store),
            counters: Mutex::new(Counters::default()),
            log: Mutex::new(Vec::new()),
            authorizer: rbac::Authorizer {
                user: config.user.clone(),
                rules: config.rules,
            },
            token: format!("kube-standin-{}", addr.port()),
            user: config.user,
            address: addr.to_string(),
            bookmark_interval: config.bookmark_interval,
        });
        let serving = Arc::clone(&shared);
        runtime.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let shared = Arc::clone(&serving);
                tokio::spawn(async move {
                    let service =
                        service_fn(move |request| server::handle(Arc::clone(&shared), request));
                    // A connection the client drops mid-answer is its business.
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Standin {
            addr,
            shared,
            runtime: Some(runtime),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bearer token that authenticates as the configured user.
    pub fn token(&self) -> &str {
        &self.shared.token
    }

    /// A kubeconfig naming the stand-in, its token the configured user's.
    pub fn kubeconfig(&self) -> String {
        format!(
            "apiVersion: v1\n\
             kind: Config\n\
             clusters:\n\
             - name: kube-standin\n  cluster:\n    server: {url}\n\
             users:\n\
             - name: policy-server\n  user:\n    token: {token}\n\
             contexts:\n\
             - name: kube-standin\n  context:\n    cluster: kube-standin\n    user: policy-server\n    namespace: kubewarden\n\
             current-context: kube-standin\n",
            url = self.url(),
            token = self.token(),
        )
    }

    /// Adds or replaces an object, as a client's create or update would: the watches that
    /// select it get `ADDED` or `MODIFIED`.
    pub fn put(&self, object: Value) -> Result<(), String> {
        self.shared.store().put(object)
    }

    /// Deletes an object; `false` if there was none. `namespace` is ignored for a
    /// cluster-scoped kind.
    pub fn delete(&self, kind: &Kind, namespace: &str, name: &str) -> bool {
        let mut store = self.shared.store();
        let Some(index) = store.kind_at(&kind.group, &kind.version, &kind.plural) else {
            return false;
        };
        let namespace = if store.kinds[index].namespaced {
            namespace
        } else {
            ""
        };
        store.delete(index, namespace, name)
    }

    /// The counters now.
    pub fn counters(&self) -> Counters {
        self.shared.counters().clone()
    }

    /// Every request so far, in the order they were answered.
    pub fn requests(&self) -> Vec<Logged> {
        self.shared
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The requests of paths nothing serves (answered 404 or 405), as `METHOD TARGET`.
    pub fn unexpected(&self) -> Vec<String> {
        self.requests()
            .into_iter()
            .filter(|r| r.unexpected)
            .map(|r| format!("{} {}", r.method, r.target))
            .collect()
    }
}

impl Drop for Standin {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
