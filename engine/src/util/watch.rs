//! The folder watcher shared by KuraDB's inbox sync (`kuradb/watch.rs`,
//! SPEC.md §15.2) and the chat-export import folder (`import/watch.rs`,
//! SPEC.md §11.1): one background thread that runs a job's sync for a
//! key whenever one of the key's folders changes, and for every key on a
//! polling pass. It knows folders and keys, not what a sync does.
//!
//! Two triggers, one job ([`WatchJob::sync`]):
//! - **Events**: a `notify` recommended watcher (inotify on Linux) watches
//!   each folder (recursively or not, as the job says); a change under a
//!   folder marks its key due [`DEBOUNCE`] after the last event of a burst
//!   (at most [`MAX_DELAY`] after the first), so a file copied in pieces
//!   is handled once, soon after it is complete.
//! - **Polling**, the fallback: every key is synced each interval (the
//!   first pass at once), which catches what events miss: network
//!   filesystems, an event queue overflow, a folder whose watch could not
//!   be set up (logged, retried each pass), or no watcher at all (its
//!   error logged; polling alone then).
//!
//! The job's folder list is re-read every [`REFRESH`]: a key that appears
//! is synced and its folders watched within that (no restart), a folder
//! that disappears is unwatched, and a folder that was removed or renamed
//! itself is watched again once it exists (and its key synced, as changes
//! made before the watch was back were not seen). A sync may ask to be
//! run again soon ([`Resync::Soon`]: a file still being written).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::error::{Error, Result};

/// Quiet time after a key's last change event before it is synced.
pub const DEBOUNCE: Duration = Duration::from_millis(300);
/// Longest a stream of change events postpones a key's sync.
pub const MAX_DELAY: Duration = Duration::from_secs(2);
/// How often the job's folder list is re-read.
pub const REFRESH: Duration = Duration::from_secs(1);
/// Longest polling interval (a longer one is this): deadlines stay
/// representable.
pub const MAX_INTERVAL: Duration = Duration::from_secs(365 * 24 * 3600);

/// Counters of a running watcher.
#[derive(Debug, Default)]
pub struct WatchStats {
    /// Polling passes over every key completed.
    pub passes: AtomicU64,
    /// Syncs of one key started outside a polling pass: after its change
    /// events, or when it was found new.
    pub event_syncs: AtomicU64,
    /// Files parsed and stored, over all syncs.
    pub parsed: AtomicU64,
    /// Syncs (or files) that failed (logged).
    pub failures: AtomicU64,
    /// Watcher errors: it could not start, a folder could not be watched,
    /// or it reported an error (logged; polling covers them).
    pub watch_errors: AtomicU64,
    /// Whether change events are on (the `notify` watcher started).
    pub events: AtomicBool,
}

/// What a sync asks of the watcher afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resync {
    /// Nothing: the next event or polling pass.
    No,
    /// Run this key's sync again after [`DEBOUNCE`] (something was not
    /// ready yet, e.g. a file written a moment ago).
    Soon,
}

/// What a watcher runs: the folders to watch and the sync of a key.
pub trait WatchJob: Send + 'static {
    /// Names the watcher in logs and its thread (`kuradb`, `import`).
    fn name(&self) -> &'static str;
    /// Whether folders are watched with their subfolders.
    fn recursive(&self) -> bool;
    /// Every folder to watch with the key its changes mark; `None` when
    /// the list cannot be read now (the job logs why and counts a failure).
    fn folders(&mut self, stats: &WatchStats) -> Option<Vec<(PathBuf, String)>>;
    /// Syncs `key` (one the job may no longer know: then nothing).
    fn sync(&mut self, key: &str, stats: &WatchStats) -> Resync;
}

