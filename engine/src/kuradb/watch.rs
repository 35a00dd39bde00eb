//! The knowledge-base watcher (SPEC.md §15.2): one background thread that
//! keeps every registered knowledge base in step with its inbox folders.
//!
//! The watching itself (notify events debounced per base, the polling
//! fallback, folders re-read every second, a removed inbox watched again
//! once it exists) is the shared folder watcher, `util/watch.rs`; this
//! module is its job: the keys are the bases' namespaces, the folders
//! their inbox folders (watched recursively), and a sync is
//! [`KuraDb::sync`](crate::kuradb::KuraDb::sync). Syncs are idempotent (an unchanged file is skipped
//! by size and mtime), so a spurious trigger costs one folder walk. A
//! failed sync is logged and counted, and retried on the next trigger.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::db::Memdb;
use crate::error::Result;
pub use crate::util::watch::{DEBOUNCE, MAX_DELAY, MAX_INTERVAL, REFRESH, WatchStats};
use crate::util::watch::{FolderWatcher, Resync, WatchJob};

/// KuraDB's scan interval: the polling fallback's default.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);

/// The running watcher; dropping it stops the thread after its current
/// sync.
pub struct KbWatcher {
    inner: FolderWatcher,
}

impl KbWatcher {
    /// Starts watching every knowledge base of `db`: synced on change
    /// events and, as the fallback, every `interval` (the first pass at
    /// once; at most [`MAX_INTERVAL`]).
    pub fn spawn(db: Memdb, interval: Duration) -> Result<KbWatcher> {
        Ok(KbWatcher {
            inner: FolderWatcher::spawn(KbJob { db }, interval)?,
        })
    }

    /// The watcher's counters.
    pub fn stats(&self) -> &WatchStats {
        self.inner.stats()
    }
}

/// Keys: namespaces; folders: every base's inbox folders.
struct KbJob {
    db: Memdb,
}

impl WatchJob for KbJob {
    fn name(&self) -> &'static str {
        "kuradb"
    }

    fn recursive(&self) -> bool {
        true
    }

    fn folders(&mut self, stats: &WatchStats) -> Option<Vec<(PathBuf, String)>> {
        match crate::kuradb::KuraDb::new(&self.db).list_all() {
            Ok(bases) => Some(
                bases
                    .iter()
                    .flat_map(|kb| kb.inbox.iter().map(|f| (f.clone(), kb.namespace.clone())))
                    .collect(),
            ),
            Err(e) => {
                stats.failures.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %e, "kuradb: cannot list knowledge bases");
                None
            }
        }
    }

    fn sync(&mut self, namespace: &str, stats: &WatchStats) -> Resync {
        let bases = match crate::kuradb::KuraDb::new(&self.db).list_all() {
            Ok(b) => b,
            Err(e) => {
                stats.failures.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %e, "kuradb: cannot list knowledge bases");
                return Resync::No;
            }
        };
        let Some(kb) = bases.iter().find(|kb| kb.namespace == namespace) else {
            return Resync::No;
        };
        let synced = self
            .db
            .namespace(&kb.owner)
            .and_then(|owner| crate::kuradb::KuraDb::new(&owner).sync(&kb.name));
        match synced {
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
                tracing::warn!(kb = %kb.name, error = %e, "kuradb sync failed; retried next trigger");
            }
        }
        Resync::No
    }
}
