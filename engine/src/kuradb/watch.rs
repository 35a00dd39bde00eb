//! The knowledge-base watcher (SPEC.md §15.2): a background thread that
//! syncs every registered knowledge base on a fixed interval, as KuraDB's
//! daemon scans its inboxes every 10 seconds. Polling works the same on
//! local and network filesystems; a base added while it runs is picked up
//! on the next pass (no restart). A failed sync is logged and counted, and
//! retried on the next pass.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::db::Memdb;
use crate::error::{Error, Result};

/// KuraDB's scan interval.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);

/// Counters of a running watcher.
#[derive(Debug, Default)]
pub struct WatchStats {
    /// Passes over every knowledge base completed.
    pub passes: AtomicU64,
    /// Files parsed and stored, over all passes.
    pub parsed: AtomicU64,
    /// Syncs that failed (logged).
    pub failures: AtomicU64,
}

/// The running watcher; dropping it stops the thread after its current
/// pass.
pub struct KbWatcher {
    stop: Arc<(Mutex<bool>, Condvar)>,
    stats: Arc<WatchStats>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl KbWatcher {
    /// Starts syncing every knowledge base of `db` each `interval` (the
    /// first pass at once).
    pub fn spawn(db: Memdb, interval: Duration) -> Result<KbWatcher> {
        if interval.is_zero() {
            return Err(Error::invalid("interval", "must be at least 1 ms"));
        }
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let stats = Arc::new(WatchStats::default());
        let (stop2, stats2) = (stop.clone(), stats.clone());
        let thread = std::thread::Builder::new()
            .name("memdb-kb-watch".into())
            .spawn(move || {
                loop {
                    pass(&db, &stats2);
                    let (lock, cond) = &*stop2;
                    let guard = lock.lock().unwrap_or_else(|e| e.into_inner());
                    let (guard, _) = cond
                        .wait_timeout_while(guard, interval, |s| !*s)
                        .unwrap_or_else(|e| e.into_inner());
                    if *guard {
                        break;
                    }
                }
            })
            .map_err(|e| Error::invalid("watcher", format!("cannot start the thread: {e}")))?;
        Ok(KbWatcher {
            stop,
            stats,
            thread: Some(thread),
        })
    }

    /// The watcher's counters.
    pub fn stats(&self) -> &WatchStats {
        &self.stats
    }
}

fn pass(db: &Memdb, stats: &WatchStats) {
    match db.kb_list() {
        Ok(bases) => {
            for kb in bases {
                match db.kb_sync(&kb.name) {
                    Ok(r) => {
                        stats
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
                        stats.failures.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(kb = %kb.name, error = %e, "kuradb sync failed; retried next pass");
                    }
                }
            }
        }
        Err(e) => {
            stats.failures.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(error = %e, "kuradb: cannot list knowledge bases");
        }
    }
    stats.passes.fetch_add(1, Ordering::Release);
}

impl Drop for KbWatcher {
    fn drop(&mut self) {
        let (lock, cond) = &*self.stop;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cond.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
