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
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// How long a leader waits for writers already heading for the write lock
/// before it settles without them. Short against an fsync (hundreds of
/// microseconds to milliseconds), and paid only when another writer is in
/// flight: a lone writer never waits.
pub(crate) const GATHER_LIMIT: Duration = Duration::from_micros(500);

/// Milliseconds since the first call in this process: a monotonic clock
/// that fits an atomic.
fn since_start_ms() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let start = *START.get_or_init(Instant::now);
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

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
    /// When a writer last arrived while another was in flight
    /// ([`since_start_ms`]; 0: never).
    overlapped_at: AtomicU64,
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

/// Marks writers (one, or a combined batch) as on their way to a deferred
/// commit until dropped (so a leader waits for them rather than paying a
/// second fsync right after).
pub(crate) struct Arriving<'a>(&'a GroupCommit, usize);

impl Drop for Arriving<'_> {
    fn drop(&mut self) {
        self.0.arriving.fetch_sub(self.1, Ordering::AcqRel);
    }
}

impl GroupCommit {
    /// Called by a writer before it takes the write lock.
    pub(crate) fn arriving(&self) -> Arriving<'_> {
        self.arrive();
        Arriving(self, 1)
    }

    /// Counts a combined write as arriving until the batch holding it is
    /// written ([`Self::written`]).
    pub(crate) fn arrive(&self) {
        if self.arriving.fetch_add(1, Ordering::AcqRel) > 0 {
            self.overlapped_at
                .store(since_start_ms().max(1), Ordering::Release);
        }
    }

    /// Whether two writers were in flight at once within the last
    /// `window` (writers are contending for the write path).
    pub(crate) fn overlapped_within(&self, window: Duration) -> bool {
        let at = self.overlapped_at.load(Ordering::Acquire);
        at != 0 && since_start_ms().saturating_sub(at) <= window.as_millis() as u64
    }

    /// Marks `n` combined writes as written (their batch's deferred commit
    /// is made) when the returned guard drops, unwinding included.
    pub(crate) fn written(&self, n: usize) -> Arriving<'_> {
        Arriving(self, n)
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

/// Flat combining for writes whose input is owned data (a new
/// conversation): each writer queues its job; one of them leads, taking
/// every job queued so far and writing them all in one redb transaction,
/// while the others sleep. Jobs that arrive while a leader writes form the
/// next batch, so the batch grows with the load and a lone writer never
/// waits for anyone.
///
/// The leader hands the lead to the first writer of the next batch as soon
/// as its own batch is written (so the next batch is written while this one
/// is made durable), then settles its batch and wakes each of its writers
/// once, with a result that is already durable: a writer sleeps once per
/// write, on a condition variable of its own.
pub(crate) struct Combiner<J, R> {
    queue: Mutex<Queue<J, R>>,
}

struct Queue<J, R> {
    /// A writer is writing a batch (and may not yet have handed the lead on).
    leading: bool,
    waiting: Vec<(J, Arc<Slot<R>>)>,
}

/// One queued writer's mailbox: the lead handed to it, or its result.
struct Slot<R> {
    state: Mutex<SlotState<R>>,
    cv: Condvar,
}

enum SlotState<R> {
    Queued,
    Lead,
    Done(Result<R>),
}

impl<R> Slot<R> {
    fn new() -> Self {
        Slot {
            state: Mutex::new(SlotState::Queued),
            cv: Condvar::new(),
        }
    }

    fn set(&self, to: SlotState<R>) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = to;
        self.cv.notify_one();
    }

    /// Sleeps until the lead or a result arrives; `None` means lead.
    fn wait(&self) -> Option<Result<R>> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match std::mem::replace(&mut *st, SlotState::Queued) {
                SlotState::Queued => st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner()),
                SlotState::Lead => return None,
                SlotState::Done(r) => return Some(r),
            }
        }
    }
}

impl<J, R> Default for Combiner<J, R> {
    fn default() -> Self {
        Combiner {
            queue: Mutex::new(Queue {
                leading: false,
                waiting: Vec::new(),
            }),
        }
    }
}

