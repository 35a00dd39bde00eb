//! The text index's maintenance thread: it runs the tiered merges commits
//! leave behind (so a search that committed does not wait for a merge), and
//! makes soft commits durable every [`crate::Config::text_checkpoint_interval`]
//! (SPEC.md §7.2).

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::text::TextIndex;

/// How often the thread looks for a merge to run.
const MERGE_POLL: Duration = Duration::from_millis(20);

/// Stops (and joins) its thread when dropped.
pub(crate) struct Checkpointer {
    stop: Option<Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// No thread (interval zero): commits merge inline, and checkpoints
    /// happen only on `flush` and `close`.
    pub(crate) fn disabled() -> Checkpointer {
        Checkpointer {
            stop: None,
            handle: None,
        }
    }

    /// Starts the thread. It reads the index from `slot` each round, so it
    /// follows a rebuild that replaced the index.
    pub(crate) fn start(
        slot: Arc<RwLock<Arc<TextIndex>>>,
        every: Duration,
    ) -> Result<Checkpointer> {
        let (tx, rx) = mpsc::channel::<()>();
        let tick = every.min(MERGE_POLL);
        let handle = std::thread::Builder::new()
            .name("memdb-text-maintenance".into())
            .spawn(move || {
                let mut last_checkpoint = Instant::now();
                loop {
                    match rx.recv_timeout(tick) {
                        Err(RecvTimeoutError::Timeout) => {}
                        // Stop requested, or the sender is gone.
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                    }
                    let text = slot.read().unwrap_or_else(|e| e.into_inner()).clone();
                    // Failures are retried next round; `close` reports a
                    // checkpoint failure, and a merge is only an optimisation.
                    if text.merge_wanted() {
                        let _ = text.merge();
                    }
                    if last_checkpoint.elapsed() >= every {
                        last_checkpoint = Instant::now();
                        if text.needs_checkpoint() {
                            let _ = text.checkpoint();
                        }
                    }
                }
            })
            .map_err(|e| Error::Store(format!("starting the text maintenance thread: {e}")))?;
        Ok(Checkpointer {
            stop: Some(tx),
            handle: Some(handle),
        })
    }

    /// Whether a thread runs (and so merges are left to it).
    pub(crate) fn is_running(&self) -> bool {
        self.handle.is_some()
    }

    /// Stops the thread and waits for the work in progress to finish.
    pub(crate) fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop();
    }
}