/// What the event handler and the loop share.
#[derive(Default)]
struct State {
    stop: bool,
    /// Keys with unsynced changes: (first, last) event time.
    dirty: HashMap<String, (Instant, Instant)>,
    /// Every folder with its key, to route events.
    folders: Vec<(PathBuf, String)>,
    /// Folders removed or renamed themselves: their watch is gone (or
    /// follows the old directory) and is set up again once they exist.
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
pub struct FolderWatcher {
    shared: Arc<Shared>,
    stats: Arc<WatchStats>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FolderWatcher {
    /// Starts running `job`: each key synced on its folders' change events
    /// and, as the fallback, every `interval` (the first pass at once; at
    /// most [`MAX_INTERVAL`]).
    pub fn spawn(job: impl WatchJob, interval: Duration) -> Result<FolderWatcher> {
        if interval.is_zero() {
            return Err(Error::invalid("interval", "must be at least 1 ms"));
        }
        let interval = interval.min(MAX_INTERVAL);
        let shared = Arc::new(Shared::default());
        let stats = Arc::new(WatchStats::default());
        let (shared2, stats2) = (shared.clone(), stats.clone());
        let thread = std::thread::Builder::new()
            .name(format!("memdb-{}-watch", job.name()))
            .spawn(move || Loop::new(job, interval, shared2, stats2).run())
            .map_err(|e| Error::invalid("watcher", format!("cannot start the thread: {e}")))?;
        Ok(FolderWatcher {
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

impl Drop for FolderWatcher {
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

/// The `notify` callback (on notify's thread): marks the keys whose
/// folders hold the changed paths; a rescan request or an error marks
/// every key.
fn on_event(name: &str, shared: &Shared, stats: &WatchStats, res: notify::Result<Event>) {
    let now = Instant::now();
    let mut st = shared.lock();
    let all = match &res {
        Ok(ev) if ev.need_rescan() => true,
        Ok(ev) if !is_change(&ev.kind) => return,
        Ok(_) => false,
        Err(e) => {
            stats.watch_errors.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(error = %e, "{name} watcher: event error; syncing everything");
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
        .map(|(_, key)| key.clone())
        .collect();
    if hit.is_empty() {
        return;
    }
    for key in hit {
        mark(&mut st, key, now);
    }
    drop(st);
    shared.wake.notify_all();
}

fn mark(st: &mut State, key: String, now: Instant) {
    st.dirty
        .entry(key)
        .and_modify(|(_, last)| *last = now)
        .or_insert((now, now));
}

/// The watcher thread.
struct Loop<J: WatchJob> {
    job: J,
    interval: Duration,
    shared: Arc<Shared>,
    stats: Arc<WatchStats>,
    watcher: Option<RecommendedWatcher>,
    /// Folders with a live watch.
    watched: HashSet<PathBuf>,
    /// Folders whose watch failed: retried on polling passes only.
    unwatchable: HashSet<PathBuf>,
    /// Keys seen, to find new ones.
    known: HashSet<String>,
}

/// The distinct keys of a folder list, in first-seen order.
fn keys_of(folders: &[(PathBuf, String)]) -> Vec<String> {
    let mut seen = HashSet::new();
    folders
        .iter()
        .filter(|(_, k)| seen.insert(k.clone()))
        .map(|(_, k)| k.clone())
        .collect()
}

impl<J: WatchJob> Loop<J> {
    fn new(job: J, interval: Duration, shared: Arc<Shared>, stats: Arc<WatchStats>) -> Loop<J> {
        let name = job.name();
        let (s, st) = (shared.clone(), stats.clone());
        let watcher = match notify::recommended_watcher(move |res| on_event(name, &s, &st, res)) {
            Ok(w) => {
                stats.events.store(true, Ordering::Release);
                Some(w)
            }
            Err(e) => {
                stats.watch_errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %e, "{name} watcher: no change events; polling only");
                None
            }
        };
        Loop {
            job,
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
                if let Some(keys) = self.refresh(false) {
                    let new: Vec<String> = keys
                        .iter()
                        .filter(|k| !self.known.contains(*k))
                        .cloned()
                        .collect();
                    self.known = keys.into_iter().collect();
                    if !new.is_empty() {
                        // Synced now: the marks of their new watches are covered.
                        self.shared.lock().dirty.retain(|k, _| !new.contains(k));
                        self.sync_keys(&new);
                    }
                }
                next_refresh = Instant::now() + REFRESH;
            }
            let due = self.take_due(Instant::now());
            if !due.is_empty() {
                self.sync_keys(&due);
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

    /// The keys whose changes have settled, taken out of the dirty set (an
    /// event during their sync marks them again).
    fn take_due(&self, now: Instant) -> Vec<String> {
        let mut st = self.shared.lock();
        let due: Vec<String> = st
            .dirty
            .iter()
            .filter(|(_, (first, last))| now >= *last + DEBOUNCE || now >= *first + MAX_DELAY)
            .map(|(k, _)| k.clone())
            .collect();
        for k in &due {
            st.dirty.remove(k);
        }
        due
    }

    /// Re-reads the folder list: watches new folders, unwatches removed
    /// ones, updates the event routes; returns the keys. `retry` retries
    /// folders whose watch failed.
    fn refresh(&mut self, retry: bool) -> Option<Vec<String>> {
        let name = self.job.name();
        let mode = if self.job.recursive() {
            RecursiveMode::Recursive
        } else {
            RecursiveMode::NonRecursive
        };
        let folders = self.job.folders(&self.stats)?;
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
                // A missing folder is watched once it exists (its sync
                // logs that it cannot be read).
                if self.watched.contains(f) || self.unwatchable.contains(f) || !f.is_dir() {
                    continue;
                }
                match w.watch(f, mode) {
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
                                "{name} watcher: cannot watch folder; polling it");
                        }
                    }
                }
            }
        }
        let mut st = self.shared.lock();
        // Changes made before a watch was (re)established were not seen:
        // outside a polling pass (which syncs everything), sync its key.
        if !retry {
            let now = Instant::now();
            for f in &rewatched {
                if let Some((_, key)) = folders.iter().find(|(g, _)| g == f) {
                    st.dirty.entry(key.clone()).or_insert((now, now));
                }
            }
        }
        let keys = keys_of(&folders);
        st.folders = folders;
        drop(st);
        Some(keys)
    }

    /// A polling pass: every key synced.
    fn poll_pass(&mut self) {
        let started = Instant::now();
        if let Some(keys) = self.refresh(true) {
            self.known = keys.iter().cloned().collect();
            for k in &keys {
                self.sync_one(k);
            }
        }
        // Changes seen before the pass began are covered by it.
        self.shared
            .lock()
            .dirty
            .retain(|_, (_, last)| *last >= started);
        self.stats.passes.fetch_add(1, Ordering::Release);
    }

    /// Syncs `keys` (outside a polling pass).
    fn sync_keys(&mut self, keys: &[String]) {
        for k in keys {
            self.stats.event_syncs.fetch_add(1, Ordering::Release);
            self.sync_one(k);
        }
    }

    fn sync_one(&mut self, key: &str) {
        if self.job.sync(key, &self.stats) == Resync::Soon {
            let mut st = self.shared.lock();
            mark(&mut st, key.to_string(), Instant::now());
        }
    }
}