impl<J, R> Combiner<J, R> {
    /// Queues `job` and returns its result once `settle` has made it
    /// durable. When this caller leads, `write` gets every queued job in
    /// arrival order and returns one result per job in the same order;
    /// `settle` then runs on those results (after the lead is handed on),
    /// and its failure fails every job of the batch.
    pub(crate) fn submit(
        &self,
        job: J,
        write: impl FnOnce(Vec<J>) -> Vec<Result<R>>,
        settle: impl FnOnce(&[Result<R>]) -> Result<()>,
    ) -> Result<R> {
        let own = Arc::new(Slot::new());
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.waiting.push((job, own.clone()));
        if q.leading {
            drop(q);
            if let Some(result) = own.wait() {
                return result;
            }
            // The lead was handed to this writer (`leading` stays true).
            q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        } else {
            q.leading = true;
        }
        let (jobs, slots): (Vec<J>, Vec<Arc<Slot<R>>>) =
            std::mem::take(&mut q.waiting).into_iter().unzip();
        drop(q);
        let mine = slots
            .iter()
            .position(|s| Arc::ptr_eq(s, &own))
            .unwrap_or(usize::MAX);
        let mut lead = Leading {
            combiner: self,
            slots,
            handed_on: false,
        };
        let mut results = write(jobs);
        lead.hand_on();
        if let Err(e) = settle(&results) {
            let why = e.to_string();
            for r in results.iter_mut().filter(|r| r.is_ok()) {
                *r = Err(Error::Store(format!(
                    "the group commit holding this write failed: {why}"
                )));
            }
        }
        lead.publish(results, mine)
    }
}

/// The batch a leader is writing. Dropped before [`Leading::publish`] (the
/// leader unwound), it fails every job of the batch and hands the lead on,
/// so nobody waits forever.
struct Leading<'a, J, R> {
    combiner: &'a Combiner<J, R>,
    slots: Vec<Arc<Slot<R>>>,
    handed_on: bool,
}

impl<J, R> Leading<'_, J, R> {
    /// Hands the lead to the first queued writer, or frees it.
    fn hand_on(&mut self) {
        if self.handed_on {
            return;
        }
        self.handed_on = true;
        let mut q = self
            .combiner
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match q.waiting.first() {
            Some((_, next)) => next.set(SlotState::Lead),
            None => q.leading = false,
        }
    }

    /// Wakes each writer of the batch with its result; returns the
    /// leader's own (at `mine`).
    fn publish(mut self, results: Vec<Result<R>>, mine: usize) -> Result<R> {
        let mut own = Err(Error::Store("a combined write lost its result".into()));
        let mut results = results.into_iter();
        for (i, slot) in std::mem::take(&mut self.slots).into_iter().enumerate() {
            let r = results
                .next()
                .unwrap_or_else(|| Err(Error::Store("a combined write returned no result".into())));
            if i == mine {
                own = r;
            } else {
                slot.set(SlotState::Done(r));
            }
        }
        own
    }
}

