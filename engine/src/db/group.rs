//! Group commit: writers that arrive while an fsync is in flight share the
//! next one (SPEC.md §7.1.1).
//!
//! Every write commits its redb transaction without fsync
//! ([`crate::store::Store::write_deferred`]) under the write lock, takes a
//! commit number, releases the lock, and waits here until a *settle* covers
//! its number. One waiting writer at a time leads: it lets writers that are
//! already on their way to the lock commit first (at most
//! [`GATHER_LIMIT`]), then takes the write lock and settles: one durable
//! commit for every deferred commit so far, then the derived indexes (text,
//! vectors) applied for the whole batch, then every writer it covers is
//! woken. A writer is acknowledged only after the fsync that holds its
//! write, as before; what changes is that 64 writers pay for one fsync, not
//! 64.
//!
//! This module owns only the coordination (who leads, who waits, what a
//! failure reports); the settle itself is [`crate::db::Memdb`]'s, since it
//! touches the store and both indexes.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// How long a leader waits for writers already heading for the write lock
/// before it settles without them. Short against an fsync (hundreds of
/// microseconds to milliseconds), and paid only when another writer is in
/// flight: a lone writer never waits.
pub(crate) const GATHER_LIMIT: Duration = Duration::from_micros(500);

/// The group-commit state of one open engine.
#[derive(Default)]
pub(crate) struct GroupCommit {
    /// Deferred commits so far (the last one's number); written under the
    /// write lock.
    committed: AtomicU64,
    /// The highest commit number known durable and applied to the indexes.
    settled: AtomicU64,
    /// Writers between entering a write and finishing its deferred commit.
    arriving: AtomicUsize,
    state: Mutex<State>,
    settled_cv: Condvar,
}

#[derive(Default)]
struct State {
    /// A writer is settling on everyone's behalf.
    leading: bool,
    /// The last failed settle: the commit number it was to cover, and why.
    failure: Option<(u64, String)>,
}

/// Marks a writer as on its way to a deferred commit until dropped (so a
/// leader waits for it rather than paying a second fsync right after).
pub(crate) struct Arriving<'a>(&'a GroupCommit);

impl Drop for Arriving<'_> {
    fn drop(&mut self) {
        self.0.arriving.fetch_sub(1, Ordering::AcqRel);
    }
}

impl GroupCommit {
    /// Called by a writer before it takes the write lock.
    pub(crate) fn arriving(&self) -> Arriving<'_> {
        self.arriving.fetch_add(1, Ordering::AcqRel);
        Arriving(self)
    }

    /// Numbers a deferred commit just made (caller holds the write lock).
    pub(crate) fn committed_one(&self) -> u64 {
        self.committed.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// The last deferred commit's number (caller holds the write lock when
    /// the answer must not move).
    pub(crate) fn last_committed(&self) -> u64 {
        self.committed.load(Ordering::Acquire)
    }

    /// Whether some deferred commit is not yet durable.
    pub(crate) fn unsettled(&self) -> bool {
        self.settled.load(Ordering::Acquire) < self.committed.load(Ordering::Acquire)
    }

    /// Records that every commit up to `upto` is durable and applied, and
    /// wakes the writers waiting for it (caller holds the write lock).
    pub(crate) fn settled_through(&self, upto: u64) {
        self.settled.fetch_max(upto, Ordering::AcqRel);
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.failure.as_ref().is_some_and(|(at, _)| *at <= upto) {
            st.failure = None;
        }
        drop(st);
        self.settled_cv.notify_all();
    }

    /// Waits until commit `seq` is settled, leading a settle when nobody
    /// is: `settle` runs under the caller's write lock and returns the
    /// commit number it covered. A failed settle fails every writer it was
    /// to cover.
    pub(crate) fn wait(&self, seq: u64, settle: impl Fn() -> Result<u64>) -> Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if self.settled.load(Ordering::Acquire) >= seq {
                return Ok(());
            }
            if let Some((at, why)) = &st.failure
                && *at >= seq
            {
                return Err(Error::Store(format!(
                    "the group commit holding this write failed: {why}"
                )));
            }
            if st.leading {
                st = self.settled_cv.wait(st).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            st.leading = true;
            drop(st);
            let start = Instant::now();
            while self.arriving.load(Ordering::Acquire) > 0 && start.elapsed() < GATHER_LIMIT {
                std::thread::yield_now();
            }
            let result = settle();
            st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            st.leading = false;
            if let Err(e) = result {
                let at = self.committed.load(Ordering::Acquire);
                tracing::error!(error = %e, "group commit failed");
                st.failure = Some((at, e.to_string()));
            }
            self.settled_cv.notify_all();
        }
    }
}
