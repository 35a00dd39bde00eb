//! The knowledge-base watcher (SPEC.md §15.2): one background thread that
//! keeps every registered knowledge base in step with its inbox folders.
//!
//! Two triggers, one job (calling [`Memdb::kb_sync`]):
//! - **Events**: a `notify` recommended watcher (inotify on Linux) watches
//!   each inbox folder recursively; a change under a folder marks its base
//!   due [`DEBOUNCE`] after the last event of a burst (at most
//!   [`MAX_DELAY`] after the first), so a file copied in pieces is synced
//!   once, soon after it is complete.
//! - **Polling**, the fallback: every base is synced each interval
//!   (KuraDB's 10 s; the first pass at once), which catches what events
//!   miss: network filesystems, an event queue overflow, a folder whose
//!   watch could not be set up (logged, retried each pass), or no watcher
//!   at all (its error logged; polling alone then).
//!
//! The registry is re-read every [`REFRESH`]: a base added while the
//! watcher runs is synced and watched within that (no restart), a removed
//! one unwatched, and an inbox folder that was removed or renamed itself is
//! watched again once it exists (and its base synced, as changes made
//! before the watch was back were not seen). Syncs are idempotent (an unchanged file is skipped by
//! size and mtime), so a spurious trigger costs one folder walk. A failed
//! sync is logged and counted, and retried on the next trigger.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::db::Memdb;
use crate::error::{Error, Result};
use crate::kuradb::KnowledgeBase;

/// KuraDB's scan interval: the polling fallback's default.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);
/// Quiet time after a base's last change event before it is synced.
pub const DEBOUNCE: Duration = Duration::from_millis(300);
/// Longest a stream of change events postpones a base's sync.
pub const MAX_DELAY: Duration = Duration::from_secs(2);
/// How often the registry is re-read for added and removed bases.
pub const REFRESH: Duration = Duration::from_secs(1);
/// Longest polling interval (a longer one is this): deadlines stay
/// representable.
pub const MAX_INTERVAL: Duration = Duration::from_secs(365 * 24 * 3600);

/// Counters of a running watcher.
#[derive(Debug, Default)]
pub struct WatchStats {
    /// Polling passes over every knowledge base completed.
    pub passes: AtomicU64,
    /// Syncs of one base started outside a polling pass: after its change
    /// events, or when it was found newly registered.
    pub event_syncs: AtomicU64,
    /// Files parsed and stored, over all syncs.
    pub parsed: AtomicU64,
    /// Syncs that failed (logged).
    pub failures: AtomicU64,
    /// Watcher errors: it could not start, a folder could not be watched,
    /// or it reported an error (logged; polling covers them).
    pub watch_errors: AtomicU64,
    /// Whether change events are on (the `notify` watcher started).
    pub events: AtomicBool,
}