impl<J, R> Drop for Leading<'_, J, R> {
    fn drop(&mut self) {
        for slot in std::mem::take(&mut self.slots) {
            slot.set(SlotState::Done(Err(Error::Store(
                "the writer leading this write failed".into(),
            ))));
        }
        self.hand_on();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    /// Only a writer arriving while another is in flight marks the write
    /// path as contended; one writer after another never does.
    #[test]
    fn overlap_is_two_writers_in_flight_at_once() {
        let g = GroupCommit::default();
        for _ in 0..3 {
            drop(g.arriving());
        }
        assert!(!g.overlapped_within(Duration::from_secs(60)));
        let first = g.arriving();
        let second = g.arriving();
        drop((first, second));
        assert!(g.overlapped_within(Duration::from_secs(60)));
        std::thread::sleep(Duration::from_millis(30));
        assert!(!g.overlapped_within(Duration::from_millis(5)));
    }

    /// Every job gets its own result, failures included, and concurrent
    /// jobs share batches (a leader runs more than one job at once).
    #[test]
    fn each_writer_gets_its_own_result_and_concurrent_jobs_share_a_batch() {
        let combiner: Arc<Combiner<u32, u32>> = Arc::new(Combiner::default());
        let batches = Arc::new(AtomicUsize::new(0));
        let largest = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..16u32)
            .map(|t| {
                let (combiner, batches, largest) =
                    (combiner.clone(), batches.clone(), largest.clone());
                std::thread::spawn(move || {
                    (0..50u32)
                        .map(|i| {
                            let job = t * 1000 + i;
                            let r = combiner.submit(
                                job,
                                |jobs| {
                                    batches.fetch_add(1, Ordering::SeqCst);
                                    largest.fetch_max(jobs.len(), Ordering::SeqCst);
                                    // Long enough for others to queue behind.
                                    std::thread::sleep(Duration::from_micros(200));
                                    jobs.iter()
                                        .map(|&j| {
                                            if j % 7 == 0 {
                                                Err(Error::Store(format!("job {j} failed")))
                                            } else {
                                                Ok(j * 2)
                                            }
                                        })
                                        .collect()
                                },
                                |_| Ok(()),
                            );
                            (job, r)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut seen = 0;
        for t in threads {
            for (job, r) in t.join().unwrap() {
                seen += 1;
                match r {
                    Ok(v) => assert_eq!(v, job * 2),
                    Err(e) => {
                        assert_eq!(job % 7, 0, "{job}: {e}");
                        assert!(e.to_string().contains(&format!("job {job} failed")), "{e}");
                    }
                }
            }
        }
        assert_eq!(seen, 800);
        assert!(
            batches.load(Ordering::SeqCst) < 800,
            "no job shared a batch"
        );
        assert!(largest.load(Ordering::SeqCst) > 1);
    }

    /// A leader that panics fails its batch instead of leaving the other
    /// writers waiting, and the next writer leads again.
    #[test]
    fn a_panicking_leader_fails_its_batch_and_leaves_the_combiner_usable() {
        let combiner: Combiner<u32, u32> = Combiner::default();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            combiner.submit(1, |_| panic!("leader died"), |_| Ok(()))
        }));
        assert!(panicked.is_err());
        let r = combiner.submit(
            2,
            |jobs| jobs.iter().map(|j| Ok(j + 1)).collect(),
            |_| Ok(()),
        );
        assert_eq!(r.unwrap(), 3);
    }

    /// A failed settle fails every write of its batch (none of them is
    /// durable), while the next batch settles on its own; each settle sees
    /// its own batch's results.
    #[test]
    fn a_failed_settle_fails_its_whole_batch_and_only_its_batch() {
        let combiner: Arc<Combiner<u32, u32>> = Arc::new(Combiner::default());
        let threads: Vec<_> = (0..8u32)
            .map(|t| {
                let combiner = combiner.clone();
                std::thread::spawn(move || {
                    (0..40u32)
                        .map(|i| {
                            let job = t * 1000 + i;
                            let r = combiner.submit(
                                job,
                                |jobs| {
                                    std::thread::sleep(Duration::from_micros(100));
                                    jobs.iter().map(|&j| Ok(j)).collect()
                                },
                                |results| {
                                    // A batch holding a job divisible by 5 fails.
                                    if results.iter().any(|r| r.as_ref().is_ok_and(|j| j % 5 == 0))
                                    {
                                        Err(Error::Store("disk full".into()))
                                    } else {
                                        Ok(())
                                    }
                                },
                            );
                            (job, r)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let (mut ok, mut failed) = (0, 0);
        for t in threads {
            for (job, r) in t.join().unwrap() {
                match r {
                    Ok(v) => {
                        assert_eq!(v, job);
                        assert_ne!(job % 5, 0, "{job} was in a failed batch");
                        ok += 1;
                    }
                    Err(e) => {
                        assert!(e.to_string().contains("disk full"), "{e}");
                        failed += 1;
                    }
                }
            }
        }
        assert_eq!(ok + failed, 320);
        assert!(failed >= 64, "every job divisible by 5 fails: {failed}");
        assert!(ok > 0, "batches without such a job settle");
    }
}
