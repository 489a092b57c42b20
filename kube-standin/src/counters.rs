//! What the tests read of the traffic: per kind, the GETs, LISTs and WATCHes asked for, the
//! watches open now and at most, the 403s and the objects answered 404; in all, the watches open
//! now and at most; and every request with the status it was answered.

use std::collections::BTreeMap;

/// The counts of one kind (`ConfigMap`, `ComputeDomain`, …).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KindCounters {
    /// GETs of one object, whatever the answer.
    pub gets: u64,
    /// LISTs (not watches), whatever the answer.
    pub lists: u64,
    /// WATCHes asked for, whatever the answer.
    pub watches: u64,
    /// Watches being streamed now.
    pub watches_open: u64,
    /// The most watches streamed at once.
    pub watches_max: u64,
    /// Requests refused with 403 (any verb).
    pub forbidden: u64,
    /// GETs of an object that does not exist (404 `NotFound`).
    pub not_found: u64,
}

/// A snapshot of the counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    pub kinds: BTreeMap<String, KindCounters>,
    /// Watches being streamed now, of every kind.
    pub watches_open: u64,
    /// The most watches streamed at once, of every kind.
    pub watches_max: u64,
}

impl Counters {
    /// The counts of `kind` (zero if it was never asked for).
    pub fn kind(&self, kind: &str) -> KindCounters {
        self.kinds.get(kind).copied().unwrap_or_default()
    }

    pub(crate) fn of(&mut self, kind: &str) -> &mut KindCounters {
        self.kinds.entry(kind.to_string()).or_default()
    }

    pub(crate) fn watch_opened(&mut self, kind: &str) {
        let counts = self.of(kind);
        counts.watches_open += 1;
        counts.watches_max = counts.watches_max.max(counts.watches_open);
        self.watches_open += 1;
        self.watches_max = self.watches_max.max(self.watches_open);
    }

    pub(crate) fn watch_closed(&mut self, kind: &str) {
        let counts = self.of(kind);
        counts.watches_open = counts.watches_open.saturating_sub(1);
        self.watches_open = self.watches_open.saturating_sub(1);
    }
}

/// One request and its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    pub method: String,
    /// The path with its query.
    pub target: String,
    pub status: u16,
    /// `true` for a 404 of a path nothing serves (not an object that does not exist).
    pub unexpected: bool,
}
