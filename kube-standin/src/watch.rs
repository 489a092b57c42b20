//! A watch, held open as the API server holds one: a chunked `application/json` stream of one
//! event per line (`{"type":"ADDED","object":{…}}`), starting with the objects the request's
//! resource version asks for, then every change the selector holds as it happens; a `BOOKMARK`
//! with the current resource version every bookmark interval when `allowWatchBookmarks` is set;
//! and ended, as the server ends it, after `timeoutSeconds`.
//!
//! Where it starts (`k8s.io/apiserver` watch semantics): `resourceVersion` unset or `"0"` sends
//! the objects there are as `ADDED` first; `sendInitialEvents=true` does too, then a `BOOKMARK`
//! annotated `k8s.io/initial-events-end` (a streaming list, kube-rs's `StreamingList`); a
//! resource version N sends the changes after N (kube-rs's `ListWatch`, after its LIST).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::Shared;
use crate::selector::Selector;

/// What one watch request asks for.
pub struct Watch {
    pub kind: usize,
    pub namespace: Option<String>,
    pub selector: Selector,
    /// `None`: from now, the objects there are sent first.
    pub since: Option<u64>,
    pub initial_events: bool,
    pub bookmarks: bool,
    pub timeout: Duration,
}

/// The response body of a watch: the lines its task sends. Dropped when the connection ends,
/// which closes the watch in the counters.
pub struct WatchBody {
    lines: mpsc::Receiver<Bytes>,
    _open: OpenWatch,
}

impl Body for WatchBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.lines
            .poll_recv(cx)
            .map(|line| line.map(|l| Ok(Frame::data(l))))
    }
}

/// One open watch in the counters, for as long as its body lives.
struct OpenWatch {
    shared: Arc<Shared>,
    kind: String,
}

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.shared.counters().watch_closed(&self.kind);
    }
}

impl Watch {
    /// The watch selects `object`: in its namespace (if it names one) and held by its selector.
    fn selects(&self, object: &Value) -> bool {
        self.namespace
            .as_deref()
            .is_none_or(|ns| object["metadata"]["namespace"] == ns)
            && self.selector.matches(object)
    }
}

/// Starts the watch's task and returns its body.
pub fn start(shared: Arc<Shared>, watch: Watch) -> WatchBody {
    let kind_name = shared.store().kinds[watch.kind].kind.clone();
    shared.counters().watch_opened(&kind_name);
    let open = OpenWatch {
        shared: Arc::clone(&shared),
        kind: kind_name,
    };
    let (tx, lines) = mpsc::channel(64);
    tokio::spawn(stream(shared, watch, tx));
    WatchBody { lines, _open: open }
}

fn line(event: &str, object: &Value) -> Bytes {
    let mut text =
        serde_json::to_vec(&json!({"type": event, "object": object})).expect("an event serialises");
    text.push(b'\n');
    Bytes::from(text)
}

async fn stream(shared: Arc<Shared>, watch: Watch, tx: mpsc::Sender<Bytes>) {
    let bookmark_every = shared.bookmark_interval;
    let (first, mut changes, mut last, kind) = {
        let store = shared.store();
        let kind = store.kinds[watch.kind].clone();
        let (past, changes) = store.since(watch.kind, watch.since.unwrap_or(u64::MAX));
        let first: Vec<Bytes> = match watch.since {
            Some(_) => past
                .iter()
                .filter(|c| watch.selects(&c.object))
                .map(|c| line(c.event, &c.object))
                .collect(),
            None => store
                .list(watch.kind, watch.namespace.as_deref(), &watch.selector)
                .into_iter()
                .map(|o| line("ADDED", o))
                .collect(),
        };
        (first, changes, store.revision(), kind)
    };
    let bookmark = |revision: u64, end_of_initial: bool| {
        let mut metadata =
            json!({"resourceVersion": revision.to_string(), "creationTimestamp": null});
        if end_of_initial {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        line(
            "BOOKMARK",
            &json!({"kind": kind.kind, "apiVersion": kind.api_version(), "metadata": metadata}),
        )
    };
    for l in first {
        if tx.send(l).await.is_err() {
            return;
        }
    }
    if watch.initial_events && tx.send(bookmark(last, true)).await.is_err() {
        return;
    }
    let deadline = tokio::time::sleep(watch.timeout);
    tokio::pin!(deadline);
    let mut ticker =
        tokio::time::interval_at(tokio::time::Instant::now() + bookmark_every, bookmark_every);
    loop {
        tokio::select! {
            _ = &mut deadline => return,
            _ = tx.closed() => return,
            _ = ticker.tick(), if watch.bookmarks => {
                let revision = shared.store().revision();
                if tx.send(bookmark(revision, false)).await.is_err() {
                    return;
                }
            }
            change = changes.recv() => match change {
                Ok(change) if change.revision > last => {
                    last = change.revision;
                    if change.kind == watch.kind && watch.selects(&change.object) && tx.send(line(change.event, &change.object)).await.is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                // Too far behind, or the stand-in stopping: end the watch; the client watches again.
                Err(broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed) => return,
            }
        }
    }
}