/// What the event handler and the loop share.
#[derive(Default)]
struct State {
    stop: bool,
    /// Namespaces with unsynced changes: (first, last) event time.
    dirty: HashMap<String, (Instant, Instant)>,
    /// Every inbox folder with its base's namespace, to route events.
    folders: Vec<(PathBuf, String)>,
    /// Inbox folders removed or renamed themselves: their watch is gone
    /// (or follows the old directory) and is set up again once they exist.
    lost: HashSet<PathBuf>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The running watcher; dropping it stops the thread after its current
/// sync.
pub struct KbWatcher {
    shared: Arc<Shared>,
    stats: Arc<WatchStats>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl KbWatcher {
    /// Starts watching every knowledge base of `db`: synced on change
    /// events and, as the fallback, every `interval` (the first pass at
    /// once; at most [`MAX_INTERVAL`]).
    pub fn spawn(db: Memdb, interval: Duration) -> Result<KbWatcher> {
        if interval.is_zero() {
            return Err(Error::invalid("interval", "must be at least 1 ms"));
        }
        let interval = interval.min(MAX_INTERVAL);
        let shared = Arc::new(Shared::default());
        let stats = Arc::new(WatchStats::default());
        let (shared2, stats2) = (shared.clone(), stats.clone());
        let thread = std::thread::Builder::new()
            .name("memdb-kb-watch".into())
            .spawn(move || Loop::new(db, interval, shared2, stats2).run())
            .map_err(|e| Error::invalid("watcher", format!("cannot start the thread: {e}")))?;
        Ok(KbWatcher {
            shared,
            stats,
            thread: Some(thread),
        })
    }

    /// The watcher's counters.
    pub fn stats(&self) -> &WatchStats {
        &self.stats
    }
}

impl Drop for KbWatcher {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Whether an event can mean a changed file: opening or reading one (the
/// sync's own reads among them) cannot.
fn is_change(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// The `notify` callback (on notify's thread): marks the bases whose
/// folders hold the changed paths; a rescan request or an error marks
/// every base.
fn on_event(shared: &Shared, stats: &WatchStats, res: notify::Result<Event>) {
    let now = Instant::now();
    let mut st = shared.lock();
    let all = match &res {
        Ok(ev) if ev.need_rescan() => true,
        Ok(ev) if !is_change(&ev.kind) => return,
        Ok(_) => false,
        Err(e) => {
            stats.watch_errors.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(error = %e, "kuradb watcher: event error; syncing every base");
            true
        }
    };
    if let Ok(ev) = &res
        && matches!(
            ev.kind,
            EventKind::Remove(_) | EventKind::Modify(notify::event::ModifyKind::Name(_))
        )
    {
        for p in &ev.paths {
            if st.folders.iter().any(|(f, _)| f == p) {
                st.lost.insert(p.clone());
            }
        }
    }
    let hit: Vec<String> = st
        .folders
        .iter()
        .filter(|(folder, _)| {
            all || res
                .as_ref()
                .is_ok_and(|ev| ev.paths.iter().any(|p| p.starts_with(folder)))
        })
        .map(|(_, ns)| ns.clone())
        .collect();
    if hit.is_empty() {
        return;
    }
    for ns in hit {
        st.dirty
            .entry(ns)
            .and_modify(|(_, last)| *last = now)
            .or_insert((now, now));
    }
    drop(st);
    shared.wake.notify_all();
}

/// The watcher thread.
struct Loop {
    db: Memdb,
    interval: Duration,
    shared: Arc<Shared>,
    stats: Arc<WatchStats>,
    watcher: Option<RecommendedWatcher>,
    /// Folders with a live watch.
    watched: HashSet<PathBuf>,
    /// Folders whose watch failed: retried on polling passes only.
    unwatchable: HashSet<PathBuf>,
    /// Namespaces seen registered, to find new bases.
    known: HashSet<String>,
}

impl Loop {
    fn new(db: Memdb, interval: Duration, shared: Arc<Shared>, stats: Arc<WatchStats>) -> Loop {
        let (s, st) = (shared.clone(), stats.clone());
        let watcher = match notify::recommended_watcher(move |res| on_event(&s, &st, res)) {
            Ok(w) => {
                stats.events.store(true, Ordering::Release);
                Some(w)
            }
            Err(e) => {
                stats.watch_errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %e, "kuradb watcher: no change events; polling only");
                None
            }
        };
        Loop {
            db,
            interval,
            shared,
            stats,
            watcher,
            watched: HashSet::new(),
            unwatchable: HashSet::new(),
            known: HashSet::new(),
        }
    }

    fn run(mut self) {
        let mut next_poll = Instant::now();
        let mut next_refresh = next_poll + REFRESH;
        loop {
            let now = Instant::now();
            if now >= next_poll {
                self.poll_pass();
                next_poll = Instant::now() + self.interval;
                next_refresh = Instant::now() + REFRESH;
            } else if now >= next_refresh {
                if let Some(bases) = self.refresh(false) {
                    let new: Vec<String> = bases
                        .iter()
                        .map(|kb| kb.namespace.clone())
                        .filter(|ns| !self.known.contains(ns))
                        .collect();
                    self.known = bases.iter().map(|kb| kb.namespace.clone()).collect();
                    if !new.is_empty() {
                        // Synced now: the marks of their new watches are covered.
                        self.shared.lock().dirty.retain(|ns, _| !new.contains(ns));
                        self.sync_namespaces(&new);
                    }
                }
                next_refresh = Instant::now() + REFRESH;
            }
            let due = self.take_due(Instant::now());
            if !due.is_empty() {
                self.sync_namespaces(&due);
                continue;
            }
            // Sleep until the next deadline, a change event, or stop.
            let st = self.shared.lock();
            if st.stop {
                return;
            }
            let mut wake_at = next_poll.min(next_refresh);
            for (first, last) in st.dirty.values() {
                wake_at = wake_at.min((*last + DEBOUNCE).min(*first + MAX_DELAY));
            }
            let wait = wake_at.saturating_duration_since(Instant::now());
            let (st, _) = self
                .shared
                .wake
                .wait_timeout(st, wait)
                .unwrap_or_else(|e| e.into_inner());
            if st.stop {
                return;
            }
        }
    }

    /// The namespaces whose changes have settled, taken out of the dirty
    /// set (an event during their sync marks them again).
    fn take_due(&self, now: Instant) -> Vec<String> {
        let mut st = self.shared.lock();
        let due: Vec<String> = st
            .dirty
            .iter()
            .filter(|(_, (first, last))| now >= *last + DEBOUNCE || now >= *first + MAX_DELAY)
            .map(|(ns, _)| ns.clone())
            .collect();
        for ns in &due {
            st.dirty.remove(ns);
        }
        due
    }

    /// Re-reads the registry: watches new folders, unwatches removed ones,
    /// updates the event routes. `retry` retries folders whose watch failed.
    fn refresh(&mut self, retry: bool) -> Option<Vec<KnowledgeBase>> {
        let bases = match self.db.kb_list() {
            Ok(b) => b,
            Err(e) => {
                self.stats.failures.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %e, "kuradb: cannot list knowledge bases");
                return None;
            }
        };
        let folders: Vec<(PathBuf, String)> = bases
            .iter()
            .flat_map(|kb| kb.inbox.iter().map(|f| (f.clone(), kb.namespace.clone())))
            .collect();
        let lost = std::mem::take(&mut self.shared.lock().lost);
        let mut rewatched = Vec::new();
        if let Some(w) = self.watcher.as_mut() {
            for f in lost {
                let _ = w.unwatch(&f);
                self.watched.remove(&f);
            }
            let want: HashSet<PathBuf> = folders.iter().map(|(f, _)| f.clone()).collect();
            for gone in self.watched.difference(&want).cloned().collect::<Vec<_>>() {
                let _ = w.unwatch(&gone);
                self.watched.remove(&gone);
            }
            self.unwatchable.retain(|f| want.contains(f));
            if retry {
                self.unwatchable.clear();
            }
            for f in &want {
                // A missing folder is watched once it exists (a sync of it
                // logs that it cannot be read).
                if self.watched.contains(f) || self.unwatchable.contains(f) || !f.is_dir() {
                    continue;
                }
                match w.watch(f, RecursiveMode::Recursive) {
                    Ok(()) => {
                        self.watched.insert(f.clone());
                        if self.unwatchable.remove(f) || !retry {
                            rewatched.push(f.clone());
                        }
                    }
                    Err(e) => {
                        // Logged and counted once per folder, not per retry.
                        if self.unwatchable.insert(f.clone()) {
                            self.stats.watch_errors.fetch_add(1, Ordering::Relaxed);
                            tracing::warn!(folder = %f.display(), error = %e,
                                "kuradb watcher: cannot watch folder; polling it");
                        }
                    }
                }
            }
        }
        let mut st = self.shared.lock();
        // Changes made before a watch was (re)established were not seen:
        // outside a polling pass (which syncs everything), sync its base.
        if !retry {
            let now = Instant::now();
            for f in &rewatched {
                if let Some((_, ns)) = folders.iter().find(|(g, _)| g == f) {
                    st.dirty.entry(ns.clone()).or_insert((now, now));
                }
            }
        }
        st.folders = folders;
        drop(st);
        Some(bases)
    }

    /// A polling pass: every base synced.
    fn poll_pass(&mut self) {
        let started = Instant::now();
        if let Some(bases) = self.refresh(true) {
            self.known = bases.iter().map(|kb| kb.namespace.clone()).collect();
            for kb in &bases {
                self.sync_one(kb);
            }
        }
        // Changes seen before the pass began are covered by it.
        self.shared
            .lock()
            .dirty
            .retain(|_, (_, last)| *last >= started);
        self.stats.passes.fetch_add(1, Ordering::Release);
    }

    /// Syncs the bases of `namespaces` (outside a polling pass).
    fn sync_namespaces(&mut self, namespaces: &[String]) {
        let bases = match self.db.kb_list() {
            Ok(b) => b,
            Err(e) => {
                self.stats.failures.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %e, "kuradb: cannot list knowledge bases");
                return;
            }
        };
        for kb in bases.iter().filter(|kb| namespaces.contains(&kb.namespace)) {
            self.stats.event_syncs.fetch_add(1, Ordering::Release);
            self.sync_one(kb);
        }
    }

    fn sync_one(&self, kb: &KnowledgeBase) {
        match self.db.kb_sync(&kb.name) {
            Ok(r) => {
                self.stats
                    .parsed
                    .fetch_add(r.parsed + r.revived, Ordering::Relaxed);
                if r.parsed + r.dismissed + r.revived + r.failed > 0 {
                    tracing::info!(
                        kb = %kb.name, parsed = r.parsed, dismissed = r.dismissed,
                        revived = r.revived, failed = r.failed, "kuradb sync"
                    );
                }
            }
            Err(e) => {
                self.stats.failures.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(kb = %kb.name, error = %e, "kuradb sync failed; retried next trigger");
            }
        }
    }
}
