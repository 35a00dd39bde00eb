//! The background thread that checkpoints the text index: soft commits make
//! writes searchable without fsync, and this thread makes them durable every
//! [`crate::Config::text_checkpoint_interval`] (SPEC.md §5).

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::text::TextIndex;

/// Stops (and joins) its thread when dropped.
pub(crate) struct Checkpointer {
    stop: Option<Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// A checkpointer that does nothing (interval zero: checkpoints happen
    /// only on `flush` and `close`).
    pub(crate) fn disabled() -> Checkpointer {
        Checkpointer {
            stop: None,
            handle: None,
        }
    }

    /// Starts the thread. It reads the index from `slot` each time, so it
    /// follows a rebuild that replaced the index.
    pub(crate) fn start(
        slot: Arc<RwLock<Arc<TextIndex>>>,
        every: Duration,
    ) -> Result<Checkpointer> {
        let (tx, rx) = mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("memdb-checkpoint".into())
            .spawn(move || {
                loop {
                    match rx.recv_timeout(every) {
                        Err(RecvTimeoutError::Timeout) => {}
                        // Stop requested, or the sender is gone.
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                    }
                    let text = slot.read().unwrap_or_else(|e| e.into_inner()).clone();
                    if text.needs_checkpoint() {
                        // A failure is retried next round; `close` reports it.
                        let _ = text.checkpoint();
                    }
                }
            })
            .map_err(|e| Error::Store(format!("starting the checkpoint thread: {e}")))?;
        Ok(Checkpointer {
            stop: Some(tx),
            handle: Some(handle),
        })
    }

    /// Stops the thread and waits for a checkpoint in progress to finish.
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
